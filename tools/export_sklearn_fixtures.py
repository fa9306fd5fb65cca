"""Exports the scikit-learn fixtures that ``tests/test_ml_domain.py`` runs through jaxonnx.

Small scikit-learn models (fixed seeds, data from scikit-learn's bundled iris set or
generated: nothing is downloaded), converted with skl2onnx to the ai.onnx.ml operators. For
every model it writes, under ``tests/fixtures/sklearn/``:

- ``NAME.onnx``: the converted model, doc strings stripped;
- ``NAME.npz``: the inputs (``input_<graph input name>``) and scikit-learn's own results:
  ``expected_label`` (``predict`` of a classifier), ``expected_probabilities``
  (``predict_proba``), ``expected_value`` (``predict`` of a regressor, or ``transform``).

The tests need neither scikit-learn nor skl2onnx: they compare jaxonnx with these stored
results and with onnxruntime.

Run (needs the ``sklearn`` extra): ``pip install scikit-learn skl2onnx && python tools/export_sklearn_fixtures.py``.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
from skl2onnx import to_onnx
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_iris
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier, RandomForestRegressor
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import Binarizer, Normalizer, OneHotEncoder, StandardScaler
from sklearn.svm import SVC, SVR

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "fixtures", "sklearn")
#: The opsets the fixtures are converted to: the default domain's 18 and ai.onnx.ml 3 (the
#: TreeEnsembleClassifier/Regressor version onnxruntime runs natively).
OPSETS = {"": 18, "ai.onnx.ml": 3}


def iris():
    data = load_iris()
    X = data.data.astype(np.float32)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(X))
    return X[order], data.target[order].astype(np.int64), np.asarray(data.target_names)[data.target[order]]


def regression(rows=80, features=4, targets=1, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, features)).astype(np.float32)
    w = rng.standard_normal((features, targets))
    y = X @ w + 0.1 * rng.standard_normal((rows, targets))
    return X, (y[:, 0] if targets == 1 else y)


def save(name: str, model, onnx_model: onnx.ModelProto, inputs: dict, **expected) -> None:
    for node in onnx_model.graph.node:
        node.doc_string = ""
    onnx_model.doc_string = ""
    onnx.checker.check_model(onnx_model)
    onnx.save(onnx_model, os.path.join(OUT, f"{name}.onnx"))
    arrays = {f"input_{k}": v for k, v in inputs.items()}
    arrays.update({f"expected_{k}": np.asarray(v) for k, v in expected.items()})
    # String arrays are stored as fixed-width unicode, so np.load needs no pickle.
    arrays = {k: (v.astype(str) if v.dtype == object else v) for k, v in arrays.items()}
    np.savez_compressed(os.path.join(OUT, f"{name}.npz"), **arrays)
    sizes = os.path.getsize(os.path.join(OUT, f"{name}.onnx")), os.path.getsize(os.path.join(OUT, f"{name}.npz"))
    ops = sorted({n.op_type for n in onnx_model.graph.node})
    print(f"{name}: {type(model).__name__}, {sizes[0]} + {sizes[1]} bytes, ops {', '.join(ops)}")


def classifier(name: str, model, X, y, test, *, zipmap=False) -> None:
    model.fit(X, y)
    converted = to_onnx(model, X[:1], target_opset=OPSETS, options={id(model): {"zipmap": zipmap}})
    save(
        name,
        model,
        converted,
        {converted.graph.input[0].name: test},
        label=model.predict(test),
        probabilities=model.predict_proba(test),
    )


def regressor(name: str, model, X, y, test) -> None:
    model.fit(X, y)
    converted = to_onnx(model, X[:1], target_opset=OPSETS)
    save(name, model, converted, {converted.graph.input[0].name: test}, value=model.predict(test))


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    X, y, names = iris()
    train, test = X[:120], X[120:]
    classifier(
        "logistic_regression",
        Pipeline([("scale", StandardScaler()), ("lr", LogisticRegression(max_iter=500))]),
        train,
        y[:120],
        test,
    )
    classifier(
        "gradient_boosting",
        GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0),
        train,
        y[:120],
        test,
    )
    binary = (y == 1).astype(np.int64)
    classifier(
        "gradient_boosting_binary",
        GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0),
        train,
        binary[:120],
        test,
    )
    classifier(
        "random_forest", RandomForestClassifier(n_estimators=10, max_depth=5, random_state=0), train, y[:120], test
    )
    classifier(
        "random_forest_binary",
        RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0),
        train,
        binary[:120],
        test,
    )
    classifier("svc", SVC(probability=True, random_state=0), train, y[:120], test)
    # String labels, with ZipMap: a list of {label: probability} per row.
    classifier("string_labels_zipmap", LogisticRegression(max_iter=500), train, names[:120], test, zipmap=True)

    Xr, yr = regression()
    regressor("linear_regression", LinearRegression(), Xr[:60], yr[:60], Xr[60:])
    regressor(
        "random_forest_regressor",
        RandomForestRegressor(n_estimators=10, max_depth=5, random_state=0),
        Xr[:60],
        yr[:60],
        Xr[60:],
    )
    regressor("svr", SVR(C=2.0), Xr[:60], yr[:60], Xr[60:])

    # Preprocessing: a categorical column one-hot encoded, missing values imputed, then
    # normalized rows and binarized columns side by side.
    rng = np.random.default_rng(2)
    P = rng.standard_normal((40, 4)).astype(np.float32)
    P[:, 0] = rng.integers(0, 3, 40)
    P[rng.random((40, 4)) < 0.15] = np.nan
    P[:, 0] = np.nan_to_num(P[:, 0], nan=1.0)
    pipeline = ColumnTransformer(
        [
            ("onehot", OneHotEncoder(handle_unknown="ignore", sparse_output=False), [0]),
            ("normalized", Pipeline([("impute", SimpleImputer(strategy="mean")), ("norm", Normalizer())]), [1, 2, 3]),
            (
                "binarized",
                Pipeline([("impute", SimpleImputer(strategy="median")), ("binary", Binarizer(threshold=0.2))]),
                [1, 2],
            ),
        ]
    )
    pipeline.fit(P[:30])
    converted = to_onnx(pipeline, P[:1], target_opset=OPSETS)
    save(
        "preprocessing", pipeline, converted, {converted.graph.input[0].name: P[30:]}, value=pipeline.transform(P[30:])
    )


if __name__ == "__main__":
    main()
