"""RoiAlign: versions 10, 16 and 22 (16 adds coordinate_transformation_mode, whose default
half_pixel shifts by -0.5 where 10 did not; 22 adds bfloat16)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import is_traced

_TRANSFORMS = ("half_pixel", "output_half_pixel")
_MODES = ("avg", "max")


@register("RoiAlign", 16, 22, concrete=("rois", "batch_indices"), folds=False)
def roi_align(
    X,
    rois,
    batch_indices,
    *,
    coordinate_transformation_mode="half_pixel",
    mode="avg",
    output_height=1,
    output_width=1,
    sampling_ratio=0,
    spatial_scale=1.0,
):
    """Implements ONNX RoiAlign: bilinear pooling of each region of interest of ``X``.

    Each RoI ``[x1, y1, x2, y2]`` (times ``spatial_scale``, minus 0.5 in ``half_pixel``
    mode) is split into ``output_height x output_width`` bins; each bin samples a grid of
    ``sampling_ratio`` points per axis (``ceil(roi size / output size)`` when 0) at the
    centres of its sub-bins, each point interpolated bilinearly (points more than one
    pixel outside the map count as 0; ``output_half_pixel`` makes RoIs at least 1x1).
    ``avg`` averages the points; ``max`` takes, as onnx.reference and onnxruntime do, the
    largest of the four weighted corner terms ``w * X[corner]`` of every point (not the
    largest interpolated value).

    Known ``rois`` (numpy, or arrays outside ``jax.jit``) fix the sampling grid's size.
    Traced ``rois`` with ``sampling_ratio`` 0 have a grid known only at run time: each bin
    then visits a static window of ``2 * size + 5`` points per axis placed where the
    grid's points lie within one pixel of the map (no more of them can), and counts all
    ``ceil(roi size / output size)`` points in the average, as the text says. In ``max``
    mode that window makes the gathered corner terms larger (memory grows with the
    square of the map size per bin).

    Args:
        X: the feature map ``(N, C, H, W)``.
        rois: ``(num_rois, 4)`` boxes ``[x1, y1, x2, y2]`` in input-image coordinates.
        batch_indices: int64 ``(num_rois,)``: the image of each RoI.
        coordinate_transformation_mode: ``half_pixel`` or ``output_half_pixel`` (see above).
        mode: ``avg`` or ``max``.
        output_height, output_width: the bins per RoI.
        sampling_ratio: the sampling points per bin and axis (0: adaptive).
        spatial_scale: the scale from image to feature-map coordinates.

    Returns:
        ``(num_rois, C, output_height, output_width)``, the dtype of ``X``.

    Example:
        >>> x = jnp.arange(16.0).reshape(1, 1, 4, 4)
        >>> jaxonnx.ops.roi_align(x, np.array([[0.0, 0.0, 2.0, 2.0]], np.float32), np.array([0]), output_height=2, output_width=2)[0, 0]
        Array([[0., 1.],
               [4., 5.]], dtype=float32)
    """
    if X.ndim != 4:
        raise OnnxValidationError(f"needs a 4-D `X` (N, C, H, W), got shape {tuple(X.shape)}.")
    if rois.ndim != 2 or rois.shape[1] != 4:
        raise OnnxValidationError(f"needs `rois` of shape (num_rois, 4), got {tuple(rois.shape)}.")
    if tuple(batch_indices.shape) != (rois.shape[0],):
        raise OnnxValidationError(
            f"needs `batch_indices` of shape ({rois.shape[0]},), one per RoI, got {tuple(batch_indices.shape)}."
        )
    if coordinate_transformation_mode not in _TRANSFORMS:
        raise OnnxValidationError(
            f"got `coordinate_transformation_mode`={coordinate_transformation_mode!r}; it must be one of {', '.join(_TRANSFORMS)}."
        )
    if mode not in _MODES:
        raise OnnxValidationError(f"got `mode`={mode!r}; it must be one of {', '.join(_MODES)}.")
    if output_height < 1 or output_width < 1 or sampling_ratio < 0:
        raise OnnxValidationError(
            f"needs positive `output_height` and `output_width` and a non-negative `sampling_ratio`, got "
            f"{output_height}, {output_width} and {sampling_ratio}."
        )
    if not is_traced(batch_indices):
        indices = np.asarray(batch_indices)
        if indices.size and (indices.min() < 0 or indices.max() >= X.shape[0]):
            raise OnnxValidationError(
                f"got `batch_indices` {indices.tolist()} for `X` of {X.shape[0]} images; each must be in [0, {X.shape[0] - 1}]."
            )
    work = jnp.float32 if X.dtype.itemsize < 4 else X.dtype
    half_pixel = coordinate_transformation_mode == "half_pixel"
    height, width = X.shape[2:]
    output = (output_height, output_width)
    windowed = sampling_ratio == 0 and is_traced(rois)
    if sampling_ratio > 0:
        grid = (sampling_ratio, sampling_ratio)
    elif not windowed:
        sizes = _roi_geometry(np, np.asarray(rois).astype(work), spatial_scale, half_pixel)[1]
        grid = tuple(max(1, int(np.ceil(size / out).max(initial=1))) for size, out in zip(sizes, output))
    else:
        # Points of one bin are at least half a pixel apart once a bin spans a pixel (and a
        # smaller bin has one point), so at most 2 * (size + 2) + 1 lie in [-1, size].
        grid = (2 * height + 5, 2 * width + 5)
    starts, sizes = _roi_geometry(jnp, jnp.asarray(rois).astype(work), spatial_scale, half_pixel)
    images = jnp.take(X.astype(work), jnp.asarray(batch_indices), axis=0)

    def one_roi(image, start_h, start_w, size_h, size_w):
        points = []
        for start, size, out, bound, length in (
            (start_h, size_h, output_height, grid[0], height),
            (start_w, size_w, output_width, grid[1], width),
        ):
            count = jnp.asarray(sampling_ratio, work) if sampling_ratio > 0 else jnp.ceil(size / out)
            points.append((*_axis_samples(start, size / out, out, count, bound, length, windowed), count))
        (rows, row_weights, row_used, count_h), (cols, col_weights, col_used, count_w) = points
        count = jnp.maximum(count_h * count_w, 1)
        if mode == "avg":
            # Interpolation as two matrices: (out_h, H) and (out_w, W), sums of the weights.
            row_matrix = _scatter_weights(rows, jnp.where(row_used[..., None], row_weights, 0), height)
            col_matrix = _scatter_weights(cols, jnp.where(col_used[..., None], col_weights, 0), width)
            sums = jnp.einsum("ph,chw,qw->cpq", row_matrix, image, col_matrix, precision=jax.lax.Precision.HIGHEST)
            return sums / count
        # (C, out_h, grid_h, 2, out_w, grid_w, 2): every weighted corner term of every point.
        corners = image[:, rows][:, :, :, :, cols]
        terms = row_weights[None, :, :, :, None, None, None] * col_weights[None, None, None, None] * corners
        used = row_used[:, :, None, None, None, None] & col_used[None, None, None, :, :, None]
        terms = jnp.where(used[None], terms, -jnp.inf)
        best = jnp.max(terms, axis=(2, 3, 5, 6))
        return jnp.where(jnp.isneginf(best), jnp.zeros_like(best), best)  # a bin without points is 0

    pooled = jax.vmap(one_roi)(images, starts[0], starts[1], sizes[0], sizes[1])
    return pooled.astype(X.dtype)


def _roi_geometry(xp, rois, spatial_scale, half_pixel):
    """``((start_h, start_w), (height, width))`` of each RoI in feature-map pixels, with
    onnx.reference's float steps."""
    offset = np.asarray(0.5 if half_pixel else 0.0, rois.dtype)
    scale = np.asarray(spatial_scale, rois.dtype)
    start_w, start_h, end_w, end_h = (rois[:, i] * scale - offset for i in range(4))
    size_w, size_h = end_w - start_w, end_h - start_h
    if not half_pixel:  # output_half_pixel makes malformed RoIs 1x1
        one = np.asarray(1.0, rois.dtype)
        size_w, size_h = xp.maximum(size_w, one), xp.maximum(size_h, one)
    return (start_h, start_w), (size_h, size_w)


