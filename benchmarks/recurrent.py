"""An LSTM the size of a speech detector on CPU: jaxonnx under jax.jit against onnxruntime.

    python benchmarks/recurrent.py      # writes benchmarks/recurrent_results.md

Hidden size 128, 512 steps, batch 1, input size 64: one LSTM node, the same model file for
both runtimes, inputs already on the device, medians of interleaved blocks.
"""

from __future__ import annotations

import os
import statistics
import time

import jax
import numpy as np
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper

import jaxonnx

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS, BATCH, INPUT, HIDDEN = 512, 1, 64, 128


def _model():
    rng = np.random.default_rng(0)
    weights = {"W": rng.standard_normal((1, 4 * HIDDEN, INPUT)) * 0.1, "R": rng.standard_normal((1, 4 * HIDDEN, HIDDEN)) * 0.1,
               "B": rng.standard_normal((1, 8 * HIDDEN)) * 0.1}
    node = helper.make_node("LSTM", ["X", "W", "R", "B"], ["Y", "Y_h", "Y_c"], hidden_size=HIDDEN)
    graph = helper.make_graph(
        [node], "lstm", [helper.make_tensor_value_info("X", T.FLOAT, [STEPS, BATCH, INPUT])],
        [helper.make_tensor_value_info(n, T.FLOAT, None) for n in ("Y", "Y_h", "Y_c")],
        initializer=[helper.make_tensor(k, T.FLOAT, v.shape, v.astype(np.float32).ravel()) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def _time(fn, repeat=30):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    proto = _model()
    x = np.random.default_rng(1).standard_normal((STEPS, BATCH, INPUT)).astype(np.float32)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    model = jax.jit(jaxonnx.load(proto))
    device_x = jax.device_put(x)
    expected = session.run(None, {"X": x})
    got = jax.block_until_ready(model(device_x))
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-4, atol=1e-5)
    jx, ox = [], []
    for _ in range(5):  # interleaved blocks
        jx.append(_time(lambda: jax.block_until_ready(model(device_x))))
        ox.append(_time(lambda: session.run(None, {"X": x})))
    j, o = statistics.median(jx), statistics.median(ox)
    text = (f"# LSTM, hidden {HIDDEN}, {STEPS} steps, batch {BATCH}, input {INPUT} (benchmarks/recurrent.py)\n\n"
            f"| runtime | median ms |\n|---|---|\n| jaxonnx (jax.jit) | {1e3 * j:.3f} |\n| onnxruntime | {1e3 * o:.3f} |\n\n"
            f"ratio onnxruntime / jaxonnx: {o / j:.2f}; {os.cpu_count()} cores\n")
    print(text)
    with open(os.path.join(HERE, "recurrent_results.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
