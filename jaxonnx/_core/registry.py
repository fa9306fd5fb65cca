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
import inspect
import re
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import onnx
import onnx.defs

from jaxonnx._core.context import OpContext
from jaxonnx._core.contract import OpContract as OpContract  # re-exported: the registry's contract
from jaxonnx._core.contract import run_time_needs
from jaxonnx._core.conversion import convert_inputs
from jaxonnx._core.conversion import is_traced as is_traced  # re-exported for the ops
from jaxonnx._core.conversion import trace_in_progress as trace_in_progress
from jaxonnx._core.loading import DEFAULT_DOMAIN, canonical_domain, decode_attribute
from jaxonnx._core.padding import KINDS as PADDING_KINDS
from jaxonnx._core.schema_checks import SchemaChecks
from jaxonnx._errors import JaxOnnxError, StaticValueError, UnsupportedOpError


@dataclasses.dataclass(frozen=True)
class OpVersion(SchemaChecks):
    """One registered version of an ONNX op.

    Calling it runs the op with that version's semantics: inputs positionally (``None``
    for an omitted optional input), ONNX attributes as keyword arguments (``None`` for an
    attribute means it is not given; absent attributes take the schema's default). Refused,
    with an error naming the version (``Slice-13``): fewer inputs than the version requires
    (or ``None`` for a required one), inputs of element types outside the version's type
    constraints or of different dtypes where the schema ties them to one type, attributes
    the version does not define, a missing required attribute, and attribute values of the
    wrong kind (an ``INT`` attribute takes an int, not a bool or a float).

    Inputs are converted once, as the op's :class:`OpContract` says. Numpy inputs stay
    numpy when the op folds (this is how the interpreter evaluates values known at trace
    time exactly); any JAX input makes the result a JAX array. Python scalars and lists
    become numpy arrays with ``np.asarray``.
    """

    op_type: str
    since_version: int
    domain: str
    fn: Callable
    contract: OpContract = OpContract()
    #: A schema declared beside the op, for ops that onnx does not define (com.microsoft,
    #: ai.onnx.ml ops that onnx lacks); None: onnx's own schema of this version.
    own_schema: onnx.defs.OpSchema | None = dataclasses.field(default=None, compare=False)

    @property
    def takes_size_hint(self) -> bool:
        """Whether an output's length depends on input values, so the op takes a size hint."""
        return bool(self.contract.size_hint)

    @property
    def name(self) -> str:
        return f"{self.op_type}-{self.since_version}"

    @functools.cached_property
    def schema(self) -> onnx.defs.OpSchema:
        if self.own_schema is not None:
            return self.own_schema
        return onnx.defs.get_schema(self.op_type, self.since_version, self.domain)

    def __call__(self, *inputs, ctx: OpContext | None = None, **attributes):
        """Runs the op on graph values: ``attributes`` are the node's (GRAPH attributes as
        callables), ``ctx`` what the contract takes from the node and the call."""
        needs = self.contract.keywords(ctx)
        # Called by hand (not by the graph runner), the contract's keywords may come directly,
        # as `jaxonnx.ops` takes them: `get_op("Compress", 11)(x, c, size=3)`.
        needs.update({name: attributes.pop(name) for name in self.contract.public_keywords() if name in attributes})
        return self._run(inputs, attributes, needs, public=False)

    def _run(self, inputs, attributes, needs, *, public: bool):
        try:
            return self._checked_run(inputs, attributes, needs, public=public)
        except JaxOnnxError as error:
            raise _labelled(error, self.name) from error.__cause__

    def _checked_run(self, inputs, attributes, needs, *, public: bool):
        attributes = {k: v for k, v in attributes.items() if v is not None}
        self.check_input_count(inputs)
        inputs = convert_inputs(self, inputs, public=public)
        self.check_required_inputs(inputs)
        if not needs.get("straight_through"):
            # With the straight-through estimator on, quantized values travel as float32 (JAX
            # carries no gradient through integers), so their integer types are not checked.
            self.check_inputs(inputs, tie_static=not public)
        self.check_attributes(attributes)
        keywords = {**self.defaults, **{k: decode_attribute(v) for k, v in attributes.items()}, **needs}
        results = self.fn(*inputs, **keywords)
        if isinstance(results, tuple):
            return tuple(_numpy_scalar_as_array(r) for r in results)
        return _numpy_scalar_as_array(results)

    def public_function(self) -> Callable:
        """The op as a ``jaxonnx.ops`` function: inputs positional or by name, attributes as
        keywords, Python scalars and lists following JAX's rules (weak types)."""
        signature = inspect.signature(self.fn)
        input_names = [p.name for p in signature.parameters.values() if p.kind in _POSITIONAL]
        variadic = any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in signature.parameters.values())
        var_keyword = next(
            (p.name for p in signature.parameters.values() if p.kind == inspect.Parameter.VAR_KEYWORD), None
        )
        if not variadic:
            # Attributes may follow the inputs positionally, as in jax.numpy (`flatten(x, 2)`).
            signature = signature.replace(
                parameters=[
                    p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD)
                    if p.kind == inspect.Parameter.KEYWORD_ONLY
                    else p
                    for p in signature.parameters.values()
                ]
            )

        context_keywords = self.contract.public_keywords()

        @functools.wraps(self.fn)
        def op(*args, **kwargs):
            needs = {name: kwargs.pop(name) for name in context_keywords if name in kwargs}
            if not variadic:
                bound = signature.bind(*args, **kwargs)
                args = [bound.arguments.get(name) for name in input_names]
                kwargs = {k: v for k, v in bound.arguments.items() if k not in input_names}
                kwargs.update(kwargs.pop(var_keyword, {}) if var_keyword else {})
                while args and args[-1] is None:
                    args.pop()
            return self._run(tuple(args), kwargs, needs, public=True)

        function = cast(Any, op)  # a plain function, which takes new attributes (functools.wraps' type has none)
        function.op_version = self
        function.__signature__ = signature
        return function


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _labelled(error: JaxOnnxError, name: str) -> JaxOnnxError:
    """The op's own error with the version label in front (ops write "got ..." sentences)."""
    message = str(error)
    if name in message:  # the registry's own messages name the version already
        return error
    labelled = type(error)(f"{name} {message}")
    if isinstance(labelled, StaticValueError):  # the one error that carries an argument
        labelled.argument = getattr(error, "argument", None)
    return labelled