def _axis_samples(start, bin_size, bins, count, bound, length, windowed):
    """Along one axis: the two corner indices ``(bins, bound, 2)``, their bilinear weights
    (zero for a point more than one pixel outside), and which of the ``bound`` points per
    bin are sampled (those before ``count``). ``windowed``: the bound points of each bin
    start a little before its first point at -1 or beyond, instead of at its first point."""
    dtype = bin_size.dtype
    bin_index = jnp.arange(bins, dtype=dtype)[:, None]
    point = jnp.arange(bound, dtype=dtype)[None, :]
    bin_start = start + bin_index * bin_size
    if windowed:
        spacing = bin_size / count
        first = jnp.floor((np.asarray(-1, dtype) - bin_start) / spacing - np.asarray(0.5, dtype)) - 1
        point = point + jnp.where(jnp.isfinite(first), jnp.maximum(first, 0), 0)
    coordinate = bin_start + (point + np.asarray(0.5, dtype)) * bin_size / count
    inside = (coordinate >= -1) & (coordinate <= length)
    coordinate = jnp.maximum(coordinate, 0)
    low = jnp.floor(coordinate).astype(jnp.int32)
    at_end = low >= length - 1
    low = jnp.where(at_end, length - 1, low)
    high = jnp.where(at_end, length - 1, low + 1)
    coordinate = jnp.where(at_end, low.astype(dtype), coordinate)
    fraction = coordinate - low.astype(dtype)
    weights = jnp.where(inside[..., None], jnp.stack([1 - fraction, fraction], axis=-1), 0)
    used = jnp.broadcast_to((point < count) & (point >= 0), coordinate.shape)
    return jnp.stack([low, high], axis=-1), weights, used


def _scatter_weights(indices, weights, length):
    """``(bins, length)``: each bin's total weight on each pixel."""
    bins = indices.shape[0]
    rows = jnp.broadcast_to(jnp.arange(bins)[:, None, None], indices.shape)
    return jnp.zeros((bins, length), weights.dtype).at[rows, indices].add(weights)


@register("RoiAlign", 10, concrete=("rois", "batch_indices"), folds=False)
def _roi_align_10(
    X, rois, batch_indices, *, mode="avg", output_height=1, output_width=1, sampling_ratio=0, spatial_scale=1.0
):
    # Version 10 has no pixel shift: output_half_pixel, its later name.
    return roi_align(
        X,
        rois,
        batch_indices,
        coordinate_transformation_mode="output_half_pixel",
        mode=mode,
        output_height=output_height,
        output_width=output_width,
        sampling_ratio=sampling_ratio,
        spatial_scale=spatial_scale,
    )


__all__ = ["roi_align"]
