"""Examples of the ai.onnx.ml ops (scikit-learn's converted models).

The table feeds every input to JAX as well, so string inputs are not here (JAX holds no
strings): LabelEncoder, CategoryMapper and OneHotEncoder on strings, DictVectorizer and
CastMap (their input is a map, a Python dict) are checked against onnxruntime in
``tests/test_ml_domain.py`` instead, and have no table entries. onnx.reference has no
CategoryMapper, ZipMap or LabelEncoder-1 (numpy oracles below); its Normalizer MAX divides
by the largest magnitude where the text and onnxruntime divide by the largest value (the
examples' MAX rows are positive); its binary LinearClassifier and TreeEnsembleClassifier
scores differ from onnxruntime's (the examples have three classes), and its FeatureVectorizer
reads a 1-D input as a column where the text says a row (the examples are 2-D). None of the
ops' inputs is differentiable in onnx's schemas, so the table checks no gradients.
"""

import numpy as np
from onnx.numpy_helper import from_array

from tests.op_examples._example import Example

DOMAIN = "ai.onnx.ml"

_rng = np.random.default_rng(11)
_X = _rng.standard_normal((5, 3)).astype(np.float32)
_POSITIVE = np.abs(_X) + np.float32(0.5)
_INTS = np.array([[3, 1, 4], [1, 5, 9]], np.int64)

# Two trees over three features (tree 0 depth 2, tree 1 one split), leaves weighing three
# classes or two targets; thresholds away from the examples' values so vmap's variants
# (x * 1.5 + 0.25) fall on the same side more often than not, and the check stays exact.
_NODES = dict(
    nodes_treeids=[0, 0, 0, 0, 0, 1, 1, 1],
    nodes_nodeids=[0, 1, 2, 3, 4, 0, 1, 2],
    nodes_featureids=[0, 1, 0, 0, 0, 2, 0, 0],
    nodes_values=[0.1, -0.3, 0.0, 0.0, 0.0, 0.2, 0.0, 0.0],
    nodes_modes=["BRANCH_LEQ", "BRANCH_GT", "LEAF", "LEAF", "LEAF", "BRANCH_LT", "LEAF", "LEAF"],
    nodes_truenodeids=[1, 3, 0, 0, 0, 1, 0, 0],
    nodes_falsenodeids=[2, 4, 0, 0, 0, 2, 0, 0],
)
_LEAF_TREES, _LEAF_NODES = [0, 0, 0, 1, 1], [2, 3, 4, 1, 2]


def _classes(ids, weights):
    return dict(class_treeids=_LEAF_TREES * 2, class_nodeids=_LEAF_NODES * 2, class_ids=ids, class_weights=weights)


def _category_mapper(X, cats_int64s, cats_strings, default_string="_Unused", **_):
    table = dict(zip(cats_int64s, cats_strings))
    return [np.array([table.get(int(v), default_string) for v in X.reshape(-1)], dtype=object).reshape(X.shape)]


def _label_encoder_1(X, classes_strings, default_string="_Unused", **_):
    return [
        np.array(
            [classes_strings[v] if 0 <= v < len(classes_strings) else default_string for v in X.reshape(-1).tolist()],
            dtype=object,
        ).reshape(X.shape)
    ]


def _zip_map(X, classlabels_int64s=None, classlabels_strings=None):
    labels = classlabels_int64s or classlabels_strings
    return [[dict(zip(labels, row)) for row in np.asarray(X).tolist()]]


