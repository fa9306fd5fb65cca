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
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import jax
import numpy as np
import onnx
import onnx.defs

from jaxonnx._core.context import OpContext
from jaxonnx._core.dtypes import (
    WIDE,
    as_jax,
    is_narrowed,
    is_string_array,
    jax_dtype,
    narrowed,
    onnx_type_name,
    x64_enabled,
)
from jaxonnx._core.loading import DEFAULT_DOMAIN, canonical_domain, decode_attribute
from jaxonnx._core.padding import KINDS as PADDING_KINDS
from jaxonnx._errors import (
    JaxOnnxError,
    OnnxTypeError,
    OnnxValidationError,
    StaticValueError,
    UnsupportedOpError,
)


@dataclasses.dataclass(frozen=True)
class OpContract:
    """What an op states once at registration; the registry enforces it on every call.

    Attributes:
        static: the inputs (by their onnx formal names) that decide the output shape, so
            their values must be known at trace time. They reach the op as exact numpy
            arrays; a traced one raises :class:`StaticValueError` naming it.
        concrete: inputs the op reads when their values are known (bounds checks, exact
            selection) but that may also be traced: numpy stays numpy, JAX stays JAX.
        size_hint: the output length depends on input values, so the op takes ``size`` and
            ``fill_value`` keywords (and the interpreter's ``size_hints``). True: the padding
            is out-of-range indices (NonZero); ``"zeros"``: zero rows (Compress); ``"bound"``:
            the hint bounds a loop and its outputs are not tracked as padded (Loop); a tuple:
            one of ``"indices"``, ``"zeros"`` or ``""`` (not padded) per output (Unique).
        output_count: the op's number of outputs depends on the node (Split before 18 without
            ``split``: one equal part per output), so it takes an ``output_count`` keyword,
            which the interpreter and the backend fill with the node's number of outputs.
        folds: the op computes on numpy when all its array inputs are numpy, so values known
            at trace time (initializers, Constant, Shape and everything computed from them)
            stay exact numpy. Ops written with ``jax.lax`` only set ``folds=False``: their
            inputs always arrive as JAX arrays.
        rng: the op draws random numbers, so it takes an ``rng`` keyword: the node's
            ``jax.random`` key from the caller (``model(..., rng=key)``), or None.
        options: names of load-time options the op takes as keywords (e.g.
            ``"straight_through"``), from :attr:`OpContext.options` when the caller set them.
        padding: the rule the graph runner follows when a size hint's padding reaches the
            op (see :mod:`jaxonnx._core.padding`, which lists them): ``"elementwise"``,
            ``"moves"``, ``"concat"``, the gathers, ``"scatter"``, the reductions (``"sum"``,
            ``"prod"``, ``"max"``, ``"min"``, ``"mean"``), ``"top_k"``, ``"shape"``...;
            ``""``: a padded input is refused with an error naming the node.
        computation: the op differentiates part of its own graph (Gradient), so it takes a
            ``computation`` keyword: the function from the values its ``xs`` and ``zs``
            attributes name to the value its ``y`` attribute names (returning a tuple of
            one), which the interpreter cuts out of the graph (see :mod:`jaxonnx._core.graph`).
        channels_last: the op also runs on its main input channels-last (``(N, D1, ..., Dn,
            C)``, as ``lax``'s ``NHWC``) and then returns its output so: it takes a
            ``channels_last`` keyword, which the interpreter sets where it keeps the
            activations between convolutions channels-last (see :mod:`jaxonnx._core.layout`).
        node: the op raises errors outside its call (when reverse mode transposes it, or from
            a run-time check), which must name the node themselves: it takes a ``node``
            keyword, the node's path (:attr:`OpContext.node`; ``""`` when called by hand).
        checks: the op reads its ``concrete`` inputs only to check them (bounds), so a
            traced one is computed with as it is; it takes a ``checks`` keyword
            (:attr:`OpContext.checks`), where it defers those checks when the value is
            traced (see :mod:`jaxonnx._core.checks`): an eager call then compiles the graph
            whole instead of running it op by op.

    ``output_count``, ``size_hint`` (``size``), ``rng`` and ``options`` arrive through the
    :class:`~jaxonnx._core.context.OpContext` of the call, never mixed into the node's
    attributes; ``jaxonnx.ops`` functions take them as keywords.
    """

    static: tuple[str, ...] = ()
    concrete: tuple[str, ...] = ()
    size_hint: bool | str | tuple[str, ...] = False
    folds: bool = True
    output_count: bool = False
    rng: bool = False
    options: tuple[str, ...] = ()
    padding: str = ""
    computation: bool = False
    channels_last: bool = False
    node: bool = False
    checks: bool = False

    def keywords(self, ctx: OpContext | None) -> dict[str, Any]:
        """The keywords the op takes from ``ctx``, as this contract declares them."""
        ctx = ctx or OpContext()
        keywords: dict[str, Any] = {}
        if self.size_hint:
            keywords["size"] = ctx.size
        if self.output_count:
            keywords["output_count"] = ctx.output_count
        if self.rng:
            keywords["rng"] = ctx.rng
        for name in self.options:
            if name in ctx.options:
                keywords[name] = ctx.options[name]
        if self.size_hint and self.size_hint != "bound" and ctx.real_length:
            keywords["real_length"] = True
        if self.computation:
            keywords["computation"] = ctx.computation
        if self.channels_last and ctx.channels_last:
            keywords["channels_last"] = True
        if self.node:
            keywords["node"] = ctx.node
        if self.checks:
            keywords["checks"] = ctx.checks
        return keywords

    def public_keywords(self) -> tuple[str, ...]:
        """The context keywords ``jaxonnx.ops`` functions take directly."""
        return (
            (("size", "fill_value") if self.size_hint else ())
            + (("output_count",) if self.output_count else ())
            + (("rng",) if self.rng else ())
            + (("computation",) if self.computation else ())
            + (("channels_last",) if self.channels_last else ())
            + (("node",) if self.node else ())
            + (("checks",) if self.checks else ())
            + self.options
        )


