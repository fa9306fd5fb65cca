"""Upsample (deprecated since 10 in favour of Resize): versions 1, 7, 9 and 10.

1 scales the last two axes (``height_scale``, ``width_scale``; modes nearest and
bilinear), 7 takes one scale per axis as the attribute ``scales``, 9 as an input, and 10
only marks the op deprecated.
"""

from __future__ import annotations

import math

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace

_MODES = ("nearest", "linear")


@register("Upsample", 9, 10, static=("scales",))
def upsample(X, scales, *, mode="nearest"):
    """Implements ONNX Upsample: enlarges ``X`` by ``scales``, one per axis.

    Each output axis has ``floor(input_dim * scale)`` elements, and output position ``o``
    reads input coordinate ``o / scale`` (as onnxruntime's Upsample): ``nearest`` takes
    the element at its floor, ``linear`` interpolates between the floor and the next
    element (the last element repeats past the end), axis by axis.

    Args:
        X: the input, any rank (``linear`` needs a float type).
        scales: static float scales, one per axis of ``X``, each at least 1.
        mode: ``nearest`` or ``linear`` (``bilinear`` and friends are its other names).

    Returns:
        The upsampled array, with the dtype of ``X``.

    Example:
        >>> jaxonnx.ops.upsample(jnp.array([[1.0, 2.0]]), np.array([2.0, 2.0], np.float32))
        Array([[1., 1., 2., 2.],
               [1., 1., 2., 2.]], dtype=float32)
        >>> jaxonnx.ops.upsample(jnp.array([1.0, 2.0]), np.array([2.0], np.float32), mode="linear")
        Array([1. , 1.5, 2. , 2. ], dtype=float32)
    """
    scales = np.asarray(scales)
    if scales.dtype.kind != "f" or scales.shape != (X.ndim,):
        raise OnnxValidationError(
            f"needs float `scales`, one per axis of `X` (shape {tuple(X.shape)}), got {scales.tolist()} of dtype {scales.dtype}."
        )
    if np.any(~(scales >= 1)):
        raise OnnxValidationError(f"needs `scales` of at least 1 (Upsample only enlarges), got {scales.tolist()}.")
    mode = "linear" if mode in ("bilinear", "trilinear") else mode
    if mode not in _MODES:
        raise OnnxValidationError(f"got `mode`={mode!r}; it must be one of {', '.join(_MODES)}.")
    xp = namespace(X)
    if mode == "linear" and np.dtype(X.dtype).kind not in "fc":
        raise OnnxValidationError(f"needs a float `X` in linear mode, got dtype {np.dtype(X.dtype)}.")
    y = X
    for axis, scale in enumerate(scales.tolist()):
        size = X.shape[axis]
        out = math.floor(size * scale)
        if out == size:
            continue
        # The input coordinate of each output position (float64: exact for every size here).
        coordinate = np.minimum(np.arange(out, dtype=np.float64) / scale, size - 1)
        low = np.floor(coordinate).astype(np.int64)
        if mode == "nearest":
            y = xp.take(y, low, axis=axis)
            continue
        high = np.minimum(low + 1, size - 1)
        weight = (coordinate - low).astype(X.dtype).reshape((1,) * axis + (-1,) + (1,) * (X.ndim - 1 - axis))
        below, above = xp.take(y, low, axis=axis), xp.take(y, high, axis=axis)
        y = below + (above - below) * weight
    return y


@register("Upsample", 7)
def _upsample_7(X, *, mode="nearest", scales=None):
    # Version 7 takes the scales as an attribute.
    if scales is None:
        raise OnnxValidationError("needs the attribute `scales`, one per axis of `X`.")
    return upsample(X, np.asarray(scales, np.float32), mode=mode)


@register("Upsample", 1)
def _upsample_1(X, *, mode="nearest", height_scale=None, width_scale=None):
    # Version 1 scales the last two axes of a 4-D input.
    if X.ndim != 4:
        raise OnnxValidationError(f"needs a 4-D `X` (N, C, H, W), got shape {tuple(X.shape)}.")
    if height_scale is None or width_scale is None:
        raise OnnxValidationError(f"needs `height_scale` and `width_scale`, got {height_scale} and {width_scale}.")
    return upsample(X, np.array([1.0, 1.0, height_scale, width_scale], np.float32), mode=mode)


__all__ = ["upsample"]
