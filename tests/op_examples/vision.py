"""Examples of the vision and detection ops and their pools: GlobalMaxPool, LRN, LpPool,
GlobalLpPool, MaxUnpool, Upsample, NonMaxSuppression, RoiAlign, MaxRoiPool, GridSample,
AffineGrid, Col2Im, CenterCropPad, DeformConv."""

import numpy as np

from tests.op_examples._example import Example

_rng = np.random.default_rng(23)


def _normal(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def _distinct(*shape):
    # Values apart from each other, so that maxima have no ties (exact max gradients).
    return (_rng.permutation(int(np.prod(shape))).reshape(shape) * 0.25 - 3).astype(np.float32)


_BOXES = np.random.default_rng(2).uniform(0, 3, (2, 8, 4)).astype(np.float32)
_SCORES = np.random.default_rng(3).uniform(0, 1, (2, 3, 8)).astype(np.float32)

_FEATURES = _normal(2, 3, 6, 7)
# Inside, partly outside, tiny (under 1x1) and reversed RoIs.
_ROIS = np.array([[0.5, 1.0, 5.5, 4.0], [-2.0, 3.0, 4.0, 9.0], [2.0, 2.0, 2.4, 2.3], [4.0, 4.0, 1.0, 2.0]], np.float32)
_ROI_BATCHES = np.array([0, 1, 1, 0], np.int64)

_IMAGE = _normal(2, 2, 4, 5)
_GRID = _rng.uniform(-1.6, 1.6, (2, 3, 4, 2)).astype(np.float32)  # some positions outside
_VOLUME = _normal(1, 2, 3, 4, 3)
_GRID_3D = _rng.uniform(-1.4, 1.4, (1, 2, 3, 2, 3)).astype(np.float32)


def _offsets(*shape):
    # Fractional offsets away from whole pixels (where the interpolation has kinks).
    return (_rng.integers(-2, 3, shape) + _rng.uniform(0.1, 0.4, shape) * _rng.choice([-1, 1], shape)).astype(
        np.float32
    )


def _max_roi_pool(x, rois, pooled_shape, spatial_scale=1.0):
    # onnx.reference has no MaxRoiPool: Caffe's RoI pooling, as onnxruntime computes it.
    def c_round(v):
        return int(np.sign(v) * np.floor(abs(v) + 0.5))

    out = np.zeros((len(rois), x.shape[1], *pooled_shape), x.dtype)
    for r, (batch, *box) in enumerate(rois):
        x1, y1, x2, y2 = (c_round(np.float32(v) * np.float32(spatial_scale)) for v in box)
        size_h, size_w = np.float32(max(y2 - y1 + 1, 1)), np.float32(max(x2 - x1 + 1, 1))
        for ph in range(pooled_shape[0]):
            for pw in range(pooled_shape[1]):
                bin_h, bin_w = size_h / np.float32(pooled_shape[0]), size_w / np.float32(pooled_shape[1])
                h0 = min(max(int(np.floor(ph * bin_h)) + y1, 0), x.shape[2])
                h1 = min(max(int(np.ceil((ph + 1) * bin_h)) + y1, 0), x.shape[2])
                w0 = min(max(int(np.floor(pw * bin_w)) + x1, 0), x.shape[3])
                w1 = min(max(int(np.ceil((pw + 1) * bin_w)) + x1, 0), x.shape[3])
                if h1 > h0 and w1 > w0:
                    out[r, :, ph, pw] = x[int(batch), :, h0:h1, w0:w1].max(axis=(1, 2))
    return [out]


_POOL_ROIS = np.array(
    [[0, 1.0, 1.0, 5.0, 5.0], [1, 2.5, 3.5, 6.5, 4.5], [1, -1.5, 0.5, 1.5, 30.0], [0, 6.0, 2.0, 3.0, 1.0]], np.float32
)


def _lp_pool_2x2_ceil(x, kernel_shape, strides, ceil_mode, p=2):
    padded = np.pad(np.abs(x.astype(np.float64)) ** p, ((0, 0), (0, 0), (0, x.shape[2] % 2), (0, x.shape[3] % 2)))
    sums = padded.reshape(*x.shape[:2], padded.shape[2] // 2, 2, padded.shape[3] // 2, 2).sum(axis=(3, 5))
    return [(sums ** (1 / p)).astype(x.dtype)]


# onnx's reference LRN loops its channel index over the batch axis (`range(x.shape[0])`):
# it agrees with the text only when N == C.
_SQUARE = _normal(3, 3, 2, 4)


def _global_max_pool(x):
    # onnx.reference's GlobalMaxPool reduces axes (ndim - 2, ndim - 1): right at rank 4 only.
    return [x.max(axis=tuple(range(2, x.ndim)), keepdims=True)]


def _global_lp_pool(x, p=2):
    # onnx.reference has no GlobalLpPool; the text's formula, in float64.
    norms = (np.abs(x.astype(np.float64)) ** p).sum(axis=tuple(range(2, x.ndim)), keepdims=True) ** (1.0 / p)
    return [norms.astype(x.dtype)]


EXAMPLES = {
    "GlobalMaxPool": [
        Example([_distinct(2, 3, 4, 5)]),
        Example([_distinct(1, 2, 6)], reference=_global_max_pool),
        Example([_distinct(1, 2, 3, 2, 2)], reference=_global_max_pool),
    ],
    "GlobalLpPool": [
        Example([_normal(2, 3, 4, 5)], reference=_global_lp_pool),
        Example([_normal(1, 2, 6)], {"p": 3}, versions=(2, 22), reference=_global_lp_pool),
        Example([_normal(1, 2, 6)], {"p": 1.0}, versions=(1,), reference=_global_lp_pool),
    ],
    "LRN": [
        Example([_SQUARE], {"size": 3}),
        Example([_SQUARE], {"size": 2, "alpha": 0.5, "beta": 0.6, "bias": 2.0}),
        Example([_normal(4, 4, 2, 2)], {"size": 5, "alpha": 0.1}),
    ],
    "LpPool": [
        Example([_normal(1, 2, 5, 5)], {"kernel_shape": [2, 3], "strides": [2, 1]}),
        Example([_normal(2, 1, 7)], {"kernel_shape": [3], "p": 3}, versions=(2, 11, 18, 22)),
        Example([_normal(1, 2, 5, 6)], {"kernel_shape": [2, 2], "dilations": [2, 1]}, versions=(18, 22)),
        Example([_normal(1, 2, 3, 3, 4)], {"kernel_shape": [2, 2, 2], "p": 1}, versions=(2, 11, 18, 22)),
        Example([_normal(1, 1, 4, 4)], {"kernel_shape": [2, 2], "p": 1.5}, versions=(1,)),
        Example([_normal(1, 2, 5, 5)], {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "strides": [2, 2]}),
        Example([_normal(1, 2, 5, 6)], {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]}),
        Example([_normal(1, 2, 5, 6)], {"kernel_shape": [2, 3], "auto_pad": "SAME_LOWER"}),
        # onnx.reference scales a window that ceil_mode cuts short by the kernel size over its
        # elements (as PyTorch's lp_pool); the text's Lp norm leaves the missing ones out, as
        # onnxruntime 1.32 does: a numpy oracle of that.
        Example(
            [_normal(1, 2, 5, 6)],
            {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1},
            versions=(18, 22),
            reference=_lp_pool_2x2_ceil,
        ),
    ],
    "MaxUnpool": [
        Example(
            [_normal(1, 2, 2, 2), np.array([[[[0, 3], [9, 14]], [[17, 18], [28, 31]]]], np.int64)],
            {"kernel_shape": [2, 2], "strides": [2, 2]},
        ),
        Example(
            [_normal(2, 1, 3), np.array([[[1, 2, 5]], [[6, 9, 11]]], np.int64)], {"kernel_shape": [2], "strides": [2]}
        ),
        # With pads the inferred length is (3 - 1) * 2 - 1 + 3 = 6; `output_shape` equal to it
        # (onnx's reference counts indices in the inferred shape, see the node-suite skip).
        Example(
            [_normal(1, 1, 3), np.array([[[0, 2, 5]]], np.int64), np.array([1, 1, 6], np.int64)],
            {"kernel_shape": [3], "strides": [2], "pads": [1, 0]},
        ),
    ],
    # onnx's reference computes only nearest mode with integer scales.
    "Upsample": [
        Example([_normal(1, 2, 2, 3), np.array([1.0, 1.0, 2.0, 3.0], np.float32)], versions=(9, 10)),
        Example([np.arange(6, dtype=np.int64).reshape(2, 3), np.array([2.0, 1.0], np.float32)], versions=(9, 10)),
        # onnx's reference has no Upsample-7 (scales as an attribute): the same repeat in numpy.
        Example(
            [_normal(1, 2, 2, 3)],
            {"scales": [1.0, 2.0, 1.0, 2.0]},
            versions=(7,),
            reference=lambda x, scales, mode=None: [x.repeat(2, axis=1).repeat(2, axis=3)],
        ),
        # Nor Upsample-1 (height_scale and width_scale).
        Example(
            [_normal(1, 2, 2, 3)],
            {"height_scale": 3.0, "width_scale": 2.0},
            versions=(1,),
            reference=lambda x, height_scale, width_scale: [x.repeat(3, axis=2).repeat(2, axis=3)],
        ),
    ],
    # Integer outputs: no gradient.
    "NonMaxSuppression": [
        Example(
            [_BOXES, _SCORES, np.array([3], np.int64), np.array([0.2], np.float32), np.array([0.3], np.float32)],
            grad=False,
        ),
        Example(
            [_BOXES, _SCORES, np.array([5], np.int64), np.array([0.5], np.float32)], {"center_point_box": 1}, grad=False
        ),
        # (onnx's reference needs `iou_threshold` whenever `max_output_boxes_per_class` is given.)
        Example([_BOXES, _SCORES, np.array([0], np.int64), np.array([0.5], np.float32)], grad=False),
    ],
    # (rois and batch_indices: not differentiable.) onnx's reference shifts by -0.5 at
    # version 10 too (the later default), where version 10 has no shift; tests/test_vision_ops.py
    # checks version 10 against onnxruntime.
    "RoiAlign": [
        Example([_FEATURES, _ROIS, _ROI_BATCHES], {"output_height": 2, "output_width": 3}, versions=(16, 22)),
        Example(
            [_FEATURES, _ROIS, _ROI_BATCHES],
            {"output_height": 3, "output_width": 2, "sampling_ratio": 2, "spatial_scale": 0.5},
            versions=(16, 22),
        ),
        Example(
            [_FEATURES, _ROIS, _ROI_BATCHES],
            {"output_height": 2, "output_width": 2, "coordinate_transformation_mode": "output_half_pixel"},
            versions=(16, 22),
        ),
        # Max mode has ties at the zero terms of points outside the map: no gradient check there.
        Example(
            [_FEATURES, _ROIS[:1], _ROI_BATCHES[:1]],
            {"output_height": 2, "output_width": 2, "mode": "max", "sampling_ratio": 3},
            versions=(16, 22),
        ),
        Example(
            [_FEATURES, _ROIS, _ROI_BATCHES],
            {"output_height": 2, "output_width": 2, "mode": "max"},
            versions=(16, 22),
            grad=False,
        ),
    ],
    # `grid` is not differentiable in the schema; tests/test_vision_ops.py checks its gradient.
    # onnx's reference knows only version 20's mode names (version 16's bilinear and bicubic
    # are checked against onnxruntime there too).
    "GridSample": [
        Example([_IMAGE, _GRID], {"mode": "linear", "padding_mode": "zeros", "align_corners": 0}, versions=(20, 22)),
        Example([_IMAGE, _GRID], {"mode": "linear", "padding_mode": "zeros", "align_corners": 1}, versions=(20, 22)),
        Example([_IMAGE, _GRID], {"mode": "linear", "padding_mode": "border", "align_corners": 0}, versions=(20, 22)),
        Example([_IMAGE, _GRID], {"mode": "linear", "padding_mode": "border", "align_corners": 1}, versions=(20, 22)),
        Example(
            [_IMAGE, _GRID], {"mode": "linear", "padding_mode": "reflection", "align_corners": 0}, versions=(20, 22)
        ),
        Example(
            [_IMAGE, _GRID], {"mode": "linear", "padding_mode": "reflection", "align_corners": 1}, versions=(20, 22)
        ),
        Example(
            [_VOLUME, _GRID_3D], {"mode": "linear", "padding_mode": "border", "align_corners": 1}, versions=(20, 22)
        ),
        Example([_VOLUME, _GRID_3D], {"mode": "linear", "padding_mode": "reflection"}, versions=(20, 22)),
        Example([_IMAGE, _GRID], {"mode": "nearest", "padding_mode": "zeros", "align_corners": 0}, versions=(20, 22)),
        Example([_IMAGE, _GRID], {"mode": "nearest", "padding_mode": "zeros", "align_corners": 1}, versions=(20, 22)),
        Example([_IMAGE, _GRID], {"mode": "nearest", "padding_mode": "border", "align_corners": 0}, versions=(20, 22)),
        Example([_IMAGE, _GRID], {"mode": "nearest", "padding_mode": "border", "align_corners": 1}, versions=(20, 22)),
        Example(
            [_IMAGE, _GRID], {"mode": "nearest", "padding_mode": "reflection", "align_corners": 0}, versions=(20, 22)
        ),
        Example(
            [_IMAGE, _GRID], {"mode": "nearest", "padding_mode": "reflection", "align_corners": 1}, versions=(20, 22)
        ),
        Example([_IMAGE, _GRID], {"mode": "nearest", "padding_mode": "reflection"}, versions=(16,)),
        Example(
            [_VOLUME, _GRID_3D], {"mode": "nearest", "padding_mode": "border", "align_corners": 1}, versions=(20, 22)
        ),
        Example([_VOLUME, _GRID_3D], {"mode": "nearest", "padding_mode": "reflection"}, versions=(20, 22)),
        Example([_IMAGE, _GRID], {"mode": "cubic", "padding_mode": "zeros", "align_corners": 0}, versions=(20, 22)),
        Example([_IMAGE, _GRID], {"mode": "cubic", "padding_mode": "zeros", "align_corners": 1}, versions=(20, 22)),
        Example(
            [_IMAGE, _GRID], {"mode": "cubic", "padding_mode": "reflection", "align_corners": 0}, versions=(20, 22)
        ),
        Example(
            [_IMAGE, _GRID], {"mode": "cubic", "padding_mode": "reflection", "align_corners": 1}, versions=(20, 22)
        ),
        # (Cubic with border padding: onnx.reference clamps the coordinate where onnxruntime and
        # PyTorch clamp only the pixels read; tests/test_vision_ops.py checks it against onnxruntime.)
        Example([_VOLUME, _GRID_3D], {"mode": "cubic", "padding_mode": "reflection"}, versions=(20, 22)),
        Example([np.arange(40, dtype=np.int64).reshape(2, 1, 4, 5), _GRID], {"mode": "nearest"}, versions=(20, 22)),
    ],
    # (theta is not differentiable in the schema; tests/test_vision_ops.py checks its gradient.)
    "AffineGrid": [
        Example([_normal(2, 2, 3), np.array([2, 3, 4, 5], np.int64)]),
        Example([_normal(2, 2, 3), np.array([2, 3, 4, 5], np.int64)], {"align_corners": 1}),
        Example([_normal(1, 3, 4), np.array([1, 2, 3, 4, 2], np.int64)]),
        Example([_normal(1, 3, 4), np.array([1, 2, 3, 4, 2], np.int64)], {"align_corners": 1}),
    ],
    "CenterCropPad": [
        Example([_normal(3, 5, 4), np.array([2, 7], np.int64)], {"axes": [1, 2]}),
        Example([_normal(3, 5, 4), np.array([4, 3, 6], np.int64)]),
        Example([_normal(3, 5, 4), np.array([6, 2], np.int32)], {"axes": [-1, 0]}),
        Example([np.arange(12, dtype=np.int32).reshape(3, 4), np.array([2, 5], np.int64)]),
    ],
    "Col2Im": [
        Example([_normal(2, 6, 12), np.array([4, 5], np.int64), np.array([1, 3], np.int64)]),
        Example(
            [_normal(1, 8, 6), np.array([5, 5], np.int64), np.array([2, 2], np.int64)],
            {"strides": [2, 2], "pads": [1, 0, 1, 0], "dilations": [1, 2]},
        ),
        Example(
            [_normal(1, 8, 16), np.array([3, 3, 4], np.int64), np.array([2, 2, 2], np.int64)],
            {"pads": [0, 0, 1, 0, 0, 0]},
        ),
    ],
    # onnx's reference computes 2-D only (tests/test_vision_ops.py checks 1-D and 3-D against
    # Conv); the inputs' differentiability is not stated in the schema (checked there too).
    "DeformConv": [
        Example([_normal(1, 2, 4, 5), _normal(3, 2, 2, 2), _offsets(1, 8, 3, 4)]),
        Example(
            [_normal(2, 4, 5, 5), _normal(4, 2, 3, 2), _offsets(2, 24, 2, 4), _normal(4), _normal(2, 12, 2, 4)],
            {"group": 2, "offset_group": 2, "strides": [2, 1], "pads": [1, 0, 0, 0]},
        ),
        Example(
            [_normal(1, 2, 5, 5), _normal(2, 1, 2, 2), _offsets(1, 8, 5, 5)],
            {"group": 2, "dilations": [2, 1], "pads": [1, 1, 1, 0]},
        ),
    ],
    "MaxRoiPool": [
        Example([_distinct(2, 3, 7, 8), _POOL_ROIS], {"pooled_shape": [2, 3]}, reference=_max_roi_pool),
        Example(
            [_distinct(2, 3, 7, 8), _POOL_ROIS], {"pooled_shape": [3, 2], "spatial_scale": 0.5}, reference=_max_roi_pool
        ),
    ],
}
