"""TfIdfVectorizer: version 9."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.dtypes import as_str_array, is_string_array
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx.ops._helpers.common import namespace

_MODES = ("TF", "IDF", "TFIDF")


@register("TfIdfVectorizer", 9)
def tf_idf_vectorizer(
    X,
    *,
    mode,
    min_gram_length,
    max_gram_length,
    max_skip_count,
    ngram_counts,
    ngram_indexes,
    pool_int64s=None,
    pool_strings=None,
    weights=None,
):
    """Implements ONNX TfIdfVectorizer: counts of the pool's n-grams in each row of ``X``.

    An n-gram of ``n >= 2`` tokens with ``s`` skips takes every ``(s + 1)``-th token from
    its start; each ``s`` in ``[0, max_skip_count]`` counts, and 1-grams count once. Only
    the pool's n-grams with ``min_gram_length <= n <= max_gram_length`` are counted (the
    others' coordinates stay 0). ``Y[ngram_indexes[i]]`` gets the pool's ``i``-th n-gram:
    its count ("TF"), ``weights[i]`` where it occurs ("IDF"), or ``weights[i]`` times its
    count ("TFIDF"). The weights follow the pool, as the text says and onnxruntime does
    (onnx.reference reads them by output coordinate, which agrees whenever
    ``ngram_indexes`` is ``0, 1, 2, ...``).

    Integer tokens are an array program (a binary search per level of the pool's n-gram
    trie), so they run under ``jax.jit`` and ``jax.vmap``; string tokens run eagerly.

    Args:
        X: tokens, int32, int64 or string, shape ``[C]`` or ``[B, C]``.
        mode: "TF", "IDF" or "TFIDF".
        min_gram_length: the shortest n-gram counted.
        max_gram_length: the longest n-gram counted.
        max_skip_count: the most tokens skipped between an n-gram's tokens.
        ngram_counts: where the 1-grams, 2-grams, ... start in the pool.
        ngram_indexes: the output coordinate of each of the pool's n-grams.
        pool_int64s: the n-grams, for integer ``X``.
        pool_strings: the n-grams, for string ``X``.
        weights: one per n-gram of the pool (default: ones), for "IDF" and "TFIDF".

    Returns:
        float32, ``[max(ngram_indexes) + 1]`` or ``[B, max(ngram_indexes) + 1]``.

    Example:
        >>> jaxonnx.ops.tf_idf_vectorizer(jnp.array([2, 3, 2, 3, 5]), mode="TF", min_gram_length=1,
        ...     max_gram_length=2, max_skip_count=0, ngram_counts=[0, 2], ngram_indexes=[0, 1, 2],
        ...     pool_int64s=[2, 5, 2, 3])
        Array([2., 1., 2.], dtype=float32)
    """
    ngrams = _pool_ngrams(
        X,
        mode,
        min_gram_length,
        max_gram_length,
        max_skip_count,
        ngram_counts,
        ngram_indexes,
        pool_int64s,
        pool_strings,
    )
    pool_size = len(ngram_indexes)
    weights = [1.0] * pool_size if weights is None else [float(w) for w in weights]
    if len(weights) != pool_size:
        raise OnnxValidationError(f"needs one of `weights` per n-gram of the pool ({pool_size}), got {len(weights)}.")
    if X.ndim > 2:
        raise OnnxValidationError(f"takes `X` of shape [C] or [B, C], got shape {tuple(X.shape)}.")
    rows = X.reshape(X.shape if X.ndim == 2 else (1, X.size))
    if is_string_array(X):
        rows, ngrams = _as_token_ids(as_str_array(rows), ngrams)
    else:
        ngrams = [(n, tokens, i) for n, tokens, i in ngrams if _representable(tokens, rows.dtype)]
    levels, leaves = _trie(ngrams)
    plan = _Plan(
        levels,
        leaves,
        tuple(n for n, _, _ in ngrams),
        min_gram_length,
        max_skip_count,
        mode,
        tuple(weights[i] for _, _, i in ngrams),
        tuple(int(ngram_indexes[i]) for _, _, i in ngrams),
        max(ngram_indexes, default=-1) + 1,
    )
    Y = _vectorize(np, rows, plan) if namespace(rows) is np else _vectorize_jax(rows, plan)
    return Y if X.ndim == 2 else Y.reshape(plan.size)


@dataclasses.dataclass(frozen=True)
class _Plan:
    """Everything but the tokens, hashable (a static argument of the compiled program)."""

    levels: tuple  # per trie level, (parents, tokens): its sorted (parent node, token) pairs
    leaves: tuple[int, ...]  # each counted n-gram's node at its own level
    lengths: tuple[int, ...]  # each counted n-gram's length
    min_gram_length: int
    max_skip_count: int
    mode: str
    weights: tuple[float, ...]  # each counted n-gram's weight
    columns: tuple[int, ...]  # each counted n-gram's output coordinate
    size: int  # the output's last dimension


def _vectorize(xp, rows, plan: _Plan):
    """``[B, size]`` float32 from ``[B, C]`` integer tokens."""
    counts = _count(xp, rows, plan)  # [B, counted n-grams]
    weights = np.array(plan.weights, np.float32)[None, :]
    if plan.mode == "TF":
        values = counts.astype(np.float32)
    elif plan.mode == "IDF":
        values = xp.where(counts > 0, weights, np.float32(0))
    else:
        values = counts.astype(np.float32) * weights
    columns = np.array(plan.columns, np.int64)
    Y = xp.zeros((rows.shape[0], plan.size), np.float32)
    if xp is np:
        np.add.at(Y, (slice(None), columns), values)
        return Y
    return Y.at[:, columns].add(values)


# One compiled program per plan and input shape: eager calls on JAX arrays would otherwise
# dispatch (and compile) the trie walk's many small operations one by one.
_vectorize_jax = jax.jit(functools.partial(_vectorize, jnp), static_argnums=1)


def _pool_ngrams(
    X, mode, min_gram_length, max_gram_length, max_skip_count, ngram_counts, ngram_indexes, pool_int64s, pool_strings
):
    """The pool's n-grams of the counted lengths as ``(n, tokens, pool index)``, the
    attributes checked (``ngram_indexes`` has one entry per n-gram of the pool)."""
    if mode not in _MODES:
        raise OnnxValidationError(f"got `mode`={mode!r}; it must be one of {', '.join(_MODES)}.")
    if (pool_int64s is None) == (pool_strings is None):
        raise OnnxValidationError(
            "needs exactly one of `pool_int64s` and `pool_strings`, got "
            f"{'both' if pool_int64s is not None else 'neither'}."
        )
    strings = is_string_array(X)
    if strings != (pool_strings is not None):
        raise OnnxTypeError(
            f"needs {'string' if pool_strings is not None else 'integer'} `X` for the given "
            f"`{'pool_strings' if pool_strings is not None else 'pool_int64s'}`, got {X.dtype} `X`."
        )
    if not 1 <= min_gram_length <= max_gram_length or max_skip_count < 0:
        raise OnnxValidationError(
            f"needs 1 <= `min_gram_length` <= `max_gram_length` and `max_skip_count` >= 0, got "
            f"{min_gram_length}, {max_gram_length} and {max_skip_count}."
        )
    pool = list(pool_strings if pool_strings is not None else pool_int64s)
    starts = [int(c) for c in ngram_counts] + [len(pool)]
    if any(a > b for a, b in zip(starts, starts[1:])) or starts[0] < 0:
        raise OnnxValidationError(
            f"needs non-decreasing `ngram_counts` within the pool (of {len(pool)}), got {list(ngram_counts)}."
        )
    ngrams = []
    for n, (start, end) in enumerate(zip(starts, starts[1:]), start=1):
        if (end - start) % n:
            raise OnnxValidationError(
                f"got {end - start} pool items for the {n}-grams (`ngram_counts`={list(ngram_counts)}), "
                f"not a multiple of {n}."
            )
        ngrams += [(n, tuple(pool[s : s + n]), None) for s in range(start, end, n)]
    if len(ngram_indexes) != len(ngrams) or min(ngram_indexes, default=0) < 0:
        raise OnnxValidationError(
            f"needs one non-negative `ngram_indexes` entry per n-gram of the pool ({len(ngrams)}), "
            f"got {list(ngram_indexes)}."
        )
    return [(n, tokens, i) for i, (n, tokens, _) in enumerate(ngrams) if min_gram_length <= n <= max_gram_length]


def _representable(tokens, dtype) -> bool:
    """Whether every token fits in ``X``'s dtype (one that does not can never occur)."""
    info = np.iinfo(dtype)
    return all(info.min <= int(t) <= info.max for t in tokens)


