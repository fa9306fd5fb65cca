"""jaxonnx on a GPU: the seed ops against the copy bandwidth, exported models against PyTorch,
and the convolutional CPU benchmark on the same machine's cores (not a test).

    python benchmarks/gpu.py                  # everything, writes benchmarks/gpu_results.md and gpu.png
    python benchmarks/gpu.py --quick          # small sizes, a smoke run (works on CPU too)
    python benchmarks/gpu.py --budget-s 300   # stops starting new model rows after 300 s

Bandwidth: Slice, Where, GatherElements, Compress and Flatten at 4096x8192 float32 (the cases
of ``benchmarks/run.py``), each as ``jax.jit`` of ``jaxonnx.load(model)``, timed as the median
of blocks of back-to-back calls up to ``block_until_ready``. The fraction is the bytes the op
must move (read + written) per second, over the same for a ``jnp.copy`` of an array of the
same bytes: 1.0 means the op runs at the device's copy rate.

Models: each is built in PyTorch (random weights), exported with ``torch.onnx.export``
(TorchScript exporter, a dynamic batch) in float32 and in bfloat16, and run three ways on the
GPU: ``jax.jit`` of jaxonnx on the file, torch eager, and ``torch.compile`` (default mode) on
the module (forward at the large batch only: it compiles for 15-35 s per model and mode). Forward is one call; a training step is the forward, a sum-of-squares loss and
the gradients of every weight (``jax.grad`` of the model pytree; ``loss.backward()``). The
three alternate in blocks in one process; medians are reported, with the ratios
torch / jaxonnx (above 1: jaxonnx is faster). Both may use TF32 for float32 products and
convolutions, as JAX does by default on the GPU (torch is told so with
``torch.backends.{cuda.matmul,cudnn}.allow_tf32 = True``), so float32 compares like with like.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def machine() -> dict:
    import jax
    import onnx

    info = {
        "python": platform.python_version(),
        "jax": jax.__version__,
        "onnx": onnx.__version__,
        "devices": [str(d) for d in jax.devices()],
        "cpu_count": os.cpu_count(),
    }
    try:
        import torch

        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    try:
        info["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def _median_seconds(fn, *, calls: int, blocks: int) -> float:
    """Median over ``blocks`` of the mean time of ``calls`` back-to-back calls (fn blocks)."""
    fn()
    times = []
    for _ in range(blocks):
        start = time.perf_counter()
        for _ in range(calls):
            out = fn(sync=False)
        _sync(out)
        times.append((time.perf_counter() - start) / calls)
    return float(np.median(times))


def _sync(out):
    import jax

    if hasattr(out, "block_until_ready") or isinstance(out, (tuple, list, dict)):
        jax.block_until_ready(out)
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
    except ImportError:
        pass


def _timed(fn):
    def call(sync=True):
        out = fn()
        if sync:
            _sync(out)
        return out

    return call


# --------------------------------------------------------------------------- bandwidth


def bandwidth(quick: bool) -> list[dict]:
    import jax
    import jax.numpy as jnp
    from run import _models

    import jaxonnx

    jax.config.update("jax_enable_x64", True)  # ONNX indices and bounds are int64
    rows = []
    cases = list(_models(quick)[:5])
    # GatherElements with int32 indices: the index dtype is half its bytes.
    name, proto, inputs, nbytes, ref = cases[2]
    small = dict(inputs, i=inputs["i"].astype(np.int32))
    proto32 = type(proto)()
    proto32.CopyFrom(proto)
    proto32.graph.input[1].type.tensor_type.elem_type = 6  # INT32
    cases.insert(3, ("GatherElements (last axis, int32 indices)", proto32, small, nbytes * 12 // 16, ref))
    copies = {}
    for name, proto, inputs, nbytes, _ in cases:
        model = jaxonnx.load(proto)
        fn = jax.jit(model)
        placed = [jax.device_put(inputs[n]) for n in model.input_names]
        t = _median_seconds(_timed(lambda: fn(*placed)), calls=5 if quick else 20, blocks=5 if quick else 9)
        if nbytes not in copies:
            source = jnp.ones(nbytes // 8, jnp.float32)  # read once and written once: nbytes in all
            copy = jax.jit(jnp.copy)
            copies[nbytes] = _median_seconds(
                _timed(lambda: copy(source)), calls=5 if quick else 20, blocks=5 if quick else 9
            )
        row = {
            "op": name,
            "ms": 1e3 * t,
            "copy_ms": 1e3 * copies[nbytes],
            "GB_s": nbytes / t / 1e9,
            "fraction": copies[nbytes] / t,
        }
        print(row, file=sys.stderr, flush=True)
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- models


def _torch_models(quick: bool) -> dict:
    """name -> (module factory, example inputs factory(batch) as numpy arrays)."""
    import torch
    import torchvision
    from torch import nn

    side = 64 if quick else 224
    seq = 16 if quick else 128
    width, layers = (64, 2) if quick else (768, 12)

    def image(size):
        return lambda batch: [np.random.default_rng(0).standard_normal((batch, 3, size, size)).astype(np.float32)]

    def tokens(vocab):
        return lambda batch: [np.random.default_rng(0).integers(0, vocab, (batch, seq)).astype(np.int64)]

    def gpt2():
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(
            vocab_size=8192,
            n_positions=seq,
            n_embd=width,
            n_layer=layers,
            n_head=12 if not quick else 2,
            attn_implementation="eager",
            use_cache=False,
        )
        return _Logits(GPT2LMHeadModel(config))

    def bert():
        from transformers import BertConfig, BertModel

        config = BertConfig(
            vocab_size=8192,
            hidden_size=width,
            num_hidden_layers=layers,
            num_attention_heads=12 if not quick else 2,
            intermediate_size=4 * width,
            attn_implementation="eager",
        )
        return _Hidden(BertModel(config))

    def llama():
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(
            vocab_size=8192,
            hidden_size=width,
            intermediate_size=int(2.75 * width) // 8 * 8,
            num_hidden_layers=layers,
            num_attention_heads=12 if not quick else 4,
            num_key_value_heads=4 if not quick else 2,
            max_position_embeddings=2 * seq,
            attn_implementation="eager",
            use_cache=False,
        )
        return _Logits(LlamaForCausalLM(config))

    class LSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(80, 128 if quick else 512, num_layers=2, batch_first=True)
            self.head = nn.Linear(128 if quick else 512, 32)

        def forward(self, x):
            return self.head(self.rnn(x)[0])

    def yolo():
        from yolo_like import yolov8n_like

        return yolov8n_like(torch)

    return {
        "resnet18": (lambda: torchvision.models.resnet18(weights=None), image(side)),
        "gpt2": (gpt2, tokens(8192)),
        "vit_b_16": (
            lambda: (
                torchvision.models.vit_b_16(weights=None, image_size=side)
                if not quick
                else torchvision.models.VisionTransformer(64, 16, 2, 2, 64, 128)
            ),
            image(side),
        ),
        "bert": (bert, tokens(8192)),
        "llama": (llama, tokens(8192)),
        "lstm": (
            LSTM,
            lambda batch: [
                np.random.default_rng(0).standard_normal((batch, 50 if quick else 100, 80)).astype(np.float32)
            ],
        ),
        "mobilenet_v3_large": (lambda: torchvision.models.mobilenet_v3_large(weights=None), image(side)),
        "yolov8n_like": (yolo, image(64 if quick else 320)),
    }


#: Models with convolutions: their bfloat16 exports are not valid ONNX at the opsets torch's
#: TorchScript exporter writes (Conv-11 takes float16, float and double; bfloat16 came with
#: Conv-22), and jaxonnx refuses them as the schema says.
CONVOLUTIONAL = {"resnet18", "vit_b_16", "mobilenet_v3_large", "yolov8n_like"}


def _of_input_ids(model, pick):
    """A Hugging Face model as a module of ``input_ids`` returning ``pick(outputs)``."""
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids):
            return pick(self.model(input_ids=input_ids))

    return Wrapped()


def _Logits(model):
    return _of_input_ids(model, lambda out: out.logits)


def _Hidden(model):
    return _of_input_ids(model, lambda out: out.last_hidden_state)


def _export(module, inputs, path):
    import torch

    names = [f"input{i}" for i in range(len(inputs))]
    torch.onnx.export(
        module,
        tuple(inputs),
        path,
        input_names=names,
        output_names=["output"],
        dynamo=False,
        dynamic_axes={n: {0: "batch"} for n in names} | {"output": {0: "batch"}},
        opset_version=17,
    )


def models(quick: bool, budget_s: float, only=None) -> list[dict]:
    import jax
    import torch

    import jaxonnx

    jax.config.update("jax_enable_x64", False)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    started = time.perf_counter()
    rows = []
    batches = (1, 4) if quick else (1, 32)
    workdir = tempfile.mkdtemp()
    for name, (factory, make_inputs) in _torch_models(quick).items():
        if only and name not in only:
            continue
        for dtype_name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
            if dtype_name == "bfloat16" and name in CONVOLUTIONAL:
                continue
            if time.perf_counter() - started > budget_s:
                print(f"budget spent: {name} {dtype_name} not measured", file=sys.stderr, flush=True)
                continue
            try:
                torch.manual_seed(0)
                module = factory().eval().to(dtype)
                path = os.path.join(workdir, f"{name}_{dtype_name}.onnx")
                example = [torch.from_numpy(x) for x in make_inputs(1)]
                example = [x.to(dtype) if x.is_floating_point() else x for x in example]
                _export(module, example, path)
                model = jaxonnx.load(path)
                module = module.to(device)
                compiled = torch.compile(module)
            except Exception as error:  # an export or load failure is a result to report
                rows.append({"model": name, "dtype": dtype_name, "error": f"{type(error).__name__}: {error}"[:300]})
                print(rows[-1], file=sys.stderr, flush=True)
                continue
            for batch in batches:
                for mode in ("forward", "train"):
                    if time.perf_counter() - started > budget_s:
                        continue
                    if dtype_name == "bfloat16" and batch == batches[0]:
                        continue
                    # torch.compile takes 15-35 s per model and mode on the H100: forward at the
                    # large batch only, to fit the device time.
                    rows.append(
                        _measure_model(
                            name,
                            dtype_name,
                            batch,
                            mode,
                            model,
                            module,
                            compiled,
                            make_inputs,
                            dtype,
                            device,
                            quick,
                            compile_too=batch == batches[-1] and mode == "forward",
                        )
                    )
                    print(rows[-1], file=sys.stderr, flush=True)
            del model, module, compiled
            jax.clear_caches()
            torch._dynamo.reset()
    return rows


def _measure_model(
    name, dtype_name, batch, mode, model, module, compiled, make_inputs, dtype, device, quick, compile_too
):
    import jax
    import jax.numpy as jnp
    import torch

    arrays = make_inputs(batch)
    jax_inputs = [
        jax.device_put(
            x.astype(np.int32)
            if x.dtype == np.int64
            else x.astype(jnp.bfloat16)
            if dtype_name == "bfloat16" and x.dtype.kind == "f"
            else x
        )
        for x in arrays
    ]
    torch_inputs = [torch.from_numpy(x).to(device) for x in arrays]
    torch_inputs = [x.to(dtype) if x.is_floating_point() else x for x in torch_inputs]
    row = {"model": name, "dtype": dtype_name, "batch": batch, "mode": mode}
    try:
        if mode == "forward":
            jax_fn = jax.jit(lambda m, *x: m(*x))

            def run_jax():
                return jax_fn(model, *jax_inputs)

            def torch_call(net):
                def run():
                    with torch.no_grad():
                        return net(*torch_inputs)

                return run
        else:

            def loss(m, *x):
                return sum(jnp.sum(jnp.square(o.astype(jnp.float32))) for o in m(*x))

            jax_fn = jax.jit(jax.grad(loss))

            def run_jax():
                return jax_fn(model, *jax_inputs)

            def torch_call(net):
                def run():
                    out = net(*torch_inputs)
                    out = out if isinstance(out, (tuple, list)) else (out,)
                    total = sum((o.float() ** 2).sum() for o in out)
                    total.backward()
                    return total

                return run

        start = time.perf_counter()
        jax.block_until_ready(run_jax())
        row["jax_first_call_s"] = time.perf_counter() - start
        calls, blocks = (2, 3) if quick else (5, 7)
        row["jaxonnx_ms"] = 1e3 * _median_seconds(_timed(run_jax), calls=calls, blocks=blocks)
        row["eager_ms"] = 1e3 * _median_seconds(_timed(torch_call(module)), calls=calls, blocks=blocks)
        if compile_too:
            start = time.perf_counter()
            torch_call(compiled)()
            _sync(None)
            row["compile_first_call_s"] = time.perf_counter() - start
            row["compile_ms"] = 1e3 * _median_seconds(_timed(torch_call(compiled)), calls=calls, blocks=blocks)
        row["vs_eager"] = row["eager_ms"] / row["jaxonnx_ms"]
        if "compile_ms" in row:
            row["vs_compile"] = row["compile_ms"] / row["jaxonnx_ms"]
    except Exception as error:
        row["error"] = f"{type(error).__name__}: {error}"[:300]
    module.zero_grad(set_to_none=True)
    return row


# --------------------------------------------------------------------------- CPU scaling


def cpu_scaling(quick: bool, timeout_s: float) -> str:
    """``benchmarks/conv_models.py`` on this machine's CPU cores (JAX on its CPU backend)."""
    out = os.path.join(tempfile.mkdtemp(), "conv.md")
    env = dict(os.environ, JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="")
    command = [
        sys.executable,
        os.path.join(HERE, "conv_models.py"),
        "--quick",
        "--out",
        out,
        "--chart",
        out.replace(".md", ".png"),
    ]
    if quick:
        command += ["--only", "resnet"]
    else:
        command += ["--only", "mobilenet_v3_large", "efficientnet_b0", "resnet18", "resnet"]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"(not finished in {timeout_s:.0f} s)"
    if done.returncode != 0:
        return f"(failed: {done.stderr[-1500:]})"
    return open(out).read()


