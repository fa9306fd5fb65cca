"""ScatterND: versions 11, 13 (bfloat16), 16 (`reduction` add/mul) and 18 (max/min)."""

from __future__ import annotations

from jaxonnx._core.padding import Call
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.indexing import REDUCTIONS, checked_reduction, nd_indices, scatter, scattered_on_padding


def _on_padding(call: Call):
    """ScatterND's rule on padding: marked index rows or updates write nothing; the output keeps
    the data's marks."""
    return scattered_on_padding(call, nd=True)


@register("ScatterND", 18, concrete=("indices",), padding=_on_padding)
def scatter_nd(data, indices, updates, *, reduction: str = "none", checks=None):
    """Implements ONNX ScatterND: a copy of ``data`` with the slices that the rows of
    ``indices`` address replaced by (or combined with) ``updates``.

    ``indices[..., :]`` (last dim ``k``) addresses a slice of ``data`` over its first ``k``
    dims, and ``updates`` has shape ``indices.shape[:-1] + data.shape[k:]``. With
    ``reduction="none"`` repeated rows leave the result unspecified (as in ONNX); ``add``,
    ``mul``, ``max`` and ``min`` combine every update that lands on an element with it.
    Negative indices count from the back.

    Out-of-bounds indices raise when ``indices`` is concrete. Under ``jax.jit`` an
    out-of-bounds row is dropped (it writes nothing), so rows padded with out-of-range
    indices by a size-hinted :func:`non_zero` leave ``data`` alone. Gradients flow to
    ``data`` and ``updates`` (for ``mul`` with a traced ``indices`` the rows are applied one
    at a time, as JAX differentiates a product scatter only with unique indices).

    Args:
        data: the array to update, of rank >= 1.
        indices: int64 array of rank >= 1; its last dim is at most ``data.ndim``.
        updates: the new values, of the dtype of ``data``.
        reduction: ``"none"``, ``"add"``, ``"mul"``, ``"max"`` or ``"min"``.
        checks: where the bounds check of traced ``indices`` goes, to be made after the
            computation (an eager call's compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        An array of the shape and dtype of ``data``.

    Example:
        >>> jaxonnx.ops.scatter_nd(jnp.zeros((2, 2)), jnp.array([[1], [1]]), jnp.ones((2, 2)), reduction="add")
        Array([[0., 0.],
               [2., 2.]], dtype=float32)
    """
    if reduction not in REDUCTIONS:
        raise OnnxValidationError(f"got `reduction`={reduction!r}; it must be one of {', '.join(REDUCTIONS)}.")
    if data.ndim == 0 or indices.ndim == 0:
        raise OnnxValidationError(
            f"needs `data` and `indices` of rank >= 1, got shapes {tuple(data.shape)} and {tuple(indices.shape)}."
        )
    k = indices.shape[-1]
    if k > data.ndim:
        raise OnnxValidationError(
            f"got `indices` of shape {tuple(indices.shape)}, whose last dim {k} exceeds the rank of "
            f"`data` {tuple(data.shape)}."
        )
    expected = (*indices.shape[:-1], *data.shape[k:])
    if tuple(updates.shape) != expected:
        raise OnnxValidationError(
            f"needs `updates` of shape {expected} for `data` {tuple(data.shape)} and `indices` "
            f"{tuple(indices.shape)}, got {tuple(updates.shape)}."
        )
    # Padding rows are out of range on purpose: they write nothing, unchecked.
    address = nd_indices(indices, data.shape, checks=checks)
    return scatter(data, address, updates, reduction)


@register("ScatterND", 16, concrete=("indices",), padding=_on_padding)
def _scatter_nd_16(data, indices, updates, *, reduction="none", checks=None):
    return scatter_nd(data, indices, updates, reduction=checked_reduction(reduction, REDUCTIONS[:3]), checks=checks)


@register("ScatterND", 11, 13, concrete=("indices",), padding=_on_padding)
def _scatter_nd_11(data, indices, updates, *, checks=None):
    return scatter_nd(data, indices, updates, checks=checks)


__all__ = ["scatter_nd"]
