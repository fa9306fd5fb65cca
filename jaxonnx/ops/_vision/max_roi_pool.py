"""MaxRoiPool: versions 1 and 22 (22 only adds bfloat16)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import is_traced


@register("MaxRoiPool", 1, 22, concrete=("rois",), folds=False)
def max_roi_pool(X, rois, *, pooled_shape=None, spatial_scale=1.0, checks=None):
    """Implements ONNX MaxRoiPool: the maximum of each bin of each region of interest.

    As Caffe's and onnxruntime's RoI pooling: a RoI ``[batch_id, x1, y1, x2, y2]`` times
    ``spatial_scale`` is rounded (half away from zero) to whole pixels, inclusive of its
    end (at least 1x1); bin ``(ph, pw)`` covers rows ``floor(ph * h / PH)`` to
    ``ceil((ph + 1) * h / PH)`` (exclusive) from the RoI's start, clipped to the map, and
    likewise columns. An empty bin gives 0.

    Args:
        X: the feature map ``(N, C, H, W)``.
        rois: ``(num_rois, 5)``: ``[batch_id, x1, y1, x2, y2]`` in image coordinates. A
            known batch id outside ``X`` raises; under ``jax.jit`` its RoI pools NaN.
        pooled_shape: the bins ``[PH, PW]`` per RoI (required).
        spatial_scale: the scale from image to feature-map coordinates.
        checks: where the check of traced ``rois``' batch ids goes, to be made after the
            computation (an eager call's compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        ``(num_rois, C, PH, PW)`` with the dtype of ``X``.

    Example:
        >>> x = jnp.arange(16.0).reshape(1, 1, 4, 4)
        >>> jaxonnx.ops.max_roi_pool(x, jnp.array([[0.0, 0.0, 0.0, 3.0, 1.0]]), pooled_shape=[1, 2])[0, 0]
        Array([[5., 7.]], dtype=float32)
    """
    if pooled_shape is None or len(pooled_shape) != 2 or min(pooled_shape) < 1:
        raise OnnxValidationError(f"needs `pooled_shape` of two positive sizes [height, width], got {pooled_shape}.")
    if X.ndim != 4:
        raise OnnxValidationError(f"needs a 4-D `X` (N, C, H, W), got shape {tuple(X.shape)}.")
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise OnnxValidationError(
            f"needs `rois` of shape (num_rois, 5): [batch_id, x1, y1, x2, y2], got {tuple(rois.shape)}."
        )
    message = f"got batch ids {{ids}} in `rois` for `X` of {X.shape[0]} images; each must be in [0, {X.shape[0] - 1}]."
    if not is_traced(rois):
        batch_ids = np.asarray(rois)[:, 0]
        if batch_ids.size and (batch_ids.min() < 0 or batch_ids.max() >= X.shape[0]):
            raise OnnxValidationError(message.format(ids=batch_ids.tolist()))
    elif checks is not None:
        batch_ids = rois[:, 0]
        checks.fail_where((batch_ids < 0) | (batch_ids >= X.shape[0]), batch_ids, message, ids=batch_ids)
    pooled_height, pooled_width = (int(v) for v in pooled_shape)
    height, width = X.shape[2:]
    coordinates = jnp.asarray(rois).astype(jnp.float32)
    scaled = coordinates[:, 1:] * np.float32(spatial_scale)
    start_w, start_h, end_w, end_h = (_round_half_away(scaled[:, i]).astype(jnp.int32) for i in range(4))
    images = jnp.take(X, coordinates[:, 0].astype(jnp.int32), axis=0)
    lowest = np.asarray(-np.inf if jnp.issubdtype(X.dtype, jnp.floating) else np.iinfo(X.dtype).min, X.dtype)

    def one_roi(image, start_h, start_w, end_h, end_w):
        rows = _bins(start_h, end_h, pooled_height, height)  # (PH, H)
        cols = _bins(start_w, end_w, pooled_width, width)  # (PW, W)
        by_col = jnp.max(jnp.where(cols[None, None], image[:, :, None, :], lowest), axis=-1)  # (C, H, PW)
        best = jnp.max(jnp.where(rows[None, :, :, None], by_col[:, None], lowest), axis=2)  # (C, PH, PW)
        empty = ~(jnp.any(rows, axis=1)[:, None] & jnp.any(cols, axis=1)[None, :])
        return jnp.where(empty[None], jnp.zeros((), X.dtype), best)

    return jax.vmap(one_roi)(images, start_h, start_w, end_h, end_w)


def _round_half_away(value):
    # C's round: halves away from zero (jnp.round rounds them to even).
    return jnp.sign(value) * jnp.floor(jnp.abs(value) + 0.5)


def _bins(start, end, bins, length):
    """``(bins, length)``: which pixels along one axis each bin of a RoI covers."""
    size = jnp.maximum(end - start + 1, 1).astype(jnp.float32)
    bin_size = size / bins
    index = jnp.arange(bins, dtype=jnp.float32)
    low = jnp.clip(jnp.floor(index * bin_size).astype(jnp.int32) + start, 0, length)
    high = jnp.clip(jnp.ceil((index + 1) * bin_size).astype(jnp.int32) + start, 0, length)
    pixel = jnp.arange(length, dtype=jnp.int32)
    return (pixel[None, :] >= low[:, None]) & (pixel[None, :] < high[:, None])


__all__ = ["max_roi_pool"]