def _numpy_scalar_as_array(value):
    return np.asarray(value) if isinstance(value, np.generic) else value


class Registry:
    """Registered op versions by ``(domain, op_type)``; :data:`REGISTRY` is jaxonnx's own.

    Tests and users that want a scratch set of ops make their own instance (``Registry()``,
    or ``REGISTRY.copy()``) instead of changing jaxonnx's.
    """

    def __init__(self, versions: dict[tuple[str, str], dict[int, OpVersion]] | None = None):
        self._versions: dict[tuple[str, str], dict[int, OpVersion]] = versions or {}
        # supported_ops's answer per domain, made on first use and dropped by each registration:
        # every node a model load prepares asks it (about a millisecond to build it anew).
        self._listings: dict[str, dict[str, tuple[int, ...]]] = {}

    def copy(self) -> Registry:
        return Registry({key: dict(versions) for key, versions in self._versions.items()})

    def _rule_named(self, name: Any) -> str:
        """Where a padding rule that was once named (``"gather"``, ``"top_k"``) lives now: the
        registered op of that name in snake case declares it, and its contract hands it on."""
        if not isinstance(name, str):
            return ""
        for (domain, op_type), versions in self._versions.items():
            newest = versions[max(versions)]
            if _snake_case(op_type) == name and callable(newest.contract.padding):
                where = f", {domain!r}" if domain else ""
                return (
                    f" That rule is {op_type}'s own now: pass "
                    f"`padding=jaxonnx.get_op({op_type!r}, {newest.since_version}{where}).contract.padding`."
                )
        return ""

    def register(
        self,
        op_type: str,
        *since_versions: int,
        domain: str = DEFAULT_DOMAIN,
        schema: onnx.defs.OpSchema | None = None,
        **declared: Any,
    ):
        """See :func:`register`."""
        domain = canonical_domain(domain)
        unknown_fields = sorted(set(declared) - _DECLARED_FIELDS)
        if unknown_fields:
            raise TypeError(
                f"{op_type}: register() has no contract field {', '.join(map(repr, unknown_fields))}; the fields "
                f"are {', '.join(sorted(_DECLARED_FIELDS))} (run-time needs such as `rng` or `node` are parameters "
                "of the op's function, see jaxonnx._core.contract)."
            )
        padding = declared.get("padding", "")
        if not callable(padding) and padding not in PADDING_KINDS:
            raise ValueError(
                f"{op_type}: `padding` is one of {', '.join(map(repr, PADDING_KINDS))} or a rule of the op's own "
                f"(a function of a jaxonnx._core.padding.Call), got {padding!r}.{self._rule_named(padding)}"
            )
        declared_contract = OpContract(**declared)

        def decorate(fn):
            # Check every version first, so that a refused call registers nothing.
            versions = self._versions.get((domain, op_type), {})
            if schema is not None and (
                len(since_versions) != 1
                or schema.since_version != since_versions[0]
                or schema.name != op_type
                or canonical_domain(schema.domain) != domain
            ):
                raise ValueError(
                    f"The schema given for {op_type} declares {schema.name}-{schema.since_version} of domain "
                    f"{schema.domain!r}; register one version per schema, with the schema's name, version and domain."
                )
            formal_names: set[str] = set()
            for since in since_versions:
                if since in versions:
                    raise ValueError(f"{op_type}-{since} is already registered ({versions[since].fn}).")
                own = schema if schema is not None else _onnx_schema(op_type, since, domain)
                inputs = {f.name for f in own.inputs}
                unknown = set(declared_contract.named_inputs()) - inputs
                if unknown:
                    raise ValueError(f"{op_type}-{since} has no inputs {sorted(unknown)} (named in its contract).")
                formal_names |= inputs | set(own.attributes)
            needs = run_time_needs(fn, formal_names, op_type)
            if ("size" in needs) != bool(declared_contract.size_hint):
                raise ValueError(
                    f"{op_type}: an op takes a `size` parameter exactly when its output length depends on "
                    f"input values (`size_hint=`); its function {'takes' if 'size' in needs else 'lacks'} it and "
                    f"size_hint is {declared_contract.size_hint!r}."
                )
            contract = dataclasses.replace(declared_contract, needs=needs)
            if len(set(since_versions)) != len(since_versions):
                raise ValueError(f"{op_type} got a version twice in {since_versions}.")
            versions = self._versions.setdefault((domain, op_type), {})
            self._listings.clear()
            for since in since_versions:
                versions[since] = OpVersion(op_type, since, domain, fn, contract, schema)
            fn.onnx_op = versions[max(since_versions)]  # `jaxonnx.ops` exports its public_function
            return fn

        return decorate

    def get_op(self, op_type: str, opset: int, domain: str = DEFAULT_DOMAIN) -> OpVersion:
        """See :func:`get_op`."""
        domain = canonical_domain(domain)
        versions = self._versions.get((domain, op_type))
        if not versions:
            known = self.supported_ops(domain)
            if not known:
                raise UnsupportedOpError(
                    f"The domain {domain!r} is not supported (op {op_type!r}); jaxonnx has no ops of it registered."
                )
            raise UnsupportedOpError(
                f"The op {op_type!r} (domain {domain or 'ai.onnx'!r}) is not supported; "
                f"supported ops: {', '.join(sorted(known))}."
            )
        ordered = sorted(versions)
        position = bisect.bisect_right(ordered, opset)
        if position == 0:
            raise UnsupportedOpError(
                f"The op {op_type!r} does not exist at opset {opset}; its versions are "
                f"{', '.join(map(str, ordered))}, so the model's opset must be at least {ordered[0]}."
            )
        return versions[ordered[position - 1]]

    def supported_ops(self, domain: str = DEFAULT_DOMAIN) -> dict[str, tuple[int, ...]]:
        """See :func:`supported_ops`."""
        domain = canonical_domain(domain)
        listing = self._listings.get(domain)
        if listing is None:
            listing = self._listings[domain] = {
                op_type: tuple(sorted(versions))
                for (op_domain, op_type), versions in sorted(self._versions.items())
                if op_domain == domain
            }
        return dict(listing)  # the caller's own copy: changing it changes no later answer

    def domains(self) -> set[str]:
        return {domain for domain, _ in self._versions}


