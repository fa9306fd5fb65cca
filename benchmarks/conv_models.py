"""Convolutional models on CPU: jaxonnx (jit forward) against onnxruntime (not a test).

    python benchmarks/conv_models.py            # writes conv_models_results.md and conv_models.png
    python benchmarks/conv_models.py --quick    # fewer repetitions
    python benchmarks/conv_models.py --only mobilenet_v3_small resnet

Models: the committed dynamic-batch fixtures of ``tests/fixtures/models`` and, when torch and
torchvision are installed, torchvision's MobileNetV3-large, ResNet-18 and EfficientNet-B0 at
224x224, a PaddleOCR-like text detector (a MobileNetV3-large backbone and a small FPN
head at 320x320) and a YOLOv8n-like detector at 320x320 (``yolo_like.py``), exported once with random weights into a temporary folder (nothing is
downloaded). At batch 1 and 8 every model runs three ways in one process, alternating in
blocks: jaxonnx as it is (on CPU, convolutions through ``ops/_helpers/conv_cpu.py``, the
activations between them channels-last: ``_core/layout.py``), jaxonnx as it was before
(``channels_last=False`` and XLA's own convolution, compiled with XLA's default YNNPACK
convolutions where ``import jaxonnx`` took them out: ``jaxonnx/_xla_cpu.py``), and a default
onnxruntime CPU ``InferenceSession``. Medians are reported; ratio = onnxruntime / jaxonnx (higher is
better). Compile time is ``jax.jit(model).lower(...).compile()``. Outputs are checked close.

It also times depthwise and standard convolutions alone and in depthwise-separable blocks
(depthwise, Relu, 1x1 convolution; before / after / onnxruntime) and
what a call costs through ``jax.jit(model)`` against an ahead-of-time compiled executable.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "tests", "fixtures", "models")
CACHE = os.path.join(tempfile.gettempdir(), "jaxonnx_conv_models")
FIXTURE_MODELS = ("mobilenet_v3_small", "resnet", "cnn", "vit", "gpt2", "mlp")
TORCH_MODELS = ("mobilenet_v3_large", "resnet18", "efficientnet_b0", "ocr_detector", "yolov8n")
BATCHES = (1, 8)


def _fixture(name: str):
    for exporter in ("dynamo", "torchscript"):
        path = os.path.join(FIXTURES, f"{name}_{exporter}_dynamic.onnx")
        if os.path.exists(path):
            data = np.load(path.replace(".onnx", ".npz"))
            inputs = [data[f"inputs.{i}"] for i in range(sum(k.startswith("inputs.") for k in data))]
            return path, inputs
    return None, None


def _torch_model(name: str):
    """Exports a torchvision model (random weights, eval mode) once; None without torch."""
    try:
        import torch
        import torchvision
    except ImportError:
        return None, None
    size = 320 if name in ("ocr_detector", "yolov8n") else 224
    path = os.path.join(CACHE, f"{name}.onnx")
    image = np.random.default_rng(0).standard_normal((1, 3, size, size)).astype(np.float32)
    if not os.path.exists(path):
        os.makedirs(CACHE, exist_ok=True)
        torch.manual_seed(0)
        if name == "ocr_detector":
            module = _ocr_detector(torch, torchvision)
        elif name == "yolov8n":
            sys.path.insert(0, HERE)
            from yolo_like import yolov8n_like

            module = yolov8n_like(torch)
        else:
            module = getattr(torchvision.models, name)(weights=None)
        module.eval()
        torch.onnx.export(
            module, (torch.from_numpy(image),), path, input_names=["image"], dynamo=False,
            dynamic_axes={"image": {0: "batch"}}, opset_version=17,
        )
    return path, [image]


def _ocr_detector(torch, torchvision):
    """A PaddleOCR-DB-like detector: MobileNetV3-large features at strides 4..32, a
    top-down FPN of 1x1 and 3x3 convolutions, nearest upsampling, and a probability map."""
    nn = torch.nn

    class Detector(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = torchvision.models.mobilenet_v3_large(weights=None).features
            self.taps = (3, 6, 12, 16)  # strides 4, 8, 16, 32
            widths = (24, 40, 112, 960)
            self.lateral = nn.ModuleList(nn.Conv2d(c, 96, 1) for c in widths)
            self.smooth = nn.ModuleList(nn.Conv2d(96, 24, 3, padding=1) for _ in widths)
            self.head = nn.Sequential(nn.Conv2d(96, 24, 3, padding=1), nn.BatchNorm2d(24), nn.ReLU(), nn.Conv2d(24, 1, 1), nn.Sigmoid())

        def forward(self, x):
            maps = []
            for i, layer in enumerate(self.features):
                x = layer(x)
                if i in self.taps:
                    maps.append(x)
            lat = [conv(m) for conv, m in zip(self.lateral, maps)]
            for i in range(len(lat) - 1, 0, -1):
                lat[i - 1] = lat[i - 1] + nn.functional.interpolate(lat[i], scale_factor=2.0, mode="nearest")
            outs = [nn.functional.interpolate(s(m), scale_factor=2.0 ** i, mode="nearest") for i, (s, m) in enumerate(zip(self.smooth, lat))]
            return self.head(torch.cat(outs, 1))

    return Detector()


def _tile(inputs, batch):
    return [np.concatenate([x] * -(-batch // x.shape[0]), axis=0)[:batch] for x in inputs]


def _interleaved(fns: dict, runs: int, blocks: int, warm_s: float = 0.2) -> dict:
    """Median seconds per call of each function, alternating in blocks of ``runs`` calls.

    Each block starts with untimed calls for ``warm_s`` seconds (at least one), so that every
    runtime is timed warm, as a server calling it back to back sees it. XLA's worker threads
    sleep when idle, and the first calls after that run slow: on the 2-core VM the YOLOv8n-like
    detector took 14-17 ms for its first three calls after 0.2 s without work, against 9.5 ms
    warm (onnxruntime, whose threads spin, 7.2 against 6.3 for its first). With one untimed
    call per block, whatever ran right after onnxruntime's block ran up to 1.5x slower than
    the same executable later in the rotation.
    """
    times = {name: [] for name in fns}
    for _ in range(blocks):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            while time.perf_counter() - start < warm_s:
                fn()
            for _ in range(runs):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    return {name: float(np.median(t)) for name, t in times.items()}


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


def measure_models(names, quick: bool) -> list[dict]:
    import jax
    import onnxruntime as ort

    import jaxonnx

    rows = []
    for name in names:
        path, inputs = _fixture(name) if name in FIXTURE_MODELS else _torch_model(name)
        if path is None:
            print(f"{name}: not available (torch/torchvision not installed?)", file=sys.stderr)
            continue
        model = jaxonnx.load(path)
        old_model = jaxonnx.load(path, channels_last=False)  # ONNX's layout, as before
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names_in = [i.name for i in session.get_inputs()]
        for batch in BATCHES:
            arrays = _tile(inputs, batch)
            on_device = [jax.device_put(x.astype(np.int32) if x.dtype == np.int64 else x) for x in arrays]
            # A fresh function per compile: jax.jit caches traces by function, and the two
            # formulations must each be traced.
            start = time.perf_counter()
            after = jax.jit(lambda *a: model(*a)).lower(*on_device).compile()
            compile_s = time.perf_counter() - start
            with _xla_convolutions():
                start = time.perf_counter()
                before = jax.jit(lambda *a: old_model(*a)).lower(*on_device).compile(_xla_default_options())
                before_compile_s = time.perf_counter() - start
            feed = dict(zip(names_in, arrays))
            expected = session.run(None, feed)
            for got in (after(*on_device), before(*on_device)):
                for e, g in zip(expected, got):
                    np.testing.assert_allclose(np.asarray(g), e, rtol=2e-3, atol=2e-4 * max(1.0, float(np.abs(e).max())))
            heavy = name in TORCH_MODELS
            runs = (3 if heavy else 10) if quick else (5 if heavy else 30)
            blocks = 3 if quick else 5
            t = _interleaved(
                {
                    "after": lambda: jax.block_until_ready(after(*on_device)),
                    "before": lambda: jax.block_until_ready(before(*on_device)),
                    "ort": lambda: session.run(None, feed),
                },
                runs, blocks,
            )
            row = {
                "model": name, "batch": batch, "jaxonnx_ms": 1e3 * t["after"], "before_ms": 1e3 * t["before"],
                "ort_ms": 1e3 * t["ort"], "compile_ms": 1e3 * compile_s, "before_compile_ms": 1e3 * before_compile_s,
            }
            row["ratio"], row["before_ratio"] = t["ort"] / t["after"], t["ort"] / t["before"]
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
    nodes = [helper.make_node("Conv", ["x", "w"], ["y" if pointwise is None else "d"], strides=strides, pads=pads, group=group)]
    weights = [onnx.numpy_helper.from_array(w, "w")]
    if pointwise is not None:
        nodes += [helper.make_node("Relu", ["d"], ["r"]), helper.make_node("Conv", ["r", "p"], ["y"])]
        weights.append(onnx.numpy_helper.from_array(pointwise, "p"))
    graph = helper.make_graph(
        nodes, "conv", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], weights,
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
        t = _interleaved(
            {
                "after": lambda: jax.block_until_ready(after(*args)),
                "before": lambda: jax.block_until_ready(before(*args)),
                "ort": _ort_conv(np.asarray(x), np.asarray(w), geometry["strides"], geometry["padding"], g, None if p is None else np.asarray(p)),
            },
            10 if quick else 30, 3 if quick else 5,
        )
        shape = f"N={n} C={c} {h}x{h}" + (f", 1x1 to {m}" if block else f" M={m}")
        row = {"conv": f"{what}: {shape}", **{f"{key}_ms": 1e3 * v for key, v in t.items()}}
        print(row, file=sys.stderr)
        rows.append(row)
    return rows


def measure_dispatch(quick: bool) -> list[dict]:
    """Per-call cost of the MLP fixture at batch 1: ``jax.jit(model)`` against the
    executable of ``jax.jit(model).lower(x).compile()``, and onnxruntime."""
    import jax
    import onnxruntime as ort

    import jaxonnx

    path, inputs = _fixture("mlp")
    model = jaxonnx.load(path)
    x = jax.device_put(inputs[0][:1])
    jitted = jax.jit(model)
    compiled = jitted.lower(x).compile()
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: np.asarray(x)}
    t = _interleaved(
        {
            "jax.jit(model)(x)": lambda: jax.block_until_ready(jitted(x)),
            "jax.jit(model).lower(x).compile()(x)": lambda: jax.block_until_ready(compiled(x)),
            "same, numpy input": lambda: jax.block_until_ready(compiled(feed[session.get_inputs()[0].name])),
            "onnxruntime session.run": lambda: session.run(None, feed),
        },
        200 if quick else 1000, 3 if quick else 5,
    )
    return [{"how": k, "us": 1e6 * v} for k, v in t.items()]


def _report(models, convs, dispatch) -> str:
    import jax
    import onnxruntime as ort

    try:
        import torch

        torch_line = f", torch {torch.__version__} (exports)"
    except ImportError:
        torch_line = ""
    lines = [
        "# Convolutional models on CPU: jaxonnx jit forward vs onnxruntime",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; jax {jax.__version__}, "
        f"onnxruntime {ort.__version__}{torch_line}; JAX's default 32-bit mode. Made by `python benchmarks/conv_models.py`. "
        f"Load average {os.getloadavg()[0]:.1f} at the end (onnxruntime uses both cores and loses the most "
        "when other work shares them: run it on a quiet machine). The columns of one row ran interleaved "
        "in one process.",
        "",
        "Ratio = onnxruntime time / jaxonnx time (higher is better, 1 = as fast). *Before* is jaxonnx "
        "as it was: every op in ONNX's layout (`channels_last=False`) and XLA's own convolution on CPU "
        "(`lax.conv_general_dilated`) with XLA's default flags (YNNPACK's convolutions, on one core). "
        "*After* is jaxonnx as it is: XLA:CPU's convolutions out of YNNPACK, on every core "
        "(`jaxonnx/_xla_cpu.py`), the CPU formulations of `jaxonnx/ops/_helpers/conv_cpu.py` "
        "(depthwise and stem sums, Winograd from 256 channels, patch embeddings as one dot) and the "
        "activations between convolutions kept channels-last (`jaxonnx/_core/layout.py`).",
        "",
        "| model | batch | jaxonnx ms | before ms | onnxruntime ms | ratio | ratio before | compile ms | before compile ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in models:
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['jaxonnx_ms']:.3f} | {r['before_ms']:.3f} | {r['ort_ms']:.3f} | "
            f"{r['ratio']:.2f} | {r['before_ratio']:.2f} | {r['compile_ms']:.0f} | {r['before_compile_ms']:.0f} |"
        )
    if convs:
        lines += [
            "", "## Single convolutions and depthwise-separable blocks (float32, 'same' padding, inputs on the device)", "",
            "| convolution | after ms | before (XLA) ms | onnxruntime ms |", "|---|---|---|---|",
        ]
        lines += [f"| {r['conv']} | {r['after_ms']:.3f} | {r['before_ms']:.3f} | {r['ort_ms']:.3f} |" for r in convs]
    if dispatch:
        lines += ["", "## Calling a small model (MLP fixture, batch 1)", "", "| how | µs per call |", "|---|---|"]
        lines += [f"| `{r['how']}` | {r['us']:.1f} |" for r in dispatch]
    return "\n".join(lines) + "\n"


def _chart(models, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['model']}\nbatch {r['batch']}" for r in models]
    xs = np.arange(len(models))
    fig, ax = plt.subplots(figsize=(max(8, 0.7 * len(models)), 4.5))
    ax.bar(xs - 0.2, [r["before_ratio"] for r in models], 0.4, label="before (XLA's convolution, ONNX's layout)")
    ax.bar(xs + 0.2, [r["ratio"] for r in models], 0.4, label="after (CPU formulations, channels-last)")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(xs, labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("onnxruntime time / jaxonnx time")
    ax.set_title("jaxonnx vs onnxruntime on CPU (higher is better)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="*", help="models to run (default: all)")
    parser.add_argument("--out", default=os.path.join(HERE, "conv_models_results.md"))
    parser.add_argument("--chart", default=os.path.join(HERE, "conv_models.png"))
    args = parser.parse_args(argv)
    names = args.only or FIXTURE_MODELS + TORCH_MODELS
    models = measure_models(names, args.quick)
    convs = [] if args.only else measure_convolutions(args.quick)
    dispatch = [] if args.only else measure_dispatch(args.quick)
    report = _report(models, convs, dispatch)
    with open(args.out, "w") as f:
        f.write(report)
    if models:
        _chart(models, args.chart)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