# --------------------------------------------------------------------------- report


def report(info, bw, rows, cpu, tests) -> str:
    lines = [
        "# jaxonnx on a GPU",
        "",
        "Written by `python benchmarks/gpu.py`, one run. Machine and versions:",
        "",
        "```",
        json.dumps(info, indent=1),
        "```",
        "",
    ]
    if tests:
        lines += ["## Correctness on the device", "", tests, ""]
    if bw:
        lines += [
            "## Seed ops against the copy bandwidth (4096x8192 float32)",
            "",
            "| op | ms | copy of the same bytes, ms | GB/s | fraction of copy |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['op']} | {r['ms']:.3f} | {r['copy_ms']:.3f} | {r['GB_s']:.0f} | {r['fraction']:.2f} |" for r in bw
        ]
        lines.append("")
    if rows:
        lines += [
            "## Models against PyTorch (ratio = torch ms / jaxonnx ms; above 1, jaxonnx is faster)",
            "",
            "| model | dtype | batch | mode | jaxonnx ms | torch eager ms | torch.compile ms | vs eager | vs compile |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            if "error" in r:
                lines.append(
                    f"| {r['model']} | {r['dtype']} | {r.get('batch', '')} | {r.get('mode', '')} | failed: {r['error']} | | | | |"
                )
                continue
            fmt = lambda k: f"{r[k]:.2f}" if k in r else ""  # noqa: E731
            lines.append(
                f"| {r['model']} | {r['dtype']} | {r['batch']} | {r['mode']} | {fmt('jaxonnx_ms')} | {fmt('eager_ms')} | "
                f"{fmt('compile_ms')} | {fmt('vs_eager')} | {fmt('vs_compile')} |"
            )
        lines.append("")
    if cpu:
        lines += ["## The convolutional CPU benchmark on this machine's cores", "", cpu, ""]
    return "\n".join(lines)


def chart(bw, rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    if bw:
        axes[0].barh([r["op"] for r in bw], [r["fraction"] for r in bw])
        axes[0].axvline(1.0, color="k", lw=0.8)
        axes[0].set_xlabel("fraction of the device's copy bandwidth")
        axes[0].set_title("Seed ops, 4096x8192 float32")
    good = [r for r in rows if "vs_eager" in r]
    if good:
        labels = [f"{r['model']} {r['dtype'][:4]} b{r['batch']} {r['mode'][:5]}" for r in good]
        axes[1].barh(labels, [r["vs_eager"] for r in good], label="vs torch eager")
        axes[1].barh(labels, [r.get("vs_compile", 0) for r in good], alpha=0.6, label="vs torch.compile")
        axes[1].axvline(1.0, color="k", lw=0.8)
        axes[1].set_xscale("log")
        axes[1].set_xlabel("torch time / jaxonnx time")
        axes[1].legend()
        axes[1].tick_params(axis="y", labelsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--budget-s", type=float, default=240.0, help="model rows started within this many seconds")
    parser.add_argument("--cpu-timeout-s", type=float, default=120.0)
    parser.add_argument("--sections", default="bandwidth,models,cpu")
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--tests", help="a file with the device's pytest summary, put in the report")
    parser.add_argument("--out", default=os.path.join(HERE, "gpu_results.md"))
    parser.add_argument("--chart", default=os.path.join(HERE, "gpu.png"))
    args = parser.parse_args(argv)
    sections = args.sections.split(",")
    info = machine()
    print(info, file=sys.stderr, flush=True)
    bw = bandwidth(args.quick) if "bandwidth" in sections else []
    rows = models(args.quick, args.budget_s, args.only) if "models" in sections else []
    cpu = cpu_scaling(args.quick, args.cpu_timeout_s) if "cpu" in sections else ""
    tests = open(args.tests).read() if args.tests and os.path.exists(args.tests) else ""
    with open(args.out, "w") as f:
        f.write(report(info, bw, rows, cpu, tests))
    chart(bw, rows, args.chart)
    print(open(args.out).read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
