"""What onnxruntime's generation ops (com.microsoft BeamSearch, GreedySearch, Sampling) share:
the decoder calls with fixed shapes, the logits processors and the beam scorer,
each written as onnxruntime's CPU kernels compute them
(``onnxruntime/contrib_ops/cpu/transformers/``: ``generation_device_helper.cc``,
``logits_processor.{h,cc}``, ``beam_search_scorer.cc``), with fixed shapes so that a whole
search is one ``lax.while_loop``. Registers no op.

A GPT-2 decoder runs as onnxruntime runs it, the prompt first, then one token per call
against a key/value cache held in fixed ``max_length`` buffers (:class:`GptDecoder`). A T5
decoder runs on the whole ``(rows, max_length)`` token buffer at every step
(:class:`T5Decoder`): its relative position bias is computed from its cache's length, so a
fixed-size cache would change its results, while the decoder is causal, so the logits at
the last real position are those of an incremental call.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._errors import OnnxValidationError

#: What onnxruntime writes for a token a processor rules out (``numeric_limits<float>::lowest()``).
LOWEST = float(np.finfo(np.float32).min)
#: The score onnxruntime gives every beam but the first before the first step.
_OTHER_BEAMS_START = -1e9


def static_int(value, name: str, default: int | None = None) -> int:
    """The one-element input ``name`` (static: the registry gives it as numpy) as an int."""
    if value is None:
        if default is None:
            raise OnnxValidationError(f"needs the input `{name}`.")
        return default
    array = np.asarray(value)
    if array.size != 1:
        raise OnnxValidationError(f"needs a one-element `{name}`, got shape {tuple(array.shape)}.")
    return int(array.reshape(()))


def scalar(value, default: float, dtype=jnp.float32):
    """An optional one-element input as a scalar (traced or not), or ``default``."""
    if value is None:
        return jnp.asarray(default, dtype)
    return jnp.asarray(value, dtype).reshape(())


def decoder_inputs_declared(decoder, first_past: int) -> list[tuple[int, ...]]:
    """The declared shapes of a decoder's cache inputs (``first_past`` on), which must give the
    head count and head size as numbers: GPT-2's ``[2, batch, heads, past, head]`` and T5's
    ``[batch, heads, past, head]``, as convert_generation declares them."""
    shapes = []
    # A decoder given as a Python function may declare nothing past its token inputs: no cache.
    for name, declared in zip(decoder.input_names[first_past:], list(decoder.inputs or ())[first_past:]):
        dims = list(getattr(declared, "shape", None) or [])
        heads_and_size = (dims[2], dims[4]) if len(dims) == 5 else (dims[1], dims[3]) if len(dims) == 4 else ()
        if not heads_and_size or not all(isinstance(d, int) for d in heads_and_size):
            raise OnnxValidationError(
                f"needs the decoder's cache input {name!r} declared with a numeric head count and head size "
                f"(onnxruntime's convert_generation declares them), got shape {dims}."
            )
        shapes.append(tuple(dims))
    return shapes


def empty_cache(dims: tuple, rows: int, dtype) -> jax.Array:
    """A zero-length cache of the declared layout: ``[2, rows, H, 0, D]`` or ``[rows, H, 0, D]``."""
    if len(dims) == 5:
        return jnp.zeros((dims[0], rows, dims[2], 0, dims[4]), dtype)
    return jnp.zeros((rows, dims[1], 0, dims[3]), dtype)


def gpt_prompt_inputs(input_ids, attention_mask, pad_token_id: int):
    """The attention mask and position ids of a GPT-2 prompt as onnxruntime makes them
    (``CreateGptInputs``): a pad token has position 0 and, without an ``attention_mask``
    input, mask 0; every other token counts up from 0. Also each row's count of non-pad tokens."""
    real = input_ids != pad_token_id
    positions = jnp.where(real, jnp.cumsum(real, axis=1, dtype=jnp.int32) - 1, 0)
    mask = real.astype(jnp.int32) if attention_mask is None else jnp.asarray(attention_mask, jnp.int32)
    return mask, positions, jnp.sum(real, axis=1, dtype=jnp.int32)


def t5_encoder_mask(input_ids, attention_mask, pad_token_id: int):
    """The encoder's attention mask as onnxruntime makes it (``CreateEncoderInputs``): the
    given one, else 0 only for left padding (a pad token before the first other token)."""
    if attention_mask is not None:
        return jnp.asarray(attention_mask, jnp.int32)
    seen = jnp.cumsum(input_ids != pad_token_id, axis=1, dtype=jnp.int32) > 0
    return seen.astype(jnp.int32)


