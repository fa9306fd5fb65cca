"""The decode loop of :func:`~jaxonnx.generation.generate` and its three strategies, one per
:attr:`CacheLayout.mode <jaxonnx.generation.CacheLayout>`: a fixed window over a cache that
grows by Concat, onnxruntime-genai's shared GroupQueryAttention buffer, and a growing cache
unrolled; plus the XLA options the loop compiles with. Why each keeps the tokens exact is in
``docs/guide/generation.md`` ("How it works")."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxonnx import _xla_cpu
from jaxonnx._core.model import Model
from jaxonnx._errors import OnnxValidationError
from jaxonnx.generation.cache import CacheLayout
from jaxonnx.generation.sampling import choose_tokens


def decode_compiler_options() -> dict[str, str]:
    """The XLA options :func:`generate` compiles its loop with: on CPU, its dots through
    Eigen rather than YNNPACK, where ``import jaxonnx`` chose XLA:CPU's library flags
    (``jaxonnx._xla_cpu``: not where ``XLA_FLAGS`` set them, ``JAXONNX_KEEP_XLA_FLAGS``
    opted out, or the jaxlib is another); otherwise none.

    A decode step's products have as many rows as the batch, and at a few rows XLA:CPU ran
    them faster through Eigen than through YNNPACK (the measurements are in
    ``benchmarks/generation_results.md``).

    ``generate`` passes these itself; under your own ``jax.jit`` pass them too, or the
    process's flags decide.

    Example:
        >>> model = jaxonnx.load("tests/fixtures/generation/llama_optimum/model.onnx")
        >>> fast = jax.jit(generate, static_argnames="max_new_tokens", compiler_options=decode_compiler_options())
        >>> fast(model, jnp.array([[5, 6, 7]]), max_new_tokens=4).shape
        (1, 7)
    """
    if jax.default_backend() != "cpu" or not _xla_cpu.TOOK_CONVOLUTIONS_OUT:
        return {}
    return dict(_xla_cpu.EIGEN_DOTS)


@functools.cache
def compiled_decode_loop(options: tuple[tuple[str, str], ...]):
    """:func:`decode_loop`'s tokens under ``jax.jit`` with the XLA ``options`` (none: the
    process's flags decide), one compiled function per set of options."""
    return jax.jit(
        _decoded_tokens, static_argnames=("layout", "max_new_tokens"), compiler_options=dict(options) or None
    )


def _decoded_tokens(model, layout, input_ids, attention_mask, rng, temperature, top_k, top_p, eos, pad, max_new_tokens):
    tokens, _ = decode_loop(
        model, layout, input_ids, attention_mask, rng, temperature, top_k, top_p, eos, pad, max_new_tokens
    )
    return tokens


def decode_loop(model, layout, input_ids, attention_mask, rng, temperature, top_k, top_p, eos, pad, max_new_tokens):
    """The prompts and their new tokens, and how many decode steps ran (prefill included), by the
    strategy of ``layout.mode``."""
    strategy = STRATEGIES.get(layout.mode)
    if strategy is None:
        raise OnnxValidationError(
            f"The cache layout's mode is {layout.mode!r}; `generate` decodes with one of {sorted(STRATEGIES)}."
        )
    step = DecodeStep(model, layout, rng, temperature, top_k, top_p, eos)
    mask_dtype = _input_dtype(model, layout.attention_mask) if layout.attention_mask else jnp.int32
    mask = (attention_mask != 0).astype(mask_dtype)
    return strategy(step, input_ids.astype(step.ids_dtype), mask, pad.astype(step.ids_dtype), max_new_tokens)


