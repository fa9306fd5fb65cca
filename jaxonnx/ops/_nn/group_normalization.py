"""GroupNormalization: versions 18 (scale and bias per group) and 21 (per channel)."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.normalization import compute_type, inverse_std, moments


@register("GroupNormalization", 21, folds=False, weights=("scale", "bias"))
def group_normalization(X, scale, bias, *, epsilon=1e-5, num_groups=None, stash_type=1):
    """Implements ONNX GroupNormalization (version 21): ``X`` normalized per group of channels.

    The channels split into ``num_groups`` consecutive groups; each ``(n, group)`` is
    normalized over its channels and spatial dims, then scaled and shifted per channel.
    (Version 18 takes ``scale`` and ``bias`` per group instead.)

    Args:
        X: of shape ``(N, C, D1, ..., Dn)``.
        scale: of shape ``(C,)``.
        bias: of shape ``(C,)``.
        epsilon: added to the variance.
        num_groups: divides ``C``.
        stash_type: 1 computes half-precision ``X`` in float32.

    Returns:
        The normalized ``X``, with its dtype.

    Example:
        >>> x = jnp.array([[[1.0], [3.0], [5.0], [7.0]]])
        >>> jaxonnx.ops.group_normalization(x, jnp.ones(4), jnp.arange(4.0), num_groups=2, epsilon=0.0).ravel()
        Array([-1.,  2.,  1.,  4.], dtype=float32)
    """
    return _group_normalization(X, scale, bias, epsilon, num_groups, stash_type, per_group=False)


@register("GroupNormalization", 18, folds=False, weights=("scale", "bias"))
def _group_normalization_18(X, scale, bias, *, epsilon=1e-5, num_groups=None):
    return _group_normalization(X, scale, bias, epsilon, num_groups, 1, per_group=True)


def _group_normalization(X, scale, bias, epsilon, num_groups, stash_type, *, per_group):
    if X.ndim < 2:
        raise OnnxValidationError(f"needs `X` of rank >= 2 (N, C, ...), got shape {tuple(X.shape)}.")
    channels = X.shape[1]
    if num_groups < 1 or channels % num_groups:
        raise OnnxValidationError(
            f"got `num_groups`={num_groups}, which does not divide the {channels} channels of `X`."
        )
    size = num_groups if per_group else channels
    for name, value in (("scale", scale), ("bias", bias)):
        if tuple(value.shape) != (size,):
            each = "group" if per_group else "channel"
            raise OnnxValidationError(f"needs `{name}` of shape ({size},), one per {each}, got {tuple(value.shape)}.")
    grouped = X.reshape((X.shape[0], num_groups, -1)).astype(compute_type(X.dtype, stash_type))
    _, centered, variance = moments(grouped, (2,))
    y = (centered * inverse_std(variance, epsilon)).astype(X.dtype)
    if per_group:
        y = y * scale.reshape(1, -1, 1) + bias.reshape(1, -1, 1)
        return y.reshape(X.shape)
    per_channel = (1, channels) + (1,) * (X.ndim - 2)
    return y.reshape(X.shape) * scale.reshape(per_channel) + bias.reshape(per_channel)


__all__ = ["group_normalization"]
