"""The ai.onnx.ml domain: scikit-learn models converted by skl2onnx (fixtures made by
``tools/export_sklearn_fixtures.py``) against scikit-learn's stored results and
onnxruntime, eagerly and under ``jax.jit``; and the ops' branches that the fixtures and
onnx's node cases do not reach (tree modes, aggregates, binary classifiers, string and map
values), against onnxruntime."""

from __future__ import annotations

import pathlib

import jax
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import jaxonnx

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "sklearn"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.onnx"))


def _fixture(name: str):
    proto = onnx.load(FIXTURES / f"{name}.onnx")
    data = dict(np.load(FIXTURES / f"{name}.npz"))
    inputs = {k.removeprefix("input_"): v for k, v in data.items() if k.startswith("input_")}
    expected = {k.removeprefix("expected_"): v for k, v in data.items() if k.startswith("expected_")}
    return proto, inputs, expected


def _onnxruntime(proto: onnx.ModelProto, inputs: dict) -> list:
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def _as_matrix(value) -> np.ndarray:
    """Probabilities as an array: ZipMap's list of dicts as rows in the dicts' key order."""
    if isinstance(value, list):
        return np.array([[float(v) for v in row.values()] for row in value])
    return np.asarray(value)


def test_every_fixture_is_here():
    assert {
        "logistic_regression",
        "gradient_boosting",
        "random_forest",
        "random_forest_regressor",
        "svc",
        "svr",
        "linear_regression",
        "preprocessing",
        "string_labels_zipmap",
    } <= set(NAMES)


#: The fixtures whose outputs are strings or maps: they run op by op, outside `jax.jit`.
EAGER_ONLY = {"string_labels_zipmap"}


@pytest.mark.parametrize("name", NAMES)
def test_fixture_matches_scikit_learn_and_onnxruntime(name):
    proto, inputs, expected = _fixture(name)
    model = jaxonnx.load(proto)
    if name in EAGER_ONLY:
        assert model.eager_mode.startswith("op by op")
        ours = model.run(None, inputs)
    else:
        # Numeric models compile whole: the call runs the graph under `jax.jit`.
        assert model.eager_mode.startswith("whole graph compiled")
        ours = jax.jit(lambda feed: model.run(None, feed))(inputs)
    theirs = _onnxruntime(proto, inputs)
    assert len(ours) == len(theirs)
    for mine, runtime in zip(ours, theirs):
        if isinstance(runtime, list):  # ZipMap: a list of dicts, same keys, same order
            assert [list(row) for row in mine] == [list(row) for row in runtime]
        runtime, mine = _as_matrix(runtime), _as_matrix(mine)
        if runtime.dtype.kind in "OUS":
            np.testing.assert_array_equal(mine.astype(str), runtime.astype(str))
        elif runtime.dtype.kind == "f":
            np.testing.assert_allclose(mine, runtime, rtol=1e-4, atol=1e-5)
        else:
            np.testing.assert_array_equal(mine, runtime)
    if "label" in expected:
        np.testing.assert_array_equal(np.asarray(ours[0]).astype(expected["label"].dtype), expected["label"])
        # float32 trees and kernels against scikit-learn's float64: libsvm's probabilities
        # are coupled iteratively, so they agree less closely.
        tolerance = 2e-3 if name == "svc" else 1e-5
        np.testing.assert_allclose(_as_matrix(ours[1]), expected["probabilities"], atol=tolerance)
    else:
        np.testing.assert_allclose(
            np.asarray(ours[0]).reshape(expected["value"].shape), expected["value"], rtol=1e-4, atol=2e-5
        )


def test_string_labels_and_zipmap_run_eagerly_and_refuse_jit():
    proto, inputs, expected = _fixture("string_labels_zipmap")
    model = jaxonnx.load(proto)
    assert model.eager_mode.startswith("op by op")
    label, probabilities = model.run(None, inputs)
    assert list(label) == expected["label"].tolist()
    assert all(isinstance(k, str) and isinstance(v, float) for row in probabilities for k, v in row.items())
    with pytest.raises(jaxonnx.JaxOnnxError, match="string"):
        jax.jit(lambda feed: model.run(None, feed))(inputs)


# ----------------------------------------------------------------------------- single nodes


def _node_model(op_type, inputs, outputs, attributes, opset=3):
    node = helper.make_node(op_type, [n for n, _ in inputs], [n for n, _ in outputs], domain="ai.onnx.ml", **attributes)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, t, None) for n, t in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("ai.onnx.ml", opset)]
    )
    model.ir_version = 9
    return model


