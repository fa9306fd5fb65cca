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
from collections.abc import Callable, Sequence

import jax
import numpy as np
import onnx
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
    for an omitted optional input), ONNX attributes as keyword arguments (``None`` for an
    attribute means it is not given). Refused, with an error naming the version: fewer
    inputs than the version requires (or ``None`` for a required one), inputs of element
    types outside the version's type constraints, attributes the version does not
    define, a missing required attribute, and attribute values of the wrong kind (an
    ``INT`` attribute takes an int, not a bool or a float; ``INTS`` a sequence of ints).

    Numpy inputs stay numpy (this is how the interpreter evaluates values known at trace
    time exactly); any JAX input makes the result a JAX array. Other inputs (Python
    scalars, lists) become numpy arrays with ``np.asarray``.
    """

    op_type: str
    since_version: int
    domain: str
    fn: Callable
    #: Keyword arguments beyond the ONNX attributes, e.g. Compress's ``size`` hint.
    extra_keywords: frozenset[str] = frozenset()

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

    def check_required_inputs(self, inputs) -> None:
        """Raises if an input the version requires (option ``Single``) is missing or ``None``."""
        formals = self.schema.inputs
        required = [i for i, formal in enumerate(formals) if formal.option == _SINGLE]
        needed = required[-1] + 1 if required else 0
        if len(inputs) < needed:
            names = ", ".join(formal.name for formal in formals[:needed])
            raise OnnxValidationError(
                f"{self.name} needs at least {needed} inputs ({names}), got {len(inputs)}."
            )
        for i in required:
            if inputs[i] is None:
                raise OnnxValidationError(
                    f"{self.name} needs its input `{formals[i].name}` (input {i}), got None; "
                    "only optional inputs may be omitted."
                )

    def check_attributes(self, attributes) -> None:
        """Raises for unknown attributes, missing required ones and values of the wrong kind."""
        schema_attributes = self.schema.attributes
        unknown = sorted(set(attributes) - set(schema_attributes))
        if unknown:
            known = ", ".join(sorted(schema_attributes)) or "none"
            raise OnnxValidationError(
                f"{self.name} has no attribute {', '.join(map(repr, unknown))}; its attributes are: {known}."
            )
        missing = sorted(name for name, a in schema_attributes.items() if a.required and name not in attributes)
        if missing:
            raise OnnxValidationError(
                f"{self.name} needs the attribute{'s' if len(missing) > 1 else ''} "
                f"{', '.join(f'`{name}`' for name in missing)}, which {'were' if len(missing) > 1 else 'was'} not given."
            )
        for name, value in attributes.items():
            kind = schema_attributes[name].type
            accepts, description = _ATTRIBUTE_KINDS.get(kind, (None, None))
            if accepts is not None and not accepts(value):
                shown = repr(value)
                if len(shown) > 80:
                    shown = shown[:77] + "..."
                raise OnnxTypeError(
                    f"{self.name} needs {description} for the attribute `{name}` ({kind.name}), "
                    f"got {shown} ({type(value).__name__})."
                )

    def __call__(self, *inputs, **attributes):
        inputs = tuple(_as_input(value) for value in inputs)
        attributes = {k: v for k, v in attributes.items() if v is not None}
        self.check_required_inputs(inputs)
        self.check_inputs(inputs)
        self.check_attributes({k: v for k, v in attributes.items() if k not in self.extra_keywords})
        return self.fn(*inputs, **attributes)


_SINGLE = onnx.defs.OpSchema.FormalParameterOption.Single


def _as_input(value):
    """JAX arrays (tracers included), numpy arrays and None as they are; anything else via np.asarray."""
    if value is None or isinstance(value, (jax.Array, np.ndarray)):
        return value
    return np.asarray(value)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_float(value) -> bool:
    return _is_int(value) or isinstance(value, (float, np.floating))


def _is_string(value) -> bool:
    return isinstance(value, (str, bytes))


def _sequence_of(item):
    def accepts(value):
        if isinstance(value, np.ndarray):
            return value.ndim == 1 and all(item(v) for v in value.tolist())
        return isinstance(value, Sequence) and not _is_string(value) and all(item(v) for v in value)

    return accepts


def _instance_of(*types):
    return lambda value: isinstance(value, types)


_AttrType = onnx.defs.OpSchema.AttrType
_ATTRIBUTE_KINDS = {
    _AttrType.INT: (_is_int, "an int"),
    _AttrType.INTS: (_sequence_of(_is_int), "a sequence of ints"),
    _AttrType.FLOAT: (_is_float, "a float"),
    _AttrType.FLOATS: (_sequence_of(_is_float), "a sequence of floats"),
    _AttrType.STRING: (_is_string, "a string"),
    _AttrType.STRINGS: (_sequence_of(_is_string), "a sequence of strings"),
    _AttrType.TENSOR: (_instance_of(onnx.TensorProto), "an onnx.TensorProto"),
    _AttrType.TENSORS: (_sequence_of(_instance_of(onnx.TensorProto)), "a sequence of onnx.TensorProto"),
    _AttrType.SPARSE_TENSOR: (_instance_of(onnx.SparseTensorProto), "an onnx.SparseTensorProto"),
    _AttrType.SPARSE_TENSORS: (
        _sequence_of(_instance_of(onnx.SparseTensorProto)),
        "a sequence of onnx.SparseTensorProto",
    ),
    _AttrType.GRAPH: (_instance_of(onnx.GraphProto), "an onnx.GraphProto"),
    _AttrType.GRAPHS: (_sequence_of(_instance_of(onnx.GraphProto)), "a sequence of onnx.GraphProto"),
    _AttrType.TYPE_PROTO: (_instance_of(onnx.TypeProto), "an onnx.TypeProto"),
    _AttrType.TYPE_PROTOS: (_sequence_of(_instance_of(onnx.TypeProto)), "a sequence of onnx.TypeProto"),
}


_REGISTRY: dict[tuple[str, str], dict[int, OpVersion]] = {}


def register(op_type: str, *since_versions: int, domain: str = DEFAULT_DOMAIN, extra_keywords=()):
    """Registers ``fn`` as the implementation of ``op_type`` at each of ``since_versions``.

    ``extra_keywords`` names keyword arguments ``fn`` takes besides the ONNX attributes
    (Compress takes ``size`` and ``fill_value`` for size hints).

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
            versions[since] = OpVersion(op_type, since, domain, fn, frozenset(extra_keywords))
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
