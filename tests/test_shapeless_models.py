"""Models whose declarations leave things out, as the ONNX IR allows, load and run.

``helper.make_tensor_value_info(name, elem_type, None)`` (no shape field: any shape),
value_info entries without a type or with an UNDEFINED element type, outputs without a
type, and dim_param / unknown dims. onnx's checker refuses some of these (it is stricter
than the IR); onnxruntime and onnx.reference run them, and so does jaxonnx, while every
other complaint of the checker still refuses the model.
"""

from __future__ import annotations

import jax
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import jaxonnx
import jaxonnx.backend

vi = helper.make_tensor_value_info


def _model(nodes, inputs, outputs, value_info=(), *, opset=21) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "shapeless", inputs, outputs, value_info=list(value_info))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def _flatten_then_identity(inputs, outputs, value_info=()) -> onnx.ModelProto:
    return _model(
        [helper.make_node("Flatten", ["x"], ["flat"], axis=1), helper.make_node("Identity", ["flat"], ["y"])],
        inputs,
        outputs,
        value_info,
    )


def _untyped(name: str) -> onnx.ValueInfoProto:
    return onnx.ValueInfoProto(name=name)


X = vi("x", TensorProto.FLOAT, [2, 3, 2])
Y = vi("y", TensorProto.FLOAT, [2, 6])
CASES = {
    "output without shape": ([X], [vi("y", TensorProto.FLOAT, None)], []),
    "input without shape": ([vi("x", TensorProto.FLOAT, None)], [Y], []),
    "input and output without shape": ([vi("x", TensorProto.FLOAT, None)], [vi("y", TensorProto.FLOAT, None)], []),
    "value_info without shape": ([X], [Y], [vi("flat", TensorProto.FLOAT, None)]),
    "value_info without type": ([X], [Y], [_untyped("flat")]),
    "output without type": ([X], [_untyped("y")], []),
    "symbolic and unknown dims": (
        [vi("x", TensorProto.FLOAT, ["batch", None, 2])],
        [vi("y", TensorProto.FLOAT, ["batch", None])],
        [],
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_shapeless_declaration_loads_and_runs_like_onnxruntime_and_the_reference(case, run_onnxruntime):
    proto = _flatten_then_identity(*CASES[case])
    untouched = proto.SerializeToString()
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    (expected,) = ReferenceEvaluator(proto).run(None, {"x": x})
    (from_onnxruntime,) = run_onnxruntime(untouched, {"x": x})
    np.testing.assert_array_equal(from_onnxruntime, expected)
    model = jaxonnx.load(proto)
    assert proto.SerializeToString() == untouched  # the checker's stand-ins are undone
    for (y,) in (model(x), jax.jit(model)(x), tuple(jaxonnx.backend.prepare(proto).run([x]))):
        assert y.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(y), expected)


def test_a_shapeless_input_takes_any_rank_and_its_output_any_shape():
    proto = _flatten_then_identity([vi("x", TensorProto.FLOAT, None)], [vi("y", TensorProto.FLOAT, None)])
    model = jaxonnx.load(proto)
    reference = ReferenceEvaluator(proto)
    for shape in [(4,), (2, 3), (2, 3, 2), (1, 0, 5)]:
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        (expected,) = reference.run(None, {"x": x})
        (y,) = jax.jit(model)(x)
        assert y.shape == expected.shape
        np.testing.assert_array_equal(np.asarray(y), expected)
    # The element type is still checked.
    with pytest.raises(jaxonnx.OnnxTypeError, match=r"The input 'x' is declared tensor\(float\) but got dtype int32"):
        model(np.ones((2, 2), np.int32))


def test_symbolic_and_unknown_dims_take_any_length_but_the_rank_is_checked():
    model = jaxonnx.load(_flatten_then_identity(*CASES["symbolic and unknown dims"]))
    for shape in [(1, 1, 2), (5, 7, 2)]:
        (y,) = model(np.zeros(shape, np.float32))
        assert y.shape == (shape[0], shape[1] * 2)
    with pytest.raises(
        jaxonnx.OnnxValidationError, match=r"declared with shape \['batch', None, 2\] but got shape \[2, 3\]"
    ):
        model(np.zeros((2, 3), np.float32))
    with pytest.raises(
        jaxonnx.OnnxValidationError, match=r"declared with shape \['batch', None, 2\] but got shape \[2, 3, 3\]"
    ):
        model(np.zeros((2, 3, 3), np.float32))


def test_an_output_with_an_undefined_element_type_and_no_shape_takes_what_the_graph_computes():
    # onnxruntime refuses element type 0 ("Invalid tensor data type 0"); onnx.reference runs it.
    proto = _flatten_then_identity(
        [X], [vi("y", TensorProto.UNDEFINED, None)], [vi("flat", TensorProto.UNDEFINED, [2, 6])]
    )
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    (expected,) = ReferenceEvaluator(proto).run(None, {"x": x})
    (y,) = jax.jit(jaxonnx.load(proto))(x)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(y), expected)


def test_a_shapeless_compress_model_runs_with_a_size_hint_under_jit():
    proto = _model(
        [helper.make_node("Compress", ["x", "keep"], ["picked"], axis=0)],
        [vi("x", TensorProto.FLOAT, None), vi("keep", TensorProto.BOOL, None)],
        [vi("picked", TensorProto.FLOAT, None)],
    )
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    keep = np.array([False, True, False, True])
    (expected,) = ReferenceEvaluator(proto).run(None, {"x": x, "keep": keep})
    np.testing.assert_array_equal(jaxonnx.load(proto)(x, keep)[0], expected)
    (hinted,) = jax.jit(jaxonnx.load(proto, size_hints={"picked": 3}))(x, keep)
    np.testing.assert_array_equal(np.asarray(hinted), np.concatenate([expected, np.zeros((1, 2), np.float32)]))


# --------------------------------------------------------------------------- the checker's protections stay


def test_the_checkers_other_complaints_still_refuse_the_model():
    # A node reading a value that nothing produces, in a model with shape-less declarations.
    unsorted = _model(
        [helper.make_node("Identity", ["nowhere"], ["y"])],
        [vi("x", TensorProto.FLOAT, None)],
        [vi("y", TensorProto.FLOAT, None)],
    )
    with pytest.raises(jaxonnx.ModelLoadError, match=r"does not pass onnx's checker.*nowhere"):
        jaxonnx.load(unsorted)
    # A graph input without a type: the IR requires one, and onnxruntime refuses it too.
    untyped_input = _flatten_then_identity([_untyped("x")], [Y])
    with pytest.raises(
        jaxonnx.ModelLoadError, match=r"does not pass onnx's checker: Field 'type' of 'value_info' is required"
    ):
        jaxonnx.load(untyped_input)
    # A graph output whose tensor type has no element type field at all.
    no_elem_type = onnx.ValueInfoProto(name="y")
    no_elem_type.type.tensor_type.SetInParent()
    with pytest.raises(jaxonnx.ModelLoadError, match=r"Field 'elem_type' of 'type' is required"):
        jaxonnx.load(_flatten_then_identity([X], [no_elem_type]))
