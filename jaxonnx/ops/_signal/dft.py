"""DFT: versions 17 (`axis` an attribute, default 1) and 20 (`axis` an input, default -2)."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.fourier import as_complex, as_pairs, full_spectrum, static_int


@register("DFT", 20, static=("dft_length", "axis"))
def dft(input, dft_length=None, axis=None, *, inverse: int = 0, onesided: int = 0):
    """Implements ONNX DFT: the discrete Fourier transform along one axis, or its inverse.

    ``input`` holds real values (a trailing dimension of 1) or complex ones (a trailing
    dimension of 2: real and imaginary parts). The signal on ``axis`` is first zero-padded or
    truncated to ``dft_length``. With ``onesided=1`` the forward transform of a real signal
    returns the ``dft_length // 2 + 1`` bins that the conjugate symmetry does not repeat
    (RFFT), and the inverse transform reads such one-sided complex bins (the first
    ``dft_length // 2 + 1`` of them, zero-padded as needed, as ``numpy.fft.irfft``) and
    returns the real signal of length ``dft_length`` (IRFFT). The inverse is scaled by
    ``1 / dft_length``. Half-precision inputs are transformed in float32. Gradients are
    exact (``jax.numpy.fft``'s transposes).

    Args:
        input: a float array ``[..., 1]`` or ``[..., 2]`` of rank >= 2.
        dft_length: static scalar int, >= 1; defaults to the length of ``axis``, or for the
            IRFFT to ``2 * (length - 1)``.
        axis: static scalar int in ``[-r, -2]`` or ``[0, r - 2]`` (``r`` the rank of
            ``input``: the last axis holds the parts); defaults to -2.
        inverse: 1 for the inverse transform.
        onesided: 1 for the RFFT (real input) or the IRFFT (complex input).

    Returns:
        ``[..., 2]`` complex values of the dtype of ``input``, ``dft_length`` (or for the
        RFFT ``dft_length // 2 + 1``) long on ``axis``; for the IRFFT ``[..., 1]`` real values
        ``dft_length`` long.

    Example:
        >>> jaxonnx.ops.dft(jnp.array([[1.0], [2.0], [0.0], [1.0]]), axis=np.array(0), onesided=1)
        Array([[ 4.,  0.],
               [ 1., -1.],
               [-2.,  0.]], dtype=float32)
    """
    axis = -2 if axis is None else static_int(axis, name="axis")
    if inverse not in (0, 1) or onesided not in (0, 1):
        raise OnnxValidationError(f"needs `inverse` and `onesided` of 0 or 1, got {inverse} and {onesided}.")
    signal, real = as_complex(input, name="input")
    rank = input.ndim
    if not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
        raise OnnxValidationError(
            f"got `axis`={axis} for an input of rank {rank}; it must be in [{-rank}, -2] or [0, {rank - 2}] "
            "(the last axis holds the real and imaginary parts)."
        )
    axis = axis % rank
    irfft = bool(inverse and onesided)
    if irfft and real:
        raise OnnxValidationError(
            f"with `inverse`=1 and `onesided`=1 (IRFFT) needs complex `input` (a last dimension of 2), "
            f"got shape {tuple(input.shape)}."
        )
    if onesided and not inverse and not real:
        raise OnnxValidationError(
            f"with `onesided`=1 (RFFT) needs real `input` (a last dimension of 1), got shape {tuple(input.shape)}."
        )
    if dft_length is None:
        length = 2 * (input.shape[axis] - 1) if irfft else input.shape[axis]
        what = "the default `dft_length`"
    else:
        length = static_int(dft_length, name="dft_length")
        what = "`dft_length`"
    if length < 1:
        raise OnnxValidationError(
            f"needs {what} >= 1, got {length} for `input` of shape {tuple(input.shape)} and `axis`={axis}."
        )
    xp = namespace(input)
    if irfft:
        return xp.fft.irfft(signal, n=length, axis=axis)[..., None].astype(input.dtype)
    if not real:
        transform = xp.fft.ifft if inverse else xp.fft.fft
        return as_pairs(transform(signal, n=length, axis=axis), input.dtype)
    # A real signal goes through the RFFT, so that the bins that are real (DC, Nyquist) are
    # exactly real; its inverse DFT is the conjugate of its DFT over `length`.
    half = xp.fft.rfft(signal, n=length, axis=axis)
    if onesided:
        return as_pairs(half, input.dtype)
    spectrum = full_spectrum(half, length, axis)
    return as_pairs(xp.conj(spectrum) / length if inverse else spectrum, input.dtype)


@register("DFT", 17, static=("dft_length",))
def _dft_17(input, dft_length=None, *, axis: int = 1, inverse: int = 0, onesided: int = 0):
    return dft(input, dft_length, np.asarray(axis), inverse=inverse, onesided=onesided)


__all__ = ["dft"]
