"""The first eager call of an exported model, and the calls after it (not a test).

    python benchmarks/first_call.py        # writes benchmarks/first_call_results.md

A user who comes from onnxruntime calls ``model(x)`` on numpy inputs and expects the first
call to be about as fast as the rest. Op by op, every op compiles on its own on first use,
so a few hundred nodes take seconds. jaxonnx now compiles the whole graph once per input
signature when no node needs a concrete value computed from the inputs (``model.eager_mode``
says which way a model runs, and why). For each committed fixture this measures, each in a
fresh process so that no compilation cache is warm: load time, the first eager call, and
the median of the next calls, once the way jaxonnx runs it now and once op by op (the
earlier behaviour, forced for the comparison).
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np
from _results import run_child, write_table

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "tests", "fixtures", "models")
MODELS = (
    "mobilenet_v3_small_dynamo_static",
    "resnet_torchscript_static",
    "cnn_torchscript_static",
    "mlp_dynamo_static",
    "vit_dynamo_static",
    "gpt2_dynamo_static",
    "bert_torchscript_static",
)
MICROSOFT = os.path.join(HERE, "..", "tests", "fixtures", "microsoft")
BUILDER_MODELS = ("genai_llama_fp32", "genai_phi3_int4_accuracy4", "genai_qwen2_fp32")

_CHILD = r"""
import json, statistics, sys, time, warnings
import numpy as np, jax, jaxonnx
warnings.simplefilter("ignore")
path, mode, feed = sys.argv[1], sys.argv[2], sys.argv[3]
data = np.load(feed)
inputs = [data[f"inputs.{i}"] for i in range(sum(k.startswith("inputs.") for k in data.files))]
start = time.perf_counter()
model = jaxonnx.load(path)
load = time.perf_counter() - start
if mode == "op-by-op":
    model._plan.whole_graph = None  # the behaviour before whole-graph eager calls
start = time.perf_counter()
jax.block_until_ready(model(*inputs))
first = time.perf_counter() - start
times = []
for _ in range(10):
    start = time.perf_counter()
    jax.block_until_ready(model(*inputs))
    times.append(time.perf_counter() - start)
print(json.dumps({"load": load, "first": first, "steady": statistics.median(times), "mode": model.eager_mode}))
"""


def _measure(path: str, mode: str, feed: str) -> dict:
    return run_child(_CHILD, path, mode, feed)


def _builder_feed(name: str, folder: str) -> str:
    """The manifest's first inputs of a builder file (tokens below the vocabulary, a mask of
    ones, normal caches), saved as the exports' .npz files hold their inputs."""
    with open(os.path.join(MICROSOFT, "manifest.json")) as f:
        spec = json.load(f)["fixtures"][name]["inputs"]
    rng = np.random.default_rng(0)
    arrays = {}
    for i, entry in enumerate(spec):
        shape, dtype = entry["shape"], entry["dtype"]
        if entry["kind"] == "tokens":
            arrays[f"inputs.{i}"] = rng.integers(0, entry["high"], shape).astype(dtype)
        elif entry["kind"] == "ones":
            arrays[f"inputs.{i}"] = np.ones(shape, dtype)
        else:
            arrays[f"inputs.{i}"] = rng.standard_normal(shape).astype(dtype)
    path = os.path.join(folder, f"{name}.npz")
    np.savez(path, **arrays)
    return path


def main() -> None:
    folder = tempfile.mkdtemp()
    cases = [(name, os.path.join(FIXTURES, f"{name}.onnx"), os.path.join(FIXTURES, f"{name}.npz")) for name in MODELS]
    cases += [(n, os.path.join(MICROSOFT, f"{n}.onnx"), _builder_feed(n, folder)) for n in BUILDER_MODELS]
    rows = []
    for name, path, feed in cases:
        now, before = _measure(path, "auto", feed), _measure(path, "op-by-op", feed)
        rows.append(
            f"| {name} | {now['load']:.2f} | {before['first']:.2f} / {1e3 * before['steady']:.1f} | "
            f"{now['first']:.2f} / {1e3 * now['steady']:.1f} | {now['mode']} |"
        )
        print(rows[-1], flush=True)
    write_table(
        "first_call_results.md",
        "First eager call (written by benchmarks/first_call.py)",
        "each cell from a fresh process.",
        ["fixture", "load s", "op by op: first s / then ms", "now: first s / then ms", "how it runs now"],
        rows,
    )


if __name__ == "__main__":
    main()
