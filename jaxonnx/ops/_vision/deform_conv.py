"""DeformConv: versions 19 and 22 (22 only adds bfloat16)."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.window import add_channel_bias, check_weights, window_attributes


@register("DeformConv", 19, 22, folds=False)
def deform_conv(
    X,
    W,
    offset,
    B=None,
    mask=None,
    *,
    dilations=None,
    group=1,
    kernel_shape=None,
    offset_group=1,
    pads=None,
    strides=None,
):
    """Implements ONNX DeformConv: a convolution whose kernel taps move by learned offsets.

    Output position ``o`` and kernel tap ``k`` read ``X`` at
    ``o * strides - pads_begin + k * dilations + offset[k, o]`` (one offset per spatial
    axis, shared by the channels of an offset group), N-linearly interpolated, with zeros
    outside ``X``; each read is scaled by ``mask[k, o]`` (default 1) and the reads are
    convolved with ``W`` (grouped as in Conv), plus ``B``.

    Args:
        X: ``(N, C, D1, ..., Dn)``.
        W: ``(oC, C / group, k1, ..., kn)``.
        offset: ``(N, offset_group * k1 * ... * kn * n, o1, ..., on)``: for each offset
            group and kernel tap (row-major), the ``n`` offsets (first spatial axis first).
        B: optional ``(oC,)``.
        mask: optional ``(N, offset_group * k1 * ... * kn, o1, ..., on)``.
        dilations, pads, strides: as in Conv.
        group: channel groups of the convolution.
        kernel_shape: if given, must equal ``W.shape[2:]``.
        offset_group: channel groups sharing an offset.

    Returns:
        ``(N, oC, o1, ..., on)`` with the dtype of ``X``.

    Example:
        >>> x = jnp.arange(4.0).reshape(1, 1, 4)
        >>> jaxonnx.ops.deform_conv(x, jnp.ones((1, 1, 1)), jnp.full((1, 1, 4), 0.5))
        Array([[[0.5, 1.5, 2.5, 1.5]]], dtype=float32)
    """
    _, strides, dilations, padding, _ = window_attributes(X.shape, kernel_shape, strides, dilations, pads, "NOTSET")
    out_channels = check_weights(X, W, B, group, kernel_shape)
    batch, channels, *sizes = X.shape
    kernel = W.shape[2:]
    spatial = len(sizes)
    taps = int(np.prod(kernel))
    outputs = [
        (n + low + high - (k - 1) * d - 1) // s + 1
        for n, (low, high), k, d, s in zip(sizes, padding, kernel, dilations, strides)
    ]
    if offset_group < 1 or channels % offset_group:
        raise OnnxValidationError(
            f"got `offset_group`={offset_group} for `X` of {channels} channels; it must divide them."
        )
    if tuple(offset.shape) != (batch, offset_group * taps * spatial, *outputs):
        raise OnnxValidationError(
            f"needs `offset` of shape {(batch, offset_group * taps * spatial, *outputs)} (offset groups x kernel taps x "
            f"spatial axes, then the output positions), got {tuple(offset.shape)}."
        )
    if mask is not None and tuple(mask.shape) != (batch, offset_group * taps, *outputs):
        raise OnnxValidationError(
            f"needs `mask` of shape {(batch, offset_group * taps, *outputs)}, got {tuple(mask.shape)}."
        )
    work = jnp.float32 if X.dtype.itemsize < 4 else X.dtype
    offset = offset.astype(work).reshape(batch, offset_group, taps, spatial, *outputs)
    # Per axis: the sampling coordinate (N, offset_group, taps, *outputs) of every read.
    tap_grid = np.stack(
        np.meshgrid(*(np.arange(k) * d for k, d in zip(kernel, dilations)), indexing="ij"), axis=-1
    ).reshape(taps, spatial)
    axis_taps = []
    for axis in range(spatial):
        base = np.arange(outputs[axis]) * strides[axis] - padding[axis][0]
        shape = [1] * spatial
        shape[axis] = -1
        fixed = tap_grid[:, axis].reshape((taps,) + (1,) * spatial) + base.reshape(shape)
        coordinate = offset[:, :, :, axis] + fixed.astype(work).reshape((1, 1) + fixed.shape)
        low = jnp.floor(coordinate)
        fraction = coordinate - low
        corners = []
        for step, weight in ((0, 1 - fraction), (1, fraction)):
            index = low + step
            inside = (index >= 0) & (index <= sizes[axis] - 1)
            index = jax.lax.stop_gradient(jnp.clip(index, 0, sizes[axis] - 1)).astype(jnp.int32)
            corners.append((index, jnp.where(inside, weight, 0)))
        axis_taps.append(corners)
    grouped = X.astype(work).reshape(batch, offset_group, channels // offset_group, *sizes)

    def gather(image, indices):  # image (C / offset_group, *sizes) -> (C / offset_group, taps, *outputs)
        return image[(slice(None), *indices)]

    reads = None
    for combination in itertools.product((0, 1), repeat=spatial):
        indices = [axis_taps[axis][c][0] for axis, c in enumerate(combination)]
        weight = None
        for axis, c in enumerate(combination):
            weight = axis_taps[axis][c][1] if weight is None else weight * axis_taps[axis][c][1]
        values = jax.vmap(jax.vmap(gather))(grouped, indices)  # (N, offset_group, C / og, taps, *outputs)
        term = values * weight[:, :, None]
        reads = term if reads is None else reads + term
    if mask is not None:
        reads = reads * mask.astype(work).reshape(batch, offset_group, 1, taps, *outputs)
    reads = reads.reshape(batch, group, channels // group, taps, *outputs)
    weights = W.astype(work).reshape(group, out_channels // group, channels // group, taps)
    letters = "".join(chr(ord("p") + i) for i in range(spatial))
    y = jnp.einsum(f"ngck{letters},gmck->ngm{letters}", reads, weights, precision=jax.lax.Precision.HIGHEST)
    y = y.reshape(batch, out_channels, *outputs)
    return add_channel_bias(y, None if B is None else B.astype(work)).astype(X.dtype)


__all__ = ["deform_conv"]