def _check_against_onnxruntime(proto, feed, *, jit=True):
    """jaxonnx against onnxruntime; ``jit``: the model compiles whole (its calls run under
    ``jax.jit``), else it runs op by op (strings)."""
    expected = _onnxruntime(proto, feed)
    model = jaxonnx.load(proto)
    assert model.eager_mode.startswith("whole graph compiled" if jit else "op by op")
    for got in [model.run(None, feed)]:
        for a, e in zip(got, expected):
            a, e = np.asarray(a), np.asarray(e)
            if e.dtype.kind == "f":
                np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
            else:
                np.testing.assert_array_equal(a.astype(e.dtype) if e.dtype.kind not in "OUS" else a, e)


_F, _I, _S = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64, onnx.TensorProto.STRING

# Two trees over two features: tree 0 is BRANCH_* on feature 0 then 1; tree 1 one split.
_TREES = dict(
    nodes_treeids=[0, 0, 0, 0, 0, 1, 1, 1],
    nodes_nodeids=[0, 1, 2, 3, 4, 0, 1, 2],
    nodes_featureids=[0, 1, 0, 0, 0, 1, 0, 0],
    nodes_values=[0.5, -0.25, 0.0, 0.0, 0.0, 0.75, 0.0, 0.0],
    nodes_truenodeids=[1, 3, 0, 0, 0, 1, 0, 0],
    nodes_falsenodeids=[2, 4, 0, 0, 0, 2, 0, 0],
    nodes_missing_value_tracks_true=[1, 0, 0, 0, 0, 0, 0, 0],
)
_LEAVES = ([0, 0, 0, 1, 1], [2, 3, 4, 1, 2])
_ROWS = np.array([[0.1, -1.0], [0.9, 1.0], [np.nan, 0.0], [0.5, -0.25], [0.6, np.nan], [-3.0, 0.75]], np.float32)


@pytest.mark.parametrize(
    ("modes", "aggregate"),
    [
        (("BRANCH_LEQ", "BRANCH_LT"), "SUM"),
        (("BRANCH_GTE", "BRANCH_GT"), "AVERAGE"),
        (("BRANCH_EQ", "BRANCH_NEQ"), "MIN"),
        (("BRANCH_LT", "BRANCH_GTE"), "MAX"),
    ],
)
def test_tree_ensemble_regressor_modes_and_aggregates(modes, aggregate):
    # Every leaf weighs both targets: onnxruntime writes 0, not the base value, for a
    # target that no tree weighs, where the text adds the base value to every prediction.
    trees, leaves = _LEAVES
    attributes = dict(
        _TREES,
        nodes_modes=[modes[0], modes[1], "LEAF", "LEAF", "LEAF", modes[0], "LEAF", "LEAF"],
        target_treeids=trees + trees,
        target_nodeids=leaves + leaves,
        target_ids=[0] * 5 + [1] * 5,
        target_weights=[1.0, 2.0, -3.0, 4.0, 5.0, 0.5, -1.5, 2.5, 3.0, -4.0],
        n_targets=2,
        aggregate_function=aggregate,
        base_values=[0.5, -0.5],
    )
    proto = _node_model("TreeEnsembleRegressor", [("X", _F)], [("Y", _F)], attributes)
    _check_against_onnxruntime(proto, {"X": _ROWS})


@pytest.mark.parametrize("post_transform", ["NONE", "LOGISTIC", "SOFTMAX"])
@pytest.mark.parametrize("weights", [[0.2, 0.9, 0.6, 0.3, 0.1], [-0.2, 0.9, -0.6, 0.3, 0.1]])
def test_tree_ensemble_binary_classifier_one_score(post_transform, weights):
    # What scikit-learn converts to: two labels, weights for one class only.
    trees, leaves = _LEAVES
    attributes = dict(
        _TREES,
        nodes_modes=["BRANCH_LEQ", "BRANCH_LEQ", "LEAF", "LEAF", "LEAF", "BRANCH_LEQ", "LEAF", "LEAF"],
        class_treeids=trees,
        class_nodeids=leaves,
        class_ids=[0] * 5,
        class_weights=weights,
        classlabels_int64s=[4, 9],
        post_transform=post_transform,
    )
    proto = _node_model("TreeEnsembleClassifier", [("X", _F)], [("Y", _I), ("Z", _F)], attributes)
    _check_against_onnxruntime(proto, {"X": _ROWS})


