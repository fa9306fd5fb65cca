"""Helpers shared by the attention ops of both domains: the softmax that gives zeros for a
row with nothing to attend, the rotation of rotary embeddings, the heads of 3-D inputs,
and the grouped scaled dot-product core that onnxruntime's com.microsoft attention ops
(GroupQueryAttention, MultiHeadAttention, Attention, QAttention) share.

The core computes ``softmax(scale * Q K^T + bias) V`` head by head, with grouped key/value
heads, optional soft cap and attention sink; where none of those is asked for and no
probabilities are returned it calls :func:`jax.nn.dot_product_attention`, which on a GPU
may lower to cuDNN's fused attention (half precision) and is XLA's plain formulation
elsewhere.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._errors import OnnxValidationError


def softmax(x):
    """Softmax over the last axis in the type of ``x``; a row of -inf gives zeros, not NaN."""
    shift = jnp.max(x, axis=-1, keepdims=True, initial=-np.inf)  # no keys at all: zeros
    # The shift only keeps exp from overflowing (its gradient is zero); a row of -inf has
    # no finite maximum, so it shifts by 0.
    shift = jax.lax.stop_gradient(jnp.where(jnp.isneginf(shift), jnp.zeros((), x.dtype), shift))
    exp = jnp.exp(x - shift)
    total = jnp.sum(exp, axis=-1, keepdims=True)
    return exp / jnp.where(total == 0, jnp.ones((), x.dtype), total)


def softmax_with_sink(x, sink):
    """Softmax over the last axis with one more logit, ``sink`` (broadcast to ``x[..., :1]``),
    in the denominator only: ``exp(x_i) / (exp(sink) + sum_j exp(x_j))``. A sink of 0 is
    onnxruntime's smooth softmax (``smooth_softmax``); per-head sinks are its ``head_sink``."""
    sink = jnp.broadcast_to(jnp.asarray(sink, x.dtype), x.shape[:-1] + (1,))
    shift = jax.lax.stop_gradient(jnp.maximum(jnp.max(x, axis=-1, keepdims=True, initial=-np.inf), sink))
    exp = jnp.exp(x - shift)
    return exp / (jnp.sum(exp, axis=-1, keepdims=True) + jnp.exp(sink - shift))


