"""Writes the com.microsoft fixtures that ``tests/test_microsoft_models.py`` runs through jaxonnx.

The files people download are not standard ONNX: onnxruntime's transformer optimizer, its
quantizers, its own graph optimizer and onnxruntime-genai's model builder write
``com.microsoft`` ops. This script makes small files with those very tools, from tiny models
with random weights built from transformers configs (fixed seeds; nothing is downloaded):

- ``onnxruntime.transformers.optimizer.optimize_model`` (``use_gpu=False``) at opt levels 0
  and 2 on BERT, GPT-2, ViT, T5 and Llama exports (torch's TorchScript exporter, the path the
  optimizer's fusion patterns were written for), plus BERT with a few ``FusionOptions``
  (MultiHeadAttention, a raw 2-D attention mask, FastGelu, Gelu without bias);
- onnxruntime's own graph optimizer (``SessionOptions.optimized_model_filepath`` at
  ``ORT_ENABLE_EXTENDED``): FusedMatMul, FusedConv, FusedGemm, QuickGelu;
- ``MatMulNBitsQuantizer``: 2, 4 and 8 bits, symmetric and asymmetric, QOperator and QDQ,
  HQQ (float zero points), and with ``Gather`` quantized too (GatherBlockQuantized);
- ``MatMulBnb4Quantizer``: FP4 and NF4;
- ``quantize_dynamic`` after fusion (QAttention, QEmbedLayerNormalization), the same file after
  onnxruntime's graph optimizer (DynamicQuantizeMatMul, MatMulIntegerToFloat), and on an LSTM
  (DynamicQuantizeLSTM);
- onnxruntime-genai's model builder (``python -m onnxruntime_genai.models.builder``) on tiny
  Llama, Phi-3 and Qwen2 folders written with ``save_pretrained`` (and a word-level tokenizer
  made with ``tokenizers``, which the builder copies): fp32, int4 at accuracy levels 1 and 4,
  int4 asymmetric with block size 16, and int8.

Each file is saved with its weights inside (no external data) under ``tests/fixtures/microsoft/``.
``manifest.json`` beside them records, per file, the tool and options that made it, the base
model's config, the op histogram, the ops the test requires to be there (so a test cannot pass
on an unfused graph), and how to make valid inputs. A variant the installed tools cannot make
is recorded with the error instead of a file.

Run (needs the ``microsoft-fixtures`` extra): ``pip install -e '.[microsoft-fixtures]' &&
python tools/export_microsoft_fixtures.py``. ``--only bert genai_llama`` re-makes the files whose
names start with those prefixes; the manifest keeps the other entries.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import logging
import os
import subprocess
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable
from importlib import metadata

import onnx
import onnxruntime
import torch

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "fixtures", "microsoft")
SEED = 20261126
VOCAB = 128
OPSET = 17
#: The shapes of the inputs the tests make: batch and sequence (image side 16 for ViT).
BATCH, SEQUENCE = 2, 7
MAX_BYTES = 600_000  # each file stays well under the repo's budget


# --------------------------------------------------------------------------- base models


class _Wrapped(torch.nn.Module):
    """Calls a transformers model with keyword inputs and returns the named outputs as a tuple
    (torch's exporter passes positional arguments)."""

    def __init__(self, model, input_names, output_names):
        super().__init__()
        self.model, self.input_names, self.output_names = model, input_names, output_names

    def forward(self, *args):
        out = self.model(**dict(zip(self.input_names, args)))
        return tuple(getattr(out, name) for name in self.output_names)


def randomize_vectors(module: torch.nn.Module) -> torch.nn.Module:
    """Adds noise to every one-dimensional weight: transformers starts norm scales at one and
    biases at zero, which would leave a gamma, beta or bias mix-up unseen (and the genai builder
    leaves all-zero biases out)."""
    with torch.no_grad():
        for parameter in module.parameters():
            if parameter.ndim == 1:
                parameter.add_(0.1 * torch.randn(parameter.shape))
    return module


def _export_torchscript(module, args, input_names, output_names, dynamic_axes, opset=OPSET) -> onnx.ModelProto:
    randomize_vectors(module)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module.eval(),
            args,
            buffer,
            dynamo=False,
            input_names=input_names,
            output_names=output_names,
            dynamic_axes=dynamic_axes,
            opset_version=opset,
        )
    return onnx.load_from_string(buffer.getvalue())


