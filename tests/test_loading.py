"""Loading: sources (path, bytes, ModelProto), refused files, external data kept inside the
model's folder, unsupported ops and opsets, and size hints checked at load time."""

from __future__ import annotations

import os
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import jaxonnx
from jaxonnx._demo import DEMO_PATH

vi = helper.make_tensor_value_info


def _model(nodes, inputs, outputs, initializers=(), *, opset=21) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def _weights_model() -> onnx.ModelProto:
    """y = GatherElements(w, indices) with a float initializer ``w`` and a Slice bound initializer."""
    return _model(
        [
            helper.make_node("Slice", ["w_all", "start", "end"], ["w"], name="cut_weights"),
            helper.make_node("GatherElements", ["w", "indices"], ["y"], name="gather", axis=0),
        ],
        [vi("indices", TensorProto.INT64, [3])],
        [vi("y", TensorProto.FLOAT, [3])],
        [
            numpy_helper.from_array(np.array([0.5, 1.5, 2.5, 3.5, 4.5], np.float32), "w_all"),
            numpy_helper.from_array(np.array([1], np.int64), "start"),
            numpy_helper.from_array(np.array([4], np.int64), "end"),
        ],
    )


INDICES = np.array([2, 0, 1], np.int64)
EXPECTED = np.array([3.5, 1.5, 2.5], np.float32)


def _check(model: jaxonnx.Model):
    (y,) = model(INDICES)
    np.testing.assert_array_equal(y, EXPECTED)
    assert y.dtype == np.float32
    (y,) = jax.jit(model)(jnp.asarray(INDICES))
    np.testing.assert_array_equal(y, EXPECTED)


# --------------------------------------------------------------------------- sources


def test_load_from_path_pathlike_bytes_and_modelproto(tmp_path):
    proto = _weights_model()
    path = tmp_path / "m.onnx"
    onnx.save(proto, path)
    for source in (str(path), path, path.read_bytes(), bytearray(path.read_bytes()), proto):
        _check(jaxonnx.load(source))
    # Loading does not change the caller's ModelProto.
    assert proto == _weights_model()


def test_load_the_bundled_demo_and_describe_it():
    model = jaxonnx.load(DEMO_PATH)
    assert repr(model) == (
        "Model('jaxonnx_demo', opset 21, 10 nodes, inputs (x: tensor(float)[4, 6]), outputs ['y'])"
    )
    assert model.input_names == ("x",) and model.output_names == ("y",)
    (y,) = model(np.arange(24, dtype=np.float32).reshape(4, 6))
    np.testing.assert_array_equal(y, [[5, 3, 3, 13, 17, 17, 23, 21, 23]])


def test_garbage_bytes_are_a_model_load_error():
    with pytest.raises(jaxonnx.ModelLoadError, match=r"the given bytes is not a valid ONNX model: the protobuf could not be decoded"):
        jaxonnx.load(b"\x00\xff\xfe this is not an onnx model")
    with pytest.raises(jaxonnx.ModelLoadError, match=r"it has no graph"):
        jaxonnx.load(b"")


def test_every_truncation_of_a_model_is_a_model_load_error():
    data = pathlib.Path(DEMO_PATH).read_bytes()
    messages = set()
    for length in range(len(data)):
        with pytest.raises(jaxonnx.ModelLoadError) as info:
            jaxonnx.load(data[:length])
        messages.add(str(info.value).split(":")[0])
    assert messages <= {
        "the given bytes is not a valid ONNX model",
        "The ONNX model does not pass onnx's checker",
        "The model's nodes use the domains [''] but its opset_import names no version for them (is the model truncated?).",
    }
    assert len(jaxonnx.load(data).nodes) == 10


def test_truncated_file_names_the_file(tmp_path):
    path = tmp_path / "cut.onnx"
    path.write_bytes(pathlib.Path(DEMO_PATH).read_bytes()[:300])
    with pytest.raises(jaxonnx.ModelLoadError, match=r"'.*cut\.onnx' is not a valid ONNX model.*truncated"):
        jaxonnx.load(path)


def test_unreadable_sources(tmp_path):
    with pytest.raises(jaxonnx.ModelLoadError, match=r"Cannot read the ONNX model '.*missing\.onnx': No such file"):
        jaxonnx.load(tmp_path / "missing.onnx")
    with pytest.raises(jaxonnx.ModelLoadError, match=r"`load` takes a path, bytes or an onnx.ModelProto, got int"):
        jaxonnx.load(42)


