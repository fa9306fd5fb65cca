"""com.microsoft BeamSearch: onnxruntime's beam search over a GPT-2 (decoder-only) or T5
(encoder-decoder) decoder subgraph, as its ``convert_generation`` tool writes it, in one
``lax.while_loop``.

The scores follow onnxruntime's CPU kernel step for step (``beam_search_impl_{gpt,t5}.h``,
``generation_device_helper.cc``'s ``ProcessLogits``, ``beam_search_scorer.cc``): log-softmax
of the last logits, the logits processors, the beam's score added, the best ``2 * num_beams``
over all beams of an entry, finished hypotheses kept sorted with the length penalty, an
entry done when it cannot improve (or at once with ``early_stopping``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import onnx

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers import search
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema

_Kind = onnx.defs.OpSchema.AttrType


_SCHEMA = contrib_schema(
    "BeamSearch",
    "Beam search for GPT-2 (model_type 0) and T5 (model_type 1) decoders held as subgraphs.",
    inputs=[
        ("input_ids", "F"),
        ("max_length", "I"),
        ("min_length", "I", "optional"),
        ("num_beams", "I"),
        ("num_return_sequences", "I"),
        ("length_penalty", "T", "optional"),
        ("repetition_penalty", "T", "optional"),
        ("vocab_mask", "M", "optional"),
        ("prefix_vocab_mask", "M", "optional"),
        ("attention_mask", "I", "optional"),
        ("decoder_input_ids", "I", "optional"),
        ("logits_processor", "I", "optional"),
        ("cross_qk_layer_head", "I", "optional"),
        ("extra_decoding_ids", "I", "optional"),
        ("temperature", "T", "optional"),
    ],
    outputs=[
        ("sequences", "I"),
        ("sequences_scores", "T", "optional"),
        ("scores", "T", "optional"),
        ("cross_qk", "V", "optional"),
        ("non_speech_probs", "T", "optional"),
    ],
    type_constraints=[
        ("T", ["tensor(float)", "tensor(float16)"]),
        ("F", ["tensor(int32)", "tensor(float)", "tensor(float16)"]),
        ("I", ["tensor(int32)"]),
        ("M", ["tensor(int32)"]),
        ("V", ["tensor(float)"]),
    ],
    attributes=[
        attribute_without_default("eos_token_id", _Kind.INT, "The end-of-sequence token.", required=True),
        attribute_without_default("pad_token_id", _Kind.INT, "The pad token.", required=True),
        attribute("decoder_start_token_id", -1, "The decoder's first token (T5)."),
        attribute("no_repeat_ngram_size", 0, "No n-gram of this size occurs twice (0: off)."),
        attribute("early_stopping", 0, "An entry is done once it has num_beams hypotheses."),
        attribute("model_type", 0, "0: GPT-2, 1: T5, 2: Whisper (not supported)."),
        attribute_without_default("encoder", _Kind.GRAPH, "The encoder (T5)."),
        attribute_without_default("init_decoder", _Kind.GRAPH, "The decoder of the first step (GPT-2)."),
        attribute_without_default("decoder", _Kind.GRAPH, "The decoder.", required=True),
        attribute("vocab_size", -1, "The vocabulary size where the logits are padded past it (-1: theirs)."),
        attribute("decoder_output_cross_qk", 0, "Whisper's cross attention output (not supported)."),
        attribute("no_speech_token", -1, "Whisper's no-speech token (not supported)."),
    ],
    differentiable=(),
)


@register(
    "BeamSearch",
    1,
    domain="com.microsoft",
    schema=_SCHEMA,
    folds=False,
    static=("max_length", "num_beams", "num_return_sequences"),
)
def beam_search(
    input_ids,
    max_length,
    min_length=None,
    num_beams=None,
    num_return_sequences=None,
    length_penalty=None,
    repetition_penalty=None,
    vocab_mask=None,
    prefix_vocab_mask=None,
    attention_mask=None,
    decoder_input_ids=None,
    logits_processor=None,
    cross_qk_layer_head=None,
    extra_decoding_ids=None,
    temperature=None,
    *,
    eos_token_id=None,
    pad_token_id=None,
    decoder=None,
    decoder_start_token_id=-1,
    no_repeat_ngram_size=0,
    early_stopping=0,
    model_type=0,
    encoder=None,
    init_decoder=None,
    vocab_size=-1,
    decoder_output_cross_qk=0,
    no_speech_token=-1,
    output_count=3,
):
    """Implements com.microsoft BeamSearch: the ``num_return_sequences`` best of ``num_beams``
    beams per prompt, with their scores, as onnxruntime's CPU kernel computes them.

    ``max_length``, ``num_beams`` and ``num_return_sequences`` decide the output shapes, so
    they must be known at trace time (a traced one raises ``StaticValueError``). The decoder
    runs on the whole token buffer at each step (see :mod:`jaxonnx.ops._helpers.search`), and
    the whole search is one ``lax.while_loop``.

    Args:
        input_ids: ``(batch, length)`` int32 prompts (GPT-2) or encoder inputs (T5).
        max_length, min_length, num_beams, num_return_sequences: one-element int32 tensors.
        length_penalty, repetition_penalty: one-element float tensors (default 1).
        vocab_mask: ``(vocab,)`` int32, 0 for tokens never generated.
        prefix_vocab_mask: ``(batch, vocab)`` int32, 0 for tokens the first step never picks.
        attention_mask: ``(batch, length)`` int32; by default 0 for pad tokens.
        eos_token_id, pad_token_id, decoder_start_token_id: the special tokens (T5 starts with the last).
        no_repeat_ngram_size, early_stopping, model_type, vocab_size: as onnxruntime's schema has them.
        decoder, encoder, init_decoder: the subgraphs, as functions (GPT-2's ``init_decoder``, where
            the file has one, runs the prompt, as in onnxruntime).

    Returns:
        ``sequences`` ``(batch, num_return_sequences, max_length)`` int32 (pad after each
        hypothesis), ``sequences_scores`` ``(batch, num_return_sequences)`` and ``scores``
        ``(max_length - length, batch, num_beams, vocab)`` (each step's candidate scores;
        steps after the search ended are 0).

    Example:
        >>> table = jnp.log(jnp.array([[.1, .6, .3], [.2, .1, .7], [.3, .3, .4]]))
        >>> def decoder(ids, positions, mask):  # a bigram model: the next token's logits from the last
        ...     return (table[ids],)
        >>> decoder.input_names, decoder.inputs = ("input_ids", "position_ids", "attention_mask"), ()
        >>> one = lambda n: np.array([n], np.int32)
        >>> sequences, scores, _ = jaxonnx.ops.beam_search(
        ...     np.array([[0]], np.int32), one(4), None, one(2), one(2), eos_token_id=2, pad_token_id=0,
        ...     decoder=decoder)
        >>> sequences  # the best: 0, 1, then the end token (hypotheses are padded with pad_token_id)
        Array([[[0, 1, 0, 0],
                [0, 1, 0, 1]]], dtype=int32)
    """
    for name, value in (
        ("decoder_input_ids", decoder_input_ids),
        ("logits_processor", logits_processor),
        ("cross_qk_layer_head", cross_qk_layer_head),
        ("extra_decoding_ids", extra_decoding_ids),
    ):
        if value is not None:
            raise OnnxValidationError(
                f"got the Whisper input `{name}`, which is not supported (model_type 0 and 1 are)."
            )
    if model_type not in (0, 1):
        raise OnnxValidationError(f"supports `model_type` 0 (GPT-2) and 1 (T5), got {model_type}.")
    if decoder_output_cross_qk:
        raise OnnxValidationError("does not support `decoder_output_cross_qk` (Whisper).")
    max_length = search.static_int(max_length, "max_length")
    num_beams = search.static_int(num_beams, "num_beams")
    returned = search.static_int(num_return_sequences, "num_return_sequences")
    if not jnp.issubdtype(jnp.asarray(input_ids).dtype, jnp.integer):
        raise OnnxValidationError(
            f"needs int32 `input_ids` for model_type {model_type} (float features are "
            f"Whisper's), got {jnp.asarray(input_ids).dtype}."
        )
    input_ids = jnp.asarray(input_ids).astype(jnp.int32)
    batch, prompt_length = input_ids.shape
    if num_beams < 1:
        raise OnnxValidationError(f"needs `num_beams` >= 1, got {num_beams}.")
    if not 1 <= returned <= num_beams:
        raise OnnxValidationError(f"needs 1 <= `num_return_sequences` <= `num_beams`, got {returned} and {num_beams}.")
    if model_type == 0 and max_length <= prompt_length:
        raise OnnxValidationError(f"needs `max_length` ({max_length}) above the prompt's length ({prompt_length}).")
    rows = batch * num_beams
    min_length = None if min_length is None else search.scalar(min_length, 0, jnp.int32)
    length_penalty = search.scalar(length_penalty, 1.0)
    repetition_penalty = None if repetition_penalty is None else search.scalar(repetition_penalty, 1.0)
    temperature = None if temperature is None else search.scalar(temperature, 1.0)

    if model_type == 0:
        mask, positions, real_lengths = search.gpt_prompt_inputs(input_ids, attention_mask, pad_token_id)
        expand = lambda x: jnp.repeat(x, num_beams, axis=0)  # noqa: E731
        stepper = search.GptDecoder(
            decoder,
            expand(input_ids),
            expand(mask),
            expand(positions),
            expand(real_lengths),
            max_length,
            vocab_size,
            first_decoder=init_decoder,
        )
        start, start_length = input_ids, prompt_length
    else:
        if encoder is None:
            raise OnnxValidationError("needs the `encoder` subgraph for model_type 1 (T5).")
        if decoder_start_token_id < 0:
            raise OnnxValidationError(
                f"needs `decoder_start_token_id` for model_type 1 (T5), got {decoder_start_token_id}."
            )
        encoder_mask = search.t5_encoder_mask(input_ids, attention_mask, pad_token_id)
        cross = [jnp.repeat(value, num_beams, axis=0) for value in encoder(input_ids, encoder_mask)]
        stepper = search.T5Decoder(decoder, jnp.repeat(encoder_mask, num_beams, axis=0), cross, vocab_size)
        start, start_length = jnp.full((batch, 1), decoder_start_token_id, jnp.int32), 1

    tokens = jnp.full((rows, max_length), pad_token_id, jnp.int32)
    tokens = tokens.at[:, :start_length].set(jnp.repeat(start, num_beams, axis=0))
    logits, caches = stepper.start() if model_type == 0 else stepper.start(tokens, jnp.int32(start_length))
    vocab = logits.shape[-1]
    steps = max_length - start_length

    def scored(logits, tokens, length, step, beam_scores):
        scores = search.log_softmax(logits)
        scores = search.process_scores(
            scores,
            tokens,
            length,
            step,
            batch_size=batch,
            eos_token_id=eos_token_id,
            min_length=min_length,
            repetition_penalty=repetition_penalty,
            no_repeat_ngram_size=no_repeat_ngram_size,
            vocab_mask=vocab_mask,
            prefix_vocab_mask=prefix_vocab_mask,
            temperature=temperature,
        )
        return scores + beam_scores[:, None]

    def body(state):
        tokens, length, step, beam_scores, hyp_tokens, hyp_scores, hyp_used, done, all_scores, logits, caches = state
        step = step + 1
        scores = scored(logits, tokens, length, step, beam_scores)
        all_scores = all_scores.at[step - 1].set(scores.reshape(batch, num_beams, vocab))
        top_scores, top_index = jax.lax.top_k(scores.reshape(batch, num_beams * vocab), 2 * num_beams)
        top_beams, top_tokens = top_index // vocab, (top_index % vocab).astype(jnp.int32)
        next_scores, next_tokens, next_rows, hyp_tokens, hyp_scores, hyp_used, done = _scorer_process(
            tokens,
            length,
            top_scores,
            top_tokens,
            top_beams,
            hyp_tokens,
            hyp_scores,
            hyp_used,
            done,
            num_beams=num_beams,
            eos_token_id=eos_token_id,
            pad_token_id=pad_token_id,
            length_penalty=length_penalty,
            early_stopping=bool(early_stopping),
        )
        tokens = tokens[next_rows]
        tokens = jax.lax.dynamic_update_slice_in_dim(tokens, next_tokens[:, None], length, axis=1)
        # The next step's logits, each row continuing its source beam's cache (on the last
        # iteration, one decoder call more than onnxruntime makes).
        logits, caches = stepper.step(stepper.reorder(caches, next_rows), tokens, length + 1)
        return (
            tokens,
            length + 1,
            step,
            next_scores,
            hyp_tokens,
            hyp_scores,
            hyp_used,
            done,
            all_scores,
            logits,
            caches,
        )

    def running(state):
        length, done = state[1], state[7]
        return (length < max_length) & ~jnp.all(done)

    state = (
        tokens,
        jnp.int32(start_length),
        jnp.int32(0),
        search.first_beam_scores(batch, num_beams),
        jnp.full((batch, num_beams, max_length), pad_token_id, jnp.int32),
        jnp.zeros((batch, num_beams), jnp.float32),
        jnp.zeros((batch,), jnp.int32),
        jnp.zeros((batch,), bool),
        jnp.zeros((steps, batch, num_beams, vocab), jnp.float32),
        logits,
        caches,
    )
    tokens, length, _, beam_scores, hyp_tokens, hyp_scores, hyp_used, done, all_scores, _, _ = jax.lax.while_loop(
        running, body, state
    )

    # Finalize: every beam of an entry not done yet becomes a hypothesis, in beam order.
    by_entry = tokens.reshape(batch, num_beams, max_length)
    final = search.length_normalized(beam_scores.reshape(batch, num_beams), length, length_penalty)
    for beam in range(num_beams):
        hyp_tokens, hyp_scores, hyp_used = search.add_hypotheses(
            hyp_tokens, hyp_scores, hyp_used, _up_to(by_entry[:, beam], length, pad_token_id), final[:, beam], ~done
        )
    outputs = (hyp_tokens[:, :returned], hyp_scores[:, :returned], all_scores)
    wanted = 3 if output_count is None else output_count  # the Whisper outputs after these are never made
    return outputs[: max(1, min(wanted, 3))] + (None,) * max(0, wanted - 3)


def _up_to(rows, length, pad_token_id: int):
    """Each row's tokens before ``length``, pad after (a hypothesis is copied at its length)."""
    return jnp.where(jnp.arange(rows.shape[-1], dtype=jnp.int32)[None, :] < length, rows, pad_token_id)


