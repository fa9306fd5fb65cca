"""Choosing the next tokens from logits: the argmax, or a draw restricted by ``temperature``,
``top_k`` and ``top_p`` as Hugging Face's warpers restrict it."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def choose_tokens(logits, rng=None, *, temperature=1.0, top_k=None, top_p=None):
    """The next tokens from ``(batch, vocabulary)`` logits: the argmax without ``rng``, else a
    draw from ``softmax(logits / temperature)`` restricted, as Hugging Face's warpers do in this
    order, to the ``top_k`` largest logits (ties with the k-th kept) and then to the smallest
    set of most probable tokens whose probabilities add up to at least ``top_p``.

    ``temperature``, ``top_k`` and ``top_p`` may be traced.

    Example:
        >>> choose_tokens(jnp.array([[0.0, 2.0, 1.0]])).tolist()
        [1]
    """
    if rng is None:
        return jnp.argmax(logits, axis=-1)
    return jax.random.categorical(
        rng, filtered_logits(logits, temperature=temperature, top_k=top_k, top_p=top_p), axis=-1
    )


def filtered_logits(logits, *, temperature=1.0, top_k=None, top_p=None):
    """``logits / temperature`` with the tokens outside ``top_k`` and ``top_p`` at ``-inf``
    (see :func:`choose_tokens`): a draw from its softmax is the sampling distribution."""
    logits = jnp.asarray(logits)
    logits = logits / jnp.asarray(temperature, logits.dtype)
    if top_k is None and top_p is None:
        return logits
    descending = -jnp.sort(-logits, axis=-1)
    if top_k is not None:
        k = jnp.clip(jnp.asarray(top_k), 1, logits.shape[-1])
        kth = jnp.take(descending, k - 1, axis=-1)[..., None]
        logits = jnp.where(logits < kth, -jnp.inf, logits)
        descending = jnp.where(descending < kth, -jnp.inf, descending)
    if top_p is not None:
        probabilities = jax.nn.softmax(descending, axis=-1)
        before = jnp.cumsum(probabilities, axis=-1) - probabilities
        kept = jnp.sum(before < jnp.asarray(top_p, probabilities.dtype), axis=-1, keepdims=True)
        smallest_kept = jnp.take_along_axis(descending, jnp.maximum(kept, 1) - 1, axis=-1)
        logits = jnp.where(logits < smallest_kept, -jnp.inf, logits)
    return logits
