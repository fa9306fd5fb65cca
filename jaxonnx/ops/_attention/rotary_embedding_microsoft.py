"""RotaryEmbedding (com.microsoft, version 1): onnxruntime's rotary embedding.

Not onnx's RotaryEmbedding-23: the inputs come in another order (``position_ids`` second,
and required), ``position_ids`` may be one start offset, and the caches are always 2-D.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import onnx.defs
import onnx.helper

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.attention import rotate
from jaxonnx.ops._helpers.common import is_traced
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema

_INT = onnx.defs.OpSchema.AttrType.INT
_FLOAT = onnx.defs.OpSchema.AttrType.FLOAT
_SCHEMA = contrib_schema(
    "RotaryEmbedding",
    "Rotary positional embeddings (RoPE) of each head, read from 2-D cos/sin caches at position_ids.",
    inputs=[("input", "T"), ("position_ids", "M"), ("cos_cache", "T"), ("sin_cache", "T")],
    outputs=[("output", "T")],
    type_constraints=[("T", ["tensor(float)", "tensor(float16)", "tensor(bfloat16)"]), ("M", ["tensor(int64)"])],
    attributes=[
        attribute_without_default("num_heads", _INT, "Number of heads; needed with rotary_embedding_dim."),
        attribute_without_default(
            "rotary_embedding_dim", _INT, "How many features of each head rotate (0: the head size)."
        ),
        attribute("interleaved", 0, "Pairs are neighbours (2i, 2i+1)."),
        attribute(
            "is_packed_batching",
            0,
            "Ragged batches packed into the sequence (the computation is per token, so the same).",
        ),
        attribute_without_default(
            "scale", _FLOAT, "Scale of the caches' frequencies when they are rebuilt (not used)."
        ),
    ],
    differentiable=("input", "cos_cache", "sin_cache"),
)


@register("RotaryEmbedding", 1, domain="com.microsoft", schema=_SCHEMA, folds=False, concrete=("position_ids",))
def rotary_embedding_microsoft(
    input,
    position_ids,
    cos_cache,
    sin_cache,
    *,
    num_heads=None,
    rotary_embedding_dim=None,
    interleaved=0,
    is_packed_batching=0,
    scale=None,
    checks=None,
):
    """Implements com.microsoft RotaryEmbedding: rotary positional embeddings of each head.

    The first ``rotary_embedding_dim`` features of each head are taken as pairs (the two
    halves, or neighbours when ``interleaved``) and each pair ``(x1, x2)`` becomes ``(cos *
    x1 - sin * x2, sin * x1 + cos * x2)``, with ``cos`` and ``sin`` read from the caches at
    the token's position; the other features pass through, as onnxruntime's kernel does.

    Args:
        input: ``(batch, sequence, hidden)`` or ``(batch, heads, sequence, head_size)``.
        position_ids: int64 ``(batch, sequence)``, or one element: the position of the first
            token, the others following it. A known position outside the caches raises;
            under ``jax.jit`` one past them reads NaN and a negative one counts from the back.
        cos_cache: ``(max_position, rotary_embedding_dim / 2)``.
        sin_cache: like ``cos_cache``.
        num_heads: the heads of a 3-D input; without it the head size is twice the caches'
            width (and ``rotary_embedding_dim`` must not be given).
        rotary_embedding_dim: the features that rotate; 0 (or absent) means the head size.
        interleaved: 1 pairs feature ``2i`` with ``2i + 1``; 0 pairs ``i`` with ``i + dim / 2``.
        is_packed_batching: 1 when ragged batches are packed along the sequence; the rotation
            is per token, so the result is the same.
        scale: onnxruntime's scale of the frequencies for caches it rebuilds; unused, since
            the caches are inputs.
        checks: where the check of traced ``position_ids`` goes, to be made after the
            computation (an eager call's compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        ``output``: the shape and dtype of ``input``.

    Example:
        >>> x = jnp.array([[[1.0, 0.0]]])   # one token, one head of one pair
        >>> cos, sin = jnp.array([[1.0], [0.0]]), jnp.array([[0.0], [1.0]])   # 0 and 90 degrees
        >>> jaxonnx.ops.rotary_embedding_microsoft(x, np.array([1]), cos, sin)
        Array([[[0., 1.]]], dtype=float32)
    """
    del is_packed_batching, scale
    num_heads = num_heads or 0
    rotary_embedding_dim = rotary_embedding_dim or 0
    if input.ndim not in (3, 4):
        raise OnnxValidationError(f"needs a 3-D or 4-D `input`, got shape {tuple(input.shape)}.")
    if cos_cache.ndim != 2 or tuple(cos_cache.shape) != tuple(sin_cache.shape):
        raise OnnxValidationError(
            f"needs 2-D `cos_cache` and `sin_cache` of one shape, got {tuple(cos_cache.shape)} and {tuple(sin_cache.shape)}."
        )
    if rotary_embedding_dim > 0 and num_heads <= 0:
        raise OnnxValidationError(f"needs `num_heads` with `rotary_embedding_dim`={rotary_embedding_dim}.")
    if input.ndim == 4:
        batch, heads, length, head_size = input.shape
        if num_heads and num_heads != heads:
            raise OnnxValidationError(f"got `num_heads`={num_heads} for a 4-D `input` of shape {tuple(input.shape)}.")
        x = input.transpose(0, 2, 1, 3)
    else:
        batch, length, hidden = input.shape
        head_size = hidden // num_heads if num_heads else 2 * cos_cache.shape[1]
        if head_size <= 0 or hidden % head_size:
            raise OnnxValidationError(
                f"needs the hidden size of `input` (shape {tuple(input.shape)}) to be a multiple of the head size "
                f"{head_size} (from `num_heads`={num_heads} or twice the caches' width {cos_cache.shape[1]})."
            )
        x = input.reshape(batch, length, hidden // head_size, head_size)
    dim = rotary_embedding_dim or head_size
    if dim > head_size or dim % 2 or cos_cache.shape[1] != dim // 2:
        raise OnnxValidationError(
            f"needs an even `rotary_embedding_dim` up to the head size {head_size} and caches of width "
            f"rotary_embedding_dim / 2; got rotary_embedding_dim={rotary_embedding_dim} (using {dim}) and caches "
            f"{tuple(cos_cache.shape)}."
        )
    positions = _positions(position_ids, batch, length, cos_cache.shape[0], checks)
    cos = jnp.take(cos_cache, positions, axis=0)[:, :, None, :]  # (batch, sequence, 1, dim / 2)
    sin = jnp.take(sin_cache, positions, axis=0)[:, :, None, :]
    y = rotate(x, cos, sin, interleaved=interleaved)
    return y.transpose(0, 2, 1, 3) if input.ndim == 4 else y.reshape(input.shape)


def _positions(position_ids, batch, length, rows, checks=None):
    """The ``(batch, sequence)`` positions: as given, or one start offset plus the token's
    index; checked where known, else by ``checks`` after the computation where given."""
    if position_ids.size == 1 and position_ids.ndim <= 1:
        start = jnp.asarray(position_ids).reshape(())
        positions = jnp.broadcast_to(start + jnp.arange(length, dtype=start.dtype), (batch, length))
        first = None if is_traced(position_ids) else int(np.asarray(position_ids).reshape(()))
        last = None if first is None else first + length - 1
    elif position_ids.ndim == 2 and tuple(position_ids.shape) == (batch, length):
        positions = position_ids
        values = None if is_traced(position_ids) else np.asarray(position_ids)
        first, last = (None, None) if values is None or not values.size else (int(values.min()), int(values.max()))
    else:
        raise OnnxValidationError(
            f"needs `position_ids` of one element or of shape (batch, sequence) = {(batch, length)}, "
            f"got {tuple(position_ids.shape)}."
        )
    message = f"got positions from {{low}} to {{high}}; each is in [0, {rows}), the rows of the caches."
    if first is not None and (first < 0 or last >= rows):
        raise OnnxValidationError(message.format(low=first, high=last))
    if is_traced(position_ids) and checks is not None and positions.size:  # empty: nothing to check (nor a min)
        checks.fail_where(
            (positions < 0) | (positions >= rows), positions, message, low=positions.min(), high=positions.max()
        )
    return jnp.asarray(positions)


__all__ = ["rotary_embedding_microsoft"]
