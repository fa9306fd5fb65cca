"""The opset-versioned op registry.

Ops are registered at the ``since_version`` numbers onnx defines and resolved the way
``onnx.reference`` does: a model with opset ``N`` runs the largest registered
``since_version <= N``. A version that only widens the type list is one more number in
the op's ``register`` call; a version whose signature changed is a thin adapter.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
from collections.abc import Callable

import numpy as np
import onnx.defs

from jaxonnx._dtypes import onnx_type_name
from jaxonnx._errors import OnnxTypeError, OnnxValidationError, UnsupportedOpError

DEFAULT_DOMAIN = ""
_DOMAIN_ALIASES = {"ai.onnx": DEFAULT_DOMAIN}


def canonical_domain(domain: str) -> str:
    return _DOMAIN_ALIASES.get(domain, domain)


@dataclasses.dataclass(frozen=True)
class OpVersion:
    """One registered version of an ONNX op.

    Calling it runs the op with that version's semantics: inputs positionally (``None``
    for an omitted optional input), ONNX attributes as keyword arguments. Inputs of
    element types outside the version's type constraints and attributes the version
    does not define are refused with an error naming both.

    Numpy inputs stay numpy (this is how the interpreter evaluates values known at trace
    time exactly); any JAX input makes the result a JAX array.
    """

    op_type: str
    since_version: int
    domain: str
    fn: Callable

    @property
    def name(self) -> str:
        return f"{self.op_type}-{self.since_version}"

    @functools.cached_property
    def schema(self) -> onnx.defs.OpSchema:
        return onnx.defs.get_schema(self.op_type, self.since_version, self.domain)

    @functools.cached_property
    def _allowed_types(self) -> tuple[tuple[str, frozenset[str]], ...]:
        constraints = {c.type_param_str: c.allowed_type_strs for c in self.schema.type_constraints}
        allowed = []
        for formal in self.schema.inputs:
            strs = constraints.get(formal.type_str, [formal.type_str])
            names = frozenset(s[len("tensor(") : -1] for s in strs if s.startswith("tensor("))
            allowed.append((formal.name, names))
        return tuple(allowed)

    def check_inputs(self, inputs) -> None:
        """Raises if an input's element type is outside this version's constraints."""
        formals = self._allowed_types
        if len(inputs) > len(formals):
            raise OnnxValidationError(
                f"{self.name} takes at most {len(formals)} inputs, got {len(inputs)}."
            )
        for (formal_name, allowed), value in zip(formals, inputs):
            if value is None:
                continue
            dtype = np.asarray(value).dtype if not hasattr(value, "dtype") else value.dtype
            type_name = onnx_type_name(dtype)
            if type_name not in allowed:
                raise OnnxTypeError(
                    f"{self.name} does not accept tensor({type_name}) for input "
                    f"`{formal_name}`; it accepts {', '.join(sorted(allowed))}."
                )

    def check_attributes(self, attributes) -> None:
        unknown = sorted(set(attributes) - set(self.schema.attributes))
        if unknown:
            known = ", ".join(sorted(self.schema.attributes)) or "none"
            raise OnnxValidationError(
                f"{self.name} has no attribute {', '.join(map(repr, unknown))}; its attributes are: {known}."
            )

    def __call__(self, *inputs, **attributes):
        self.check_inputs(inputs)
        self.check_attributes({k: v for k, v in attributes.items() if k not in _EXTRA_KEYWORDS})
        return self.fn(*inputs, **attributes)


# Keyword arguments the interpreter may pass that are not ONNX attributes.
_EXTRA_KEYWORDS = frozenset({"size", "fill_value"})

_REGISTRY: dict[tuple[str, str], dict[int, OpVersion]] = {}


def register(op_type: str, *since_versions: int, domain: str = DEFAULT_DOMAIN):
    """Registers ``fn`` as the implementation of ``op_type`` at each of ``since_versions``.

    Example (how ``jaxonnx/ops/_where.py`` registers Where; Where-16 only added bfloat16)::

        @register("Where", 9, 16)
        def _where(condition, x, y): ...

    Raises:
        ValueError: if a version is registered twice or onnx defines no such version.
    """
    domain = canonical_domain(domain)

    def decorate(fn):
        # Check every version first, so that a refused call registers nothing.
        versions = _REGISTRY.get((domain, op_type), {})
        for since in since_versions:
            if since in versions:
                raise ValueError(f"{op_type}-{since} is already registered ({versions[since].fn}).")
            try:
                schema = onnx.defs.get_schema(op_type, since, domain)
            except onnx.defs.SchemaError:
                raise ValueError(
                    f"onnx defines no op {op_type!r} in domain {domain or 'ai.onnx'!r} at version {since}."
                ) from None
            if schema.since_version != since:
                raise ValueError(
                    f"onnx defines no {op_type} version {since}; the nearest is {schema.since_version}."
                )
        if len(set(since_versions)) != len(since_versions):
            raise ValueError(f"{op_type} got a version twice in {since_versions}.")
        versions = _REGISTRY.setdefault((domain, op_type), {})
        for since in since_versions:
            versions[since] = OpVersion(op_type, since, domain, fn)
        return fn

    return decorate


def get_op(op_type: str, opset: int, domain: str = DEFAULT_DOMAIN) -> OpVersion:
    """Resolves ``op_type`` for a model whose opset (for ``domain``) is ``opset``.

    Returns the registered version with the largest ``since_version <= opset``.

    Example:
        >>> jaxonnx.get_op("Slice", opset=12).since_version
        11

    Raises:
        UnsupportedOpError: if the op is not registered or ``opset`` is below its first version.
    """
    domain = canonical_domain(domain)
    versions = _REGISTRY.get((domain, op_type))
    if not versions:
        raise UnsupportedOpError(
            f"The op {op_type!r} (domain {domain or 'ai.onnx'!r}) is not supported; "
            f"supported ops: {', '.join(sorted(supported_ops(domain)))}."
        )
    ordered = sorted(versions)
    position = bisect.bisect_right(ordered, opset)
    if position == 0:
        raise UnsupportedOpError(
            f"The op {op_type!r} does not exist at opset {opset}; its versions are "
            f"{', '.join(map(str, ordered))}, so the model's opset must be at least {ordered[0]}."
        )
    return versions[ordered[position - 1]]


def supported_ops(domain: str = DEFAULT_DOMAIN) -> dict[str, tuple[int, ...]]:
    """The registered ops of ``domain`` and the since_versions of each.

    Example:
        >>> jaxonnx.supported_ops()["Slice"]
        (1, 10, 11, 13)
    """
    domain = canonical_domain(domain)
    return {
        op_type: tuple(sorted(versions))
        for (op_domain, op_type), versions in sorted(_REGISTRY.items())
        if op_domain == domain
    }