def _as_token_ids(rows: np.ndarray, ngrams):
    """String tokens as int32 ids of the pool's words (-1 for other words)."""
    words = {word: index for index, word in enumerate(sorted({t for _, tokens, _ in ngrams for t in tokens}))}
    ids = np.array([words.get(word, -1) for word in rows.reshape(-1)], np.int32).reshape(rows.shape)
    return ids, [(n, tuple(words[t] for t in tokens), i) for n, tokens, i in ngrams]


def _count(xp, rows, plan: _Plan):
    """How often each counted n-gram occurs in each row, ``[B, n-grams]`` (int32).

    The pool's prefixes form a trie, one sorted table of ``(parent node, token)`` per level;
    each start position walks it one token at a time (a binary search per level), and the
    node reached at level ``n`` names the n-gram found there. The first step does not
    depend on the skip, so it is taken once; 1-grams count there. Each skip then walks the
    deeper levels: a Python loop in numpy, one ``lax.scan`` step in JAX (one compiled walk).
    """
    batch, length = rows.shape
    if not plan.leaves or length == 0:
        return xp.zeros((batch, len(plan.leaves)), np.int32)
    levels = [(np.array(parents, np.int32), np.array(tokens, rows.dtype)) for parents, tokens in plan.levels]
    first_parents, first_tokens = levels[0]
    first, alive = _lookup(xp, first_parents, first_tokens, xp.zeros((batch, length), np.int32), rows)
    unigrams = _histogram(xp, first, alive & (plan.min_gram_length == 1), len(first_parents))
    skips = range(plan.max_skip_count + 1)
    if len(levels) == 1:
        deeper = []
    elif xp is np:
        deeper = [sum(found) for found in zip(*(_walk(np, rows, levels, first, alive, skip, plan) for skip in skips))]
    else:

        def step(totals, skip):
            found = _walk(jnp, rows, levels, first, alive, skip, plan)
            return [total + f for total, f in zip(totals, found)], None

        zeros = [jnp.zeros((batch, len(parents)), np.int32) for parents, _ in levels[1:]]
        deeper, _ = jax.lax.scan(step, zeros, np.arange(len(skips), dtype=np.int32))
    offsets = np.cumsum([0] + [len(parents) for parents, _ in levels])
    leaves = np.array([offsets[n - 1] + leaf for n, leaf in zip(plan.lengths, plan.leaves)], np.int64)
    return xp.concatenate([unigrams, *deeper], axis=1)[:, leaves]  # one gather, whatever the pool's size


