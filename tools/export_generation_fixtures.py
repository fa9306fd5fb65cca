"""Exports the text-generation fixtures that ``tests/test_generation.py`` decodes with jaxonnx.

Tiny causal language models with random weights (fixed seeds, built from configs: nothing is
downloaded), Llama, Qwen2, Gemma, Phi and GPT-2 each exported twice, Mistral (a sliding window)
and Qwen3-MoE (experts routed by NonZero) by Optimum, and Gemma-2 by the builder
(``EXPORTERS``), with the KV cache as graph inputs and outputs:

- ``optimum``: HF Optimum's ``text-generation-with-past`` export (``optimum-onnx``'s
  ``main_export`` from a local folder): inputs ``input_ids``, ``attention_mask``,
  ``position_ids``, ``past_key_values.{i}.key/value``; outputs ``logits``,
  ``present.{i}.key/value``; the cache grows by Concat.
- ``dynamo``: PyTorch's dynamo exporter (``torch.onnx.export(..., dynamo=True)``) of the same
  model taking its cache as a tuple of (key, value) pairs: inputs
  ``past_key_values_{i}_{0,1}`` as the exporter flattens them, outputs named after the
  graph's nodes (``linear_14``, ``cat_7``...), in the order of the cache.

- ``genai_fp32`` / ``genai_int4`` (Llama and Qwen2; Gemma-2 at int4, whose sliding-window layer's
  GroupQueryAttention keeps its cache as a window, ``sliding_window_cache``; 16-wide heads as
  onnxruntime's CPU GroupQueryAttention requires): onnxruntime-genai's model builder (``python -m
  onnxruntime_genai.models.builder -p fp32|int4 -e cpu``, int4 at ``accuracy_level=1``), GroupQueryAttention,
  MatMulNBits for int4 and SkipSimplifiedLayerNormalization; inputs ``input_ids``,
  ``attention_mask``, ``past_key_values.{i}.key/value`` (the head size symbolic,
  ``kv_cache_dim``); its ``genai_config.json`` and tokenizer files are kept beside it, and the
  manifest records ``og.Generator``'s greedy tokens of each prompt alone (the reference for
  these files; og stops a prompt at its eos, token 2, and leaves it out: -1 from there on),
  and of the left-padded batch (which onnxruntime-genai 0.18 gets wrong for some files: its
  padded rows then differ from the same prompts alone).

For every export it writes ``tests/fixtures/generation/NAME/model.onnx`` (doc strings and
metadata stripped), the model's ``config.json`` and ``generation_config.json``, and for
``llama_optimum`` a ``tokenizer.json`` (a byte-level BPE trained here on a few sentences, its
vocabulary the model's size) so that ``jaxonnx generate`` can print text. ``manifest.json``
records per fixture the model type, exporter, versions, sizes, and what was checked here:
onnxruntime's greedy KV-cache loop gives torch's ``generate`` tokens on a batch of uneven,
left-padded prompts.

Optimum needs ``transformers<5`` and onnxruntime-genai's builder ``transformers>=5``, so the
builder runs in a second environment (``--genai-python``), e.g.::

    python -m venv --system-site-packages /work/venv-optimum
    /work/venv-optimum/bin/pip install optimum-onnx 'transformers<5' tokenizers onnxruntime-genai
    python -m venv --system-site-packages /work/venv-genai
    /work/venv-genai/bin/pip install 'transformers>=5' tokenizers onnxruntime-genai
    /work/venv-optimum/bin/python tools/export_generation_fixtures.py --genai-python /work/venv-genai/bin/python

(``--only llama gpt2`` re-exports some model types; the manifest keeps the other entries.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
import onnxruntime
import torch

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "fixtures", "generation")
SEED = 20261126
VOCAB = 128
# Weights drawn wider than HF's default 0.02, so that a tiny model's logits differ by far more
# than float32 rounding and greedy tokens are decided by the model, not by the runtime.
INIT_RANGE = 0.5
# The prompts the manifest's torch tokens were generated from (left-padded, pad 0).
PROMPT_LENGTHS = (5, 2, 7)
NEW_TOKENS = 12


def _configs():
    from transformers import (
        Gemma2Config,
        GemmaConfig,
        GPT2Config,
        LlamaConfig,
        MistralConfig,
        PhiConfig,
        Qwen2Config,
        Qwen3MoeConfig,
    )

    common = dict(vocab_size=VOCAB, initializer_range=INIT_RANGE, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    decoder = dict(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=128,
        **common,
    )
    # Each model's seed follows its place here: new model types go at the end.
    return {
        "llama": lambda: LlamaConfig(num_key_value_heads=2, **decoder),
        "qwen2": lambda: Qwen2Config(num_key_value_heads=2, **decoder),
        "gemma": lambda: GemmaConfig(num_key_value_heads=1, head_dim=8, **decoder),
        "phi": lambda: PhiConfig(num_key_value_heads=4, partial_rotary_factor=0.5, **decoder),
        "gpt2": lambda: GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=128, **common),
        # A sliding window of 5 keys, shorter than the longest prompt and its new tokens.
        "mistral": lambda: MistralConfig(num_key_value_heads=2, sliding_window=5, **decoder),
        # Soft-capped scores and logits, a sliding window of 5 keys on every other layer (the
        # builder's file keeps that layer's cache as a sliding window: sliding_window_cache).
        "gemma2": lambda: Gemma2Config(
            num_key_value_heads=1,
            head_dim=8,
            sliding_window=5,
            attn_logit_softcapping=5.0,
            final_logit_softcapping=3.0,
            **decoder,
        ),
        # Mixture of Experts (4 experts, 2 a token, q/k norms): Optimum's export routes each
        # expert's rows with NonZero, which decodes under jit with size hints.
        "qwen3_moe": lambda: Qwen3MoeConfig(
            num_key_value_heads=2, head_dim=8, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, **decoder
        ),
    }


# Which exports each model type gets; the others get Optimum's and dynamo's.
EXPORTERS = {
    "llama": ("optimum", "dynamo", "genai_fp32", "genai_int4"),
    "qwen2": ("optimum", "dynamo", "genai_fp32", "genai_int4"),
    "mistral": ("optimum",),
    "gemma2": ("genai_int4",),
    "qwen3_moe": ("optimum",),
}


def strip(model: onnx.ModelProto) -> onnx.ModelProto:
    """Doc strings, metadata and intermediate value infos removed: a smaller file, same graph."""
    model.doc_string = ""
    del model.metadata_props[:]
    graph = model.graph
    graph.doc_string = ""
    del graph.value_info[:]
    for node in graph.node:
        node.doc_string = ""
        del node.metadata_props[:]
    for value in [*graph.input, *graph.output]:
        value.doc_string = ""
        del value.metadata_props[:]
    return model


def prompts(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A batch of uneven prompts, left-padded with 0, and its attention mask."""
    width = max(PROMPT_LENGTHS)
    ids = np.zeros((len(PROMPT_LENGTHS), width), np.int64)
    mask = np.zeros_like(ids)
    for row, length in enumerate(PROMPT_LENGTHS):
        ids[row, width - length :] = rng.integers(3, VOCAB, length)
        mask[row, width - length :] = 1
    return ids, mask


