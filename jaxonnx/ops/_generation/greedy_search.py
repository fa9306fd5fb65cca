"""com.microsoft GreedySearch: onnxruntime's greedy decoding over a GPT-2 decoder subgraph, as
its ``convert_generation`` tool writes it, in one ``lax.while_loop``.

Each step takes the token of the largest processed logit (no softmax: onnxruntime's
``GreedySearchProcessLogits`` argmaxes the logits after its processors), as its CPU kernel does.
"""

from __future__ import annotations

import functools

import jax.numpy as jnp
import onnx

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers import search
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema

_Kind = onnx.defs.OpSchema.AttrType


_SCHEMA = contrib_schema(
    "GreedySearch",
    "Greedy decoding for a GPT-2 decoder held as a subgraph.",
    inputs=[
        ("input_ids", "I"),
        ("max_length", "I"),
        ("min_length", "I", "optional"),
        ("repetition_penalty", "T", "optional"),
        ("vocab_mask", "I", "optional"),
        ("prefix_vocab_mask", "I", "optional"),
        ("attention_mask", "I", "optional"),
    ],
    outputs=[("sequences", "I")],
    type_constraints=[("T", ["tensor(float)"]), ("I", ["tensor(int32)"])],
    attributes=[
        attribute_without_default("eos_token_id", _Kind.INT, "The end-of-sequence token.", required=True),
        attribute_without_default("pad_token_id", _Kind.INT, "The pad token.", required=True),
        attribute("decoder_start_token_id", -1, "The decoder's first token (encoder-decoder models)."),
        attribute("no_repeat_ngram_size", 0, "No n-gram of this size occurs twice (0: off)."),
        attribute("model_type", 0, "0: GPT-2 (the only one onnxruntime's greedy search runs)."),
        attribute_without_default("encoder", _Kind.GRAPH, "The encoder (not used by GPT-2)."),
        attribute_without_default("init_decoder", _Kind.GRAPH, "The decoder of the first step."),
        attribute_without_default("decoder", _Kind.GRAPH, "The decoder.", required=True),
        attribute("vocab_size", -1, "The vocabulary size where the logits are padded past it (-1: theirs)."),
    ],
    differentiable=(),
)


@register("GreedySearch", 1, domain="com.microsoft", schema=_SCHEMA, folds=False, static=("max_length",))
def greedy_search(
    input_ids,
    max_length,
    min_length=None,
    repetition_penalty=None,
    vocab_mask=None,
    prefix_vocab_mask=None,
    attention_mask=None,
    *,
    eos_token_id=None,
    pad_token_id=None,
    decoder=None,
    decoder_start_token_id=-1,
    no_repeat_ngram_size=0,
    model_type=0,
    encoder=None,
    init_decoder=None,
    vocab_size=-1,
):
    """Implements com.microsoft GreedySearch: the most likely next token at every step, after
    onnxruntime's logits processors, until the end token or ``max_length``.

    ``max_length`` decides the output shape, so it must be known at trace time (a traced one
    raises ``StaticValueError``); the loop is one ``lax.while_loop``.

    Args:
        input_ids: ``(batch, length)`` int32 prompts.
        max_length, min_length: one-element int32 tensors.
        repetition_penalty: a one-element float tensor (default 1).
        vocab_mask: ``(vocab,)`` int32, 0 for tokens never generated.
        prefix_vocab_mask: ``(batch, vocab)`` int32, 0 for tokens the first step never picks.
        attention_mask: ``(batch, length)`` int32; by default 0 for pad tokens.
        eos_token_id, pad_token_id: the end and pad tokens.
        no_repeat_ngram_size, model_type, vocab_size: as onnxruntime's schema has them.
        decoder: the GPT-2 decoder, as a function of ``(input_ids, position_ids,
            attention_mask, *past)``.

    Returns:
        ``(batch, max_length)`` int32 sequences, the pad token after each one's end.

    Example:
        >>> table = jnp.log(jnp.array([[.1, .6, .3], [.2, .1, .7], [.3, .3, .4]]))
        >>> def decoder(ids, positions, mask):  # a bigram model: the next token's logits from the last
        ...     return (table[ids],)
        >>> decoder.input_names, decoder.inputs = ("input_ids", "position_ids", "attention_mask"), ()
        >>> jaxonnx.ops.greedy_search(np.array([[0]], np.int32), np.array([4], np.int32), eos_token_id=2,
        ...                           pad_token_id=0, decoder=decoder)
        Array([[0, 1, 0, 0]], dtype=int32)
    """
    del decoder_start_token_id, encoder  # GPT-2 only: no encoder, no decoder start token
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
    )

    return search.greedy_loop(
        input_ids,
        search.static_int(max_length, "max_length"),
        lambda scores, step: jnp.argmax(scores, axis=-1),
        decoder=decoder,
        model_type=model_type,
        attention_mask=attention_mask,
        pad_token_id=pad_token_id,
        eos_token_id=eos_token_id,
        vocab_size=vocab_size,
        processors=processors,
        init_decoder=init_decoder,
    )


__all__ = ["greedy_search"]