@dataclasses.dataclass(frozen=True)
class DecodeStep:
    """One run of the graph and the tokens it chooses, what every strategy repeats.

    Attributes:
        model, layout: the model and its cache.
        rng, temperature, top_k, top_p: how to choose tokens (see :func:`choose_tokens`).
        eos: the token ids that end a row, or None.
    """

    model: Model
    layout: CacheLayout
    rng: jax.Array | None
    temperature: object
    top_k: object
    top_p: object
    eos: jax.Array | None

    @property
    def ids_dtype(self):
        return _input_dtype(self.model, self.layout.input_ids)

    def __call__(self, ids, mask, positions, past, index, *, last=None):
        """The next token of each row and the graph's presents, after ``ids`` with the cache
        ``past``; the token is chosen from each row's ``last`` position (by default the last),
        with the ``index``-th key of ``rng``."""
        layout = self.layout
        feed = {layout.input_ids: ids, **dict(zip((p for p, _ in layout.pairs), past))}
        if layout.attention_mask:
            feed[layout.attention_mask] = mask
        if layout.position_ids:
            if positions is None:
                raise OnnxValidationError(
                    f"The model takes {layout.position_ids!r}, which the {layout.mode!r} strategy does not compute "
                    "(onnxruntime-genai's GroupQueryAttention files take none)."
                )
            feed[layout.position_ids] = positions.astype(_input_dtype(self.model, layout.position_ids))
        outputs = self.model.run(feed)
        logits = outputs[layout.logits]
        # Each row's last token's logits (a right-padded prompt's sit before its padding).
        logits = logits[:, -1] if last is None else jnp.take_along_axis(logits, last[:, None, None], axis=1)[:, 0]
        key = None if self.rng is None else jax.random.fold_in(self.rng, index)
        token = choose_tokens(logits, key, temperature=self.temperature, top_k=self.top_k, top_p=self.top_p)
        return token.astype(self.ids_dtype), tuple(outputs[present] for _, present in layout.pairs)

    def ended(self, token):
        """Which rows ``token`` ends."""
        if self.eos is None:
            return jnp.zeros(token.shape, bool)
        return jnp.isin(token, self.eos.astype(self.ids_dtype))


def decode_in_window(step: DecodeStep, input_ids, mask, pad, max_new_tokens: int):
    """A cache that grows by Concat (``mode == "window"``), fed as a fixed window of
    ``prompt + max_new_tokens - 1`` slots, the real entries at its right end and the padding
    on its left hidden by the attention mask; every decode step in one ``lax.while_loop``."""
    batch, prompt = input_ids.shape
    new, present, finished = _prefill_from_empty_cache(step, input_ids, mask, pad, max_new_tokens)
    window = prompt + max_new_tokens - 1
    axis = step.layout.axis
    # The loop carries each present as the graph returned it, ``window + 1`` slots, and feeds
    # its last ``window`` slots as the next past: XLA fuses that slice into the graph's
    # Concat, so the cache is written once a step and copied back into the loop's buffer
    # once, where a carry of ``window`` slots (the present less its oldest slot) costs a third
    # write of the whole cache.
    padding = window + 1 - prompt

    def left_pad(x):
        widths = [(0, 0)] * x.ndim
        widths[axis] = (padding, 0)
        return jnp.pad(x, widths)

    def newest(x):
        return jax.lax.slice_in_dim(x, 1, None, axis=axis)  # the oldest slot is always padding

    def next_token(index, previous, carry):
        cache, carried_mask = carry
        window_mask = carried_mask[:, 1:]
        step_mask = jnp.concatenate([window_mask, jnp.ones((batch, 1), window_mask.dtype)], axis=-1)
        positions = jnp.sum(window_mask, axis=-1, keepdims=True)
        token, present = step(previous, step_mask, positions, tuple(newest(x) for x in cache), index)
        return token, (present, step_mask)

    carry = (tuple(left_pad(x) for x in present), jnp.pad(mask, ((0, 0), (padding, 0))))
    new, steps = _while_decoding(step, new, finished, carry, next_token, pad, max_new_tokens)
    return jnp.concatenate([input_ids, new], axis=-1), steps


def decode_in_buffer(step: DecodeStep, input_ids, mask, pad, max_new_tokens: int):
    """onnxruntime-genai's shared buffer (``mode == "buffer"``): GroupQueryAttention counts each
    row's cache from the attention mask (``seqlens_k = sum(mask) - 1``) and writes a step's keys
    and values after them; its present is ``max(mask width, past length)`` long. So one buffer
    of the final length ``prompt + max_new_tokens - 1`` is the past of every step and its
    present too, the mask of each decode step as wide as the buffer (1 on the row's tokens,
    then 0). The prompt runs first with a mask as wide as itself, the one case
    GroupQueryAttention reads as a first prompt, and its batch right-padded as that case takes
    it: each row's tokens are moved to the left, and its first new token comes from its last
    token's logits."""
    batch, prompt = input_ids.shape
    length = prompt + max_new_tokens - 1
    lengths = jnp.sum(mask != 0, axis=-1)
    shift = (jnp.arange(prompt)[None] + (prompt - lengths)[:, None]) % prompt
    right_ids = jnp.take_along_axis(input_ids, shift, axis=1)
    right_mask = (jnp.arange(prompt)[None] < lengths[:, None]).astype(mask.dtype)
    buffer = _zero_cache(step.layout, batch, length)
    token, buffer = step(right_ids, right_mask, None, buffer, 0, last=lengths - 1)
    new = _first_of_new_tokens(token, pad, max_new_tokens)

    def next_token(index, previous, buffer):
        step_mask = (jnp.arange(length)[None] <= (lengths + index - 1)[:, None]).astype(mask.dtype)
        return step(previous, step_mask, None, buffer, index)

    new, steps = _while_decoding(step, new, step.ended(token), buffer, next_token, pad, max_new_tokens)
    return jnp.concatenate([input_ids, new], axis=-1), steps


