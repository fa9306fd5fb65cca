"""Exports the real-model fixtures that ``tests/test_real_models.py`` runs through jaxonnx.

Small PyTorch models with random weights (fixed seeds, built from configs: nothing is
downloaded), each exported with both of torch's ONNX exporters (``dynamo=True`` and the
TorchScript path ``dynamo=False``), with a static and a dynamic batch (and sequence, for the
text models). For every export it writes, under ``tests/fixtures/models/``:

- ``NAME.onnx``: the exported model, doc strings and node metadata stripped to keep it small;
- ``NAME.npz``: the inputs and torch's outputs; for dynamic exports a second input set of
  another batch (and sequence) size and its outputs; a fixed random cotangent per float
  output; torch's gradients of ``sum(output * cotangent)`` w.r.t. the float inputs and
  w.r.t. the initializers that are one-to-one copies of a torch parameter;
- ``manifest.json``: per fixture the model, exporter, dynamic axes, opset, op histogram,
  which array in the ``.npz`` is which, size hints for data-dependent outputs, and what
  was checked here (onnxruntime against torch, torch float32 against float64). An export
  that fails is recorded with its error instead.

An initializer's gradient is stored only when its name is a torch parameter, it is not tied
to another parameter, its values equal the parameter's, and a central difference through
onnxruntime along a random direction agrees with torch's gradient (so an exporter that
folded a second use of the weight into another initializer cannot slip through).

Run (needs the ``export`` extra): ``pip install -e '.[export]' && python tools/export_fixtures.py``.
``--only mlp cnn`` re-exports some models; the manifest keeps the other entries.
"""

from __future__ import annotations

import argparse
import collections
import copy
import dataclasses
import importlib.util
import io
import json
import os
import sys
import traceback
import types
import warnings
from collections.abc import Callable

import numpy as np
import onnx
import onnx.reference
import onnxruntime
import torch
from torch import nn

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "fixtures", "models")
SEED = 20261122
FIRST_SHAPE = {"batch": 2, "sequence": 6}
SECOND_SHAPE = {"batch": 5, "sequence": 9}
# The tolerance tests/test_real_models.py uses: |actual - expected| <= ATOL_SCALE * max|expected|
# + RTOL * |expected|, per array. Each fixture records its own float32 error (torch float32 against torch
# float64, and onnxruntime against torch), which must stay well inside it.
RTOL, ATOL_SCALE = 1e-4, 1e-5
ROUNDING = 3e-7  # float32 rounding of a loss, relative to sum|output * cotangent| (directional_check)


def _import_torchvision_models():
    """torchvision's model modules, even where its compiled ops cannot load.

    PyPI's torchvision wheels are linked against torch's CUDA libraries; with a CPU-only torch
    wheel ``import torchvision`` fails while registering its C++ ops (nms, roi_align), which
    these models never use. The model modules themselves are plain Python, so they are
    imported under a package stub that skips torchvision's ``__init__``.
    """
    try:
        from torchvision import models  # noqa: F401
    except (RuntimeError, OSError, ImportError) as error:
        warnings.warn(
            f"torchvision's extension does not load ({error}); importing its model modules only.", stacklevel=2
        )
        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]
        spec = importlib.util.find_spec("torchvision")
        stub = types.ModuleType("torchvision")
        stub.__path__ = list(spec.submodule_search_locations)
        stub.__file__ = spec.origin
        stub.__spec__ = spec
        sys.modules["torchvision"] = stub
    from torchvision.models import mobilenetv3, resnet, vision_transformer

    return resnet, mobilenetv3, vision_transformer


# --------------------------------------------------------------------------- the models


class MLP(nn.Module):
    """Linear / ReLU / Linear / Tanh / Linear / Softmax."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(8, 16), nn.Linear(16, 16), nn.Linear(16, 4)

    def forward(self, x):
        return torch.softmax(self.fc3(torch.tanh(self.fc2(torch.relu(self.fc1(x))))), dim=-1)


class SmallCNN(nn.Module):
    """Conv / BatchNorm / ReLU / MaxPool, then Conv / ReLU / BatchNorm / MaxPool, Flatten, Linear.

    Both exporters fold an inference BatchNorm that follows a Conv into the Conv's weights, so
    the second block puts it after the ReLU, where it stays a BatchNormalization node.
    """

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(4, 8, 3, padding=1),
            nn.ReLU(),
            nn.BatchNorm2d(8),
            nn.MaxPool2d(2),
        )
        self.head = nn.Linear(8 * 3 * 3, 5)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


def small_resnet():
    """A ResNet from torchvision's own BasicBlocks, with 8 and 16 channels instead of 64..512
    (torchvision's ResNet class hard-codes its widths; resnet18 alone would be 45 MB)."""
    resnet, _, _ = _import_torchvision_models()

    def downsample(inplanes, planes):
        return nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride=2, bias=False), nn.BatchNorm2d(planes))

    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1, bias=False),
        nn.BatchNorm2d(8),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, stride=2, padding=1),
        resnet.BasicBlock(8, 8),
        resnet.BasicBlock(8, 16, stride=2, downsample=downsample(8, 16)),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(1),
        nn.Linear(16, 10),
    )


