"""The x64 policy: JAX's default 32-bit mode is a supported way to run a model.

With ``jax_enable_x64`` off a 64-bit ONNX type computes as its 32-bit JAX counterpart;
values jaxonnx sees are exact or raise; static values stay exact numpy int64; one
``X64Warning`` per model lists what runs in 32 bits. With x64 on nothing changes.
(The suite runs with x64 on; the ``x64_off`` fixture turns it off for one test.)
"""

from __future__ import annotations

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import jaxonnx
from jaxonnx._core.dtypes import as_jax

vi = helper.make_tensor_value_info
INT64_MIN = np.iinfo(np.int64).min


def _model(nodes, inputs, outputs, initializers=(), *, opset=21) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def _load_quietly(model, **kwargs) -> jaxonnx.Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxonnx.X64Warning)
        return jaxonnx.load(model, **kwargs)


def _gather_model() -> onnx.ModelProto:
    """What torch.onnx.export writes for torch.gather: float32 data, int64 indices."""
    return _model(
        [helper.make_node("GatherElements", ["data", "indices"], ["y"], name="gather", axis=1)],
        [vi("data", TensorProto.FLOAT, ["n", 4]), vi("indices", TensorProto.INT64, ["n", 2])],
        [vi("y", TensorProto.FLOAT, ["n", 2])],
    )


DATA = np.arange(12, dtype=np.float32).reshape(3, 4)
INDICES = np.array([[3, 0], [1, -1], [2, 2]], np.int64)


# --------------------------------------------------------------------------- as_jax


@pytest.mark.usefixtures("x64_off")
@pytest.mark.parametrize(
    ("values", "wide", "narrow"),
    [
        ([-(2**31), 7, 2**31 - 1], np.int64, np.int32),
        ([0, 2**32 - 1], np.uint64, np.uint32),
        ([0.5, -1e30, np.inf], np.float64, np.float32),
        ([1 + 2j, -0.25j], np.complex128, np.complex64),
    ],
)
def test_x64_off_as_jax_gives_the_32_bit_counterpart(values, wide, narrow):
    array = np.array(values, wide)
    converted = as_jax(array, what="input 'v'")
    assert isinstance(converted, jax.Array) and converted.dtype == narrow
    np.testing.assert_array_equal(np.asarray(converted), array.astype(narrow))


@pytest.mark.usefixtures("x64_off")
@pytest.mark.parametrize(
    ("value", "dtype", "shown"),
    [
        ([1, 2**31], np.int64, "2147483648 at position (1,)"),
        ([-(2**31) - 1], np.int64, "-2147483649"),
        ([2**32], np.uint64, "4294967296"),
        (2**40, np.int64, "1099511627776"),
    ],
)
def test_x64_off_as_jax_refuses_an_integer_that_does_not_fit(value, dtype, shown):
    with pytest.raises(
        jaxonnx.OnnxTypeError, match=rf"^The input 'v' holds the \w+ value {re.escape(shown)}.*does not fit"
    ):
        as_jax(np.array(value, dtype), what="input 'v'")


def test_x64_on_as_jax_keeps_every_64_bit_value():
    for value, dtype in [(2**40, np.int64), (2**63 + 1, np.uint64), (0.1, np.float64), (0.1 + 1j, np.complex128)]:
        converted = as_jax(np.array([value], dtype))
        assert converted.dtype == dtype and np.asarray(converted)[0] == np.array(value, dtype)


# --------------------------------------------------------------------------- graph inputs and outputs