EXAMPLES = {
    "LinearClassifier": [
        Example(
            [_X],
            {
                "coefficients": _rng.standard_normal(9).tolist(),
                "intercepts": [0.1, -0.2, 0.3],
                "classlabels_ints": [5, 6, 7],
            },
        ),
        Example(
            [_X],
            {
                "coefficients": _rng.standard_normal(9).tolist(),
                "intercepts": [0.0, 0.5, -0.5],
                "classlabels_ints": [0, 1, 2],
                "post_transform": "SOFTMAX",
            },
        ),
        Example(
            [_INTS],
            {
                "coefficients": [0.5, -1.0, 0.25, 1.0, 0.0, -0.5],
                "classlabels_ints": [1, 2],
                "intercepts": [0.0, 0.1],
                "post_transform": "LOGISTIC",
            },
        ),
    ],
    "LinearRegressor": [
        Example([_X], {"coefficients": [0.5, -1.0, 2.0], "intercepts": [0.25]}),
        Example([_X], {"coefficients": _rng.standard_normal(6).tolist(), "intercepts": [0.1, -0.1], "targets": 2}),
    ],
    "TreeEnsembleRegressor": [
        Example(
            [_X],
            dict(
                _NODES,
                n_targets=2,
                target_treeids=_LEAF_TREES * 2,
                target_nodeids=_LEAF_NODES * 2,
                target_ids=[0] * 5 + [1] * 5,
                target_weights=[1.0, -2.0, 3.0, 0.5, -0.5, 2.0, 1.0, 0.0, 4.0, -1.0],
                base_values=[0.5, -0.5],
                aggregate_function=aggregate,
            ),
        )
        for aggregate in ("SUM", "AVERAGE", "MIN", "MAX")
    ],
    "TreeEnsembleClassifier": [
        Example(
            [_X],
            dict(
                _NODES,
                classlabels_int64s=[2, 4, 8],
                **_classes([0] * 5 + [2] * 5, [0.6, 0.1, 0.3, 0.8, 0.2, 0.4, 0.9, 0.7, 0.2, 0.8]),
            ),
        ),
        Example(
            [_X],
            dict(
                _NODES,
                classlabels_int64s=[0, 1, 2],
                base_values=[0.1, 0.0, -0.1],
                post_transform="SOFTMAX",
                **_classes([0, 1, 2, 0, 1, 1, 2, 0, 2, 2], [0.6, -0.1, 0.3, 0.8, 0.2, -0.4, 0.9, 0.7, 0.2, 0.8]),
            ),
        ),
    ],
    "TreeEnsemble": [
        Example(
            [_X],
            {
                "n_targets": 2,
                "tree_roots": [0, 2],
                "nodes_featureids": [0, 1, 2],
                "nodes_splits": from_array(np.array([0.1, -0.3, 0.2], np.float32)),
                "nodes_modes": from_array(np.array([0, 3, 1], np.uint8)),
                "nodes_truenodeids": [1, 0, 3],
                "nodes_trueleafs": [0, 1, 1],
                "nodes_falsenodeids": [2, 1, 4],
                "nodes_falseleafs": [1, 1, 1],
                "leaf_targetids": [0, 1, 0, 1, 0],
                "leaf_weights": from_array(np.array([1.0, -2.0, 3.0, 0.5, -0.5], np.float32)),
                "aggregate_function": aggregate,
            },
        )
        for aggregate in (0, 1)
    ],
    "SVMClassifier": [
        Example(
            [_X],
            {
                "classlabels_ints": [0, 1, 2],
                "vectors_per_class": [2, 1, 1],
                "kernel_type": "RBF",
                "kernel_params": [0.4, 0.0, 3.0],
                "support_vectors": _rng.standard_normal(12).tolist(),
                "coefficients": _rng.standard_normal(8).tolist(),
                "rho": [0.1, -0.2, 0.05],
            },
            rtol=1e-4,
        ),
        Example(
            [_X],
            {
                "classlabels_ints": [0, 1],
                "vectors_per_class": [2, 1],
                "kernel_type": "POLY",
                "kernel_params": [0.5, 0.25, 2.0],
                "support_vectors": _rng.standard_normal(9).tolist(),
                "coefficients": [0.5, -0.75, 0.25],
                "rho": [0.1],
                "prob_a": [-1.5],
                "prob_b": [0.2],
            },
            rtol=1e-4,
        ),
    ],
    "SVMRegressor": [
        Example(
            [_X],
            {
                "n_supports": 2,
                "support_vectors": _rng.standard_normal(6).tolist(),
                "coefficients": [0.5, -0.25],
                "rho": [0.1],
                "kernel_type": kernel,
                "kernel_params": [0.5, 0.25, 2.0],
            },
            rtol=1e-4,
        )
        for kernel in ("LINEAR", "RBF", "SIGMOID")
    ]
    + [Example([_X], {"coefficients": [0.5, -1.0, 2.0], "rho": [0.25]})],
    "Scaler": [
        Example([_X], {"offset": [0.5, -0.5, 0.0], "scale": [2.0, 1.0, -1.0]}),
        Example([_X], {"offset": [0.25], "scale": [0.5]}),
    ],
    "Normalizer": [Example([_X], {"norm": "L1"}), Example([_X], {"norm": "L2"}), Example([_POSITIVE], {"norm": "MAX"})],
    "Binarizer": [Example([_X], {"threshold": 0.25}), Example([_INTS], {"threshold": 3.0})],
    "Imputer": [
        Example(
            [np.where(_X > 0.5, np.float32(np.nan), _X)],
            {"imputed_value_floats": [1.0, 2.0, 3.0], "replaced_value_float": float("nan")},
        ),
        Example([_INTS], {"imputed_value_int64s": [-7], "replaced_value_int64": 1}),
    ],
    "OneHotEncoder": [Example([_INTS], {"cats_int64s": [1, 3, 9, 4]})],
    "LabelEncoder": [
        Example([_INTS], {"keys_int64s": [1, 3, 5], "values_floats": [0.5, 1.5, 2.5]}, versions=(2, 4)),
        Example(
            [_X[:, :2]],
            {"keys_floats": _X[[0, 2], 0].tolist(), "values_int64s": [10, 20], "default_int64": 0},
            versions=(2, 4),
        ),
        Example(
            [_INTS],
            {
                "keys_tensor": from_array(np.array([9, 4], np.int64)),
                "values_tensor": from_array(np.array([-1, -2], np.int16)),
                "default_tensor": from_array(np.array([7], np.int16)),
            },
            versions=(4,),
        ),
        # Version 1 maps indices to `classes_strings`; its strings cannot be traced.
        Example(
            [_INTS], {"classes_strings": ["a", "b", "c", "d"]}, versions=(1,), reference=_label_encoder_1, vmap=False
        ),
    ],
    "CategoryMapper": [
        # Integers to strings (strings cannot be traced, so no vmap).
        Example(
            [_INTS],
            {"cats_int64s": [1, 4, 9], "cats_strings": ["one", "four", "nine"]},
            reference=_category_mapper,
            vmap=False,
        ),
    ],
    "ArrayFeatureExtractor": [
        Example([_X, np.array([2, 0, 2], np.int64)]),
        Example([_INTS, np.array([[1]], np.int64)]),
    ],
    "FeatureVectorizer": [Example([_X, _X[:, :1] * 2], {"inputdimensions": [2, 3]})],
    # ZipMap returns a list of dicts, which vmap cannot stack.
    "ZipMap": [
        Example([_X], {"classlabels_strings": ["a", "b", "c"]}, reference=_zip_map, vmap=False),
        Example([_X[:, :2]], {"classlabels_int64s": [7, 3]}, reference=_zip_map, vmap=False),
    ],
    "DictVectorizer": [],
    "CastMap": [],
}
