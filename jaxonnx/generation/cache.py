"""A causal LM's KV cache as :func:`~jaxonnx.generation.generate` sees it: which inputs and
outputs hold it (:func:`find_cache`, by the exporters' names or order), its sequence axis, its
empty shape, and the head size a builder file leaves symbolic."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping

import numpy as np
import onnx

from jaxonnx._core.model import Model
from jaxonnx._errors import OnnxValidationError

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
        """Whether the decode loop keeps one cache shape (every mode but ``"grow"``)."""
        return self.mode != "grow"


def find_cache(
    model: Model, cache: Mapping[str, str] | None = None, *, dims: Mapping[str, int] | None = None
) -> CacheLayout:
    """Finds a causal LM's token inputs, logits, and KV-cache inputs and outputs.

    Args:
        model: the loaded model.
        cache: ``{past input: present output}`` for graphs that name their cache otherwise
            than the exporters ``generate`` knows (``docs/guide/generation.md`` lists them).
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
    axes: set[int] = set()
    shapes: list[tuple[int, ...]] = []
    dtypes: list[np.dtype] = []
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
            dim if isinstance(dim, int) or dim is None or a in (0, axis) else (dims or {}).get(dim, dim)
            for a, dim in enumerate(info.shape)
        ]
        if not all(isinstance(dim, int) for a, dim in enumerate(shape) if a not in (0, axis)):
            # onnxruntime-genai's builder leaves the head size symbolic; its GroupQueryAttention
            # cache is (batch, kv heads, sequence, head size), both read off the graph.
            heads = _attention_heads(model) if len(shape) == 4 and axis == 2 else None
            if heads is not None:
                shape = [dim if isinstance(dim, int) or a in (0, axis) else heads[a - 1] for a, dim in enumerate(shape)]
        empty: list[int] = []  # the empty cache's shape, batch as -1
        for a, dim in enumerate(shape):
            if a in (0, axis):
                empty.append(-1 if a == 0 else 0)
            elif isinstance(dim, int):
                empty.append(dim)
            else:
                raise OnnxValidationError(
                    f"The cache input {past!r} of {graph} is declared {info.shape}; `generate` needs every dim but the "
                    "batch and the sequence known, to build the empty cache of the first step: give the others with "
                    "`jaxonnx.generation.find_cache(model, dims={name: length})` and pass its layout as `generate(..., cache=layout)`."
                )
        axes.add(axis)
        shapes.append(tuple(empty))
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
