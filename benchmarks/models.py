"""Exported real models on CPU: jaxonnx (jit forward) against onnxruntime (not a test).

    python benchmarks/models.py            # writes benchmarks/models_results.md
    python benchmarks/models.py --quick    # fewer repetitions

Each model is a committed dynamic-batch fixture of ``tests/fixtures/models`` (PyTorch
exports with random weights, made by ``tools/export_fixtures.py``). At batch 1 and 32 the
fixture's inputs are tiled along the batch axis; both runtimes get the same arrays. jaxonnx
runs ``jax.jit(jaxonnx.load(model))`` with inputs already on the device, timed up to
``block_until_ready``; onnxruntime runs a default CPU ``InferenceSession``. The two
alternate in blocks, medians are reported, outputs are checked close. Compile time is
``jit(...).lower(...).compile()`` at that batch, reported beside the run time. The process
runs in the environment it was started in (no allocator setting): the default environment.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "tests", "fixtures", "models")
MODELS = ("mlp", "cnn", "vit", "gpt2", "bert")
BATCHES = (1, 32)


def _fixture(name: str):
    for exporter in ("dynamo", "torchscript"):
        path = os.path.join(FIXTURES, f"{name}_{exporter}_dynamic.onnx")
        if os.path.exists(path):
            return path, exporter
    return None, None


def _inputs(path: str, batch: int) -> list[np.ndarray]:
    data = np.load(path.replace(".onnx", ".npz"))
    inputs = [data[f"inputs.{i}"] for i in range(sum(k.startswith("inputs.") for k in data))]
    return [np.concatenate([x] * -(-batch // x.shape[0]), axis=0)[:batch] for x in inputs]


def _median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def measure(quick: bool) -> list[dict]:
    import jax
    import onnxruntime as ort

    import jaxonnx

    rows = []
    for name in MODELS:
        path, exporter = _fixture(name)
        if path is None:
            print(f"{name}: no dynamic fixture", file=sys.stderr)
            continue
        model = jaxonnx.load(path)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds_names = [i.name for i in session.get_inputs()]
        for batch in BATCHES:
            inputs = _inputs(path, batch)
            x64_off = [x.astype(np.int32) if x.dtype == np.int64 else x for x in inputs]
            on_device = [jax.device_put(x) for x in x64_off]
            start = time.perf_counter()
            compiled = jax.jit(model).lower(*on_device).compile()
            compile_s = time.perf_counter() - start
            feed = dict(zip(feeds_names, inputs))

            def run_jax():
                jax.block_until_ready(compiled(*on_device))

            def run_ort():
                session.run(None, feed)

            expected = session.run(None, feed)
            got = compiled(*on_device)
            for e, g in zip(expected, got):
                np.testing.assert_allclose(np.asarray(g), e, rtol=2e-3, atol=2e-4)
            runs = 5 if quick else 20
            jax_times, ort_times = [], []
            for _ in range(3 if quick else 5):  # alternate in blocks
                run_jax()
                jax_times.append(_median_time(run_jax, runs))
                run_ort()
                ort_times.append(_median_time(run_ort, runs))
            row = {
                "model": name, "exporter": exporter, "batch": batch,
                "jaxonnx_ms": 1e3 * float(np.median(jax_times)), "ort_ms": 1e3 * float(np.median(ort_times)),
                "compile_ms": 1e3 * compile_s,
            }
            row["ratio"] = row["ort_ms"] / row["jaxonnx_ms"]
            print(row, file=sys.stderr)
            rows.append(row)
    return rows


def _report(rows: list[dict]) -> str:
    import jax
    import onnxruntime as ort

    lines = [
        "# Exported models on CPU: jaxonnx jit forward vs onnxruntime",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
        f"jax {jax.__version__}, onnxruntime {ort.__version__}; default environment (no allocator setting); "
        "JAX's default 32-bit mode (int64 inputs passed as int32). Ratio = onnxruntime / jaxonnx (higher is better).",
        "",
        "| model (exporter) | batch | jaxonnx ms | onnxruntime ms | ratio | compile ms |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} ({r['exporter']}) | {r['batch']} | {r['jaxonnx_ms']:.3f} | {r['ort_ms']:.3f} | "
            f"{r['ratio']:.2f} | {r['compile_ms']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=os.path.join(HERE, "models_results.md"))
    args = parser.parse_args(argv)
    report = _report(measure(args.quick))
    with open(args.out, "w") as f:
        f.write(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
