"""CausalConvWithState: version 27."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError

_ACTIVATIONS = ("none", "silu", "swish")


@register("CausalConvWithState", 27, folds=False)
def causal_conv_with_state(input, weight, bias=None, past_state=None, *, activation: str = "none"):
    """Implements ONNX CausalConvWithState: a causal depthwise 1-D convolution that carries its state.

    ``past_state`` (zeros when omitted) goes before ``input`` along the length; each channel
    is convolved with its own kernel over the result (no padding), ``bias`` added, then the
    optional SiLU (``x * sigmoid(x)``, computed in float32 as the reference does). The last
    ``k - 1`` positions of the padded input are the next call's state.

    Args:
        input: ``(batch, channels, length)``.
        weight: ``(channels, 1, k)``.
        bias: optional ``(channels,)``.
        past_state: optional ``(batch, channels, k - 1)``.
        activation: "none", "silu" or "swish" (the same as "silu").

    Returns:
        ``(output, present_state)``: ``output`` of the shape of ``input``, ``present_state``
        ``(batch, channels, k - 1)``, both of the dtype of ``input``.

    Example:
        >>> y, state = jaxonnx.ops.causal_conv_with_state(jnp.array([[[1.0, 2.0, 3.0]]]), jnp.array([[[1.0, 10.0]]]))
        >>> y, state
        (Array([[[10., 21., 32.]]], dtype=float32), Array([[[3.]]], dtype=float32))
    """
    if activation not in _ACTIVATIONS:
        raise OnnxValidationError(f"got `activation`={activation!r}; it is 'none', 'silu' or 'swish'.")
    if input.ndim != 3:
        raise OnnxValidationError(f"needs a 3-D `input` (batch, channels, length), got shape {tuple(input.shape)}.")
    batch, channels, _ = input.shape
    if weight.ndim != 3 or weight.shape[:2] != (channels, 1) or weight.shape[2] < 1:
        raise OnnxValidationError(
            f"needs `weight` of shape (channels, 1, k) = ({channels}, 1, k) with k >= 1, got {tuple(weight.shape)}."
        )
    k = weight.shape[2]
    if bias is not None and tuple(bias.shape) != (channels,):
        raise OnnxValidationError(f"needs `bias` of shape ({channels},), got {tuple(bias.shape)}.")
    if past_state is None:
        past_state = jnp.zeros((batch, channels, k - 1), input.dtype)
    elif tuple(past_state.shape) != (batch, channels, k - 1):
        raise OnnxValidationError(
            f"needs `past_state` of shape (batch, channels, k - 1) = {(batch, channels, k - 1)}, got "
            f"{tuple(past_state.shape)}."
        )
    padded = jnp.concatenate([past_state, input], axis=2)
    # Half precision accumulates in float32 and rounds once, as a convolution does.
    work = jnp.float32 if input.dtype.itemsize < 4 else input.dtype
    length = input.shape[2]
    taps = padded.astype(work)
    kernel = weight.astype(work)
    out = sum(kernel[None, :, 0, j, None] * taps[:, :, j : j + length] for j in range(k))
    if bias is not None:
        out = out + bias.astype(work)[None, :, None]
    out = out.astype(input.dtype)
    if activation != "none":
        wide = out.astype(work)
        out = (wide * jax.nn.sigmoid(wide)).astype(input.dtype)
    return out, padded[:, :, padded.shape[2] - (k - 1) :]


__all__ = ["causal_conv_with_state"]
