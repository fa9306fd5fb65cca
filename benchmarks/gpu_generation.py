"""Text generation on a GPU: jaxonnx.generate's one compiled loop there, against the CPU (not a test).

    python benchmarks/gpu_generation.py            # prints a Markdown table; --out FILE writes it

For the committed generation fixtures (``tests/fixtures/generation``: tiny random Llama files
from HF Optimum and from onnxruntime-genai's builder), at batch 1 and 8, 7-token prompts
(the fixtures' own, tiled), 120 new tokens (the builder files hold 128 positions), greedy: new tokens per second of
``jax.jit(jaxonnx.generate)`` on the default backend (the GPU, where there is one) and on
the CPU backend of the same machine, with compile time apart, and whether the two backends
give the same tokens. Prefill and every decode step run as one computation on the device:
no Python and no host round trip between tokens. The machine and versions are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "tests", "fixtures", "generation")
NAMES = ("llama_optimum", "llama_genai_fp32", "qwen2_genai_int4")  # window, shared buffer, 4-bit
BATCHES = (1, 8)
NEW_TOKENS = 120  # the builder fixtures hold 128 positions (their rotary caches): 7 + 120 fit


def _prompts(name: str, batch: int):
    with open(os.path.join(FIXTURES, "manifest.json")) as file:
        entry = json.load(file)[name]
    ids, mask = np.array(entry["prompt_ids"]), np.array(entry["prompt_mask"])
    reps = -(-batch // len(ids))
    return np.tile(ids, (reps, 1))[:batch], np.tile(mask, (reps, 1))[:batch]


def _tokens_per_second(model, layout, ids, mask, device, repeat: int = 3):
    import jax

    import jaxonnx

    ids, mask = jax.device_put(ids, device), jax.device_put(mask, device)
    model = jax.device_put(model, device)
    run = jax.jit(lambda model, ids, mask: jaxonnx.generate(model, ids, NEW_TOKENS, attention_mask=mask, cache=layout))
    start = time.perf_counter()
    tokens = np.asarray(run(model, ids, mask))
    compile_s = time.perf_counter() - start
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        jax.block_until_ready(run(model, ids, mask))
        times.append(time.perf_counter() - start)
    return ids.shape[0] * NEW_TOKENS / float(np.median(times)), compile_s, tokens


def measure() -> list[dict]:
    import jax

    import jaxonnx
    from jaxonnx.generation import cache_dims_beside, find_cache

    accelerator = jax.devices()[0]
    cpu = jax.devices("cpu")[0]
    rows = []
    for name in NAMES:
        path = os.path.join(FIXTURES, name, "model.onnx")
        model = jaxonnx.load(path)
        layout = find_cache(model, dims=cache_dims_beside(path))  # a builder file's head size is beside it
        for batch in BATCHES:
            ids, mask = _prompts(name, batch)
            row = {"model": name, "batch": batch}
            row["device_tps"], row["device_compile_s"], on_device = _tokens_per_second(
                model, layout, ids, mask, accelerator
            )
            row["cpu_tps"], row["cpu_compile_s"], on_cpu = _tokens_per_second(model, layout, ids, mask, cpu)
            row["same_tokens"] = bool(np.array_equal(on_device, on_cpu))
            print(row, file=sys.stderr, flush=True)
            rows.append(row)
    return rows


def report(rows: list[dict]) -> str:
    import jax

    device = jax.devices()[0]
    lines = [
        f"# jaxonnx.generate on {device.device_kind} ({device.platform}) and on the CPU of the same machine",
        "",
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores; jax {jax.__version__}. "
        f"Greedy, 7-token prompts (the fixtures' own, tiled), {NEW_TOKENS} new tokens, no end token; "
        "new tokens per second (the prompt's time included), median of 3 after the compiling call; "
        "`JAX_DEFAULT_MATMUL_PRECISION` as set in the environment: "
        f"{os.environ.get('JAX_DEFAULT_MATMUL_PRECISION', 'unset (TF32 allowed on the GPU)')}.",
        "",
        "| model | batch | device tokens/s | device compile s | CPU tokens/s | CPU compile s | same tokens |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['device_tps']:.0f} | {r['device_compile_s']:.1f} | "
            f"{r['cpu_tps']:.0f} | {r['cpu_compile_s']:.1f} | {'yes' if r['same_tokens'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="write the table here too")
    args = parser.parse_args(argv)
    text = report(measure())
    print(text)
    if args.out:
        with open(args.out, "w") as file:
            file.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