@pytest.mark.parametrize("op_type, formal", [("Reshape", "shape"), ("Expand", "shape"), ("Tile", "repeats")])
def test_x64_off_a_numpy_int64_input_that_decides_a_shape_is_accepted(x64_off, run_onnxruntime, op_type, formal):
    # The model narrows a numpy int64 graph input to numpy int32 (as jax.jit would) and
    # keeps it numpy, so it still decides the shape; formals that name only int64 take it.
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    value = {"Reshape": np.array([3, 2]), "Expand": np.array([2, 2, 3]), "Tile": np.array([2, 1])}[op_type]
    graph = helper.make_graph(
        [helper.make_node(op_type, ["data", formal], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("data", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info(formal, TensorProto.INT64, [len(value)]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    proto.ir_version = 9
    (expected,) = run_onnxruntime(proto, {"data": data, formal: value})
    with pytest.warns(jaxonnx.X64Warning):
        model = jaxonnx.load(proto)
    np.testing.assert_array_equal(model(data, value)[0], expected)
    np.testing.assert_array_equal(jax.jit(lambda d: model(d, value))(data)[0], expected)


def test_x64_off_int64_indices_run_eagerly_and_under_jit_as_onnxruntime_does(x64_off, run_onnxruntime):
    proto = _gather_model()
    (expected,) = run_onnxruntime(proto, {"data": DATA, "indices": INDICES})
    with pytest.warns(jaxonnx.X64Warning, match=r"input 'indices' \(int64 as int32\)"):
        model = jaxonnx.load(proto)
    # jax.jit turns the numpy int64 array into int32 before jaxonnx sees it: accepted.
    (jitted,) = jax.jit(model)(DATA, INDICES)
    (eager,) = model(DATA, INDICES)
    (given_int32,) = model(jnp.asarray(DATA), jnp.asarray(INDICES))
    for y in (jitted, eager, given_int32):
        assert y.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(y), expected)
    assert not jax.config.jax_enable_x64


def test_x64_off_an_eager_int64_input_that_does_not_fit_raises_naming_it(x64_off):
    model = _load_quietly(_gather_model())
    indices = INDICES.copy()
    indices[2, 1] = 2**40
    with pytest.raises(
        jaxonnx.OnnxTypeError, match=r"The input 'indices' holds the int64 value 1099511627776 at position \(2, 1\)"
    ):
        model(DATA, indices)
    with pytest.raises(jaxonnx.OnnxTypeError, match=r"The input 'indices' holds the int64 value"):
        model.run({"data": DATA, "indices": indices})


def test_x64_off_errors_say_that_jax_jit_converted_the_array(x64_off):
    proto = _model(
        [helper.make_node("Identity", ["u"], ["y"])],
        [vi("u", TensorProto.UINT64, [2])],
        [vi("y", TensorProto.UINT64, [2])],
    )
    model = _load_quietly(proto)
    # A uint64 input accepts the uint32 array JAX makes of a uint64 one...
    (y,) = jax.jit(model)(np.array([1, 2**32 - 1], np.uint64))
    assert y.dtype == np.uint32 and np.asarray(y).tolist() == [1, 2**32 - 1]
    # ...but an int64 array is the wrong type, and the message says what jax.jit did to it.
    with pytest.raises(
        jaxonnx.OnnxTypeError,
        match=r"The input 'u' is declared tensor\(uint64\) but got dtype int32.*"
        r"jax\.jit converted the int64 array to int32 because jax_enable_x64 is off",
    ):
        jax.jit(model)(np.array([1, 2], np.int64))


def test_x64_off_64_bit_outputs_and_double_inputs_compute_in_32_bits(x64_off, run_onnxruntime):
    proto = _model(
        [
            helper.make_node("GatherElements", ["x", "indices"], ["gathered"], axis=0),
            helper.make_node("Flatten", ["labels"], ["flat_labels"], axis=0),
        ],
        [vi("x", TensorProto.DOUBLE, [3]), vi("indices", TensorProto.INT64, [2]), vi("labels", TensorProto.INT64, [2])],
        [vi("gathered", TensorProto.DOUBLE, [2]), vi("flat_labels", TensorProto.INT64, [1, 2])],
    )
    feed = {
        "x": np.array([0.5, 1.25, -3.0]),
        "indices": np.array([2, 0], np.int64),
        "labels": np.array([-7, 2**31 - 1], np.int64),
    }
    expected = run_onnxruntime(proto, feed)
    with pytest.warns(jaxonnx.X64Warning) as record:
        model = jaxonnx.load(proto)
    assert len(record) == 1  # one warning per model, listing every 64-bit input and output
    message = str(record[0].message)
    for listed in [
        "input 'x' (double as float)",
        "input 'indices' (int64 as int32)",
        "input 'labels' (int64 as int32)",
        "output 'gathered' (double as float)",
        "output 'flat_labels' (int64 as int32)",
    ]:
        assert listed in message
    for outputs in (model(*feed.values()), jax.jit(model)(*feed.values())):
        assert [o.dtype for o in outputs] == [np.float32, np.int32]
        for actual, wanted in zip(outputs, expected):
            np.testing.assert_array_equal(np.asarray(actual), wanted)


def test_x64_off_double_initializers_are_float32_params(x64_off):
    proto = _model(
        [helper.make_node("Where", ["keep", "x", "w"], ["y"])],
        [vi("keep", TensorProto.BOOL, [2]), vi("x", TensorProto.DOUBLE, [2])],
        [vi("y", TensorProto.DOUBLE, [2])],
        [numpy_helper.from_array(np.array([0.5, -1.0]), "w")],
    )
    model = _load_quietly(proto)
    assert model.params["w"].dtype == np.float32
    keep, x = np.array([True, False]), np.array([3.0, 4.0])
    grad = jax.grad(lambda p: jnp.sum(model.apply(p, keep, x)[0]))(model.params)
    np.testing.assert_array_equal(np.asarray(grad["w"]), [0.0, 1.0])
    (y,) = jax.jit(model.apply)(model.params, keep, x)
    np.testing.assert_array_equal(np.asarray(y), np.array([3.0, -1.0], np.float32))


def test_x64_off_static_values_stay_exact_int64(x64_off):
    # INT64_MIN Slice ends and a 2**40 Constant are static: numpy int64 whatever the mode.
    proto = _model(
        [
            helper.make_node("Constant", [], ["big"], value=numpy_helper.from_array(np.array([2**40], np.int64))),
            helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["reversed"]),
            helper.make_node("Slice", ["reversed", "zero", "big"], ["y"]),
        ],
        [vi("x", TensorProto.FLOAT, [5])],
        [vi("y", TensorProto.FLOAT, [5])],
        [
            numpy_helper.from_array(np.array([v], np.int64), k)
            for k, v in {"starts": -1, "ends": INT64_MIN, "axes": 0, "steps": -1, "zero": 0}.items()
        ],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no 64-bit graph input or output: no warning
        model = jaxonnx.load(proto)
    assert model.initializers["ends"].dtype == np.int64 and model.initializers["ends"][0] == INT64_MIN
    x = np.arange(5, dtype=np.float32)
    (y,) = jax.jit(model)(x)
    np.testing.assert_array_equal(np.asarray(y), x[::-1])


def test_x64_off_an_int64_constant_output_that_does_not_fit_raises_naming_the_output(x64_off):
    proto = _model(
        [helper.make_node("Constant", [], ["y"], value=numpy_helper.from_array(np.array([1, 2**40], np.int64)))],
        [],
        [vi("y", TensorProto.INT64, [2])],
    )
    model = _load_quietly(proto)
    with pytest.raises(jaxonnx.OnnxTypeError, match=r"The graph output 'y' holds the int64 value 1099511627776"):
        model()


def test_x64_on_nothing_warns_and_every_type_stays_exact():
    proto = _model(
        [helper.make_node("Where", ["keep", "a", "b"], ["y"])],
        [vi("keep", TensorProto.BOOL, [2]), vi("a", TensorProto.UINT64, [2]), vi("b", TensorProto.UINT64, [2])],
        [vi("y", TensorProto.UINT64, [2])],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = jaxonnx.load(proto)
    a = np.array([2**63 + 1, 5], np.uint64)
    b = np.array([0, 2**64 - 1], np.uint64)
    for (y,) in (model(np.array([True, False]), a, b), jax.jit(model)(np.array([True, False]), a, b)):
        assert y.dtype == np.uint64 and np.asarray(y).tolist() == [2**63 + 1, 2**64 - 1]
    # An int32 array is not an int64 input when x64 is on: no cast, no narrowing note.
    with pytest.raises(
        jaxonnx.OnnxTypeError, match=r"declared tensor\(uint64\) but got dtype uint32; jaxonnx does not cast inputs\.$"
    ):
        model(np.array([True, False]), jnp.asarray(a.astype(np.uint32)), b)
