"""Examples of onnxruntime's smaller com.microsoft ops that its CPU provider runs and its own
test models use: ExpandDims, CDist, Inverse, TransposeMatMul, Pad, Range, Trilu and GatherND.

onnx.reference has none of them, so each example carries a numpy oracle written from the text
of onnxruntime's ``docs/ContribOperators.md``, in float64. tests/test_ort_testdata.py checks
the same ops against onnxruntime itself.
"""

import numpy as np

from tests.op_examples._example import Example

DOMAIN = "com.microsoft"

_rng = np.random.default_rng(41)


def _normal(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _expand_dims(x, axis):
    return [np.expand_dims(x, int(axis))]


def _cdist(a, b, metric="sqeuclidean"):
    squared = ((a.astype(np.float64)[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return [(squared if metric == "sqeuclidean" else np.sqrt(squared)).astype(a.dtype)]


def _inverse(x):
    return [np.linalg.inv(x.astype(np.float64)).astype(x.dtype)]


def _transpose_matmul(a, b, alpha=1.0, transA=0, transB=0):
    a = np.swapaxes(a, -1, -2) if transA else a
    b = np.swapaxes(b, -1, -2) if transB else b
    return [(alpha * np.matmul(a.astype(np.float64), b)).astype(np.float32)]


def _pad(x, pads, value=None, mode="constant"):
    pads = np.asarray(pads).reshape(-1)
    rank = x.ndim
    begins, ends = pads[:rank], pads[rank:]
    x = x[tuple(slice(-min(b, 0), x.shape[i] + min(e, 0)) for i, (b, e) in enumerate(zip(begins, ends)))]
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(begins, ends)]
    if mode == "constant":
        return [np.pad(x, widths, constant_values=0 if value is None else np.asarray(value).reshape(()))]
    return [np.pad(x, widths, mode=mode)]


def _range(start, limit, delta=None):
    return [np.arange(start, limit, 1 if delta is None else delta).astype(np.asarray(start).dtype)]


def _trilu(x, k=None, upper=1):
    offset = 0 if k is None else int(k)
    return [np.triu(x, offset) if upper else np.tril(x, offset)]


def _gather_nd(data, indices):
    return [data[tuple(np.moveaxis(indices, -1, 0))]]


# Well-conditioned matrices: the identity plus small noise.
_SQUARE = (np.eye(3) + 0.1 * _normal(2, 3, 3)).astype(np.float32)

EXAMPLES = {
    "ExpandDims": [
        Example([_normal(2, 3), np.array(-1, np.int32)], reference=_expand_dims),
        Example([_normal(2, 3), np.array(0, np.int32)], reference=_expand_dims),
    ],
    "CDist": [
        Example([_normal(2, 3), _normal(4, 3)], reference=_cdist, rtol=1e-5, atol=1e-5),
        Example([_normal(2, 3), _normal(4, 3)], {"metric": "euclidean"}, reference=_cdist, rtol=1e-5, atol=1e-5),
    ],
    "Inverse": [Example([_SQUARE], reference=_inverse, rtol=1e-5, atol=1e-5)],
    "TransposeMatMul": [
        Example(
            [_normal(3, 2), _normal(3, 4)],
            {"transA": 1, "alpha": 0.5},
            reference=_transpose_matmul,
            rtol=1e-5,
            atol=1e-5,
        ),
        Example([_normal(2, 2, 3), _normal(5, 3)], {"transB": 1}, reference=_transpose_matmul, rtol=1e-5, atol=1e-5),
    ],
    "Pad": [
        Example([_normal(2, 3), np.array([1, 0, 0, 2], np.int64), np.array([2.5], np.float32)], reference=_pad),
        Example([_normal(2, 3), np.array([[1, 1, 0, 1]], np.int64)], {"mode": "reflect"}, reference=_pad),
        Example([_normal(3, 4), np.array([0, -1, 1, 2], np.int64)], {"mode": "edge"}, reference=_pad),
    ],
    "Range": [
        Example([np.array(1.0, np.float32), np.array(3.5, np.float32)], reference=_range, grad=False),
        Example([np.array(5, np.int64), np.array(0, np.int64), np.array(-2, np.int64)], reference=_range),
    ],
    "Trilu": [
        Example([_normal(2, 3, 4), np.array(1, np.int64)], {"upper": 0}, reference=_trilu),
        Example([_normal(4, 3)], reference=_trilu),
        Example([_normal(3, 4), np.array(-1, np.int64)], reference=_trilu),
    ],
    "GatherND": [
        Example([_normal(2, 3, 4), np.array([[1, -1], [0, 0]], np.int64)], reference=_gather_nd),
        Example([_normal(2, 3), np.array([[[1], [0]]], np.int32)], reference=_gather_nd),
    ],
}