def split_heads(x, heads, name, attribute):
    """A 3-D ``(batch, sequence, heads * size)`` input as 4-D ``(batch, heads, sequence, size)``."""
    if heads is None or heads <= 0 or x.shape[2] % heads:
        raise OnnxValidationError(
            f"needs `{attribute}` > 0 dividing the hidden size of the 3-D `{name}` (shape {tuple(x.shape)}), "
            f"got {attribute}={heads}."
        )
    return x.reshape(x.shape[0], x.shape[1], heads, x.shape[2] // heads).transpose(0, 2, 1, 3)


def merge_heads(x):
    """A 4-D ``(batch, heads, sequence, size)`` value as 3-D ``(batch, sequence, heads * size)``."""
    batch, heads, length, size = x.shape
    return x.transpose(0, 2, 1, 3).reshape(batch, length, heads * size)


def rotate(x, cos, sin, *, interleaved):
    """Rotary embedding of the last axis of ``x``: its first ``2 * cos.shape[-1]`` features
    as pairs (the two halves, or neighbours when ``interleaved``), each pair ``(x1, x2)``
    becoming ``(cos * x1 - sin * x2, sin * x1 + cos * x2)``; the other features pass through.
    ``cos`` and ``sin`` broadcast against ``x[..., :half]``."""
    half = cos.shape[-1]
    dim = 2 * half
    turning, keep = x[..., :dim], x[..., dim:]
    if interleaved:
        x1, x2 = turning[..., 0::2], turning[..., 1::2]
    else:
        x1, x2 = turning[..., :half], turning[..., half:]
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    if interleaved:
        turned = jnp.stack([real, imag], axis=-1).reshape(turning.shape)
    else:
        turned = jnp.concatenate([real, imag], axis=-1)
    return jnp.concatenate([turned, keep], axis=-1)


def rms_normalize(x, weight, epsilon):
    """``x / sqrt(mean(x^2) + epsilon) * weight`` over the last axis, in float32 for narrow types."""
    work = jnp.promote_types(x.dtype, jnp.float32)
    xw = x.astype(work)
    normalized = xw * jax.lax.rsqrt(jnp.mean(xw * xw, axis=-1, keepdims=True) + jnp.asarray(epsilon, work))
    return (normalized * weight.astype(work).reshape((1,) * (x.ndim - 1) + (-1,))).astype(x.dtype)


def grouped_attention(q, k, v, *, scale, allowed=None, bias=None, softcap=0.0, sink=None, probabilities=False):
    """``softmax(scale * q k^T [soft-capped] + bias, masked) v`` by heads, with grouped keys.

    Args:
        q: ``(batch, heads, q_length, head_size)``.
        k: ``(batch, kv_heads, kv_length, head_size)``; ``heads`` is a multiple of ``kv_heads``
            and query head ``h`` reads key/value head ``h // (heads // kv_heads)``.
        v: ``(batch, kv_heads, kv_length, v_head_size)``.
        scale: the Python float the products are multiplied by.
        allowed: optional boolean, broadcastable to ``(batch, heads, q_length, kv_length)``:
            the keys each query may attend (the others get probability 0). Every row must
            allow at least one key, or carry a sink.
        bias: optional additive bias of the same broadcast shape, added after the soft cap.
        softcap: when > 0, the scaled scores become ``softcap * tanh(scores / softcap)``.
        sink: optional extra logit in the softmax denominator, broadcastable to
            ``(batch, heads, q_length, 1)`` (see :func:`softmax_with_sink`).
        probabilities: also return the scores (before softmax, after scale, cap and bias,
            masked to -inf) and the probabilities, both ``(batch, heads, q_length, kv_length)``.

    Returns:
        ``(batch, heads, q_length, v_head_size)``, or ``(output, scores, probabilities)``.
    """
    batch, heads, q_len, head_size = q.shape
    kv_heads, kv_len = k.shape[1], k.shape[2]
    groups = heads // kv_heads
    dtype = q.dtype
    if not probabilities and softcap <= 0 and sink is None and jnp.issubdtype(dtype, jnp.floating):
        # jax's own fused formulation: (batch, length, heads, size) layouts.
        mask = None if allowed is None else jnp.broadcast_to(allowed, (batch, heads, q_len, kv_len))
        if bias is not None:
            bias = jnp.broadcast_to(bias.astype(dtype), (batch, heads, q_len, kv_len))
        y = jax.nn.dot_product_attention(
            q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3),
            bias=bias, mask=mask, scale=float(scale), implementation=_implementation(q, k, v, bias, mask),
        )
        return y.transpose(0, 2, 1, 3)
    grouped_q = q.reshape(batch, kv_heads, groups, q_len, head_size)
    scores = jnp.einsum("bhgqd,bhkd->bhgqk", grouped_q, k, preferred_element_type=dtype)
    scores = scores.reshape(batch, heads, q_len, kv_len) * jnp.asarray(scale, dtype)
    if softcap > 0:
        cap = jnp.asarray(softcap, dtype)
        scores = jnp.tanh(scores / cap) * cap
    if bias is not None:
        scores = scores + bias.astype(dtype)
    if allowed is not None:
        scores = jnp.where(allowed, scores, jnp.asarray(-np.inf, dtype))
    weights = softmax(scores) if sink is None else softmax_with_sink(scores, sink)
    grouped_w = weights.reshape(batch, kv_heads, groups, q_len, kv_len)
    y = jnp.einsum("bhgqk,bhkd->bhgqd", grouped_w, v.astype(dtype), preferred_element_type=dtype)
    y = y.reshape(batch, heads, q_len, v.shape[3])
    return (y, scores, weights) if probabilities else y


def _implementation(q, k, v, bias, mask):
    """cuDNN's fused attention on a GPU where it takes the shapes (half precision, equal head
    sizes, a multiple of 8); XLA's formulation otherwise."""
    if jax.default_backend() != "gpu" or q.dtype not in (jnp.float16, jnp.bfloat16) or k.dtype != q.dtype:
        return None
    if q.shape[-1] != v.shape[-1] or q.shape[-1] % 8 or q.shape[-1] > 128:
        return None
    return "cudnn"
