"""``torch.stft`` as torch's two exporters write it (tools/export_signal_fixtures.py): the
TorchScript exporter gives STFT-17 a real signal of shape [batch, length], without the
trailing 1 of the operator text, which onnxruntime accepts; the dynamo exporter unsqueezes it
first. Both run in jaxonnx as in onnxruntime and torch, eager and under jax.jit, with JAX's
64-bit types on and off."""

from __future__ import annotations

import pathlib

import jax
import numpy as np
import onnx
import pytest

import jaxonnx

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "signal"
DATA = np.load(FIXTURES / "stft.npz")


def _stft_signal_rank(proto: onnx.ModelProto) -> int | None:
    """The rank the export declares (or infers) for STFT's signal."""
    inferred = onnx.shape_inference.infer_shapes(proto)
    stft = next(n for n in inferred.graph.node if n.op_type == "STFT")
    for value in [*inferred.graph.value_info, *inferred.graph.input]:
        if value.name == stft.input[0] and value.type.tensor_type.HasField("shape"):
            return len(value.type.tensor_type.shape.dim)
    return None


def test_the_torchscript_export_gives_stft_a_two_dimensional_signal():
    assert _stft_signal_rank(onnx.load(FIXTURES / "stft_torchscript.onnx")) == 2
    assert _stft_signal_rank(onnx.load(FIXTURES / "stft_dynamo.onnx")) == 3


@pytest.mark.parametrize("x64", [True, False], ids=["x64", "x32"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_stft_exports_match_onnxruntime_and_torch(exporter, jit, x64, run_onnxruntime):
    path = FIXTURES / f"stft_{exporter}.onnx"
    signal = DATA["signal"]
    ort_spectrum, ort_log = run_onnxruntime(path.read_bytes(), {"signal": signal})
    np.testing.assert_allclose(ort_spectrum, DATA["spectrum"], rtol=1e-5, atol=1e-5)
    with jax.enable_x64(x64):
        model = jaxonnx.load(path)
        run = jax.jit(model) if jit else model
        spectrum, log_magnitude = run(signal)
    assert spectrum.shape == (2, 59, 9, 2) and spectrum.dtype == np.float32
    for actual, onnxruntime_value, torch_value in (
        (spectrum, ort_spectrum, DATA["spectrum"]),
        (log_magnitude, ort_log, DATA["log_magnitude"]),
    ):
        np.testing.assert_allclose(np.asarray(actual), onnxruntime_value, rtol=1e-4, atol=2e-5)
        np.testing.assert_allclose(np.asarray(actual), torch_value, rtol=1e-4, atol=2e-5)


def test_a_two_dimensional_signal_is_the_real_signal_with_its_trailing_one():
    signal = DATA["signal"][:, :40]
    window = np.hanning(8).astype(np.float32)
    for onesided in (0, 1):
        flat = jaxonnx.ops.stft(signal, np.array(3), window, onesided=onesided)
        explicit = jaxonnx.ops.stft(signal[:, :, None], np.array(3), window, onesided=onesided)
        np.testing.assert_array_equal(np.asarray(flat), np.asarray(explicit))
    # Gradients reach the 2-D signal as they reach the 3-D one.
    grad = jax.grad(lambda s: jaxonnx.ops.stft(s, np.array(3), window).sum())(signal)
    grad_3d = jax.grad(lambda s: jaxonnx.ops.stft(s, np.array(3), window).sum())(signal[:, :, None])
    np.testing.assert_allclose(np.asarray(grad), np.asarray(grad_3d)[:, :, 0], rtol=1e-6)