def ort_greedy(path: str, ids: np.ndarray, mask: np.ndarray, new_tokens: int) -> np.ndarray:
    """onnxruntime's greedy KV-cache loop, past and present paired in graph order."""
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    inputs = session.get_inputs()
    names = {i.name for i in inputs}
    pasts = [i for i in inputs if i.name not in ("input_ids", "attention_mask", "position_ids")]
    cache = {i.name: np.zeros((ids.shape[0], i.shape[1], 0, i.shape[3]), np.float32) for i in pasts}
    tokens, step_ids, step_mask = [], ids, mask
    positions = np.where(mask == 1, np.cumsum(mask, -1) - 1, 1)
    for _ in range(new_tokens):
        feed = {"input_ids": step_ids, "attention_mask": step_mask, "position_ids": positions, **cache}
        outputs = session.run(None, {name: value for name, value in feed.items() if name in names})
        token = outputs[0][:, -1].argmax(-1)
        tokens.append(token)
        cache = dict(zip(cache, outputs[1:]))
        positions = step_mask.sum(-1, keepdims=True)
        step_ids, step_mask = token[:, None], np.concatenate([step_mask, np.ones_like(token[:, None])], -1)
    return np.stack(tokens, -1)


def torch_greedy(model, ids: np.ndarray, mask: np.ndarray, new_tokens: int) -> np.ndarray:
    out = model.generate(
        torch.from_numpy(ids),
        attention_mask=torch.from_numpy(mask),
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        do_sample=False,
        eos_token_id=None,
        pad_token_id=0,
    )
    return out[:, ids.shape[1] :].numpy()