@dataclasses.dataclass(frozen=True)
class OpVersion:
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

    @functools.cached_property
    def _formals(self) -> tuple[tuple[str, str | None, frozenset[str], bool], ...]:
        """``(name, type parameter, allowed element types, variadic)`` per formal input."""
        constraints = {c.type_param_str: c.allowed_type_strs for c in self.schema.type_constraints}
        formals = []
        for formal in self.schema.inputs:
            strs = constraints.get(formal.type_str, [formal.type_str])
            # A non-empty optional(tensor(T)) value is the tensor itself.
            names = frozenset(
                s.removeprefix("optional(")[len("tensor(") : -1 - s.startswith("optional(")]
                for s in strs
                if s.removeprefix("optional(").startswith("tensor(")
            )
            variadic = formal.option == _VARIADIC
            homogeneous = not variadic or formal.is_homogeneous
            type_param = formal.type_str if formal.type_str in constraints and homogeneous else None
            formals.append((formal.name, type_param, names, variadic))
        return tuple(formals)

    @functools.cached_property
    def sequence_formals(self) -> frozenset[str]:
        """The formal inputs whose types include sequences (``seq(tensor(...))``, also inside
        ``optional(...)``): a list there is a sequence value, never read as one array."""
        constraints = {c.type_param_str: c.allowed_type_strs for c in self.schema.type_constraints}
        return frozenset(
            formal.name
            for formal in self.schema.inputs
            if any("seq(" in s for s in constraints.get(formal.type_str, [formal.type_str]))
        )

    @functools.cached_property
    def optional_formals(self) -> frozenset[str]:
        """The formal inputs whose types include ``optional(...)``: None there is an empty
        optional value, not an omitted input."""
        constraints = {c.type_param_str: c.allowed_type_strs for c in self.schema.type_constraints}
        return frozenset(
            formal.name
            for formal in self.schema.inputs
            if any(s.startswith("optional(") for s in constraints.get(formal.type_str, [formal.type_str]))
        )

    def formal_names(self, count: int) -> list[str]:
        """The formal name of each of ``count`` inputs (a variadic formal's name repeats)."""
        formals = self._formals
        names = [f[0] for f in formals[:count]]
        if count > len(formals) and formals and formals[-1][3]:
            names += [formals[-1][0]] * (count - len(formals))
        return names

    @functools.cached_property
    def defaults(self) -> dict[str, Any]:
        """Every attribute of the schema with its default value (None where it has none)."""
        defaults = {}
        for name, attribute in self.schema.attributes.items():
            value = None
            if attribute.default_value.type != onnx.AttributeProto.UNDEFINED:
                value = decode_attribute(onnx.helper.get_attribute_value(attribute.default_value))
            defaults[name] = value
        return defaults

    def check_input_count(self, inputs) -> None:
        formals = self._formals
        if len(inputs) > len(formals) and not (formals and formals[-1][3]):
            raise OnnxValidationError(f"{self.name} takes at most {len(formals)} inputs, got {len(inputs)}.")

    def check_inputs(self, inputs, *, tie_static: bool = True) -> None:
        """Raises if an input's element type is outside this version's constraints, or if
        inputs the schema ties to one type parameter have different dtypes (for static
        inputs only where ``tie_static``: ``jaxonnx.ops`` reads any integer bounds)."""
        self.check_input_count(inputs)
        formals = self._formals
        bound: dict[str, tuple[str, np.dtype | str]] = {}  # a type parameter's first input and its kind
        for index, value in enumerate(inputs):
            if value is None or not hasattr(value, "dtype"):
                continue  # a Python bound of `jaxonnx.ops`, read by the op as numpy indexing would
            formal_name, type_param, allowed, _ = formals[min(index, len(formals) - 1)]
            dtype = np.dtype(value.dtype)
            type_name = onnx_type_name(dtype)
            if type_name not in allowed and not _narrowed_for_x64_off(value, allowed):
                raise OnnxTypeError(
                    f"{self.name} does not accept tensor({type_name}) for input "
                    f"`{formal_name}`; it accepts {', '.join(sorted(allowed))}."
                )
            if type_param is None or (not tie_static and formal_name in self.contract.static):
                continue
            # While x64 is off a static int64 bound meets the int32 that JAX made of a graph
            # input: both compute as the same 32-bit type, so they tie.
            kind = "string" if dtype.kind in "OUS" else (dtype if x64_enabled() else jax_dtype(dtype))
            if type_param in bound and bound[type_param][1] != kind:
                other, other_kind = bound[type_param]
                raise OnnxTypeError(
                    f"{self.name} needs `{other}` and `{formal_name}` of one element type "
                    f"({type_param}), got {other_kind} and {kind}."
                )
            bound.setdefault(type_param, (formal_name, kind))

    def check_required_inputs(self, inputs) -> None:
        """Raises if an input the version requires is missing or ``None``."""
        formals = self.schema.inputs
        required = [i for i, formal in enumerate(formals) if formal.option != _OPTIONAL]
        needed = required[-1] + 1 if required else 0
        if formals and formals[-1].option == _VARIADIC:
            needed = len(formals) - 1 + formals[-1].min_arity
        if len(inputs) < needed:
            names = ", ".join(formal.name for formal in formals[:needed])
            raise OnnxValidationError(f"{self.name} needs at least {needed} inputs ({names}), got {len(inputs)}.")
        for i in required:
            if i < len(inputs) and inputs[i] is None and formals[i].name not in self.optional_formals:
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
                    f"{self.name} needs {description} for the attribute `{name}` ({kind.name}), "  # type: ignore[attr-defined]  # onnx's stubs lack the pybind11 enum's name
                    f"got {shown} ({type(value).__name__})."
                )

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
        inputs = _convert_inputs(self, inputs, public=public)
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