def _scorer_process(
    tokens,
    length,
    top_scores,
    top_tokens,
    top_beams,
    hyp_tokens,
    hyp_scores,
    hyp_used,
    done,
    *,
    num_beams: int,
    eos_token_id: int,
    pad_token_id: int,
    length_penalty,
    early_stopping: bool,
):
    """``BeamSearchScorer::Process`` for every batch entry at once: the candidates in order,
    an end token among the first ``num_beams`` closing a hypothesis, the others filling the
    next beams until there are ``num_beams``; then whether each entry is done."""
    batch, candidates = top_scores.shape
    entry = jnp.arange(batch, dtype=jnp.int32)[:, None]
    is_eos = (top_tokens == eos_token_id) if eos_token_id >= 0 else jnp.zeros_like(top_tokens, bool)
    kept = ~is_eos
    kept_count = kept.astype(jnp.int32)
    kept_before = jnp.cumsum(kept_count, axis=1, dtype=jnp.int32) - kept_count
    reached = kept_before < num_beams  # the candidates the scorer's loop gets to before its beams are full
    slot_of = kept[:, :, None] & (kept_before[:, :, None] == jnp.arange(num_beams, dtype=jnp.int32)[None, None, :])
    chosen = jnp.argmax(slot_of, axis=1)  # (batch, num_beams): the candidate filling each next beam
    next_scores = jnp.take_along_axis(top_scores, chosen, axis=1)
    next_tokens = jnp.take_along_axis(top_tokens, chosen, axis=1)
    next_rows = entry * num_beams + jnp.take_along_axis(top_beams, chosen, axis=1)

    by_entry = tokens.reshape(batch, num_beams, -1)
    for j in range(num_beams):  # only an end token among the first num_beams candidates closes a hypothesis
        closes = is_eos[:, j] & reached[:, j] & ~done
        rows = _up_to(by_entry[jnp.arange(batch, dtype=jnp.int32), top_beams[:, j]], length, pad_token_id)
        score = search.length_normalized(top_scores[:, j], length, length_penalty)
        hyp_tokens, hyp_scores, hyp_used = search.add_hypotheses(hyp_tokens, hyp_scores, hyp_used, rows, score, closes)

    # onnxruntime reads the best candidate score of entry b from next_scores[b * num_beams:][:2 * num_beams]
    # of the flat (batch * 2 * num_beams) candidates; the same window is read here.
    window = top_scores.reshape(-1)[entry * num_beams + jnp.arange(candidates, dtype=jnp.int32)[None, :]]
    best = jnp.max(window, axis=1)
    can_improve = hyp_scores[:, -1] < search.length_normalized(best, length, length_penalty)
    finished = (hyp_used == num_beams) & (jnp.asarray(early_stopping) | ~can_improve)
    # An entry already done before this step feeds score 0, the pad token and row 0 onward.
    was_done = done[:, None]
    next_scores = jnp.where(was_done, 0.0, next_scores).reshape(-1)
    next_tokens = jnp.where(was_done, pad_token_id, next_tokens).reshape(-1)
    next_rows = jnp.where(was_done, 0, next_rows).reshape(-1)
    return next_scores, next_tokens, next_rows, hyp_tokens, hyp_scores, hyp_used, done | finished


__all__ = ["beam_search"]