@pytest.mark.parametrize("post_transform", ["NONE", "SOFTMAX", "LOGISTIC"])
def test_tree_ensemble_classifier_string_labels(post_transform):
    trees, leaves = _LEAVES
    attributes = dict(
        _TREES,
        nodes_modes=["BRANCH_LEQ", "BRANCH_GT", "LEAF", "LEAF", "LEAF", "BRANCH_LEQ", "LEAF", "LEAF"],
        class_treeids=trees + trees,
        class_nodeids=leaves + leaves,
        class_ids=[0, 1, 2, 0, 1, 2, 2, 1, 0, 0],
        class_weights=[0.1, 0.5, 0.2, 0.7, 0.3, 0.4, 0.05, 0.6, 0.2, 0.9],
        base_values=[0.0, 0.1, -0.1],
        classlabels_strings=["a", "b", "c"],
        post_transform=post_transform,
    )
    proto = _node_model("TreeEnsembleClassifier", [("X", _F)], [("Y", _S), ("Z", _F)], attributes)
    _check_against_onnxruntime(proto, {"X": _ROWS}, jit=False)


@pytest.mark.parametrize("post_transform", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"])
def test_linear_classifier_binary_and_multiclass(post_transform):
    X = np.array([[1.0, -2.0], [0.5, 0.25], [-1.0, 3.0]], np.float32)
    for coefficients, intercepts, labels in (
        ([0.5, -1.0], [0.1], [3, 7]),
        ([0.5, -1.0, 1.0, 0.0, -0.5, 0.5], [0.1, 0.0, -0.2], [1, 2, 3]),
    ):
        proto = _node_model(
            "LinearClassifier",
            [("X", _F)],
            [("Y", _I), ("Z", _F)],
            dict(
                coefficients=coefficients, intercepts=intercepts, classlabels_ints=labels, post_transform=post_transform
            ),
            opset=1,
        )
        _check_against_onnxruntime(proto, {"X": X})


def test_svm_classifier_binary_without_probabilities():
    X = np.array([[1.0, -2.0], [0.5, 0.25], [-1.0, 3.0]], np.float32)
    attributes = dict(
        classlabels_ints=[0, 1],
        vectors_per_class=[2, 1],
        support_vectors=[1.0, 0.0, 0.0, 1.0, -1.0, 2.0],
        coefficients=[0.5, -0.25, 0.75],
        rho=[0.1],
        kernel_type="RBF",
        kernel_params=[0.5, 0.0, 3.0],
    )
    proto = _node_model("SVMClassifier", [("X", _F)], [("Y", _I), ("Z", _F)], attributes, opset=1)
    _check_against_onnxruntime(proto, {"X": X})


@pytest.mark.parametrize("kernel", ["LINEAR", "POLY", "SIGMOID"])
def test_svm_regressor_kernels(kernel):
    X = np.array([[1.0, -2.0], [0.5, 0.25], [-1.0, 3.0]], np.float32)
    attributes = dict(
        n_supports=2,
        support_vectors=[1.0, 0.0, 0.0, 1.0],
        coefficients=[0.5, -0.25],
        rho=[0.1],
        kernel_type=kernel,
        kernel_params=[0.5, 0.25, 2.0],
    )
    proto = _node_model("SVMRegressor", [("X", _F)], [("Y", _F)], attributes, opset=1)
    _check_against_onnxruntime(proto, {"X": X})


def test_category_mapper_both_ways():
    strings = np.array([["b", "z"], ["a", "b"]], dtype=object)
    for inputs, outputs, feed in (
        ([("X", _S)], [("Y", _I)], strings),
        ([("X", _I)], [("Y", _S)], np.array([[2, 9], [1, 2]], np.int64)),
    ):
        proto = _node_model(
            "CategoryMapper", inputs, outputs, dict(cats_int64s=[1, 2], cats_strings=["a", "b"]), opset=1
        )
        _check_against_onnxruntime(proto, {"X": feed}, jit=False)


def test_string_lookups_refuse_jit_with_a_clear_error():
    proto = _node_model(
        "CategoryMapper", [("X", _I)], [("Y", _S)], dict(cats_int64s=[1, 2], cats_strings=["a", "b"]), opset=1
    )
    model = jaxonnx.load(proto)
    with pytest.raises(jaxonnx.JaxOnnxError, match="string"):
        jax.jit(lambda x: model(x))(np.array([1, 2], np.int64))


def test_dict_vectorizer_and_cast_map_take_dicts():
    def map_model(op_type, key, value, out_type, attributes):
        node = helper.make_node(op_type, ["X"], ["Y"], domain="ai.onnx.ml", **attributes)
        map_type = helper.make_map_type_proto(key, helper.make_tensor_type_proto(value, None))
        graph = helper.make_graph(
            [node], "g", [helper.make_value_info("X", map_type)], [helper.make_tensor_value_info("Y", out_type, None)]
        )
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("ai.onnx.ml", 1)]
        )
        model.ir_version = 9
        return model

    proto = map_model("DictVectorizer", _S, _F, _F, dict(string_vocabulary=["a", "b", "c"]))
    feed = {"X": {"c": 3.0, "a": 1.5}}
    np.testing.assert_array_equal(jaxonnx.load(proto).run(None, feed)[0], _onnxruntime(proto, feed)[0])
    for cast_to, out_type in (("TO_FLOAT", _F), ("TO_INT64", _I)):
        for form in ("DENSE", "SPARSE"):
            proto = map_model("CastMap", _I, _F, out_type, dict(cast_to=cast_to, map_form=form, max_map=5))
            feed = {"X": {3: 1.5, 0: 2.0}}
            np.testing.assert_array_equal(jaxonnx.load(proto).run(None, feed)[0], _onnxruntime(proto, feed)[0])


