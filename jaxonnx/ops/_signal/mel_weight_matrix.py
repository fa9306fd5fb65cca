"""MelWeightMatrix: version 17."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.fourier import cast_real, output_dtype, static_int


@register(
    "MelWeightMatrix",
    17,
    static=("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"),
)
def mel_weight_matrix(
    num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz, *, output_datatype: int = 1
):
    """Implements ONNX MelWeightMatrix: triangular mel filters over the bins of a one-sided DFT.

    With ``mel(f) = 2595 log10(1 + f / 700)``, the ``num_mel_bins + 2`` band edges are
    ``mel(lower_edge_hertz) + i * step`` for ``i`` in ``[0, num_mel_bins + 2)``, with
    ``step = (mel(upper_edge_hertz) - mel(lower_edge_hertz)) / (num_mel_bins + 2)`` as
    onnxruntime and onnx.reference compute it, each turned back into hertz and into the
    DFT bin ``floor((dft_length + 1) * hertz / sample_rate)``. Filter ``i`` rises linearly
    from 0 at edge ``i`` to 1 at edge ``i + 1`` and falls to 0 at edge ``i + 2`` (a filter
    whose first two edges share a bin is 1 there). Every input is static: the values are
    piecewise constant in the edges, and the result is numpy (a constant known at trace
    time), computed in float64 and cast to ``output_datatype``.

    Args:
        num_mel_bins: static scalar int >= 0, the number of filters.
        dft_length: static scalar int >= 1, the length of the DFT whose
            ``dft_length // 2 + 1`` bins the matrix weighs.
        sample_rate: static scalar int >= 1, in samples per second.
        lower_edge_hertz: static float scalar >= 0, the lower edge of the lowest filter.
        upper_edge_hertz: static float scalar of the dtype of ``lower_edge_hertz``, at least
            ``lower_edge_hertz``, whose bin must lie among the ``dft_length // 2 + 1``.
        output_datatype: an ONNX ``TensorProto.DataType`` code (default 1, float).

    Returns:
        A numpy array ``[dft_length // 2 + 1, num_mel_bins]``.

    Example:
        >>> jaxonnx.ops.mel_weight_matrix(np.array(2), np.array(8), np.array(8000), np.float32(0), np.float32(4000))
        array([[1., 0.],
               [0., 1.],
               [0., 0.],
               [0., 0.],
               [0., 0.]], dtype=float32)
    """
    mels = static_int(num_mel_bins, name="num_mel_bins")
    length = static_int(dft_length, name="dft_length")
    rate = static_int(sample_rate, name="sample_rate")
    if mels < 0 or length < 1 or rate < 1:
        raise OnnxValidationError(
            f"needs `num_mel_bins` >= 0, `dft_length` >= 1 and `sample_rate` >= 1, got {mels}, {length} and {rate}."
        )
    lower, upper = (
        _hertz(v, name) for v, name in ((lower_edge_hertz, "lower_edge_hertz"), (upper_edge_hertz, "upper_edge_hertz"))
    )
    spectrogram_bins = length // 2 + 1
    if not 0 <= lower <= upper:
        raise OnnxValidationError(f"needs 0 <= `lower_edge_hertz` <= `upper_edge_hertz`, got {lower} and {upper}.")
    if np.floor((length + 1) * upper / rate) >= spectrogram_bins:
        raise OnnxValidationError(
            f"got `upper_edge_hertz`={upper}, whose DFT bin floor((dft_length + 1) * hertz / sample_rate) = "
            f"{int(np.floor((length + 1) * upper / rate))} lies beyond the {spectrogram_bins} bins of "
            f"`dft_length`={length} at `sample_rate`={rate}."
        )
    dtype = output_dtype("MelWeightMatrix", output_datatype)
    low_mel, high_mel = (2595 * np.log10(1 + f / 700) for f in (lower, upper))
    edges_mel = low_mel + np.arange(mels + 2) * ((high_mel - low_mel) / (mels + 2))
    edges_hertz = 700 * (10 ** (edges_mel / 2595) - 1)
    edges = np.floor((length + 1) * edges_hertz / rate).astype(np.int64)
    low, center, high = edges[:-2], edges[1:-1], edges[2:]
    bins = np.arange(spectrogram_bins)[:, None]
    rising = np.where(center > low, (bins - low) / np.maximum(center - low, 1), 1.0)
    falling = (high - bins) / np.maximum(high - center, 1)
    in_rising = (bins >= low) & (bins <= center)
    in_falling = (bins >= center) & (bins < high)
    weights = np.where(in_falling, falling, np.where(in_rising, rising, 0.0))
    return cast_real(weights.reshape(spectrogram_bins, mels), dtype)


def _hertz(value, name: str) -> float:
    value = np.asarray(value)
    if value.size != 1:
        raise OnnxValidationError(f"needs a scalar `{name}`, got shape {value.shape}.")
    hertz = float(value.reshape(()).astype(np.float64))
    if not np.isfinite(hertz):
        raise OnnxValidationError(f"needs a finite `{name}`, got {hertz}.")
    return hertz


__all__ = ["mel_weight_matrix"]
