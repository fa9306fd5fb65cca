"""The CPU formulations against the GPU's, on a GPU (skipped where JAX sees none).

Convolutions, pools, Resize and cumulative sums pick their formulation per platform with
``jax.lax.platform_dependent`` at lowering time: sums of shifted slices, Winograd and
channels-last layouts on CPU, XLA's own convolution and ``reduce_window`` elsewhere. The
suite runs on CPU and so checks the CPU branch; these tests run the same jitted model once
on the CPU device and once on the GPU device and compare values and gradients, so the GPU
branch is proven against the CPU one. ``benchmarks/gpu.py`` runs them on the device machine.

Matrix products and convolutions compute in full float32 on both (``precision="highest"``:
an H100 otherwise rounds float32 products to TF32, about 1e-3 relative).
"""

from __future__ import annotations

import os

import jax
import numpy as np
import pytest

import jaxonnx

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "models")


def _gpu():
    try:
        return jax.devices("gpu")[0]
    except RuntimeError:
        return None


pytestmark = pytest.mark.skipif(_gpu() is None, reason="needs a GPU (JAX sees none here)")

# Fixtures whose graphs reach every platform-dependent formulation: stems and 3x3
# convolutions, depthwise and grouped ones, max and average pools, nearest Resize, LSTM.
MODELS = [
    "cnn_torchscript_static",
    "resnet_dynamo_static",
    "mobilenet_v3_small_torchscript_static",
    "vit_dynamo_static",
    "lstm_torchscript_static",
    "gpt2_dynamo_static",
]


def _inputs(name):
    data = np.load(os.path.join(FIXTURES, f"{name}.npz"))
    return [data[f"inputs.{i}"] for i in range(sum(k.startswith("inputs.") for k in data))]


def _loss(model, *inputs):
    return sum(jax.numpy.sum(jax.numpy.square(o.astype(jax.numpy.float32))) for o in model(*inputs))


@pytest.mark.parametrize("name", [m for m in MODELS if os.path.exists(os.path.join(FIXTURES, f"{m}.onnx"))])
def test_gpu_branch_equals_cpu_branch(name):
    model = jaxonnx.load(os.path.join(FIXTURES, f"{name}.onnx"))
    inputs = _inputs(name)
    results = {}
    with jax.default_matmul_precision("highest"):
        for device in (jax.devices("cpu")[0], _gpu()):
            placed_model = jax.device_put(model, device)
            placed = [jax.device_put(x, device) for x in inputs]
            outputs = jax.jit(lambda m, *x: m(*x))(placed_model, *placed)
            grads = jax.jit(jax.grad(_loss))(placed_model, *placed)
            assert {d.platform for o in outputs for d in o.devices()} == {device.platform}
            results[device.platform] = (
                [np.asarray(o) for o in outputs],
                [np.asarray(v) for v in jax.tree.leaves(grads)],
            )
    (cpu_out, cpu_grads), (gpu_out, gpu_grads) = results["cpu"], results["gpu"]
    for c, g in zip(cpu_out, gpu_out):
        np.testing.assert_allclose(g, c, rtol=2e-4, atol=2e-5 * max(1.0, float(np.abs(c).max())))
    assert len(cpu_grads) == len(gpu_grads) > 0
    for index, (c, g) in enumerate(zip(cpu_grads, gpu_grads)):
        scale = max(1.0, float(np.abs(c).max()))
        np.testing.assert_allclose(g, c, rtol=2e-3, atol=2e-4 * scale, err_msg=f"gradient of param {index}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_attention_takes_the_fused_path_and_equals_the_float32_one(dtype):
    """Half-precision attention on a GPU takes jax's fused formulation (cuDNN where it takes
    the shapes), which XLA:CPU cannot compile and the platform switch therefore cannot reach
    on a CPU: its values against the explicit float32 formulation on the CPU."""
    from jaxonnx.ops._helpers.attention import grouped_attention

    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 8, 16, 64)).astype(np.float32) for _ in range(3))
    k, v = k[:, :2], v[:, :2]  # grouped: 8 query heads over 2 key-value heads
    allowed = np.tril(np.ones((16, 16), bool))[None, None]
    scale = 64**-0.5

    def attend(q, k, v):
        return grouped_attention(q, k, v, scale=scale, allowed=allowed)

    want = jax.jit(attend)(*(jax.device_put(x, jax.devices("cpu")[0]) for x in (q, k, v)))
    half = [jax.device_put(x.astype(dtype), _gpu()) for x in (q, k, v)]
    got = jax.jit(attend)(*half)
    assert got.dtype == np.dtype(dtype) and {d.platform for d in got.devices()} == {"gpu"}
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want), atol=3e-2 if dtype == "float16" else 6e-2)
