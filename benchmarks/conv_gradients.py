"""A CNN's gradient under jax.jit: its program's size, compile time and step time (not a test).

    python benchmarks/conv_gradients.py        # writes benchmarks/conv_gradients_results.md

On CPU, depthwise, narrow grouped and stem convolutions run as sums of shifted
multiply-adds (``jaxonnx/ops/_helpers/conv_cpu.py``). Differentiated as written, each
weight's gradient is one reduction, and XLA fused the sum (and what follows it up to the
cotangent) into every one of them. The sums now carry custom JVPs whose value and weights'
tangent are contractions. This measures, for the fine-tuning loss of each exported fixture
(``jax.value_and_grad`` of the mean square of its outputs with respect to its params),
the program's HLO instructions, tracing and lowering, compilation, and the median step
time: once as jaxonnx runs it, once with plain autodiff through the sums (the behaviour
before, forced for the comparison by calling the sums' undecorated functions). Each cell
comes from a fresh process, with XLA's default flags.
"""

from __future__ import annotations

import os

from _results import run_child, write_table

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "tests", "fixtures", "models")
MODELS = (
    "cnn_torchscript_static",
    "cnn_dynamo_static",
    "mobilenet_v3_small_torchscript_static",
    "mobilenet_v3_small_dynamo_static",
    "resnet_torchscript_static",
)

_CHILD = r"""
import json, statistics, sys, time, warnings
import numpy as np, jax, jax.numpy as jnp, jaxonnx
from jaxonnx.ops._helpers import conv_cpu
warnings.simplefilter("ignore")
path, mode, feed = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "plain autodiff":  # the sums differentiated as written: the behaviour before
    conv_cpu._stem_sum, conv_cpu._grouped_sum = conv_cpu._stem_sum.fun, conv_cpu._grouped_sum.fun
data = np.load(feed)
inputs = [data[f"inputs.{i}"] for i in range(sum(k.startswith("inputs.") for k in data.files))]
model = jaxonnx.load(path)

def loss(params):
    return sum(jnp.mean(y.astype(jnp.float32) ** 2) for y in model.apply(params, *inputs)
               if jnp.issubdtype(y.dtype, jnp.floating))

step = jax.jit(jax.value_and_grad(loss))
start = time.perf_counter()
lowered = step.lower(model.params)
lowering = time.perf_counter() - start
start = time.perf_counter()
compiled = lowered.compile()
compiling = time.perf_counter() - start
instructions = compiled.as_text().count(" = ")
jax.block_until_ready(compiled(model.params))
times = []
for _ in range(30):
    start = time.perf_counter()
    jax.block_until_ready(compiled(model.params))
    times.append(time.perf_counter() - start)
print(json.dumps({"lowering": lowering, "compiling": compiling, "instructions": instructions,
                  "step": statistics.median(times)}))
"""


def _measure(path: str, mode: str, feed: str) -> dict:
    environment = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}  # XLA's defaults
    return run_child(_CHILD, path, mode, feed, env=environment)


def _cell(result: dict) -> str:
    return (
        f"{result['instructions']:,} | {result['lowering']:.2f} | {result['compiling']:.2f} | "
        f"{1e3 * result['step']:.2f}"
    )


def main() -> None:
    rows = []
    for name in MODELS:
        path, feed = os.path.join(FIXTURES, f"{name}.onnx"), os.path.join(FIXTURES, f"{name}.npz")
        before, now = _measure(path, "plain autodiff", feed), _measure(path, "custom JVPs", feed)
        rows.append(f"| {name} | {_cell(before)} | {_cell(now)} |")
        print(rows[-1], flush=True)
    write_table(
        "conv_gradients_results.md",
        "A CNN's gradient under jax.jit (written by benchmarks/conv_gradients.py)",
        "XLA's default flags; each cell from a fresh process. `jax.value_and_grad` of the mean "
        "square of the outputs with respect to `model.params`, before (plain autodiff through the "
        "sums) and now (their custom JVPs): HLO instructions of the compiled program, seconds to "
        "trace and lower, seconds to compile, median milliseconds a step (30 steps).",
        ["fixture", "before: instructions", "lower s", "compile s", "step ms"]
        + ["now: instructions", "lower s", "compile s", "step ms"],
        rows,
    )


if __name__ == "__main__":
    main()
