"""Standard (group=1) convolutions on CPU: XLA's convolution, Winograd, multiply-adds and
onnxruntime (not a test).

    python benchmarks/conv_standard.py            # writes conv_standard_results.md
    python benchmarks/conv_standard.py --quick    # fewer repetitions
    python benchmarks/conv_standard.py --models   # also ResNet-18 with Winograd wired in

Four tables, each row's columns run interleaved in one process (blocks of calls alternate
between the formulations; the median and the best block are reported):

1. GEMM throughput of XLA's dot, numpy (OpenBLAS) and onnxruntime's MatMul, on the shapes a
   convolution becomes (a patch matrix, Winograd's 16 dots): can a dot-based formulation win?
2. 3x3 stride-1 convolutions (ResNet-18's and the CNN fixture's): ``lax.conv_general_dilated``
   against ``ops/_helpers/conv_winograd.py`` and onnxruntime, with compile times and the
   error of each against a float64 convolution.
   And chains of four such convolutions with bias and ReLU, where the layout transposes
   around consecutive Winograd convolutions partly cancel, as in a model.
3. Stem convolutions (3 input channels, stride 2): XLA's convolution against the shifted
   multiply-adds of ``ops/_helpers/conv_cpu.py`` applied with ``group=1``.
4. With ``--models``: torchvision's ResNet-18 (random weights, exported once into a
   temporary folder; needs torch) as jaxonnx runs it, with Winograd dispatched where
   ``winograd_wins`` says, and with Winograd for every 3x3 stride-1 convolution, against
   onnxruntime; compile times.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

GEMMS = [
    ("patch matrix of 64ch 56x56", (3136, 576), (576, 64)),
    ("Winograd 64ch 56x56 (16 dots)", (16, 784, 64), (16, 64, 64)),
    ("Winograd 256ch 14x14 (16 dots)", (16, 49, 256), (16, 256, 256)),
    ("Winograd 256ch 14x14, batch 8", (16, 392, 256), (16, 256, 256)),
    ("MLP-like 8x784 @ 784x256", (8, 784), (784, 256)),
]
# (N, C, H, M): 3x3, stride 1, padding 1.
CONVS_3X3 = [
    (1, 64, 56, 64),
    (1, 128, 28, 128),
    (1, 256, 14, 256),
    (1, 512, 7, 512),
    (8, 64, 56, 64),
    (8, 128, 28, 128),
    (8, 256, 14, 256),
    (8, 512, 7, 512),
    (1, 3, 12, 4),
    (8, 4, 12, 8),  # the CNN fixture's two convolutions
]
# (N, C, H, M, k, stride)
STEMS = [
    (1, 3, 224, 8, 3, 2),
    (1, 3, 224, 16, 3, 2),
    (1, 3, 224, 24, 3, 2),
    (1, 3, 224, 32, 3, 2),
    (8, 3, 224, 16, 3, 2),
    (8, 3, 224, 32, 3, 2),
    (1, 3, 224, 64, 7, 2),
    (1, 1, 28, 8, 5, 1),
    (1, 8, 56, 16, 3, 1),
]


def _interleaved(fns: dict, runs: int, blocks: int) -> dict:
    """(median, best) seconds per call of each function over ``blocks`` blocks of ``runs``
    calls, the functions alternating block by block."""
    per_block = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    for _ in range(blocks):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(runs):
                fn()
            per_block[name].append((time.perf_counter() - start) / runs)
    return {name: (float(np.median(t)), float(np.min(t))) for name, t in per_block.items()}


def _runs(fn, target_s=0.02) -> int:
    start = time.perf_counter()
    fn()
    return max(2, int(target_s / max(time.perf_counter() - start, 1e-6)))


def _ort_session(graph_nodes, inputs, initializers):
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        graph_nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _ort_conv(w, stride, pad):
    from onnx import helper

    node = helper.make_node("Conv", ["x", "w"], ["y"], strides=[stride, stride], pads=[pad] * 4)
    return _ort_session([node], [("x", (None, w.shape[1], None, None))], {"w": w})


def measure_gemms(quick: bool) -> list[dict]:
    import jax
    import jax.numpy as jnp
    from onnx import helper

    rows = []
    rng = np.random.default_rng(0)
    for name, a_shape, b_shape in GEMMS:
        a, b = rng.random(a_shape, np.float32), rng.random(b_shape, np.float32)
        flops = 2 * np.prod(a_shape) * b_shape[-1]
        ja, jb = jnp.asarray(a), jnp.asarray(b)
        dot = jax.jit(jnp.matmul)
        session = _ort_session([helper.make_node("MatMul", ["a", "b"], ["y"])], [("a", a_shape), ("b", b_shape)], {})
        fns = {
            "xla": lambda: jax.block_until_ready(dot(ja, jb)),
            "numpy": lambda: np.matmul(a, b),
            "ort": lambda: session.run(None, {"a": a, "b": b}),
        }
        t = _interleaved(fns, _runs(fns["xla"]), 5 if quick else 11)
        row = {"gemm": f"{name}: {a_shape} @ {b_shape}"}
        for k, (median, _) in t.items():
            row[k] = (1e3 * median, flops / median / 1e9)
        print(row, file=sys.stderr)
        rows.append(row)
    return rows


def _error(got, reference) -> float:
    got, reference = np.asarray(got, np.float64), np.asarray(reference, np.float64)
    return float(np.max(np.abs(got - reference)) / np.max(np.abs(reference)))


def _compile(fn, *args):
    import jax

    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    return compiled, time.perf_counter() - start


def measure_3x3(quick: bool) -> list[dict]:
    import jax
    import jax.numpy as jnp

    from jaxonnx.ops._helpers.conv_winograd import winograd_convolve, winograd_wins

    rows = []
    rng = np.random.default_rng(0)
    pad = ((1, 1), (1, 1))
    for n, c, h, m in CONVS_3X3:
        x = rng.standard_normal((n, c, h, h)).astype(np.float32)
        # A jax array closed over, as jaxonnx's weights reach Conv under jax.jit: XLA folds
        # the weight transform at compile time.
        w = jnp.asarray(rng.standard_normal((m, c, 3, 3)).astype(np.float32))
        xj = jnp.asarray(x)
        xla, xla_compile = _compile(lambda x: jax.lax.conv_general_dilated(x, w, (1, 1), pad), xj)
        wino, wino_compile = _compile(lambda x: winograd_convolve(x, w, pad), xj)
        session = _ort_conv(np.asarray(w), 1, 1)
        with jax.enable_x64(True):
            reference = np.asarray(
                jax.lax.conv_general_dilated(x.astype(np.float64), np.asarray(w, np.float64), (1, 1), pad)
            )
        fns = {
            "xla": lambda: jax.block_until_ready(xla(xj)),
            "winograd": lambda: jax.block_until_ready(wino(xj)),
            "ort": lambda: session.run(None, {"x": x}),
        }
        t = _interleaved(fns, _runs(fns["xla"]), 5 if quick else 11)
        row = {
            "conv": f"N={n} C={c} {h}x{h} M={m}",
            "wins": winograd_wins((n, c, h, h), (m, c, 3, 3), (1, 1), (1, 1), 1),
            **{k: t[k] for k in fns},
            "xla_compile": xla_compile,
            "wino_compile": wino_compile,
            "xla_err": _error(xla(xj), reference),
            "wino_err": _error(wino(xj), reference),
        }
        print(row, file=sys.stderr)
        rows.append(row)
    return rows


def measure_chains(quick: bool) -> list[dict]:
    """Four 3x3 convolutions, each followed by a bias and ReLU: as in a model, the NCHW/NHWC
    transposes of consecutive Winograd convolutions partly cancel."""
    import jax
    import jax.numpy as jnp

    from jaxonnx.ops._helpers.conv_winograd import winograd_convolve, winograd_wins

    rows = []
    rng = np.random.default_rng(0)
    pad = ((1, 1), (1, 1))
    for n, c, h, _ in CONVS_3X3[:8]:
        weights = [jnp.asarray(0.05 * rng.standard_normal((c, c, 3, 3)).astype(np.float32)) for _ in range(4)]
        biases = [jnp.asarray(rng.standard_normal((c, 1, 1)).astype(np.float32)) for _ in range(4)]
        xj = jnp.asarray(rng.standard_normal((n, c, h, h)).astype(np.float32))

        def chain(x, convolve):
            for w, b in zip(weights, biases):
                x = jax.nn.relu(convolve(x, w) + b)
            return x

        xla, xla_compile = _compile(
            lambda x: chain(x, lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), pad)), xj
        )
        wino, wino_compile = _compile(lambda x: chain(x, lambda x, w: winograd_convolve(x, w, pad)), xj)
        np.testing.assert_allclose(
            np.asarray(wino(xj)), np.asarray(xla(xj)), rtol=1e-4, atol=1e-4 * float(np.abs(xla(xj)).max())
        )
        fns = {"xla": lambda: jax.block_until_ready(xla(xj)), "winograd": lambda: jax.block_until_ready(wino(xj))}
        t = _interleaved(fns, _runs(fns["xla"]), 5 if quick else 11)
        row = {
            "conv": f"4 x (N={n} C={c} {h}x{h} M={c})",
            "wins": winograd_wins((n, c, h, h), (c, c, 3, 3), (1, 1), (1, 1), 1),
            **t,
            "xla_compile": xla_compile,
            "wino_compile": wino_compile,
        }
        print(row, file=sys.stderr)
        rows.append(row)
    return rows


@contextlib.contextmanager
def _multiply_adds_for_group_1():
    """A context in which conv_cpu's multiply-adds take group=1 convolutions too."""
    from jaxonnx.ops._helpers import conv_cpu

    saved = conv_cpu.multiply_adds
    conv_cpu.multiply_adds = lambda w_shape, group: True
    try:
        yield conv_cpu
    finally:
        conv_cpu.multiply_adds = saved


