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
from jaxonnx.ops._helpers.common import is_traced


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


def check_cache_rows(positions, rows: int, message: str, checks=None) -> None:
    """Checks that rotary ``positions`` index the caches' ``rows``: where known, raising
    ``message`` (a sentence with ``{low}`` and ``{high}``, the positions' range); where traced,
    through ``checks`` after the computation (:mod:`jaxonnx._core.checks`) where given.

    Example:
        >>> check_cache_rows(np.array([0, 9]), 8, "got positions from {low} to {high}.")
        Traceback (most recent call last):
        ...
        jaxonnx._errors.OnnxValidationError: got positions from 0 to 9.
    """
    if not is_traced(positions):
        values = np.asarray(positions)
        if values.size and (values.min() < 0 or values.max() >= rows):
            raise OnnxValidationError(message.format(low=values.min(), high=values.max()))
    elif checks is not None and positions.size:  # an empty one has nothing to check (nor a min)
        checks.fail_where(
            (positions < 0) | (positions >= rows), positions, message, low=positions.min(), high=positions.max()
        )


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
    # (XLA:CPU has no half-precision product with a float32 result, which jax's formulation
    # asks for: half precision on a CPU takes the explicit path below. The choice reads the
    # backend, not jaxonnx._platform's switch: a forced GPU branch could not compile on a CPU,
    # so this one path is checked only where a GPU is, by tests/test_gpu.py.)
    half = dtype in (jnp.float16, jnp.bfloat16)
    if (
        not probabilities
        and softcap <= 0
        and sink is None
        and v.shape[3] == head_size
        and (not half or jax.default_backend() == "gpu")
    ):
        # jax's own fused formulation: (batch, length, heads, size) layouts.
        mask = None if allowed is None else jnp.broadcast_to(allowed, (batch, heads, q_len, kv_len))
        if bias is not None:
            bias = jnp.broadcast_to(bias.astype(dtype), (batch, heads, q_len, kv_len))
        operands = (q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3))
        implementation = _implementation(q, k, v)
        try:
            y = jax.nn.dot_product_attention(
                *operands, bias=bias, mask=mask, scale=float(scale), implementation=implementation
            )
        except (ValueError, NotImplementedError, RuntimeError):
            if implementation is None:
                raise
            # cuDNN refused these shapes at trace time: XLA's formulation instead.
            y = jax.nn.dot_product_attention(*operands, bias=bias, mask=mask, scale=float(scale))
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


def _implementation(q, k, v):
    """cuDNN's fused attention on a GPU where it takes the shapes (half precision, equal head
    sizes, a multiple of 8); XLA's formulation otherwise."""
    if jax.default_backend() != "gpu" or q.dtype not in (jnp.float16, jnp.bfloat16) or k.dtype != q.dtype:
        return None
    if q.shape[-1] != v.shape[-1] or q.shape[-1] % 8 or q.shape[-1] > 128:
        return None
    return "cudnn"


