"""HannWindow, HammingWindow and BlackmanWindow: version 17."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.fourier import cast_real, output_dtype, static_int


def _cosine_window(op_type: str, size, periodic: int, output_datatype: int, coefficients) -> np.ndarray:
    """``sum_k (-1)^k a_k cos(2 pi k n / N)`` for ``n`` in ``[0, size)``, in float64, cast.

    ``N`` is ``size`` for a periodic window and ``size - 1`` for a symmetric one; a
    symmetric window of size 1 divides 0 by 0 and is nan, as onnx's function bodies and
    onnxruntime compute it.
    """
    length = static_int(size, name="size")
    if length < 0:
        raise OnnxValidationError(f"needs `size` >= 0, got {length}.")
    if periodic not in (0, 1):
        raise OnnxValidationError(f"needs `periodic` of 0 or 1, got {periodic}.")
    dtype = output_dtype(op_type, output_datatype)
    period = length if periodic else length - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        angle = 2 * np.pi * np.arange(length, dtype=np.float64) / period
    # The cosine terms summed first: at n = 0 they cancel the constant exactly (0, not 1e-17).
    first, *others = coefficients
    values = first + sum((-1) ** k * a * np.cos(k * angle) for k, a in enumerate(others, start=1))
    return cast_real(np.asarray(values, np.float64).reshape(length), dtype)


@register("HannWindow", 17, static=("size",))
def hann_window(size, *, periodic: int = 1, output_datatype: int = 1):
    """Implements ONNX HannWindow: ``0.5 - 0.5 cos(2 pi n / N)`` for ``n`` in ``[0, size)``.

    ``N`` is ``size`` (``periodic=1``, for spectral analysis) or ``size - 1`` (symmetric).
    Computed in float64 and cast to ``output_datatype`` (integer types truncate, as Cast
    does); the result is numpy, a constant known at trace time.

    Args:
        size: static scalar int >= 0, the window length.
        periodic: 1 for the periodic window, 0 for the symmetric one.
        output_datatype: an ONNX ``TensorProto.DataType`` code (default 1, float).

    Returns:
        A numpy array of shape ``[size]``.

    Example:
        >>> jaxonnx.ops.hann_window(np.array(4))
        array([0. , 0.5, 1. , 0.5], dtype=float32)
    """
    return _cosine_window("HannWindow", size, periodic, output_datatype, (0.5, 0.5))


@register("HammingWindow", 17, static=("size",))
def hamming_window(size, *, periodic: int = 1, output_datatype: int = 1):
    """Implements ONNX HammingWindow: ``25/46 - 21/46 cos(2 pi n / N)`` for ``n`` in ``[0, size)``.

    The coefficients are onnx's (its function body and onnxruntime), not the rounded 0.54
    and 0.46. ``N`` is ``size`` (``periodic=1``) or ``size - 1`` (symmetric). Computed in
    float64 and cast to ``output_datatype``; the result is numpy.

    Args:
        size: static scalar int >= 0, the window length.
        periodic: 1 for the periodic window, 0 for the symmetric one.
        output_datatype: an ONNX ``TensorProto.DataType`` code (default 1, float).

    Returns:
        A numpy array of shape ``[size]``.

    Example:
        >>> jaxonnx.ops.hamming_window(np.array(3), periodic=0, output_datatype=11)
        array([0.08695652, 1.        , 0.08695652])
    """
    return _cosine_window("HammingWindow", size, periodic, output_datatype, (25 / 46, 21 / 46))


@register("BlackmanWindow", 17, static=("size",))
def blackman_window(size, *, periodic: int = 1, output_datatype: int = 1):
    """Implements ONNX BlackmanWindow: ``0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)``.

    For ``n`` in ``[0, size)``; ``N`` is ``size`` (``periodic=1``) or ``size - 1``
    (symmetric). Computed in float64 and cast to ``output_datatype``; the result is numpy.

    Args:
        size: static scalar int >= 0, the window length.
        periodic: 1 for the periodic window, 0 for the symmetric one.
        output_datatype: an ONNX ``TensorProto.DataType`` code (default 1, float).

    Returns:
        A numpy array of shape ``[size]``.

    Example:
        >>> jaxonnx.ops.blackman_window(np.array(4))
        array([0.  , 0.34, 1.  , 0.34], dtype=float32)
    """
    return _cosine_window("BlackmanWindow", size, periodic, output_datatype, (0.42, 0.5, 0.08))


__all__ = ["blackman_window", "hamming_window", "hann_window"]