class CacheAsTuples(torch.nn.Module):
    """The causal LM with its cache as a tuple of (key, value) pairs in and out, the form
    torch's dynamo exporter flattens into graph inputs and outputs."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, position_ids, past_key_values):
        from transformers import DynamicCache

        cache = DynamicCache.from_legacy_cache(past_key_values)
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=True,
        )
        return out.logits, out.past_key_values.to_legacy_cache()


def export_dynamo(model, config, path: str) -> None:
    layers = config.num_hidden_layers
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    batch, seq, past = 2, 3, 4
    args = (
        torch.randint(3, VOCAB, (batch, seq)),
        torch.ones(batch, past + seq, dtype=torch.int64),
        torch.arange(past, past + seq).expand(batch, seq),
        tuple(
            (torch.randn(batch, heads, past, head_dim), torch.randn(batch, heads, past, head_dim))
            for _ in range(layers)
        ),
    )
    b, s, p, t = (
        torch.export.Dim(n) for n in ("batch", "sequence_length", "past_sequence_length", "total_sequence_length")
    )
    dynamic = {
        "input_ids": {0: b, 1: s},
        "attention_mask": {0: b, 1: t},
        "position_ids": {0: b, 1: s},
        "past_key_values": tuple(({0: b, 2: p}, {0: b, 2: p}) for _ in range(layers)),
    }
    program = torch.onnx.export(CacheAsTuples(model), args, dynamo=True, dynamic_shapes=dynamic, optimize=True)
    program.save(path)


def export_optimum(folder: str, out: str) -> None:
    from optimum.exporters.onnx import main_export

    main_export(folder, output=out, task="text-generation-with-past", do_validation=False)


def train_tokenizer(path: str) -> None:
    """A byte-level BPE of the model's vocabulary size, trained on a few sentences; ids 0-2
    are <pad>, <s>, </s> as in the configs."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    text = [
        "the quick brown fox jumps over the lazy dog",
        "hello world, this is jaxonnx generating text",
        "a tiny random llama says nothing in particular",
    ] * 4
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=["<pad>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()[:60],
        show_progress=False,
    )
    tokenizer.train_from_iterator(text, trainer)
    assert tokenizer.get_vocab_size() <= VOCAB, tokenizer.get_vocab_size()
    tokenizer.save(path)