def _walk(xp, rows, levels, node, alive, skip, plan: _Plan):
    """Per trie level from the second, ``[B, nodes]``: the n-grams with ``skip`` skips found
    in each row, from the first step's ``node`` and ``alive``."""
    length = rows.shape[1]
    starts = np.arange(length, dtype=np.int32)
    found_per_level = []
    for level, (parents, tokens) in enumerate(levels[1:], start=1):
        positions = starts + level * (skip + 1)
        token = rows[:, xp.minimum(positions, length - 1)]
        node, found = _lookup(xp, parents, tokens, node, token)
        alive = alive & (positions < length)[None, :] & found
        found_per_level.append(_histogram(xp, node, alive & (level + 1 >= plan.min_gram_length), len(parents)))
    return found_per_level


def _trie(ngrams):
    """Per level, the sorted ``(parent, token)`` pairs of the pool's prefixes (as tuples of
    ints); and the node of each n-gram at its own level."""
    longest = max((n for n, _, _ in ngrams), default=0)
    levels, node_of = [], {(): 0}
    for level in range(1, longest + 1):
        prefixes = sorted(
            {tuple(int(t) for t in tokens[:level]) for n, tokens, _ in ngrams if n >= level},
            key=lambda p: (node_of[p[:-1]], p[-1]),
        )
        node_of.update({prefix: index for index, prefix in enumerate(prefixes)})
        levels.append((tuple(node_of[p[:-1]] for p in prefixes), tuple(p[-1] for p in prefixes)))
    return tuple(levels), tuple(node_of[tuple(int(t) for t in tokens)] for _, tokens, _ in ngrams)


def _lookup(xp, parents, tokens, parent, token):
    """The index of each ``(parent, token)`` in the sorted table, and whether it is there."""
    size = len(parents)
    parents, tokens = xp.asarray(parents), xp.asarray(tokens)

    def halve(_, bounds):
        low, high = bounds
        middle = (low + high) // 2
        at = xp.minimum(middle, size - 1)
        before = (parents[at] < parent) | ((parents[at] == parent) & (tokens[at] < token))
        searching = low < high
        return xp.where(searching & before, middle + 1, low), xp.where(searching & ~before, middle, high)

    bounds = (xp.zeros(parent.shape, np.int32), xp.full(parent.shape, size, np.int32))
    if xp is np:
        for step in range(size.bit_length()):
            bounds = halve(step, bounds)
    else:  # one loop body to compile, whatever the pool's size
        bounds = jax.lax.fori_loop(0, size.bit_length(), halve, bounds)
    low = bounds[0]
    at = xp.minimum(low, size - 1)
    return at, (low < size) & (parents[at] == parent) & (tokens[at] == token)


def _histogram(xp, node, alive, size: int):
    """``[B, size]``: how many live positions of each row ended at each node."""
    batch = node.shape[0]
    flat = xp.where(alive, node + (np.arange(batch, dtype=np.int32) * size)[:, None], batch * size)
    flat = flat.reshape(-1)
    if xp is np:
        bins = np.bincount(flat, minlength=batch * size + 1)
    else:
        bins = jnp.bincount(flat, length=batch * size + 1)
    return bins[:-1].reshape(batch, size).astype(np.int32)


__all__ = ["tf_idf_vectorizer"]