class GptDecoder:
    """A GPT-2 decoder subgraph stepped as onnxruntime steps it: the prompt in one call, then
    one token per call against a key/value cache. The cache is a fixed ``max_length`` buffer
    per layer (slot ``t`` holds token ``t``'s keys and values), and the decoder's
    ``attention_mask`` leaves the empty slots out (onnxruntime's Attention adds -10000 there,
    so their weights are exactly 0), so every step has the same shapes. GPT-2's positions are
    its ``position_ids``, not slots, so where a key sits in the buffer does not change it."""

    def __init__(
        self,
        decoder,
        input_ids,
        prompt_mask,
        prompt_positions,
        real_lengths,
        max_length: int,
        vocab_size: int | None,
        first_decoder=None,
    ):
        self.decoder, self.vocab_size, self.max_length = decoder, vocab_size, max_length
        # convert_generation may add an init_decoder for the prompt's call: the same network and inputs.
        self.first_decoder = decoder if first_decoder is None else first_decoder
        self.prompt_length = input_ids.shape[1]
        self.input_ids, self.prompt_mask, self.prompt_positions = input_ids, prompt_mask, prompt_positions
        self.real_lengths = real_lengths
        self.dims = decoder_inputs_declared(decoder, 3)

    def start(self):
        """The prompt's last logits and the caches holding its keys and values."""
        rows = self.input_ids.shape[0]
        empty = [empty_cache(d, rows, _float_type(self.decoder, 3 + i)) for i, d in enumerate(self.dims)]
        logits, *presents = self.first_decoder(self.input_ids, self.prompt_positions, self.prompt_mask, *empty)
        caches = tuple(
            jnp.pad(p, [(0, 0)] * (p.ndim - 2) + [(0, self.max_length - p.shape[-2]), (0, 0)]) for p in presents
        )
        return _last_logits(logits, jnp.int32(logits.shape[1]), self.vocab_size), caches

    def step(self, caches, tokens, length):
        """The logits after token ``length - 1`` of ``tokens``, its keys and values written into slot ``length - 1``."""
        rows, max_length = tokens.shape
        last = length - 1
        slot = jnp.arange(max_length, dtype=jnp.int32)[None, :]
        prompt = jnp.pad(self.prompt_mask, ((0, 0), (0, max_length - self.prompt_length)))
        filled = jnp.where((slot < self.prompt_length) & (slot < last), prompt, (slot < last).astype(prompt.dtype))
        mask = jnp.concatenate([filled, jnp.ones((rows, 1), filled.dtype)], axis=1).astype(jnp.int32)
        token = jax.lax.dynamic_slice_in_dim(tokens, last, 1, axis=1)
        position = (self.real_lengths + (last - self.prompt_length))[:, None].astype(jnp.int32)
        logits, *presents = self.decoder(token, position, mask, *caches)
        caches = tuple(
            jax.lax.dynamic_update_slice_in_dim(c, p[..., -1:, :].astype(c.dtype), last, axis=c.ndim - 2)
            for c, p in zip(caches, presents)
        )
        return _last_logits(logits, jnp.int32(1), self.vocab_size), caches

    def reorder(self, caches, rows):
        """The caches of the rows ``rows`` (beam search's ``PickGptPastState``)."""
        return tuple(jnp.take(c, rows, axis=1 if c.ndim == 5 else 0) for c in caches)


class T5Decoder:
    """A T5 decoder subgraph run on the whole decoder token buffer at every step, with no
    self-attention cache (see the module docstring) and the encoder's cross-attention keys
    and values."""

    def __init__(self, decoder, encoder_mask, cross, vocab_size: int | None):
        self.decoder, self.encoder_mask, self.cross, self.vocab_size = decoder, encoder_mask, cross, vocab_size

    def start(self, tokens, length):
        return self.step((), tokens, length)

    def step(self, caches, tokens, length):
        rows = tokens.shape[0]
        self_count = len(self.decoder.input_names) - 2 - len(self.cross)
        dims = decoder_inputs_declared(self.decoder, 2)[:self_count]
        empty = [empty_cache(d, rows, _float_type(self.decoder, 2 + i)) for i, d in enumerate(dims)]
        logits = self.decoder(tokens.astype(jnp.int32), self.encoder_mask, *empty, *self.cross)[0]
        return _last_logits(logits, length, self.vocab_size), ()

    def reorder(self, caches, rows):
        return caches


def _float_type(graph, index: int):
    dtype = getattr(graph.inputs[index], "dtype", None)
    return np.float32 if dtype is None else dtype


def _last_logits(logits, length, vocab_size):
    last = jax.lax.dynamic_index_in_dim(logits, length - 1, axis=1, keepdims=False).astype(jnp.float32)
    return last if vocab_size is None or vocab_size < 0 else last[:, :vocab_size]


def log_softmax(scores):
    """``SoftmaxCPU(..., logarithmic=true)``: ``x - max - log(sum(exp(x - max)))`` in float32."""
    shifted = scores - jnp.max(scores, axis=-1, keepdims=True)
    return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=-1, keepdims=True))


