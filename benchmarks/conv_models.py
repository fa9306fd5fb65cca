"""Convolutional models on CPU: jaxonnx (jit forward) against onnxruntime (not a test).

    python benchmarks/conv_models.py            # writes conv_models_results.md and conv_models.png
    python benchmarks/conv_models.py --quick    # fewer repetitions
    python benchmarks/conv_models.py --only small_cnn mlp_256 yolov8n
    python benchmarks/conv_models.py --profile small_cnn   # where one model's time goes

Models: the committed dynamic-batch fixtures of ``tests/fixtures/models`` and, when torch
(and torchvision, for its models) is installed, models exported once with random weights
into a temporary folder (nothing is downloaded; ``_cpu_bench.py``): a small CNN (3 -> 8 -> 16
channels, 3x3 convolutions, ReLU and 2x2 max pools, a Linear; 32x32 at batch 2), an MLP (64 ->
256 -> 256 -> 10 at batch 8), torchvision's MobileNetV3-large, ResNet-18 and EfficientNet-B0 at
224x224, a PaddleOCR-like text detector (a MobileNetV3-large backbone and a small FPN head at
320x320) and a YOLOv8n-like detector at 320x320 (``yolo_like.py``). Without torch those rows
are left out with a message. At batch 1 and 8 (the small CNN and the MLP at their own batch)
every model runs three ways in one process, alternating in warm blocks: jaxonnx as it is (on
CPU, convolutions through ``ops/_helpers/conv_cpu.py``, the activations between them
channels-last: ``_core/layout.py``), jaxonnx as it was before (``channels_last=False`` and
XLA's own convolution, compiled with XLA's default YNNPACK convolutions where ``import
jaxonnx`` took them out: ``jaxonnx/_xla_cpu.py``), and a default onnxruntime CPU
``InferenceSession``. Then, in a second process pinned to core 0, jaxonnx as it is against
onnxruntime again: each model and setting runs in a fresh process (``_cpu_bench.py``).
Medians are reported; ratio = onnxruntime / jaxonnx (higher is better). Compile time is
``jax.jit(model).lower(...).compile()``. Outputs are checked close.

It also times depthwise and standard convolutions alone and in depthwise-separable blocks
(depthwise, Relu, 1x1 convolution; before / after / onnxruntime) and what a call costs
through ``jax.jit(model)`` against an ahead-of-time compiled executable (all cores).

``--profile MODEL`` prints, on all cores and pinned to one, jaxonnx's time per XLA:CPU thunk
and per thread (XLA's CPU profiler) beside onnxruntime's time per op and node (its own
profiler), per call.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import _cpu_bench as bench
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE_MODELS = ("mobilenet_v3_small", "resnet", "cnn", "vit", "gpt2", "mlp")
TORCH_MODELS = bench.TORCH_MODELS
BATCHES = (1, 8)
# The small CNN and the MLP at the batch the issue measured them at (issue 35).
MODEL_BATCHES = {"small_cnn": (2,), "mlp_256": (8,)}


def _xla_convolutions():
    """A context in which jaxonnx traces Conv with XLA's convolution and the pools with
    ``reduce_window`` on CPU too (before). (Nearest Resize by an integer factor is a
    broadcast in both.)"""
    from contextlib import contextmanager

    from jaxonnx.ops._helpers import conv_cpu, pool_cpu

    @contextmanager
    def context():
        saved = conv_cpu.cpu_convolve, pool_cpu._slices_max, pool_cpu._slices_sum
        conv_cpu.cpu_convolve = conv_cpu.xla_convolve
        pool_cpu._slices_max, pool_cpu._slices_sum = pool_cpu._reduce_max, pool_cpu._reduce_sum
        try:
            yield
        finally:
            conv_cpu.cpu_convolve, pool_cpu._slices_max, pool_cpu._slices_sum = saved

    return context()


def _xla_default_options() -> dict:
    """Compiler options that give one executable jaxlib's default YNNPACK fusions back (its
    convolutions on one core) and XLA's default 256-bit vectors where ``import jaxonnx``
    changed them: jaxonnx as it was. (The allocator tuning of ``import jaxonnx`` is
    process-wide: *before* runs with it too.)"""
    from jaxonnx import _xla_cpu

    options = {}
    if _xla_cpu.TOOK_CONVOLUTIONS_OUT:
        default = ("INDIVIDUAL_DOT", "INDIVIDUAL_CONVOLUTION", "REDUCE")  # jaxlib 0.10's
        options["xla_cpu_experimental_ynn_fusion_type"] = ",".join(f"LIBRARY_FUSION_TYPE_{t}" for t in default)
    if _xla_cpu.PREFERS_WIDE_VECTORS:
        options["xla_cpu_prefer_vector_width"] = 256
    return options


def measure_models(names, quick: bool, before: bool = True) -> list[dict]:
    """Rows of ``names`` in this process: jaxonnx after (and before, where ``before``) against
    onnxruntime, interleaved; each model at its batches."""
    import jax
    import onnxruntime as ort

    import jaxonnx

    rows = []
    for name in names:
        path, inputs = bench.model_inputs(name)
        model = jaxonnx.load(path)
        old_model = jaxonnx.load(path, channels_last=False)  # ONNX's layout, as before
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names_in = [i.name for i in session.get_inputs()]
        for batch in MODEL_BATCHES.get(name, BATCHES):
            arrays = bench.tile(inputs, batch)
            on_device = bench.for_jax(arrays)
            # A fresh function per compile: jax.jit caches traces by function, and the two
            # formulations must each be traced.
            start = time.perf_counter()
            after = jax.jit(lambda *a: model(*a)).lower(*on_device).compile()
            compile_s = time.perf_counter() - start
            fns = {"after": lambda: jax.block_until_ready(after(*on_device))}
            if before:
                with _xla_convolutions():
                    start = time.perf_counter()
                    old = jax.jit(lambda *a: old_model(*a)).lower(*on_device).compile(_xla_default_options())
                    before_compile_s = time.perf_counter() - start
                fns["before"] = lambda: jax.block_until_ready(old(*on_device))
            feed = dict(zip(names_in, arrays))
            fns["ort"] = lambda: session.run(None, feed)
            expected = session.run(None, feed)
            bench.check_close(expected, after(*on_device))
            if before:
                bench.check_close(expected, old(*on_device))
            heavy = name in TORCH_MODELS and name not in MODEL_BATCHES
            runs = (3 if heavy else 10) if quick else (5 if heavy else 30)
            t = bench.interleaved(fns, runs, 3 if quick else 5)
            row = {
                "model": name,
                "batch": batch,
                "jaxonnx_ms": 1e3 * t["after"],
                "ort_ms": 1e3 * t["ort"],
                "compile_ms": 1e3 * compile_s,
                "ratio": t["ort"] / t["after"],
            }
            if before:
                row.update(
                    before_ms=1e3 * t["before"],
                    before_compile_ms=1e3 * before_compile_s,
                    before_ratio=t["ort"] / t["before"],
                )
            print(row, file=sys.stderr)
            rows.append(row)
    return rows


def _ort_conv(x, w, strides, padding, group, pointwise=None):
    """An onnxruntime session of one Conv, or with ``pointwise`` weights of a depthwise-
    separable block: Conv, Relu, 1x1 Conv."""
    import onnx
    import onnxruntime as ort
    from onnx import helper

    pads = [p[0] for p in padding] + [p[1] for p in padding]
    nodes = [
        helper.make_node(
            "Conv", ["x", "w"], ["y" if pointwise is None else "d"], strides=strides, pads=pads, group=group
        )
    ]
    weights = [onnx.numpy_helper.from_array(w, "w")]
    if pointwise is not None:
        nodes += [helper.make_node("Relu", ["d"], ["r"]), helper.make_node("Conv", ["r", "p"], ["y"])]
        weights.append(onnx.numpy_helper.from_array(pointwise, "p"))
    graph = helper.make_graph(
        nodes,
        "conv",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return lambda: session.run(None, {"x": x})


# (what, N, C, H, M, kernel, stride, group); M is the 1x1 convolution's output channels
# in the blocks (depthwise or ("block", group) grouped, Relu, 1x1: how these convolutions sit
# in a model, where the layout of the 1x1 convolution decides what the transposes cost).
CONV_CASES = (
    ("depthwise 5x5", 1, 96, 28, 96, 5, 1, 96),
    ("depthwise 3x3 /2", 1, 240, 14, 240, 3, 2, 240),
    ("depthwise 3x3", 8, 96, 28, 96, 3, 1, 96),
    ("grouped 3x3 (4 per group)", 1, 128, 28, 128, 3, 1, 32),
    ("standard 3x3", 1, 64, 56, 64, 3, 1, 1),
    ("stem 3x3 /2", 1, 3, 224, 16, 3, 2, 1),
    ("pointwise 1x1", 1, 96, 28, 192, 1, 1, 1),
    ("separable block 5x5 + 1x1", 1, 96, 28, 96, 5, 1, "block"),
    ("separable block 3x3 /2 + 1x1", 1, 240, 14, 80, 3, 2, "block"),
    ("separable block 3x3 + 1x1", 8, 96, 28, 96, 3, 1, "block"),
    ("grouped block 3x3 (4 per group) + 1x1", 1, 128, 28, 128, 3, 1, ("block", 32)),
)


def measure_convolutions(quick: bool) -> list[dict]:
    import jax

    from jaxonnx.ops._helpers.conv_cpu import cpu_convolve, xla_convolve

    rows = []
    rng = np.random.default_rng(0)
    for what, n, c, h, m, k, s, g in CONV_CASES:
        block = g == "block" or isinstance(g, tuple)
        g = (g[1] if isinstance(g, tuple) else c) if block else g
        x = jax.device_put(rng.standard_normal((n, c, h, h)).astype(np.float32))
        w = jax.device_put(rng.standard_normal((c if block else m, c // g, k, k)).astype(np.float32))
        p = jax.device_put(rng.standard_normal((m, c, 1, 1)).astype(np.float32)) if block else None
        geometry = {"strides": (s, s), "padding": ((k // 2, k // 2),) * 2, "dilations": (1, 1), "group": g}
        pointwise = {"strides": (1, 1), "padding": ((0, 0),) * 2, "dilations": (1, 1), "group": 1}

        def make(convolve, options=None):
            if not block:
                return jax.jit(lambda x, w: convolve(x, w, **geometry)).lower(x, w).compile(options)
            # The 1x1 convolution as the CPU formulation runs it or as XLA's.
            fn = lambda x, w, p: convolve(jax.nn.relu(convolve(x, w, **geometry)), p, **pointwise)
            return jax.jit(fn).lower(x, w, p).compile(options)

        after, before = make(cpu_convolve), make(xla_convolve, _xla_default_options())
        args = (x, w, p) if block else (x, w)
        np.testing.assert_allclose(after(*args), before(*args), rtol=1e-4, atol=1e-3 * (c if block else 1))
        # Inputs already on the device, as between the layers of a model.
        t = bench.interleaved(
            {
                "after": lambda: jax.block_until_ready(after(*args)),
                "before": lambda: jax.block_until_ready(before(*args)),
                "ort": _ort_conv(
                    np.asarray(x),
                    np.asarray(w),
                    geometry["strides"],
                    geometry["padding"],
                    g,
                    None if p is None else np.asarray(p),
                ),
            },
            10 if quick else 30,
            3 if quick else 5,
        )
        shape = f"N={n} C={c} {h}x{h}" + (f", 1x1 to {m}" if block else f" M={m}")
        row = {"conv": f"{what}: {shape}", **{f"{key}_ms": 1e3 * v for key, v in t.items()}}
        print(row, file=sys.stderr)
        rows.append(row)
    return rows


def measure_dispatch(quick: bool) -> list[dict]:
    """Per-call cost of the MLP fixture at batch 1: ``jax.jit(model)`` against the
    executable of ``jax.jit(model).lower(x).compile()``, the eager call ``model(x)`` (the
    whole graph compiled by jaxonnx), and onnxruntime."""
    import jax
    import onnxruntime as ort

    import jaxonnx

    path, inputs = bench.model_inputs("mlp")
    model = jaxonnx.load(path)
    x = jax.device_put(inputs[0][:1])
    jitted = jax.jit(model)
    compiled = jitted.lower(x).compile()
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: np.asarray(x)}
    t = bench.interleaved(
        {
            "jax.jit(model)(x)": lambda: jax.block_until_ready(jitted(x)),
            "jax.jit(model).lower(x).compile()(x)": lambda: jax.block_until_ready(compiled(x)),
            "same, numpy input": lambda: jax.block_until_ready(compiled(feed[session.get_inputs()[0].name])),
            "model(x), eager": lambda: jax.block_until_ready(model(x)),
            "model(x), eager, numpy input": lambda: jax.block_until_ready(model(feed[session.get_inputs()[0].name])),
            "onnxruntime session.run": lambda: session.run(None, feed),
        },
        200 if quick else 1000,
        3 if quick else 5,
    )
    return [{"how": k, "us": 1e6 * v} for k, v in t.items()]


def _report(models, convs, dispatch, machine: str) -> str:
    lines = [
        "# Convolutional models on CPU: jaxonnx jit forward vs onnxruntime",
        "",
        f"{machine} JAX's default 32-bit mode. Made by `python benchmarks/conv_models.py`. onnxruntime uses "
        "both cores and loses the most when other work shares them: run it on a quiet machine. The columns of "
        "one setting ran interleaved in one process; each model ran in a fresh process per setting.",
        "",
        "Ratio = onnxruntime time / jaxonnx time (higher is better, 1 = as fast). *Before* is jaxonnx "
        "as it was: every op in ONNX's layout (`channels_last=False`) and XLA's own convolution on CPU "
        "(`lax.conv_general_dilated`) with XLA's default flags (YNNPACK's convolutions, on one core). "
        "*After* is jaxonnx as it is: XLA:CPU's convolutions out of YNNPACK, on every core "
        "(`jaxonnx/_xla_cpu.py`), the CPU formulations of `jaxonnx/ops/_helpers/conv_cpu.py` "
        "(depthwise and stem sums, Winograd from 256 channels, patch embeddings as one dot) and the "
        "activations between convolutions kept channels-last (`jaxonnx/_core/layout.py`). *1 core* is "
        "jaxonnx as it is and onnxruntime, both with their defaults, in a process pinned to core 0 "
        f"(`os.sched_setaffinity(0, {{0}})` before either is imported, as `taskset -c 0`). {bench.settings_line(models)}",
        "",
        "| model | batch | jaxonnx ms | before ms | onnxruntime ms | ratio | ratio before | 1 core: jaxonnx ms "
        "| 1 core: onnxruntime ms | 1 core: ratio | compile ms | before compile ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in models:
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['jaxonnx_ms']:.3f} | {r['before_ms']:.3f} | {r['ort_ms']:.3f} | "
            f"{r['ratio']:.2f} | {r['before_ratio']:.2f} | {r['pinned_jaxonnx_ms']:.3f} | {r['pinned_ort_ms']:.3f} | "
            f"{r['pinned_ratio']:.2f} | {r['compile_ms']:.0f} | {r['before_compile_ms']:.0f} |"
        )
    if convs:
        lines += [
            "",
            "## Single convolutions and depthwise-separable blocks (float32, 'same' padding, inputs on the device, all cores)",
            "",
            "| convolution | after ms | before (XLA) ms | onnxruntime ms |",
            "|---|---|---|---|",
        ]
        lines += [f"| {r['conv']} | {r['after_ms']:.3f} | {r['before_ms']:.3f} | {r['ort_ms']:.3f} |" for r in convs]
    if dispatch:
        lines += [
            "",
            "## Calling a small model (MLP fixture, batch 1, all cores)",
            "",
            "| how | µs per call |",
            "|---|---|",
        ]
        lines += [f"| `{r['how']}` | {r['us']:.1f} |" for r in dispatch]
    return "\n".join(lines) + "\n"


def _chart(models, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['model']}\nbatch {r['batch']}" for r in models]
    xs = np.arange(len(models))
    fig, ax = plt.subplots(figsize=(max(8, 0.7 * len(models)), 4.5))
    ax.bar(xs - 0.27, [r["before_ratio"] for r in models], 0.27, label="before (XLA's convolution, ONNX's layout)")
    ax.bar(xs, [r["ratio"] for r in models], 0.27, label="after (CPU formulations, channels-last)")
    ax.bar(xs + 0.27, [r["pinned_ratio"] for r in models], 0.27, label="after, one core (both runtimes pinned)")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(xs, labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("onnxruntime time / jaxonnx time")
    ax.set_title("jaxonnx vs onnxruntime on CPU (higher is better)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def _child(args) -> int:
    """A measuring process in one core setting (``--child``; the parent merges what it writes)."""
    bench.pin(args.cores)  # before jax or onnxruntime starts its threads
    if args.child == "profile":
        bench.profile_child(args.profile, args.batch, args.cores, args.calls)
        bench.write_json(args.json, True)
    elif args.child == "models":
        bench.write_rows(args.json, measure_models(args.only, args.quick, before=args.cores == "all"))
    else:
        bench.write_json(
            args.json, {"convs": measure_convolutions(args.quick), "dispatch": measure_dispatch(args.quick)}
        )
    return 0


def profile(script: str, name: str, batch: int | None, calls: int) -> int:
    """Prints where one model's time goes, jaxonnx beside onnxruntime, on all cores and on one."""
    if not bench.export(name):
        print(f"{name}: not available (torch/torchvision not installed?)", file=sys.stderr)
        return 1
    print(f"# Where {name}'s time goes on CPU\n\n{bench.machine_line(os.getloadavg()[0])}")
    extra = ["--profile", name, "--calls", str(calls)] + ([] if batch is None else ["--batch", str(batch)])
    ok = [bench.run_child(script, "profile", cores, extra, env=bench.profile_env()) for cores in bench.SETTINGS]
    print(f"\nLoad average (1 min) {os.getloadavg()[0]:.2f} at the end.")
    return 0 if all(ok) else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="*", help="models to run (default: all)")
    parser.add_argument("--out", default=os.path.join(HERE, "conv_models_results.md"))
    parser.add_argument("--chart", default=os.path.join(HERE, "conv_models.png"))
    parser.add_argument(
        "--profile", metavar="MODEL", help="print where MODEL's time goes (XLA's and onnxruntime's profilers)"
    )
    parser.add_argument("--batch", type=int, help="with --profile: the batch (default: the model's sample batch)")
    parser.add_argument("--calls", type=int, default=50, help="with --profile: calls profiled per runtime")
    parser.add_argument("--child", choices=("models", "sections", "profile"), help=argparse.SUPPRESS)
    parser.add_argument("--cores", default="all", help=argparse.SUPPRESS)
    parser.add_argument("--json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args)
    script = os.path.abspath(__file__)
    if args.profile:
        return profile(script, args.profile, args.batch, args.calls)
    load_start = os.getloadavg()[0]
    names = []
    for name in args.only or FIXTURE_MODELS + TORCH_MODELS:
        if bench.export(name):
            names.append(name)
        else:
            print(f"{name}: not available (torch/torchvision not installed?)", file=sys.stderr)
    quick = ["--quick"] if args.quick else []
    models = bench.side_by_side(script, names, quick)
    sections = {} if args.only else bench.run_child(script, "sections", "all", quick) or {}
    report = _report(
        models, sections.get("convs"), sections.get("dispatch"), bench.machine_line(load_start, os.getloadavg()[0])
    )
    with open(args.out, "w") as f:
        f.write(report)
    if models:
        _chart(models, args.chart)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
