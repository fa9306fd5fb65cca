"""LinearAttention: version 27."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError

_RULES = ("linear", "gated", "delta", "gated_delta")


@register("LinearAttention", 27, folds=False)
def linear_attention(
    query,
    key,
    value,
    past_state=None,
    decay=None,
    beta=None,
    *,
    chunk_size: int = 64,
    kv_num_heads: int | None = None,
    q_num_heads: int | None = None,
    scale: float = 0.0,
    update_rule: str = "gated_delta",
):
    """Implements ONNX LinearAttention: the recurrent state update of linear attention, token by token.

    Per key/value head the state ``S`` (``d_k x d_v``, float32, from ``past_state`` or zeros)
    is updated for each token ``t`` and read by the query heads that share it:

    - "linear": ``S = S + k_t v_t^T``
    - "gated": ``S = exp(g_t) S + k_t v_t^T``
    - "delta": ``S = S + beta_t k_t (v_t - S^T k_t)^T``
    - "gated_delta": ``S = exp(g_t) S``, then the delta update with that ``S``

    and ``o_t = scale * S^T q_t``. It runs as one ``lax.scan`` over the tokens.

    Args:
        query: ``(batch, tokens, q_num_heads * d_k)``.
        key: ``(batch, tokens, kv_num_heads * d_k)``.
        value: ``(batch, tokens, kv_num_heads * d_v)``.
        past_state: optional ``(batch, kv_num_heads, d_k, d_v)``.
        decay: the log decay ``g`` (the gated rules only): ``(batch, tokens, kv_num_heads)``
            (one per head) or ``(batch, tokens, kv_num_heads * d_k)`` (one per key feature).
        beta: the update rate (the delta rules only): ``(batch, tokens, kv_num_heads)`` or
            ``(batch, tokens, 1)``.
        chunk_size: a tuning hint of chunked implementations; no effect here.
        kv_num_heads: the key/value heads.
        q_num_heads: the query heads, a multiple of ``kv_num_heads``.
        scale: the factor of the output; 0 means ``1 / sqrt(d_k)``.
        update_rule: "linear", "gated", "delta" or "gated_delta".

    Returns:
        ``(output, present_state)``: ``output`` ``(batch, tokens, q_num_heads * d_v)`` of the
        dtype of ``query``; the final state, of the dtype of ``past_state`` (or of ``query``).

    Example:
        >>> q = k = jnp.array([[[1.0], [1.0]]])   # 2 tokens, 1 head, d_k = 1
        >>> v = jnp.array([[[2.0], [3.0]]])
        >>> out, state = jaxonnx.ops.linear_attention(q, k, v, kv_num_heads=1, q_num_heads=1, update_rule="linear")
        >>> out, state
        (Array([[[2.],
                [5.]]], dtype=float32), Array([[[[5.]]]], dtype=float32))
    """
    del chunk_size  # the result is the sequential recurrence's either way
    if update_rule not in _RULES:
        raise OnnxValidationError(f"got `update_rule`={update_rule!r}; it is one of {', '.join(map(repr, _RULES))}.")
    if q_num_heads <= 0 or kv_num_heads <= 0 or q_num_heads % kv_num_heads:
        raise OnnxValidationError(
            f"needs `q_num_heads` ({q_num_heads}) a positive multiple of `kv_num_heads` ({kv_num_heads})."
        )
    gated = update_rule in ("gated", "gated_delta")
    delta = update_rule in ("delta", "gated_delta")
    for name, given, needed in (("decay", decay is not None, gated), ("beta", beta is not None, delta)):
        if given != needed:
            raise OnnxValidationError(
                f"{'needs' if needed else 'got'} `{name}` with `update_rule`={update_rule!r}, which "
                f"{'uses' if needed else 'does not use'} it."
            )
    for name, x in (("query", query), ("key", key), ("value", value)):
        if x.ndim != 3:
            raise OnnxValidationError(
                f"needs a 3-D `{name}` (batch, tokens, heads * size), got shape {tuple(x.shape)}."
            )
    batch, tokens, q_hidden = query.shape
    if q_hidden % q_num_heads or value.shape[2] % kv_num_heads:
        raise OnnxValidationError(
            f"needs `q_num_heads` ({q_num_heads}) dividing the last dim of `query` {tuple(query.shape)} and "
            f"`kv_num_heads` ({kv_num_heads}) that of `value` {tuple(value.shape)}."
        )
    d_k, d_v = q_hidden // q_num_heads, value.shape[2] // kv_num_heads
    if tuple(key.shape) != (batch, tokens, kv_num_heads * d_k) or tuple(value.shape[:2]) != (batch, tokens):
        raise OnnxValidationError(
            f"needs `key` of shape (batch, tokens, kv_num_heads * d_k) = {(batch, tokens, kv_num_heads * d_k)} and "
            f"`value` of `query`'s batch and tokens; got {tuple(key.shape)} and {tuple(value.shape)}."
        )
    state_shape = (batch, kv_num_heads, d_k, d_v)
    if past_state is not None and tuple(past_state.shape) != state_shape:
        raise OnnxValidationError(
            f"needs `past_state` of shape (batch, kv_num_heads, d_k, d_v) = {state_shape}, got {tuple(past_state.shape)}."
        )

    f32 = jnp.float32

    # Time-major (tokens, batch, heads, size) in float32, the state's precision.
    def heads(x, count):
        return x.reshape(batch, tokens, count, x.shape[2] // count).transpose(1, 0, 2, 3).astype(f32)

    groups = q_num_heads // kv_num_heads
    q = heads(query, q_num_heads).reshape(tokens, batch, kv_num_heads, groups, d_k)
    k, v = heads(key, kv_num_heads), heads(value, kv_num_heads)
    xs = {"q": q, "k": k, "v": v}
    if gated:
        if (
            decay.ndim != 3
            or decay.shape[:2] != (batch, tokens)
            or decay.shape[2] not in (kv_num_heads, kv_num_heads * d_k)
        ):
            raise OnnxValidationError(
                f"needs `decay` of shape (batch, tokens, kv_num_heads) or (batch, tokens, kv_num_heads * d_k), "
                f"with kv_num_heads={kv_num_heads} and d_k={d_k}; got {tuple(decay.shape)}."
            )
        xs["g"] = heads(decay, kv_num_heads)  # (tokens, batch, heads, 1 or d_k)
    if delta:
        if beta.ndim != 3 or beta.shape[:2] != (batch, tokens) or beta.shape[2] not in (kv_num_heads, 1):
            raise OnnxValidationError(
                f"needs `beta` of shape (batch, tokens, kv_num_heads) or (batch, tokens, 1), with "
                f"kv_num_heads={kv_num_heads}; got {tuple(beta.shape)}."
            )
        xs["beta"] = beta.transpose(1, 0, 2)[..., None].astype(f32)  # (tokens, batch, heads or 1, 1)
    factor = jnp.asarray(1.0 / np.sqrt(d_k) if scale == 0 else scale, f32)

    def step(state, x):
        if gated:
            state = state * jnp.exp(x["g"])[..., None]
        v_t = x["v"]
        if delta:
            retrieved = jnp.einsum("bhdm,bhd->bhm", state, x["k"], preferred_element_type=f32)
            v_t = x["beta"] * (v_t - retrieved)
        state = state + x["k"][..., :, None] * v_t[..., None, :]
        out = factor * jnp.einsum("bhgd,bhdm->bhgm", x["q"], state, preferred_element_type=f32)
        return state, out

    initial = jnp.zeros(state_shape, f32) if past_state is None else past_state.astype(f32)
    state, outs = jax.lax.scan(step, initial, xs)
    # (tokens, batch, kv heads, groups, d_v) -> (batch, tokens, q_num_heads * d_v)
    output = outs.transpose(1, 0, 2, 3, 4).reshape(batch, tokens, q_num_heads * d_v).astype(query.dtype)
    return output, state.astype(query.dtype if past_state is None else past_state.dtype)


__all__ = ["linear_attention"]
