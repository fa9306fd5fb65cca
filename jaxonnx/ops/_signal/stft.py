"""STFT: version 17."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.fourier import as_complex, as_pairs, full_spectrum, static_int


@register("STFT", 17, static=("frame_step", "frame_length"))
def stft(signal, frame_step, window=None, frame_length=None, *, onesided: int = 1):
    """Implements ONNX STFT: the DFT of every windowed frame of a signal.

    Frame ``f`` is ``signal[:, f * frame_step : f * frame_step + frame_length]`` times
    ``window``; there are ``(signal_length - frame_length) // frame_step + 1`` frames. With
    ``onesided=1`` only the first ``frame_length // 2 + 1`` bins are returned; for a complex
    signal they do not determine the others, and they are the first bins of its full DFT,
    as onnxruntime and onnx.reference return them. Half-precision inputs are windowed and
    transformed in float32. Gradients in ``signal`` and ``window`` are exact.

    A real signal may also come as ``[batch, signal_length]``, without its trailing 1: the
    operator text asks for 3 dims, but onnxruntime reads a 2-D signal as real, and
    ``torch.stft`` through torch's TorchScript exporter writes one.

    Args:
        signal: a float array ``[batch, signal_length, 1]`` or ``[batch, signal_length]``
            (real), or ``[batch, signal_length, 2]`` (complex).
        frame_step: static scalar int >= 1, the hop between frames.
        window: a 1-D float array of the dtype of ``signal``, ``frame_length`` long;
            defaults to ones.
        frame_length: static scalar int >= 1, the length of a frame and of its DFT;
            defaults to the length of ``window``, else to ``signal_length``.
        onesided: 1 for the non-redundant bins only.

    Returns:
        ``[batch, frames, bins, 2]``, the dtype of ``signal``: ``bins`` is
        ``frame_length // 2 + 1`` with ``onesided=1``, else ``frame_length``.

    Example:
        >>> jaxonnx.ops.stft(jnp.array([[[1.0], [2.0], [3.0], [4.0]]]), np.array(2), frame_length=np.array(2))
        Array([[[[ 3.,  0.],
                 [-1.,  0.]],
        <BLANKLINE>
                [[ 7.,  0.],
                 [-1.,  0.]]]], dtype=float32)
    """
    if onesided not in (0, 1):
        raise OnnxValidationError(f"needs `onesided` of 0 or 1, got {onesided}.")
    if signal.ndim == 2:  # a real signal without its trailing 1, as onnxruntime accepts it
        signal = signal[:, :, None]
    if signal.ndim != 3 or signal.shape[-1] not in (1, 2):
        raise OnnxValidationError(
            f"needs `signal` of shape [batch, signal_length, 1 or 2] (or [batch, signal_length] for a real "
            f"signal), got shape {tuple(signal.shape)}."
        )
    step = static_int(frame_step, name="frame_step")
    if step < 1:
        raise OnnxValidationError(f"needs `frame_step` >= 1, got {step}.")
    signal_length = signal.shape[1]
    if window is not None and window.ndim != 1:
        raise OnnxValidationError(f"needs a 1-D `window`, got shape {tuple(window.shape)}.")
    if frame_length is not None:
        length = static_int(frame_length, name="frame_length")
        if window is not None and window.shape[0] != length:
            raise OnnxValidationError(f"needs a `window` of `frame_length`={length} values, got {window.shape[0]}.")
    else:
        length = signal_length if window is None else window.shape[0]
    if not 1 <= length <= signal_length:
        raise OnnxValidationError(
            f"needs a frame length (`frame_length` or the length of `window`) in [1, {signal_length}] "
            f"for a signal of length {signal_length}, got {length}."
        )
    frames = (signal_length - length) // step + 1
    starts = np.arange(frames) * step
    framed = signal[:, starts[:, None] + np.arange(length)[None, :]]  # [batch, frames, length, parts]
    if np.dtype(signal.dtype).itemsize < 4:  # half precision is windowed and transformed in float32
        framed = framed.astype(np.float32)
        window = None if window is None else window.astype(np.float32)
    if window is not None:
        framed = framed * window.reshape(1, 1, length, 1)
    values, real = as_complex(framed, name="signal")
    fft = namespace(framed).fft
    if real:  # the RFFT keeps the bins that are real (DC, Nyquist) exactly real
        half = fft.rfft(values, n=length, axis=2)
        return as_pairs(half if onesided else full_spectrum(half, length, 2), signal.dtype)
    spectrum = fft.fft(values, n=length, axis=2)
    return as_pairs(spectrum[:, :, : length // 2 + 1] if onesided else spectrum, signal.dtype)


__all__ = ["stft"]
