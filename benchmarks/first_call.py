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
import platform
import subprocess
import sys

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

_CHILD = r"""
import json, statistics, sys, time, warnings
import numpy as np, jax, jaxonnx
warnings.simplefilter("ignore")
name, mode = sys.argv[1], sys.argv[2]
data = np.load(f"{sys.argv[3]}/{name}.npz")
inputs = [data[f"inputs.{i}"] for i in range(sum(k.startswith("inputs.") for k in data.files))]
start = time.perf_counter()
model = jaxonnx.load(f"{sys.argv[3]}/{name}.onnx")
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


def _measure(name: str, mode: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, name, mode, FIXTURES], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    rows = []
    for name in MODELS:
        now, before = _measure(name, "auto"), _measure(name, "op-by-op")
        rows.append(
            f"| {name} | {now['load']:.2f} | {before['first']:.2f} / {1e3 * before['steady']:.1f} | "
            f"{now['first']:.2f} / {1e3 * now['steady']:.1f} | {now['mode']} |"
        )
        print(rows[-1], flush=True)
    text = "\n".join(
        [
            "# First eager call (written by benchmarks/first_call.py)",
            "",
            f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; each cell from a fresh process.",
            "",
            "| fixture | load s | op by op: first s / then ms | now: first s / then ms | how it runs now |",
            "|---|---|---|---|---|",
            *rows,
            "",
        ]
    )
    with open(os.path.join(HERE, "first_call_results.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