def _onnx_schema(op_type: str, since: int, domain: str) -> onnx.defs.OpSchema:
    try:
        schema = onnx.defs.get_schema(op_type, since, domain)
    except onnx.defs.SchemaError:
        raise ValueError(
            f"onnx defines no op {op_type!r} in domain {domain or 'ai.onnx'!r} at version {since}; "
            "declare its schema with `schema=`."
        ) from None
    if schema.since_version != since:
        raise ValueError(f"onnx defines no {op_type} version {since}; the nearest is {schema.since_version}.")
    return schema


#: The contract fields an op declares at ``register``; its run-time needs are read off its function.
_DECLARED_FIELDS = frozenset(field.name for field in dataclasses.fields(OpContract)) - {"needs"}

#: jaxonnx's registry: every op module registers into it on import.
REGISTRY = Registry()


def register(
    op_type: str,
    *since_versions: int,
    domain: str = DEFAULT_DOMAIN,
    schema: onnx.defs.OpSchema | None = None,
    registry: Registry | None = None,
    **declared: Any,
):
    """Registers ``fn`` as ``op_type`` at each of ``since_versions``; returns ``fn``, marked
    so that ``jaxonnx.ops`` exports the newest of these versions as a public function (with
    the same conversion, see :meth:`OpVersion.public_function`) when its module lists it in
    ``__all__``.

    ``fn`` is a pure function of arrays and Python values: the onnx inputs positionally
    (``None`` for an omitted optional one), every attribute of the schema as a keyword
    (the schema's default, or None, where the node gives none; a GRAPH attribute as a
    function of the subgraph's inputs), and what it needs at run time by naming it as a
    parameter: a field of :class:`~jaxonnx._core.context.OpContext` (``size`` with
    ``fill_value``, ``output_count``, ``rng``, ``computation``, ``channels_last``, ``node``,
    ``checks``, ``real_length``) or a load-time option (``straight_through``). Its errors are
    sentences without the op's name ("got `axis`=3 for ..."); the registry puts the version
    label in front. ``declared`` are the fields of
    :class:`~jaxonnx._core.contract.OpContract` (``static``, ``concrete``, ``size_hint``,
    ``folds``, ``padding`` and the op's traits). A version that only widens the type list is
    one more number here; a version whose semantics differ is a thin adapter.

    Example (how ``jaxonnx/ops/_shape/slice.py`` registers Slice-11 and -13)::

        @register("Slice", 11, 13, static=("starts", "ends", "axes", "steps"))
        def slice(data, starts, ends, axes=None, steps=None): ...

    A model's missing op can be supplied the same way (here GlobalMaxPool)::

        @jaxonnx.register("GlobalMaxPool", 1, 22)
        def global_max_pool(X):
            return X.max(axis=tuple(range(2, X.ndim)), keepdims=True)

    Args:
        schema: for an op that onnx does not define (e.g. of the ``com.microsoft``
            domain), its ``onnx.defs.OpSchema``, declared beside the op; one version.
        registry: the :class:`Registry` to register into (jaxonnx's own by default).

    Raises:
        ValueError: if a version is registered twice, onnx defines no such version (and no
            ``schema`` is given), or the contract names an input the schema does not have.
    """
    return (registry or REGISTRY).register(op_type, *since_versions, domain=domain, schema=schema, **declared)