def reset_linear_layers(module: nn.Module) -> nn.Module:
    """torch's default Linear initialization for every Linear layer. torchvision zeroes the
    ViT head and draws MobileNet's classifier with std 0.01 (sensible before training), which
    makes the logits (nearly) constant: a fixture whose output ignores its input checks nothing."""
    for layer in module.modules():
        if isinstance(layer, nn.Linear):
            layer.reset_parameters()
    return module


def mobilenet_v3_small():
    _, mobilenetv3, _ = _import_torchvision_models()
    return reset_linear_layers(mobilenetv3.mobilenet_v3_small(width_mult=0.25, reduced_tail=True, num_classes=10))


def tiny_vit():
    _, _, vision_transformer = _import_torchvision_models()
    return reset_linear_layers(
        vision_transformer.VisionTransformer(
            image_size=16, patch_size=4, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32, num_classes=10
        )
    )


class TinyGPT2(nn.Module):
    """GPT-2 language model head (untied embeddings, so the embedding has its own gradient)."""

    def __init__(self):
        super().__init__()
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(
            vocab_size=100,
            n_positions=32,
            n_embd=32,
            n_layer=2,
            n_head=2,
            tie_word_embeddings=False,
            use_cache=False,
            attn_implementation="eager",
        )
        self.model = GPT2LMHeadModel(config)

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


class TinyLlama(nn.Module):
    """A Llama causal LM (grouped-query attention, RoPE, RMSNorm, SiLU-gated MLP)."""

    def __init__(self):
        super().__init__()
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(
            vocab_size=100,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=64,
            tie_word_embeddings=False,
        )
        self.model = LlamaForCausalLM(config)

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


class TinyBert(nn.Module):
    def __init__(self):
        super().__init__()
        from transformers import BertConfig, BertModel

        config = BertConfig(
            vocab_size=100,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=32,
            type_vocab_size=2,
            attn_implementation="eager",
        )
        self.model = BertModel(config)

    def forward(self, input_ids, attention_mask, token_type_ids):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return out.last_hidden_state, out.pooler_output