def _narrowed_for_x64_off(value, allowed: frozenset[str]) -> bool:
    """A 32-bit value where the schema names the 64-bit type while ``jax_enable_x64`` is
    off: JAX narrowed it (a JAX array), or the model did, as ``jax.jit`` would (a numpy graph
    input kept numpy, e.g. a Reshape's shape passed as an int64 array), and the op computes
    in the 32-bit counterpart."""
    if not isinstance(value, (jax.Array, np.ndarray)) or x64_enabled():
        return False
    wide = WIDE.get(np.dtype(value.dtype))
    return wide is not None and onnx_type_name(wide) in allowed


def _convert_inputs(op: OpVersion, inputs, *, public: bool) -> tuple:
    """The inputs as the op's contract says (see :class:`OpContract`)."""
    names = op.formal_names(len(inputs))
    contract = op.contract
    converted: list[Any] = []
    any_jax = any(isinstance(value, jax.Array) for value in inputs)
    for name, value in zip(names, inputs):
        if value is None:
            converted.append(None)
        elif isinstance(value, (list, tuple)) and name in op.sequence_formals:
            converted.append(list(value))  # a sequence value: a list of arrays, its length static
        elif (
            isinstance(value, Mapping)
            or isinstance(value, list)
            and value
            and all(isinstance(v, Mapping) for v in value)
        ):
            converted.append(value)  # a map (a dict) or a list of them: ai.onnx.ml's ops take them as they are
        elif name in contract.static:
            # `jaxonnx.ops` reads Python values as they are, as numpy indexing does (a bound
            # may be a plain int there); graph values are always tensors.
            python = public and not isinstance(value, (jax.Array, np.ndarray, np.generic))
            # An op padded to its input's length (a Slice between traced bounds) takes them traced.
            padded = contract.size_hint == "own_length" and is_traced(value)
            converted.append(value if python or padded else _static(value, name))
        elif isinstance(value, (jax.Array, np.ndarray)):
            converted.append(value)
        elif isinstance(value, np.generic):
            converted.append(np.asarray(value))
        else:
            converted.append(_python_value(value, public=public))
    dynamic = [
        i
        for i, name in enumerate(names)
        if name not in contract.static and converted[i] is not None and not isinstance(converted[i], list)
    ]
    is_string = [is_string_array(converted[i]) for i in dynamic]
    if any(is_string):
        traced = [names[i] for i in dynamic if is_traced(converted[i])]
        if traced:
            strings = [names[i] for i, s in zip(dynamic, is_string) if s]
            raise OnnxTypeError(
                f"{op.name} got the string tensor `{strings[0]}` with the traced `{traced[0]}`; JAX cannot "
                "hold strings, so string tensors run only on the eager path (numpy or concrete "
                "inputs, outside `jax.jit`)."
            )
        for i in dynamic:  # the eager string path: concrete JAX arrays beside strings become numpy
            converted[i] = np.asarray(converted[i])
        return tuple(converted)
    to_jax = public or not contract.folds or any_jax
    if not to_jax and not x64_enabled():
        _narrow_beside_narrowed(op, names, converted, dynamic)
    weak = public and [i for i in dynamic if _is_python_scalar(inputs[i])]
    if to_jax:
        for i in dynamic:
            if names[i] in contract.concrete and not isinstance(converted[i], jax.Array):
                continue  # read by the op while known; it converts them where it computes
            if isinstance(converted[i], np.ndarray):
                converted[i] = as_jax(converted[i], what=f"input `{names[i]}` of {op.name}")
    if weak:
        _apply_weak_types(op, names, converted, weak)
    return tuple(converted)