def mask_index_allowed(mask, *, batch, length, total, past, name="mask_index"):
    """The keys each query may attend under onnxruntime's ``mask_index`` (Attention) or
    ``key_padding_mask`` (MultiHeadAttention), as a boolean broadcastable to ``(batch, 1,
    length, total)``; None for no mask.

    The kinds, by shape: ``(batch,)`` each entry's end (keys from it on are padding);
    ``(2 * batch,)`` the ends, then the starts (keys before the start are padding);
    ``(3 * batch + 2,)`` the ends first (the rest is the packed layout of onnxruntime's GPU
    kernels); ``(batch, total)`` or ``(batch, length, total)`` 1 for a key that may be
    attended, 0 for padding; ``(batch, 1, max_length, max_length)`` (Megatron GPT-2) whose
    rows ``past .. past + length - 1`` and first ``total`` columns are used. A 2-D or 3-D mask
    shorter than ``total`` leaves the keys past its end out.
    """
    if mask is None:
        return None
    keys = jnp.arange(total, dtype=jnp.int32).reshape(1, 1, 1, total)
    if mask.ndim == 1:
        count = mask.shape[0]
        if count not in (batch, 2 * batch, 3 * batch + 2):
            raise OnnxValidationError(
                f"needs a 1-D `{name}` of batch ({batch}), 2 * batch or 3 * batch + 2 elements, got {count}."
            )
        mask = jnp.asarray(mask).astype(jnp.int32)
        allowed = keys < mask[:batch].reshape(batch, 1, 1, 1)
        if count == 2 * batch:
            allowed = allowed & (keys >= mask[batch:].reshape(batch, 1, 1, 1))
        return allowed
    if mask.ndim == 4:
        if mask.shape[0] != batch or mask.shape[1] != 1 or mask.shape[2] < past + length or mask.shape[3] < total:
            raise OnnxValidationError(
                f"needs a 4-D `{name}` of shape (batch, 1, max_length, max_length) with max_length >= {past + length} "
                f"rows and {total} columns, got {tuple(mask.shape)}."
            )
        return mask[:, :, past : past + length, :total] != 0
    if mask.ndim == 2:
        mask = mask.reshape(mask.shape[0], 1, 1, mask.shape[1])
    elif mask.ndim == 3:
        mask = mask.reshape(mask.shape[0], 1, mask.shape[1], mask.shape[2])
    else:
        raise OnnxValidationError(f"needs `{name}` of rank 1 to 4, got shape {tuple(mask.shape)}.")
    if mask.shape[0] != batch or mask.shape[2] not in (1, length) or mask.shape[3] > total:
        raise OnnxValidationError(
            f"needs a 2-D `{name}` (batch, total) = {(batch, total)} or a 3-D one (batch, sequence, total) = "
            f"{(batch, length, total)}, got {tuple(mask.shape[:1] + mask.shape[2:])}."
        )
    allowed = mask != 0
    if mask.shape[3] < total:
        allowed = jnp.pad(allowed, [(0, 0), (0, 0), (0, 0), (0, total - mask.shape[3])])
    return allowed


def masked_attention(
    q,
    k,
    v,
    *,
    scale,
    allowed=None,
    filter_value=-10000.0,
    unidirectional=False,
    past=0,
    valid_keys=None,
    bias=None,
    probabilities=False,
):
    """onnxruntime's CPU attention for Attention, QAttention and MultiHeadAttention:
    ``softmax(scale * q k^T + mask + bias) v`` where the mask adds ``filter_value`` (not
    -inf) to each key that ``allowed`` leaves out, while the keys after the causal frontier
    (``unidirectional``: query ``s`` sees keys up to ``past + s``) get probability 0, as in
    onnxruntime (so a row whose keys are all padding still attends them). Keys from ``valid_keys`` on (a shared buffer's unused tail, traced or
    not) are never attended. Shapes as :func:`grouped_attention`."""
    batch, heads, length, _ = q.shape
    total = k.shape[2]
    dtype = q.dtype
    # Padding adds the filter value, but keys after the causal frontier are left out (onnxruntime
    # fills them with the lowest float): a row whose keys are all padding still attends.
    additive = None if allowed is None else jnp.where(allowed, jnp.zeros((), dtype), jnp.asarray(filter_value, dtype))
    if bias is not None:
        additive = bias.astype(dtype) if additive is None else additive + bias.astype(dtype)
    keys = jnp.arange(total, dtype=jnp.int32).reshape(1, 1, 1, total)
    within = None
    if valid_keys is not None:
        within = keys < valid_keys
    if unidirectional:
        rows = jnp.arange(length, dtype=jnp.int32).reshape(1, 1, length, 1)
        causal = keys <= rows + jnp.asarray(past, jnp.int32)
        within = causal if within is None else within & causal
    return grouped_attention(q, k, v, scale=scale, allowed=within, bias=additive, probabilities=probabilities)


