"""Text generation from an ONNX causal language model, the whole decode loop under one ``jax.jit``.

:func:`generate` is the entry point; the package's modules hold its parts: ``cache`` (finding
the KV cache), ``sampling`` (choosing tokens), ``decode`` (the loop and its strategies),
``loading`` (a model's file) and ``prompts`` (checks of the prompts). How it works, for each
exporter's files, is in ``docs/guide/generation.md``.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.conversion import trace_in_progress
from jaxonnx._core.model import Model
from jaxonnx._errors import OnnxValidationError
from jaxonnx.generation.cache import CacheLayout as CacheLayout
from jaxonnx.generation.cache import cache_dims_beside as cache_dims_beside
from jaxonnx.generation.cache import find_cache as find_cache
from jaxonnx.generation.decode import compiled_decode_loop
from jaxonnx.generation.decode import decode_compiler_options as decode_compiler_options
from jaxonnx.generation.loading import load_causal_lm as load_causal_lm
from jaxonnx.generation.prompts import batched_prompts, check_in_vocabulary, check_left_padded, vocabulary_size
from jaxonnx.generation.sampling import choose_tokens as choose_tokens
from jaxonnx.generation.sampling import filtered_logits as filtered_logits

__all__ = [
    "CacheLayout",
    "cache_dims_beside",
    "choose_tokens",
    "decode_compiler_options",
    "filtered_logits",
    "find_cache",
    "generate",
    "load_causal_lm",
]


def generate(
    model,
    input_ids,
    max_new_tokens: int,
    *,
    attention_mask=None,
    rng=None,
    temperature=1.0,
    top_k=None,
    top_p=None,
    eos_token_id=None,
    pad_token_id=None,
    cache: Mapping[str, str] | CacheLayout | None = None,
):
    """Generates tokens from a causal LM with its KV cache, prefill and decode in one compiled loop.

    Args:
        model: a :class:`jaxonnx.Model`, or a path to its ``.onnx`` file or folder.
        input_ids: the prompts, ``(batch, prompt)`` integers (or one prompt, ``(prompt,)``);
            prompts of different lengths are left-padded.
        max_new_tokens: how many tokens to add (static: it decides the output's shape).
        attention_mask: ``(batch, prompt)``, 0 on the left padding and 1 on the tokens; all
            ones by default.
        rng: a ``jax.random`` key: sample. None: greedy (the argmax at every step).
        temperature, top_k, top_p: how to sample (see :func:`choose_tokens`); ignored
            without ``rng``. They may be traced.
        eos_token_id: a token id (or a list of them) that ends a row: the row's later tokens
            are ``pad_token_id``, and the loop stops once every row has ended.
        pad_token_id: what follows a row's end; ``eos_token_id`` (its first) by default.
        cache: ``{past input: present output}`` for graphs whose cache ``generate`` does
            not recognize by name, or a :class:`CacheLayout` from :func:`find_cache`
            (e.g. with the ``dims`` of a builder file loaded from bytes).

    Returns:
        ``(batch, prompt + max_new_tokens)`` token ids: the prompts, then the new tokens
        (a 1-D array for a 1-D ``input_ids``).

    ``jax.jit(generate, static_argnames="max_new_tokens")`` compiles once per shape of the
    prompts (and per choice of greedy or sampled, and of which options are None); the
    model is an argument, so fine-tuned params need no recompilation. Called directly,
    ``generate`` compiles with :func:`decode_compiler_options` (on CPU, dots through Eigen);
    under your own ``jax.jit``, pass ``compiler_options=decode_compiler_options()`` to it.

    Example:
        >>> model = jaxonnx.load("tests/fixtures/generation/llama_optimum/model.onnx")
        >>> generate(model, jnp.array([[5, 6, 7]]), 4).shape
        (1, 7)
    """
    dims: dict[str, int] = {}
    if not isinstance(model, Model):
        dims = cache_dims_beside(model)
        tokens = int(np.prod(np.shape(input_ids)))  # the prompt step's, the most any step routes
        model = load_causal_lm(model, routed_tokens=tokens)
    layout = cache if isinstance(cache, CacheLayout) else find_cache(model, cache, dims=dims)
    if (
        isinstance(max_new_tokens, (bool, np.bool_))
        or not isinstance(max_new_tokens, (int, np.integer))
        or max_new_tokens < 1
    ):
        raise OnnxValidationError(f"`max_new_tokens` must be a positive int (static), got {max_new_tokens!r}.")
    input_ids, attention_mask, one_prompt = batched_prompts(input_ids, attention_mask)
    check_left_padded(attention_mask, layout)
    check_in_vocabulary(input_ids, attention_mask, vocabulary_size(model, layout))
    eos = None if eos_token_id is None else jnp.asarray(eos_token_id).reshape(-1)
    if pad_token_id is None:
        pad_token_id = 0 if eos is None else eos[0]
    # jax takes compiler options only on a top-level jit: under a transformation (a jit of
    # the caller's, vmap, grad) the enclosing computation's options decide.
    options = {} if trace_in_progress() else decode_compiler_options()
    compiled = compiled_decode_loop(tuple(sorted(options.items())))
    tokens = compiled(
        model,
        layout,
        input_ids,
        attention_mask,
        rng,
        temperature,
        top_k,
        top_p,
        eos,
        jnp.asarray(pad_token_id),
        int(max_new_tokens),
    )
    return tokens[0] if one_prompt else tokens
