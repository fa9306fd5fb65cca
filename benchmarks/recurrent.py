"""An LSTM the size of a speech detector on CPU: jaxonnx under jax.jit against onnxruntime.

    python benchmarks/recurrent.py      # writes benchmarks/recurrent_results.md

Hidden size 128, 512 steps, batch 1, input size 64: one LSTM node, the same model file for
both runtimes, inputs already on the device, interleaved blocks. Each call is timed by the
wall clock and by the process's CPU time: on a machine shared with other work the wall
clock's median mostly measures the waiting, so the table gives its 10th percentile and the
median CPU time too (onnxruntime both with its default threads and with one thread; jaxonnx
computes this model on one).
"""

from __future__ import annotations

import os
import time

import jax
import numpy as np
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper

import jaxonnx

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS, BATCH, INPUT, HIDDEN = 512, 1, 64, 128
BLOCKS = 10

#: What changed the numbers, measured with this script on the 2-core machine while other jobs
#: ran (load average 5-7): the wall medians of jaxonnx are the quiet ones to compare.
HISTORY = """## Before and after

- Before (b269864^): jaxonnx 3.9-4.2 ms wall median (p10 3.6-3.7, CPU 3.9-4.0), onnxruntime with 1
  thread 7.0-9.3 ms wall median (p10 2.9, CPU 3.0); an earlier quieter run: 2.9 ms against 1.6 ms.
- After (b269864): jaxonnx 2.7-2.8 ms wall median (p10 2.4-2.6, CPU 2.8), onnxruntime with 1
  thread 7.0-8.8 ms (p10 2.9, CPU 3.0), the two versions run alternately, twice each.

Where a step's time went, from XLA's dumps (`XLA_FLAGS=--xla_dump_to=...`) and loops timed
apart: the fusion that updated `c` also computed the sigmoids of the i and f gates and the tanh
of the cell gate, and LLVM compiled it to a scalar loop (`<1 x float>`), while the other fusions
are 8-wide. Computing `f` of the i, o and f gates as one array, apart from the update, keeps
every fusion vectorized: 1.4x faster. What is left, from loops timed apart (wall p10): the
while loop's own cost, about 0.75 ms (what a loop that only adds its input takes; the LSTM's
step is eight small kernels, each launched by XLA:CPU's thunk runtime); the 128x512 matrix-vector
product, about 1.7 ms (XLA's tiled gemv does a multiply and an add per element where
onnxruntime's MLAS does one FMA; the loop with the product alone takes 2.4-2.7 ms); the
activations, the rest. `unroll` (2, 4, 8) was slower or equal; computing the
sigmoid as `0.5 * tanh(0.5 x) + 0.5`, a product written as R @ h or as the vector h @ R^T (no faster), and
the XLA flags `--xla_cpu_multi_thread_eigen=false`, `--xla_cpu_use_thunk_runtime=false` and
`--xla_cpu_use_xnnpack=true` changed nothing measurable; a broadcast multiply and sum in place
of the product was 30x slower.
"""


def _model():
    rng = np.random.default_rng(0)
    weights = {
        "W": rng.standard_normal((1, 4 * HIDDEN, INPUT)) * 0.1,
        "R": rng.standard_normal((1, 4 * HIDDEN, HIDDEN)) * 0.1,
        "B": rng.standard_normal((1, 8 * HIDDEN)) * 0.1,
    }
    node = helper.make_node("LSTM", ["X", "W", "R", "B"], ["Y", "Y_h", "Y_c"], hidden_size=HIDDEN)
    graph = helper.make_graph(
        [node],
        "lstm",
        [helper.make_tensor_value_info("X", T.FLOAT, [STEPS, BATCH, INPUT])],
        [helper.make_tensor_value_info(n, T.FLOAT, None) for n in ("Y", "Y_h", "Y_c")],
        initializer=[helper.make_tensor(k, T.FLOAT, v.shape, v.astype(np.float32).ravel()) for k, v in weights.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def _time(fn, wall, cpu, repeat=30):
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start)


def main():
    proto = _model()
    x = np.random.default_rng(1).standard_normal((STEPS, BATCH, INPUT)).astype(np.float32)
    one_thread = ort.SessionOptions()
    one_thread.intra_op_num_threads = 1
    sessions = {
        "onnxruntime": ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]),
        "onnxruntime, 1 thread": ort.InferenceSession(
            proto.SerializeToString(), one_thread, providers=["CPUExecutionProvider"]
        ),
    }
    model = jax.jit(jaxonnx.load(proto))
    device_x = jax.device_put(x)
    expected = sessions["onnxruntime"].run(None, {"X": x})
    got = jax.block_until_ready(model(device_x))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-5, atol=1e-6)
    runs = {"jaxonnx (jax.jit)": lambda: jax.block_until_ready(model(device_x))}
    runs.update({name: (lambda s=s: s.run(None, {"X": x})) for name, s in sessions.items()})
    wall = {name: [] for name in runs}
    cpu = {name: [] for name in runs}
    for _ in range(BLOCKS):  # interleaved blocks
        for name, fn in runs.items():
            _time(fn, wall[name], cpu[name])
    rows = "".join(
        f"| {name} | {1e3 * np.median(wall[name]):.3f} | {1e3 * np.percentile(wall[name], 10):.3f} | "
        f"{1e3 * np.median(cpu[name]):.3f} |\n"
        for name in runs
    )
    ours = np.median(cpu["jaxonnx (jax.jit)"])
    text = (
        f"# LSTM, hidden {HIDDEN}, {STEPS} steps, batch {BATCH}, input {INPUT} (benchmarks/recurrent.py)\n\n"
        f"| runtime | wall median ms | wall p10 ms | CPU time median ms |\n|---|---|---|---|\n{rows}\n"
        f"CPU time ratio onnxruntime (1 thread) / jaxonnx: {np.median(cpu['onnxruntime, 1 thread']) / ours:.2f}; "
        f"wall p10 ratio: {np.percentile(wall['onnxruntime, 1 thread'], 10) / np.percentile(wall['jaxonnx (jax.jit)'], 10):.2f}; "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end\n\n{HISTORY}"
    )
    print(text)
    with open(os.path.join(HERE, "recurrent_results.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
