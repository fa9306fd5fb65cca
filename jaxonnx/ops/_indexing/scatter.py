"""Scatter: versions 9 and 11 (deprecated in 11 for ScatterElements, which does the same)."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.indexing import scatter_elements_along


@register("Scatter", 9, 11, concrete=("indices",), padding="drops")
def scatter(data, indices, updates, *, axis: int = 0, padded=frozenset()):
    """Implements ONNX Scatter: ``out[indices[i][j]][j] = updates[i][j]`` for ``axis=0``.

    The deprecated name of ScatterElements without ``reduction`` (onnx deprecated it in
    version 11 for ScatterElements, which does the same): a copy of ``data`` where each
    element of ``updates`` replaces the element that the same position of ``indices`` names
    along ``axis``. Repeated targets leave the result unspecified (as in ONNX). Negative
    indices count from the back.

    Out-of-bounds indices raise when ``indices`` is concrete (naming the value and its
    position); under ``jax.jit`` an out-of-bounds update is dropped (it writes nothing).
    Gradients flow to ``data`` (where it is kept) and ``updates`` (where it lands).

    Args:
        data: the array to update, of rank >= 1.
        indices: int32/int64 array of the rank of ``data``; on the other dims it may be
            shorter than ``data``.
        updates: the new values, of the shape of ``indices`` and the dtype of ``data``.
        axis: the scatter axis, in ``[-rank, rank - 1]``.

    Returns:
        An array of the shape and dtype of ``data``.

    Example:
        >>> jaxonnx.ops.scatter(jnp.zeros((1, 5)), np.array([[1, 3]]), jnp.array([[1.1, 2.1]]), axis=1)
        Array([[0. , 1.1, 0. , 2.1, 0. ]], dtype=float32)
    """
    return scatter_elements_along(data, indices, updates, axis, "none")


__all__ = ["scatter"]
