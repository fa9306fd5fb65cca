"""com.microsoft Sampling: onnxruntime's top-p sampling over a GPT-2 decoder subgraph, as its
``convert_generation`` tool writes it, in one ``lax.while_loop``.

The logits processors (temperature among them) and the top-p filter are onnxruntime's; the
draw comes from the ``jax.random`` key the caller gives (``model(..., rng=key)``), so the
tokens cannot equal onnxruntime's, whose generator is its own. With a tiny ``top_p`` only the most likely token
remains, and the result is GreedySearch's.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import onnx

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers import search
from jaxonnx.ops._helpers.random import draw_key
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema

_Kind = onnx.defs.OpSchema.AttrType


_SCHEMA = contrib_schema(
    "Sampling",
    "Top-p sampling for a GPT-2 decoder held as a subgraph.",
    inputs=[
        ("input_ids", "I"),
        ("max_length", "I"),
        ("min_length", "I", "optional"),
        ("repetition_penalty", "T", "optional"),
        ("vocab_mask", "I", "optional"),
        ("prefix_vocab_mask", "I", "optional"),
        ("attention_mask", "I", "optional"),
        ("presence_mask", "I", "optional"),
        ("seed", "I", "optional"),
    ],
    outputs=[("sequences", "I"), ("filtered_logits", "T", "optional")],
    type_constraints=[("T", ["tensor(float)"]), ("I", ["tensor(int32)"])],
    attributes=[
        attribute_without_default("eos_token_id", _Kind.INT, "The end-of-sequence token.", required=True),
        attribute_without_default("pad_token_id", _Kind.INT, "The pad token.", required=True),
        attribute("decoder_start_token_id", -1, "The decoder's first token (encoder-decoder models)."),
        attribute("no_repeat_ngram_size", 0, "No n-gram of this size occurs twice (0: off)."),
        attribute("temperature", 1.0, "Divides the logits before sampling."),
        attribute("top_p", 0.0, "The probability mass kept (0: the most likely token only, 1: all)."),
        attribute("filter_value", float("-inf"), "The score of a filtered-out token."),
        attribute("min_tokens_to_keep", 1, "Tokens top-p always keeps."),
        attribute("presence_penalty", 0.0, "Subtracted where presence_mask is 1."),
        attribute("custom", 0, "onnxruntime's custom sampling (not supported)."),
        attribute("model_type", 0, "0: GPT-2 (the only one onnxruntime's sampling runs)."),
        attribute_without_default("encoder", _Kind.GRAPH, "The encoder (not used by GPT-2)."),
        attribute_without_default("init_decoder", _Kind.GRAPH, "The decoder of the first step."),
        attribute_without_default("decoder", _Kind.GRAPH, "The decoder.", required=True),
        attribute("vocab_size", -1, "The vocabulary size where the logits are padded past it (-1: theirs)."),
    ],
    differentiable=(),
)


@register(
    "Sampling",
    1,
    domain="com.microsoft",
    schema=_SCHEMA,
    folds=False,
    static=("max_length",),
)
def sampling(
    input_ids,
    max_length,
    min_length=None,
    repetition_penalty=None,
    vocab_mask=None,
    prefix_vocab_mask=None,
    attention_mask=None,
    presence_mask=None,
    seed=None,
    *,
    eos_token_id=None,
    pad_token_id=None,
    decoder=None,
    decoder_start_token_id=-1,
    no_repeat_ngram_size=0,
    temperature=1.0,
    top_p=0.0,
    filter_value=float("-inf"),
    min_tokens_to_keep=1,
    presence_penalty=0.0,
    custom=0,
    model_type=0,
    encoder=None,
    init_decoder=None,
    vocab_size=-1,
    rng=None,
    output_count=1,
):
    """Implements com.microsoft Sampling: each next token drawn from the processed logits,
    after temperature and top-p filtering, until the end token or ``max_length``.

    The draw uses ``rng`` (the key of ``model(..., rng=key)``, folded per step) or, given
    eagerly without one, the ``seed`` input; it cannot reproduce onnxruntime's generator.
    ``max_length`` decides the output shape and must be known at trace time.

    Args:
        input_ids: ``(batch, length)`` int32 prompts.
        max_length, min_length, repetition_penalty: as GreedySearch has them.
        vocab_mask, prefix_vocab_mask, attention_mask: as GreedySearch has them.
        presence_mask: ``(batch, vocab)`` int32; ``presence_penalty`` is subtracted where 1.
        seed: a one-element int32 seed, used when no ``rng`` key is given.
        temperature, top_p, filter_value, min_tokens_to_keep: the sampling's settings.
        decoder: the GPT-2 decoder, as a function of ``(input_ids, position_ids,
            attention_mask, *past)``.

    Returns:
        ``(batch, max_length)`` int32 sequences (the optional ``filtered_logits`` output is
        not made: None).

    Example:
        >>> table = jnp.log(jnp.array([[.1, .6, .3], [.2, .1, .7], [.3, .3, .4]]))
        >>> def decoder(ids, positions, mask):  # a bigram model: the next token's logits from the last
        ...     return (table[ids],)
        >>> decoder.input_names, decoder.inputs = ("input_ids", "position_ids", "attention_mask"), ()
        >>> tokens = jaxonnx.ops.sampling(np.array([[0]], np.int32), np.array([4], np.int32), eos_token_id=2,
        ...                               pad_token_id=0, decoder=decoder, top_p=0.01, rng=jax.random.key(0))
        >>> tokens  # top_p 0.01 keeps only the most likely token: greedy
        Array([[0, 1, 0, 0]], dtype=int32)
    """
    del decoder_start_token_id, encoder  # GPT-2 only: no encoder, no decoder start token
    if custom:
        raise OnnxValidationError("does not support onnxruntime's `custom` sampling (custom=1).")
    if rng is None and seed is not None:
        rng = jax.random.key(search.static_int(seed, "seed"))
    key = draw_key(None, rng)
    min_length = None if min_length is None else search.scalar(min_length, 0, jnp.int32)
    repetition_penalty = None if repetition_penalty is None else search.scalar(repetition_penalty, 1.0)
    batch = jnp.shape(input_ids)[0]

    # onnxruntime's logits processors, in its order (search.process_scores), bound to this node's settings.
    processors = functools.partial(
        search.process_scores,
        batch_size=batch,
        eos_token_id=eos_token_id,
        min_length=min_length,
        repetition_penalty=repetition_penalty,
        no_repeat_ngram_size=no_repeat_ngram_size,
        vocab_mask=vocab_mask,
        prefix_vocab_mask=prefix_vocab_mask,
        temperature=jnp.float32(temperature),
        presence_mask=presence_mask,
        presence_penalty=presence_penalty,
    )

    def draw(scores, step):
        scores = search.top_p_filter(scores, top_p, filter_value, min_tokens_to_keep)
        return jax.random.categorical(jax.random.fold_in(key, step), scores, axis=-1)

    sequences = search.greedy_loop(
        input_ids,
        search.static_int(max_length, "max_length"),
        draw,
        decoder=decoder,
        model_type=model_type,
        attention_mask=attention_mask,
        pad_token_id=pad_token_id,
        eos_token_id=eos_token_id,
        vocab_size=vocab_size,
        processors=processors,
        init_decoder=init_decoder,
    )
    if output_count is None or output_count == 1:
        return sequences
    return (sequences,) + (None,) * (output_count - 1)


__all__ = ["sampling"]
