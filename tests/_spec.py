"""A numpy oracle for Compress, Flatten, GatherElements, Where and Slice, written from the
ONNX operator text (onnx.ai/onnx/operators), not from jaxonnx's code; plus the exact
comparison and the random inputs the op tests share.

Each oracle works element by element (or index list by index list) on numpy arrays of
any dtype, string (object) arrays included, and raises ``SpecError`` where the text says
an input is invalid. Where the text is loose, the choice is written down next to it.
"""

from __future__ import annotations

import math

import jax
import ml_dtypes
import numpy as np
import onnx.defs

from jaxonnx._core.dtypes import onnx_type_name

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class SpecError(ValueError):
    """An input that the op's text does not allow."""


# --------------------------------------------------------------------------- helpers


def _axis(axis: int, rank: int, *, lower: int, upper: int) -> int:
    if not lower <= axis <= upper:
        raise SpecError(f"axis {axis} outside [{lower}, {upper}] for rank {rank}")
    return axis + rank if axis < 0 else axis


def _clamp(value: int, low: int, high: int) -> int:
    return min(max(value, low), high)


def _take(data: np.ndarray, index_lists) -> np.ndarray:
    """``data`` restricted to the given index list on every axis (works for every dtype)."""
    out = data
    for axis, indices in enumerate(index_lists):
        out = np.take(out, np.asarray(indices, dtype=np.intp), axis=axis)
    return out


# --------------------------------------------------------------------------- Slice


def slice_spec(data, starts, ends, axes=None, steps=None, *, negative_axes=True) -> np.ndarray:
    """Slice, by the Slice-13 text (its clamping rules are used for every version).

    * "If axes are omitted, they are set to [0, ..., r-1]": read as the first
      ``len(starts)`` axes, which is what Slice-1's text says and what every
      implementation does (the text cannot mean more axes than starts).
    * "If steps are omitted, they are set to [1, ..., 1] of length len(starts)".
    * Negative starts/ends get ``dims[axes[i]]`` added; then start is clamped to
      ``[0, dim]`` (positive step) or ``[0, dim - 1]`` (negative step), end to ``[0, dim]``
      or ``[-1, dim - 1]``; the elements are start, start + step, ... up to end (exclusive).
    * Slice-1 and -10 define no negative axes ("Accepted range is [-r, r-1]" starts at 11).
    """
    data = np.asarray(data)
    rank = data.ndim
    starts = [int(v) for v in np.asarray(starts).reshape(-1)]
    ends = [int(v) for v in np.asarray(ends).reshape(-1)]
    axes = list(range(len(starts))) if axes is None else [int(v) for v in np.asarray(axes).reshape(-1)]
    steps = [1] * len(starts) if steps is None else [int(v) for v in np.asarray(steps).reshape(-1)]
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise SpecError("starts, ends, axes and steps differ in length")
    axes = [_axis(a, rank, lower=-rank if negative_axes else 0, upper=rank - 1) for a in axes]
    if len(set(axes)) != len(axes):
        raise SpecError("repeated axis")
    index_lists = [range(dim) for dim in data.shape]
    for axis, start, end, step in zip(axes, starts, ends, steps):
        if step == 0:
            raise SpecError("step 0")
        dim = data.shape[axis]
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if step > 0:
            start, end = _clamp(start, 0, dim), _clamp(end, 0, dim)
        else:
            start, end = _clamp(start, 0, dim - 1), _clamp(end, -1, dim - 1)
        index_lists[axis] = range(start, end, step)  # Python's range: exactly "start, +step, ... before end"
    return _take(data, index_lists)


# --------------------------------------------------------------------------- Flatten


def flatten_spec(data, axis: int = 1, *, negative_axis=True) -> np.ndarray:
    """Flatten: shape ``(d_0 X ... X d_(axis-1), d_axis X ... X d_n)``, elements in row-major
    order (the text's examples use ``np.reshape``); ``axis`` in ``[-r, r]`` (``[0, r]`` before 11)."""
    data = np.asarray(data)
    rank = data.ndim
    axis = _axis(axis, rank, lower=-rank if negative_axis else 0, upper=rank)
    rows, cols = math.prod(data.shape[:axis]), math.prod(data.shape[axis:])
    out = np.empty((rows, cols), dtype=data.dtype)
    flat = out.reshape(-1)
    for k, position in enumerate(np.ndindex(*data.shape)):
        flat[k] = data[position]
    return out


# --------------------------------------------------------------------------- GatherElements


