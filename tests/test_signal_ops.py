"""The signal ops (DFT, STFT, MelWeightMatrix, the windows) against onnxruntime and
numpy.fft on shapes, axes and lengths beyond onnx's node cases: round trips, padding and
truncation, gradients, jit, half precision, a mel spectrogram model, and the errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads
from onnx import TensorProto, helper

import jaxonnx
from jaxonnx import OnnxTypeError, OnnxValidationError, StaticValueError

_rng = np.random.default_rng(41)


def _normal(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _model(op_type, inputs, opset, **attributes):
    """One node whose inputs are graph inputs (None: an omitted optional input)."""
    names = [f"in{i}" if x is not None else "" for i, x in enumerate(inputs)]
    node = helper.make_node(op_type, names, ["out"], **attributes)
    graph = helper.make_graph(
        [node],
        "signal",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
            for n, x in zip(names, inputs)
            if n
        ],
        [helper.make_empty_tensor_value_info("out")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), {
        n: x for n, x in zip(names, inputs) if n
    }


def _complex(x):
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0].astype(np.complex128)


def _pairs(z):
    return np.stack([z.real, z.imag], axis=-1)


def _numpy_dft(x, length, axis, inverse, onesided):
    """The text's transforms in float64 with numpy.fft (`axis` non-negative)."""
    signal = _complex(x.astype(np.float64))
    if inverse and onesided:
        return np.fft.irfft(signal, n=length, axis=axis)[..., None]
    spectrum = (np.fft.ifft if inverse else np.fft.fft)(signal, n=length, axis=axis)
    if onesided:
        spectrum = np.take(spectrum, np.arange(length // 2 + 1), axis=axis)
    return _pairs(spectrum)


_DFT_CASES = [
    # shape, axis, dft_length (None: the default), inverse, onesided
    ((3, 5, 1), 1, None, 0, 0),
    ((2, 6, 4, 1), 2, 8, 0, 0),  # zero-padded
    ((2, 6, 4, 2), 1, 4, 0, 0),  # truncated, complex
    ((2, 7, 1), -2, 7, 0, 1),  # RFFT of odd length
    ((4, 3, 2, 1), 0, 6, 0, 1),  # RFFT, padded, on the first axis
    ((3, 5, 2), 1, None, 1, 0),
    ((3, 5, 1), -2, 3, 1, 0),  # inverse of a real signal, truncated
    ((2, 4, 3, 2), 1, None, 1, 1),  # IRFFT, default length 2 * (4 - 1)
    ((2, 4, 2), 1, 7, 1, 1),  # IRFFT of odd length from its 4 bins
]


@pytest.mark.parametrize("shape, axis, length, inverse, onesided", _DFT_CASES)
def test_dft_matches_onnxruntime_and_numpy_fft(run_onnxruntime, shape, axis, length, inverse, onesided):
    x = _normal(*shape)
    dft_length = None if length is None else np.array(length, np.int64)
    model, feed = _model("DFT", [x, dft_length, np.array(axis, np.int64)], 20, inverse=inverse, onesided=onesided)
    expected = run_onnxruntime(model, feed)[0]
    n = length if length is not None else (2 * (shape[axis] - 1) if inverse and onesided else shape[axis])
    exact = _numpy_dft(x, n, axis % len(shape), inverse, onesided)
    # numpy folds with numpy.fft; under jit, jax.numpy.fft. Version 17 takes `axis` as an attribute.
    folded = jaxonnx.ops.dft(x, dft_length, np.array(axis), inverse=inverse, onesided=onesided)
    traced = jax.jit(
        lambda v: (
            jaxonnx.ops.dft(v, dft_length, np.array(axis), inverse=inverse, onesided=onesided),
            jaxonnx.get_op("DFT", 17)(v, dft_length, axis=axis, inverse=inverse, onesided=onesided),
        )
    )(x)
    for got in (folded, *traced):
        got = np.asarray(got)
        assert got.dtype == np.float32 and got.shape == expected.shape == exact.shape
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got, exact, rtol=1e-5, atol=2e-6)


def test_irfft_reads_the_first_length_over_2_plus_1_bins_as_numpy():
    # The text: the IRFFT returns dft_length real values; its one-sided input holds
    # dft_length // 2 + 1 bins (truncated or zero-padded), as numpy.fft.irfft reads them.
    # onnxruntime 1.32 agrees for lengths 4, 6, 7 and 9 of 4 bins but not for 1, 2, 3, 5
    # (its values there match no Hermitian reading of the bins), so numpy is the oracle.
    x = _normal(2, 4, 2)
    lengths = (1, 2, 3, 5, 8, 11)
    run = jax.jit(lambda v: [jaxonnx.ops.dft(v, np.array(n), np.array(1), inverse=1, onesided=1) for n in lengths])
    for length, got in zip(lengths, run(x)):
        np.testing.assert_allclose(got[..., 0], np.fft.irfft(_complex(x), n=length, axis=1), rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("length", [8, 9])
def test_round_trips_return_the_signal(length):
    @jax.jit
    def trips(real, signal):
        half = jaxonnx.ops.dft(real, axis=np.array(1), onesided=1)
        # The IRFFT needs dft_length for an odd signal: its default, 2 * (bins - 1), is even.
        back = jaxonnx.ops.dft(half, np.array(length), np.array(1), inverse=1, onesided=1)
        spectrum = jaxonnx.ops.dft(signal, axis=np.array(-3))
        return (
            half,
            back,
            jaxonnx.ops.dft(spectrum, axis=np.array(-3), inverse=1),
            jaxonnx.ops.dft(real, axis=np.array(1)),
        )

    real, signal = _normal(3, length, 1, dtype=np.float64), _normal(2, length, 3, 2, dtype=np.float64)
    half, back, signal_back, full = trips(real, signal)
    assert half.shape == (3, length // 2 + 1, 2)
    np.testing.assert_allclose(back, real, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(signal_back, signal, rtol=1e-12, atol=1e-12)
    # A real signal's full spectrum: its first bins are the one-sided ones; DC is exactly real.
    np.testing.assert_array_equal(full[:, : length // 2 + 1], half)
    assert (full[:, 0, 1] == 0).all()


def test_dft_length_pads_and_truncates_as_numpy_fft():
    x = _normal(2, 6, 1, dtype=np.float64)
    lengths = (2, 6, 10)
    for length, got in zip(
        lengths, jax.jit(lambda v: [jaxonnx.ops.dft(v, np.array(n), np.array(1)) for n in lengths])(x)
    ):
        np.testing.assert_allclose(got, _pairs(np.fft.fft(x[..., 0], n=length, axis=1)), rtol=1e-12, atol=1e-12)
    padded = np.concatenate([x, np.zeros((2, 4, 1))], axis=1)
    np.testing.assert_array_equal(
        jaxonnx.ops.dft(x, np.array(10), np.array(1)), jaxonnx.ops.dft(padded, axis=np.array(1))
    )


def test_jit_equals_eager_and_traced_lengths_are_refused():
    x = _normal(2, 8, 2)
    run = jax.jit(lambda v: jaxonnx.ops.dft(v, np.array(6), np.array(1), inverse=1))
    np.testing.assert_allclose(
        run(x), jaxonnx.ops.dft(jax.device_put(x), np.array(6), np.array(1), inverse=1), rtol=1e-6, atol=1e-6
    )
    with pytest.raises(StaticValueError, match="`dft_length` is traced"):
        jax.jit(lambda v, n: jaxonnx.ops.dft(v, n))(x, np.array(4))
    with pytest.raises(StaticValueError, match="`frame_step` is traced"):
        jax.jit(lambda v, s: jaxonnx.ops.stft(v, s))(_normal(1, 8, 1), np.array(2))


@pytest.mark.parametrize("inverse, onesided, parts", [(0, 0, 1), (0, 1, 1), (1, 0, 2), (1, 1, 2), (0, 0, 2)])
def test_dft_gradients_are_exact(inverse, onesided, parts):
    x = jax.device_put(_normal(2, 5, parts, dtype=np.float64))
    check_grads(
        jax.jit(lambda v: jaxonnx.ops.dft(v, np.array(6), np.array(1), inverse=inverse, onesided=onesided)),
        (x,),
        order=1,
        modes=("rev", "fwd"),
        atol=1e-6,
        rtol=1e-6,
    )


def test_stft_gradients_in_signal_and_window_are_exact():
    signal = jax.device_put(_normal(2, 11, 1, dtype=np.float64))
    complex_signal = jax.device_put(_normal(1, 9, 2, dtype=np.float64))
    window = jax.device_put(_normal(4, dtype=np.float64))
    check_grads(
        jax.jit(lambda s, w: jaxonnx.ops.stft(s, np.array(3), w)),
        (signal, window),
        order=1,
        modes=("rev", "fwd"),
        atol=1e-6,
        rtol=1e-6,
    )
    check_grads(
        jax.jit(lambda s, w: jaxonnx.ops.stft(s, np.array(2), w, onesided=0)),
        (complex_signal, window),
        order=1,
        modes=("rev",),
        atol=1e-6,
        rtol=1e-6,
    )


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16])
def test_half_precision_transforms_in_float32_and_keeps_its_dtype(dtype):
    x = _normal(2, 8, 1).astype(dtype)
    window = jaxonnx.ops.hann_window(np.array(4), output_datatype=16 if dtype == jnp.bfloat16 else 10)
    got, exact, spectrogram = jax.jit(
        lambda v: (
            jaxonnx.ops.dft(v, axis=np.array(1), onesided=1),
            jaxonnx.ops.dft(v.astype(np.float32), axis=np.array(1), onesided=1),
            jaxonnx.ops.stft(v, np.array(2), window),
        )
    )(x)
    assert got.dtype == spectrogram.dtype == dtype
    np.testing.assert_array_equal(got, exact.astype(dtype))


_STFT_CASES = [
    # signal shape, frame_step, window length (None: no window), frame_length, onesided
    ((2, 20, 1), 4, 8, None, 1),
    ((1, 17, 1), 3, None, 6, 0),
    ((2, 16, 2), 5, 7, 7, 0),
    ((2, 16, 2), 2, None, 5, 1),  # complex with the default onesided=1: the first bins
    # One frame of the whole signal: onnxruntime 1.32 does not default `frame_length` to the
    # signal's length (it fails computing a negative output size), so numpy alone is the oracle.
    ((1, 9, 1), 1, None, None, 1),
]


@pytest.mark.parametrize("shape, step, window_length, frame_length, onesided", _STFT_CASES)
def test_stft_matches_onnxruntime_and_framed_numpy_fft(
    run_onnxruntime, shape, step, window_length, frame_length, onesided
):
    signal = _normal(*shape)
    window = None if window_length is None else _normal(window_length)
    inputs = [
        signal,
        np.array(step, np.int64),
        window,
        None if frame_length is None else np.array(frame_length, np.int64),
    ]
    got = jax.jit(lambda s, w: jaxonnx.ops.stft(s, inputs[1], w, inputs[3], onesided=onesided))(signal, window)
    if window is not None or frame_length is not None:
        model, feed = _model("STFT", inputs, 17, onesided=onesided)
        np.testing.assert_allclose(got, run_onnxruntime(model, feed)[0], rtol=1e-4, atol=1e-5)
    length = frame_length or window_length or shape[1]
    frames = [_complex(signal.astype(np.float64))[:, f : f + length] for f in range(0, shape[1] - length + 1, step)]
    spectra = np.fft.fft(np.stack(frames, axis=1) * (1 if window is None else window), axis=2)
    exact = _pairs(spectra[:, :, : length // 2 + 1] if onesided else spectra)
    np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "mels, length, rate, lower, upper, datatype",
    [
        (8, 16, 8192, 0.0, 4096.0, 1),
        (5, 64, 16000, 100.0, 7000.0, 11),
        (40, 400, 16000, 0.0, 8000.0, 1),
        (10, 512, 22050, 20.0, 11000.0, 1),
        (4, 30, 1000, 120.0, 125.0, 1),
    ],
)
def test_mel_weight_matrix_matches_onnxruntime(run_onnxruntime, mels, length, rate, lower, upper, datatype):
    inputs = [
        np.array(mels, np.int64),
        np.array(length, np.int64),
        np.array(rate, np.int64),
        np.float32(lower),
        np.float32(upper),
    ]
    model, feed = _model("MelWeightMatrix", [np.asarray(x) for x in inputs], 17, output_datatype=datatype)
    expected = run_onnxruntime(model, feed)[0]
    got = jaxonnx.ops.mel_weight_matrix(*inputs, output_datatype=datatype)
    assert isinstance(got, np.ndarray) and got.dtype == expected.dtype and got.shape == (length // 2 + 1, mels)
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-6)
    # Every filter peaks at 1 (the text: "all the triangles have a peak value of 1.0").
    np.testing.assert_array_equal(got.max(axis=0), np.ones(mels, got.dtype))


@pytest.mark.parametrize("op_type", ["HannWindow", "HammingWindow", "BlackmanWindow"])
def test_windows_match_onnxruntime(run_onnxruntime, op_type):
    function = jaxonnx.get_op(op_type, 17)
    for size in (1, 2, 7, 16):
        for periodic in (0, 1):
            for datatype in (1, 11, 6):
                model, feed = _model(
                    op_type, [np.array(size, np.int64)], 17, periodic=periodic, output_datatype=datatype
                )
                expected = run_onnxruntime(model, feed)[0]
                got = function(np.array(size), periodic=periodic, output_datatype=datatype)
                assert got.dtype == expected.dtype and got.shape == (size,)
                if datatype == 6 and size == 1 and not periodic:
                    continue  # nan cast to an integer: undefined in both
                # Equal nans: a symmetric window of size 1 divides 0 by 0 in onnx's function body too.
                np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_a_mel_spectrogram_model_runs_under_jit_as_onnxruntime(run_onnxruntime):
    # window and mel matrix are folded constants; the STFT of the graph input is traced.
    nodes = [
        helper.make_node("Constant", [], ["frame"], value=helper.make_tensor("frame", TensorProto.INT64, [], [32])),
        helper.make_node("Constant", [], ["step"], value=helper.make_tensor("step", TensorProto.INT64, [], [8])),
        helper.make_node("Constant", [], ["mels"], value=helper.make_tensor("mels", TensorProto.INT64, [], [6])),
        helper.make_node("Constant", [], ["rate"], value=helper.make_tensor("rate", TensorProto.INT64, [], [8000])),
        helper.make_node("Constant", [], ["low"], value=helper.make_tensor("low", TensorProto.FLOAT, [], [60.0])),
        helper.make_node("Constant", [], ["high"], value=helper.make_tensor("high", TensorProto.FLOAT, [], [3800.0])),
        helper.make_node("HannWindow", ["frame"], ["window"]),
        helper.make_node("STFT", ["signal", "step", "window"], ["spectrum"]),
        helper.make_node("Mul", ["spectrum", "spectrum"], ["squares"]),
        helper.make_node("ReduceSum", ["squares", "last"], ["power"], keepdims=0),
        helper.make_node("MelWeightMatrix", ["mels", "frame", "rate", "low", "high"], ["weights"]),
        helper.make_node("MatMul", ["power", "weights"], ["mel"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mel",
        [helper.make_tensor_value_info("signal", TensorProto.FLOAT, [2, 128, 1])],
        [helper.make_tensor_value_info("mel", TensorProto.FLOAT, None)],
        initializer=[helper.make_tensor("last", TensorProto.INT64, [1], [-1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    signal = _normal(2, 128, 1)
    expected = run_onnxruntime(model, {"signal": signal})[0]
    (got,) = jax.jit(jaxonnx.load(model))(signal)
    assert got.shape == (2, 13, 6)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


_X = np.zeros((2, 4, 1), np.float32)
_C = np.zeros((2, 4, 2), np.float32)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda: jaxonnx.ops.dft(_X, axis=np.array(-1)),
            OnnxValidationError,
            r"DFT-20 got `axis`=-1 for an input of rank 3; it must be in \[-3, -2\] or \[0, 1\]",
        ),
        (
            lambda: jaxonnx.get_op("DFT", 17)(_X, axis=2),
            OnnxValidationError,
            r"DFT-17 got `axis`=2 for an input of rank 3",
        ),
        (
            lambda: jaxonnx.ops.dft(_C, onesided=1),
            OnnxValidationError,
            r"with `onesided`=1 \(RFFT\) needs real `input`",
        ),
        (lambda: jaxonnx.ops.dft(_X, inverse=1, onesided=1), OnnxValidationError, r"\(IRFFT\) needs complex `input`"),
        (lambda: jaxonnx.ops.dft(_X, np.array(0)), OnnxValidationError, r"needs `dft_length` >= 1, got 0"),
        (
            lambda: jaxonnx.ops.dft(np.zeros((2, 1, 2), np.float32), inverse=1, onesided=1),
            OnnxValidationError,
            r"needs the default `dft_length` >= 1, got 0",
        ),
        (
            lambda: jaxonnx.ops.dft(np.zeros((2, 4, 3), np.float32)),
            OnnxValidationError,
            r"last dimension is 1 \(real\) or 2 \(complex\), got shape \(2, 4, 3\)",
        ),
        (
            lambda: jaxonnx.ops.dft(_X, np.array([2, 3])),
            OnnxValidationError,
            r"needs a scalar `dft_length`, got 2 values",
        ),
        (
            lambda: jaxonnx.ops.dft(_X, inverse=2),
            OnnxValidationError,
            r"needs `inverse` and `onesided` of 0 or 1, got 2 and 0",
        ),
        (lambda: jaxonnx.ops.stft(_X, np.array(0)), OnnxValidationError, r"STFT-17 needs `frame_step` >= 1, got 0"),
        (
            lambda: jaxonnx.ops.stft(_X, np.array(1), np.ones(3, np.float32), np.array(2)),
            OnnxValidationError,
            r"needs a `window` of `frame_length`=2 values, got 3",
        ),
        (
            lambda: jaxonnx.ops.stft(_X, np.array(1), None, np.array(5)),
            OnnxValidationError,
            r"needs a frame length \(`frame_length` or the length of `window`\) in \[1, 4\] for a signal of length 4, got 5",
        ),
        (
            lambda: jaxonnx.ops.stft(np.zeros((2, 4, 3), np.float32), np.array(1)),
            OnnxValidationError,
            r"needs `signal` of shape \[batch, signal_length, 1 or 2\] \(or \[batch, signal_length\] for a real signal\), got shape \(2, 4, 3\)",
        ),
        (
            lambda: jaxonnx.ops.stft(_X[0, :, 0], np.array(1)),
            OnnxValidationError,
            r"needs `signal` of shape .* got shape \(4,\)",
        ),
        (
            lambda: jaxonnx.ops.stft(_X, np.array(1), np.ones((2, 2), np.float32)),
            OnnxValidationError,
            r"needs a 1-D `window`, got shape \(2, 2\)",
        ),
        (
            lambda: jaxonnx.ops.mel_weight_matrix(
                np.array(4), np.array(16), np.array(8000), np.float32(0), np.float32(5000)
            ),
            OnnxValidationError,
            r"got `upper_edge_hertz`=5000.0, whose DFT bin .* = 10 lies beyond the 9 bins of `dft_length`=16 at `sample_rate`=8000",
        ),
        (
            lambda: jaxonnx.ops.mel_weight_matrix(
                np.array(4), np.array(16), np.array(8000), np.float32(300), np.float32(200)
            ),
            OnnxValidationError,
            r"needs 0 <= `lower_edge_hertz` <= `upper_edge_hertz`, got 300.0 and 200.0",
        ),
        (
            lambda: jaxonnx.ops.mel_weight_matrix(np.array(4), np.array(16), np.array(0), np.float32(0), np.float32(1)),
            OnnxValidationError,
            r"`sample_rate` >= 1, got 4, 16 and 0",
        ),
        (
            lambda: jaxonnx.ops.hann_window(np.array(-2)),
            OnnxValidationError,
            r"HannWindow-17 needs `size` >= 0, got -2",
        ),
        (
            lambda: jaxonnx.ops.hamming_window(np.array(4), periodic=2),
            OnnxValidationError,
            r"needs `periodic` of 0 or 1, got 2",
        ),
        (
            lambda: jaxonnx.ops.blackman_window(np.array(4), output_datatype=TensorProto.STRING),
            OnnxTypeError,
            r"got `output_datatype`=8; the output may be one of",
        ),
    ],
)
def test_bad_inputs_raise_sentences_naming_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()