class Indexing(nn.Module):
    """Slices (strided, negative), torch.gather, torch.where, and ``h[mask].sum(0)``."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x, index):
        h = self.proj(x)  # [B, 8, 6]
        sliced = h[:, 1:7:2, 2:] * h[:, :3, -4:]  # [B, 3, 4]
        picked = torch.gather(h, 1, index)  # [B, 3, 6]
        gated = torch.where(picked > 0, picked, 0.1 * picked)
        masked_sum = h[x[..., 0] > 0].sum(0)  # [6]: the mask's size depends on the data
        return sliced, gated, masked_sum


class Recurrent(nn.Module):
    """``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` with 2 layers, bidirectional and ``batch_first``, then
    a Linear head: the head's output sequence and the final hidden states, batch first."""

    def __init__(self, kind: str):
        super().__init__()
        layer = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[kind]
        self.rnn = layer(input_size=8, hidden_size=6, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        sequence, hidden = self.rnn(x)
        if isinstance(hidden, tuple):  # the LSTM's (h, c)
            hidden = hidden[0]
        return self.head(sequence), hidden.transpose(0, 1)


class VoiceActivity(nn.Module):
    """The structure of a voice-activity detector: the sample rate (an input) picks a front end
    with ``If`` (a nested ``If`` on the chunk length inside one branch), an LSTM runs over the
    frames, and a sigmoid head gives one probability per chunk. Both front ends give 8 frames
    of 8 features, so a traced sample rate runs both branches under ``lax.cond``."""

    def __init__(self):
        super().__init__()
        self.front16k = nn.Conv1d(1, 8, kernel_size=8, stride=8)
        self.front8k = nn.Conv1d(1, 8, kernel_size=4, stride=4)
        self.lstm = nn.LSTM(8, 8, batch_first=True)
        self.head = nn.Linear(8, 1)

    def forward(self, x, sr):
        if bool(sr == 16000):
            if x.size(1) >= 64:
                frames = self.front16k(x[:, :64].unsqueeze(1))
            else:
                frames = self.front8k(x[:, :32].unsqueeze(1))
        else:
            frames = self.front8k(x[:, ::2].unsqueeze(1))
        sequence, _ = self.lstm(torch.relu(frames).transpose(1, 2))
        return torch.sigmoid(self.head(sequence[:, -1]))


class LoopedCell(nn.Module):
    """A Python loop over the sequence, scripted (the TorchScript exporter writes ``Loop``): a
    hand-written RNN cell whose steps are appended to a list (sequence ops inside the loop)."""

    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(8 + 6, 6)

    def forward(self, x):
        h = torch.zeros(x.size(0), 6)
        steps: list[torch.Tensor] = []
        for t in range(x.size(1)):
            h = torch.tanh(self.cell(torch.cat([x[:, t], h], 1)))
            steps.append(h)
        return torch.stack(steps, 1), h


class Branching(nn.Module):
    """``torch.cond`` on a data-dependent predicate (the dynamo exporter writes ``If`` whose
    branches call the model's local functions); the condition is traced under jax.jit."""

    def __init__(self):
        super().__init__()
        self.positive = nn.Linear(8, 4)
        self.negative = nn.Linear(8, 4)

    def forward(self, x):
        def when_positive(x):
            return torch.relu(self.positive(x))

        def when_negative(x):
            return torch.sigmoid(self.negative(x))

        return torch.cond(x.sum() > 0, when_positive, when_negative, (x,))


def randomize_norms(module: nn.Module) -> nn.Module:
    """Random affine parameters for every normalization layer, whose default (scale 1, shift 0)
    would hide a swapped or ignored argument."""
    for layer in module.modules():
        if isinstance(layer, (nn.modules.batchnorm._NormBase, nn.LayerNorm, nn.GroupNorm)):
            with torch.no_grad():
                if getattr(layer, "weight", None) is not None:
                    layer.weight.uniform_(0.5, 1.5)
                if getattr(layer, "bias", None) is not None:
                    layer.bias.normal_(0.0, 0.2)
    return module


def calibrate_batch_norms(module: nn.Module, spec: ModelSpec) -> nn.Module:
    """Running statistics measured on random batches, as training would leave them. With the
    default ones (mean 0, variance 1) a deep random network's activations drift, and
    MobileNet's logits come out the same for every input."""
    norms = [layer for layer in module.modules() if isinstance(layer, nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return module
    for layer in norms:
        layer.reset_running_stats()
        layer.momentum = None  # a cumulative average over the calibration batches
    module.train()
    with torch.no_grad():
        for seed in range(4):
            inputs = make_inputs(spec, {"batch": 16, "sequence": FIRST_SHAPE["sequence"]}, SEED + 100 + seed)
            module(*(torch.from_numpy(v) for v in inputs.values()))
    return module.eval()


# --------------------------------------------------------------------------- inputs


def _float(shape):
    return lambda rng, dims: rng.standard_normal([dims.get(d, d) for d in shape]).astype(np.float32)


def _token_ids(rng, dims):
    return rng.integers(0, 100, (dims["batch"], dims["sequence"]), dtype=np.int64)


def _attention_mask(rng, dims):
    mask = np.ones((dims["batch"], dims["sequence"]), np.int64)
    mask[1, -2:] = 0  # the second sequence is padded on the right
    return mask


def _token_types(rng, dims):
    types_ = np.zeros((dims["batch"], dims["sequence"]), np.int64)
    types_[:, dims["sequence"] // 2 :] = 1
    return types_


def _sample_rate(rng, dims):
    return np.array(16000, np.int64)


def _gather_index(rng, dims):
    return rng.integers(0, 8, (dims["batch"], 3, 6), dtype=np.int64)


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    name: str
    build: Callable[[], nn.Module]
    inputs: dict[str, tuple[Callable, tuple[str | int, ...]]]  # name -> (maker, dims by name or size)
    outputs: tuple[str, ...]
    #: Scripted modules export only through TorchScript, torch.cond only through dynamo.
    exporters: tuple[str, ...] = ("dynamo", "torchscript")
    #: Export ``torch.jit.script(module)``, so that Python control flow becomes If / Loop (torch's
    #: references run the module itself).
    script: bool = False
    #: The opset to export at (None: the exporter's default); opset 23 makes the dynamo
    #: exporter write Attention, RotaryEmbedding and RMSNormalization.
    opset: int | None = None


SPECS = [
    ModelSpec("mlp", MLP, {"x": (_float(("batch", 8)), ("batch", 8))}, ("probabilities",)),
    ModelSpec("cnn", SmallCNN, {"image": (_float(("batch", 3, 12, 12)), ("batch", 3, 12, 12))}, ("logits",)),
    ModelSpec("resnet", small_resnet, {"image": (_float(("batch", 3, 16, 16)), ("batch", 3, 16, 16))}, ("logits",)),
    ModelSpec(
        "mobilenet_v3_small",
        mobilenet_v3_small,
        {"image": (_float(("batch", 3, 32, 32)), ("batch", 3, 32, 32))},
        ("logits",),
    ),
    ModelSpec("vit", tiny_vit, {"image": (_float(("batch", 3, 16, 16)), ("batch", 3, 16, 16))}, ("logits",)),
    ModelSpec(
        "gpt2",
        TinyGPT2,
        {"input_ids": (_token_ids, ("batch", "sequence")), "attention_mask": (_attention_mask, ("batch", "sequence"))},
        ("logits",),
    ),
    ModelSpec(
        "bert",
        TinyBert,
        {
            "input_ids": (_token_ids, ("batch", "sequence")),
            "attention_mask": (_attention_mask, ("batch", "sequence")),
            "token_type_ids": (_token_types, ("batch", "sequence")),
        },
        ("last_hidden_state", "pooler_output"),
    ),
    ModelSpec(
        "indexing",
        Indexing,
        {"x": (_float(("batch", 8, 6)), ("batch", 8, 6)), "index": (_gather_index, ("batch", 3, 6))},
        ("sliced", "gated", "masked_sum"),
    ),
    *(
        ModelSpec(
            kind, build, {"x": (_float(("batch", "sequence", 8)), ("batch", "sequence", 8))}, ("output", "hidden")
        )
        for kind, build in (
            ("lstm", lambda: Recurrent("lstm")),
            ("gru", lambda: Recurrent("gru")),
            ("rnn", lambda: Recurrent("rnn")),
        )
    ),
    ModelSpec(
        "voice_activity",
        VoiceActivity,
        {"x": (_float(("batch", 64)), ("batch", 64)), "sr": (_sample_rate, ())},
        ("probability",),
        exporters=("torchscript",),
        script=True,
    ),
    ModelSpec(
        "looped_cell",
        LoopedCell,
        {"x": (_float(("batch", "sequence", 8)), ("batch", "sequence", 8))},
        ("steps", "last"),
        exporters=("torchscript",),
        script=True,
    ),
    ModelSpec("branching", Branching, {"x": (_float(("batch", 8)), ("batch", 8))}, ("y",), exporters=("dynamo",)),
    ModelSpec(
        "llama",
        TinyLlama,
        {"input_ids": (_token_ids, ("batch", "sequence"))},
        ("logits",),
        exporters=("dynamo",),
        opset=23,
    ),
]


def make_inputs(spec: ModelSpec, dims: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: maker(rng, dims) for name, (maker, _) in spec.inputs.items()}


def dynamic_axes_of(spec: ModelSpec) -> dict[str, dict[int, str]]:
    return {name: {i: d for i, d in enumerate(dims) if isinstance(d, str)} for name, (_, dims) in spec.inputs.items()}


# --------------------------------------------------------------------------- exporting


def export_torchscript(module, args, spec: ModelSpec, dynamic: bool) -> onnx.ModelProto:
    buffer = io.BytesIO()
    dynamic_axes = None
    if dynamic:
        dynamic_axes = dict(dynamic_axes_of(spec))
        # The outputs' leading axes follow the batch; a reduced output (masked_sum) has none.
        for name in spec.outputs:
            dynamic_axes[name] = {0: "batch"} if name != "masked_sum" else {}
        if any("sequence" in dims for _, dims in spec.inputs.values()):
            dynamic_axes[spec.outputs[0]] = {0: "batch", 1: "sequence"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if spec.script:
            module = torch.jit.script(module)
        torch.onnx.export(
            module,
            args,
            buffer,
            dynamo=False,
            input_names=list(spec.inputs),
            output_names=list(spec.outputs),
            dynamic_axes=dynamic_axes,
        )
    return onnx.load_from_string(buffer.getvalue())


def export_dynamo(module, args, spec: ModelSpec, dynamic: bool) -> onnx.ModelProto:
    dynamic_shapes = None
    if dynamic:
        dims = {"batch": torch.export.Dim("batch"), "sequence": torch.export.Dim("sequence")}
        dynamic_shapes = tuple(
            {axis: dims[name] for axis, name in axes.items()} for axes in dynamic_axes_of(spec).values()
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            module,
            args,
            dynamo=True,
            input_names=list(spec.inputs),
            output_names=list(spec.outputs),
            dynamic_shapes=dynamic_shapes,
            external_data=False,
            verbose=False,
            **({"opset_version": spec.opset} if spec.opset else {}),
        )
    return program.model_proto


def strip(model: onnx.ModelProto) -> onnx.ModelProto:
    """Drops doc strings and metadata (stack traces, source locations): they are most of a
    dynamo export's bytes and carry no semantics."""
    model.doc_string = ""
    del model.metadata_props[:]

    def strip_graph(graph):
        graph.doc_string = ""
        del graph.metadata_props[:]
        for value in [*graph.input, *graph.output, *graph.value_info]:
            value.doc_string = ""
            del value.metadata_props[:]
        for tensor in graph.initializer:
            tensor.doc_string = ""
            del tensor.metadata_props[:]
        for node in graph.node:
            node.doc_string = ""
            del node.metadata_props[:]
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.GRAPH:
                    strip_graph(attribute.g)
                for g in attribute.graphs:
                    strip_graph(g)

    strip_graph(model.graph)
    for function in model.functions:
        function.doc_string = ""
        for node in function.node:
            node.doc_string = ""
            del node.metadata_props[:]
    return model


def op_histogram(model: onnx.ModelProto) -> dict[str, int]:
    """Node count per op type, over the graph, its subgraphs and local functions; ops outside
    the default domain are written ``domain:Op``. tests/test_real_models.py computes the same."""
    counts = collections.Counter()

    def visit(nodes):
        for node in nodes:
            counts[node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"] += 1
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.GRAPH:
                    visit(attribute.g.node)
                for g in attribute.graphs:
                    visit(g.node)

    visit(model.graph.node)
    for function in model.functions:
        visit(function.node)
    return dict(sorted(counts.items()))


# --------------------------------------------------------------------------- torch references


def torch_run(module, inputs: dict[str, np.ndarray], dtype=torch.float32):
    args = [torch.from_numpy(v).to(dtype) if v.dtype.kind == "f" else torch.from_numpy(v) for v in inputs.values()]
    with torch.no_grad():
        outputs = module(*args)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    return [o.detach().numpy() for o in outputs]


def torch_gradients(module, inputs, cotangents, dtype=torch.float32):
    """Gradients of ``sum(output * cotangent)`` w.r.t. the float inputs and every parameter."""
    args = []
    for value in inputs.values():
        if value.dtype.kind == "f":
            args.append(torch.from_numpy(value).to(dtype).requires_grad_(True))
        else:
            args.append(torch.from_numpy(value))
    module.zero_grad(set_to_none=True)
    outputs = module(*args)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    loss = sum((o * torch.from_numpy(c).to(dtype)).sum() for o, c in zip(outputs, cotangents) if c is not None)
    loss.backward()
    input_grads = {n: a.grad.numpy().copy() for n, a in zip(inputs, args) if a.requires_grad}
    param_grads = {
        n: (p.grad.numpy().copy() if p.grad is not None else np.zeros(p.shape, p.detach().numpy().dtype))
        for n, p in module.named_parameters()
    }
    return input_grads, param_grads


def scaled_error(actual, expected) -> float:
    """max |actual - expected| / (ATOL_SCALE * max|expected| + RTOL * |expected|): at most 1 passes."""
    expected = np.asarray(expected, np.float64)
    actual = np.asarray(actual, np.float64)
    if expected.size == 0:
        return 0.0
    allowed = ATOL_SCALE * max(float(np.max(np.abs(expected))), np.finfo(np.float32).tiny) + RTOL * np.abs(expected)
    return float(np.max(np.abs(actual - expected) / allowed))


# --------------------------------------------------------------------------- checks with onnxruntime


def ort_session(model: onnx.ModelProto, overridable: list[str] = (), *, reference: bool = False):
    """An onnxruntime session; the ``overridable`` initializers are also made graph inputs,
    so a run can feed other values for them. ``reference``: onnx.reference instead, for
    the models onnxruntime cannot run (its RotaryEmbedding refuses the caches of batch 1
    that PyTorch's opset-23 export writes, which the text broadcasts)."""
    model = copy.deepcopy(model)
    initializers = {t.name: t for t in model.graph.initializer}
    for name in overridable:
        tensor = initializers[name]
        model.graph.input.append(onnx.helper.make_tensor_value_info(name, tensor.data_type, list(tensor.dims)))
    if reference:
        return onnx.reference.ReferenceEvaluator(model)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def directional_check(session, inputs, output_names, cotangents, name, value, gradient, rng) -> float:
    """Compares ``<gradient, d>`` with a central difference of ``sum(output * cotangent)`` along a
    random direction ``d`` of the initializer ``name``, run in onnxruntime (float32).

    Returns the disagreement in units of what is allowed: 1% of ``sum|gradient * d|`` plus the
    float32 rounding of the two losses (taken as ROUNDING times ``sum|output * cotangent|``) divided
    by the step. The best of three step sizes counts: rounding spoils small steps, ReLU kinks
    and max-pool switches spoil large ones, but a gradient that misses a use of the weight
    disagrees at every step. A value at most 1 passes.
    """
    direction = rng.standard_normal(value.shape).astype(np.float32)
    spread = float(np.std(value)) if value.size > 1 else float(np.abs(value).max())
    analytic = float(np.sum(gradient.astype(np.float64) * direction))
    scale = float(np.sum(np.abs(gradient.astype(np.float64) * direction)))

    def loss(step):
        feed = dict(inputs)
        feed[name] = (value + step * direction).astype(np.float32)
        outs = session.run(output_names, feed)
        terms = [o.astype(np.float64) * c for o, c in zip(outs, cotangents) if c is not None]
        return sum(float(np.sum(t)) for t in terms), sum(float(np.sum(np.abs(t))) for t in terms)

    errors = []
    for relative_step in (1e-2, 3e-3, 1e-3):
        step = relative_step * max(spread, 1e-2)
        (up, magnitude), (down, _) = loss(step), loss(-step)
        allowed = 1e-2 * scale + ROUNDING * magnitude / step
        errors.append(abs((up - down) / (2 * step) - analytic) / allowed)
    return min(errors)


# --------------------------------------------------------------------------- one fixture


def export_fixture(spec: ModelSpec, exporter: str, dynamic: bool, out_dir: str) -> dict:
    name = f"{spec.name}_{exporter}_{'dynamic' if dynamic else 'static'}"
    entry = {
        "name": name,
        "model": spec.name,
        "module": spec.build.__name__ if spec.build.__name__ != "<lambda>" else spec.name,
        "scripted": spec.script,
        "exporter": {"dynamo": "torch.onnx.export(dynamo=True)", "torchscript": "torch.onnx.export(dynamo=False)"}[
            exporter
        ],
        "exporter_key": exporter,
        "dynamic": dynamic,
        "torch": torch.__version__,
        "seed": SEED,
    }
    torch.manual_seed(SEED)
    module = calibrate_batch_norms(randomize_norms(spec.build()), spec).eval()
    first = make_inputs(spec, FIRST_SHAPE, SEED)
    args = tuple(torch.from_numpy(v) for v in first.values())
    try:
        if exporter == "dynamo":
            proto = export_dynamo(module, args, spec, dynamic)
        else:
            proto = export_torchscript(module, args, spec, dynamic)
        proto = strip(proto)
        onnx.checker.check_model(proto, full_check=True)
    except Exception as error:  # noqa: BLE001  (recorded in the manifest, the other exports go on)
        entry["export_error"] = f"{type(error).__name__}: {str(error).strip().splitlines()[0][:500]}"
        traceback.print_exc(limit=3)
        return entry

    graph_inputs = [i.name for i in proto.graph.input if i.name not in {t.name for t in proto.graph.initializer}]
    graph_outputs = [o.name for o in proto.graph.output]
    if graph_inputs != list(spec.inputs) or graph_outputs != list(spec.outputs):
        raise RuntimeError(f"{name}: the graph's inputs {graph_inputs} / outputs {graph_outputs} are not the module's.")

    def dims_of(value_info):
        return [d.dim_param if d.HasField("dim_param") else d.dim_value for d in value_info.type.tensor_type.shape.dim]

    entry["opset"] = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    entry["opset_import"] = {o.domain or "ai.onnx": o.version for o in proto.opset_import}
    entry["ir_version"] = proto.ir_version
    entry["graph_inputs"] = {i.name: dims_of(i) for i in proto.graph.input if i.name in graph_inputs}
    entry["graph_outputs"] = {o.name: dims_of(o) for o in proto.graph.output}
    entry["dynamic_axes"] = dynamic_axes_of(spec) if dynamic else {}
    fixed = [
        f"{n}[{axis}]"
        for n, axes in entry["dynamic_axes"].items()
        for axis in axes
        if not isinstance(entry["graph_inputs"][n][axis], str)
    ]
    if fixed:  # the exporter specialized a dim asked to be dynamic: recorded, not a dynamic fixture
        entry["export_error"] = f"the exporter fixed the dynamic dims {', '.join(fixed)} to the example's sizes"
        return entry
    entry["op_histogram"] = op_histogram(proto)
    entry["node_count"] = sum(entry["op_histogram"].values())

    arrays, layout = {}, {}

    def put(role, items):
        layout[role] = []
        for index, (key_name, value) in enumerate(items):
            key = f"{role}.{index}"
            arrays[key] = value
            layout[role].append({"name": key_name, "key": key, "dtype": str(value.dtype), "shape": list(value.shape)})

    outputs = torch_run(module, first)
    put("inputs", first.items())
    put("outputs", zip(spec.outputs, outputs))
    checks = {}
    # How much the outputs vary over the batch, relative to their size: near 0 would mean a
    # model whose outputs ignore its inputs, and a fixture that checks nothing.
    checks["output_spread_over_batch"] = min(
        float(np.std(o, axis=0).max() / max(np.abs(o).max(), 1e-30)) for o in outputs if o.ndim and o.shape[0] > 1
    )
    if checks["output_spread_over_batch"] < 1e-3:
        raise RuntimeError(
            f"{name}: the outputs hardly depend on the inputs ({checks['output_spread_over_batch']:.2g})."
        )
    session = ort_session(proto)
    runtime = "onnxruntime"
    try:
        ort_outputs = session.run(graph_outputs, first)
        if dynamic:
            session.run(graph_outputs, make_inputs(spec, SECOND_SHAPE, SEED + 1))
    except Exception as error:  # noqa: BLE001  (recorded; onnx.reference checks the export instead)
        entry["onnxruntime_error"] = f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300]}"
        runtime = "reference"
        session = ort_session(proto, reference=True)
        ort_outputs = session.run(graph_outputs, first)
    entry["checked_with"] = runtime
    checks["onnxruntime_vs_torch"] = max(scaled_error(a, e) for a, e in zip(ort_outputs, outputs))
    double = copy.deepcopy(module).double()
    checks["torch_float32_vs_float64"] = max(
        scaled_error(a, e) for a, e in zip(outputs, torch_run(double, first, torch.float64))
    )

    if dynamic:
        second = make_inputs(spec, SECOND_SHAPE, SEED + 1)
        second_outputs = torch_run(module, second)
        put("second_inputs", second.items())
        put("second_outputs", zip(spec.outputs, second_outputs))
        checks["onnxruntime_vs_torch_second"] = max(
            scaled_error(a, e) for a, e in zip(session.run(graph_outputs, second), second_outputs)
        )

    # Gradients of sum(output * cotangent) over the float outputs.
    rng = np.random.default_rng(SEED + 2)
    cotangents = [rng.standard_normal(o.shape).astype(np.float32) if o.dtype.kind == "f" else None for o in outputs]
    put("cotangents", [(n, c) for n, c in zip(spec.outputs, cotangents) if c is not None])
    input_grads, param_grads = torch_gradients(module, first, cotangents)
    input_grads64, param_grads64 = torch_gradients(double, first, cotangents, torch.float64)
    put("input_gradients", input_grads.items())
    checks["torch_input_gradients_float32_vs_float64"] = max(
        [scaled_error(input_grads[n], input_grads64[n]) for n in input_grads], default=0.0
    )

    # Initializers that are one-to-one copies of a torch parameter.
    parameters = dict(module.named_parameters())
    aliases = collections.Counter(id(p) for _, p in module.named_parameters(remove_duplicate=False))
    initializers = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    used = {i for node in proto.graph.node for i in node.input}

    def readers(value):
        """How many node inputs read ``value``, following Identity nodes: an exporter that merges
        equal-valued initializers (zero-initialised biases) reads the survivor at several places,
        directly (dynamo) or through Identity (TorchScript)."""
        return sum(
            readers(node.output[0]) if node.op_type == "Identity" else 1
            for node in proto.graph.node
            for name in node.input
            if name == value
        )

    candidates, excluded = [], {}
    for init_name, value in initializers.items():
        if init_name not in parameters:
            continue
        parameter = parameters[init_name].detach().numpy()
        if aliases[id(parameters[init_name])] > 1:
            excluded[init_name] = "tied to another parameter"
        elif value.dtype != parameter.dtype or value.shape != parameter.shape or not np.array_equal(value, parameter):
            excluded[init_name] = "its values differ from the parameter's (folded by the exporter)"
        elif init_name not in used:
            excluded[init_name] = "no node reads it"
        elif (count := readers(init_name)) > 1:
            # Its ONNX gradient is the sum over every parameter merged into it; torch's is one's.
            excluded[init_name] = f"read at {count} places: the exporter merged equal-valued initializers into it"
        else:
            candidates.append(init_name)
    overriding = ort_session(proto, candidates, reference=runtime == "reference")
    direction_rng = np.random.default_rng(SEED + 3)
    kept, worst = [], 0.0
    for init_name in candidates:
        error = directional_check(
            overriding,
            first,
            graph_outputs,
            cotangents,
            init_name,
            initializers[init_name],
            param_grads[init_name],
            direction_rng,
        )
        if error > 1.0:
            excluded[init_name] = (
                f"a central difference in onnxruntime disagrees with torch's gradient ({error:.2g} of the allowance)"
            )
        else:
            kept.append(init_name)
            worst = max(worst, error)
    put("param_gradients", [(n, param_grads[n]) for n in kept])
    checks["param_gradient_directional_error"] = worst
    checks["torch_param_gradients_float32_vs_float64"] = max(
        [scaled_error(param_grads[n], param_grads64[n]) for n in kept], default=0.0
    )
    entry["param_gradients_excluded"] = excluded
    entry["parameters_without_initializer"] = sorted(set(parameters) - set(initializers))

    # Data-dependent output sizes (NonZero, Compress, Unique) need a size hint under jax.jit: an
    # upper bound valid for both input sets, the number of elements of the op's data input.
    entry["size_hints"] = size_hints(proto, [first] + ([second] if dynamic else []))
    entry["checks"] = checks
    entry["arrays"] = layout

    onnx.save_model(proto, os.path.join(out_dir, f"{name}.onnx"))
    np.savez_compressed(os.path.join(out_dir, f"{name}.npz"), **arrays)
    entry["bytes"] = {
        "onnx": os.path.getsize(os.path.join(out_dir, f"{name}.onnx")),
        "npz": os.path.getsize(os.path.join(out_dir, f"{name}.npz")),
    }
    return entry


def size_hints(proto: onnx.ModelProto, input_sets) -> dict[str, int]:
    data_dependent = {"NonZero": 0, "Compress": 0, "Unique": 0}
    nodes = [n for n in proto.graph.node if n.domain in ("", "ai.onnx") and n.op_type in data_dependent]
    if not nodes:
        return {}
    probe = copy.deepcopy(proto)
    known = {o.name for o in probe.graph.output}
    for node in nodes:
        data = node.input[data_dependent[node.op_type]]
        if data not in known:
            probe.graph.output.append(onnx.ValueInfoProto(name=data))
            known.add(data)
    session = ort_session(probe)
    names = [o.name for o in probe.graph.output]
    hints = {}
    for inputs in input_sets:
        values = dict(zip(names, session.run(names, inputs)))
        for node in nodes:
            hints[node.output[0]] = max(hints.get(node.output[0], 0), int(values[node.input[0]].size))
    return hints


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="model names to (re-)export; default all")
    parser.add_argument("--out", default=OUT_DIR)
    args = parser.parse_args(argv)
    out_dir = os.path.normpath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    manifest_path = os.path.join(out_dir, "manifest.json")
    manifest = {"fixtures": {}}
    if args.only and os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    torch.set_num_threads(1)
    # Before transformers is imported: it imports torchvision when that is installed.
    _import_torchvision_models()
    for spec in SPECS:
        if args.only and spec.name not in args.only:
            continue
        for exporter in spec.exporters:
            for dynamic in (False, True):
                entry = export_fixture(spec, exporter, dynamic, out_dir)
                manifest["fixtures"][entry["name"]] = entry
                status = entry.get("export_error") or f"{entry['node_count']} nodes, checks {entry['checks']}"
                print(f"{entry['name']}: {status}", flush=True)
    manifest["fixtures"] = dict(sorted(manifest["fixtures"].items()))
    manifest["generated_by"] = "tools/export_fixtures.py"
    manifest["tolerance"] = {"rtol": RTOL, "atol_scale": ATOL_SCALE}
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=False)
        f.write("\n")


if __name__ == "__main__":
    main()
