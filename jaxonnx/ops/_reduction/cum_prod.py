"""CumProd: version 26."""

from __future__ import annotations

import jax
import numpy as np

from jaxonnx._errors import OnnxValidationError
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.common import int_list, namespace, normalize_axis


@register("CumProd", 26, static=("axis",))
def cum_prod(x, axis, *, exclusive: int = 0, reverse: int = 0):
    """Implements ONNX CumProd: the running product of ``x`` along ``axis``.

    Args:
        x: the array to multiply.
        axis: the axis (static: a Python int, a 0-D or one-element integer array), in
            ``[-rank, rank - 1]``.
        exclusive: 1 leaves each element out of its own product (the first product is 1).
        reverse: 1 multiplies from the end of the axis towards its start.

    Returns:
        The running products, in the dtype of ``x`` (integers wrap as in onnx). The
        gradient is exact also where ``x`` holds zeros (products, no division).

    Example:
        >>> jaxonnx.ops.cum_prod(jnp.array([1, 2, 3, 4]), 0, exclusive=1)
        Array([1, 1, 2, 6], dtype=int32)
    """
    values = int_list(axis, name="axis")
    if len(values) != 1:
        raise OnnxValidationError(f"needs one `axis`, got {list(values)}.")
    axis = normalize_axis(values[0], x.ndim)
    xp = namespace(x)
    if reverse:
        x = xp.flip(x, axis)
    if exclusive and x.shape[axis]:
        # A leading 1, and each element moves one place on: the product stops before it.
        head = [slice(None)] * x.ndim
        head[axis] = slice(0, 1)
        body = [slice(None)] * x.ndim
        body[axis] = slice(0, -1)
        x = xp.concatenate([xp.ones_like(x[tuple(head)]), x[tuple(body)]], axis=axis)
    with np.errstate(over="ignore"):  # float overflow is inf, as in JAX
        products = np.cumprod(x, axis=axis, dtype=x.dtype) if xp is np else _jax_cumprod(x, axis)
    return xp.flip(products, axis) if reverse else products


def _jax_cumprod(x, axis: int):
    # As for CumSum: XLA:CPU runs lax.cumprod as an O(n^2) reduce_window; a log-depth
    # associative scan is faster there. Other platforms rewrite lax.cumprod into a scan.
    return jax.lax.platform_dependent(
        x,
        cpu=lambda x: jax.lax.associative_scan(jax.lax.mul, x, axis=axis),
        default=lambda x: jax.lax.cumprod(x, axis=axis),
    )


__all__ = ["cum_prod"]
