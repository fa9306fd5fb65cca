"""Tokens per second of text generation on CPU: jaxonnx.generate (one jax.jit) against onnxruntime-genai.

    python benchmarks/generation.py prepare --models /tmp/generation_models   # needs torch, transformers, optimum
    python benchmarks/generation.py run --models /tmp/generation_models       # writes benchmarks/generation_results.md

Two random Llama models (nothing downloaded): ``tiny`` (the test fixtures' shape: 2 layers,
32 wide, vocabulary 128) and ``base`` (12 layers, 768 wide, 12 heads, MLP 2048, vocabulary
32000, about 134M parameters). ``prepare`` writes each as HF Optimum's
``text-generation-with-past`` export and as onnxruntime-genai's model builder file (fp32,
``-e cpu``, run with ``--genai-python``, a Python with transformers>=5; the tiny model is
64 wide there: onnxruntime's CPU GroupQueryAttention needs 16-wide heads).

``run`` decodes 128 new tokens after a 16-token prompt at batch 1 and 8, greedy, no end
token, and reports new tokens per second (batch x 128 / seconds, the prompt included in the
time) for:

- ``jaxonnx`` on the Optimum file: ``jax.jit(jaxonnx.generate)`` with
  ``decode_compiler_options()`` (what ``generate`` compiles with when called directly),
  prefill and 127 decode steps in one computation (the fixed cache window); compile time
  reported apart;
- ``jaxonnx`` on the builder file (GroupQueryAttention's shared buffer), when jaxonnx runs
  its ops;
- ``onnxruntime-genai``'s ``og.Generator`` on the builder file, when installed;
- ``onnxruntime`` on the Optimum file: a Python loop whose cache grows a step at a time (the
  reference loop of the tests).

Each is the median of ``--repeat`` runs after one untimed run. The machine, the versions and
whether other work shared the CPU are printed with the table.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT, NEW_TOKENS, BATCHES = 16, 128, (1, 8)
CONFIGS = {
    "tiny": dict(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
    ),
    "base": dict(
        vocab_size=32000,
        hidden_size=768,
        intermediate_size=2048,
        num_hidden_layers=12,
        num_attention_heads=12,
        num_key_value_heads=12,
    ),
}


# --------------------------------------------------------------------------- prepare


def prepare(models: str, genai_python: str) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    for name, config in CONFIGS.items():
        for kind in ("optimum", "genai"):
            out = os.path.join(models, f"{name}_{kind}")
            if os.path.exists(os.path.join(out, "model.onnx")):
                continue
            values = dict(config, max_position_embeddings=512, bos_token_id=1, eos_token_id=2, pad_token_id=0)
            if kind == "genai" and name == "tiny":
                values.update(hidden_size=64, intermediate_size=128)
            torch.manual_seed(0)
            model = LlamaForCausalLM(LlamaConfig(**values)).eval()
            with tempfile.TemporaryDirectory() as tmp:
                folder = os.path.join(tmp, "hf")
                model.save_pretrained(folder)
                if kind == "optimum":
                    from optimum.exporters.onnx import main_export

                    main_export(folder, output=out, task="text-generation-with-past", do_validation=False)
                else:
                    _tokenizer(folder, values["vocab_size"])
                    subprocess.run(
                        [
                            genai_python,
                            "-m",
                            "onnxruntime_genai.models.builder",
                            "-i",
                            folder,
                            "-o",
                            out,
                            "-p",
                            "fp32",
                            "-e",
                            "cpu",
                            "-c",
                            os.path.join(tmp, "cache"),
                        ],
                        check=True,
                    )
            print("prepared", out, flush=True)


def _tokenizer(folder: str, vocab: int) -> None:
    """A word-level tokenizer over ``t0 .. t{vocab-1}`` (the builder copies it beside its file)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="t0", pad_token="t0", bos_token="t1", eos_token="t2"
    ).save_pretrained(folder)


# --------------------------------------------------------------------------- run


def _median_time(function, repeat: int) -> float:
    function()  # untimed: compilation, allocation, the first touch of the weights
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _prompts(batch: int, vocab: int) -> np.ndarray:
    return np.random.default_rng(batch).integers(3, vocab, (batch, PROMPT)).astype(np.int64)


def time_jaxonnx(path: str, batch: int, vocab: int, repeat: int) -> tuple[float, float]:
    import jax

    import jaxonnx
    from jaxonnx.generation import cache_dims_beside, decode_compiler_options, find_cache

    model = jaxonnx.load(path)
    layout = find_cache(model, dims=cache_dims_beside(path))
    # The options generate compiles with when called directly (on CPU, Eigen's dots).
    generate = jax.jit(
        lambda m, ids: jaxonnx.generate(m, ids, NEW_TOKENS, cache=layout), compiler_options=decode_compiler_options()
    )
    ids = jax.numpy.asarray(_prompts(batch, vocab))
    start = time.perf_counter()
    compiled = generate.lower(model, ids).compile()
    compile_seconds = time.perf_counter() - start
    return _median_time(lambda: jax.block_until_ready(compiled(model, ids)), repeat), compile_seconds