def gather_elements_spec(data, indices, axis: int = 0) -> np.ndarray:
    """GatherElements: ``out[i][j][k] = input[index[i][j][k]][j][k]`` for axis 0 (and so on);
    indices in ``[-s, s-1]``, negative ones count from the back, anything else is an error."""
    data, indices = np.asarray(data), np.asarray(indices)
    rank = data.ndim
    if rank < 1 or indices.ndim != rank:
        raise SpecError("rank")
    axis = _axis(axis, rank, lower=-rank, upper=rank - 1)
    size = data.shape[axis]
    out = np.empty(indices.shape, dtype=data.dtype)
    for position in np.ndindex(*indices.shape):
        k = int(indices[position])
        if not -size <= k < size:
            raise SpecError(f"index {k} out of bounds")
        source = list(position)
        source[axis] = k + size if k < 0 else k
        if any(s >= n for s, n in zip(source, data.shape)):
            raise SpecError("indices larger than data on a non-axis dim")
        out[position] = data[tuple(source)]
    return out


# --------------------------------------------------------------------------- Where


def broadcast_shape(*shapes) -> tuple[int, ...]:
    """ONNX multidirectional broadcasting: align on the right; per dim, all sizes are equal or 1."""
    rank = max((len(s) for s in shapes), default=0)
    result = []
    for d in range(rank):
        sizes = {s[len(s) - rank + d] for s in shapes if len(s) - rank + d >= 0}
        others = sizes - {1}
        if len(others) > 1:
            raise SpecError(f"cannot broadcast {shapes}")
        result.append(others.pop() if others else 1)
    return tuple(result)


def where_spec(condition, x, y) -> np.ndarray:
    """Where: ``x`` where ``condition`` is true, else ``y``, on the broadcast shape; type T of X and Y."""
    condition, x, y = np.asarray(condition), np.asarray(x), np.asarray(y)
    if condition.dtype != np.bool_:
        raise SpecError("condition must be bool")
    shape = broadcast_shape(condition.shape, x.shape, y.shape)
    out = np.empty(shape, dtype=x.dtype)

    def at(a, position):
        tail = position[len(shape) - a.ndim :]
        return a[tuple(0 if n == 1 else p for p, n in zip(tail, a.shape))]

    for position in np.ndindex(*shape):
        out[position] = at(x, position) if at(condition, position) else at(y, position)
    return out


# --------------------------------------------------------------------------- Compress


def compress_spec(data, condition, axis: int | None = None, *, negative_axis=True) -> np.ndarray:
    """Compress: the slices along ``axis`` (of the row-major flattened input when ``axis`` is
    not given) whose ``condition`` entry is true; slices past the end of ``condition`` are
    discarded. A ``condition`` longer than the axis is not defined by the text; numpy.compress
    (which the text points to) refuses it, and so does this oracle."""
    data, condition = np.asarray(data), np.asarray(condition)
    if condition.dtype != np.bool_ or condition.ndim != 1:
        raise SpecError("condition must be a 1-D bool tensor")
    if axis is None:
        data, axis = flatten_spec(data, 0).reshape(-1), 0
    else:
        axis = _axis(axis, data.ndim, lower=-data.ndim if negative_axis else 0, upper=data.ndim - 1)
    if len(condition) > data.shape[axis]:
        raise SpecError("condition longer than the axis")
    selected = [i for i, keep in enumerate(condition) if keep]
    return _take(data, [selected if d == axis else range(n) for d, n in enumerate(data.shape)])


# --------------------------------------------------------------------------- dtypes


# The element types every op's newest version takes (plus string, tested separately).
DTYPES = tuple(
    np.dtype(d)
    for d in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float16,
        ml_dtypes.bfloat16,
        np.float32,
        np.float64,
        np.complex64,
        np.complex128,
    )
)
# The 8-, 4- and 2-bit types Flatten-21 and later add (via ml_dtypes).
SMALL_DTYPES = tuple(
    np.dtype(d)
    for d in (
        ml_dtypes.float8_e4m3fn,
        ml_dtypes.float8_e4m3fnuz,
        ml_dtypes.float8_e5m2,
        ml_dtypes.float8_e5m2fnuz,
        ml_dtypes.float8_e8m0fnu,
        ml_dtypes.float4_e2m1fn,
        ml_dtypes.int4,
        ml_dtypes.uint4,
        ml_dtypes.int2,
        ml_dtypes.uint2,
    )
)
ALL_DTYPES = DTYPES + SMALL_DTYPES


