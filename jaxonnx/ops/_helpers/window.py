"""The geometry of sliding-window ops (Conv, ConvTranspose, the pools): attributes, output
sizes and padding, weight checks and the per-channel bias."""

from __future__ import annotations

import math

import jax.numpy as jnp

from jaxonnx._errors import OnnxValidationError

_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def window_attributes(x_shape, kernel_shape, strides, dilations, pads, auto_pad, *, what="`X`"):
    """The per-axis ``kernel, strides, dilations`` and ``(low, high)`` explicit padding of a
    sliding-window op, validated; ``pads`` is None for the SAME_* modes (computed later)."""
    spatial = len(x_shape) - 2
    if spatial < 1:
        raise OnnxValidationError(f"needs {what} of rank >= 3 (N, C, spatial...), got shape {tuple(x_shape)}.")
    given = {"kernel_shape": kernel_shape, "strides": strides, "dilations": dilations}
    values = {}
    for name, value in given.items():
        value = (1,) * spatial if value is None else tuple(int(v) for v in value)
        if len(value) != spatial or min(value) < 1:
            raise OnnxValidationError(
                f"got `{name}`={list(value)} for {what} of shape {tuple(x_shape)}; it needs "
                f"{spatial} positive values, one per spatial axis."
            )
        values[name] = value
    if auto_pad not in _AUTO_PADS:
        raise OnnxValidationError(f"got `auto_pad`={auto_pad!r}; it must be one of {', '.join(_AUTO_PADS)}.")
    if auto_pad == "NOTSET":
        pads = (0,) * (2 * spatial) if pads is None else tuple(int(p) for p in pads)
        if len(pads) != 2 * spatial or min(pads) < 0:
            raise OnnxValidationError(
                f"got `pads`={list(pads)} for {what} of shape {tuple(x_shape)}; it needs "
                f"{2 * spatial} non-negative values (all begins, then all ends)."
            )
        padding = list(zip(pads[:spatial], pads[spatial:]))
    else:
        padding = None if auto_pad.startswith("SAME") else [(0, 0)] * spatial
    return values["kernel_shape"], values["strides"], values["dilations"], padding, auto_pad


def output_geometry(spatial_shape, kernel, strides, dilations, padding, auto_pad, ceil_mode=False, *, what="`X`"):
    """``(output sizes, padding, extra end padding)`` of a sliding window: SAME_* pads so
    that the output is ``ceil(in / stride)`` (the odd pixel at the end for SAME_UPPER, at
    the start for SAME_LOWER); ``ceil_mode`` adds end padding, never counted in averages,
    for a last window that starts inside the input or its begin padding (as PyTorch)."""
    sizes, extras, out_padding = [], [], []
    for axis, (n, k, s, d) in enumerate(zip(spatial_shape, kernel, strides, dilations)):
        span = (k - 1) * d + 1
        if padding is None:
            total = max(0, (math.ceil(n / s) - 1) * s + span - n)
            low = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
            low, high = low, total - low
        else:
            low, high = padding[axis]
        room = n + low + high - span
        size = (-(-room // s) if ceil_mode else room // s) + 1
        if ceil_mode and (size - 1) * s >= n + low:
            size -= 1
        if room < 0 or size < 1:
            raise OnnxValidationError(
                f"got a window of {span} (kernel {k}, dilation {d}) larger than spatial axis "
                f"{axis} of {what} with its padding ({n} + {low} + {high}); the output would be empty."
            )
        sizes.append(size)
        extras.append(max(0, (size - 1) * s + span - (n + low + high)))
        out_padding.append((low, high))
    return sizes, out_padding, extras


def check_weights(X, W, B, group, kernel_shape, *, transposed=False):
    """Checks ``W`` (and ``B``) against ``X`` and ``group``; returns the output channel count.

    Conv's ``W`` is ``(M, C / group, k...)``; ConvTranspose's is ``(C, M / group, k...)``.
    """
    if W.ndim != X.ndim:
        raise OnnxValidationError(
            f"needs `W` of the rank of `X` ({X.ndim}), got shapes {tuple(W.shape)} and {tuple(X.shape)}."
        )
    grouped = W.shape[0] if not transposed else X.shape[1]
    expected = W.shape[1] * group if not transposed else W.shape[0]
    if group < 1 or grouped % group or expected != X.shape[1]:
        raise OnnxValidationError(
            f"got `X` of shape {tuple(X.shape)}, `W` of shape {tuple(W.shape)} and `group`={group}; "
            f"`W` expects {expected} input channels, and {grouped} channels must split into `group` groups."
        )
    if kernel_shape is not None and tuple(kernel_shape) != tuple(W.shape[2:]):
        raise OnnxValidationError(
            f"got `kernel_shape`={list(kernel_shape)} but `W` has kernel shape {list(W.shape[2:])}."
        )
    out_channels = W.shape[0] if not transposed else W.shape[1] * group
    if B is not None and tuple(B.shape) != (out_channels,):
        raise OnnxValidationError(
            f"needs `B` of shape ({out_channels},), one per output channel, got {tuple(B.shape)}."
        )
    return out_channels


def add_channel_bias(y, B, *, channels_last=False):
    """``y + B`` with ``B`` along axis 1, or the last axis with ``channels_last`` (reshaped
    explicitly: no implicit rank promotion)."""
    if B is None:
        return y
    if channels_last:
        return y + jnp.reshape(B, (1,) * (y.ndim - 1) + (-1,))
    return y + jnp.reshape(B, (1, -1) + (1,) * (y.ndim - 2))


def around_spatial(spatial, fill, channels_last: bool) -> tuple:
    """Per-axis values of a window over the spatial axes, ``fill`` for the batch and
    channel axes: ``(fill, fill, *spatial)``, or ``(fill, *spatial, fill)`` channels-last."""
    return (fill, *spatial, fill) if channels_last else (fill, fill, *spatial)


def onnx_shape(shape, channels_last: bool) -> tuple:
    """ONNX's ``(N, C, D1, ..., Dn)`` for an array of ``shape``: ``(N, D1, ..., Dn, C)`` with
    ``channels_last``, else already ONNX's."""
    return (shape[0], shape[-1], *shape[1:-1]) if channels_last else tuple(shape)