def measure_stems(quick: bool) -> list[dict]:
    import jax
    import jax.numpy as jnp

    from jaxonnx.ops._helpers import conv_cpu

    rows = []
    rng = np.random.default_rng(0)
    for n, c, h, m, k, s in STEMS:
        x = rng.standard_normal((n, c, h, h)).astype(np.float32)
        w = jnp.asarray(rng.standard_normal((m, c, k, k)).astype(np.float32))
        xj = jnp.asarray(x)
        geometry = {"strides": (s, s), "padding": ((k // 2, k // 2),) * 2, "dilations": (1, 1), "group": 1}
        xla, xla_compile = _compile(lambda x: conv_cpu.xla_convolve(x, w, **geometry), xj)
        with _multiply_adds_for_group_1():
            madd, madd_compile = _compile(lambda x: conv_cpu.cpu_convolve(x, w, **geometry), xj)
        session = _ort_conv(np.asarray(w), s, k // 2)
        np.testing.assert_allclose(np.asarray(madd(xj)), np.asarray(xla(xj)), rtol=1e-4, atol=1e-4)
        fns = {
            "xla": lambda: jax.block_until_ready(xla(xj)),
            "madd": lambda: jax.block_until_ready(madd(xj)),
            "ort": lambda: session.run(None, {"x": x}),
        }
        t = _interleaved(fns, _runs(fns["xla"]), 5 if quick else 11)
        row = {
            "conv": f"N={n} C={c} {h}x{h} M={m} {k}x{k} /{s}",
            "terms_x_m": c * k * k * m,
            **{key: t[key] for key in fns},
            "xla_compile": xla_compile,
            "madd_compile": madd_compile,
        }
        print(row, file=sys.stderr)
        rows.append(row)
    return rows


def _resnet18():
    """ResNet-18 (random weights) exported once; None without torch."""
    try:
        import torch
        import torchvision
    except ImportError:
        return None
    path = os.path.join(tempfile.gettempdir(), "jaxonnx_conv_models", "resnet18.onnx")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.manual_seed(0)
        module = torchvision.models.resnet18(weights=None).eval()
        torch.onnx.export(
            module,
            (torch.zeros(1, 3, 224, 224),),
            path,
            input_names=["image"],
            dynamo=False,
            dynamic_axes={"image": {0: "batch"}},
            opset_version=17,
        )
    return path


def _every_3x3(x_shape, w_shape, strides, dilations, group) -> bool:
    """Every 2-D, stride-1, dilation-1, 3x3 convolution with ``group=1``."""
    return (
        len(x_shape) == 4
        and group == 1
        and tuple(w_shape[2:]) == (3, 3)
        and tuple(strides) == (1, 1)
        and tuple(dilations) == (1, 1)
    )


@contextlib.contextmanager
def _winograd_wired_in(rule=None):
    """A context in which jaxonnx's Conv runs Winograd on CPU where ``rule`` (by default
    ``winograd_wins``) says."""
    import jax

    from jaxonnx.ops._helpers import conv_cpu
    from jaxonnx.ops._helpers.conv_winograd import winograd_convolve, winograd_wins
    from jaxonnx.ops._nn import conv as conv_module

    saved = conv_module.convolve

    def convolve(x, w, strides, padding, dilations, group):
        padding = tuple(tuple(p) for p in padding)
        if not (rule or winograd_wins)(x.shape, w.shape, strides, dilations, group):
            return saved(x, w, strides, padding, dilations, group)
        xla = dict(strides=tuple(strides), padding=padding, dilations=tuple(dilations), group=group)
        return jax.lax.platform_dependent(
            x,
            w,
            cpu=lambda x, w: winograd_convolve(x, w, padding),
            default=lambda x, w: conv_cpu.xla_convolve(x, w, **xla),
        )

    conv_module.convolve = convolve
    try:
        yield
    finally:
        conv_module.convolve = saved


def measure_models(quick: bool) -> list[dict]:
    import jax
    import onnxruntime as ort

    import jaxonnx

    path = _resnet18()
    if path is None:
        print("resnet18: torch/torchvision not installed", file=sys.stderr)
        return []
    model = jaxonnx.load(path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rows = []
    for batch in (1, 8):
        image = np.random.default_rng(0).standard_normal((batch, 3, 224, 224)).astype(np.float32)
        on_device = jax.device_put(image)
        as_is, as_is_compile = _compile(lambda x: model(x), on_device)
        with _winograd_wired_in():
            wino, wino_compile = _compile(lambda x: model(x), on_device)
        with _winograd_wired_in(_every_3x3):
            every, every_compile = _compile(lambda x: model(x), on_device)
        expected = session.run(None, {"image": image})[0]
        for compiled in (as_is, wino, every):
            got = np.asarray(compiled(on_device)[0])
            np.testing.assert_allclose(got, expected, rtol=2e-3, atol=2e-4 * max(1.0, float(np.abs(expected).max())))
        fns = {
            "as_is": lambda: jax.block_until_ready(as_is(on_device)),
            "winograd": lambda: jax.block_until_ready(wino(on_device)),
            "every": lambda: jax.block_until_ready(every(on_device)),
            "ort": lambda: session.run(None, {"image": image}),
        }
        t = _interleaved(fns, 2 if quick else 5, 5 if quick else 9)
        row = {
            "model": "resnet18",
            "batch": batch,
            **{k: t[k] for k in fns},
            "as_is_compile": as_is_compile,
            "wino_compile": wino_compile,
            "every_compile": every_compile,
        }
        print(row, file=sys.stderr)
        rows.append(row)
    return rows


NOTES = """## Notes (from the runs that made this module; see the helper's report)

- GEMM, measured first with less load (medians, GFLOP/s): 3136x576 @ 576x64: XLA 156,
  numpy 159, onnxruntime 177; 16 x (784x64 @ 64x64): XLA 104, numpy 144, onnxruntime 75;
  8x784 @ 784x256: XLA 27, numpy 67, onnxruntime 36. XLA's dot is within 15% of
  onnxruntime's on the patch-matrix shape, while XLA's convolution of the same size runs at
  about 70: the convolution, not the dot, is what is slow, so fewer multiply-adds in dots
  (Winograd) can win.
- Winograd's 16 dots in their fastest layout, `(tiles, C) @ (C, M)`, ran at 66 GFLOP/s on
  one core against 30-45 for `(M, C) @ (C, tiles)` (at batch 8 on 56x56: 11 ms against
  30-55); without the NCHW/NHWC transposes around it, Winograd beat XLA's channels-last
  convolution at every ResNet-18 size but 512 channels on 7x7 at batch 1 (64 channels on
  56x56: 1.5 ms against 2.8, best of 11 blocks).
- The MLP fixture at batch 8 (77 us against 17 us at batch 1) is not its dots: PjRt's CPU
  client runs an executable inline on the calling thread only when XLA's cost analysis
  counts fewer than 1000 flops (`cheap_computation_` in `xla/pjrt/cpu/cpu_client.cc`); at
  batch 1 the MLP has 896, at batch 8 about 7000, and it is handed to a worker thread, a
  thread switch that costs about 60 us on this VM (`jax.jit(lambda x: x * 2.0)` on 900
  floats: 11 us, on 1100: 76 us). Writing the dots as multiply-and-sum
  changed nothing (70-74 us when handed over, 11-18 us when not);
  `jax.config.update("jax_cpu_enable_async_dispatch", False)` made batch 8 take 18-40 us
  against 78-82 us (medians, busy machine), batch 1 unchanged.
"""


def _ms(pair) -> str:
    median, best = pair
    return f"{1e3 * median:.3f} ({1e3 * best:.3f})"


def _report(gemms, convs, chains, stems, models, quick) -> str:
    import jax
    import onnxruntime

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        "# Standard convolutions on CPU: XLA, Winograd, multiply-adds, onnxruntime",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores; jax {jax.__version__}, onnxruntime "
        f"{onnxruntime.__version__}; load average {load:.1f} when the report was written. Made by "
        f"`python benchmarks/conv_standard.py{' --quick' if quick else ''}`. The columns of a row ran "
        "interleaved in one process; times are the median over blocks, the best block in parentheses "
        "(on a busy machine the best block is the steadier comparison).",
        "",
        "## 1. GEMM: ms (GFLOP/s)",
        "",
        "| GEMM | XLA dot | numpy | onnxruntime MatMul |",
        "|---|---|---|---|",
    ]
    for r in gemms:
        lines.append(
            f"| {r['gemm']} | " + " | ".join(f"{r[k][0]:.3f} ({r[k][1]:.0f})" for k in ("xla", "numpy", "ort")) + " |"
        )
    lines += [
        "",
        "## 2. 3x3 stride-1 convolutions: ms",
        "",
        "*wins* is `winograd_wins`; errors are relative to a float64 convolution (max abs error / max abs value).",
        "",
        "| convolution | wins | XLA | Winograd | onnxruntime | XLA / Winograd | compile XLA ms | compile Winograd ms "
        "| error XLA | error Winograd |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in convs:
        lines.append(
            f"| {r['conv']} | {'yes' if r['wins'] else 'no'} | {_ms(r['xla'])} | {_ms(r['winograd'])} | {_ms(r['ort'])} | "
            f"{r['xla'][0] / r['winograd'][0]:.2f} | {1e3 * r['xla_compile']:.0f} | {1e3 * r['wino_compile']:.0f} | "
            f"{r['xla_err']:.1e} | {r['wino_err']:.1e} |"
        )
    lines += [
        "",
        "## 2b. Chains of four 3x3 convolutions with bias and ReLU: ms",
        "",
        "| chain | wins | XLA | Winograd | XLA / Winograd | compile XLA ms | compile Winograd ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in chains:
        lines.append(
            f"| {r['conv']} | {'yes' if r['wins'] else 'no'} | {_ms(r['xla'])} | {_ms(r['winograd'])} | "
            f"{r['xla'][0] / r['winograd'][0]:.2f} | {1e3 * r['xla_compile']:.0f} | {1e3 * r['wino_compile']:.0f} |"
        )
    lines += [
        "",
        "## 3. Stem convolutions, group=1 as multiply-adds: ms",
        "",
        "| convolution | C·k·k·M | XLA | multiply-adds | onnxruntime | XLA / multiply-adds | compile XLA ms "
        "| compile multiply-adds ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in stems:
        lines.append(
            f"| {r['conv']} | {r['terms_x_m']} | {_ms(r['xla'])} | {_ms(r['madd'])} | {_ms(r['ort'])} | "
            f"{r['xla'][0] / r['madd'][0]:.2f} | {1e3 * r['xla_compile']:.0f} | {1e3 * r['madd_compile']:.0f} |"
        )
    if models:
        lines += [
            "",
            "## 4. ResNet-18 (torchvision, random weights): ms",
            "",
            "*with Winograd*: where `winograd_wins`; *every 3x3*: every 3x3 stride-1 convolution.",
            "",
            "| model | batch | jaxonnx as is | with Winograd | every 3x3 | onnxruntime | compile as is ms "
            "| compile with Winograd ms | compile every 3x3 ms |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in models:
            lines.append(
                f"| {r['model']} | {r['batch']} | {_ms(r['as_is'])} | {_ms(r['winograd'])} | {_ms(r['every'])} | "
                f"{_ms(r['ort'])} | {1e3 * r['as_is_compile']:.0f} | {1e3 * r['wino_compile']:.0f} | {1e3 * r['every_compile']:.0f} |"
            )
    return "\n".join(lines) + "\n\n" + NOTES


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--models", action="store_true", help="also ResNet-18 (needs torch to export it)")
    parser.add_argument("--output", default=os.path.join(HERE, "conv_standard_results.md"))
    args = parser.parse_args(argv)
    gemms = measure_gemms(args.quick)
    convs = measure_3x3(args.quick)
    chains = measure_chains(args.quick)
    stems = measure_stems(args.quick)
    models = measure_models(args.quick) if args.models else []
    with open(args.output, "w") as f:
        f.write(_report(gemms, convs, chains, stems, models, args.quick))
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