def _with_declared_fields(function: Callable) -> None:
    """Shows ``declared``'s keywords (the contract's fields, with their defaults) in
    ``function``'s signature, as ``help`` and IDEs read it, instead of ``**declared``."""
    signature = inspect.signature(function)
    fields = [
        inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, default=field.default)
        for field in dataclasses.fields(OpContract)
        if field.name in _DECLARED_FIELDS
    ]
    kept = [p for p in signature.parameters.values() if p.kind != inspect.Parameter.VAR_KEYWORD]
    cast(Any, function).__signature__ = signature.replace(parameters=[*kept, *fields])


_with_declared_fields(register)
_with_declared_fields(Registry.register)


def get_op(op_type: str, opset: int, domain: str = DEFAULT_DOMAIN) -> OpVersion:
    """Resolves ``op_type`` for a model whose opset (for ``domain``) is ``opset``.

    Returns the registered version with the largest ``since_version <= opset``.

    Example:
        >>> jaxonnx.get_op("Slice", opset=12).since_version
        11

    Raises:
        UnsupportedOpError: if the op is not registered or ``opset`` is below its first version.
    """
    return REGISTRY.get_op(op_type, opset, domain)


def supported_ops(domain: str = DEFAULT_DOMAIN) -> dict[str, tuple[int, ...]]:
    """The registered ops of ``domain`` and the since_versions of each.

    Example:
        >>> jaxonnx.supported_ops()["Slice"]
        (1, 10, 11, 13)
    """
    return REGISTRY.supported_ops(domain)


def _snake_case(op_type: str) -> str:
    """``NonMaxSuppression`` -> ``non_max_suppression``, ``GatherND`` -> ``gather_nd``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", op_type).lower()
