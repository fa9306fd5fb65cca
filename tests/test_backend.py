"""onnx's own BackendTest through `jaxonnx.backend`, for every node case whose ops are all supported.

This is onnx's node test suite as onnx runs it: inputs as BackendTest hands them, onnx's
per-case tolerances. The regex of included cases is built from the registry, so
registering an op brings its onnx node cases in automatically. Cases that cannot pass have
their reason in ``tests/node_suite_skips`` and are skipped with it; cases that are not
included (and device variants this machine has no device for) are removed.
"""

import re
import unittest
import unittest.mock
import warnings

import numpy as np
import onnx
import onnx.backend.test
import onnx.backend.test.loader
import pytest
from _node_cases import node_cases, supported_case_names

import jaxonnx
import jaxonnx.backend
from tests.node_suite_skips import all_skips

SUPPORTED_CASES = supported_case_names()
_DEVICES = [d for d in ("cpu", "cuda") if jaxonnx.backend.supports_device(d.upper())]
_PATTERN = re.compile("^(" + "|".join(map(re.escape, SUPPORTED_CASES)) + ")_(" + "|".join(_DEVICES) + ")$")

# BackendTest would build onnx's node cases itself (importing every case module runs its
# generators: ~8 s per process); it gets those built once per run (tests/_node_cases.py).
with (
    warnings.catch_warnings(),
    unittest.mock.patch.object(onnx.backend.test.loader, "load_node_model_tests", lambda: list(node_cases())),
):
    warnings.simplefilter("ignore", RuntimeWarning)
    _backend_test = onnx.backend.test.BackendTest(jaxonnx.backend, __name__)
# BackendTest would turn every excluded case into a skip; keep only ours instead.
for _category, _items in _backend_test._test_items.items():
    for _name in [n for n in _items if not _PATTERN.match(n)]:
        del _items[_name]
SKIPS = all_skips()
for _items in _backend_test._test_items.values():
    for _name, _item in _items.items():
        _case = _name.rsplit("_", 1)[0]
        if _case in SKIPS:
            _item.func = unittest.skip(SKIPS[_case])(_item.func)
globals().update(_backend_test.test_cases)


def test_every_supported_node_case_is_collected():
    # onnx 1.23 has 27 node cases built from only Compress, Flatten, GatherElements, Where,
    # Slice, and more for Constant and Identity on tensors.
    five_ops = {"Compress", "Flatten", "GatherElements", "Where", "Slice"}
    only_five = [c for c in node_cases() if {n.op_type for n in c.model.graph.node} <= five_ops]
    assert len(only_five) >= 27
    assert {c.name for c in only_five} <= set(SUPPORTED_CASES)
    collected = {name for items in _backend_test._test_items.values() for name in items}
    assert collected == {f"{name}_{device}" for name in SUPPORTED_CASES for device in _DEVICES}


def test_backend_reports_devices():
    assert jaxonnx.backend.supports_device("CPU")
    assert jaxonnx.backend.supports_device("cpu:0")
    assert not jaxonnx.backend.supports_device("TPU")


@pytest.mark.parametrize("device", ["CUDA:abc", "CPU:", "CPU:-1", "CPU:0:1", "CPU:1.0", "CPU:99", "CPU:١", ""])
def test_unparsable_or_absent_devices_are_unsupported(device):
    assert jaxonnx.backend.supports_device(device) is False
    assert jaxonnx.backend.is_compatible(None, device) is False


X = np.arange(10, dtype=np.float32)
STARTS, ENDS, STEPS = np.array([8]), np.array([0]), np.array([-2])
# `axes` omitted: the 4th input name is "".
SLICE = onnx.helper.make_node("Slice", ["x", "s", "e", "", "st"], ["y"], name="cut")


def test_run_node_maps_inputs_onto_the_non_empty_input_names():
    expected = X[8:0:-2]
    (y,) = jaxonnx.backend.run_node(SLICE, [X, STARTS, ENDS, STEPS])
    np.testing.assert_array_equal(y, expected)
    (y,) = jaxonnx.backend.run_node(SLICE, {"x": X, "s": STARTS, "e": ENDS, "st": STEPS})
    np.testing.assert_array_equal(y, expected)
    # A None stays None: an omitted optional input.
    node = onnx.helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])
    (y,) = jaxonnx.backend.run_node(node, [X, STARTS, ENDS, None, STEPS])
    np.testing.assert_array_equal(y, expected)
    (y,) = jaxonnx.backend.run_node(node, {"x": X, "s": STARTS, "e": ENDS, "a": None, "st": None})
    np.testing.assert_array_equal(y, X[8:0])


