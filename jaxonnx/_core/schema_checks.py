"""What an op version's onnx schema says of a call, checked before the op runs.

:class:`SchemaChecks` reads the formal inputs, attribute defaults and type constraints of
an op version's schema and refuses, naming the version (``Slice-13``), inputs of element
types outside its constraints, missing required inputs and attributes, unknown attributes
and attribute values of the wrong kind. :class:`~jaxonnx._core.registry.OpVersion` runs
these checks on every call.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
import onnx
import onnx.defs

from jaxonnx._core.dtypes import WIDE, jax_dtype, onnx_type_name, x64_enabled
from jaxonnx._core.loading import decode_attribute
from jaxonnx._errors import OnnxTypeError, OnnxValidationError

if TYPE_CHECKING:
    from jaxonnx._core.contract import OpContract


class SchemaChecks:
    """The schema-reading half of an op version: its formals, defaults and call checks.

    A mixin of :class:`~jaxonnx._core.registry.OpVersion`, which gives it ``schema``,
    ``name`` and ``contract``.

    Example:
        >>> jaxonnx.get_op("Slice", 13).formal_names(3)
        ['data', 'starts', 'ends']
    """

    if TYPE_CHECKING:
        contract: OpContract

        @property
        def schema(self) -> onnx.defs.OpSchema: ...

        @property
        def name(self) -> str: ...

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


def _narrowed_for_x64_off(value, allowed: frozenset[str]) -> bool:
    """A 32-bit value where the schema names the 64-bit type while ``jax_enable_x64`` is
    off: JAX narrowed it (a JAX array), or the model did, as ``jax.jit`` would (a numpy graph
    input kept numpy, e.g. a Reshape's shape passed as an int64 array), and the op computes
    in the 32-bit counterpart."""
    if not isinstance(value, (jax.Array, np.ndarray)) or x64_enabled():
        return False
    wide = WIDE.get(np.dtype(value.dtype))
    return wide is not None and onnx_type_name(wide) in allowed


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
