"""Text generation from an ONNX causal language model, the whole decode loop under one ``jax.jit``.

:func:`generate` runs the prompt (prefill) and every decode step in one compiled computation:
a ``lax.while_loop`` over tokens whose state (the KV cache, the attention mask, the tokens so
far) keeps one shape from the first token to the last. How the cache is found and kept at a
fixed shape for each exporter's files (Optimum, dynamo, onnxruntime-genai's builder, graphs
without ``position_ids``, Mixture-of-Experts) is in the docs, ``docs/guide/generation.md``
("How it works").
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np
import onnx

from jaxonnx import _xla_cpu
from jaxonnx._core.model import Model, load
from jaxonnx._core.registry import trace_in_progress
from jaxonnx._errors import OnnxValidationError

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

# Past inputs and present outputs by the names Optimum and onnxruntime-genai give them.
_NAMED_PAST = re.compile(r"^past_key_values[._](\d+)[._](key|value)$")
_NAMED_PRESENT = re.compile(r"^present[._](\d+)[._](key|value)$")
# What the dynamo exporter calls the flattened (key, value) pairs of a cache argument, and
# other spellings of past-cache inputs whose outputs are paired by order.
_PAST_LIKE = re.compile(r"past|cache", re.IGNORECASE)
_TOKEN_INPUTS = ("input_ids", "attention_mask", "position_ids")


@dataclasses.dataclass(frozen=True)
class CacheLayout:
    """How a causal LM graph takes its tokens and its KV cache.

    Attributes:
        input_ids: the token input, ``(batch, sequence)``.
        attention_mask: the mask input, ``(batch, past + sequence)``, or None.
        position_ids: the positions input, ``(batch, sequence)``, or None when the graph
            computes positions from the cache's length.
        logits: the output of next-token logits, ``(batch, sequence, vocabulary)``.
        pairs: ``(past input, present output)`` for every cache tensor.
        axis: the cache's sequence axis (2 for ``(batch, heads, sequence, head_dim)``).
        empty_shape: each past input's shape for an empty cache, batch as -1.
        dtypes: each past input's element type.
        mode: how the decode loop keeps shapes fixed: ``"window"`` (a cache that grows by
            Concat, fed as a fixed window), ``"buffer"`` (onnxruntime-genai's
            GroupQueryAttention, whose present is as long as its past: one buffer of the
            final length), or ``"grow"`` (no ``position_ids``: a growing cache, unrolled).
    """

    input_ids: str
    attention_mask: str | None
    position_ids: str | None
    logits: str
    pairs: tuple[tuple[str, str], ...]
    axis: int
    empty_shape: tuple[tuple[int, ...], ...]
    dtypes: tuple[np.dtype, ...]
    mode: str = "window"

    @property
    def fixed_window(self) -> bool:
        """Whether the decode loop keeps one cache shape (see the module's docstring)."""
        return self.mode != "grow"


def find_cache(
    model: Model, cache: Mapping[str, str] | None = None, *, dims: Mapping[str, int] | None = None
) -> CacheLayout:
    """Finds a causal LM's token inputs, logits, and KV-cache inputs and outputs.

    Args:
        model: the loaded model.
        cache: ``{past input: present output}`` for graphs that name their cache otherwise
            than the exporters ``generate`` knows (see the module's docstring).
        dims: the lengths of symbolic cache dims other than the batch and the sequence,
            e.g. ``{"kv_cache_dim": 64}`` (the head size, which onnxruntime-genai's builder
            leaves symbolic; :func:`load_causal_lm` reads it from ``genai_config.json``).

    Returns:
        The model's :class:`CacheLayout`.

    Raises:
        OnnxValidationError: when the graph has no ``input_ids`` input, inputs that are
            neither tokens nor cache, or a cache that cannot be paired with outputs.

    Example:
        >>> layout = find_cache(jaxonnx.load("tests/fixtures/generation/llama_optimum/model.onnx"))
        >>> layout.pairs[0], layout.axis
        (('past_key_values.0.key', 'present.0.key'), 2)
    """
    inputs = {info.name: info for info in model.inputs}
    outputs = {info.name: info for info in model.outputs}
    graph = f"the model {model.graph_name!r}"
    if "input_ids" not in inputs:
        raise OnnxValidationError(
            f"`generate` feeds tokens to an input named 'input_ids', which {graph} lacks; its inputs are "
            f"{list(inputs)}."
        )
    logits = "logits" if "logits" in outputs else next(iter(outputs))
    if cache is not None:
        pairs = tuple(dict(cache).items())
        unknown = [p for p, _ in pairs if p not in inputs] + [q for _, q in pairs if q not in outputs]
        if unknown:
            raise OnnxValidationError(
                f"`cache` names {unknown}, which are not inputs or outputs of {graph}; inputs {list(inputs)}, "
                f"outputs {list(outputs)}."
            )
    else:
        pairs = _pair_by_name(inputs, outputs) or _pair_by_order(inputs, outputs, logits)
    others = [name for name in inputs if name not in _TOKEN_INPUTS and name not in dict(pairs)]
    if others:
        raise OnnxValidationError(
            f"{graph} takes {others}, which are neither tokens ({', '.join(_TOKEN_INPUTS)}) nor a KV cache that "
            "`generate` recognizes; name the cache with `cache={past input: present output}`."
        )
    if not pairs:
        raise OnnxValidationError(
            f"{graph} has no KV-cache inputs (its inputs are {list(inputs)}); `generate` needs a model exported "
            "with its past key values as inputs (Optimum's `text-generation-with-past`)."
        )
    axes, shapes, dtypes = set(), [], []
    for past, _present in pairs:
        info = inputs[past]
        if info.shape is None or len(info.shape) < 3:
            raise OnnxValidationError(
                f"The cache input {past!r} of {graph} has shape {info.shape}; `generate` needs "
                "a declared rank of 3 or more (batch first)."
            )
        symbolic = [axis for axis, dim in enumerate(info.shape) if axis and not isinstance(dim, int)]
        axis = symbolic[0] if len(symbolic) == 1 else len(info.shape) - 2
        shape = [
            dim if isinstance(dim, int) or a in (0, axis) else (dims or {}).get(dim, dim)
            for a, dim in enumerate(info.shape)
        ]
        if not all(isinstance(dim, int) for a, dim in enumerate(shape) if a not in (0, axis)):
            # onnxruntime-genai's builder leaves the head size symbolic; its GroupQueryAttention
            # cache is (batch, kv heads, sequence, head size), both read off the graph.
            heads = _attention_heads(model) if len(shape) == 4 and axis == 2 else None
            if heads is not None:
                shape = [dim if isinstance(dim, int) or a in (0, axis) else heads[a - 1] for a, dim in enumerate(shape)]
        if not all(isinstance(dim, int) for a, dim in enumerate(shape) if a not in (0, axis)):
            raise OnnxValidationError(
                f"The cache input {past!r} of {graph} is declared {info.shape}; `generate` needs every dim but the "
                "batch and the sequence known, to build the empty cache of the first step: give the others with "
                "`jaxonnx.find_cache(model, dims={name: length})` and pass its layout as `generate(..., cache=layout)`."
            )
        axes.add(axis)
        shapes.append(tuple(-1 if a == 0 else 0 if a == axis else dim for a, dim in enumerate(shape)))
        dtypes.append(np.dtype(info.dtype))
    if len(axes) != 1:
        raise OnnxValidationError(f"The cache inputs of {graph} grow along different axes {sorted(axes)}.")
    shared_buffer = any(op_type == "GroupQueryAttention" for _, op_type, _ in model.describe_nodes())
    if shared_buffer and "attention_mask" not in inputs:
        raise OnnxValidationError(f"{graph} runs GroupQueryAttention but takes no attention_mask to count its cache.")
    return CacheLayout(
        input_ids="input_ids",
        attention_mask="attention_mask" if "attention_mask" in inputs else None,
        position_ids="position_ids" if "position_ids" in inputs else None,
        logits=logits,
        pairs=pairs,
        axis=axes.pop(),
        empty_shape=tuple(shapes),
        dtypes=tuple(dtypes),
        mode="buffer" if shared_buffer else "window" if {"position_ids", "attention_mask"} <= set(inputs) else "grow",
    )


def _attention_heads(model: Model) -> tuple[int, None, int] | None:
    """``(kv heads, None, head size)`` of the model's first GroupQueryAttention, the head size
    from the width of the projection that feeds its key (or its packed query, key and value);
    None when the graph does not say."""
    graph = model._proto.graph
    node = next((n for n in graph.node if n.op_type == "GroupQueryAttention"), None)
    if node is None:
        return None
    attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    heads, kv_heads = attributes.get("num_heads"), attributes.get("kv_num_heads")
    if not heads or not kv_heads:
        return None
    packed = len(node.input) < 2 or not node.input[1]
    width = _projection_width(graph, node.input[0] if packed else node.input[1])
    per_head = width // (heads + 2 * kv_heads if packed else kv_heads) if width else None
    if not per_head or width % (heads + 2 * kv_heads if packed else kv_heads):
        return None
    return kv_heads, None, per_head


def _projection_width(graph, value: str, steps: int = 4) -> int | None:
    """The output width of the linear layer that computes ``value`` (a MatMul by a weight,
    a MatMulNBits, a bias Add or Cast after one), or None."""
    producers = {out: node for node in graph.node for out in node.output}
    shapes = {i.name: list(i.dims) for i in graph.initializer}
    for _ in range(steps):
        node = producers.get(value)
        if node is None:
            return None
        if node.op_type == "MatMulNBits":
            return next((a.i for a in node.attribute if a.name == "N"), None)
        if node.op_type == "MatMul" and len(shapes.get(node.input[1], [])) == 2:
            return shapes[node.input[1]][-1]
        if node.op_type == "Add":
            bias = [shapes[n] for n in node.input if len(shapes.get(n, [])) == 1]
            if bias:
                return bias[0][0]
        if node.op_type not in ("Add", "Cast"):
            return None
        value = node.input[0]
    return None


def _pair_by_name(inputs, outputs) -> tuple[tuple[str, str], ...]:
    presents = {}
    for name in outputs:
        match = _NAMED_PRESENT.match(name)
        if match:
            presents[(int(match.group(1)), match.group(2))] = name
    pairs = []
    for name in inputs:
        match = _NAMED_PAST.match(name)
        if match:
            key = (int(match.group(1)), match.group(2))
            if key not in presents:
                raise OnnxValidationError(
                    f"The cache input {name!r} has no output 'present.{key[0]}.{key[1]}' to pair with; name the pairs "
                    "with `cache={past input: present output}`."
                )
            pairs.append((name, presents[key]))
    return tuple(pairs)


def _pair_by_order(inputs, outputs, logits) -> tuple[tuple[str, str], ...]:
    pasts = [name for name in inputs if name not in _TOKEN_INPUTS and _PAST_LIKE.search(name)]
    presents = [name for name in outputs if name != logits]
    if not pasts:
        return ()
    if len(pasts) != len(presents):
        raise OnnxValidationError(
            f"The model has {len(pasts)} cache inputs ({pasts}) but {len(presents)} outputs besides {logits!r} "
            f"({presents}), so they cannot be paired in order; name the pairs with `cache={{past: present}}`."
        )
    return tuple(zip(pasts, presents))


# --------------------------------------------------------------------------- choosing tokens


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


# --------------------------------------------------------------------------- the loop


def load_causal_lm(path: str | os.PathLike, *, routed_tokens: int | None = None) -> Model:
    """Loads ``path`` (an ``.onnx`` file, or a folder with ``model.onnx`` or one ``.onnx``
    file) as a :class:`Model`, remembering the last few by path and modification time.

    Args:
        path: the model's ``.onnx`` file, or its folder.
        routed_tokens: for a Mixture-of-Experts export whose graph routes tokens with
            NonZero (Optimum's Qwen3-MoE, DeepSeek-V3), the size hint of each NonZero
            output: the most tokens a step routes to one expert, ``batch x prompt`` for
            :func:`generate` (an expert takes a token at most once). A graph without NonZero
            ignores it. A hint too short is refused at run time: NonZero's error says how
            many entries it found for how many places.

    Returns:
        The :class:`Model`, shared with earlier calls for the same file, modification time
        and hints.

    Example:
        >>> model = load_causal_lm("tests/fixtures/generation/qwen3_moe_optimum", routed_tokens=2 * 5)
        >>> generate(model, jnp.ones((2, 5), jnp.int32), 2).shape
        (2, 7)
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        candidates = sorted(name for name in os.listdir(path) if name.endswith(".onnx"))
        if "model.onnx" in candidates:
            candidates = ["model.onnx"]
        if len(candidates) != 1:
            raise OnnxValidationError(
                f"The folder {path!r} holds {candidates or 'no .onnx files'}; pass the model's file itself."
            )
        path = os.path.join(path, candidates[0])
    path = os.path.abspath(path)
    mtime = os.path.getmtime(path) if os.path.exists(path) else None
    routing = _nonzero_outputs(path, mtime) if routed_tokens is not None and mtime is not None else ()
    return _load_cached(path, mtime, tuple((name, routed_tokens) for name in routing) or None)


@functools.lru_cache(maxsize=4)
def _nonzero_outputs(path: str, mtime) -> tuple[str, ...]:
    """The outputs of the main graph's NonZero nodes; none where onnx cannot read the file,
    so that the load itself says why in jaxonnx's words."""
    del mtime  # part of the cache key: an edited file is read again
    try:
        nodes = onnx.load(path, load_external_data=False).graph.node
    except Exception:  # any reading error is the load's to report, in its own words
        return ()
    return tuple(node.output[0] for node in nodes if node.op_type == "NonZero")


@functools.lru_cache(maxsize=4)
def _load_cached(path: str, mtime, size_hints: tuple[tuple[str, int], ...] | None) -> Model:
    del mtime  # part of the cache key: an edited file loads again
    return load(path, size_hints=dict(size_hints) if size_hints else None)


def cache_dims_beside(path: str | os.PathLike) -> dict[str, int]:
    """The symbolic cache dims that onnxruntime-genai's ``genai_config.json`` beside a model
    gives (its builder declares the head size as ``kv_cache_dim``); empty without one."""
    path = os.fspath(path)
    folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    config_path = os.path.join(folder, "genai_config.json")
    if not os.path.exists(config_path):
        return {}
    with open(config_path) as f:
        decoder = json.load(f).get("model", {}).get("decoder", {})
    return {"kv_cache_dim": int(decoder["head_size"])} if "head_size" in decoder else {}


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
    dims = {}
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
    input_ids = jnp.asarray(input_ids)
    one_prompt = input_ids.ndim == 1
    if one_prompt:
        input_ids = input_ids[None]
        attention_mask = None if attention_mask is None else jnp.asarray(attention_mask)[None]
    if input_ids.ndim != 2 or not jnp.issubdtype(input_ids.dtype, jnp.integer) or input_ids.shape[1] == 0:
        raise OnnxValidationError(
            f"`input_ids` must be non-empty integer prompts of shape (batch, prompt), got {input_ids.dtype}{list(input_ids.shape)}."
        )
    if attention_mask is None:
        attention_mask = jnp.ones(input_ids.shape, jnp.int32)
    attention_mask = jnp.asarray(attention_mask)
    if attention_mask.shape != input_ids.shape:
        raise OnnxValidationError(
            f"`attention_mask` has shape {list(attention_mask.shape)}, `input_ids` {list(input_ids.shape)}; they must agree."
        )
    _check_left_padded(attention_mask, layout)
    _check_in_vocabulary(input_ids, attention_mask, _vocabulary_size(model, layout))
    eos = None if eos_token_id is None else jnp.asarray(eos_token_id).reshape(-1)
    if pad_token_id is None:
        pad_token_id = 0 if eos is None else eos[0]
    # jax takes compiler options only on a top-level jit: under a transformation (a jit of
    # the caller's, vmap, grad) the enclosing computation's options decide.
    options = {} if trace_in_progress() else decode_compiler_options()
    compiled = _compiled_generate(tuple(sorted(options.items())))
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


def _vocabulary_size(model: Model, layout: CacheLayout) -> int | None:
    """The number of token ids the model knows: its logits' declared last dim, else the rows of
    the embedding table that ``input_ids`` gathers from; None when neither is declared."""
    logits = next((info for info in model.outputs if info.name == layout.logits), None)
    if logits is not None and logits.shape and isinstance(logits.shape[-1], int):
        return logits.shape[-1]
    graph = model._proto.graph
    tables = {i.name: list(i.dims) for i in graph.initializer}
    for node in graph.node:
        if (
            node.op_type == "Gather"
            and len(node.input) > 1
            and node.input[1] == layout.input_ids
            and node.input[0] in tables
        ):
            return tables[node.input[0]][0]
    return None


def _check_in_vocabulary(input_ids, mask, vocabulary: int | None) -> None:
    if vocabulary is None or isinstance(input_ids, jax.core.Tracer):
        return  # under a trace the ids are not known; the caller's promise, as left padding is
    ids = np.asarray(input_ids)
    # left padding may hold any id: only the tokens the mask keeps are looked up
    kept = np.asarray(mask) != 0 if not isinstance(mask, jax.core.Tracer) else np.ones(ids.shape, bool)
    outside = np.argwhere(kept & ((ids < 0) | (ids >= vocabulary)))
    if len(outside):
        row, column = (int(i) for i in outside[0])
        raise OnnxValidationError(
            f"The prompt token {int(ids[row, column])} at row {row}, position {column} of `input_ids` is outside "
            f"the model's vocabulary of {vocabulary} ids (0 to {vocabulary - 1}); "
            f"{len(outside)} prompt token{'s are' if len(outside) > 1 else ' is'} out of range."
        )


def _check_left_padded(mask, layout: CacheLayout) -> None:
    if isinstance(mask, jax.core.Tracer):
        return  # documented: left padding is the caller's promise under a trace
    mask = np.asarray(mask)
    ones = mask != 0
    right_padded = np.any(ones[:, :-1] & ~ones[:, 1:])
    if right_padded or not np.all(ones.any(axis=1)):
        raise OnnxValidationError(
            "`attention_mask` must pad prompts on the left (each row's zeros before its ones) and give every row a "
            f"token; got {mask.tolist() if mask.size <= 64 else 'a mask that does not'}."
        )
    if layout.attention_mask is None and not ones.all():
        raise OnnxValidationError("The model takes no attention_mask, so it cannot decode padded prompts.")


def decode_compiler_options() -> dict[str, str]:
    """The XLA options :func:`generate` compiles its loop with: on CPU, its dots through
    Eigen rather than YNNPACK, where ``import jaxonnx`` chose XLA:CPU's library flags
    (``jaxonnx._xla_cpu``: not where ``XLA_FLAGS`` set them, ``JAXONNX_KEEP_XLA_FLAGS``
    opted out, or the jaxlib is another); otherwise none.

    A decode step's products have as many rows as the batch. On XLA:CPU (jaxlib 0.10, a
    2-core AMD EPYC) YNNPACK ran those slower than Eigen: a 12-layer stack of 768x2048 and
    2048x768 products and a 768x32000 head took 59 ms against Eigen's 42 at 8 rows and 45
    against 28 at 16 (medians, both compiled in one process and interleaved), the same at one
    row; at 128 rows YNNPACK was 1.15x faster, at 1024 even. The loop of the 12-layer,
    768-wide Llama of ``benchmarks/generation.py`` at batch 8 ran 1.15-1.4x faster so (both
    compiled in one process, interleaved, on a busy machine: 128 tokens of the builder file
    14.0 -> 11.9 s, 32 tokens of the Optimum file 3.4 -> 2.4 s).

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


def _generate(model, layout, input_ids, attention_mask, rng, temperature, top_k, top_p, eos, pad, max_new_tokens):
    tokens, _ = _decode(
        model, layout, input_ids, attention_mask, rng, temperature, top_k, top_p, eos, pad, max_new_tokens
    )
    return tokens


@functools.cache
def _compiled_generate(options: tuple[tuple[str, str], ...]):
    return jax.jit(_generate, static_argnames=("layout", "max_new_tokens"), compiler_options=dict(options) or None)


def _decode(model, layout, input_ids, attention_mask, rng, temperature, top_k, top_p, eos, pad, max_new_tokens):
    """The prompts and their new tokens, and how many decode steps ran (prefill included)."""
    batch, prompt = input_ids.shape
    ids_dtype = _dtype(model, layout.input_ids)
    mask_dtype = _dtype(model, layout.attention_mask) if layout.attention_mask else None
    positions_dtype = _dtype(model, layout.position_ids) if layout.position_ids else None
    input_ids = input_ids.astype(ids_dtype)
    mask = (attention_mask != 0).astype(mask_dtype or jnp.int32)
    pad = pad.astype(ids_dtype)

    def step(ids, step_mask, positions, past, key, last=None):
        feed = {layout.input_ids: ids, **dict(zip((p for p, _ in layout.pairs), past))}
        if layout.attention_mask:
            feed[layout.attention_mask] = step_mask
        if layout.position_ids:
            feed[layout.position_ids] = positions.astype(positions_dtype)
        outputs = model.run(feed)
        logits = outputs[layout.logits]
        # Each row's last token's logits (a right-padded prompt's sit before its padding).
        logits = logits[:, -1] if last is None else jnp.take_along_axis(logits, last[:, None, None], axis=1)[:, 0]
        token = choose_tokens(logits, key, temperature=temperature, top_k=top_k, top_p=top_p).astype(ids_dtype)
        return token, tuple(outputs[present] for _, present in layout.pairs)

    def key_at(index):
        return None if rng is None else jax.random.fold_in(rng, index)

    def ended(token):
        return jnp.zeros(token.shape, bool) if eos is None else jnp.isin(token, eos.astype(ids_dtype))

    if layout.mode == "buffer":
        return _decode_in_buffer(step, layout, input_ids, mask, pad, eos, ended, key_at, max_new_tokens)
    empty = tuple(
        jnp.zeros(tuple(batch if d == -1 else d for d in shape), dtype)
        for shape, dtype in zip(layout.empty_shape, layout.dtypes)
    )
    prompt_positions = jnp.where(mask != 0, jnp.cumsum(mask, axis=-1) - 1, 1)
    token, present = step(input_ids, mask, prompt_positions, empty, key_at(0))
    finished = ended(token)
    new = jnp.full((batch, max_new_tokens), pad, ids_dtype).at[:, 0].set(token)

    if not layout.fixed_window:
        # Positions from the cache's length: a growing cache, each step traced in turn.
        for index in range(1, max_new_tokens):
            step_mask = jnp.concatenate([mask, jnp.ones((batch, 1), mask.dtype)], axis=-1)
            token, present = step(new[:, index - 1 : index], step_mask, None, present, key_at(index))
            token = jnp.where(finished, pad, token)
            finished = finished | ended(token)
            new, mask = new.at[:, index].set(token), step_mask
        return jnp.concatenate([input_ids, new], axis=-1), jnp.asarray(max_new_tokens)

    window = prompt + max_new_tokens - 1
    axis = layout.axis
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

    cache = tuple(left_pad(x) for x in present)
    carried_mask = jnp.pad(mask, ((0, 0), (padding, 0)))

    def not_done(state):
        index, _, _, _, finished = state
        return (index < max_new_tokens) & ~jnp.all(finished)

    def decode_step(state):
        index, new, cache, carried_mask, finished = state
        window_mask = carried_mask[:, 1:]
        step_mask = jnp.concatenate([window_mask, jnp.ones((batch, 1), window_mask.dtype)], axis=-1)
        positions = jnp.sum(window_mask, axis=-1, keepdims=True)
        previous = jax.lax.dynamic_slice_in_dim(new, index - 1, 1, axis=1)
        token, present = step(previous, step_mask, positions, tuple(newest(x) for x in cache), key_at(index))
        token = jnp.where(finished, pad, token)
        new = jax.lax.dynamic_update_slice_in_dim(new, token[:, None], index, axis=1)
        return index + 1, new, present, step_mask, finished | ended(token)

    state = (jnp.asarray(1), new, cache, carried_mask, finished)
    index, new, _, _, _ = jax.lax.while_loop(not_done, decode_step, state)
    return jnp.concatenate([input_ids, new], axis=-1), index


def _dtype(model: Model, name: str):
    info = next(i for i in model.inputs if i.name == name)
    return jax.dtypes.canonicalize_dtype(info.dtype)


def _decode_in_buffer(step, layout, input_ids, mask, pad, eos, ended, key_at, max_new_tokens):
    """onnxruntime-genai's shared buffer: GroupQueryAttention counts each row's cache from the
    attention mask (``seqlens_k = sum(mask) - 1``) and writes a step's keys and values after
    them; its present is ``max(mask width, past length)`` long. So one buffer of the final
    length ``prompt + max_new_tokens - 1`` is the past of every step and its present too,
    the mask of each decode step as wide as the buffer (1 on the row's tokens, then 0). The
    prompt runs first with a mask as wide as itself, the one case GroupQueryAttention reads
    as a first prompt, and its batch right-padded as that case takes it: each row's tokens
    are moved to the left, and its first new token comes from its last token's logits."""
    batch, prompt = input_ids.shape
    length = prompt + max_new_tokens - 1
    lengths = jnp.sum(mask != 0, axis=-1)
    shift = (jnp.arange(prompt)[None] + (prompt - lengths)[:, None]) % prompt
    right_ids = jnp.take_along_axis(input_ids, shift, axis=1)
    right_mask = (jnp.arange(prompt)[None] < lengths[:, None]).astype(mask.dtype)
    buffer = tuple(
        jnp.zeros(tuple(batch if d == -1 else length if d == 0 else d for d in shape), dtype)
        for shape, dtype in zip(layout.empty_shape, layout.dtypes)
    )
    token, buffer = step(right_ids, right_mask, None, buffer, key_at(0), last=lengths - 1)
    finished = ended(token)
    new = jnp.full((batch, max_new_tokens), pad, input_ids.dtype).at[:, 0].set(token)

    def not_done(state):
        index, _, _, finished = state
        return (index < max_new_tokens) & ~jnp.all(finished)

    def decode_step(state):
        index, new, buffer, finished = state
        step_mask = (jnp.arange(length)[None] <= (lengths + index - 1)[:, None]).astype(mask.dtype)
        previous = jax.lax.dynamic_slice_in_dim(new, index - 1, 1, axis=1)
        token, buffer = step(previous, step_mask, None, buffer, key_at(index))
        token = jnp.where(finished, pad, token)
        new = jax.lax.dynamic_update_slice_in_dim(new, token[:, None], index, axis=1)
        return index + 1, new, buffer, finished | ended(token)

    index, new, _, _ = jax.lax.while_loop(not_done, decode_step, (jnp.asarray(1), new, buffer, finished))
    return jnp.concatenate([input_ids, new], axis=-1), index
