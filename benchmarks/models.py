"""Exported real models on CPU: jaxonnx (jit forward) against onnxruntime (not a test).

    python benchmarks/models.py            # writes benchmarks/models_results.md
    python benchmarks/models.py --quick    # fewer repetitions
    python benchmarks/models.py --only small_cnn mlp_256

Each fixture model is a committed dynamic-batch fixture of ``tests/fixtures/models``
(PyTorch exports with random weights, made by ``tools/export_fixtures.py``), timed at batch 1
and 32 with the fixture's inputs tiled along the batch axis. With torch installed, three
more are exported once with random weights into a temporary folder (``_cpu_bench.py``;
without torch they are left out with a message): a small CNN (3 -> 8 -> 16 channels, 3x3
convolutions, ReLU and 2x2 max pools, a Linear; 32x32 at batch 2), an MLP (64 -> 256 -> 256
-> 10 at batch 8) and a YOLOv8n-like detector at 320x320 (``yolo_like.py``, batch 1). Both
runtimes get the same arrays. jaxonnx runs ``jax.jit(jaxonnx.load(model))`` compiled ahead
of time, with inputs already on the device, timed up to ``block_until_ready``; onnxruntime
runs a default CPU ``InferenceSession``. The two alternate in warm blocks, medians are
reported, outputs are checked close. Compile time is ``jit(...).lower(...).compile()`` at
that batch. Each model runs twice, each time in a fresh process: on all cores, and pinned to
core 0 (both runtimes with their defaults). The processes run in the environment the script
was started in (no allocator setting): the default environment. Where one model's time goes:
``python benchmarks/conv_models.py --profile MODEL`` (any model named here).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import _cpu_bench as bench

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ("mlp", "cnn", "vit", "gpt2", "bert", "small_cnn", "mlp_256", "mobilenet_v3_small_224", "yolov8n")
BATCHES = (1, 32)
# The exported models at the batch the issue measured them at (issue 35).
MODEL_BATCHES = {"small_cnn": (2,), "mlp_256": (8,), "yolov8n": (1,)}


def measure(names, quick: bool) -> list[dict]:
    """Rows of ``names`` in this process's core setting."""
    import jax
    import onnxruntime as ort

    import jaxonnx

    rows = []
    for name in names:
        path, inputs = bench.model_inputs(name)
        model = jaxonnx.load(path)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds_names = [i.name for i in session.get_inputs()]
        for batch in MODEL_BATCHES.get(name, BATCHES):
            arrays = bench.tile(inputs, batch)
            on_device = bench.for_jax(arrays)
            start = time.perf_counter()
            compiled = jax.jit(model).lower(*on_device).compile()
            compile_s = time.perf_counter() - start
            # jaxonnx's own compiled path: what an eager model(x) runs, with the XLA options
            # the model's size calls for (jaxonnx.compiler_options).
            own = model.compile(*on_device)
            feed = dict(zip(feeds_names, arrays))
            bench.check_close(session.run(None, feed), compiled(*on_device))
            bench.check_close(session.run(None, feed), own(*on_device))
            runs = (3 if name == "yolov8n" else 10) if quick else (5 if name == "yolov8n" else 30)
            t = bench.interleaved(
                {
                    "jax": lambda: jax.block_until_ready(compiled(*on_device)),
                    "eager": lambda: jax.block_until_ready(model(*on_device)),
                    "ort": lambda: session.run(None, feed),
                },
                runs,
                3 if quick else 5,
            )
            row = {
                "model": name,
                "exporter": bench.exporter(name),
                "batch": batch,
                "jaxonnx_ms": 1e3 * t["jax"],
                "ort_ms": 1e3 * t["ort"],
                "ratio": t["ort"] / t["jax"],
                "compile_ms": 1e3 * compile_s,
                "eager_ms": 1e3 * t["eager"],
                "eager_ratio": t["ort"] / t["eager"],
            }
            print(row, file=sys.stderr)
            rows.append(row)
    return rows


def _report(rows: list[dict], machine: str) -> str:
    lines = [
        "# Exported models on CPU: jaxonnx jit forward vs onnxruntime",
        "",
        f"{machine} Default environment (no allocator setting); JAX's default 32-bit mode (int64 inputs "
        "passed as int32). Made by `python benchmarks/models.py`. Ratio = onnxruntime / jaxonnx (higher is "
        "better). *1 core*: both runtimes with their defaults in a process pinned to core 0 "
        f"(`os.sched_setaffinity(0, {{0}})` before either is imported, as `taskset -c 0`). {bench.settings_line(rows)} "
        "Each model and setting ran in a fresh process; the two runtimes interleaved in warm blocks.",
        "",
        "*jax.jit*: `jax.jit(model)` compiled with XLA's defaults (and the flags `import jaxonnx` sets); "
        "*model(x)*: the eager call, jaxonnx's executable compiled with `jaxonnx.compiler_options` (single-threaded "
        "products under a million flops).",
        "",
        "| model (exporter) | batch | jax.jit ms | model(x) ms | onnxruntime ms | ratio jit | ratio model(x) "
        "| 1 core: jax.jit ms | 1 core: model(x) ms | 1 core: onnxruntime ms | 1 core: ratio jit | 1 core: ratio model(x) | compile ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} ({r['exporter']}) | {r['batch']} | {r['jaxonnx_ms']:.3f} | {r['eager_ms']:.3f} | {r['ort_ms']:.3f} | "
            f"{r['ratio']:.2f} | {r['eager_ratio']:.2f} | {r['pinned_jaxonnx_ms']:.3f} | {r['pinned_eager_ms']:.3f} | "
            f"{r['pinned_ort_ms']:.3f} | {r['pinned_ratio']:.2f} | {r['pinned_eager_ratio']:.2f} | {r['compile_ms']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="*", help="models to run (default: all)")
    parser.add_argument("--out", default=os.path.join(HERE, "models_results.md"))
    parser.add_argument("--child", choices=("models",), help=argparse.SUPPRESS)
    parser.add_argument("--cores", default="all", help=argparse.SUPPRESS)
    parser.add_argument("--json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        bench.pin(args.cores)  # before jax or onnxruntime starts its threads
        bench.write_rows(args.json, measure(args.only, args.quick))
        return 0
    load_start = os.getloadavg()[0]
    names = []
    for name in args.only or MODELS:
        if bench.export(name):
            names.append(name)
        else:
            print(f"{name}: not available (torch not installed, or no fixture)", file=sys.stderr)
    rows = bench.side_by_side(os.path.abspath(__file__), names, ["--quick"] if args.quick else [])
    report = _report(rows, bench.machine_line(load_start, os.getloadavg()[0]))
    with open(args.out, "w") as f:
        f.write(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
