"""Declared types of graph values: tensors, sequences of them and optionals.

A graph input or output (of the main graph or of a subgraph) declares a
``tensor(elem)[dims]``, a ``seq(...)`` or an ``optional(...)``. At run time a tensor is a
numpy or JAX array, a sequence is a Python list of values (its length is static, a pytree
JAX understands) and an optional is ``None`` or its value. :class:`ValueType` checks and
converts one value against its declaration, recursively.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping

import jax
import numpy as np
import onnx

from jaxonnx._core.dtypes import (
    WIDE,
    X64_ON_HINT,
    as_jax,
    as_str_array,
    is_narrowed,
    is_string_array,
    jax_dtype,
    narrowed,
    numpy_dtype,
    onnx_type_name,
    x64_enabled,
)
from jaxonnx._errors import DeclaredShapeWarning, ModelLoadError, OnnxTypeError, OnnxValidationError, UnsupportedOpError


@dataclasses.dataclass(frozen=True)
class ValueInfo:
    """A declared graph input or output, as onnxruntime's ``NodeArg`` describes it.

    Attributes:
        name: the graph value's name.
        type: the ONNX type as text, e.g. ``"tensor(float)"``, ``"seq(tensor(int64))"`` or
            ``"optional(tensor(float))"`` (``"tensor(?)"`` when the element type is not declared).
        shape: one entry per dim: an int, the name of a symbolic dim, or None for a dim
            with neither (or a negative ``dim_value``); None when the rank is not declared
            or the value is not a tensor.
        dtype: the numpy element type (ml_dtypes for bfloat16 and the narrow floats), or
            None when not declared or the value is not a tensor.
    """

    name: str
    type: str
    shape: list[int | str | None] | None
    dtype: np.dtype | None


@dataclasses.dataclass(frozen=True)
class ValueType:
    """The declared type of one graph value.

    ``kind`` is ``"tensor"`` (with ``dtype`` and ``shape``, None meaning "any"),
    ``"sequence"`` or ``"optional"`` (with ``element``, the type of their items), ``"map"``
    (``dtype`` the key type, ``element`` the value type; a Python dict), or ``"any"`` for a
    declaration without a type.
    """

    name: str
    kind: str = "tensor"
    dtype: np.dtype | None = None
    shape: tuple[int | str | None, ...] | None = None  # None: rank unknown
    element: ValueType | None = None

    @classmethod
    def of_array(cls, name: str, array: np.ndarray) -> ValueType:
        """The exact type of an array, e.g. of an initializer that a param replaces."""
        return cls(name, "tensor", array.dtype, tuple(array.shape))

    @classmethod
    def declared(cls, value_info: onnx.ValueInfoProto, kind: str, where: str = "") -> ValueType:
        """The declared type of a graph input or output (``where``: the graph, for errors,
        e.g. " in the subgraph /loop/body"). Everything the IR lets a declaration leave out
        means "any": no shape field (any rank), a dim with neither value nor name (any
        length), an UNDEFINED element type, and no type at all."""
        if not value_info.HasField("type"):
            return cls(value_info.name, "any")
        return cls._of_type(value_info.name, value_info.type, f"graph {kind} {value_info.name!r}{where}")

    @classmethod
    def _of_type(cls, name: str, type_proto: onnx.TypeProto, what: str) -> ValueType:
        which = type_proto.WhichOneof("value")
        if which is None:
            return cls(name, "any")
        if which in ("tensor_type", "sparse_tensor_type"):
            tensor_type = getattr(type_proto, which)
            if tensor_type.elem_type not in onnx.TensorProto.DataType.values():
                raise ModelLoadError(
                    f"The {what} has the element type {tensor_type.elem_type}, which ONNX does not define "
                    "(is the file corrupt?)."
                )
            dtype = numpy_dtype(tensor_type.elem_type) if tensor_type.elem_type else None
            shape = None
            if tensor_type.HasField("shape"):
                # paddle2onnx and others write `dim_value: -1` for a dynamic dim; like
                # onnxruntime, a negative dim means "unknown", as a dim with no value does.
                # paddle2onnx also writes `dim_param: "?"`: a placeholder, not a name that two
                # dims share.
                shape = tuple(
                    (d.dim_value if d.dim_value >= 0 else None)
                    if d.HasField("dim_value")
                    else (d.dim_param if d.dim_param not in ("", "?") else None)
                    for d in tensor_type.shape.dim
                )
            return cls(name, "tensor", dtype, shape)
        if which in ("sequence_type", "optional_type"):
            element = cls._of_type(name, getattr(type_proto, which).elem_type, what)
            return cls(name, "sequence" if which == "sequence_type" else "optional", element=element)
        if which == "map_type":
            # A map (ai.onnx.ml's ZipMap, DictVectorizer, CastMap) is a Python dict, run eagerly.
            if type_proto.map_type.key_type not in onnx.TensorProto.DataType.values():
                raise ModelLoadError(
                    f"The {what} is a map with the key type {type_proto.map_type.key_type}, which ONNX does not "
                    "define (is the file corrupt?)."
                )
            key = numpy_dtype(type_proto.map_type.key_type)
            element = cls._of_type(name, type_proto.map_type.value_type, what)
            return cls(name, "map", key, element=element)
        raise UnsupportedOpError(
            f"The {what} is of type {which.removesuffix('_type')}; jaxonnx runs tensors, sequences, optionals and maps."
        )

    # ------------------------------------------------------------------ description

    def type_text(self) -> str:
        if self.kind == "any":
            return "any"
        if self.kind in ("sequence", "optional", "map"):
            return self.onnx_type()
        type_name = onnx_type_name(self.dtype) if self.dtype is not None else "?"
        dims = "?" if self.shape is None else "[" + ", ".join("?" if d is None else str(d) for d in self.shape) + "]"
        return f"tensor({type_name}){dims}"

    @property
    def item_type(self) -> ValueType:
        """The type of a sequence's or an optional's items, or of a map's values: ``element``,
        which loading always sets for those kinds."""
        if self.element is None:
            raise OnnxTypeError(f"The value {self.name!r} is declared {self.kind} without the type of its items.")
        return self.element

    def onnx_type(self) -> str:
        """The type as onnxruntime writes it, without dims: ``seq(tensor(float))``."""
        if self.kind == "map":
            return f"map({onnx_type_name(self.dtype)}, {self.item_type.onnx_type()})"
        if self.kind in ("sequence", "optional"):
            return f"{'seq' if self.kind == 'sequence' else 'optional'}({self.item_type.onnx_type()})"
        if self.kind == "any":
            return "any"
        return f"tensor({onnx_type_name(self.dtype) if self.dtype is not None else '?'})"

    def describe(self) -> str:
        return f"{self.name}: {self.type_text()}"

    def info(self) -> ValueInfo:
        if self.kind != "tensor":
            return ValueInfo(self.name, self.onnx_type(), None, None)
        shape = None if self.shape is None else list(self.shape)
        return ValueInfo(self.name, self.onnx_type(), shape, self.dtype)

    # ------------------------------------------------------------------ checks

    def accepts_dtype(self, dtype, *, as_jax_computes: bool = True) -> bool:
        """Whether ``dtype`` is the declared type; with ``as_jax_computes``, the 32-bit
        counterpart of a declared 64-bit type is accepted too while ``jax_enable_x64`` is off."""
        if self.dtype is None:
            return True
        if self.dtype == object:
            return np.dtype(dtype).kind in "OUS"
        if np.dtype(dtype) == self.dtype:
            return True
        return as_jax_computes and is_narrowed(self.dtype) and np.dtype(dtype) == jax_dtype(self.dtype)

    def accepts_shape(self, shape) -> bool:
        if self.shape is None:
            return True
        shape = tuple(shape)
        return len(shape) == len(self.shape) and all(
            not isinstance(d, int) or d == s for d, s in zip(self.shape, shape)
        )

    def checked_input(self, value, *, kind: str, name: str | None = None):
        """``value`` checked against this declaration (and converted: a numpy input of a
        64-bit type becomes its 32-bit counterpart while ``jax_enable_x64`` is off, exactly
        or with an error naming it, as JAX and ``jax.jit`` convert it)."""
        name = name or self.name
        if self.kind == "any":
            return value
        if self.kind == "sequence":
            if not isinstance(value, (list, tuple)):
                raise OnnxTypeError(
                    f"The {kind} {name!r} is declared {self.onnx_type()}, a sequence: pass a list of "
                    f"values, got {type(value).__name__}."
                )
            return [self.item_type.checked_input(v, kind=kind, name=f"{name}[{i}]") for i, v in enumerate(value)]
        if self.kind == "optional":
            return None if value is None else self.item_type.checked_input(value, kind=kind, name=name)
        if self.kind == "map":
            if not isinstance(value, Mapping):
                raise OnnxTypeError(
                    f"The {kind} {name!r} is declared {self.onnx_type()}, a map: pass a dict, got {type(value).__name__}."
                )
            return dict(value)
        if value is None or isinstance(value, Mapping):
            raise OnnxTypeError(
                f"The {kind} {name!r} is declared {self.type_text()}, a tensor, but got "
                f"{'None' if value is None else type(value).__name__}."
            )
        if not isinstance(value, jax.Array):
            value = np.asarray(value)
            if is_string_array(value):
                # Initializers and Constants hold `str`; bytes inputs are decoded to match.
                value = as_str_array(value)
            else:
                # While x64 is off, `jax.jit` narrows a 64-bit argument to 32 bits (floats
                # round, integers must fit); the eager call narrows it the same way, so
                # `np.random.rand(...)` and int64 ids work both ways.
                value = narrowed(value, what=f"{kind} {name!r}")
        if not self.accepts_dtype(value.dtype):
            raise OnnxTypeError(
                f"The {kind} {name!r} is declared tensor({onnx_type_name(self.dtype)}) but got "
                f"dtype {value.dtype}; jaxonnx does not cast inputs{narrowing_note(self, value)}."
            )
        if not self.accepts_shape(value.shape):
            raise OnnxValidationError(
                f"The {kind} {name!r} is declared with shape {list(self.shape or ())} but got shape "
                f"{list(value.shape)}."
            )
        return value

    def output(self, value, *, warned: set[str] | None = None):
        """Checks an output against its declared type; string outputs are copied, since they
        may be views of the model's own initializers; numpy becomes JAX.

        Another element type (or kind) is an error. Another shape (another rank, or a dim
        declared with a value) is what onnxruntime warns about and returns
        (``VerifyOutputSizes``); so does jaxonnx, with a :class:`~jaxonnx.DeclaredShapeWarning`
        once per output (the names already warned about are kept in ``warned``; without
        ``warned``, shapes are not compared)."""
        if self.kind == "any" and isinstance(value, (list, tuple)) or self.kind == "sequence":
            if not isinstance(value, (list, tuple)):
                raise OnnxTypeError(
                    f"The graph output {self.name!r} is declared {self.type_text()} but the graph computed a tensor."
                )
            element = self.element or ValueType(self.name, "any")
            return [element.output(v, warned=warned) for v in value]
        if self.kind == "optional":
            return None if value is None else self.item_type.output(value, warned=warned)
        if self.kind == "map":
            if not isinstance(value, Mapping):
                raise OnnxTypeError(
                    f"The graph output {self.name!r} is declared {self.onnx_type()} but the graph computed {type(value).__name__}."
                )
            return dict(value)
        if value is None:
            if self.kind == "any":
                return None
            raise OnnxTypeError(
                f"The graph output {self.name!r} is declared {self.type_text()} but the graph computed None."
            )
        if isinstance(value, (list, tuple)):
            raise OnnxTypeError(
                f"The graph output {self.name!r} is declared {self.type_text()} but the graph computed a sequence."
            )
        dtype = value.dtype if hasattr(value, "dtype") else np.asarray(value).dtype
        if not self.accepts_dtype(dtype):
            raise OnnxTypeError(
                f"The graph output {self.name!r} is declared {self.type_text()} but the graph "
                f"computed tensor({onnx_type_name(dtype)}) of shape {list(np.shape(value))}"
                f"{narrowing_note(self, value)}."
            )
        if warned is not None:
            self.warn_if_shape_differs(np.shape(value), f"The graph output {self.name!r}", "the graph", warned)
        if isinstance(value, jax.Array):
            return value
        if is_string_array(value):
            return np.array(value, dtype=object, copy=True)
        return as_jax(value, what=f"graph output {self.name!r}")

    def check_computed(self, value, *, node: str, warned: set[str]) -> None:
        """Checks a value a node computed against its ``value_info`` declaration, as
        onnxruntime does: another element type is an error (onnxruntime refuses the model
        when it loads it), another shape warns once per value and the value goes on (see
        :meth:`output`). Values that are not tensors, and undeclared parts, are not checked."""
        if self.kind != "tensor" or value is None or isinstance(value, (list, tuple, Mapping)):
            return
        dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
        if dtype is None or shape is None:
            return
        what = f"The value {self.name!r}"
        if not self.accepts_dtype(dtype):
            raise OnnxTypeError(
                f"{what} is declared {self.type_text()} in the graph's value_info but node {node} computed "
                f"tensor({onnx_type_name(dtype)}) of shape {list(shape)}{narrowing_note(self, value)}; "
                "onnxruntime refuses such a model too."
            )
        self.warn_if_shape_differs(tuple(shape), f"{what} (in the graph's value_info)", f"node {node}", warned)

    def warn_if_shape_differs(self, shape, what: str, computer: str, warned: set[str]) -> None:
        """Warns once per value (by name, in ``warned``) when ``shape`` is not the declared
        shape: another rank, or another length where the declaration gives a dim's value
        (symbolic and unknown dims match any length), as onnxruntime compares them."""
        if self.accepts_shape(shape) or self.name in warned:
            return
        warned.add(self.name)
        warnings.warn(
            f"{what} is declared {self.type_text()} but {computer} computed shape {list(shape)}; jaxonnx "
            "goes on with the computed value, as onnxruntime does (it warns that the shape expected from "
            "the model does not match the actual one). Filter this with "
            "`warnings.filterwarnings('ignore', category=jaxonnx.DeclaredShapeWarning)`.",
            DeclaredShapeWarning,
            stacklevel=2,
        )


def declared_values(graph: onnx.GraphProto) -> dict[str, ValueType]:
    """The tensor types a graph's ``value_info`` declares, by value name. Declarations that
    say nothing checkable (no element type and no shape) and types jaxonnx cannot read are
    left out: value_info describes, it does not decide what a node computes."""
    declared = {}
    for value_info in graph.value_info:
        try:
            value_type = ValueType.declared(value_info, "value_info")
        except (UnsupportedOpError, ValueError, TypeError, KeyError):
            continue
        if value_type.kind == "tensor" and (value_type.dtype is not None or value_type.shape is not None):
            declared[value_info.name] = value_type
    return declared


def narrowing_note(declared: ValueType, value) -> str:
    """Why a JAX value has a 32-bit dtype that the declaration does not name, when x64 is off:
    JAX (or ``jax.jit``, for a traced value) converts 64-bit arrays to 32 bits."""
    wide = WIDE.get(np.dtype(value.dtype))
    if x64_enabled() or wide is None or not isinstance(value, jax.Array):
        return ""
    who = "jax.jit" if isinstance(value, jax.core.Tracer) else "JAX"
    return (
        f" (if it was {'an' if str(wide)[0] in 'aeiou' else 'a'} {wide} array, {who} converted the {wide} array to {value.dtype} because "
        f"jax_enable_x64 is off; {X64_ON_HINT})"
    )
