"""GridSample: versions 16, 20 and 22 (20 renames the modes linear/cubic and allows any
number of spatial axes, 22 adds bfloat16)."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError

_MODES = ("linear", "nearest", "cubic")
_PADDING_MODES = ("zeros", "border", "reflection")
_CUBIC_ALPHA = -0.75  # Keys' cubic convolution, as PyTorch and onnx.reference


@register("GridSample", 20, 22, folds=False)
def grid_sample(X, grid, *, align_corners=0, mode="linear", padding_mode="zeros"):
    """Implements ONNX GridSample: samples ``X`` at the normalized positions in ``grid``.

    ``grid[n, o1, ..., or]`` holds ``r`` normalized coordinates in ``[-1, 1]``, the
    last axis of ``X`` first (``(x, y)`` for an image, ``(x, y, z)`` for a volume), as
    PyTorch's ``grid_sample``. They map to pixel coordinates ``(g + 1) / 2 * (size - 1)``
    (``align_corners``) or ``((g + 1) * size - 1) / 2``; ``nearest`` rounds half to even.
    A coordinate beyond the border (``-0.5`` and ``size - 0.5``, or the corner centres
    with ``align_corners``) is clamped into ``[0, size - 1]`` (``border``) or reflected
    at the border until inside (``reflection``). ``linear`` (N-linear) and ``cubic``
    (N-cubic, Keys' ``a = -0.75``) then read the neighbouring pixels; pixels outside the
    input read 0 (``zeros``), the nearest edge pixel (``border``) or their reflection.
    As onnx.reference and onnxruntime compute it, except that ``cubic`` with ``border``
    clamps only the pixels it reads, not the coordinate (as PyTorch and onnxruntime;
    onnx.reference clamps both).

    Args:
        X: input ``(N, C, D1, ..., Dr)``; ``linear`` and ``cubic`` need a float type.
        grid: float ``(N, D1_out, ..., Dr_out, r)``.
        align_corners: whether -1 and 1 are the centres (1) or the outer corners (0) of
            the corner pixels.
        mode: ``linear``, ``nearest`` or ``cubic``.
        padding_mode: ``zeros``, ``border`` or ``reflection``.

    Returns:
        ``(N, C, D1_out, ..., Dr_out)`` with the dtype of ``X``. Gradients flow to ``X``
        and (piecewise, as PyTorch's) to ``grid``.

    Example:
        >>> x = jnp.arange(4.0).reshape(1, 1, 2, 2)
        >>> jaxonnx.ops.grid_sample(x, jnp.array([[[[0.0, 0.0], [-1.0, -1.0]]]]), align_corners=1)
        Array([[[[1.5, 0. ]]]], dtype=float32)
    """
    spatial = X.ndim - 2
    if spatial < 1 or grid.ndim != X.ndim or grid.shape[0] != X.shape[0] or grid.shape[-1] != spatial:
        raise OnnxValidationError(
            f"needs `X` of shape (N, C, D1, ..., Dr) and `grid` of shape (N, D1_out, ..., Dr_out, r), got "
            f"{tuple(X.shape)} and {tuple(grid.shape)}."
        )
    if mode not in _MODES:
        raise OnnxValidationError(f"got `mode`={mode!r}; it must be one of {', '.join(_MODES)}.")
    if padding_mode not in _PADDING_MODES:
        raise OnnxValidationError(
            f"got `padding_mode`={padding_mode!r}; it must be one of {', '.join(_PADDING_MODES)}."
        )
    floating = jnp.issubdtype(X.dtype, jnp.inexact)
    if mode != "nearest" and not floating:
        raise OnnxValidationError(f"needs a float `X` in {mode} mode (it interpolates), got dtype {X.dtype}.")
    if 0 in X.shape[2:]:
        raise OnnxValidationError(f"needs a non-empty spatial extent in `X`, got shape {tuple(X.shape)}.")
    # Coordinates at least in float32, as onnx.reference; interpolation in X's float type (half in float32).
    coordinate_type = np.promote_types(grid.dtype, np.float32)
    work = (jnp.float32 if X.dtype.itemsize < 4 else X.dtype) if floating else X.dtype
    sizes = X.shape[2:]
    # The taps of every axis (in X's axis order): pixel indices, weights and in-range masks.
    taps = []
    for axis, size in enumerate(sizes):
        normalized = grid[..., spatial - 1 - axis].astype(coordinate_type)
        taps.append(_axis_taps(normalized, size, bool(align_corners), mode, padding_mode, coordinate_type, work))
    x = X.astype(work)

    def gather(image, indices):  # image (C, *sizes), indices: r arrays of shape (*out)
        return image[(slice(None), *indices)]

    result = None
    for combination in itertools.product(*(range(len(t[0])) for t in taps)):
        indices = [taps[axis][0][k] for axis, k in enumerate(combination)]
        values = jax.vmap(gather)(x, indices)  # (N, C, *out)
        inside = None
        weight = None
        for axis, k in enumerate(combination):
            tap_weight, tap_inside = taps[axis][1][k], taps[axis][2][k]
            weight = tap_weight if weight is None else weight * tap_weight
            inside = tap_inside if inside is None else inside & tap_inside
        if inside is not None:
            values = jnp.where(inside[:, None], values, jnp.zeros((), work))
        term = values if weight is None else values * weight[:, None]
        result = term if result is None else result + term
    return result.astype(X.dtype)


def _axis_taps(normalized, size, align_corners, mode, padding_mode, coordinate_type, work):
    """``(indices, weights, insides)``, one entry per tap of this axis (1, 2 or 4); weights
    are None in nearest mode and insides None unless padding with zeros."""
    if align_corners:
        coordinate = (normalized + 1) / 2 * (size - 1)
        low, high = 0.0, size - 1.0
    else:
        coordinate = ((normalized + 1) * size - 1) / 2
        low, high = -0.5, size - 0.5
    if mode == "nearest":
        coordinate = jnp.round(coordinate)  # half to even
    outside = (coordinate < low) | (coordinate > high)
    # Cubic border padding clamps only the taps, never the coordinate (as PyTorch and
    # onnxruntime; onnx.reference clamps the coordinate too, which no node case covers).
    if padding_mode == "border" and mode != "cubic":
        coordinate = jnp.where(outside, jnp.clip(coordinate, 0, size - 1), coordinate)
    elif padding_mode == "reflection":
        coordinate = jnp.where(outside, _reflect(coordinate, low, high), coordinate)
    if mode == "nearest":
        offsets, base, fraction = (0,), coordinate, None
    else:
        base = jnp.floor(coordinate)
        fraction = (coordinate - base).astype(work)
        offsets = (0, 1) if mode == "linear" else (-1, 0, 1, 2)
    if mode == "linear":
        weights = [1 - fraction, fraction]
    elif mode == "cubic":
        weights = _cubic_weights(fraction)
    else:
        weights = [None]
    indices, insides = [], []
    for offset in offsets:
        index = base + offset
        if padding_mode == "zeros":
            insides.append((index >= 0) & (index < size))
            index = jnp.clip(index, 0, size - 1)
        elif padding_mode == "border":
            insides.append(None)
            index = jnp.clip(index, 0, size - 1)
        else:
            insides.append(None)
            # A tap outside is reflected at the border too (then truncated, as onnx.reference).
            index = jnp.trunc(jnp.where((index < low) | (index > high), _reflect(index, low, high), index))
            index = jnp.clip(index, 0, size - 1)
        indices.append(jax.lax.stop_gradient(index).astype(jnp.int32))
    return indices, weights, insides


def _reflect(coordinate, low, high):
    """Reflects ``coordinate`` at ``low`` and ``high`` until it is inside (as PyTorch)."""
    span = high - low
    if span <= 0:
        return jnp.full_like(coordinate, low)
    below = coordinate < low
    distance = jnp.where(below, low - coordinate, coordinate - high)
    flips = jnp.floor(distance / span)
    rest = distance - flips * span
    even = jnp.mod(flips, 2) == 0
    from_low, from_high = low + rest, high - rest
    return jnp.where(below, jnp.where(even, from_low, from_high), jnp.where(even, from_high, from_low))


def _cubic_weights(t):
    """Keys' cubic convolution weights of the taps at -1, 0, 1, 2 for a fraction ``t``."""
    a = _CUBIC_ALPHA

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


@register("GridSample", 16, folds=False)
def _grid_sample_16(X, grid, *, align_corners=0, mode="bilinear", padding_mode="zeros"):
    # Version 16: 4-D only, and the modes' older names.
    if X.ndim != 4:
        raise OnnxValidationError(f"needs a 4-D `X` (N, C, H, W), got shape {tuple(X.shape)}.")
    names = {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}
    if mode not in names:
        raise OnnxValidationError(f"got `mode`={mode!r}; it must be one of {', '.join(names)}.")
    return grid_sample(X, grid, align_corners=align_corners, mode=names[mode], padding_mode=padding_mode)


__all__ = ["grid_sample"]
