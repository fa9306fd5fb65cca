"""CumProd: version 26."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.cumulative import running


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
    return running(x, axis, exclusive=exclusive, reverse=reverse, product=True)


__all__ = ["cum_prod"]
