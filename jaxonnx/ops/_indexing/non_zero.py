"""NonZero: versions 9 and 13 (13 only adds bfloat16)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.padding import RealLength
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError, StaticValueError
from jaxonnx.ops._helpers.bounds import refuse_at_run_time_if
from jaxonnx.ops._helpers.common import is_traced


@register("NonZero", 9, 13, concrete=("X",), size_hint=True, counts_non_zeros_of="X", padded_axis=1)
def non_zero(X, *, size: int | None = None, fill_value=None, real_length: bool = False):
    """Implements ONNX NonZero: the indices of the non-zero elements of ``X``, one row per dim.

    Like ``np.array(np.nonzero(X))`` (row-major order), but a scalar gives shape
    ``(0, 1)`` or ``(0, 0)`` as in ``onnx.reference``. The output length depends on the
    values of ``X``: a concrete ``X`` (numpy, or a JAX array outside ``jax.jit``) gives the
    exact result. A traced ``X`` needs ``size`` (for a model: a size hint), like
    ``jnp.nonzero``: the output then has ``size`` columns, the indices first and the rest
    ``fill_value``; finding more than ``size`` raises at run time (a host callback, as in
    :func:`compress`) instead of truncating.

    The default padding is **out of range on purpose**: row ``d`` is padded with
    ``X.shape[d]``. ``x[mask]`` exports as NonZero -> Transpose -> GatherND, and a
    traced out-of-range GatherND row reads zeros (and a ScatterND row is dropped), so the
    padded rows are zeros and never real data: sums over the result stay right. Padding
    with 0 would gather the element at index 0 into every padded row.

    Args:
        X: the array to search.
        size: the static number of columns (needed for a traced ``X``).
        fill_value: the padding index when ``size`` is given; defaults to the dim size
            of each row (out of range, see above).
        real_length: with ``size``, also return the real number of columns (a
            :class:`~jaxonnx._core.padding.RealLength`, for the graph runner's padding marks).

    Returns:
        An int64 array of shape ``(X.ndim, count)`` (int32 when JAX's x64 mode is off).

    Example:
        >>> jaxonnx.ops.non_zero(np.array([[1, 0], [0, 3]]))
        array([[0, 1],
               [0, 1]])
        >>> jax.jit(lambda x: jaxonnx.ops.non_zero(x, size=3))(jnp.array([0., 2., 5.]))
        Array([[1, 2, 3]], dtype=int32)
    """
    if real_length and size is not None:
        count = jnp.count_nonzero(X) if is_traced(X) else np.count_nonzero(np.asarray(X)) if X.ndim else 0
        return non_zero(X, size=size, fill_value=fill_value), RealLength(count, (1,), counted=0)
    if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0):
        raise OnnxValidationError(f"needs a non-negative int `size`, got {size!r}.")
    if fill_value is not None and (isinstance(fill_value, bool) or not isinstance(fill_value, (int, np.integer))):
        raise OnnxValidationError(f"needs an int `fill_value` (an index), got {fill_value!r}.")
    rank = X.ndim
    pads = np.array(X.shape if fill_value is None else [fill_value] * rank, np.int64).reshape(rank, 1)
    if not is_traced(X):
        concrete = np.asarray(X)
        found = (
            np.array(np.nonzero(concrete), np.int64).reshape(rank, -1)
            if rank
            else np.empty((0, int(concrete != 0)), np.int64)
        )
        if size is not None:
            if found.shape[1] > size:
                raise OnnxValidationError(
                    f"found {found.shape[1]} non-zero elements but `size`={size}; the result would be "
                    "truncated, so it is refused. Give a larger `size`."
                )
            found = np.concatenate([found, np.broadcast_to(pads, (rank, size - found.shape[1]))], axis=1)
        # Eager JAX input gives a JAX output; the indices are exact in 32 bits too.
        return (
            jnp.asarray(found, dtype=jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)
            if isinstance(X, jax.Array)
            else found
        )
    if size is None:
        error = StaticValueError(
            f"cannot decide its output shape under `jax.jit`: `X` is traced (shape {tuple(X.shape)}), "
            "so the number of non-zero elements is unknown at trace time. Make `X` static (a numpy "
            "array), or pass `size=` (the number of output columns) and optionally `fill_value=`."
        )
        error.argument = "X"
        raise error
    index_type = jnp.int64 if jax.config.jax_enable_x64 else jnp.int32
    if rank == 0:
        return jnp.zeros((0, size), index_type)
    found = jnp.nonzero(X, size=size, fill_value=tuple(int(p) for p in pads[:, 0]))
    refuse_at_run_time_if(
        jnp.count_nonzero(X) > size,
        lambda count: (
            f"NonZero found {int(count)} non-zero elements at run time but its output was given "
            f"size={size}; the result would be truncated, so it is refused. Give a larger `size` "
            "(for a model, a larger size hint: `size_hints=` of `jaxonnx.load`)."
        ),
        jnp.count_nonzero(X),
    )
    return jnp.stack(found).astype(index_type)


__all__ = ["non_zero"]
