"""Attention: versions 23, 24 (``nonpad_kv_seqlen``) and 25 (``left_window_size``, ``right_window_size``).

Scaled dot-product attention as the text's diagram draws it: ``Q`` and ``K`` each scaled by
``sqrt(scale)`` (in the input type), ``Q @ K^T``, the soft cap, the additive bias (the mask,
the causal frontier, the sliding window and the padding of ``nonpad_kv_seqlen``), softmax
(in ``softmax_precision``), ``@ V``. A query row that no key may attend gives zeros, not
NaN, as the 1.23 errata of every version say.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.dtypes import jax_dtype, numpy_dtype
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.attention import softmax as _softmax
from jaxonnx.ops._helpers.attention import split_heads as _split_heads
from jaxonnx.ops._helpers.common import is_traced

_SOFTMAX_PRECISIONS = {1: "float", 10: "float16", 11: "double", 16: "bfloat16"}


@register("Attention", 25, folds=False, concrete=("nonpad_kv_seqlen",))
def attention(
    Q,
    K,
    V,
    attn_mask=None,
    past_key=None,
    past_value=None,
    nonpad_kv_seqlen=None,
    *,
    is_causal: int = 0,
    kv_num_heads: int | None = None,
    q_num_heads: int | None = None,
    qk_matmul_output_mode: int = 0,
    scale: float | None = None,
    softcap: float = 0.0,
    softmax_precision: int | None = None,
    left_window_size: int = -1,
    right_window_size: int = -1,
    checks=None,
):
    """Implements ONNX Attention (version 25): ``softmax(Q K^T * scale + bias) V``, by heads.

    Inputs are 4-D ``(batch, heads, sequence, head_size)``, or 3-D ``(batch, sequence,
    heads * head_size)`` with ``q_num_heads`` and ``kv_num_heads``. Grouped-query attention
    (fewer key/value heads than query heads) gives query head ``h`` the key/value head
    ``h // (q_num_heads // kv_num_heads)``. ``attn_mask`` broadcasts to ``(batch, q_num_heads,
    q_sequence_length, total_sequence_length)``; a boolean mask says which keys may be
    attended, another mask is added to the scores (cast to the type of ``Q``); a mask shorter
    than the total sequence is padded with masked positions. A query row with no key it may
    attend gives a zero row in ``Y`` (and in ``qk_matmul_output`` mode 3).

    Args:
        Q: the queries, float.
        K: the keys, of the type of ``Q``; ``K`` and ``V`` share their sequence length.
        V: the values.
        attn_mask: optional, boolean or additive, of rank 1 to 4.
        past_key: optional 4-D cache ``(batch, kv_num_heads, past_sequence_length,
            head_size)``, put before ``K``; given with ``past_value`` only.
        past_value: optional 4-D cache put before ``V``.
        nonpad_kv_seqlen: optional int64 ``(batch,)``: how many leading keys of each batch
            are valid (the rest are masked); not with ``past_key``. A known length outside
            ``[0, total keys]`` raises; under ``jax.jit`` a negative one attends no key (its
            output is zeros) and one past the keys attends them all.
        is_causal: 1 lets query ``i`` attend key ``j`` only when ``j <= i + offset``, where
            ``offset`` is the past sequence length, or ``nonpad_kv_seqlen - q_sequence_length``
            per batch, or 0.
        kv_num_heads: the key/value heads of 3-D inputs.
        q_num_heads: the query heads of 3-D inputs.
        qk_matmul_output_mode: what the fourth output holds: 0 ``Q K^T * scale``, 1 after the
            soft cap, 2 after the bias, 3 the attention probabilities.
        scale: the factor of ``Q K^T``; ``1 / sqrt(head_size)`` when not given.
        softcap: when not 0, the scores become ``softcap * tanh(scores / softcap)`` before the bias.
        softmax_precision: the ONNX element type softmax computes in (1, 10, 11 or 16); the
            type of ``Q`` when not given.
        left_window_size: when >= 0, the query at absolute position ``p = offset + i`` attends
            no key ``j < p - left_window_size``.
        right_window_size: when >= 0, it attends no key ``j > p + right_window_size``.
        checks: where the checks of a traced ``nonpad_kv_seqlen`` go, to be made after the
            computation (an eager call's compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        ``(Y, present_key, present_value, qk_matmul_output)``: ``Y`` of the rank of ``Q``
        (``(batch, q_num_heads, q_sequence_length, v_head_size)`` or its 3-D form), the 4-D
        keys and values with the past in front, and the 4-D scores as the mode says.

    Example:
        >>> q = jnp.array([[[[1.0, 0.0]]]])
        >>> k = jnp.array([[[[1.0, 0.0], [0.0, 1.0]]]])
        >>> v = jnp.array([[[[1.0], [3.0]]]])
        >>> y, *_ = jaxonnx.ops.attention(q, k, v, scale=float(np.log(3.0)))
        >>> y
        Array([[[[1.5]]]], dtype=float32)
    """
    if Q.ndim == 4 and (q_num_heads is not None or kv_num_heads is not None):
        raise OnnxValidationError(
            f"got `q_num_heads`={q_num_heads} and `kv_num_heads`={kv_num_heads} with 4-D inputs "
            f"(`Q` of shape {tuple(Q.shape)}); they are for 3-D inputs only, the 4-D shapes give the heads."
        )
    return _attention(
        Q,
        K,
        V,
        attn_mask,
        past_key,
        past_value,
        nonpad_kv_seqlen,
        is_causal=is_causal,
        kv_num_heads=kv_num_heads,
        q_num_heads=q_num_heads,
        mode=qk_matmul_output_mode,
        scale=scale,
        softcap=softcap,
        softmax_precision=softmax_precision,
        left=left_window_size,
        right=right_window_size,
        checks=checks,
    )


@register("Attention", 24, folds=False, concrete=("nonpad_kv_seqlen",))
def _attention_24(
    Q,
    K,
    V,
    attn_mask=None,
    past_key=None,
    past_value=None,
    nonpad_kv_seqlen=None,
    *,
    is_causal=0,
    kv_num_heads=None,
    q_num_heads=None,
    qk_matmul_output_mode=0,
    scale=None,
    softcap=0.0,
    softmax_precision=None,
    checks=None,
):
    return _attention(
        Q,
        K,
        V,
        attn_mask,
        past_key,
        past_value,
        nonpad_kv_seqlen,
        is_causal=is_causal,
        kv_num_heads=kv_num_heads,
        q_num_heads=q_num_heads,
        mode=qk_matmul_output_mode,
        scale=scale,
        softcap=softcap,
        softmax_precision=softmax_precision,
        left=-1,
        right=-1,
        checks=checks,
    )


@register("Attention", 23, folds=False)
def _attention_23(Q, K, V, attn_mask=None, past_key=None, past_value=None, **attributes):
    # Version 24 only added `nonpad_kv_seqlen` (and corrected nothing 23 defines).
    return _attention_24(Q, K, V, attn_mask, past_key, past_value, None, **attributes)


def _attention(
    Q,
    K,
    V,
    attn_mask,
    past_key,
    past_value,
    nonpad,
    *,
    is_causal,
    kv_num_heads,
    q_num_heads,
    mode,
    scale,
    softcap,
    softmax_precision,
    left,
    right,
    checks=None,
):
    if not (Q.ndim == K.ndim == V.ndim and Q.ndim in (3, 4)):
        raise OnnxValidationError(
            f"needs `Q`, `K` and `V` all 3-D or all 4-D, got shapes {tuple(Q.shape)}, {tuple(K.shape)} "
            f"and {tuple(V.shape)}."
        )
    if mode not in (0, 1, 2, 3):
        raise OnnxValidationError(f"got `qk_matmul_output_mode`={mode}; it is 0, 1, 2 or 3.")
    for name, size in (("left_window_size", left), ("right_window_size", right)):
        if size < -1:
            raise OnnxValidationError(f"got `{name}`={size}; it is -1 (unbounded) or >= 0.")
    if scale is not None and scale < 0:
        raise OnnxValidationError(f"got `scale`={scale}; `Q` and `K` are each scaled by sqrt(scale), so it is >= 0.")
    if softmax_precision is not None and softmax_precision not in _SOFTMAX_PRECISIONS:
        raise OnnxValidationError(
            f"got `softmax_precision`={softmax_precision}; it is 1 (float), 10 (float16), 11 (double) or 16 (bfloat16)."
        )
    dtype = Q.dtype
    if Q.ndim == 3:
        q, k, v = (
            _split_heads(x, heads, name, attr)
            for x, heads, name, attr in (
                (Q, q_num_heads, "Q", "q_num_heads"),
                (K, kv_num_heads, "K", "kv_num_heads"),
                (V, kv_num_heads, "V", "kv_num_heads"),
            )
        )
    else:
        q, k, v = Q, K, V
        for name, given, heads in (
            ("q_num_heads", q_num_heads, Q.shape[1]),
            ("kv_num_heads", kv_num_heads, K.shape[1]),
        ):
            if given is not None and given != heads:
                raise OnnxValidationError(
                    f"got `{name}`={given} for 4-D inputs with {heads} heads (`Q` {tuple(Q.shape)}, `K` {tuple(K.shape)})."
                )
    batch, heads, q_len, head_size = q.shape
    if not (
        k.shape[0] == v.shape[0] == batch
        and k.shape[1] == v.shape[1]
        and k.shape[2] == v.shape[2]
        and k.shape[3] == head_size
    ):
        raise OnnxValidationError(
            f"needs `K` and `V` of `Q`'s batch, with one number of heads and one sequence length, and `K` "
            f"of `Q`'s head size; got (4-D) `Q` {tuple(q.shape)}, `K` {tuple(k.shape)}, `V` {tuple(v.shape)}."
        )
    kv_heads = k.shape[1]
    if kv_heads == 0 or heads % kv_heads:
        raise OnnxValidationError(
            f"needs the query heads ({heads}) to be a multiple of the key/value heads ({kv_heads})."
        )
    if (past_key is None) != (past_value is None):
        raise OnnxValidationError("needs `past_key` and `past_value` together, got only one of them.")
    past_len = 0
    if past_key is not None:
        if nonpad is not None:
            raise OnnxValidationError(
                "got `nonpad_kv_seqlen` with `past_key`; it marks the padding of an external cache, "
                "so the two are not used together."
            )
        past = past_key.shape[2] if past_key.ndim == 4 else -1
        if tuple(past_key.shape) != (batch, kv_heads, past, head_size) or tuple(past_value.shape) != (
            batch,
            kv_heads,
            past,
            v.shape[3],
        ):
            raise OnnxValidationError(
                f"needs `past_key` (batch, kv_num_heads, past_sequence_length, head_size) = {(batch, kv_heads, 'past', head_size)} "
                f"and `past_value` (batch, kv_num_heads, past_sequence_length, v_head_size) = "
                f"{(batch, kv_heads, 'past', v.shape[3])}, got {tuple(past_key.shape)} and {tuple(past_value.shape)}."
            )
        past_len = past_key.shape[2]
        k = jnp.concatenate([past_key, k], axis=2)
        v = jnp.concatenate([past_value, v], axis=2)
    present_key, present_value = k, v
    total = k.shape[2]
    if nonpad is not None:
        nonpad = _checked_nonpad(nonpad, batch, total, attn_mask, checks)

    # Q and K each scaled by sqrt(scale) in the input type, as the text's diagram and its
    # function body do (ScaleFactorF = Cast(Sqrt(scale))): the product is the scaled score
    # without overflowing a narrow type.
    root = np.sqrt(np.float64(1.0 / np.sqrt(head_size) if scale is None else scale))
    root = jnp.asarray(root, dtype)
    groups = heads // kv_heads
    grouped_q = (q * root).reshape(batch, kv_heads, groups, q_len, head_size)
    scores = jnp.einsum("bhgqd,bhkd->bhgqk", grouped_q, k * root, preferred_element_type=dtype)
    scores = scores.reshape(batch, heads, q_len, total)
    capped = scores
    if softcap != 0:
        cap = jnp.asarray(softcap, dtype)
        capped = jnp.tanh(scores / cap) * cap

    bias = _bias(
        attn_mask,
        dtype,
        batch=batch,
        heads=heads,
        q_len=q_len,
        total=total,
        past_len=past_len,
        nonpad=nonpad,
        is_causal=is_causal,
        left=left,
        right=right,
    )
    biased = capped if bias is None else capped + bias

    work = dtype if softmax_precision is None else jax_dtype(numpy_dtype(softmax_precision))
    probabilities = _softmax(biased.astype(work))
    if bias is not None:
        # A row whose bias is -inf everywhere attends no key: zeros, decided on the bias (its
        # scores may be NaN, e.g. +inf - inf), as the text's guard says.
        all_masked = jnp.isneginf(jnp.max(bias, axis=-1, keepdims=True, initial=-np.inf))
        probabilities = jnp.where(all_masked, jnp.zeros((), work), probabilities)
    probabilities = probabilities.astype(dtype)

    grouped_p = probabilities.reshape(batch, kv_heads, groups, q_len, total)
    # `V` may be of another float type than `Q` (T2); `Y` is of `Q`'s (T1).
    y = jnp.einsum("bhgqk,bhkd->bhgqd", grouped_p, v.astype(dtype), preferred_element_type=dtype)
    y = y.reshape(batch, heads, q_len, v.shape[3])
    if Q.ndim == 3:
        y = y.transpose(0, 2, 1, 3).reshape(batch, q_len, heads * v.shape[3])
    qk_output = (scores, capped, jnp.broadcast_to(biased, scores.shape), probabilities)[mode]
    return y, present_key, present_value, qk_output.astype(dtype)


def _checked_nonpad(nonpad, batch, total, mask, checks=None):
    """``nonpad_kv_seqlen``, checked where known, else by ``checks`` after the computation where given."""
    if nonpad.ndim != 1 or nonpad.shape[0] != batch:
        raise OnnxValidationError(f"needs `nonpad_kv_seqlen` of shape ({batch},), got {tuple(nonpad.shape)}.")
    outside = f"got `nonpad_kv_seqlen`={{values}}; each is in [0, {total}], the key sequence length."
    past_mask = (
        None
        if mask is None or not mask.ndim
        else (
            f"got `attn_mask` of shape {tuple(mask.shape)} with `nonpad_kv_seqlen`={{values}}; its last "
            "dim must be at least the largest of them (the valid keys), as the text requires."
        )
    )
    if not is_traced(nonpad):
        values = np.asarray(nonpad)
        if values.size and (values.min() < 0 or values.max() > total):
            raise OnnxValidationError(outside.format(values=values.tolist()))
        if past_mask is not None and values.size and values.max() > mask.shape[-1]:
            raise OnnxValidationError(past_mask.format(values=values.tolist()))
    elif checks is not None:
        checks.fail_where((nonpad < 0) | (nonpad > total), nonpad, outside, values=nonpad)
        if past_mask is not None:
            checks.fail_where(nonpad > mask.shape[-1], nonpad, past_mask, values=nonpad)
    return jnp.asarray(nonpad)


def _bias(mask, dtype, *, batch, heads, q_len, total, past_len, nonpad, is_causal, left, right):
    """The additive bias (0 or -inf for the structural masks), rank 4 and broadcastable to the
    scores; None when there is none."""
    neg_inf = jnp.asarray(-np.inf, dtype)
    bias = None
    if mask is not None:
        if not 1 <= mask.ndim <= 4:
            raise OnnxValidationError(f"needs `attn_mask` of rank 1 to 4, got shape {tuple(mask.shape)}.")
        short = total - mask.shape[-1]
        target = (batch, heads, q_len, total)
        shape = tuple(mask.shape[:-1]) + (total,)
        if short < 0 or any(m not in (1, t) for m, t in zip(shape[::-1], target[::-1])):
            raise OnnxValidationError(
                f"needs `attn_mask` broadcastable to (batch, q_num_heads, q_sequence_length, "
                f"total_sequence_length) = {target}, its last dim at most {total}; got shape {tuple(mask.shape)}."
            )
        mask = mask.reshape((1,) * (4 - mask.ndim) + tuple(mask.shape))
        if mask.dtype == jnp.bool_:
            bias = jnp.where(mask, jnp.zeros((), dtype), neg_inf)
        else:
            bias = mask.astype(dtype)
        if short:
            # A mask shorter than the keys leaves the keys past its end masked (the text's
            # external-cache case, where they are padding).
            bias = jnp.pad(bias, [(0, 0)] * 3 + [(0, short)], constant_values=neg_inf)
    structural = _allowed(q_len, total, past_len, nonpad, is_causal, left, right)
    if structural is not None:
        structural = jnp.where(structural, jnp.zeros((), dtype), neg_inf)
        bias = structural if bias is None else bias + structural
    return bias


def _allowed(q_len, total, past_len, nonpad, is_causal, left, right):
    """Which keys each query may attend, by position (None: all): the causal frontier and the
    window around ``p = offset + i``, and the valid keys of ``nonpad_kv_seqlen``."""
    # All rank 4, (batch, heads, query, key), as the scores.
    rows = jnp.arange(q_len).reshape(1, 1, q_len, 1)
    keys = jnp.arange(total).reshape(1, 1, 1, total)
    if nonpad is not None:
        # The external cache: offset = nonpad_kv_seqlen - q_sequence_length, per batch.
        position = rows + (nonpad.astype(rows.dtype) - q_len).reshape(-1, 1, 1, 1)
    else:
        position = rows + past_len
    allowed = None

    def both(a, b):
        return b if a is None else a & b

    if is_causal:
        allowed = both(allowed, keys <= position)
    if left >= 0:
        allowed = both(allowed, position - keys <= left)
    if right >= 0:
        allowed = both(allowed, keys - position <= right)
    if nonpad is not None:
        allowed = both(allowed, keys < nonpad.astype(keys.dtype).reshape(-1, 1, 1, 1))
    return allowed


__all__ = ["attention"]
