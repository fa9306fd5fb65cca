"""CumSum: versions 11 and 14 (14 adds float16 and bfloat16)."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.cumulative import running


@register("CumSum", 11, 14, static=("axis",))
def cum_sum(x, axis, *, exclusive: int = 0, reverse: int = 0):
    """Implements ONNX CumSum: the running sum of ``x`` along ``axis``.

    Args:
        x: the array to sum.
        axis: the axis (static: a Python int, a 0-D or one-element integer array), in
            ``[-rank, rank - 1]``.
        exclusive: 1 leaves each element out of its own sum (the first sum is 0).
        reverse: 1 sums from the end of the axis towards its start.

    Returns:
        The running sums, in the dtype of ``x`` (integers wrap as in onnx).

    Example:
        >>> jaxonnx.ops.cum_sum(jnp.array([1, 2, 3]), 0, exclusive=1, reverse=1)
        Array([5, 3, 0], dtype=int32)
    """
    return running(x, axis, exclusive=exclusive, reverse=reverse, product=False)


__all__ = ["cum_sum"]
