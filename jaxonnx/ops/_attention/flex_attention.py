"""FlexAttention (ai.onnx.preview): version 1.

Scaled dot-product attention whose scores and probabilities pass through subgraphs:
``Q`` and ``K`` each scaled by ``sqrt(scale)`` in the input type (as onnx.reference and
Attention's diagram do, so the product of a narrow type does not overflow), ``Q @ K^T``, the
cast to the softmax precision, ``score_mod``, softmax, ``prob_mod``, ``@ V`` in the softmax
precision and the cast back. Each modifier is called once, on the whole
``(batch, q_num_heads, q_sequence_length, kv_sequence_length)`` tensor.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.dtypes import jax_dtype, numpy_dtype
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError

_SOFTMAX_PRECISIONS = {1: "float", 10: "float16", 11: "double", 16: "bfloat16"}


@register("FlexAttention", 1, domain="ai.onnx.preview", folds=False)
def flex_attention(
    Q, K, V, *, scale: float | None = None, score_mod=None, prob_mod=None, softmax_precision: int | None = None
):
    """Implements ONNX FlexAttention (ai.onnx.preview, version 1): ``prob_mod(softmax(score_mod(Q K^T * scale))) V``.

    Grouped-query attention (fewer key/value heads than query heads) gives query head ``h``
    the key/value head ``h // (q_num_heads // kv_num_heads)``. Scores and probabilities are
    of the softmax precision: float32 for float16, bfloat16 and float32 inputs, float64 for
    float64 ones, unless ``softmax_precision`` says otherwise. A modifier that writes -inf
    over a whole row makes that row NaN, as softmax of such a row is (onnx.reference
    agrees).

    Args:
        Q: the queries ``(batch, q_num_heads, q_sequence_length, head_size)``, float.
        K: the keys ``(batch, kv_num_heads, kv_sequence_length, head_size)``, of the type of ``Q``.
        V: the values ``(batch, kv_num_heads, kv_sequence_length, v_head_size)``, of the type of ``Q``.
        scale: the factor of ``Q K^T``; ``1 / sqrt(head_size)`` when not given.
        score_mod: optional function of the scores, returning the modified scores (alone or as a
            1-tuple, as a subgraph returns them) of the same shape and type; masks write -inf.
        prob_mod: optional function of the probabilities, the same way.
        softmax_precision: the ONNX element type of the scores, softmax and the product with
            ``V`` (1 float, 10 float16, 11 double, 16 bfloat16).

    Returns:
        ``Y`` ``(batch, q_num_heads, q_sequence_length, v_head_size)`` of the type of ``Q``.

    Example:
        >>> q = k = jnp.ones((1, 1, 2, 4))
        >>> v = jnp.array([[[[1.0], [3.0]]]])
        >>> causal = lambda s: jnp.where(jnp.tril(jnp.ones((2, 2), bool)), s, -jnp.inf)
        >>> jaxonnx.ops.flex_attention(q, k, v, score_mod=causal)
        Array([[[[1.],
                 [2.]]]], dtype=float32)
    """
    for name, x in (("Q", Q), ("K", K), ("V", V)):
        if x.ndim != 4:
            raise OnnxValidationError(
                f"needs a 4-D `{name}` (batch, heads, sequence, head size), got shape {tuple(x.shape)}."
            )
    batch, heads, q_len, head_size = Q.shape
    kv_heads, kv_len = K.shape[1], K.shape[2]
    if not (
        K.shape[0] == V.shape[0] == batch
        and V.shape[1] == kv_heads
        and V.shape[2] == kv_len
        and K.shape[3] == head_size
    ):
        raise OnnxValidationError(
            f"needs `K` and `V` of `Q`'s batch, with one number of heads and one sequence length, and `K` "
            f"of `Q`'s head size; got `Q` {tuple(Q.shape)}, `K` {tuple(K.shape)}, `V` {tuple(V.shape)}."
        )
    if kv_heads == 0 or heads % kv_heads:
        raise OnnxValidationError(
            f"needs the query heads ({heads}) to be a multiple of the key/value heads ({kv_heads})."
        )
    dtype = Q.dtype
    if softmax_precision is None:
        work = jnp.float64 if dtype == jnp.float64 else jnp.float32
    elif softmax_precision in _SOFTMAX_PRECISIONS:
        work = numpy_dtype(softmax_precision)
    else:
        raise OnnxValidationError(
            f"got `softmax_precision`={softmax_precision}; it is 1 (float), 10 (float16), 11 (double) or 16 (bfloat16)."
        )
    work = jax_dtype(work)

    # Q and K each scaled by sqrt(|scale|) in the input type, as onnx.reference does (its
    # product cannot overflow a narrow type where the scaled scores do not); a negative
    # scale, which the text's `(Q @ K^T) * scale` allows, flips the sign of Q.
    factor = float(np.float32(1.0 / np.sqrt(head_size) if scale is None else scale))
    root = np.sqrt(abs(factor))
    q_root, k_root = jnp.asarray(np.copysign(root, factor), dtype), jnp.asarray(root, dtype)
    groups = heads // kv_heads
    grouped_q = (Q * q_root).reshape(batch, kv_heads, groups, q_len, head_size)
    scores = jnp.einsum("bhgqd,bhkd->bhgqk", grouped_q, K * k_root, preferred_element_type=dtype)
    scores = scores.reshape(batch, heads, q_len, kv_len).astype(work)
    if score_mod is not None:
        scores = _modified(score_mod, scores, "score_mod")
    probabilities = jax.nn.softmax(scores, axis=-1)
    if prob_mod is not None:
        probabilities = _modified(prob_mod, probabilities, "prob_mod")
    grouped_p = probabilities.reshape(batch, kv_heads, groups, q_len, kv_len)
    y = jnp.einsum("bhgqk,bhkd->bhgqd", grouped_p, V.astype(work), preferred_element_type=work)
    return y.reshape(batch, heads, q_len, V.shape[3]).astype(dtype)


def _modified(modifier, x, name: str):
    """``modifier(x)``: one output of the shape and element type of ``x``, as the text demands."""
    outputs = modifier(x)
    if isinstance(outputs, (tuple, list)):
        if len(outputs) != 1:
            raise OnnxValidationError(f"needs a `{name}` with one output, got {len(outputs)} outputs.")
        outputs = outputs[0]
    out = jnp.asarray(outputs)
    if out.shape != x.shape or out.dtype != x.dtype:
        raise OnnxValidationError(
            f"needs a `{name}` that keeps the shape and element type of its input {x.dtype}{list(x.shape)}, "
            f"got {out.dtype}{list(out.shape)}."
        )
    return out


__all__ = ["flex_attention"]
