"""ScatterElements: versions 11, 13 (bfloat16), 16 (`reduction` add/mul) and 18 (max/min)."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.indexing import REDUCTIONS, checked_reduction, scatter_elements_along, scattered_on_padding


@register("ScatterElements", 18, concrete=("indices",), padding=scattered_on_padding)
def scatter_elements(data, indices, updates, *, axis: int = 0, reduction: str = "none", checks=None):
    """Implements ONNX ScatterElements: ``out[indices[i][j]][j] = updates[i][j]`` for ``axis=0``.

    The inverse of GatherElements: a copy of ``data`` where each element of ``updates``
    replaces (or, with ``reduction`` ``add``/``mul``/``max``/``min``, is combined with) the
    element that the same position of ``indices`` names along ``axis``. With
    ``reduction="none"`` repeated targets leave the result unspecified (as in ONNX).
    Negative indices count from the back.

    Out-of-bounds indices raise when ``indices`` is concrete (naming the value and its
    position). Under ``jax.jit`` an out-of-bounds update is dropped (it writes nothing).
    Gradients flow to ``data`` (where it is kept) and ``updates`` (where it lands).

    Args:
        data: the array to update, of rank >= 1.
        indices: int32/int64 array of the rank of ``data``; on the other dims it may be
            shorter than ``data``.
        updates: the new values, of the shape of ``indices`` and the dtype of ``data``.
        axis: the scatter axis, in ``[-rank, rank - 1]``.
        reduction: ``"none"``, ``"add"``, ``"mul"``, ``"max"`` or ``"min"``.
        checks: where the bounds check of traced ``indices`` goes, to be made after the
            computation (an eager call's compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        An array of the shape and dtype of ``data``.

    Example:
        >>> jaxonnx.ops.scatter_elements(jnp.zeros((2, 3)), jnp.array([[2, 0, -1]]), jnp.array([[1., 2., 3.]]), axis=1)
        Array([[2., 0., 3.],
               [0., 0., 0.]], dtype=float32)
    """
    if reduction not in REDUCTIONS:
        raise OnnxValidationError(f"got `reduction`={reduction!r}; it must be one of {', '.join(REDUCTIONS)}.")
    # Padding is out of range on purpose: it writes nothing, unchecked.
    return scatter_elements_along(data, indices, updates, axis, reduction, checks=checks)


@register("ScatterElements", 16, concrete=("indices",), padding=scattered_on_padding)
def _scatter_elements_16(data, indices, updates, *, axis=0, reduction="none", checks=None):
    reduction = checked_reduction(reduction, REDUCTIONS[:3])
    return scatter_elements(data, indices, updates, axis=axis, reduction=reduction, checks=checks)


@register("ScatterElements", 11, 13, concrete=("indices",), padding=scattered_on_padding)
def _scatter_elements_11(data, indices, updates, *, axis=0, checks=None):
    return scatter_elements(data, indices, updates, axis=axis, checks=checks)


__all__ = ["scatter_elements"]
