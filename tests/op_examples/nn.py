"""Examples of the nn family: MatMul, Gemm, Conv, ConvTranspose, pools, normalizations, Dropout, Resize."""

import numpy as np

from tests.op_examples._example import Example

_rng = np.random.default_rng(7)


def _normal(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def _distinct(*shape):
    # Values apart from each other, so that maxima have no ties (exact max-pool gradients).
    return (_rng.permutation(int(np.prod(shape))).reshape(shape) * 0.25 - 3).astype(np.float32)


_X4 = _normal(1, 2, 5, 5)
_IMAGE = _distinct(1, 2, 5, 6)
_BATCH = _normal(3, 2, 4)


EXAMPLES = {
    "MatMul": [
        Example([_normal(3, 4), _normal(4, 2)]),
        Example([_normal(2, 1, 3, 4), _normal(3, 4, 2)]),
        Example([_normal(4), _normal(2, 4, 3)]),
        Example([_normal(2, 3, 4), _normal(4)]),
        Example(
            [np.arange(6, dtype=np.int32).reshape(2, 3), np.arange(6, dtype=np.int32).reshape(3, 2)], versions=(9, 13)
        ),
    ],
    "Gemm": [
        Example([_normal(3, 4), _normal(4, 2), _normal(2)], versions=(7, 9, 11, 13)),
        Example(
            [_normal(4, 3), _normal(2, 4), _normal(3, 1)],
            {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0},
            versions=(7, 9, 11, 13),
        ),
        # onnx's reference has no Gemm-1 (Gemm-6 is the same).
        Example([_normal(3, 4), _normal(4, 2), _normal(2)], {"broadcast": 1, "alpha": 1.5}, versions=(6,)),
        # (onnx's reference drops `beta` when broadcast=0.)
        Example([_normal(3, 4), _normal(4, 2), _normal(3, 2)], {"alpha": 0.5}, versions=(6,)),
        Example([_normal(3, 4), _normal(4, 2)], {"transB": 0}, versions=(11, 13)),
    ],
    "Conv": [
        Example([_X4, _normal(4, 1, 3, 2), _normal(4)], {"group": 2, "pads": [1, 0, 2, 1], "strides": [2, 1]}),
        Example([_X4, _normal(3, 2, 2, 2)], {"dilations": [2, 1], "auto_pad": "SAME_UPPER"}),
        Example([_normal(2, 2, 7), _normal(3, 2, 2)], {"auto_pad": "SAME_LOWER", "strides": [2]}),
        Example([_normal(1, 1, 3, 4, 3), _normal(2, 1, 2, 2, 2), _normal(2)], {"pads": [1, 0, 0, 0, 1, 1]}),
    ],
    "ConvTranspose": [
        Example(
            [_normal(1, 2, 3, 3), _normal(2, 3, 2, 2), _normal(3)],
            {"strides": [2, 2], "pads": [1, 0, 0, 1], "output_padding": [1, 0]},
        ),
        Example(
            [_normal(2, 2, 4), _normal(2, 2, 3)],
            {"strides": [2], "output_shape": [9], "dilations": [2], "auto_pad": "SAME_LOWER"},
        ),
        Example([_normal(1, 1, 3, 3), _normal(1, 2, 3, 3)], {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
        # group > 1 is checked by onnx's node cases: onnx's reference slices `W` by output
        # channels per group (it should slice by input channels) and disagrees.
    ],
    # Each with strides or dilations: onnx's reference computes Indices only then.
    "MaxPool": [
        Example([_IMAGE], {"kernel_shape": [2, 3], "pads": [1, 1, 0, 1], "strides": [2, 2]}),
        Example([_IMAGE], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, versions=(10, 11, 12, 22)),
        Example([_IMAGE], {"kernel_shape": [2, 2], "dilations": [2, 1], "storage_order": 1}, versions=(10, 11, 12, 22)),
        Example(
            [_IMAGE],
            {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [1, 2], "storage_order": 1},
            versions=(8, 10, 11, 12, 22),
        ),
        Example([_distinct(2, 1, 7)], {"kernel_shape": [3], "strides": [2], "auto_pad": "VALID"}),
    ],
    "AveragePool": [
        # onnx's reference counts the padding at version 1 (it passes count_include_pad=None),
        # whose text leaves it out, as here.
        Example([_X4], {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "strides": [2, 2]}, versions=(7, 10, 11, 19, 22)),
        Example([_X4], {"kernel_shape": [3, 2], "strides": [2, 1]}),
        Example(
            [_X4], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}, versions=(7, 10, 11, 19, 22)
        ),
        Example([_X4], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, versions=(10, 11, 19, 22)),
        # Not with auto_pad: onnx's reference leaves the dilations out of SAME padding.
        Example([_X4], {"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [1, 0, 0, 1]}, versions=(19, 22)),
        Example([_normal(2, 1, 6)], {"kernel_shape": [3], "auto_pad": "VALID"}),
    ],
    "GlobalAveragePool": [Example([_X4]), Example([_normal(2, 3, 4)])],
    # Only training mode: onnx's reference returns one output where the schema declares 3 or 5
    # (inference; versions 1 to 9), and the table's node declares them all. onnx's node cases
    # check inference.
    "BatchNormalization": [
        Example(
            [_BATCH, _normal(2), _normal(2), _normal(2), np.array([0.5, 2.0], np.float32)],
            {"training_mode": 1, "momentum": 0.8},
            versions=(14, 15),
        ),
        Example(
            [_X4, _normal(2), _normal(2), _normal(2), np.array([0.5, 2.0], np.float32)],
            {"training_mode": 1, "epsilon": 1e-2},
            versions=(14, 15),
        ),
    ],
    "LayerNormalization": [
        Example([_BATCH, _normal(4), _normal(4)]),
        Example([_BATCH, _normal(2, 4)], {"axis": 1, "epsilon": 1e-2}),
    ],
    "InstanceNormalization": [Example([_X4, _normal(2), _normal(2)], {"epsilon": 1e-3})],
    "GroupNormalization": [
        Example([_normal(2, 4, 3), _normal(4), _normal(4)], {"num_groups": 2}, versions=(21,)),
        Example([_normal(2, 4, 3), _normal(2), _normal(2)], {"num_groups": 2, "epsilon": 1e-3}, versions=(18,)),
    ],
    "Dropout": [
        Example([_X4], {"ratio": 0.3}, versions=(10,)),
        Example([_X4, np.array(0.3, np.float32)], versions=(12, 13, 22)),
        Example([_X4, np.array(0.3, np.float32), np.array(False)], {"seed": 3}, versions=(12, 13, 22)),
    ],
    "Resize": [
        Example(
            [_X4, np.array([], np.float32), np.array([1, 1, 2, 1.5], np.float32)],
            {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
            versions=(11, 13, 18, 19),
        ),
        Example([_X4, None, np.array([1, 1, 0.6, 1.4], np.float32)], {"mode": "linear"}, versions=(13, 18, 19)),
        Example(
            [_X4, None, None, np.array([1, 2, 7, 3])],
            {"mode": "cubic", "coordinate_transformation_mode": "align_corners"},
            versions=(13, 18, 19),
        ),
        Example(
            [_X4, None, None, np.array([3, 4])],
            {
                "mode": "cubic",
                "cubic_coeff_a": -0.5,
                "exclude_outside": 1,
                "coordinate_transformation_mode": "pytorch_half_pixel",
            },
            versions=(),
        ),
        Example(
            [_X4, None, None, np.array([3, 2])], {"mode": "linear", "antialias": 1, "axes": [3, 2]}, versions=(18, 19)
        ),
        Example(
            [_X4, None, None, np.array([8, 9])],
            {
                "mode": "nearest",
                "axes": [2, 3],
                "keep_aspect_ratio_policy": "not_larger",
                "nearest_mode": "round_prefer_ceil",
            },
            versions=(18, 19),
        ),
        Example(
            [_X4, np.array([0, 0, 0.2, 0.1, 1, 1, 0.9, 1.2], np.float32), None, np.array([1, 2, 3, 4])],
            {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": 5.0},
            versions=(13, 18, 19),
        ),
        Example(
            [_X4, np.array([], np.float32), np.array([1, 1, 0.8, 0.8], np.float32)],
            {"mode": "cubic", "coordinate_transformation_mode": "half_pixel_symmetric"},
            versions=(19,),
        ),
    ],
    # p=1 on positive data: onnx.reference sums x, not |x| (see `lp_normalization`); an
    # all-zero slice is in tests/test_math_ops.py (onnx.reference warns dividing 0 by 0).
    "LpNormalization": [
        Example([_X4]),
        Example([_X4], {"axis": 1}),
        Example([np.abs(_X4)], {"axis": 0, "p": 1}),
    ],
    "MeanVarianceNormalization": [Example([_X4]), Example([_X4], {"axes": [1, -1]})],
}
