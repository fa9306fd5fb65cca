"""Op inputs converted once, as each op's contract says, before the op runs.

Inputs that decide a shape (``OpContract.static``) become exact numpy values, or raise
:class:`~jaxonnx.StaticValueError` naming the input when traced; numpy stays numpy for ops
that fold, and any JAX input makes the call compute with JAX. ``jaxonnx.ops`` functions
take Python scalars as JAX does (weak types).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from jaxonnx._core.dtypes import as_jax, is_narrowed, is_string_array, jax_dtype, narrowed, x64_enabled
from jaxonnx._core.dtypes import trace_in_progress as trace_in_progress  # re-exported for the ops
from jaxonnx._errors import OnnxTypeError, StaticValueError

if TYPE_CHECKING:
    from jaxonnx._core.registry import OpVersion


def convert_inputs(op: OpVersion, inputs, *, public: bool) -> tuple:
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