# onnxruntime 1.32 numbers TreeEnsemble-5's post transforms as its own enum (1 LOGISTIC,
# 2 SOFTMAX) where the text says 1 SOFTMAX, 2 LOGISTIC: its run gets the swapped number.
@pytest.mark.parametrize(
    ("aggregate", "post_transform", "onnxruntime_number"), [(0, 2, 1), (2, 0, 0), (3, 1, 2), (1, 3, 3)]
)
def test_tree_ensemble_5_membership_missing_values_aggregates(aggregate, post_transform, onnxruntime_number):
    # Tree 0: feature 0 in {1, 3} (NaN goes true), then feature 1 <= 0.5; tree 1 one leaf.
    attributes = lambda post: dict(  # noqa: E731
        n_targets=2,
        tree_roots=[0, 2],
        nodes_featureids=[0, 1, 0],
        nodes_modes=numpy_helper.from_array(np.array([6, 0, 0], np.uint8)),
        nodes_splits=numpy_helper.from_array(np.array([0.0, 0.5, 0.0], np.float32)),
        membership_values=numpy_helper.from_array(np.array([1.0, 3.0, np.nan], np.float32)),
        nodes_missing_value_tracks_true=[1, 0, 0],
        nodes_truenodeids=[1, 0, 3],
        nodes_trueleafs=[0, 1, 1],
        nodes_falsenodeids=[2, 1, 3],
        nodes_falseleafs=[1, 1, 1],
        leaf_targetids=[0, 1, 0, 1],
        leaf_weights=numpy_helper.from_array(np.array([1.0, -2.0, 3.0, 0.5], np.float32)),
        aggregate_function=aggregate,
        post_transform=post,
    )
    X = np.array([[1.0, 0.0], [3.0, 1.0], [2.0, 0.0], [np.nan, 0.25]], np.float32)
    ours = jaxonnx.load(_node_model("TreeEnsemble", [("X", _F)], [("Y", _F)], attributes(post_transform), opset=5))
    expected = _onnxruntime(
        _node_model("TreeEnsemble", [("X", _F)], [("Y", _F)], attributes(onnxruntime_number), opset=5), {"X": X}
    )[0]
    np.testing.assert_allclose(np.asarray(ours(X)[0]), expected, rtol=1e-5, atol=1e-6)


def test_zipmap_with_integer_labels_runs_under_jit_as_dicts_of_arrays():
    proto = _node_model("ZipMap", [("X", _F)], [], dict(classlabels_int64s=[7, 3]), opset=1)
    proto.graph.output.append(
        helper.make_value_info(
            "Z",
            helper.make_sequence_type_proto(helper.make_map_type_proto(_I, helper.make_tensor_type_proto(_F, None))),
        )
    )
    proto.graph.node[0].output.append("Z")
    model = jaxonnx.load(proto)
    X = np.array([[0.25, 0.75], [1.0, 0.0]], np.float32)
    (eager,) = model(X)
    assert eager == [{7: 0.25, 3: 0.75}, {7: 1.0, 3: 0.0}] and all(
        type(v) is float for row in eager for v in row.values()
    )
    (jitted,) = jax.jit(model)(X)
    assert [{k: float(v) for k, v in row.items()} for row in jitted] == eager


def test_one_hot_encoder_without_zeros_refuses_an_unknown_category():
    proto = _node_model("OneHotEncoder", [("X", _S)], [("Y", _F)], dict(cats_strings=["a", "b"], zeros=0), opset=1)
    with pytest.raises(jaxonnx.JaxOnnxError, match="none of its categories"):
        jaxonnx.load(proto).run(None, {"X": np.array(["a", "z"], dtype=object)})
    # Numbers compile, where values cannot raise: the row of an unknown entry is NaN.
    proto = _node_model("OneHotEncoder", [("X", _I)], [("Y", _F)], dict(cats_int64s=[1, 2], zeros=0), opset=1)
    for model in (jaxonnx.load(proto), jax.jit(jaxonnx.load(proto))):
        (encoded,) = model(np.array([1, 5], np.int64))
        np.testing.assert_array_equal(np.asarray(encoded), [[1.0, 0.0], [np.nan, np.nan]])