def export_genai(model_type: str, index: int, precision: str, out: str, genai_python: str, ids, mask) -> dict:
    """The builder's file from a 16-wide-head model, and og.Generator's greedy tokens."""
    import onnxruntime_genai as og
    from tokenizers import Tokenizer
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    config = _configs()[model_type]()
    config.hidden_size, config.intermediate_size, config.head_dim = 64, 128, 16
    torch.manual_seed(SEED + 100 + index)
    model = AutoModelForCausalLM.from_config(config).eval()
    with tempfile.TemporaryDirectory() as tmp:
        folder, built = os.path.join(tmp, "hf"), os.path.join(tmp, "out")
        model.save_pretrained(folder)
        train_tokenizer(os.path.join(tmp, "tokenizer.json"))
        PreTrainedTokenizerFast(
            tokenizer_object=Tokenizer.from_file(os.path.join(tmp, "tokenizer.json")),
            pad_token="<pad>",
            bos_token="<s>",
            eos_token="</s>",
        ).save_pretrained(folder)
        command = [
            genai_python,
            "-m",
            "onnxruntime_genai.models.builder",
            "-i",
            folder,
            "-o",
            built,
            "-p",
            precision,
            "-e",
            "cpu",
            "-c",
            os.path.join(tmp, "cache"),
        ]
        if precision == "int4":
            # onnxruntime's default for int4 on CPU (accuracy_level 4) quantizes the activations to
            # int8 in MatMulNBits; level 1 computes in float32, as jaxonnx does, so tokens compare exactly.
            command += ["--extra_options", "accuracy_level=1"]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"the builder failed:\n{done.stderr[-3000:]}")
        onnx.save(strip(onnx.load(os.path.join(built, "model.onnx"))), os.path.join(out, "model.onnx"))
        for name in ("genai_config.json", "tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(built, name), os.path.join(out, name))
        shutil.copy(os.path.join(folder, "config.json"), os.path.join(out, "config.json"))
    generator_model = og.Model(out)

    def og_greedy(prompts):
        params = og.GeneratorParams(generator_model)
        params.set_search_options(
            max_length=int(prompts.shape[1] + NEW_TOKENS), do_sample=False, batch_size=len(prompts)
        )
        generator = og.Generator(generator_model, params)
        generator.append_tokens(prompts.astype(np.int32))  # left-padded with pad_token_id 0
        while not generator.is_done():
            generator.generate_next_token()
        rows = [list(generator.get_sequence(row)[prompts.shape[1] :]) for row in range(len(prompts))]
        return np.array([row + [-1] * (NEW_TOKENS - len(row)) for row in rows])  # -1 from a prompt's eos on

    # Each prompt alone (what every row of a batch must give), and og's own batch of them.
    alone = np.concatenate([og_greedy(row[m == 1][None]) for row, m in zip(ids, mask)])
    batched = og_greedy(ids)
    return {
        "builder": " ".join(["python", *command[1:3], "-p", precision, "-e", "cpu", *command[13:]]),
        "og_greedy": alone.tolist(),
        "og_greedy_batched": batched.tolist(),
        "og_batch_equals_alone": bool(np.array_equal(alone, batched)),
        "onnxruntime_genai": og.__version__ if hasattr(og, "__version__") else "?",
        "torch_greedy_of_the_hf_model": torch_greedy(model, ids, mask, NEW_TOKENS).tolist(),
    }


def main(argv=None) -> int:
    import transformers
    from transformers import AutoModelForCausalLM

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="model types to re-export (the manifest keeps the others)")
    parser.add_argument(
        "--genai-python",
        default=sys.executable,
        help="a Python with onnxruntime-genai and transformers>=5 to run the builder with",
    )
    args = parser.parse_args(argv)
    os.makedirs(OUT_DIR, exist_ok=True)
    manifest_path = os.path.join(OUT_DIR, "manifest.json")
    manifest = json.load(open(manifest_path)) if os.path.exists(manifest_path) else {}
    ids, mask = prompts(np.random.default_rng(SEED))
    for index, (model_type, make_config) in enumerate(_configs().items()):
        if args.only and model_type not in args.only:
            continue
        torch.manual_seed(SEED + index)
        config = make_config()
        model = AutoModelForCausalLM.from_config(config).eval()
        expected = torch_greedy(model, ids, mask, NEW_TOKENS)
        with tempfile.TemporaryDirectory() as hf_folder:
            model.save_pretrained(hf_folder)
            exporters = EXPORTERS.get(model_type, ("optimum", "dynamo"))
            for exporter in exporters:
                name = f"{model_type}_{exporter}"
                out = os.path.join(OUT_DIR, name)
                shutil.rmtree(out, ignore_errors=True)
                os.makedirs(out)
                path = os.path.join(out, "model.onnx")
                entry = {
                    "model_type": model_type,
                    "exporter": exporter,
                    "torch": torch.__version__,
                    "transformers": transformers.__version__,
                }
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        if exporter.startswith("genai"):
                            entry.update(
                                export_genai(
                                    model_type, index, exporter.split("_")[1], out, args.genai_python, ids, mask
                                )
                            )
                        elif exporter == "optimum":
                            from importlib.metadata import version

                            with tempfile.TemporaryDirectory() as tmp:
                                export_optimum(hf_folder, tmp)
                                shutil.copy(os.path.join(tmp, "model.onnx"), path)
                            entry["optimum_onnx"] = version("optimum-onnx")
                        else:
                            export_dynamo(model, config, path)
                    proto = strip(onnx.load(path))
                    onnx.save(proto, path)
                    for extra in ("config.json", "generation_config.json"):
                        if not os.path.exists(os.path.join(out, extra)):
                            shutil.copy(os.path.join(hf_folder, extra), os.path.join(out, extra))
                    if name == "llama_optimum":
                        train_tokenizer(os.path.join(out, "tokenizer.json"))
                    ort = ort_greedy(path, ids, mask, NEW_TOKENS) if not exporter.startswith("genai") else None
                    entry.update(
                        bytes=os.path.getsize(path),
                        opset=next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
                        inputs=[i.name for i in proto.graph.input],
                        outputs=[o.name for o in proto.graph.output],
                        prompt_ids=ids.tolist(),
                        prompt_mask=mask.tolist(),
                        torch_greedy=None if exporter.startswith("genai") else expected.tolist(),
                        onnxruntime_equals_torch=None if ort is None else bool(np.array_equal(ort, expected)),
                    )
                except Exception as error:  # noqa: BLE001  (recorded, the other exports go on)
                    shutil.rmtree(out, ignore_errors=True)
                    entry["error"] = f"{type(error).__name__}: {error}"[:2000]
                manifest[name] = entry
                print(name, {k: v for k, v in entry.items() if k not in ("prompt_ids", "prompt_mask", "torch_greedy")})
    with open(manifest_path, "w") as f:
        json.dump(dict(sorted(manifest.items())), f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
