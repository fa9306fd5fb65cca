"""Memory and time of a LoRA training step on a Llama builder file, fp32 against int4 (QLoRA).

For each file the step is ``jax.jit(value_and_grad(causal_lm_loss) + adam)`` on a batch of
``batch x sequence`` tokens, rank 8, peft's default targets for the file (the builder fuses
q, k and v into ``qkv_proj``: its default), compiled once. The table gives XLA's
``memory_analysis()`` of the compiled step (temporaries: every intermediate value the step
holds at its peak: the activations and anything dequantized at run time), the constants of
the compiled step read from its HLO (the frozen weights, packed for int4, and whatever XLA
folded from them at compile time), XLA's own ``peak_memory_in_bytes``, and the median step time. The int4 file is
measured twice: as :func:`jaxonnx.lora` runs it (its MatMulNBits nodes read their packed
weights at run time and dequantize them again in the backward pass: ``_rematerialized`` in
``jaxonnx/finetuning/adapters.py``) and with the op as registered (XLA then folds the
dequantized weights into constants, or keeps every layer's until the backward pass
reaches it). With
``--torch``, the same step in PyTorch with peft on the Hugging Face model the files were
made from (fp32; its peak resident memory in a fresh process).

    python benchmarks/lora_memory.py --models /tmp/lora_models --config base --out benchmarks/lora_memory_results.md

The models are made on first use (random weights; transformers and onnxruntime-genai's
builder). The results and the machine and versions are in ``lora_memory_results.md``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

CONFIGS = {
    "small": dict(
        vocab_size=2048,
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
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


def prepare(models: str, config: str) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    hf = os.path.join(models, f"{config}_hf")
    if not os.path.exists(os.path.join(hf, "config.json")):
        torch.manual_seed(0)
        values = dict(CONFIGS[config], max_position_embeddings=512, bos_token_id=1, eos_token_id=2, pad_token_id=0)
        LlamaForCausalLM(LlamaConfig(**values)).eval().save_pretrained(hf)
        _tokenizer(hf, values["vocab_size"])
    for precision in ("fp32", "int4"):
        out = os.path.join(models, f"{config}_{precision}")
        if os.path.exists(os.path.join(out, "model.onnx")):
            continue
        with tempfile.TemporaryDirectory() as cache:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "onnxruntime_genai.models.builder",
                    "-i",
                    hf,
                    "-o",
                    out,
                    "-p",
                    precision,
                    "-e",
                    "cpu",
                    "-c",
                    cache,
                ],
                check=True,
            )
        print("prepared", out, flush=True)


def _tokenizer(folder: str, vocab: int) -> None:
    """A word-level tokenizer over ``t0 .. t{vocab-1}``: the builder wants one (as benchmarks/generation.py)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="t0", pad_token="t0", bos_token="t1", eos_token="t2"
    ).save_pretrained(folder)


def measure_jaxonnx(folder: str, batch: int, sequence: int, repeat: int, checkpoint: bool = True) -> dict:
    import jax
    import optax

    import jaxonnx
    from jaxonnx.finetuning.adapters import LoraModel

    jax.config.update("jax_enable_x64", True)  # the builder's token ids are int64
    tuned = jaxonnx.lora(folder, rank=8, alpha=16)
    if not checkpoint:
        tuned = LoraModel(tuned.to_proto(), registry=jaxonnx.REGISTRY)
    vocab = int(tuned.outputs[0].shape[-1])
    ids = np.random.default_rng(0).integers(3, vocab, (batch, sequence))
    optimizer = optax.adam(1e-3)

    def step(model, state, ids):
        loss, grads = jax.value_and_grad(jaxonnx.causal_lm_loss)(model, ids)
        updates, state = optimizer.update(grads, state, model)
        return optax.apply_updates(model, updates), state, loss

    state = optimizer.init(tuned)
    start = time.perf_counter()
    compiled = jax.jit(step).lower(tuned, state, ids).compile()
    compile_s = time.perf_counter() - start
    memory = compiled.memory_analysis()
    model, state, loss = compiled(tuned, state, ids)
    jax.block_until_ready(loss)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        model, state, loss = compiled(model, state, ids)
        jax.block_until_ready(loss)
        times.append(time.perf_counter() - start)
    return {
        "temp": memory.temp_size_in_bytes,
        "constants": _constant_bytes(compiled.as_text()),
        "peak": memory.peak_memory_in_bytes,
        "code": memory.generated_code_size_in_bytes,
        "arguments": memory.argument_size_in_bytes,
        "params": sum(int(np.prod(v.shape)) for v in tuned.params.values()),
        "compile": compile_s,
        "step": float(np.median(times)),
    }


