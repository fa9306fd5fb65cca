"""InstanceNormalization: versions 1, 6 and 22 (22 only adds bfloat16)."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.normalization import compute_type, inverse_std, moments


@register("InstanceNormalization", 1, 6, 22, folds=False, weights=("scale", "B"))
def instance_normalization(input, scale, B, *, epsilon=1e-5, consumed_inputs=None):
    """Implements ONNX InstanceNormalization: each ``(n, c)`` slice normalized over its spatial dims.

    Args:
        input: of shape ``(N, C, D1, ..., Dn)``.
        scale: of shape ``(C,)``.
        B: of shape ``(C,)``.
        epsilon: added to the variance.

    Returns:
        ``scale * (input - mean) / sqrt(var + epsilon) + B``, with the dtype of ``input``.

    Example:
        >>> x = jnp.array([[[1.0, 3.0], [5.0, 7.0]]])
        >>> jaxonnx.ops.instance_normalization(x, jnp.ones(2), jnp.array([0.0, 10.0]), epsilon=0.0)
        Array([[[-1.,  1.],
                [ 9., 11.]]], dtype=float32)
    """
    if input.ndim < 3:
        raise OnnxValidationError(f"needs `input` of rank >= 3 (N, C, spatial...), got shape {tuple(input.shape)}.")
    channels = input.shape[1]
    for name, value in (("scale", scale), ("B", B)):
        if tuple(value.shape) != (channels,):
            raise OnnxValidationError(
                f"needs `{name}` of shape ({channels},), one per channel, got {tuple(value.shape)}."
            )
    work = compute_type(input.dtype)
    _, centered, variance = moments(input.astype(work), tuple(range(2, input.ndim)))
    per_channel = (1, channels) + (1,) * (input.ndim - 2)
    y = (centered * inverse_std(variance, epsilon)).astype(input.dtype)
    return y * scale.reshape(per_channel) + B.reshape(per_channel)


__all__ = ["instance_normalization"]