def stacked_self_attention(
    q,
    k,
    v,
    *,
    num_heads,
    mask_index,
    past,
    attention_bias,
    past_sequence_length,
    unidirectional,
    scale,
    filter_value,
    share_buffer,
):
    """onnxruntime's Attention and QAttention after their input projection: ``q``, ``k``,
    ``v`` 3-D ``(batch, S, heads * size)``; ``past`` stacked ``(2, batch, heads, past, size)``
    (keys, then values) and put before the new ones, or, with ``share_buffer``, a buffer of
    the maximal length whose first ``past_sequence_length`` rows are the past (the new rows
    are written after them, and the buffer is the present). Returns ``(output, present)``;
    without ``past`` the present is this call's keys and values, stacked, as onnxruntime
    computes it (exported files declare it all the same), and ``output`` alone where keys
    and values have different widths (they stack into no present; onnxruntime's neither)."""
    qh = split_heads(q, num_heads, "query", "num_heads")
    kh = split_heads(k, num_heads, "key", "num_heads")
    vh = split_heads(v, num_heads, "value", "num_heads")
    batch, _, length, head_size = qh.shape
    present = None
    valid_keys = None
    past_length = 0
    if past is not None:
        want = (2, batch, num_heads, past.shape[3] if past.ndim == 5 else -1, head_size)
        if tuple(past.shape) != want or vh.shape[3] != head_size:
            raise OnnxValidationError(
                f"needs `past` of shape (2, batch, num_heads, past_length, head_size) = {want[:3] + ('past_length', head_size)} "
                f"and values of the keys' head size, got {tuple(past.shape)} (value heads of {vh.shape[3]})."
            )
        if share_buffer:
            if past_sequence_length is None or past_sequence_length.size != 1:
                raise OnnxValidationError(
                    "needs a one-element `past_sequence_length` with `past_present_share_buffer`=1."
                )
            past_length = jnp.asarray(past_sequence_length).reshape(()).astype(jnp.int32)
            if not is_traced(past_sequence_length):
                value = int(np.asarray(past_sequence_length).reshape(()))
                if not 0 <= value <= past.shape[3] - length:
                    raise OnnxValidationError(
                        f"got `past_sequence_length`={value}; with {length} new tokens it is in [0, {past.shape[3] - length}] "
                        f"for a buffer of {past.shape[3]}."
                    )
            zero = jnp.zeros((), jnp.int32)
            kh = jax.lax.dynamic_update_slice(past[0].astype(kh.dtype), kh, (zero, zero, past_length, zero))
            vh = jax.lax.dynamic_update_slice(past[1].astype(vh.dtype), vh, (zero, zero, past_length, zero))
            valid_keys = past_length + length
        else:
            past_length = past.shape[3]
            kh = jnp.concatenate([past[0].astype(kh.dtype), kh], axis=2)
            vh = jnp.concatenate([past[1].astype(vh.dtype), vh], axis=2)
        present = jnp.stack([kh, vh])
    elif kh.shape == vh.shape:
        # The graph runner drops it where the node does not declare it; XLA then never computes it.
        present = jnp.stack([kh, vh])
    total = kh.shape[2]
    allowed = mask_index_allowed(mask_index, batch=batch, length=length, total=total, past=past_length)
    bias = None if attention_bias is None else attention_bias_padded(attention_bias, batch, num_heads, length, total)
    y = masked_attention(
        qh,
        kh,
        vh,
        scale=scale if scale else 1.0 / np.sqrt(head_size),
        allowed=allowed,
        filter_value=filter_value,
        unidirectional=unidirectional,
        past=past_length,
        valid_keys=valid_keys,
        bias=bias,
    )
    return merge_heads(y) if present is None else (merge_heads(y), present)


def attention_bias_padded(bias, batch, heads, length, total):
    """``attention_bias`` ``(batch or 1, heads or 1, S, keys)``, its keys padded to ``total``
    (a shared buffer's unused tail, never attended)."""
    if (
        bias.ndim != 4
        or bias.shape[0] not in (1, batch)
        or bias.shape[1] not in (1, heads)
        or bias.shape[2] != length
        or bias.shape[3] > total
    ):
        raise OnnxValidationError(
            f"needs `attention_bias` of shape (batch or 1, num_heads or 1, sequence, total_sequence_length) = "
            f"{(batch, heads, length, total)}, got {tuple(bias.shape)}."
        )
    if bias.shape[3] < total:
        bias = jnp.pad(bias, [(0, 0), (0, 0), (0, 0), (0, total - bias.shape[3])])
    return bias