_CONSTANT = re.compile(r"= (\w+)\[([\d,]*)\][^ ]* constant\(")
_BYTES = {
    "f64": 8,
    "s64": 8,
    "u64": 8,
    "f32": 4,
    "s32": 4,
    "u32": 4,
    "f16": 2,
    "bf16": 2,
    "s16": 2,
    "u16": 2,
    "s8": 1,
    "u8": 1,
    "pred": 1,
}


def _constant_bytes(hlo: str) -> int:
    """The bytes of the compiled computation's constants: on CPU the frozen weights (and
    whatever XLA folded from them, such as dequantized weights) live there, outside the
    temporaries ``memory_analysis`` counts."""
    total = 0
    for dtype, dims in _CONSTANT.findall(hlo):
        total += _BYTES.get(dtype, 4) * int(np.prod([int(d) for d in dims.split(",") if d] or [1]))
    return total


def measure_torch(hf: str, batch: int, sequence: int, repeat: int) -> dict:
    """Runs in a fresh process: its peak resident memory is the step's."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    model = get_peft_model(LlamaForCausalLM.from_pretrained(hf), LoraConfig(r=8, lora_alpha=16))
    ids = torch.from_numpy(np.random.default_rng(0).integers(3, model.config.vocab_size, (batch, sequence)))
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    times = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "step": float(np.median(times[1:])),
        "peak_rss": peak,
        "rss_before_step": before,
        "threads": torch.get_num_threads(),
    }


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = os.getloadavg()
    return f"{cpu}, {os.cpu_count()} CPUs, load average {load[0]:.1f} at the start"


def _versions() -> str:
    found = []
    for name in ["jaxonnx", "jax", "jaxlib", "optax", "onnxruntime-genai", "torch", "peft", "transformers"]:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name} not installed")
    return ", ".join(found) + f", Python {platform.python_version()}"


def _mib(n: float) -> str:
    return f"{n / 2**20:,.1f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=os.path.join(tempfile.gettempdir(), "jaxonnx_lora_models"))
    parser.add_argument("--config", choices=sorted(CONFIGS), default="small")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--sequence", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--torch", action="store_true", help="also time torch + peft on the Hugging Face model")
    parser.add_argument("--torch-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help="write the markdown table here")
    args = parser.parse_args(argv)
    hf = os.path.join(args.models, f"{args.config}_hf")
    if args.torch_only:
        print(measure_torch(hf, args.batch, args.sequence, args.repeat))
        return 0
    prepare(args.models, args.config)
    machine, versions = _machine(), _versions()
    rows = []
    for label, precision, checkpoint in (
        ("fp32 builder file", "fp32", True),
        ("int4 builder file (QLoRA)", "int4", True),
        ("int4, the op as registered", "int4", False),
    ):
        result = measure_jaxonnx(
            os.path.join(args.models, f"{args.config}_{precision}"), args.batch, args.sequence, args.repeat, checkpoint
        )
        print(label, result, flush=True)
        rows.append(
            f"| jaxonnx, {label} | {_mib(result['temp'])} | {_mib(result['constants'])} | "
            f"{_mib(result['temp'] + result['constants'])} | {_mib(result['peak'])} | "
            f"{result['compile']:.1f} | {result['step']:.2f} |"
        )
    if args.torch:
        output = subprocess.run(
            [
                sys.executable,
                __file__,
                "--torch-only",
                "--models",
                args.models,
                "--config",
                args.config,
                "--batch",
                str(args.batch),
                "--sequence",
                str(args.sequence),
                "--repeat",
                str(args.repeat),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        result = eval(output.strip().splitlines()[-1])  # noqa: S307  (our own child's dict)
        print("torch", result, flush=True)
        rows.append(
            f"| torch + peft, fp32 Hugging Face model ({result['threads']} threads) | peak RSS "
            f"{_mib(result['peak_rss'])} (before the first step {_mib(result['rss_before_step'])}) | - | - | - | - | "
            f"{result['step']:.2f} |"
        )
    config = CONFIGS[args.config]
    table = "\n".join(
        [
            f"Llama `{args.config}`: {config['num_hidden_layers']} layers, {config['hidden_size']} wide, MLP "
            f"{config['intermediate_size']}, vocabulary {config['vocab_size']}; batch {args.batch} x {args.sequence}, "
            "LoRA rank 8 on the builder's default targets (qkv_proj), adam.",
            "",
            f"Machine: {machine}. Versions: {versions}.",
            "",
            "| step | temporaries MiB | constants MiB | temporaries + constants MiB | XLA peak MiB | compile s | "
            "step s (median) |",
            "|---|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(table)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