def _text_axes(names):
    return {name: {0: "batch", 1: "sequence"} for name in names}


def _tokens(shape, generator):
    return torch.randint(0, VOCAB, shape, generator=generator)


def bert():
    from transformers import BertConfig, BertModel

    config = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
        type_vocab_size=2,
    )
    model = BertModel(BertConfig(**config, attn_implementation="eager"))
    g = torch.Generator().manual_seed(SEED)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    args = (
        _tokens((BATCH, SEQUENCE), g),
        torch.ones(BATCH, SEQUENCE, dtype=torch.int64),
        torch.zeros(BATCH, SEQUENCE, dtype=torch.int64),
    )
    proto = _export_torchscript(
        _Wrapped(model, names, ["last_hidden_state", "pooler_output"]),
        args,
        names,
        ["last_hidden_state", "pooler_output"],
        _text_axes(names),
    )
    return proto, {"transformers": "BertModel", **config}, {"num_heads": 2, "hidden_size": 32}


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    config = dict(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(GPT2Config(**config, use_cache=False, attn_implementation="eager"))
    g = torch.Generator().manual_seed(SEED)
    names = ["input_ids", "attention_mask"]
    args = (_tokens((BATCH, SEQUENCE), g), torch.ones(BATCH, SEQUENCE, dtype=torch.int64))
    proto = _export_torchscript(_Wrapped(model, names, ["logits"]), args, names, ["logits"], _text_axes(names))
    return proto, {"transformers": "GPT2LMHeadModel", **config}, {"num_heads": 2, "hidden_size": 32}


def vit():
    from transformers import ViTConfig, ViTModel

    config = dict(
        image_size=16,
        patch_size=4,
        num_channels=3,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
    )
    model = ViTModel(ViTConfig(**config, attn_implementation="eager"))
    names = ["pixel_values"]
    args = (torch.randn(BATCH, 3, 16, 16, generator=torch.Generator().manual_seed(SEED)),)
    proto = _export_torchscript(
        _Wrapped(model, names, ["last_hidden_state", "pooler_output"]),
        args,
        names,
        ["last_hidden_state", "pooler_output"],
        {"pixel_values": {0: "batch"}},
    )
    return proto, {"transformers": "ViTModel", **config}, {"num_heads": 2, "hidden_size": 32}


def t5():
    from transformers import T5Config, T5ForConditionalGeneration

    config = dict(
        vocab_size=VOCAB,
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=2,
        num_heads=2,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=16,
        decoder_start_token_id=0,
    )
    model = T5ForConditionalGeneration(T5Config(**config, use_cache=False, attn_implementation="eager"))
    g = torch.Generator().manual_seed(SEED)
    names = ["input_ids", "attention_mask", "decoder_input_ids"]
    args = (_tokens((BATCH, SEQUENCE), g), torch.ones(BATCH, SEQUENCE, dtype=torch.int64), _tokens((BATCH, 5), g))
    axes = {**_text_axes(names[:2]), "decoder_input_ids": {0: "batch", 1: "decoder_sequence"}}
    proto = _export_torchscript(_Wrapped(model, names, ["logits"]), args, names, ["logits"], axes)
    return proto, {"transformers": "T5ForConditionalGeneration", **config}, {"num_heads": 2, "hidden_size": 32}


def llama(hidden_size=32, opset=OPSET):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = dict(
        vocab_size=VOCAB,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(LlamaConfig(**config, use_cache=False, attn_implementation="eager"))
    g = torch.Generator().manual_seed(SEED)
    names = ["input_ids", "attention_mask"]
    args = (_tokens((BATCH, SEQUENCE), g), torch.ones(BATCH, SEQUENCE, dtype=torch.int64))
    proto = _export_torchscript(_Wrapped(model, names, ["logits"]), args, names, ["logits"], _text_axes(names), opset)
    return (
        proto,
        {"transformers": "LlamaForCausalLM", "opset": opset, **config},
        {"num_heads": 4, "hidden_size": hidden_size},
    )


class _ConvNet(torch.nn.Module):
    """Conv + activation pairs and a Gemm + activation: what onnxruntime's optimizer fuses into
    FusedConv and FusedGemm."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, stride=2)
        self.fc = torch.nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.sigmoid(self.conv2(x))
        return torch.nn.functional.leaky_relu(self.fc(torch.flatten(x, 1)), 0.1)


def convnet():
    args = (torch.randn(BATCH, 3, 8, 8, generator=torch.Generator().manual_seed(SEED)),)
    proto = _export_torchscript(_ConvNet(), args, ["x"], ["y"], {"x": {0: "batch"}})
    return proto, {"torch": "Conv2d(3,8)-ReLU-Conv2d(8,8,stride 2)-Sigmoid-Linear(128,10)-LeakyReLU"}, {}


def lstm():
    module = torch.nn.LSTM(8, 16, num_layers=1, batch_first=False, bidirectional=True)
    args = (torch.randn(5, BATCH, 8, generator=torch.Generator().manual_seed(SEED)),)

    class Outputs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = module

        def forward(self, x):
            return self.lstm(x)[0]

    proto = _export_torchscript(Outputs(), args, ["x"], ["y"], {"x": {0: "sequence", 1: "batch"}})
    return proto, {"torch": "LSTM(8, 16, bidirectional=True)"}, {}


# --------------------------------------------------------------------------- input specs

#: How the tests make each input: ``tokens`` are ids below ``high``, ``mask`` is ones with the
#: last two positions of the second row padded (right padding, what a mask index assumes),
#: ``zeros`` are zeros, ``normal`` standard normal floats.
_TEXT_KINDS = {
    "input_ids": "tokens",
    "decoder_input_ids": "tokens",
    "attention_mask": "mask",
    "token_type_ids": "zeros",
}


def _spec(model: onnx.ModelProto, shapes: dict[str, list[int]], kinds: dict[str, str]) -> list[dict]:
    initializers = {t.name for t in model.graph.initializer}
    specs = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type).name
        kind = kinds.get(value.name, "normal")
        specs.append(
            {
                "name": value.name,
                "dtype": dtype,
                "shape": shapes[value.name],
                "kind": kind,
                **({"high": VOCAB} if kind == "tokens" else {}),
            }
        )
    return specs


def text_spec(model):
    shapes = {name: [BATCH, SEQUENCE] for name in _TEXT_KINDS}
    shapes["decoder_input_ids"] = [BATCH, 5]
    return _spec(model, shapes, _TEXT_KINDS)


def image_spec(side):
    return lambda model: _spec(model, {"pixel_values": [BATCH, 3, side, side], "x": [BATCH, 3, side, side]}, {})


def sequence_spec(model):
    return _spec(model, {"x": [5, BATCH, 8]}, {})


# --------------------------------------------------------------------------- tools


def histogram(model: onnx.ModelProto) -> dict[str, int]:
    counts = collections.Counter()
    for node in model.graph.node:
        counts[node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"] += 1
    return dict(sorted(counts.items()))


def nonstandard_ops(model: onnx.ModelProto) -> list[str]:
    """The ops outside the ONNX standard: every com.microsoft op, and SimplifiedLayerNormalization,
    which onnxruntime's tools write in the default domain."""
    standard = {schema.name for schema in onnx.defs.get_all_schemas_with_history() if schema.domain == ""}
    names = set()
    for node in model.graph.node:
        if node.domain == "com.microsoft":
            names.add(f"com.microsoft:{node.op_type}")
        elif node.domain in ("", "ai.onnx") and node.op_type not in standard:
            names.add(node.op_type)
    return sorted(names)


@contextlib.contextmanager
def _quiet():
    """The tools print progress and warnings; the manifest records what they made."""
    level = logging.root.level
    logging.disable(logging.WARNING)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            yield
        finally:
            logging.disable(level)


def transformer_optimizer(
    base: onnx.ModelProto, model_type: str, opt_level: int, sizes: dict, **fusion
) -> onnx.ModelProto:
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    options = FusionOptions(model_type)
    for key, value in fusion.items():
        setattr(options, key, value)
    with tempfile.TemporaryDirectory() as tmp, _quiet():
        path = os.path.join(tmp, "base.onnx")
        onnx.save(base, path)
        optimized = optimizer.optimize_model(
            path, model_type=model_type, opt_level=opt_level, use_gpu=False, optimization_options=options, **sizes
        )
        return optimized.model


def session_optimizer(base: onnx.ModelProto) -> onnx.ModelProto:
    """onnxruntime's own graph optimizer at ORT_ENABLE_EXTENDED, the model it runs written out
    (the layout transformations of ORT_ENABLE_ALL are hardware specific, and not written)."""
    with tempfile.TemporaryDirectory() as tmp:
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = os.path.join(tmp, "optimized.onnx")
        onnxruntime.InferenceSession(base.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return onnx.load(options.optimized_model_filepath)


def matmul_nbits(base: onnx.ModelProto, **options) -> onnx.ModelProto:
    from onnxruntime.quantization import matmul_nbits_quantizer as q

    algorithm = options.pop("algorithm", "default")
    fmt = getattr(q.QuantFormat, options.pop("quant_format", "QOperator"))
    if algorithm == "hqq":
        config = q.HQQWeightOnlyQuantConfig(
            block_size=options["block_size"],
            bits=options["bits"],
            quant_format=fmt,
            op_types_to_quantize=options.get("op_types_to_quantize"),
        )
    else:
        config = q.DefaultWeightOnlyQuantConfig(quant_format=fmt, **options)
    with _quiet():
        quantizer = q.MatMulNBitsQuantizer(onnx.ModelProto.FromString(base.SerializeToString()), algo_config=config)
        quantizer.process()
    return quantizer.model.model


def bnb4(base: onnx.ModelProto, quant_type: str, block_size: int) -> onnx.ModelProto:
    from onnxruntime.quantization.matmul_bnb4_quantizer import MatMulBnb4Quantizer

    kind = getattr(MatMulBnb4Quantizer, quant_type)
    with _quiet():
        quantizer = MatMulBnb4Quantizer(onnx.ModelProto.FromString(base.SerializeToString()), kind, block_size)
        quantizer.process()
    return quantizer.model.model


def dynamic_quantization(base: onnx.ModelProto, **options) -> onnx.ModelProto:
    from onnxruntime.quantization import quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp, _quiet():
        source, target = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "quantized.onnx")
        onnx.save(base, source)
        quantize_dynamic(source, target, **options)
        return onnx.load(target)


# --------------------------------------------------------------------------- onnxruntime-genai's builder


def _tokenizer(folder: str) -> None:
    """A word-level tokenizer over the ids ``t0 .. t127`` (the builder copies the tokenizer files
    beside the model and writes genai_config.json from them)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel({f"t{i}": i for i in range(VOCAB)}, unk_token="t0"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="t0", bos_token="t1", eos_token="t2").save_pretrained(
        folder
    )


def _decoder_config(architecture: str) -> tuple[object, dict]:
    import transformers

    common = dict(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=False,
        bos_token_id=1,
        eos_token_id=2,
    )
    if architecture == "llama":
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(**common)), {
            "transformers": "LlamaForCausalLM",
            **common,
        }
    if architecture == "phi3":
        extra = dict(pad_token_id=0, original_max_position_embeddings=128)
        return (
            transformers.Phi3ForCausalLM(transformers.Phi3Config(**common, **extra)),
            {"transformers": "Phi3ForCausalLM", **common, **extra},
        )
    if architecture == "qwen2":
        return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common)), {
            "transformers": "Qwen2ForCausalLM",
            **common,
        }
    raise ValueError(architecture)


def genai_builder(
    architecture: str, precision: str, extra_options: dict[str, str]
) -> tuple[onnx.ModelProto, dict, list[str], dict]:
    torch.manual_seed(SEED)
    model, config = _decoder_config(architecture)
    randomize_vectors(model)
    with tempfile.TemporaryDirectory() as tmp:
        folder, out = os.path.join(tmp, "hf"), os.path.join(tmp, "out")
        model.save_pretrained(folder)
        _tokenizer(folder)
        command = [
            sys.executable,
            "-m",
            "onnxruntime_genai.models.builder",
            "-i",
            folder,
            "-o",
            out,
            "-p",
            precision,
            "-e",
            "cpu",
            "-c",
            os.path.join(tmp, "cache"),
        ]
        if extra_options:
            command += ["--extra_options", *(f"{k}={v}" for k, v in extra_options.items())]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{' '.join(command[1:])} failed:\n{done.stderr[-3000:]}")
        proto = onnx.load(os.path.join(out, "model.onnx"))  # reads model.onnx.data too
        with open(os.path.join(out, "genai_config.json")) as f:
            genai_config = json.load(f)
    shown = [
        "python",
        "-m",
        "onnxruntime_genai.models.builder",
        "-i",
        "<hf folder>",
        "-o",
        "<out>",
        "-p",
        precision,
        "-e",
        "cpu",
    ]
    if extra_options:
        shown += ["--extra_options", *(f"{k}={v}" for k, v in extra_options.items())]
    return proto, config, shown, genai_config


def decoder_spec(model: onnx.ModelProto, kv_heads: int, head_size: int, past: int, new: int, batch: int) -> list[dict]:
    """A step with ``past`` cached positions (random floats, as a cache holds) and ``new`` tokens.
    (The builder declares the caches' last axis symbolic, ``kv_cache_dim``: genai_config.json
    gives the head size.)"""
    specs = []
    for value in model.graph.input:
        dims = [d.dim_value or d.dim_param for d in value.type.tensor_type.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type).name
        if value.name == "input_ids":
            specs.append({"name": value.name, "dtype": dtype, "shape": [batch, new], "kind": "tokens", "high": VOCAB})
        elif value.name == "attention_mask":
            specs.append({"name": value.name, "dtype": dtype, "shape": [batch, past + new], "kind": "ones"})
        elif value.name == "position_ids":
            specs.append(
                {"name": value.name, "dtype": dtype, "shape": [batch, new], "kind": "positions", "start": past}
            )
        elif value.name.startswith("past_key_values."):
            specs.append(
                {"name": value.name, "dtype": dtype, "shape": [batch, kv_heads, past, head_size], "kind": "normal"}
            )
        else:
            raise ValueError(f"the builder wrote an input the tests do not know how to make: {value.name} {dims}")
    return specs


# --------------------------------------------------------------------------- the fixtures


def _variants() -> list[tuple[str, Callable[[], dict]]]:
    """(name, maker) per fixture; a maker returns the manifest entry with ``model`` in it."""
    bases: dict[str, tuple] = {}

    def base(name, maker, *args):
        if name not in bases:
            torch.manual_seed(SEED)
            bases[name] = maker(*args)
        return bases[name]

    variants = []

    def optimized(name, family, maker, model_type, spec, required, opt_level, note="", **fusion):
        def make():
            proto, config, sizes = base(family, maker)
            model = transformer_optimizer(proto, model_type, opt_level, sizes, **fusion)
            options = {
                "model_type": model_type,
                "opt_level": opt_level,
                "use_gpu": False,
                **sizes,
                **({"optimization_options": fusion} if fusion else {}),
            }
            return {
                "model": model,
                "tool": "onnxruntime.transformers.optimizer.optimize_model",
                "options": options,
                "base": {"exporter": "torch.onnx.export(dynamo=False)", "opset": OPSET, "config": config},
                "inputs": spec(model),
                "required_ops": required,
                "note": note,
            }

        variants.append((name, make))

    bert_ops = [
        "com.microsoft:EmbedLayerNormalization",
        "com.microsoft:Attention",
        "com.microsoft:SkipLayerNormalization",
        "com.microsoft:BiasGelu",
    ]
    for level in (0, 2):
        optimized(f"bert_opt{level}", "bert", bert, "bert", text_spec, bert_ops, level)
        optimized(
            f"gpt2_opt{level}",
            "gpt2",
            gpt2,
            "gpt2",
            text_spec,
            ["com.microsoft:SkipLayerNormalization", "com.microsoft:FastGelu"],
            level,
            "transformers' GPT-2 attention does not match the optimizer's attention patterns: it stays unfused.",
        )
        optimized(
            f"vit_opt{level}",
            "vit",
            vit,
            "vit",
            image_spec(16),
            ["com.microsoft:SkipLayerNormalization", "com.microsoft:BiasGelu"],
            level,
            "transformers' ViT attention does not match the optimizer's attention patterns: it stays unfused.",
        )
        optimized(
            f"t5_opt{level}",
            "t5",
            t5,
            "t5",
            text_spec,
            ["SimplifiedLayerNormalization", "com.microsoft:SkipSimplifiedLayerNormalization"],
            level,
            "transformers' T5 attention does not match the optimizer's attention patterns: it stays unfused.",
        )
    # The optimizer has no Llama type; onnxruntime's Llama recipes use gpt2's fusions.
    optimized(
        "llama_opt0",
        "llama",
        llama,
        "gpt2",
        text_spec,
        ["SimplifiedLayerNormalization", "com.microsoft:SkipSimplifiedLayerNormalization"],
        0,
    )
    optimized(
        "llama_opt2", "llama", llama, "gpt2", text_spec, ["SimplifiedLayerNormalization", "com.microsoft:QuickGelu"], 2
    )
    optimized(
        "bert_opt0_multihead",
        "bert",
        bert,
        "bert",
        text_spec,
        ["com.microsoft:EmbedLayerNormalization", "com.microsoft:MultiHeadAttention"],
        0,
        use_multi_head_attention=True,
    )
    optimized(
        "bert_opt0_raw_mask",
        "bert",
        bert,
        "bert",
        text_spec,
        ["com.microsoft:EmbedLayerNormalization", "com.microsoft:Attention"],
        0,
        attention_mask_format=2,
    )
    optimized(
        "bert_opt0_fast_gelu",
        "bert",
        bert,
        "bert",
        text_spec,
        ["com.microsoft:FastGelu"],
        0,
        enable_gelu_approximation=True,
    )
    optimized(
        "bert_opt0_gelu",
        "bert",
        bert,
        "bert",
        text_spec,
        ["com.microsoft:Gelu"],
        0,
        enable_bias_gelu=False,
        enable_skip_layer_norm=False,
        enable_embed_layer_norm=False,
    )

    def ort_optimized(name, family, maker, spec, required):
        def make():
            proto, config, _ = base(family, maker)
            model = session_optimizer(proto)
            return {
                "model": model,
                "tool": "onnxruntime.InferenceSession(optimized_model_filepath=...)",
                "options": {"graph_optimization_level": "ORT_ENABLE_EXTENDED", "providers": ["CPUExecutionProvider"]},
                "base": {"exporter": "torch.onnx.export(dynamo=False)", "opset": OPSET, "config": config},
                "inputs": spec(model),
                "required_ops": required,
            }

        variants.append((name, make))

    ort_optimized("vit_ort_extended", "vit", vit, image_spec(16), ["com.microsoft:FusedMatMul"])
    ort_optimized("llama_ort_extended", "llama", llama, text_spec, ["com.microsoft:FusedMatMul"])
    ort_optimized(
        "convnet_ort_extended",
        "convnet",
        convnet,
        image_spec(8),
        ["com.microsoft:FusedConv", "com.microsoft:FusedGemm"],
    )

    def quantized(
        name, tool, quantize, options, required, inputs=text_spec, family="llama64", maker=llama, maker_args=(64, 18)
    ):
        def make():
            proto, config, _ = base(family, maker, *maker_args)
            model = quantize(proto, **options)
            return {
                "model": model,
                "tool": tool,
                "options": options,
                "base": {"exporter": "torch.onnx.export(dynamo=False)", "config": config},
                "inputs": inputs(model),
                "required_ops": required,
            }

        variants.append((name, make))

    nbits = "onnxruntime.quantization.matmul_nbits_quantizer.MatMulNBitsQuantizer"
    for bits in (2, 4, 8):
        for symmetric in (True, False):
            tag = "sym" if symmetric else "asym"
            quantized(
                f"llama_nbits{bits}_{tag}",
                nbits,
                matmul_nbits,
                {"bits": bits, "block_size": 16, "is_symmetric": symmetric, "quant_format": "QOperator"},
                ["com.microsoft:MatMulNBits"],
            )
            quantized(
                f"llama_nbits{bits}_{tag}_qdq",
                nbits,
                matmul_nbits,
                {"bits": bits, "block_size": 16, "is_symmetric": symmetric, "quant_format": "QDQ"},
                ["DequantizeLinear"],
            )
    quantized(
        "llama_nbits4_block32_accuracy4",
        nbits,
        matmul_nbits,
        {"bits": 4, "block_size": 32, "is_symmetric": False, "accuracy_level": 4, "quant_format": "QOperator"},
        ["com.microsoft:MatMulNBits"],
    )
    quantized(
        "llama_nbits4_gather",
        nbits,
        matmul_nbits,
        {
            "bits": 4,
            "block_size": 16,
            "is_symmetric": False,
            "quant_format": "QOperator",
            "op_types_to_quantize": ("MatMul", "Gather"),
        },
        ["com.microsoft:MatMulNBits", "com.microsoft:GatherBlockQuantized"],
    )
    quantized(
        "llama_nbits4_hqq",
        nbits,
        matmul_nbits,
        {"algorithm": "hqq", "bits": 4, "block_size": 16},
        ["com.microsoft:MatMulNBits"],
    )
    bnb = "onnxruntime.quantization.matmul_bnb4_quantizer.MatMulBnb4Quantizer"
    quantized("llama_bnb4_fp4", bnb, bnb4, {"quant_type": "FP4", "block_size": 16}, ["com.microsoft:MatMulBnb4"])
    quantized("llama_bnb4_nf4", bnb, bnb4, {"quant_type": "NF4", "block_size": 32}, ["com.microsoft:MatMulBnb4"])

    def fused_then_dynamic(name, after_session_optimizer):
        def make():
            proto, config, sizes = base("bert", bert)
            fused = transformer_optimizer(proto, "bert", 0, sizes)
            # The optimizer writes com.microsoft nodes without importing the domain (onnxruntime
            # assumes it); quantize_dynamic's shape inference needs the import.
            if not any(o.domain == "com.microsoft" for o in fused.opset_import):
                fused.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
            # quantize_dynamic reads each MatMul input's type from value_info: onnxruntime's
            # symbolic shape inference (which knows the com.microsoft ops) writes it, as
            # onnxruntime's quantization docs ask (quant_pre_process does the same).
            from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

            with _quiet():
                fused = SymbolicShapeInference.infer_shapes(fused, auto_merge=True)
            # reduce_range: 7-bit weights, as onnxruntime's quantization docs advise on x86-64.
            # Without it onnxruntime's AVX2 uint8 x int8 kernels saturate sums of two products
            # in int16 and depart from the ops' text (jaxonnx follows the text; README).
            model = dynamic_quantization(fused, reduce_range=True)
            tool = "optimize_model(model_type='bert', opt_level=0), then onnxruntime.quantization.quantize_dynamic"
            required = ["com.microsoft:QAttention", "com.microsoft:QEmbedLayerNormalization"]
            if after_session_optimizer:
                model = session_optimizer(model)
                tool += ", then onnxruntime's graph optimizer at ORT_ENABLE_EXTENDED"
                required = ["com.microsoft:QAttention", "com.microsoft:DynamicQuantizeMatMul"]
            return {
                "model": model,
                "tool": tool,
                "options": {"quantize_dynamic": {"reduce_range": True}},
                "base": {"exporter": "torch.onnx.export(dynamo=False)", "opset": OPSET, "config": config},
                "inputs": text_spec(model),
                "required_ops": required,
            }

        variants.append((name, make))

    fused_then_dynamic("bert_opt0_dynamic_int8", False)
    fused_then_dynamic("bert_opt0_dynamic_int8_ort_extended", True)
    quantized(
        "lstm_dynamic_int8",
        "onnxruntime.quantization.quantize_dynamic",
        dynamic_quantization,
        {"reduce_range": True},
        ["com.microsoft:DynamicQuantizeLSTM"],
        inputs=sequence_spec,
        family="lstm",
        maker=lstm,
        maker_args=(),
    )

    def built(name, architecture, precision, extra):
        def make():
            model, config, command, genai_config = genai_builder(architecture, precision, extra)
            required = ["com.microsoft:GroupQueryAttention", "com.microsoft:SkipSimplifiedLayerNormalization"]
            if precision in ("int4", "int8"):
                required.append("com.microsoft:MatMulNBits")
            decoder = genai_config["model"]["decoder"]
            return {
                "model": model,
                "tool": "onnxruntime_genai.models.builder",
                "options": {"command": " ".join(command)},
                "base": {"save_pretrained": True, "config": config},
                # A decoding step (batch 2, one new token after 3 cached), and a chunk of 4 new
                # tokens after 3 cached (onnxruntime's GroupQueryAttention takes more than
                # one new token with a cache only at batch 1).
                "inputs": decoder_spec(model, decoder["num_key_value_heads"], decoder["head_size"], 3, 1, BATCH),
                "second_inputs": decoder_spec(model, decoder["num_key_value_heads"], decoder["head_size"], 3, 4, 1),
                "required_ops": required,
                "decoder": {
                    "num_layers": decoder["num_hidden_layers"],
                    "num_kv_heads": decoder["num_key_value_heads"],
                    "head_size": decoder["head_size"],
                    "vocab_size": genai_config["model"]["vocab_size"],
                },
            }

        variants.append((name, make))

    for architecture in ("llama", "phi3", "qwen2"):
        built(f"genai_{architecture}_fp32", architecture, "fp32", {})
        built(f"genai_{architecture}_int4_accuracy1", architecture, "int4", {"accuracy_level": "1"})
        built(f"genai_{architecture}_int4_accuracy4", architecture, "int4", {"accuracy_level": "4"})
    built(
        "genai_llama_int4_asym_block16",
        "llama",
        "int4",
        {"accuracy_level": "1", "is_symmetric": "false", "block_size": "16"},
    )
    built("genai_llama_int8", "llama", "int8", {"accuracy_level": "1"})
    return variants


def strip(model: onnx.ModelProto) -> onnx.ModelProto:
    model.doc_string = ""
    del model.metadata_props[:]
    for node in model.graph.node:
        node.doc_string = ""
    return model


def versions() -> dict[str, str]:
    found = {}
    for package in ("onnxruntime", "onnxruntime-genai", "onnx", "torch", "transformers", "tokenizers"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="re-make the fixtures whose names start with these")
    parser.add_argument("--out", default=OUT_DIR, help="the folder to write (tests/fixtures/microsoft by default)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    manifest_path = os.path.join(args.out, "manifest.json")
    manifest = {"fixtures": {}}
    if args.only and os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    manifest["versions"] = versions()
    manifest["seed"] = SEED
    for name, make in _variants():
        if args.only and not any(name.startswith(prefix) for prefix in args.only):
            continue
        path = os.path.join(args.out, f"{name}.onnx")
        if os.path.exists(path):
            os.remove(path)
        try:
            entry = make()
            model = strip(entry.pop("model"))
            onnx.save(model, path)  # weights inside: onnx.load above read any external data
            size = os.path.getsize(path)
            assert size < MAX_BYTES, f"{name} is {size} bytes"
            entry.update(
                {
                    "size_bytes": size,
                    "op_histogram": histogram(model),
                    "nonstandard_ops": nonstandard_ops(model),
                    "opsets": {o.domain or "ai.onnx": o.version for o in model.opset_import},
                }
            )
            missing = sorted(set(entry["required_ops"]) - set(entry["op_histogram"]))
            assert not missing, f"the tool did not write {missing}; it wrote {entry['op_histogram']}"
            onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])  # it runs
        except Exception as error:  # recorded, so the manifest says what the installed tools could not make
            traceback.print_exc()
            if os.path.exists(path):
                os.remove(path)
            manifest["fixtures"][name] = {"export_error": f"{type(error).__name__}: {error}"[:2000]}
            print(f"{name}: FAILED ({type(error).__name__}: {str(error)[:200]})")
        else:
            manifest["fixtures"][name] = entry
            print(f"{name}: {size} bytes, {', '.join(entry['nonstandard_ops'])}")
        write_manifest(manifest_path, manifest)


def write_manifest(path: str, manifest: dict) -> None:
    manifest["fixtures"] = dict(sorted(manifest["fixtures"].items()))
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1, default=list)
        f.write("\n")


if __name__ == "__main__":
    main()
