"""RotaryEmbedding: version 23."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.attention import check_cache_rows, rotate


@register("RotaryEmbedding", 23, folds=False, concrete=("position_ids",))
def rotary_embedding(
    X,
    cos_cache,
    sin_cache,
    position_ids=None,
    *,
    interleaved: int = 0,
    num_heads: int | None = None,
    rotary_embedding_dim: int = 0,
    checks=None,
):
    """Implements ONNX RotaryEmbedding: rotary positional embeddings (RoPE) of each head of ``X``.

    The first ``rotary_embedding_dim`` features of each head are taken as pairs (the two
    halves, or neighbours when ``interleaved``), and each pair ``(x1, x2)`` becomes
    ``(cos * x1 - sin * x2, sin * x1 + cos * x2)``; the other features pass through.

    Args:
        X: ``(batch, heads, sequence, head_size)``, or 3-D ``(batch, sequence, heads *
            head_size)`` with ``num_heads``.
        cos_cache: ``(max_position, rotary_embedding_dim / 2)`` read at ``position_ids``, or,
            without them, ``(batch, sequence, rotary_embedding_dim / 2)``, where a batch or
            sequence of 1 broadcasts.
        sin_cache: like ``cos_cache``.
        position_ids: optional int64 ``(batch, sequence)``, each in ``[0, max_position)``.
            A known one outside raises; under ``jax.jit`` one past the caches reads NaN and
            a negative one counts from the back (as ``jnp.take`` reads).
        interleaved: 1 pairs feature ``2i`` with ``2i + 1``; 0 pairs ``i`` with ``i + dim / 2``.
        num_heads: the heads of a 3-D ``X``.
        rotary_embedding_dim: how many features of each head rotate (even); 0 means all.
        checks: where the check of traced ``position_ids`` goes, to be made after the
            computation (an eager call's compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        ``Y``: the shape and dtype of ``X``.

    Example:
        >>> x = jnp.array([[[[1.0, 0.0]]]])   # one head, one position, one pair
        >>> cos, sin = jnp.array([[1.0], [0.0]]), jnp.array([[0.0], [1.0]])   # 0 and 90 degrees
        >>> jaxonnx.ops.rotary_embedding(x, cos, sin, jnp.array([[1]]))
        Array([[[[0., 1.]]]], dtype=float32)
    """
    if X.ndim == 4:
        if num_heads not in (None, 0, X.shape[1]):
            raise OnnxValidationError(f"got `num_heads`={num_heads} for a 4-D `X` of shape {tuple(X.shape)}.")
        x = X.transpose(0, 2, 1, 3)  # (batch, sequence, heads, head_size)
    elif X.ndim == 3:
        if not num_heads or num_heads < 0 or X.shape[2] % num_heads:
            raise OnnxValidationError(
                f"needs `num_heads` > 0 dividing the hidden size of the 3-D `X` (shape {tuple(X.shape)}), "
                f"got num_heads={num_heads}."
            )
        x = X.reshape(X.shape[0], X.shape[1], num_heads, X.shape[2] // num_heads)
    else:
        raise OnnxValidationError(f"needs a 3-D or 4-D `X`, got shape {tuple(X.shape)}.")
    batch, length, _, head_size = x.shape
    dim = rotary_embedding_dim or head_size
    if not 0 < dim <= head_size or dim % 2:
        raise OnnxValidationError(
            f"got `rotary_embedding_dim`={rotary_embedding_dim}; it is 0 (the head size, {head_size}) or an "
            "even number up to the head size."
        )
    cos, sin = _at_positions(cos_cache, sin_cache, position_ids, batch, length, dim // 2, checks)
    cos, sin = cos[:, :, None, :], sin[:, :, None, :]  # one for every head
    y = rotate(x, cos, sin, interleaved=interleaved)
    return y.reshape(X.shape) if X.ndim == 3 else y.transpose(0, 2, 1, 3)


def _at_positions(cos_cache, sin_cache, position_ids, batch, length, half, checks=None):
    """The caches as ``(batch, sequence, half)``: read at ``position_ids`` (checked where
    known, else by ``checks`` after the computation where given), or as given."""
    if cos_cache.shape != sin_cache.shape:
        raise OnnxValidationError(
            f"needs `cos_cache` and `sin_cache` of one shape, got {tuple(cos_cache.shape)} and {tuple(sin_cache.shape)}."
        )
    if position_ids is None:
        # The text multiplies the caches into the input, so a batch or sequence dim of 1
        # broadcasts (PyTorch's exporter writes caches of batch 1), as in onnx.reference.
        shape = tuple(cos_cache.shape)
        if len(shape) != 3 or shape[2] != half or any(d not in (1, want) for d, want in zip(shape, (batch, length))):
            raise OnnxValidationError(
                f"needs `cos_cache` and `sin_cache` of shape (batch, sequence, rotary_embedding_dim / 2) = "
                f"{(batch, length, half)} (a batch or sequence of 1 broadcasts) without `position_ids`, got {shape}."
            )
        return (jnp.broadcast_to(cos_cache, (batch, length, half)), jnp.broadcast_to(sin_cache, (batch, length, half)))
    if cos_cache.ndim != 2 or cos_cache.shape[1] != half:
        raise OnnxValidationError(
            f"needs `cos_cache` and `sin_cache` of shape (max_position, rotary_embedding_dim / 2 = {half}) with "
            f"`position_ids`, got {tuple(cos_cache.shape)}."
        )
    if tuple(position_ids.shape) != (batch, length):
        raise OnnxValidationError(
            f"needs `position_ids` of shape (batch, sequence) = {(batch, length)}, got {tuple(position_ids.shape)}."
        )
    message = (
        f"got `position_ids` from {{low}} to {{high}}; each is in [0, {cos_cache.shape[0]}), the rows of the caches."
    )
    check_cache_rows(position_ids, cos_cache.shape[0], message, checks)
    positions = jnp.asarray(position_ids)
    return jnp.take(cos_cache, positions, axis=0), jnp.take(sin_cache, positions, axis=0)


__all__ = ["rotary_embedding"]
