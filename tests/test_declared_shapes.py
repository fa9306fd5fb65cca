"""Declared shapes that disagree with the computed ones, as onnxruntime treats them: a graph
output or a value_info entry of another shape warns once (DeclaredShapeWarning, naming the
value, the declaration and the computed shape) and the computed value goes on; graph inputs
stay strict, and so do element types."""

from __future__ import annotations

import re
import warnings

import jax
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import jaxonnx

vi = helper.make_tensor_value_info


def _crnn_that_lies(*, lying_value_info=True, value_info_type=T.FLOAT) -> onnx.ModelProto:
    """A CRNN head like a captcha OCR model's (conv features, one column per time step, a
    classifier over every step), whose output is declared [1, seqlen] while it computes
    [time, batch, classes], as a PyTorch 1.9 export shipped in a package declares it."""
    rng = np.random.default_rng(31)
    conv_w = rng.standard_normal((4, 1, 3, 3)).astype(np.float32) * 0.3
    classes_w = rng.standard_normal((4 * 4, 11)).astype(np.float32) * 0.3
    nodes = [
        helper.make_node("Conv", ["image", "conv_w"], ["features"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["features"], ["relu"], name="relu"),
        # [N, C, H, W] -> [W, N, C, H] -> [W, N, C*H]: one column per time step.
        helper.make_node("Transpose", ["relu"], ["columns"], name="to_time_major", perm=[3, 0, 1, 2]),
        helper.make_node("Reshape", ["columns", "steps_shape"], ["steps"], name="flatten_columns"),
        helper.make_node("MatMul", ["steps", "classes_w"], ["logits"], name="classifier"),
        helper.make_node("LogSoftmax", ["logits"], ["387"], name="log_probs", axis=2),
    ]
    graph = helper.make_graph(
        nodes,
        "crnn",
        [vi("image", T.FLOAT, [1, 1, 4, 20])],
        [vi("387", T.FLOAT, [1, "seqlen"])],
        initializer=[
            numpy_helper.from_array(conv_w, "conv_w"),
            numpy_helper.from_array(classes_w, "classes_w"),
            numpy_helper.from_array(np.array([20, 1, 16], np.int64), "steps_shape"),
        ],
    )
    if lying_value_info:
        # The exporter's shape inference wrote a stale declaration for an inner value too.
        graph.value_info.append(vi("logits", value_info_type, [1, "seqlen", 11]))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    return model


IMAGE = np.random.default_rng(0).standard_normal((1, 1, 4, 20)).astype(np.float32)


def _shape_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, jaxonnx.DeclaredShapeWarning)]


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_a_lying_output_declaration_warns_once_and_returns_what_onnxruntime_returns(jit, run_onnxruntime):
    proto = _crnn_that_lies()
    (expected,) = run_onnxruntime(proto, {"image": IMAGE})
    assert expected.shape == (20, 1, 11)
    model = jaxonnx.load(proto)
    run = jax.jit(model) if jit else model
    with pytest.warns(jaxonnx.DeclaredShapeWarning) as record:
        (y,) = run(IMAGE)
        (again,) = run(IMAGE + 1)  # warned once per value, not once per call
    messages = _shape_warnings(record)
    assert len(messages) == 2, messages
    output_message = next(m for m in messages if "'387'" in m)
    assert re.search(
        r"The graph output '387' is declared tensor\(float\)\[1, seqlen\] but the graph computed "
        r"shape \[20, 1, 11\]",
        output_message,
    )
    inner_message = next(m for m in messages if "'logits'" in m)
    assert "tensor(float)[1, seqlen, 11]" in inner_message and "[20, 1, 11]" in inner_message
    assert "'classifier'" in inner_message
    np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-5, atol=1e-5)
    assert again.shape == (20, 1, 11)
    # A second call warns no more.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(IMAGE)


def test_the_warning_can_be_filtered_and_x64_off_changes_nothing(x64_off, run_onnxruntime):
    (expected,) = run_onnxruntime(_crnn_that_lies(), {"image": IMAGE})
    model = jaxonnx.load(_crnn_that_lies())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=jaxonnx.DeclaredShapeWarning)
        (y,) = jax.jit(model)(IMAGE)
        (eager,) = model(IMAGE)
    np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(eager), expected, rtol=1e-5, atol=1e-5)
    assert issubclass(jaxonnx.DeclaredShapeWarning, UserWarning)


def test_graph_inputs_stay_strict_like_onnxruntime():
    proto = _crnn_that_lies(lying_value_info=False)
    wrong = np.zeros((1, 1, 4, 21), np.float32)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="(?i)invalid dimensions|got invalid|index: 3"):
        session.run(None, {"image": wrong})
    model = jaxonnx.load(proto)
    for run in (model, jax.jit(model)):
        with pytest.raises(
            jaxonnx.OnnxValidationError, match=r"The input 'image' is declared with shape \[1, 1, 4, 20\]"
        ):
            run(wrong)


def test_an_element_type_that_disagrees_stays_an_error_like_onnxruntime():
    proto = _crnn_that_lies(value_info_type=T.INT64)
    with pytest.raises(Exception, match="(?i)type"):
        ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    model = jaxonnx.load(proto)
    for run in (model, jax.jit(model)):
        with pytest.raises(
            jaxonnx.OnnxTypeError,
            match=r"The value 'logits' is declared tensor\(int64\)\[1, seqlen, 11\] in the graph's value_info "
            r"but node 'classifier' \(MatMul-13\) computed tensor\(float\)",
        ):
            run(IMAGE)


def test_declarations_that_agree_or_say_nothing_do_not_warn():
    proto = _crnn_that_lies(lying_value_info=False)
    del proto.graph.output[:]
    proto.graph.output.append(vi("387", T.FLOAT, ["time", "batch", 11]))
    proto.graph.value_info.append(vi("logits", T.FLOAT, [20, None, "classes"]))
    proto.graph.value_info.append(vi("relu", T.FLOAT, None))
    model = jaxonnx.load(proto)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert model(IMAGE)[0].shape == (20, 1, 11)
        assert jax.jit(model)(IMAGE)[0].shape == (20, 1, 11)
