"""GroupNorm and SkipGroupNorm (com.microsoft, version 1): the group normalization of Stable
Diffusion's UNet and VAE, channels-last, with an optional SiLU (and, for SkipGroupNorm, the
residual sum before it).

onnxruntime has only CUDA kernels for these two ops, so they are implemented from the text
of ``docs/ContribOperators.md`` and tested against numpy references.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import onnx.defs

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.normalization import contrib_normalize, contrib_work_type
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema

_TYPES = ["tensor(float16)", "tensor(float)"]
_INT = onnx.defs.OpSchema.AttrType.INT
_ATTRIBUTES = [
    attribute("epsilon", 1e-5, "Added to the variance."),
    attribute_without_default("groups", _INT, "The number of channel groups; it divides the channels.", required=True),
    attribute_without_default("activation", _INT, "0: none, 1: SiLU after the normalization.", required=True),
    attribute("channels_last", 1, "1: X is (N, H, W, C); 0: (N, C, H, W)."),
]
_SCHEMA = contrib_schema(
    "GroupNorm",
    "Y = activation(gamma * (X - mean) / sqrt(var + epsilon) + beta), the statistics per sample and channel group.",
    inputs=[("X", "T"), ("gamma", "M"), ("beta", "M")],
    outputs=[("Y", "T")],
    type_constraints=[("T", _TYPES), ("M", _TYPES)],
    attributes=_ATTRIBUTES,
)
_SKIP_SCHEMA = contrib_schema(
    "SkipGroupNorm",
    "S = X + skip + bias; Y = GroupNorm(S).",
    inputs=[("X", "T"), ("gamma", "M"), ("beta", "M"), ("skip", "T"), ("bias", "T", "optional")],
    outputs=[("Y", "T"), ("S", "T", "optional")],
    type_constraints=[("T", _TYPES), ("M", _TYPES)],
    attributes=_ATTRIBUTES,
)


@register("GroupNorm", 1, domain="com.microsoft", schema=_SCHEMA, folds=False)
def group_norm(X, gamma, beta, *, epsilon=1e-5, groups=None, activation=None, channels_last=1):
    """Implements com.microsoft GroupNorm: group normalization, channels-last, with an optional SiLU.

    The channels split into ``groups`` groups of ``C / groups``; each sample's group is
    normalized over its channels and all spatial positions, ``Y = gamma * (X - mean) /
    sqrt(var + epsilon) + beta`` per channel, then ``Y * sigmoid(Y)`` where ``activation``
    is 1. Computed in float32. onnxruntime runs this op on CUDA only; this follows the text of
    its ``docs/ContribOperators.md`` (tests check it against numpy).

    Args:
        X: ``(N, H, W, C)`` (``channels_last`` 1) or ``(N, C, H, W)``; any number of spatial dims.
        gamma, beta: ``(C,)``, float16 or float32 (either, whatever the type of ``X``).
        epsilon: added to the variance, >= 0.
        groups: the number of groups, a divisor of ``C``.
        activation: 0 (none) or 1 (SiLU).
        channels_last: 1 or 0, the layout of ``X`` and ``Y``.

    Returns:
        ``Y``, of the shape and type of ``X``.

    Example:
        >>> x = jnp.array([[[[1.0, 3.0, 5.0, 9.0]]]])  # (N, H, W, C) = (1, 1, 1, 4)
        >>> jaxonnx.ops.group_norm(x, jnp.ones(4), jnp.zeros(4), groups=2, activation=0, epsilon=0.0)
        Array([[[[-1.,  1., -1.,  1.]]]], dtype=float32)
    """
    y, _ = _group_norm(X, gamma, beta, None, None, epsilon, groups, activation, channels_last)
    return y


@register("SkipGroupNorm", 1, domain="com.microsoft", schema=_SKIP_SCHEMA, folds=False)
def skip_group_norm(X, gamma, beta, skip, bias=None, *, epsilon=1e-5, groups=None, activation=None, channels_last=1):
    """Implements com.microsoft SkipGroupNorm: GroupNorm of ``X + skip + bias``.

    ``S = X + skip + bias`` (in float32, returned in the type of ``X``), then GroupNorm of
    ``S``. onnxruntime runs this op on CUDA only; this follows the text of its
    ``docs/ContribOperators.md`` (tests check it against numpy).

    Args:
        X: ``(N, H, W, C)`` (``channels_last`` 1) or ``(N, C, H, W)``.
        gamma, beta: ``(C,)``.
        skip: of the shape of ``X``, or ``(N, 1, 1, C)`` (``(N, C, 1, 1)`` channels-first), or ``(N, C)``.
        bias: optional ``(C,)``.
        epsilon, groups, activation, channels_last: as GroupNorm's.

    Returns:
        ``(Y, S)``: the normalized output and the sum, both of the shape and type of ``X``.

    Example:
        >>> x = jnp.array([[[[1.0, 2.0]]]])
        >>> y, s = jaxonnx.ops.skip_group_norm(x, jnp.ones(2), jnp.zeros(2), jnp.array([[0.0, 1.0]]),
        ...                                    groups=1, activation=0, epsilon=0.0)
        >>> y, s
        (Array([[[[-1.,  1.]]]], dtype=float32), Array([[[[1., 3.]]]], dtype=float32))
    """
    return _group_norm(X, gamma, beta, skip, bias, epsilon, groups, activation, channels_last)


def _group_norm(X, gamma, beta, skip, bias, epsilon, groups, activation, channels_last):
    if activation not in (0, 1):
        raise OnnxValidationError(f"got `activation`={activation}; it is 0 (none) or 1 (SiLU).")
    if channels_last not in (0, 1):
        raise OnnxValidationError(f"got `channels_last`={channels_last}; it is 1 (NHWC) or 0 (NCHW).")
    if X.ndim < 3:
        raise OnnxValidationError(f"needs `X` of rank >= 3 (N, spatial..., C), got shape {tuple(X.shape)}.")
    channel_axis = X.ndim - 1 if channels_last else 1
    channels = X.shape[channel_axis]
    if groups is None or groups <= 0 or channels % groups:
        raise OnnxValidationError(
            f"got `groups`={groups}; it must divide the {channels} channels of `X` {tuple(X.shape)}."
        )
    for value, name in ((gamma, "gamma"), (beta, "beta"), (bias, "bias")):
        if value is not None and tuple(value.shape) != (channels,):
            raise OnnxValidationError(f"needs `{name}` of shape ({channels},), got {tuple(value.shape)}.")
    work = contrib_work_type(X.dtype)
    total = X.astype(work)
    if skip is not None:
        total = total + _skip(skip, X.shape, channel_axis).astype(work)
        if bias is not None:
            total = total + _per_channel(bias, X.ndim, channel_axis).astype(work)
    # (N, ..., groups, C / groups, ...): each sample's group normalized over its channels and positions.
    grouped_shape = X.shape[:channel_axis] + (groups, channels // groups) + X.shape[channel_axis + 1 :]
    grouped = total.reshape(grouped_shape)
    axes = tuple(d for d in range(1, grouped.ndim) if d != channel_axis)
    normalized, _, _ = contrib_normalize(grouped, axes, epsilon, simplified=False)
    y = normalized.reshape(X.shape) * _per_channel(gamma, X.ndim, channel_axis).astype(work)
    y = y + _per_channel(beta, X.ndim, channel_axis).astype(work)
    if activation == 1:
        y = y * jax.nn.sigmoid(y)
    return y.astype(X.dtype), total.astype(X.dtype)


def _per_channel(value, rank: int, channel_axis: int):
    return value.reshape(tuple(-1 if d == channel_axis else 1 for d in range(rank)))


def _skip(skip, shape, channel_axis: int):
    """``skip`` as an array that broadcasts to ``shape``: of that shape, with 1s for the
    spatial dims, or ``(N, C)``."""
    batch, channels = shape[0], shape[channel_axis]
    if skip.ndim == 2 and tuple(skip.shape) == (batch, channels):
        return jnp.asarray(skip).reshape(tuple(shape[d] if d in (0, channel_axis) else 1 for d in range(len(shape))))
    ones = tuple(shape[d] if d in (0, channel_axis) else 1 for d in range(len(shape)))
    if tuple(skip.shape) not in (tuple(shape), ones):
        raise OnnxValidationError(
            f"needs `skip` of the shape of `X` {tuple(shape)}, or {ones}, or {(batch, channels)}; got {tuple(skip.shape)}."
        )
    return skip


__all__ = ["group_norm", "skip_group_norm"]