def _narrow_beside_narrowed(op: OpVersion, names, converted, dynamic) -> None:
    """With x64 off, a 64-bit numpy value (an int64 Constant) that meets the 32-bit value
    JAX made of a 64-bit graph input computes as JAX would compute the pair: in 32 bits,
    exactly, or with an error naming it if it does not fit. Eager and ``jax.jit`` agree."""
    present = {np.dtype(converted[i].dtype) for i in dynamic if isinstance(converted[i], np.ndarray)}
    for i in dynamic:
        value = converted[i]
        if isinstance(value, np.ndarray) and is_narrowed(value.dtype) and jax_dtype(value.dtype) in present:
            converted[i] = narrowed(value, what=f"input `{names[i]}` of {op.name}")


def _is_python_scalar(value) -> bool:
    return isinstance(value, (bool, int, float, complex))


def _python_value(value, *, public: bool):
    """A Python scalar or (nested) list: in ``jaxonnx.ops``, as ``jnp.asarray`` makes it (a
    weakly typed scalar, JAX's default dtypes); in a graph (always typed), as numpy."""
    if public and not isinstance(value, (str, bytes)):
        array = np.asarray(value)
        if array.dtype.kind in "OUS":
            return array
        return jax.numpy.asarray(value)
    return np.asarray(value)


def _apply_weak_types(op: OpVersion, names, converted, weak) -> None:
    """JAX's rule for Python scalars: they take the dtype of the array they meet (the array
    of the same type parameter), so ``where(c, x_f32, 1.0)`` is float32."""
    formals = {f[0]: f[1] for f in op._formals}
    for i in weak:
        type_param = formals.get(names[i])
        partners = [
            converted[j]
            for j, name in enumerate(names)
            if j not in weak and converted[j] is not None and type_param is not None and formals.get(name) == type_param
        ]
        if partners:
            converted[i] = jax.numpy.asarray(converted[i], dtype=partners[0].dtype)


def _static(value, name: str) -> np.ndarray:
    """The exact numpy value of an input that decides the output shape."""
    if is_traced(value):
        error = StaticValueError(
            f"needs the value of `{name}` to decide its output shape, but `{name}` is traced "
            f"(shape {tuple(value.shape)}, dtype {value.dtype}) so its value is unknown at trace "
            "time. Pass it as a Python value or a numpy array."
        )
        error.argument = name
        raise error
    return np.asarray(value)