def test_a_model_failing_onnxs_checker_is_refused():
    proto = _model(
        [helper.make_node("Flatten", ["x"], ["y"], name="flatten")],
        [vi("x", TensorProto.FLOAT, [2, 2])],
        [vi("y", TensorProto.FLOAT, [1, 4])],
    )
    proto.graph.node[0].input[0] = "undefined"
    with pytest.raises(jaxonnx.ModelLoadError, match=r"The ONNX model does not pass onnx's checker: .*undefined"):
        jaxonnx.load(proto)


def test_a_model_without_opset_import_is_refused():
    proto = _model(
        [helper.make_node("Flatten", ["x"], ["y"], name="flatten")],
        [vi("x", TensorProto.FLOAT, [2, 2])],
        [vi("y", TensorProto.FLOAT, [1, 4])],
    )
    del proto.opset_import[:]
    with pytest.raises(jaxonnx.ModelLoadError, match=r"nodes use the domains \[''\] but its opset_import names no version"):
        jaxonnx.load(proto)


# --------------------------------------------------------------------------- external data


def _save_with_external_data(proto, folder: pathlib.Path) -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.onnx"
    onnx.save_model(proto, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    return path


def test_external_data_inside_the_model_folder_loads(tmp_path):
    path = _save_with_external_data(_weights_model(), tmp_path / "model")
    stored = onnx.load(path, load_external_data=False)
    assert all(t.data_location == TensorProto.EXTERNAL for t in stored.graph.initializer)
    assert (tmp_path / "model" / "weights.bin").is_file()
    _check(jaxonnx.load(path))
    _check(jaxonnx.load(str(path)))
    _check(jaxonnx.load(path.read_bytes(), base_dir=tmp_path / "model"))
    _check(jaxonnx.load(stored, base_dir=str(tmp_path / "model")))
    with pytest.raises(jaxonnx.ModelLoadError, match=r"keeps tensors in external data files.*pass `base_dir=`"):
        jaxonnx.load(path.read_bytes())


def _with_location(path: pathlib.Path, location: str) -> pathlib.Path:
    proto = onnx.load(path, load_external_data=False)
    for tensor in proto.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = location
    out = path.with_name("redirected.onnx")
    onnx.save(proto, out)
    return out


@pytest.mark.parametrize("kind", ["parent", "absolute", "nested_parent", "symlink"])
def test_external_data_resolving_outside_the_model_folder_is_refused(tmp_path, kind):
    path = _save_with_external_data(_weights_model(), tmp_path / "model")
    outside = tmp_path / "x.bin"
    outside.write_bytes((tmp_path / "model" / "weights.bin").read_bytes())  # a readable file: only the place is wrong
    location = {
        "parent": "../x.bin",
        "absolute": str(outside),
        "nested_parent": "sub/../../x.bin",
        "symlink": "link.bin",
    }[kind]
    if kind == "symlink":
        os.symlink(outside, tmp_path / "model" / "link.bin")
    redirected = _with_location(path, location)
    pattern = rf"points at external data '{location}', which resolves outside the model's folder.*refusing to read it"
    with pytest.raises(jaxonnx.ModelLoadError, match=pattern):
        jaxonnx.load(redirected)
    with pytest.raises(jaxonnx.ModelLoadError, match=pattern):
        jaxonnx.load(onnx.load(redirected, load_external_data=False), base_dir=tmp_path / "model")
    # Pointing it back inside works.
    _check(jaxonnx.load(_with_location(path, "weights.bin")))


def test_missing_external_data_file(tmp_path):
    path = _save_with_external_data(_weights_model(), tmp_path / "model")
    with pytest.raises(jaxonnx.ModelLoadError, match=r"The external data file 'gone.bin' of initializer 'w_all' does not exist"):
        jaxonnx.load(_with_location(path, "gone.bin"))


# --------------------------------------------------------------------------- ops and opsets


def test_unsupported_op_at_load_names_it_and_lists_the_supported_ops():
    proto = _model(
        [
            helper.make_node("Flatten", ["x"], ["f"], name="flatten"),
            helper.make_node("Relu", ["f"], ["y"], name="activation"),
        ],
        [vi("x", TensorProto.FLOAT, [2, 2])],
        [vi("y", TensorProto.FLOAT, [2, 2])],
    )
    with pytest.raises(jaxonnx.UnsupportedOpError) as info:
        jaxonnx.load(proto)
    message = str(info.value)
    assert "node 'activation' (Relu): The op 'Relu' (domain 'ai.onnx') is not supported" in message
    assert "Supported: Compress (9, 11, 28), Constant (" in message
    assert "Slice (1, 10, 11, 13)" in message and "Where (9, 16)" in message
    assert ".." not in message
    assert isinstance(info.value, NotImplementedError)


def test_op_of_another_domain_is_unsupported():
    proto = _model(
        [helper.make_node("Slice", ["x"], ["y"], name="custom", domain="com.example")],
        [vi("x", TensorProto.FLOAT, [2])],
        [vi("y", TensorProto.FLOAT, [2])],
    )
    proto.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(
        jaxonnx.UnsupportedOpError, match=r"node 'custom' \(Slice\): The op 'Slice' \(domain 'com.example'\) is not supported"
    ):
        jaxonnx.load(proto)
    del proto.opset_import[1:]
    with pytest.raises(jaxonnx.ModelLoadError, match=r"domains \['com.example'\] but its opset_import names no version"):
        jaxonnx.load(proto)


@pytest.mark.parametrize(
    ("op", "opset", "first"),
    [("GatherElements", 10, 11), ("Compress", 8, 9), ("Where", 8, 9)],
)
def test_opset_below_the_ops_first_version(op, opset, first):
    inputs = {"GatherElements": ["x", "i"], "Compress": ["x", "c"], "Where": ["c", "x", "x"]}[op]
    proto = _model(
        [helper.make_node(op, inputs, ["y"], name="too_new")],
        [vi("x", TensorProto.FLOAT, [2]), vi("i", TensorProto.INT64, [2]), vi("c", TensorProto.BOOL, [2])],
        [vi("y", TensorProto.FLOAT, [2])],
        opset=opset,
    )
    with pytest.raises(
        jaxonnx.UnsupportedOpError,
        match=rf"node 'too_new' \({op}\): The op '{op}' does not exist at opset {opset}; its versions are "
        rf"{first}, .*the model's opset must be at least {first}",
    ):
        jaxonnx.load(proto)


# --------------------------------------------------------------------------- size hints


def _compress_model() -> onnx.ModelProto:
    return _model(
        [
            helper.make_node("Compress", ["x", "cond"], ["picked"], name="pick", axis=0),
            helper.make_node("Flatten", ["picked"], ["flat"], name="flatten"),
        ],
        [vi("x", TensorProto.FLOAT, [4, 2]), vi("cond", TensorProto.BOOL, [4])],
        [vi("flat", TensorProto.FLOAT, ["n", 2])],
    )


def test_size_hint_for_a_non_compress_output_is_refused():
    with pytest.raises(
        jaxonnx.OnnxValidationError,
        match=r"A size hint was given for 'flat', the output of node 'flatten' \(Flatten\); only outputs of Compress take size hints",
    ):
        jaxonnx.load(_compress_model(), size_hints={"flat": 2})


def test_size_hint_for_an_unknown_name_is_refused():
    with pytest.raises(
        jaxonnx.OnnxValidationError,
        match=r"Size hints were given for \['nope'\], which no node produces; outputs that take size hints: \['picked'\]",
    ):
        jaxonnx.load(_compress_model(), size_hints={"picked": 2, "nope": 3})


@pytest.mark.parametrize("bad", [-1, 2.0, "3", True])
def test_a_size_hint_must_be_a_non_negative_int(bad):
    with pytest.raises(jaxonnx.OnnxValidationError, match=rf"The size hint for 'picked' must be a non-negative int, got {bad!r}"):
        jaxonnx.load(_compress_model(), size_hints={"picked": bad})


def test_a_valid_size_hint_loads_and_is_used():
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    for size in (3, np.int64(3)):
        model = jaxonnx.load(_compress_model(), size_hints={"picked": size})
        (flat,) = jax.jit(model)(x, np.array([False, True, False, False]))
        np.testing.assert_array_equal(flat, [[2, 3], [0, 0], [0, 0]])
    (flat,) = jax.jit(jaxonnx.load(_compress_model(), size_hints={"picked": 0}))(x, np.zeros(4, bool))
    assert flat.shape == (0, 2)