def process_scores(
    scores,
    tokens,
    length,
    step,
    *,
    batch_size: int,
    eos_token_id: int,
    min_length,
    repetition_penalty,
    no_repeat_ngram_size: int,
    vocab_mask,
    prefix_vocab_mask,
    temperature=None,
    presence_mask=None,
    presence_penalty: float = 0.0,
):
    """onnxruntime's logits processors in its order (``LogitsProcessorInitImpl``) on
    ``scores`` ``(rows, vocab)``, ``tokens[:, :length]`` being each row's sequence so far and
    ``step`` the 1-based iteration (the prefix mask applies to the first only)."""
    rows, vocab = scores.shape
    max_length = tokens.shape[1]
    in_sequence = jnp.arange(max_length, dtype=jnp.int32)[None, :] < length
    if repetition_penalty is not None:
        seen = (
            jnp.zeros((rows, vocab), bool)
            .at[jnp.arange(rows, dtype=jnp.int32)[:, None], tokens]
            .max(in_sequence, mode="drop")
        )
        penalized = jnp.where(scores < 0, scores * repetition_penalty, scores / repetition_penalty)
        scores = jnp.where(seen & (repetition_penalty != 1.0), penalized, scores)
    if no_repeat_ngram_size > 0:
        scores = _block_repeated_ngrams(scores, tokens, length, no_repeat_ngram_size)
    if vocab_mask is not None:
        scores = jnp.where(jnp.asarray(vocab_mask)[None, :vocab] == 0, LOWEST, scores)
    if prefix_vocab_mask is not None:
        per_row = jnp.repeat(jnp.asarray(prefix_vocab_mask)[:, :vocab], rows // batch_size, axis=0)
        scores = jnp.where((step <= 1) & (per_row == 0), LOWEST, scores)
    if min_length is not None:
        too_short = (length < min_length) & (jnp.arange(vocab, dtype=jnp.int32) == eos_token_id)[None, :]
        scores = jnp.where(too_short, LOWEST, scores)
    if temperature is not None:
        scores = jnp.where((temperature > 0) & (temperature != 1.0), scores / temperature, scores)
    if presence_mask is not None and presence_penalty != 0.0:
        scores = scores - jnp.asarray(presence_mask, scores.dtype).reshape(rows, vocab) * presence_penalty
    return scores


def _block_repeated_ngrams(scores, tokens, length, size: int):
    """``NoRepeatNGramLogitsProcessor``: the token that would complete an n-gram already in the
    sequence gets ``LOWEST`` (nothing when the sequence is shorter than ``size``)."""
    rows, vocab = scores.shape
    max_length = tokens.shape[1]
    prefix_length = size - 1
    starts = jnp.arange(max(max_length - size + 1, 0), dtype=jnp.int32)
    if starts.size == 0:
        return scores
    prefix = (
        jnp.stack(
            [
                jax.lax.dynamic_index_in_dim(tokens, length - prefix_length + k, axis=1, keepdims=False)
                for k in range(prefix_length)
            ],
            axis=1,
        )
        if prefix_length
        else jnp.zeros((rows, 0), tokens.dtype)
    )
    windows = (
        jnp.stack([tokens[:, k : k + starts.size] for k in range(prefix_length)], axis=2)
        if prefix_length
        else jnp.zeros((rows, starts.size, 0), tokens.dtype)
    )
    matches = jnp.all(windows == prefix[:, None, :], axis=2) & (starts[None, :] <= length - size)
    completing = tokens[:, prefix_length : prefix_length + starts.size]
    blocked = (
        jnp.zeros((rows, vocab), bool)
        .at[jnp.arange(rows, dtype=jnp.int32)[:, None], completing]
        .max(matches, mode="drop")
    )
    return jnp.where(blocked & (size <= length), LOWEST, scores)


def first_beam_scores(batch_size: int, num_beams: int):
    """``InitBeamState``: 0 for the first beam of each batch entry, -1e9 for the others, so
    that the beams of one entry do not all pick the same tokens."""
    start = np.full((batch_size, num_beams), _OTHER_BEAMS_START, np.float32)
    start[:, 0] = 0.0
    return jnp.asarray(start.reshape(-1))


def add_hypotheses(hyp_tokens, hyp_scores, hyp_used, rows, scores, take):
    """``BeamHypotheses::Add`` for every batch entry at once where ``take``: ``hyp_scores``
    ``(batch, beams)`` kept sorted, best first; a new hypothesis goes after those scoring at
    least as much, and a full list takes it only when it beats the worst."""
    beams = hyp_scores.shape[1]
    full = hyp_used == beams
    take = take & ~(full & (scores <= hyp_scores[:, -1]))
    slot = jnp.arange(beams, dtype=jnp.int32)[None, :]
    filled = slot < hyp_used[:, None]
    position = jnp.sum(filled & (hyp_scores >= scores[:, None]), axis=1, dtype=jnp.int32)[:, None]
    shifted_scores = jnp.concatenate([hyp_scores[:, :1], hyp_scores[:, :-1]], axis=1)
    shifted_tokens = jnp.concatenate([hyp_tokens[:, :1], hyp_tokens[:, :-1]], axis=1)
    new_scores = jnp.where(slot < position, hyp_scores, jnp.where(slot == position, scores[:, None], shifted_scores))
    at = (slot == position)[:, :, None]
    before = (slot < position)[:, :, None]
    new_tokens = jnp.where(before, hyp_tokens, jnp.where(at, rows[:, None, :], shifted_tokens))
    hyp_scores = jnp.where(take[:, None], new_scores, hyp_scores)
    hyp_tokens = jnp.where(take[:, None, None], new_tokens, hyp_tokens)
    hyp_used = jnp.where(take, jnp.minimum(hyp_used + 1, beams), hyp_used)
    return hyp_tokens, hyp_scores, hyp_used


def length_normalized(scores, length, length_penalty):
    """``sum_logprobs / pow(length, length_penalty)`` in float32."""
    return scores / jnp.power(jnp.asarray(length, jnp.float32), length_penalty)


def top_p_filter(scores, top_p, filter_value: float, min_tokens_to_keep: int):
    """Top-p (nucleus) filtering as onnxruntime's ``cumulate_and_filter``: tokens sorted from the
    least likely, a token whose cumulative probability (its own and the less likely ones') is at
    most ``1 - top_p`` gets ``filter_value``, except the ``min_tokens_to_keep`` most likely. So
    ``top_p`` 0 keeps only the most likely token, and 1 keeps all."""
    vocab = scores.shape[-1]
    order = jnp.argsort(scores, axis=-1, stable=True)
    cumulative = jnp.cumsum(jax.nn.softmax(jnp.take_along_axis(scores, order, axis=-1), axis=-1), axis=-1)
    remove = cumulative <= jnp.float32(1.0) - jnp.float32(top_p)
    remove = remove & (jnp.arange(vocab, dtype=jnp.int32)[None, :] < vocab - min_tokens_to_keep)
    removed = jnp.zeros_like(remove).at[jnp.arange(scores.shape[0], dtype=jnp.int32)[:, None], order].set(remove)
    return jnp.where(removed, jnp.float32(filter_value), scores)


def greedy_loop(
    input_ids,
    max_length: int,
    choose,
    *,
    decoder,
    model_type: int,
    attention_mask,
    pad_token_id: int,
    eos_token_id: int,
    vocab_size: int,
    processors,
    init_decoder=None,
):
    """The loop GreedySearch and Sampling share (``greedy_search_impl_gpt.h``): the decoder's
    last logits, the logits processors (``processors(scores, tokens, length, step)``), then
    ``choose(scores, step)`` picks each entry's token; after an end token an entry gets the
    pad token, and the loop ends when every entry has one or the buffer is full. Returns
    ``(batch, max_length)`` int32, pad after the end."""
    if model_type != 0:
        raise OnnxValidationError(f"supports `model_type` 0 (GPT-2), got {model_type}.")
    input_ids = jnp.asarray(input_ids).astype(jnp.int32)
    batch, prompt_length = input_ids.shape
    if max_length <= prompt_length:
        raise OnnxValidationError(f"needs `max_length` ({max_length}) above the prompt's length ({prompt_length}).")
    mask, positions, real_lengths = gpt_prompt_inputs(input_ids, attention_mask, pad_token_id)
    tokens = jnp.full((batch, max_length), pad_token_id, jnp.int32).at[:, :prompt_length].set(input_ids)
    stepper = GptDecoder(
        decoder, input_ids, mask, positions, real_lengths, max_length, vocab_size, first_decoder=init_decoder
    )

    def body(state):
        tokens, length, step, ended, logits, caches = state
        step = step + 1
        chosen = choose(processors(logits, tokens, length, step), step).astype(jnp.int32)
        ended = ended | (chosen == eos_token_id)
        chosen = jnp.where(ended, pad_token_id, chosen)
        tokens = jax.lax.dynamic_update_slice_in_dim(tokens, chosen[:, None], length, axis=1)
        # The next step's logits (on the last iteration, one decoder call more than onnxruntime makes).
        logits, caches = stepper.step(caches, tokens, length + 1)
        return tokens, length + 1, step, ended, logits, caches

    def running(state):
        _, length, _, ended, _, _ = state
        return (length < max_length) & ~jnp.all(ended)

    logits, caches = stepper.start()
    state = (tokens, jnp.int32(prompt_length), jnp.int32(0), jnp.zeros((batch,), bool), logits, caches)
    return jax.lax.while_loop(running, body, state)[0]