def time_genai(folder: str, batch: int, vocab: int, repeat: int) -> float:
    import onnxruntime_genai as og

    model = og.Model(folder)
    ids = _prompts(batch, vocab).astype(np.int32)

    def run():
        params = og.GeneratorParams(model)
        params.set_search_options(
            max_length=PROMPT + NEW_TOKENS, min_length=PROMPT + NEW_TOKENS, do_sample=False, batch_size=batch
        )
        generator = og.Generator(model, params)
        generator.append_tokens(ids)
        while not generator.is_done():
            generator.generate_next_token()

    return _median_time(run, repeat)


def time_onnxruntime_loop(path: str, batch: int, vocab: int, repeat: int) -> float:
    import onnxruntime

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    pasts = [i for i in session.get_inputs() if i.name.startswith("past_key_values")]
    ids = _prompts(batch, vocab)

    def run():
        cache = {i.name: np.zeros((batch, i.shape[1], 0, i.shape[3]), np.float32) for i in pasts}
        step_ids, mask = ids, np.ones_like(ids)
        positions = np.arange(PROMPT)[None].repeat(batch, 0)
        for _ in range(NEW_TOKENS):
            outputs = session.run(
                None, {"input_ids": step_ids, "attention_mask": mask, "position_ids": positions, **cache}
            )
            token = outputs[0][:, -1].argmax(-1)
            cache = dict(zip(cache, outputs[1:]))
            positions = mask.sum(-1, keepdims=True)
            step_ids, mask = token[:, None], np.concatenate([mask, np.ones_like(mask[:, :1])], -1)

    return _median_time(run, repeat)


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",) * 3
    return f"{cpu}, {os.cpu_count()} CPUs, load average {load[0]:.1f} at the start"


def _versions() -> str:
    names = ["jaxonnx", "jax", "jaxlib", "onnx", "onnxruntime", "onnxruntime-genai"]
    found = []
    for name in names:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name} not installed")
    return ", ".join(found) + f", Python {platform.python_version()}"


def run(models: str, repeat: int, only: list[str] | None, out: str | None, batches=BATCHES) -> str:
    import jaxonnx

    try:
        import onnxruntime_genai  # noqa: F401

        have_genai = True
    except ImportError:
        have_genai = False
    lines = [
        "# Text generation on CPU: new tokens per second",
        "",
        f"Machine: {_machine()}. {_versions()}.",
        f"Greedy, {PROMPT}-token prompts, {NEW_TOKENS} new tokens, no end token; median of {repeat} runs after one "
        "untimed run; the prompt's time included. Compile: jaxonnx's one-time `jax.jit` compilation of the whole loop.",
        "",
        "| model | batch | jaxonnx (Optimum file) | compile s | jaxonnx (builder file) | onnxruntime-genai | "
        "onnxruntime KV loop | jaxonnx / genai |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, config in CONFIGS.items():
        if only and name not in only:
            continue
        optimum = os.path.join(models, f"{name}_optimum", "model.onnx")
        builder = os.path.join(models, f"{name}_genai")
        vocab = config["vocab_size"]
        for batch in batches:
            tokens = batch * NEW_TOKENS
            seconds, compile_seconds = time_jaxonnx(optimum, batch, vocab, repeat)
            row = {"jaxonnx": tokens / seconds, "compile": compile_seconds}
            if not jaxonnx.unsupported_nodes(
                __import__("onnx").load(os.path.join(builder, "model.onnx"), load_external_data=False)
            ):
                row["jaxonnx_builder"] = (
                    tokens / time_jaxonnx(os.path.join(builder, "model.onnx"), batch, vocab, repeat)[0]
                )
            if have_genai:
                row["genai"] = tokens / time_genai(builder, batch, vocab, repeat)
            row["ort"] = tokens / time_onnxruntime_loop(optimum, batch, vocab, repeat)
            best_jaxonnx = max(row["jaxonnx"], row.get("jaxonnx_builder", 0.0))
            ratio = f"{best_jaxonnx / row['genai']:.2f}" if "genai" in row else "-"
            cells = [f"{row[k]:.0f}" if k in row else "-" for k in ("jaxonnx",)]
            cells += [f"{row['compile']:.1f}"] + [
                f"{row[k]:.0f}" if k in row else "-" for k in ("jaxonnx_builder", "genai", "ort")
            ]
            lines.append(f"| {name} | {batch} | " + " | ".join(cells) + f" | {ratio} |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if out:
        with open(out, "w") as f:
            f.write(text)
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["prepare", "run"])
    parser.add_argument("--models", default=os.path.join(tempfile.gettempdir(), "jaxonnx_generation_models"))
    parser.add_argument(
        "--genai-python", default=sys.executable, help="a Python with onnxruntime-genai and transformers>=5"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="*", choices=list(CONFIGS))
    parser.add_argument("--batches", nargs="*", type=int, default=list(BATCHES))
    parser.add_argument("--out", default=os.path.join(HERE, "generation_results.md"))
    args = parser.parse_args(argv)
    if args.command == "prepare":
        os.makedirs(args.models, exist_ok=True)
        prepare(args.models, args.genai_python)
    else:
        import jax

        jax.config.update("jax_enable_x64", True)
        print(run(args.models, args.repeat, args.only, args.out, args.batches))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