def is_traced(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def trace_in_progress() -> bool:
    """Whether a JAX transformation (``jit``, ``grad``, ``vmap``) is tracing now, even where
    no value at hand is a tracer. JAX's trace state says so in a fraction of a microsecond
    (there is no public spelling of it in jax 0.10); without it, whether an array made now
    comes out a tracer, which runs a small computation (about 150 us on CPU)."""
    clean = getattr(jax._src.core, "trace_state_clean", None)
    return not clean() if clean is not None else is_traced(jax.numpy.zeros(()))


_OPTIONAL = onnx.defs.OpSchema.FormalParameterOption.Optional
_VARIADIC = onnx.defs.OpSchema.FormalParameterOption.Variadic


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
    # The graph runner hands an op its subgraphs as callables, as `lax.cond` takes functions.
    _AttrType.GRAPH: (callable, "a function (a subgraph)"),
    _AttrType.GRAPHS: (_sequence_of(callable), "a sequence of functions (subgraphs)"),
    _AttrType.TYPE_PROTO: (_instance_of(onnx.TypeProto), "an onnx.TypeProto"),
    _AttrType.TYPE_PROTOS: (_sequence_of(_instance_of(onnx.TypeProto)), "a sequence of onnx.TypeProto"),
}


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

    def register(
        self,
        op_type: str,
        *since_versions: int,
        domain: str = DEFAULT_DOMAIN,
        static: Sequence[str] = (),
        concrete: Sequence[str] = (),
        size_hint: bool | str | tuple[str, ...] = False,
        folds: bool = True,
        output_count: bool = False,
        rng: bool = False,
        options: Sequence[str] = (),
        padding: str = "",
        schema: onnx.defs.OpSchema | None = None,
        computation: bool = False,
        channels_last: bool = False,
        node: bool = False,
        checks: bool = False,
    ):
        """See :func:`register`."""
        domain = canonical_domain(domain)
        if padding not in PADDING_KINDS:
            raise ValueError(f"{op_type}: `padding` is one of {', '.join(map(repr, PADDING_KINDS))}, got {padding!r}.")
        contract = OpContract(
            tuple(static),
            tuple(concrete),
            size_hint,
            folds,
            output_count,
            rng,
            tuple(options),
            padding,
            computation,
            channels_last,
            node,
            checks,
        )

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
            for since in since_versions:
                if since in versions:
                    raise ValueError(f"{op_type}-{since} is already registered ({versions[since].fn}).")
                own = schema if schema is not None else _onnx_schema(op_type, since, domain)
                unknown = set(contract.static + contract.concrete) - {f.name for f in own.inputs}
                if unknown:
                    raise ValueError(f"{op_type}-{since} has no inputs {sorted(unknown)} (named in its contract).")
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


#: jaxonnx's registry: every op module registers into it on import.
REGISTRY = Registry()


def register(
    op_type: str,
    *since_versions: int,
    domain: str = DEFAULT_DOMAIN,
    static: Sequence[str] = (),
    concrete: Sequence[str] = (),
    size_hint: bool | str | tuple[str, ...] = False,
    folds: bool = True,
    output_count: bool = False,
    rng: bool = False,
    options: Sequence[str] = (),
    padding: str = "",
    schema: onnx.defs.OpSchema | None = None,
    computation: bool = False,
    channels_last: bool = False,
    node: bool = False,
    checks: bool = False,
    registry: Registry | None = None,
):
    """Registers ``fn`` as ``op_type`` at each of ``since_versions``; returns ``fn``, marked
    so that ``jaxonnx.ops`` exports the newest of these versions as a public function (with
    the same conversion, see :meth:`OpVersion.public_function`) when its module lists it in
    ``__all__``.

    ``fn`` is a pure function of arrays and Python values: the onnx inputs positionally
    (``None`` for an omitted optional one), every attribute of the schema as a keyword
    (the schema's default, or None, where the node gives none; a GRAPH attribute as a
    function of the subgraph's inputs), and the keywords its contract takes from the node
    and the call (``size`` / ``fill_value``, ``output_count``, ``rng``, options,
    ``computation``, ``channels_last``, ``node``, ``checks``). Its
    errors are sentences without the op's name ("got `axis`=3 for ..."); the registry puts
    the version label in front. The contract keywords are those of :class:`OpContract`. A
    version that only widens the type list is one more number here; a version whose
    semantics differ is a thin adapter.

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
    return (registry or REGISTRY).register(
        op_type,
        *since_versions,
        domain=domain,
        static=static,
        concrete=concrete,
        size_hint=size_hint,
        folds=folds,
        output_count=output_count,
        rng=rng,
        options=options,
        padding=padding,
        schema=schema,
        computation=computation,
        channels_last=channels_last,
        node=node,
        checks=checks,
    )


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
