"""MoE (com.microsoft, version 1): a Mixture-of-Experts feed-forward layer, each row through
its top-k experts' MLPs, weighted by the router."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.normalization import contrib_work_type
from jaxonnx.ops._helpers.schemas import attribute, contrib_schema

_FLOATS = ["tensor(float)", "tensor(float16)", "tensor(bfloat16)"]
_SCHEMA = contrib_schema(
    "MoE",
    "Y = sum over each row's top-k experts of its routing weight times the expert's MLP of the row.",
    inputs=[
        ("input", "T"),
        ("router_probs", "T"),
        ("fc1_experts_weights", "T"),
        ("fc1_experts_bias", "T", "optional"),
        ("fc2_experts_weights", "T"),
        ("fc2_experts_bias", "T", "optional"),
        ("fc3_experts_weights", "T", "optional"),
        ("fc3_experts_bias", "T", "optional"),
    ],
    outputs=[("output", "T")],
    type_constraints=[("T", _FLOATS)],
    attributes=[
        attribute("k", 1, "How many experts a row goes through."),
        attribute("activation_type", "relu", "relu, gelu (tanh approximation), silu, identity or swiglu."),
        attribute("normalize_routing_weights", 0, "1: the softmax of the top-k logits; 0: the top-k of the softmax."),
        attribute("use_sparse_mixer", 0, "PhiMoE's sparse mixer routing (not supported)."),
        attribute("swiglu_fusion", 0, "1: fc1's output interleaves the gate and linear halves."),
        attribute("activation_alpha", 1.0, "SwiGLU's gate slope: gate * sigmoid(alpha * gate)."),
        attribute("activation_beta", 0.0, "SwiGLU's offset of the linear half."),
        attribute("swiglu_limit", 0.0, "SwiGLU's clamp of both halves (0: none)."),
    ],
)


@register("MoE", 1, domain="com.microsoft", schema=_SCHEMA, folds=False)
def mixture_of_experts(
    input,
    router_probs,
    fc1_experts_weights,
    fc1_experts_bias=None,
    fc2_experts_weights=None,
    fc2_experts_bias=None,
    fc3_experts_weights=None,
    fc3_experts_bias=None,
    *,
    k=1,
    activation_type="relu",
    normalize_routing_weights=0,
    use_sparse_mixer=0,
    swiglu_fusion=0,
    activation_alpha=1.0,
    activation_beta=0.0,
    swiglu_limit=0.0,
):
    """Implements com.microsoft MoE: each row through its top-``k`` experts, weighted by the router.

    A row's experts are the ``k`` largest of its ``router_probs`` (logits); their weights are
    the softmax of those ``k`` logits (``normalize_routing_weights``) or their entries of the
    softmax over all experts. Expert ``e`` computes ``fc2[e] @ act(fc1[e] @ x + b1[e]) +
    b2[e]`` (weights ``(out, in)``, as onnxruntime-genai's builder writes them). ``swiglu``
    (GPT-OSS's, ``swiglu_fusion=1``: fc1's outputs interleave gate and linear) is
    ``min(g, limit) * sigmoid(alpha * min(g, limit)) * (clip(l, -limit, limit) + beta)``.
    Every expert runs on every row (a dense computation, exact and of fixed shape under
    ``jax.jit``), its output weighted by 0 where the router did not pick it.

    Args:
        input: ``(rows, hidden)`` or ``(batch, sequence, hidden)``.
        router_probs: ``(rows, experts)``: the router's logits.
        fc1_experts_weights: ``(experts, inner, hidden)`` (``2 * inner`` with ``swiglu``);
            ``fc1_experts_bias``: optional ``(experts, inner)`` (likewise).
        fc2_experts_weights: ``(experts, hidden, inner)``; ``fc2_experts_bias``: optional
            ``(experts, hidden)``.
        fc3_experts_weights, fc3_experts_bias: a gated first layer; not supported (an error,
            as in onnxruntime's CPU kernel).
        k: how many experts a row goes through.
        activation_type: ``relu``, ``gelu`` (the tanh approximation, as onnxruntime computes
            it), ``silu``, ``identity`` or ``swiglu``.
        normalize_routing_weights: see above.
        use_sparse_mixer: PhiMoE's routing; not supported (an error).
        swiglu_fusion: 1 (interleaved) or 2 (the gate half, then the linear half) with ``swiglu``.
        activation_alpha, activation_beta, swiglu_limit: SwiGLU's constants (above).

    Returns:
        The output, of ``input``'s shape and type.

    Example:
        >>> x, logits = jnp.ones((2, 4)), jnp.array([[1.0, 0.0], [0.0, 1.0]])
        >>> w1, w2 = jnp.stack([jnp.eye(4), -jnp.eye(4)]), jnp.stack([jnp.eye(4), jnp.eye(4)])
        >>> # row 0 through expert 0 (relu(x) = x), row 1 through expert 1 (relu(-x) = 0)
        >>> jaxonnx.ops.mixture_of_experts(x, logits, w1, None, w2, k=1, normalize_routing_weights=1).tolist()
        [[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]]
    """
    if use_sparse_mixer:
        raise OnnxValidationError("got `use_sparse_mixer`=1 (PhiMoE's routing), which jaxonnx does not implement.")
    if fc3_experts_weights is not None or fc3_experts_bias is not None:
        raise OnnxValidationError(
            "got `fc3_experts_weights`: a gated first layer, which jaxonnx (like onnxruntime's "
            "CPU kernel) does not implement."
        )
    if fc2_experts_weights is None:
        raise OnnxValidationError("needs `fc2_experts_weights`.")
    activation = activation_type.decode() if isinstance(activation_type, bytes) else activation_type
    hidden = input.shape[-1]
    rows = input.reshape(-1, hidden)
    experts = fc1_experts_weights.shape[0]
    inner = fc2_experts_weights.shape[-1]
    fc1_width = 2 * inner if activation == "swiglu" else inner
    expected = {
        "router_probs": (rows.shape[0], experts),
        "fc1_experts_weights": (experts, fc1_width, hidden),
        "fc1_experts_bias": (experts, fc1_width),
        "fc2_experts_weights": (experts, hidden, inner),
        "fc2_experts_bias": (experts, hidden),
    }
    given = {
        "router_probs": router_probs,
        "fc1_experts_weights": fc1_experts_weights,
        "fc1_experts_bias": fc1_experts_bias,
        "fc2_experts_weights": fc2_experts_weights,
        "fc2_experts_bias": fc2_experts_bias,
    }
    for name, value in given.items():
        if value is not None and tuple(value.shape) != expected[name]:
            raise OnnxValidationError(
                f"needs `{name}` of shape {expected[name]} for an input of shape {tuple(input.shape)} with {experts} "
                f"experts of inner size {inner} ({activation}), got {tuple(value.shape)}."
            )
    if not 1 <= k <= experts:
        raise OnnxValidationError(f"needs 1 <= `k` <= {experts} (the experts), got {k}.")
    dtype = input.dtype
    logits = router_probs.astype(jnp.float32)
    top_logits, chosen = jax.lax.top_k(logits, k)
    if normalize_routing_weights:
        top_weights = jax.nn.softmax(top_logits, axis=-1)
    else:
        top_weights = jnp.take_along_axis(jax.nn.softmax(logits, axis=-1), chosen, axis=-1)
    picked = jax.nn.one_hot(chosen, experts, dtype=jnp.float32)  # (rows, k, experts)
    # (rows, experts): each row's weight of every expert, 0 for those the router left out.
    routing = jnp.sum(picked * top_weights[..., None], axis=1)
    # float16 and bfloat16 compute in float32 and round once.
    work = contrib_work_type(dtype)
    h = jnp.einsum("rh,efh->ref", rows.astype(work), fc1_experts_weights.astype(work), preferred_element_type=work)
    if fc1_experts_bias is not None:
        h = h + fc1_experts_bias.astype(work)[None]
    a = _activation(h, activation, swiglu_fusion, activation_alpha, activation_beta, swiglu_limit)
    y = jnp.einsum("rei,ehi->reh", a, fc2_experts_weights.astype(work), preferred_element_type=work)
    if fc2_experts_bias is not None:
        y = y + fc2_experts_bias.astype(work)[None]
    # An expert the router left out adds exactly nothing, even where its output overflowed
    # (0 * inf would be NaN).
    y = jnp.where(jnp.any(picked > 0, axis=1)[..., None], y, jnp.zeros((), work))
    out = jnp.einsum("re,reh->rh", routing.astype(work), y, preferred_element_type=work)
    return out.reshape(input.shape).astype(dtype)


def _activation(h, activation, fusion, alpha, beta, limit):
    if activation == "relu":
        return jax.nn.relu(h)
    if activation == "gelu":
        return jax.nn.gelu(h, approximate=True)
    if activation == "silu":
        return jax.nn.silu(h)
    if activation == "identity":
        return h
    if activation == "swiglu":
        if fusion == 1:
            gate, linear = h[..., 0::2], h[..., 1::2]
        elif fusion == 2:
            half = h.shape[-1] // 2
            gate, linear = h[..., :half], h[..., half:]
        else:
            raise OnnxValidationError(f"needs `swiglu_fusion` 1 (interleaved) or 2 (halves) with swiglu, got {fusion}.")
        if limit:
            gate = jnp.minimum(gate, jnp.asarray(limit, h.dtype))
            linear = jnp.clip(linear, -jnp.asarray(limit, h.dtype), jnp.asarray(limit, h.dtype))
        return gate * jax.nn.sigmoid(jnp.asarray(alpha, h.dtype) * gate) * (linear + jnp.asarray(beta, h.dtype))
    raise OnnxValidationError(f"got `activation_type`={activation!r}; it is relu, gelu, silu, identity or swiglu.")


__all__ = ["mixture_of_experts"]