@pytest.mark.parametrize(
    "inputs, message",
    [
        (
            [X, STARTS, ENDS],
            r'^Node \'cut\' \(Slice-13\) names 4 inputs \(x, s, e, st\) \(the omitted input "" takes no value\), got 3 values\.$',
        ),
        (
            [X, STARTS, ENDS, None, STEPS],
            r'^Node \'cut\' \(Slice-13\) names 4 inputs \(x, s, e, st\) \(the omitted input "" takes no value\), got 5 values\.$',
        ),
        (
            {"x": X, "s": STARTS, "e": ENDS, "st": STEPS, "": np.array([0])},
            r"^Node 'cut' \(Slice-13\) takes the inputs 'x', 's', 'e', 'st'; got values for '', which it does not take\.$",
        ),
        (
            {"x": X, "s": STARTS, "st": STEPS},
            r"^Node 'cut' \(Slice-13\) takes the inputs 'x', 's', 'e', 'st'; got no value for 'e'\.$",
        ),
        (
            {"x": X, "s": STARTS, "st": STEPS, "axes": np.array([0])},
            r"^Node 'cut' \(Slice-13\) takes the inputs 'x', 's', 'e', 'st'; got no value for 'e' and values for 'axes', which it does not take\.$",
        ),
    ],
)
def test_run_node_checks_the_number_of_inputs(inputs, message):
    with pytest.raises(jaxonnx.OnnxValidationError, match=message):
        jaxonnx.backend.run_node(SLICE, inputs)


def test_run_node_refuses_none_for_a_required_input():
    node = onnx.helper.make_node("Slice", ["x", "s", "e"], ["y"], name="cut")
    with pytest.raises(
        jaxonnx.OnnxValidationError,
        match=r"^Node 'cut' \(Slice-13, inputs x: float\[10\], s: None, e: int64\[1\]\) failed: Slice-13 needs its input `starts` \(input 1\), got None",
    ):
        jaxonnx.backend.run_node(node, [X, None, ENDS])


def test_backend_validates_concrete_inputs_like_the_eager_path():
    from onnx import TensorProto, helper

    node = helper.make_node("GatherElements", ["data", "indices"], ["y"], axis=0)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("data", TensorProto.FLOAT, [2, 2]),
            helper.make_tensor_value_info("indices", TensorProto.INT64, [2, 2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    rep = jaxonnx.backend.prepare(model)
    data = np.arange(4, dtype=np.float32).reshape(2, 2)
    (y,) = rep.run([data, np.array([[1, 0], [0, -1]], dtype=np.int64)])
    np.testing.assert_array_equal(y, [[2, 1], [0, 3]])
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"index 2 at position \(1, 1\)"):
        rep.run([data, np.array([[1, 0], [0, 2]], dtype=np.int64)])
    # The failed call left nothing behind.
    (y,) = rep.run({"data": data, "indices": np.zeros((2, 2), np.int64)})
    np.testing.assert_array_equal(y, [[0, 1], [0, 1]])


if __name__ == "__main__":
    unittest.main()


# --------------------------------------------------------------------------- strict warnings, peers' versions


@pytest.mark.parametrize(
    ("module", "ignored"),
    [
        ("onnx.backend.test.case.node.slice", True),
        ("onnx.reference.ops.op_where", True),
        ("onnx", True),
        ("jaxonnx._core.model", False),
        ("onnxruntime.capi", False),
        ("tests.test_backend", False),
    ],
)
def test_deprecation_warnings_are_errors_except_inside_onnxs_own_modules(module, ignored):
    # What numpy 2.5 raises where onnx's test-case modules set an array's shape.
    def warn():
        warnings.warn_explicit(
            "Setting the shape on a NumPy array has been deprecated in NumPy 2.5.",
            DeprecationWarning,
            filename=f"{module.replace('.', '/')}.py",
            lineno=1,
            module=module,
        )

    if ignored:
        warn()
    else:
        with pytest.raises(DeprecationWarning, match="Setting the shape"):
            warn()


def test_a_kernel_onnxruntime_lacks_skips_naming_its_version_and_the_kernel(run_onnxruntime, monkeypatch):
    import onnxruntime
    from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as OnnxruntimeNotImplemented

    # onnxruntime's own error for a missing kernel (1.30 has none for int8 Where); no
    # version is hard-coded, so the error is raised here as onnxruntime raises it.
    def no_kernel(*args, **kwargs):
        raise OnnxruntimeNotImplemented(
            "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for Where(16) node with name ''"
        )

    monkeypatch.setattr(onnxruntime, "InferenceSession", no_kernel)
    node = onnx.helper.make_node("Where", ["c", "x", "y"], ["z"])
    graph = onnx.helper.make_graph(
        [node],
        "missing_kernel",
        [
            onnx.helper.make_tensor_value_info(n, t, [1])
            for n, t in [("c", onnx.TensorProto.BOOL), ("x", onnx.TensorProto.INT8), ("y", onnx.TensorProto.INT8)]
        ],
        [onnx.helper.make_tensor_value_info("z", onnx.TensorProto.INT8, [1])],
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 16)])
    with pytest.raises(pytest.skip.Exception) as skipped:
        run_onnxruntime(model, {"c": np.array([True]), "x": np.array([1], np.int8), "y": np.array([2], np.int8)})
    assert str(skipped.value) == (
        f"onnxruntime {onnxruntime.__version__} does not implement this: "
        "Could not find an implementation for Where(16) node with name ''"
    )
