"""Examples of the signal ops: DFT, STFT, MelWeightMatrix, HannWindow, HammingWindow and
BlackmanWindow.

The window ops and MelWeightMatrix take static inputs only (no gradient or vmap to check);
tests/test_signal_ops.py compares them and the transforms with onnxruntime and numpy.fft.
Not here, with the reason: the RFFT of a complex input (onnx.reference slices the full
spectrum; the text and onnxruntime refuse it).
"""

import numpy as np

from tests.op_examples._example import Example

_rng = np.random.default_rng(31)


def _normal(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def _symmetric_float16(window):
    # onnx.reference computes a float16 window in float16 (np.arange(size, dtype=float16)),
    # off by up to 6e-4; the text's formula in float64, rounded once to float16.
    return lambda size, **_: [np.asarray(window(int(size)), np.float64).astype(np.float16)]


EXAMPLES = {
    "DFT": [
        # Axis 1 at rank 3 is both versions' default (17: 1, 20: -2).
        Example([_normal(2, 5, 1)]),
        # An inverse of a complex signal, zero-padded from 4 to 6 on the default axis.
        Example([_normal(3, 4, 2), np.array(6)], {"inverse": 1}),
        # The RFFT of a real signal truncated from 4 to 3 on axis 0.
        Example([_normal(4, 3, 1), np.array(3), np.array(0)], {"onesided": 1}),
        # The IRFFT: 3 one-sided bins to 5 real values (an odd length: no Nyquist bin).
        Example([_normal(2, 3, 2), np.array(5), np.array(-2)], {"inverse": 1, "onesided": 1}),
        # Version 17's axis attribute, and the IRFFT's default length 2 * (3 - 1).
        Example([_normal(2, 4, 3, 2)], {"axis": 2, "inverse": 1, "onesided": 1}),
        Example([_normal(2, 3, 4, 2), np.array(3, np.int32)], {"axis": -3}),
    ],
    "STFT": [
        Example([_normal(2, 12, 1), np.array(3), _normal(4)]),
        Example([_normal(1, 10, 2), np.array(4), None, np.array(5)], {"onesided": 0}),
        # A complex signal with the default onesided=1: the first bins of its full spectrum.
        Example([_normal(1, 9, 2), np.array(2), _normal(4), np.array(4)]),
        Example([_normal(2, 7, 1), np.array(2, np.int32), None, np.array(6, np.int32)], {"onesided": 0}),
    ],
    "MelWeightMatrix": [
        Example([np.array(8), np.array(16), np.array(8192), np.float32(0), np.float32(4096)]),
        Example(
            [np.array(5), np.array(64), np.array(16000), np.float64(100), np.float64(7000)], {"output_datatype": 11}
        ),
        Example(
            [np.array(3, np.int32), np.array(20, np.int32), np.array(100, np.int32), np.float32(5), np.float32(40)],
            {"output_datatype": 10},
        ),
    ],
    **{
        op_type: [
            Example([np.array(10)]),
            Example([np.array(7, np.int32)], {"periodic": 0}),
            Example([np.array(6)], {"output_datatype": 11}),
            Example([np.array(9)], {"periodic": 0, "output_datatype": 10}, reference=_symmetric_float16(window)),
            Example([np.array(8)], {"output_datatype": 16}),
            Example([np.array(5)], {"output_datatype": 6}),
            Example([np.array(0)]),
        ]
        for op_type, window in (
            ("HannWindow", np.hanning),
            ("HammingWindow", lambda size: 25 / 46 - 21 / 46 * np.cos(2 * np.pi * np.arange(size) / (size - 1))),
            ("BlackmanWindow", np.blackman),
        )
    },
}