def schema_types(op: str, version: int, formal: int = 0) -> frozenset[str]:
    """The ONNX type names onnx's schema of ``op``-``version`` allows for input ``formal``."""
    schema = onnx.defs.get_schema(op, version, "")
    type_str = schema.inputs[formal].type_str
    (constraint,) = [c for c in schema.type_constraints if c.type_param_str == type_str]
    return frozenset(s[len("tensor(") : -1] for s in constraint.allowed_type_strs)


def dtypes_for(op: str, version: int, formal: int = 0) -> tuple[np.dtype, ...]:
    """The dtypes of ALL_DTYPES that ``op``-``version`` accepts for input ``formal``."""
    allowed = schema_types(op, version, formal)
    return tuple(d for d in ALL_DTYPES if onnx_type_name(d) in allowed)


# --------------------------------------------------------------------------- values

# Values that a 32-bit or float detour would change, put into every array of their dtype.
SPECIAL_VALUES = {
    np.dtype(np.int64): [2**40, -(2**40) - 1, INT64_MIN, INT64_MAX, 2**53 + 1],
    np.dtype(np.uint64): [2**63 + 1, 2**64 - 1, 2**40, 2**53 + 1],
    np.dtype(np.int32): [INT32_MIN, INT32_MAX, 2**24 + 1],
    np.dtype(np.uint32): [2**32 - 1, 2**31 + 1],
    np.dtype(np.float64): [2.0**-1074, -0.0, np.nan, np.inf, 1 + 2.0**-52],
    np.dtype(np.float32): [np.float32(2.0**-149), -0.0, np.nan, -np.inf],
    np.dtype(np.complex128): [complex(2.0**-1074, -0.0), complex(np.nan, 1.0)],
}


def random_array(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Random values of ``dtype``: random bit patterns where every pattern is a value (NaN
    payloads, -0.0, subnormals and infinities included), plus SPECIAL_VALUES."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    size = math.prod(shape)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind == "O":
        words = ["", "a", "é", "naïve", "x" * 7, "0", "日本", "a b"]
        return np.array([words[i] for i in rng.integers(0, len(words), size=size)], dtype=object).reshape(shape)
    if dtype in (
        np.dtype(ml_dtypes.int4),
        np.dtype(ml_dtypes.uint4),
        np.dtype(ml_dtypes.int2),
        np.dtype(ml_dtypes.uint2),
    ):
        info = ml_dtypes.iinfo(dtype)
        return rng.integers(int(info.min), int(info.max) + 1, size=shape).astype(dtype)
    if dtype == np.dtype(ml_dtypes.float4_e2m1fn):
        return rng.integers(0, 16, size=shape, dtype=np.uint8).view(dtype)
    out = np.frombuffer(rng.bytes(size * dtype.itemsize), dtype=dtype).reshape(shape).copy()
    specials = SPECIAL_VALUES.get(dtype, [])
    if size and specials:
        positions = rng.integers(0, size, size=min(len(specials), size))
        out.reshape(-1)[positions] = np.array(specials, dtype=dtype)[: len(positions)]
    return out


# --------------------------------------------------------------------------- exact comparison


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def assert_exact(actual, expected, *, kind: str | None = None) -> None:
    """``actual`` equals ``expected`` exactly: same shape, same dtype, same bits per element
    (so NaN payloads, -0.0 and 64-bit integers are checked too); string arrays by value.

    ``kind`` (``"jax"`` or ``"numpy"``) also checks what kind of array ``actual`` is.
    """
    if kind == "jax":
        assert isinstance(actual, jax.Array), f"expected a JAX array, got {type(actual)}"
    elif kind == "numpy":
        assert isinstance(actual, np.ndarray), f"expected a numpy array, got {type(actual)}"
    elif kind is not None:
        raise ValueError(kind)
    expected = np.asarray(expected)
    actual_np = np.asarray(actual)
    assert actual_np.shape == expected.shape, f"shape {actual_np.shape} != expected {expected.shape}"
    if expected.dtype.kind in "OUS":
        assert actual_np.dtype.kind in "OUS", f"dtype {actual_np.dtype} is not a string dtype"
        np.testing.assert_array_equal(actual_np, expected)
        assert all(type(a) is type(e) for a, e in zip(actual_np.reshape(-1), expected.reshape(-1)))
        return
    assert actual_np.dtype == expected.dtype, f"dtype {actual_np.dtype} != expected {expected.dtype}"
    if expected.dtype.kind in "biufc":  # numpy's own types (ml_dtypes' are kind "V"): a readable message first
        np.testing.assert_array_equal(actual_np, expected)
    np.testing.assert_array_equal(_bits(actual_np), _bits(expected), err_msg=f"bits differ ({expected.dtype})")
