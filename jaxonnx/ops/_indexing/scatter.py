"""Scatter: versions 9 and 11 (deprecated in 11 for ScatterElements, which does the same)."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.indexing import scatter_elements_along, scattered_on_padding


@register("Scatter", 9, 11, concrete=("indices",), padding=scattered_on_padding)
def scatter(data, indices, updates, *, axis: int = 0, checks=None):
    """Implements ONNX Scatter: ``out[indices[i][j]][j] = updates[i][j]`` for ``axis=0``.

    The deprecated name of ScatterElements without ``reduction`` (onnx deprecated it in
    version 11): :func:`scatter_elements` with ``reduction="none"``, its checks and its
    gradients included. Repeated targets leave the result unspecified, as in ONNX; concrete
    out-of-bounds indices raise, traced ones write nothing.

    Args:
        data: the array to update, of rank >= 1.
        indices: int32/int64 array of the rank of ``data`` (negative values count from the back).
        updates: the new values, of the shape of ``indices``.
        axis: the scatter axis, in ``[-rank, rank - 1]``.
        checks: where the bounds check of traced ``indices`` goes, to be made after the
            computation (an eager call's compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        A copy of ``data`` with ``updates`` written in.

    Example:
        >>> jaxonnx.ops.scatter(jnp.zeros((1, 5)), np.array([[1, 3]]), jnp.array([[1.1, 2.1]]), axis=1)
        Array([[0. , 1.1, 0. , 2.1, 0. ]], dtype=float32)
    """
    # Padding is out of range on purpose: it writes nothing, unchecked.
    return scatter_elements_along(data, indices, updates, axis, "none", checks=checks)


__all__ = ["scatter"]