def decode_growing(step: DecodeStep, input_ids, mask, pad, max_new_tokens: int):
    """A cache that grows by one slot a step (``mode == "grow"``: graphs that compute positions
    from the cache's length, which a fixed window would shift), each step traced in turn: exact,
    but the trace grows with ``max_new_tokens`` and the loop cannot stop early."""
    batch = input_ids.shape[0]
    new, present, finished = _prefill_from_empty_cache(step, input_ids, mask, pad, max_new_tokens)
    for index in range(1, max_new_tokens):
        # A position counts the row's tokens before it, as in the prompt's step.
        positions = jnp.sum(mask, axis=-1, keepdims=True)
        mask = jnp.concatenate([mask, jnp.ones((batch, 1), mask.dtype)], axis=-1)
        token, present = step(new[:, index - 1 : index], mask, positions, present, index)
        token = jnp.where(finished, pad, token)
        finished = finished | step.ended(token)
        new = new.at[:, index].set(token)
    return jnp.concatenate([input_ids, new], axis=-1), jnp.asarray(max_new_tokens)


STRATEGIES: dict[str, Callable] = {"window": decode_in_window, "buffer": decode_in_buffer, "grow": decode_growing}


def _prefill_from_empty_cache(step: DecodeStep, input_ids, mask, pad, max_new_tokens: int):
    """The prompts' step with an empty past, as a growing-cache loop starts: the new tokens so
    far (the first, then ``pad``), the presents, and which rows have ended."""
    batch = input_ids.shape[0]
    positions = jnp.where(mask != 0, jnp.cumsum(mask, axis=-1) - 1, 1)
    token, present = step(input_ids, mask, positions, _zero_cache(step.layout, batch, 0), 0)
    return _first_of_new_tokens(token, pad, max_new_tokens), present, step.ended(token)


def _while_decoding(step: DecodeStep, new, finished, carry, next_token, pad, max_new_tokens: int):
    """Decode steps 1 to ``max_new_tokens - 1`` in one ``lax.while_loop`` that stops once every
    row has ended; ``next_token(index, previous tokens, carry)`` gives each step's tokens and
    carry. Returns the new tokens and how many steps ran, prefill included."""

    def not_done(state):
        index, _, _, finished = state
        return (index < max_new_tokens) & ~jnp.all(finished)

    def decode_step(state):
        index, new, carry, finished = state
        previous = jax.lax.dynamic_slice_in_dim(new, index - 1, 1, axis=1)
        token, carry = next_token(index, previous, carry)
        token = jnp.where(finished, pad, token)
        new = jax.lax.dynamic_update_slice_in_dim(new, token[:, None], index, axis=1)
        return index + 1, new, carry, finished | step.ended(token)

    index, new, _, _ = jax.lax.while_loop(not_done, decode_step, (jnp.asarray(1), new, carry, finished))
    return new, index


def _zero_cache(layout: CacheLayout, batch: int, length: int) -> tuple[jax.Array, ...]:
    """Every past input of the layout as zeros, ``length`` long on the sequence axis."""
    return tuple(
        jnp.zeros(tuple(batch if d == -1 else length if a == layout.axis else d for a, d in enumerate(shape)), dtype)
        for shape, dtype in zip(layout.empty_shape, layout.dtypes)
    )


def _first_of_new_tokens(token, pad, max_new_tokens: int):
    """``(batch, max_new_tokens)``: ``token``, then ``pad``."""
    return jnp.full((token.shape[0], max_new_tokens), pad, token.dtype).at[:, 0].set(token)


def _input_dtype(model: Model, name: str):
    info = next(i for i in model.inputs if i.name == name)
    return jax.dtypes.canonicalize_dtype(info.dtype)
