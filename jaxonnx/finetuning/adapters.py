"""LoRA adapters written into an ONNX graph, beside the products whose weights are constants.

:func:`lora` rewrites the graph once: each chosen product ``y = op(x, W, ...)`` (MatMul,
Gemm, FusedMatMul, com.microsoft MatMulNBits and MatMulBnb4) gets four ordinary nodes after
it, ``y = op(x, W, ...) + MatMul(MatMul(x, A), B) * scale``, with ``A`` and ``B`` new float
initializers and ``scale = alpha / rank``. The rewritten graph is at once what jaxonnx
trains and what onnxruntime and onnxruntime-genai run: the op files and the interpreter
are untouched, and saving it is saving the model. A table of the adapters rides in the
model's ``metadata_props`` (key ``jaxonnx.lora``), so a saved adapters file loads back as a
:class:`LoraModel` (``lora(path)``) and ``save(merge=True)`` can fold them in again.

In a :class:`LoraModel` the quantized products read their packed weights at run time and
have a vjp of their own, which reads and dequantizes them again in the backward pass: a
training step never holds every layer's float weights at once (XLA would otherwise fold
their dequantization into float32 constants, or keep each layer's dequantized matrix for its
input's gradient; see :func:`_rematerialized`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import re
import shutil
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import onnx
from onnx import helper, numpy_helper

from jaxonnx._core.loading import canonical_domain
from jaxonnx._core.model import Model, load
from jaxonnx._core.registry import REGISTRY, Registry, is_traced
from jaxonnx._core.serialization import save_proto
from jaxonnx._errors import OnnxValidationError
from jaxonnx.generation import cache_dims_beside
from jaxonnx.generation.loading import genai_filename, model_file

METADATA_KEY = "jaxonnx.lora"
MICROSOFT = "com.microsoft"
#: The products an adapter can sit beside: (domain, op type).
ADAPTABLE = {
    ("", "MatMul"),
    ("", "Gemm"),
    (MICROSOFT, "FusedMatMul"),
    (MICROSOFT, "MatMulNBits"),
    (MICROSOFT, "MatMulBnb4"),
}
#: Products whose weights are dequantized inside the op: rematerialized (:func:`_rematerialized`).
_DEQUANTIZING = ((MICROSOFT, "MatMulNBits"), (MICROSOFT, "MatMulBnb4"))
#: peft's default ``target_modules`` of the architectures whose exports name their
#: projections so, tried in order (Llama, Mistral, Qwen2, Gemma: q and v; Phi-3 and the
#: builder's fused files: qkv; GPT-2: c_attn; Bloom, Falcon, GPT-NeoX: query_key_value;
#: BERT-like: query and value; MPT: Wqkv).
DEFAULT_TARGETS = (
    ("q_proj", "v_proj"),
    ("qkv_proj",),
    ("c_attn",),
    ("query_key_value",),
    ("query", "value"),
    ("Wqkv",),
)


@dataclasses.dataclass(frozen=True)
class Product:
    """A product whose weight is a constant of the file: what ``targets`` chooses among.

    Attributes:
        node: the node's name.
        op_type: ``MatMul``, ``Gemm``, ``FusedMatMul``, ``MatMulNBits`` or ``MatMulBnb4``.
        weight: the name of its weight initializer (packed, for the quantized ops).
        in_features: K, the length of the input's last axis that the weight contracts.
        out_features: N, the output's.
        output: the node's output name.
    """

    node: str
    op_type: str
    weight: str
    in_features: int
    out_features: int
    output: str


@dataclasses.dataclass(frozen=True)
class Adapter:
    """One adapter in the graph: its initializers, and what to undo or fold on merge."""

    node: str
    op_type: str
    weight: str
    a: str
    b: str
    scale: str
    rank: int
    alpha: float
    base_output: str
    output: str
    added_nodes: tuple[str, ...]


# --------------------------------------------------------------------------- the model


@jax.tree_util.register_pytree_node_class
class LoraModel(Model):
    """A :class:`jaxonnx.Model` with LoRA adapters: made by :func:`lora`.

    Its params (``model.params``, its pytree leaves, what ``jax.grad`` and optax see) are
    only the adapters, ``<key>.lora_A`` ``(K, r)`` and ``<key>.lora_B`` ``(r, N)``; the
    base weights stay frozen constants, packed where the file packs them. ``generate``,
    ``causal_lm_loss``, ``jax.jit``, pickling and ``apply`` work on it as on any model.

    Attributes:
        adapters: one :class:`Adapter` per adapted product.
        source_folder: the folder of the file :func:`lora` read (its ``genai_config.json``
            and tokenizer files go beside a saved folder), or None.

    Example:
        >>> tuned = jaxonnx.lora("tests/fixtures/generation/llama_genai_int4", rank=2)
        >>> len(jax.tree.leaves(tuned)) == 2 * len(tuned.adapters)  # the adapters, nothing else
        True
        >>> tuned.initializers["lm_head.MatMul.weight_Q4"].dtype  # the 4-bit weights stay packed
        dtype('uint8')
    """

    def __init__(self, proto: onnx.ModelProto, *, source_folder: str | None = None, **load_options):
        self.adapters = _read_table(proto)
        self.source_folder = source_folder
        load_options.setdefault("registry", _rematerializing_registry())
        super().__init__(proto, **load_options)
        self._keep_packed_weights_on_device()

    def _keep_packed_weights_on_device(self) -> None:
        """The quantized products' packed weights, scales and zero points as device arrays,
        so that they reach the ops as arrays rather than as constants of a trace (the graph
        runner makes numpy values beside traced ones constants of the trace), and the ops'
        wrapper reads them at run time (:func:`_rematerialized`)."""
        # Graph declares its initializers numpy arrays; these become device arrays on purpose.
        initializers: dict[str, Any] = self.graph.initializers
        for node in self.graph.nodes:
            if (getattr(node.op, "domain", None), getattr(node.op, "op_type", None)) not in _DEQUANTIZING:
                continue
            for name in node.inputs[1:4] if node.op.op_type == "MatMulNBits" else node.inputs[1:3]:
                value = initializers.get(name)
                if isinstance(value, np.ndarray):
                    with jax.ensure_compile_time_eval():
                        initializers[name] = jnp.asarray(value)

    def _find_weights(self) -> None:
        super()._find_weights()
        # The adapters are the params; every weight of the file stays a frozen constant.
        self._trainable = [name for adapter in self.adapters for name in (adapter.a, adapter.b)]

    def __getstate__(self):
        return {**super().__getstate__(), "source_folder": self.source_folder}

    def __setstate__(self, state):
        self.source_folder = state.get("source_folder")
        super().__setstate__(state)

    def to_proto(self, params=None, *, merge: bool = False) -> onnx.ModelProto:
        """The ONNX model with the adapters' current values: as nodes beside the untouched
        weights, or, with ``merge=True``, folded into the weights with the graph's nodes
        as the base file had them (see :meth:`save`)."""
        proto = super().to_proto(params)
        return _merged(proto, self.adapters) if merge else proto

    def save(
        self, path: str | os.PathLike, params=None, *, merge: bool = False, external_data: bool | None = None
    ) -> None:
        """Writes the tuned model to ``path``: an ``.onnx`` file, or a folder.

        Without ``merge``, the adapters are nodes beside the untouched weights
        (``MatMul(x, A)``, ``MatMul(., B)``, ``Mul(scale)``, ``Add`` into the product's
        output), which onnxruntime and onnxruntime-genai run as they are, and which
        :func:`lora` loads back for more training. With ``merge=True``, ``scale * A @ B`` is
        folded into each weight and the nodes are the base file's: float weights keep their
        element type; MatMulNBits weights are quantized again at the node's bits and block
        size as onnxruntime's round-to-nearest quantizer does (symmetric, or asymmetric where
        the node has zero points); MatMulBnb4 weights again with their code table and an
        absmax per block (:mod:`jaxonnx.finetuning.requantize`).

        A ``path`` that does not end in ``.onnx`` is a folder: the model is written into it
        under the name ``genai_config.json`` gives (``model.onnx`` otherwise), with every
        other file of :attr:`source_folder` (``genai_config.json``, the tokenizer's files,
        ``config.json``, ...) copied beside it.

        Args:
            path: the ``.onnx`` file or the folder to write.
            params: adapter values in place of the model's own, by name.
            merge: fold the adapters into the weights.
            external_data: as :meth:`jaxonnx.Model.save`.

        Raises:
            OnnxValidationError: with ``merge=True``, for a weight that cannot be quantized
                again (MatMulNBits with ``g_idx`` or float zero points) or that other nodes
                read too; save without ``merge`` then.

        Example:
            >>> tuned = jaxonnx.lora("tests/fixtures/generation/llama_genai_int4", rank=4)
            >>> tuned.save("tuned")  # doctest: +SKIP
        """
        proto = self.to_proto(params, merge=merge)
        path = os.fspath(path)
        if not path.endswith(".onnx"):
            os.makedirs(path, exist_ok=True)
            filename = "model.onnx"
            if self.source_folder:
                filename = genai_filename(self.source_folder) or filename
                for name in sorted(os.listdir(self.source_folder)):
                    source = os.path.join(self.source_folder, name)
                    if os.path.isfile(source) and not (
                        name.endswith(".onnx") or name.endswith(".onnx.data") or name.endswith(".onnx_data")
                    ):
                        shutil.copyfile(source, os.path.join(path, name))
            path = os.path.join(path, filename)
        save_proto(proto, path, external_data=external_data)


# --------------------------------------------------------------------------- lora


def lora(
    model,
    rank: int = 8,
    alpha: float = 16,
    targets: Sequence[str] | str | Callable[[Product], bool] | None = None,
    *,
    key=None,
) -> LoraModel:
    """Adds LoRA adapters to a model's constant-weight products: the model to fine-tune.

    Each chosen product ``y = x @ W`` becomes ``y = x @ W + (x @ A) @ B * alpha / rank``
    with ``A`` ``(K, rank)`` drawn as peft draws it (``kaiming_uniform_(a=sqrt(5))``:
    uniform in ``+-1/sqrt(K)``) and ``B`` ``(rank, N)`` zeros, so at first the model
    computes exactly what the base model does. The products: MatMul, Gemm (``transA``,
    ``transB`` and ``alpha`` taken into account), FusedMatMul (not its batch transposes),
    and com.microsoft MatMulNBits and MatMulBnb4, whose 4-bit weights stay packed and are
    dequantized inside each node (QLoRA). A weight is a constant of the file when it is an
    initializer.

    Args:
        model: a :class:`jaxonnx.Model`, or a path to an ``.onnx`` file or its folder (then
            a builder folder's ``genai_config.json`` gives the cache's head size, written
            into the graph's declared cache shapes, and :meth:`LoraModel.save` copies the
            folder's other files beside a saved folder). A file saved with its adapters
            loads back as it was saved, ready for more training (``rank``, ``alpha`` and
            ``targets`` are then the file's).
        rank: r, the adapters' inner size (at most ``min(K, N)`` of each product).
        alpha: the adapters' scale is ``alpha / rank``, as peft's ``lora_alpha``.
        targets: which products, as peft's ``target_modules``: names (each matches a node
            or weight name that has it as a whole part between ``/``, ``.`` or ``:``, e.g.
            ``["q_proj", "v_proj"]`` or ``["self_attn.q_proj"]``), a regex string (a full
            match of the node or weight name), ``"all-linear"`` (every product but those
            that write a graph output: the LM head), or a callable taking a
            :class:`Product`. By default peft's defaults for the architecture, found by name
            (:data:`DEFAULT_TARGETS`: ``q_proj`` and ``v_proj`` for Llama, ``qkv_proj`` for
            the builder's fused files, ``c_attn`` for GPT-2, ...), else ``"all-linear"``.
        key: a ``jax.random`` key for ``A``; ``jax.random.key(0)`` by default.

    Returns:
        The :class:`LoraModel`; its params are the adapters alone.

    Raises:
        OnnxValidationError: for a model with no product to adapt, ``targets`` that match
            none of them (the message lists them), a ``rank`` larger than a product's
            ``min(K, N)``, or a non-positive ``rank``.

    Example:
        >>> tuned = jaxonnx.lora("tests/fixtures/generation/llama_optimum", rank=4, targets=["q_proj", "v_proj"])
        >>> sorted(tuned.params)[:2]
        ['model.layers.0.self_attn.q_proj.MatMul.lora_A', 'model.layers.0.self_attn.q_proj.MatMul.lora_B']
        >>> tuned.params['model.layers.0.self_attn.q_proj.MatMul.lora_A'].shape
        (32, 4)
    """
    source_folder = None
    dims: dict[str, int] = {}
    if isinstance(model, LoraModel):
        raise OnnxValidationError(
            "The model already has LoRA adapters; train it as it is, or save it merged "
            "(`save(path, merge=True)`) and load that to add new ones."
        )
    if not isinstance(model, Model):
        path = model_file(os.fspath(model))
        source_folder = os.path.dirname(path)
        dims = cache_dims_beside(path)
        model = load(path)
    proto = model.to_proto()
    if any(entry.key == METADATA_KEY for entry in proto.metadata_props):
        return LoraModel(proto, source_folder=source_folder, **_load_options(model))
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
        raise OnnxValidationError(f"`rank` must be a positive int, got {rank!r}.")
    products = _products(proto)
    if not products:
        raise OnnxValidationError(
            f"The model {model.graph_name!r} has no product whose weight is a constant of the file "
            f"({', '.join(sorted(op for _, op in ADAPTABLE))} with an initializer weight); LoRA has nothing to adapt."
        )
    chosen = _choose(products, targets, {o.name for o in proto.graph.output})
    too_small = [
        f"{p.node} ({p.in_features} x {p.out_features})" for p in chosen if rank > min(p.in_features, p.out_features)
    ]
    if too_small:
        raise OnnxValidationError(
            f"`rank`={rank} is larger than the products {too_small} allow (at most the smaller of K and N); "
            "choose a smaller rank or leave them out of `targets`."
        )
    _fix_cache_dims(proto, dims)
    _add_adapters(proto, chosen, int(rank), float(alpha), jax.random.key(0) if key is None else key)
    return LoraModel(proto, source_folder=source_folder, **_load_options(model))


def _load_options(model: Model) -> dict[str, Any]:
    options = dict(model.options)
    return {"options": options}


def _fix_cache_dims(proto: onnx.ModelProto, dims: dict[str, int]) -> None:
    """The builder's symbolic head size (``kv_cache_dim``) made the number its
    ``genai_config.json`` gives, so that the cache is known from the graph alone."""
    if not dims:
        return
    for value in list(proto.graph.input) + list(proto.graph.output):
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_param") and dim.dim_param in dims:
                dim.dim_value = dims[dim.dim_param]


# --------------------------------------------------------------------------- choosing products


def _products(proto: onnx.ModelProto) -> list[Product]:
    initializers = {t.name: t for t in proto.graph.initializer}
    found = []
    for node in proto.graph.node:
        domain = canonical_domain(node.domain)
        if (domain, node.op_type) not in ADAPTABLE or len(node.input) < 2 or node.input[1] not in initializers:
            continue
        weight = initializers[node.input[1]]
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        features = _features(node.op_type, list(weight.dims), weight.data_type, attributes)
        if features is None:
            continue
        found.append(Product(node.name, node.op_type, weight.name, *features, node.output[0]))
    return found


def _features(op_type: str, dims: list[int], data_type: int, attributes: dict) -> tuple[int, int] | None:
    """(K, N) of a product, or None for one an adapter cannot sit beside."""
    if op_type == "MatMulNBits":
        return int(attributes["K"]), int(attributes["N"])
    if op_type == "MatMulBnb4":
        k, n = int(attributes["K"]), int(attributes["N"])
        return (k, n) if attributes.get("transB", 1) else (n, k)
    floating = np.issubdtype(helper.tensor_dtype_to_np_dtype(data_type), np.inexact)
    if len(dims) != 2 or not floating:
        return None
    if op_type == "FusedMatMul" and (attributes.get("transBatchA", 0) or attributes.get("transBatchB", 0)):
        return None
    return (dims[1], dims[0]) if attributes.get("transB", 0) else (dims[0], dims[1])


def _choose(products: list[Product], targets, graph_outputs: set[str]) -> list[Product]:
    listing = ", ".join(f"{p.node or p.output} ({p.op_type}, weight {p.weight})" for p in products[:40])
    if len(products) > 40:
        listing += f", ... ({len(products)} in all)"
    if targets is None:
        for names in DEFAULT_TARGETS:
            chosen = [p for p in products if any(_named(p, name) for name in names)]
            if chosen:
                return chosen
        targets = "all-linear"
    if callable(targets):
        chosen = [p for p in products if targets(p)]
    elif targets == "all-linear":
        chosen = [p for p in products if p.output not in graph_outputs]
    elif isinstance(targets, str):
        try:
            pattern = re.compile(targets)
        except re.error as e:
            raise OnnxValidationError(f"`targets` {targets!r} is not a regular expression: {e}.") from e
        chosen = [p for p in products if pattern.fullmatch(p.node) or pattern.fullmatch(p.weight)]
    elif isinstance(targets, Sequence) and all(isinstance(t, str) for t in targets):
        chosen = [p for p in products if any(_named(p, name) for name in targets)]
    else:
        raise OnnxValidationError(
            f"`targets` is a list of names, a regex string, 'all-linear' or a callable, got {type(targets).__name__}."
        )
    if not chosen:
        raise OnnxValidationError(f"`targets` {targets!r} matches none of the model's products: {listing}.")
    return chosen


def _parts(name: str) -> list[str]:
    return [part for part in re.split(r"[/.:]", name) if part]


def _named(product: Product, target: str) -> bool:
    """Whether ``target``'s parts appear together, as whole parts, in the node's or weight's name."""
    wanted = _parts(target)
    for name in (product.node, product.weight):
        parts = _parts(name)
        if name == target or any(parts[i : i + len(wanted)] == wanted for i in range(len(parts) - len(wanted) + 1)):
            return True
    return False


# --------------------------------------------------------------------------- the rewrite


def _add_adapters(proto: onnx.ModelProto, chosen: list[Product], rank: int, alpha: float, key) -> None:
    graph = proto.graph
    initializers = {t.name: t for t in graph.initializer}
    taken = (
        set(initializers)
        | {v.name for v in graph.input}
        | {o for n in graph.node for o in n.output}
        | {n.name for n in graph.node}
    )

    def fresh(name: str) -> str:
        candidate, count = name, 1
        while candidate in taken:
            candidate, count = f"{name}_{count}", count + 1
        taken.add(candidate)
        return candidate

    by_node = {p.node: p for p in chosen}
    by_output = {p.output: p for p in chosen}
    table: list[Adapter] = []
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        nodes.append(node)
        product = by_node.get(node.name) if node.name else None
        if product is None or product.output != node.output[0]:
            product = by_output.get(node.output[0]) if node.output else None
        if product is None:
            continue
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        dtype = _adapter_dtype(node, initializers)
        stem = _adapter_stem(node, product)
        a_name, b_name, scale_name = fresh(f"{stem}.lora_A"), fresh(f"{stem}.lora_B"), fresh(f"{stem}.lora_scale")
        k, n = product.in_features, product.out_features
        bound = 1.0 / math.sqrt(k)
        a = np.asarray(
            jax.random.uniform(jax.random.fold_in(key, len(table)), (k, rank), minval=-bound, maxval=bound), np.float64
        ).astype(dtype)
        # A Gemm's or FusedMatMul's alpha scales its product, so the update to its weight too.
        scale = np.asarray(alpha / rank * float(attributes.get("alpha", 1.0)), dtype)
        graph.initializer.extend(
            [
                numpy_helper.from_array(a, a_name),
                numpy_helper.from_array(np.zeros((rank, n), dtype), b_name),
                numpy_helper.from_array(scale, scale_name),
            ]
        )
        base_output = fresh(f"{node.output[0]}/lora_base")
        output = node.output[0]
        node.output[0] = base_output
        label = node.name or output
        x = node.input[0]
        added = []
        if node.op_type == "Gemm" and attributes.get("transA", 0):
            transposed = fresh(f"{label}/lora_input")
            added.append(
                helper.make_node("Transpose", [x], [transposed], name=fresh(f"{label}/lora_transpose"), perm=[1, 0])
            )
            x = transposed
        down, up, scaled = fresh(f"{label}/lora_down"), fresh(f"{label}/lora_up"), fresh(f"{label}/lora_scaled")
        if node.op_type == "FusedMatMul" and attributes.get("transA", 0):
            added.append(
                helper.make_node(
                    "FusedMatMul", [x, a_name], [down], name=fresh(f"{label}/lora_A"), domain=MICROSOFT, transA=1
                )
            )
        else:
            added.append(helper.make_node("MatMul", [x, a_name], [down], name=fresh(f"{label}/lora_A")))
        added += [
            helper.make_node("MatMul", [down, b_name], [up], name=fresh(f"{label}/lora_B")),
            helper.make_node("Mul", [up, scale_name], [scaled], name=fresh(f"{label}/lora_scale")),
            helper.make_node("Add", [base_output, scaled], [output], name=fresh(f"{label}/lora_add")),
        ]
        nodes.extend(added)
        table.append(
            Adapter(
                node.name,
                node.op_type,
                product.weight,
                a_name,
                b_name,
                scale_name,
                rank,
                alpha,
                base_output,
                output,
                tuple(n.name for n in added),
            )
        )
    del graph.node[:]
    graph.node.extend(nodes)
    proto.metadata_props.append(
        onnx.StringStringEntryProto(
            key=METADATA_KEY, value=json.dumps([dataclasses.asdict(adapter) for adapter in table])
        )
    )


def _adapter_dtype(node: onnx.NodeProto, initializers) -> np.dtype:
    """The float type of the product's activations: the weight's, or the quantized
    products' scales' (their input ``A`` has that type)."""
    source = node.input[2] if node.op_type in ("MatMulNBits", "MatMulBnb4") else node.input[1]
    if source not in initializers:
        raise OnnxValidationError(
            f"The node {node.name!r} ({node.op_type}) reads its scales {source!r} from no "
            "initializer, so the adapters' element type is unknown."
        )
    return helper.tensor_dtype_to_np_dtype(initializers[source].data_type)


def _adapter_stem(node: onnx.NodeProto, product: Product) -> str:
    """peft-like names: ``/model/layers.0/self_attn/q_proj/MatMul`` ->
    ``model.layers.0.self_attn.q_proj.MatMul``; the weight's name for an unnamed node."""
    return ".".join(_parts(node.name.replace("/", "."))) if node.name else product.weight


def _read_table(proto: onnx.ModelProto) -> tuple[Adapter, ...]:
    for entry in proto.metadata_props:
        if entry.key == METADATA_KEY:
            return tuple(
                Adapter(**{**item, "added_nodes": tuple(item["added_nodes"])}) for item in json.loads(entry.value)
            )
    raise OnnxValidationError(
        f"The model has no LoRA adapters (no {METADATA_KEY!r} metadata); make them with `jaxonnx.lora(model)`."
    )


# --------------------------------------------------------------------------- merging


def _merged(proto: onnx.ModelProto, adapters: tuple[Adapter, ...]) -> onnx.ModelProto:
    """The base graph with ``scale * A @ B`` folded into each adapted weight."""
    from jaxonnx.finetuning.requantize import fold  # imported here: numpy work only a merge needs

    graph = proto.graph
    initializers = {t.name: t for t in graph.initializer}
    added = {name for adapter in adapters for name in adapter.added_nodes}
    adapter_tensors = {name for adapter in adapters for name in (adapter.a, adapter.b, adapter.scale)}
    readers: dict[str, list[str]] = {}
    for node in graph.node:
        if node.name not in added:
            for name in node.input:
                readers.setdefault(name, []).append(node.name)
    replaced = {}
    for adapter in adapters:
        node = next(n for n in graph.node if n.output and n.output[0] == adapter.base_output)
        others = [r for r in readers.get(adapter.weight, []) if r != node.name]
        if others:
            raise OnnxValidationError(
                f"Cannot merge the adapter of {adapter.node!r}: its weight {adapter.weight!r} is read by "
                f"{others} too, which would change with it; save without `merge`."
            )
        a, b, scale = (numpy_helper.to_array(initializers[name]) for name in (adapter.a, adapter.b, adapter.scale))
        delta = (a.astype(np.float64) @ b.astype(np.float64)) * float(scale)
        attributes = {at.name: helper.get_attribute_value(at) for at in node.attribute}
        # The Gemm/FusedMatMul alpha in `scale` multiplies the product, not the weight.
        delta /= float(attributes.get("alpha", 1.0)) if node.op_type in ("Gemm", "FusedMatMul") else 1.0
        values = {name: numpy_helper.to_array(initializers[name]) for name in node.input[1:] if name in initializers}
        replaced.update(fold(node.op_type, node.name, list(node.input), attributes, values, delta))
        node.output[0] = adapter.output
    nodes = [n for n in graph.node if n.name not in added]
    del graph.node[:]
    graph.node.extend(nodes)
    kept = [t for t in graph.initializer if t.name not in adapter_tensors]
    for tensor in kept:
        if tensor.name in replaced:
            tensor.CopyFrom(numpy_helper.from_array(replaced[tensor.name], tensor.name))
    del graph.initializer[:]
    graph.initializer.extend(kept)
    entries = [e for e in proto.metadata_props if e.key != METADATA_KEY]
    del proto.metadata_props[:]
    proto.metadata_props.extend(entries)
    return proto


# --------------------------------------------------------------------------- rematerialization


@functools.lru_cache(maxsize=1)
def _rematerializing_registry() -> Registry:
    """jaxonnx's ops, with the dequantizing products rematerialized (:func:`_rematerialized`)."""
    registry = REGISTRY.copy()
    for domain_op in _DEQUANTIZING:
        versions = registry._versions.get(domain_op, {})  # a copy of ours, replaced in place
        for since, op in list(versions.items()):
            versions[since] = dataclasses.replace(op, fn=_rematerialized(op.fn))
    return registry


def _rematerialized(fn):
    """``fn`` for a quantized product whose only traced input is its activation ``A`` (as in
    a :class:`LoraModel`), with the packed weights read at run time (:func:`_at_run_time`)
    and a vjp of its own: ``dA = dY @ W`` with ``W`` read and dequantized again.

    Each read waits for a value of its pass (the forward pass's for ``A``, the backward
    pass's for the cotangent). Without that, XLA:CPU computes every layer's dequantized
    weights as early as it likes, and shares the forward pass's with the backward pass
    (it drops ``jax.checkpoint``'s optimization barriers before it eliminates common
    subexpressions), so every layer's float weights lived until the backward pass reached
    it: 4 MiB per 1024 x 1024 layer, with ``jax.checkpoint`` or without. The vjp
    dequantizes ``W`` whole, not through the op's chunked ``lax.map``, whose buffers XLA:CPU
    kept apart per loop. A pass that is not differentiated (``generate``) runs the op as it
    is. Forward mode (``jax.jvp``) does not go through it."""

    @functools.wraps(fn)
    def run(*inputs, **keywords):
        traced = [i for i, x in enumerate(inputs) if x is not None and is_traced(x)]
        if traced != [0]:
            return fn(*inputs, **keywords)
        frozen = {i: x for i, x in enumerate(inputs) if i and isinstance(x, jax.Array)}

        return _product(fn, keywords, inputs, frozen)(inputs[0])

    return run


def _product(fn, keywords, inputs, frozen):
    """``A -> fn(A, the frozen inputs)`` with the vjp described in :func:`_rematerialized`."""

    def call(a, values):
        full = list(inputs)
        full[0] = a
        for i, value in zip(frozen, values):
            full[i] = value
        return fn(*full, **keywords)

    @jax.custom_vjp
    def product(a):  # not differentiated (generate, evaluation): the op as it is
        return call(a, list(frozen.values()))

    def forward(a):
        return call(a, [_at_run_time(v, _first(a)) for v in frozen.values()]), a

    def backward(a, cotangent):
        values = [_at_run_time(v, _first(cotangent)) for v in frozen.values()]
        full = list(inputs)
        for i, value in zip(frozen, values):
            full[i] = value
        weight = _dense_weight(fn.__name__, full, keywords)
        if weight is None:  # g_idx or float zero points: the op's own vjp
            _, vjp = jax.vjp(lambda a: call(a, values), a)
            return vjp(cotangent)
        # dA = dY @ W, with W (N x K) dequantized whole: no while loop, whose buffers XLA:CPU
        # keeps apart per loop (the op's chunked product kept one float layer per layer).
        transposed = fn.__name__ == "matmul_bnb4" and not keywords.get("transB", 1)
        g = cotangent.astype(jnp.float32).reshape(-1, weight.shape[1] if transposed else weight.shape[0])
        da = jax.lax.dot_general(
            g, weight, (((1,), (1 if transposed else 0,)), ((), ())), precision=jax.lax.Precision.HIGHEST
        )
        return (da.reshape(a.shape).astype(a.dtype),)

    product.defvjp(forward, backward)
    return product


def _dense_weight(op: str, inputs, keywords):
    """The float32 ``(N, K)`` weight of a MatMulNBits or MatMulBnb4 node (the ops' own
    formulas, in ``jax.numpy``), or None where its layout takes the op's own vjp."""
    if op == "matmul_nbits":
        _, codes, scales, zero_points, g_idx = (list(inputs) + [None] * 5)[:5]
        k, n, block, bits = keywords["K"], keywords["N"], keywords["block_size"], keywords.get("bits", 4)
        if g_idx is not None or (zero_points is not None and zero_points.dtype != jnp.uint8):
            return None
        k_blocks = -(-k // block)
        mask = np.uint8((1 << bits) - 1)
        unpack = lambda v: jnp.stack([(v >> np.uint8(bits * p)) & mask for p in range(8 // bits)], -1)
        q = unpack(codes.reshape(n, k_blocks, -1)).reshape(n, k_blocks, block).astype(jnp.float32)
        zero = (
            np.float32(1 << (bits - 1))
            if zero_points is None
            else unpack(zero_points.reshape(n, -1)).reshape(n, -1)[:, :k_blocks].astype(jnp.float32)[..., None]
        )
        weight = (q - zero) * scales.reshape(n, k_blocks).astype(jnp.float32)[..., None]
        return weight.reshape(n, k_blocks * block)[:, :k]
    if op == "matmul_bnb4":
        from jaxonnx.ops._quantization.matmul_bnb4 import CODE_VALUES  # imported here: only MatMulBnb4 needs it

        _, codes, absmax = inputs[:3]
        k, n, block = keywords["K"], keywords["N"], keywords["block_size"]
        size = n * k
        values = jnp.stack([codes >> np.uint8(4), codes & np.uint8(15)], -1).reshape(-1)[:size]
        scale = jnp.repeat(absmax.astype(jnp.float32), block)[:size]
        return (jnp.asarray(CODE_VALUES[keywords["quant_type"]])[values.astype(jnp.int32)] * scale).reshape(n, k)
    return None


def _first(x):
    """One element of ``x``: what a read waits for (an empty ``x`` gives 0)."""
    return jnp.sum(x.reshape(-1)[:1].astype(jnp.float32))


def _at_run_time(value: jax.Array, after=None):
    """A file constant that XLA cannot see: read by a host callback when the step runs
    (``after``: a value the read waits for, which also keeps two reads apart).

    A constant that a jit reads is known to XLA, which folds what is computed from it at
    compile time: every layer's dequantized float32 weights, held as constants of the
    executable for as long as it lives. The callback copies the packed bytes instead (an
    eighth of the float weights at 4 bits), once a pass."""
    array = np.asarray(value)
    shape = jax.ShapeDtypeStruct(array.shape, array.dtype)
    if after is None:
        return jax.pure_callback(lambda: array, shape)
    return jax.pure_callback(lambda _: array, shape, after)


__all__ = ["ADAPTABLE", "DEFAULT_TARGETS", "Adapter", "LoraModel", "Product", "lora"]
