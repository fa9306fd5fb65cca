"""Loading: sources (path, bytes, ModelProto), refused files, external data kept inside the
model's folder, unsupported ops and opsets, and size hints checked at load time."""

from __future__ import annotations

import os
import pathlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import jaxonnx
from jaxonnx._demo import DEMO_PATH
from jaxonnx.cli import main

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
    assert repr(model) == ("Model('jaxonnx_demo', opset 21, 10 nodes, inputs (x: tensor(float)[4, 6]), outputs ['y'])")
    assert model.input_names == ("x",) and model.output_names == ("y",)
    (y,) = model(np.arange(24, dtype=np.float32).reshape(4, 6))
    np.testing.assert_array_equal(y, [[5, 3, 3, 13, 17, 17, 23, 21, 23]])


def test_garbage_bytes_are_a_model_load_error():
    with pytest.raises(
        jaxonnx.ModelLoadError, match=r"the given bytes is not a valid ONNX model: the protobuf could not be decoded"
    ):
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
    with pytest.raises(
        jaxonnx.ModelLoadError, match=r"nodes use the domains \[''\] but its opset_import names no version"
    ):
        jaxonnx.load(proto)


# --------------------------------------------------------------------------- external data


def _save_with_external_data(proto, folder: pathlib.Path) -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.onnx"
    onnx.save_model(
        proto, path, save_as_external_data=True, all_tensors_to_one_file=True, location="weights.bin", size_threshold=0
    )
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
    with pytest.raises(
        jaxonnx.ModelLoadError, match=r"The external data file 'gone.bin' of initializer 'w_all' does not exist"
    ):
        jaxonnx.load(_with_location(path, "gone.bin"))


# --------------------------------------------------------------------------- ops and opsets


def test_unsupported_op_at_load_names_the_ops_with_counts_and_the_ways_out():
    # Every op of onnx 1.23 runs now: an op onnx does not define (a newer onnx's, say) stands for one.
    proto = _model(
        [
            helper.make_node("Flatten", ["x"], ["f"], name="flatten"),
            helper.make_node("Frobnicate", ["f"], ["y"], name="decode"),
            helper.make_node("Frobnicate", ["f"], ["z"], name="decode_again"),
        ],
        [vi("x", TensorProto.UINT8, [2, 2])],
        [vi("y", TensorProto.UINT8, None), vi("z", TensorProto.UINT8, None)],
    )
    with pytest.raises(jaxonnx.UnsupportedOpError) as info:
        jaxonnx.load(proto)
    message = str(info.value)
    assert message.startswith("The model uses ops jaxonnx does not support: Frobnicate (2 nodes) (opsets: ai.onnx 21).")
    assert "node 'decode' (Frobnicate): not supported; node 'decode_again' (Frobnicate): not supported" in message
    assert "`python -m jaxonnx check MODEL.onnx`" in message and "`jaxonnx.register`" in message
    # Not a wall of text: the supported ops are not listed.
    assert "Slice" not in message and "GatherElements" not in message
    assert isinstance(info.value, NotImplementedError)


def test_op_of_another_domain_is_unsupported():
    proto = _model(
        [helper.make_node("Slice", ["x"], ["y"], name="custom", domain="com.example")],
        [vi("x", TensorProto.FLOAT, [2])],
        [vi("y", TensorProto.FLOAT, [2])],
    )
    proto.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(jaxonnx.UnsupportedOpError) as info:
        jaxonnx.load(proto)
    # An unknown domain is named as such, not answered with an empty list of its ops.
    message = str(info.value)
    assert "node 'custom' (Slice, domain 'com.example'): jaxonnx knows no ops of the domain 'com.example'" in message
    assert "[]" not in message and message.count("Slice") == 2  # the node, and once in the supported list
    del proto.opset_import[1:]
    with pytest.raises(
        jaxonnx.ModelLoadError, match=r"domains \['com.example'\] but its opset_import names no version"
    ):
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
        match=r"A size hint was given for 'flat', the output of node 'flatten' \(Flatten-21\); only outputs of (.*) take size hints",
    ) as info:
        jaxonnx.load(_compress_model(), size_hints={"flat": 2})
    # The list grows with the registry (Loop, NonMaxSuppression, Unique, ...): the data-dependent
    # ops are named, Flatten is not.
    named = re.search(r"only outputs of (.*) take size hints", str(info.value)).group(1).split(", ")
    assert {"Compress", "NonZero", "Loop"} <= set(named) and "Flatten" not in named
    assert named == sorted(named)


def test_size_hint_for_an_unknown_name_is_refused():
    with pytest.raises(
        jaxonnx.OnnxValidationError,
        match=r"Size hints were given for \['nope'\], which no node produces; outputs that take size hints: \['picked'\]",
    ):
        jaxonnx.load(_compress_model(), size_hints={"picked": 2, "nope": 3})


@pytest.mark.parametrize("bad", [-1, 2.0, "3", True])
def test_a_size_hint_must_be_a_non_negative_int(bad):
    with pytest.raises(
        jaxonnx.OnnxValidationError, match=rf"The size hint for 'picked' must be a non-negative int, got {bad!r}"
    ):
        jaxonnx.load(_compress_model(), size_hints={"picked": bad})


def test_a_valid_size_hint_loads_and_is_used():
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    for size in (3, np.int64(3)):
        model = jaxonnx.load(_compress_model(), size_hints={"picked": size})
        (flat,) = jax.jit(model)(x, np.array([False, True, False, False]))
        np.testing.assert_array_equal(flat, [[2, 3], [0, 0], [0, 0]])
    (flat,) = jax.jit(jaxonnx.load(_compress_model(), size_hints={"picked": 0}))(x, np.zeros(4, bool))
    assert flat.shape == (0, 2)


# --------------------------------------------------------------------------- sparse tensors and external data


def _external(tensor: onnx.TensorProto, location: str) -> onnx.TensorProto:
    """``tensor`` pointing at ``location`` for its data instead of holding it."""
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    tensor.external_data.add(key="location", value=location)
    return tensor


def _sparse(values, indices, dims, *, name="s", values_at=None, indices_at=None) -> onnx.SparseTensorProto:
    values = numpy_helper.from_array(np.asarray(values), name)
    indices = numpy_helper.from_array(np.asarray(indices, np.int64), f"{name}_indices")
    if values_at:
        _external(values, values_at)
    if indices_at:
        _external(indices, indices_at)
    return helper.make_sparse_tensor(values, indices, dims)


def _sparse_model(sparse: onnx.SparseTensorProto, *, as_constant=False, declared=(4,)) -> onnx.ModelProto:
    """y = Identity(the sparse tensor), as a sparse initializer or a Constant's sparse_value."""
    name = sparse.values.name
    nodes = [helper.make_node("Identity", [name], ["y"], name="identity")]
    if as_constant:
        nodes.insert(0, helper.make_node("Constant", [], [name], name="sparse_const", sparse_value=sparse))
    graph = helper.make_graph(
        nodes,
        "g",
        [],
        [vi("y", sparse.values.data_type, list(declared))],
        sparse_initializer=[] if as_constant else [sparse],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


SECRET = np.array([7.0, 8.0], np.float32)


@pytest.mark.parametrize("as_constant", [False, True], ids=["sparse_initializer", "constant_sparse_value"])
@pytest.mark.parametrize("part", ["values", "indices"])
def test_sparse_external_data_is_not_read_relative_to_the_working_directory(tmp_path, monkeypatch, as_constant, part):
    # A file the model must not reach: next to the working directory, not in the model's folder.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "other").mkdir()
    secret = SECRET if part == "values" else np.array([0, 3], np.int64)
    secret.tofile(tmp_path / "other" / "secret.bin")
    location = "other/secret.bin"
    sparse = _sparse(SECRET, [0, 3], [4], **{f"{part}_at": location})
    what = (
        "sparse tensor in the attribute 'sparse_value' of node 'sparse_const'"
        if as_constant
        else "sparse initializer 's'"
    )
    proto = _sparse_model(sparse, as_constant=as_constant)
    path = tmp_path / "model" / "model.onnx"
    path.parent.mkdir()
    onnx.save(proto, path)
    with pytest.raises(
        jaxonnx.ModelLoadError,
        match=rf"The external data file 'other/secret\.bin' of {what} \(its {part}\) does not exist",
    ):
        jaxonnx.load(path)
    for source in (proto, proto.SerializeToString()):
        with pytest.raises(jaxonnx.ModelLoadError, match=r"keeps tensors in external data files.*pass `base_dir=`"):
            jaxonnx.load(source)
    # Through the model's folder, a parent location is refused like an initializer's.
    proto = _sparse_model(
        _sparse(SECRET, [0, 3], [4], **{f"{part}_at": "../other/secret.bin"}), as_constant=as_constant
    )
    with pytest.raises(
        jaxonnx.ModelLoadError,
        match=rf"The {what} \(its {part}\) points at external data '\.\./other/secret\.bin', which resolves outside",
    ):
        jaxonnx.load(proto, base_dir=tmp_path / "model")
    # Inside the model's folder it loads, with the data from the file.
    (tmp_path / "model" / "data.bin").write_bytes(secret.tobytes())
    proto = _sparse_model(_sparse(SECRET, [0, 3], [4], **{f"{part}_at": "data.bin"}), as_constant=as_constant)
    (y,) = jaxonnx.load(proto, base_dir=tmp_path / "model")()
    np.testing.assert_array_equal(y, [7.0, 0.0, 0.0, 8.0])


def test_tensor_to_numpy_never_reads_external_data(tmp_path, monkeypatch):
    from jaxonnx._core.loading import tensor_to_numpy

    monkeypatch.chdir(tmp_path)
    SECRET.tofile(tmp_path / "secret.bin")
    tensor = _external(numpy_helper.from_array(SECRET, "w"), "secret.bin")
    with pytest.raises(
        jaxonnx.ModelLoadError, match=r"The tensor 'w' keeps its data in the external file 'secret\.bin'.*`base_dir=`"
    ):
        tensor_to_numpy(tensor)


def test_a_tiny_sparse_tensor_with_huge_dims_is_refused_without_allocating():
    proto = _sparse_model(_sparse(np.zeros(0, np.float32), np.zeros(0, np.int64), [2**40]), declared=[2**40])
    assert len(proto.SerializeToString()) < 120
    with pytest.raises(
        jaxonnx.ModelLoadError,
        match=r"The sparse initializer 's' cannot be read: The sparse tensor 's' with dims \[1099511627776\] would expand "
        r"to 1099511627776 dense elements \(4398046511104 bytes\) from 0 stored values; jaxonnx refuses more than",
    ):
        jaxonnx.load(proto)
    # Above 64 MiB, one stored value does not buy a large dense array either (2**20
    # elements per value plus one).
    proto = _sparse_model(_sparse(np.ones(1, np.float32), [0], [2**25]), declared=[2**25])
    with pytest.raises(
        jaxonnx.ModelLoadError, match=r"would expand to 33554432 dense elements .* from 1 stored values"
    ):
        jaxonnx.load(proto)
    proto = _sparse_model(_sparse(np.ones(1, np.float32), [0], [2**40]), as_constant=True, declared=[2**40])
    with pytest.raises(
        jaxonnx.ModelLoadError,
        match=r"The sparse_value of node 'sparse_const' \(Constant-21\) cannot be read: .*would expand",
    ):
        jaxonnx.load(proto)
    # Within the limits it loads.
    (y,) = jaxonnx.load(_sparse_model(_sparse(np.ones(1, np.float32), [3], [2**20]), declared=[2**20]))()
    assert y.shape == (2**20,) and float(y.sum()) == 1.0 and float(y[3]) == 1.0


@pytest.mark.parametrize(
    ("values", "indices", "dims", "message"),
    [
        ([1.0, 2.0], [0, 4], [4], r"has the linear index \(dense size 4\) 4 outside its dims \[4\]"),
        ([1.0, 2.0], [-1, 2], [4], r"has the linear index \(dense size 4\) -1 outside its dims \[4\]"),
        ([1.0, 2.0], [[0, 1], [1, 2]], [2, 2], r"has the index \[1, 2\] outside its dims \[2, 2\]"),
        (
            [1.0, 2.0],
            [0, 1, 2],
            [4],
            r"indices of the sparse tensor 's' have shape \[3\]; with 2 values and dims \[4\] they must be \[2\] \(linear\) or \[2, 1\]",
        ),
        (
            [1.0, 2.0],
            [[0, 0, 0], [0, 0, 1]],
            [2, 2],
            r"have shape \[2, 3\]; with 2 values and dims \[2, 2\] they must be \[2\] \(linear\) or \[2, 2\]",
        ),
        ([[1.0, 2.0]], [0, 1], [4], r"values of the sparse tensor 's' must be 1-D \(\[NNZ\]\), got dims \[1, 2\]"),
        ([1.0], [0], [-4], r"The sparse tensor 's' has negative dims \[-4\]"),
    ],
)
def test_malformed_sparse_tensors_are_refused(values, indices, dims, message):
    from jaxonnx._core.loading import sparse_to_numpy

    sparse = _sparse(np.asarray(values, np.float32), indices, dims)
    with pytest.raises(jaxonnx.OnnxValidationError, match=message):
        sparse_to_numpy(sparse)
    for as_constant in (False, True):
        # onnx's checker catches some of these first; either way the load is refused.
        with pytest.raises(jaxonnx.ModelLoadError):
            jaxonnx.load(_sparse_model(sparse, as_constant=as_constant, declared=[None] * len(dims)))


def test_string_sparse_tensors_fill_with_empty_strings():
    from jaxonnx._core.loading import sparse_to_numpy

    dense = sparse_to_numpy(_sparse(np.array(["a", "b"], dtype=object), [[0, 1], [1, 0]], [2, 2]))
    assert dense.dtype == object and dense.tolist() == [["", "a"], ["b", ""]]


def _model_with_short_external_data(tmp_path):
    """A model whose external data entry claims more bytes than its file has."""
    path = _save_with_external_data(_weights_model(), tmp_path / "model")
    proto = onnx.load(path, load_external_data=False)
    for entry in proto.graph.initializer[0].external_data:
        if entry.key == "length":
            entry.value = str(10**6)
    onnx.save(proto, path)
    return path


def test_external_data_shorter_than_its_length_is_a_model_load_error(tmp_path):
    path = _model_with_short_external_data(tmp_path)
    pattern = r"The external data 'weights\.bin' of initializer 'w_all' cannot be read: External data length \(1000000\) exceeds"
    with pytest.raises(jaxonnx.ModelLoadError, match=pattern):
        jaxonnx.load(path)


def test_onnxs_checker_runs_without_the_external_data(tmp_path, monkeypatch):
    # The checker re-serializes the model, so a model with more than 2 GiB of external data
    # could not load if it were checked with its data inlined.
    path = _save_with_external_data(_weights_model(), tmp_path / "model")
    seen = []
    real_check = onnx.checker.check_model

    def check_model(model, *args, **kwargs):
        seen.append(sum(len(t.raw_data) for t in model.graph.initializer))
        return real_check(model, *args, **kwargs)

    monkeypatch.setattr(onnx.checker, "check_model", check_model)
    monkeypatch.chdir(tmp_path)  # the checker would look for weights.bin here, not in model/
    _check(jaxonnx.load(path))
    _check(jaxonnx.load(path.read_bytes(), base_dir=tmp_path / "model"))
    assert seen == [0, 0]


# --------------------------------------------------------------------------- declared types and opsets


def test_an_initializer_backed_input_must_match_its_declared_type():
    def model(declared_type, declared_shape):
        return _model(
            [helper.make_node("Flatten", ["w"], ["y"], name="flatten")],
            [vi("w", declared_type, declared_shape)],
            [vi("y", declared_type, ["a", "b"])],
            [numpy_helper.from_array(np.array([1, 2, 3], np.int64), "w")],
        )

    with pytest.raises(
        jaxonnx.ModelLoadError,
        match=r"The graph input 'w' is declared tensor\(float\)\[2\] but its initializer is tensor\(int64\)\[3\]",
    ):
        jaxonnx.load(model(TensorProto.FLOAT, [2]))
    with pytest.raises(
        jaxonnx.ModelLoadError,
        match=r"'w' is declared tensor\(int64\)\[2\] but its initializer is tensor\(int64\)\[3\]",
    ):
        jaxonnx.load(model(TensorProto.INT64, [2]))
    with pytest.raises(
        jaxonnx.ModelLoadError,
        match=r"'w' is declared tensor\(int64\)\[3, 1\] but its initializer is tensor\(int64\)\[3\]",
    ):
        jaxonnx.load(model(TensorProto.INT64, [3, 1]))
    for shape in ([3], ["n"]):
        assert jaxonnx.load(model(TensorProto.INT64, shape)).input_names == ()


def test_sequence_and_optional_graph_values_round_trip():
    seq_type = helper.make_tensor_sequence_value_info
    optional = helper.make_value_info(
        "o", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    )
    optional_out = helper.make_value_info(
        "p", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    )
    proto = _model(
        [helper.make_node("Identity", ["s"], ["t"]), helper.make_node("Identity", ["o"], ["p"])],
        [seq_type("s", TensorProto.FLOAT, None), optional],
        [seq_type("t", TensorProto.FLOAT, None), optional_out],
    )
    model = jaxonnx.load(proto)
    assert [i.type for i in model.inputs] == ["seq(tensor(float))", "optional(tensor(float))"]
    items = [np.arange(3, dtype=np.float32), np.ones((2, 2), np.float32)]
    t, p = model(items, np.array([1.0, 2.0], np.float32))
    assert isinstance(t, list) and len(t) == 2
    np.testing.assert_array_equal(t[1], items[1])
    np.testing.assert_array_equal(p, [1.0, 2.0])
    t, p = jax.jit(model)(items, None)
    assert p is None and len(t) == 2
    with pytest.raises(
        jaxonnx.OnnxTypeError, match=r"The input 's' is declared seq\(tensor\(float\)\), a sequence: pass a list"
    ):
        model(items[0], None)


@pytest.mark.parametrize(
    ("domains", "message"),
    [
        (
            [("", 13), ("ai.onnx", 21)],
            r"names the ONNX domain \('' or 'ai\.onnx'\) twice: '' version 13 and 'ai\.onnx' version 21",
        ),
        ([("", 21), ("", 13)], r"names the ONNX domain \('' or 'ai\.onnx'\) twice: '' version 21 and '' version 13"),
    ],
)
def test_a_domain_imported_twice_is_refused(tmp_path, capsys, domains, message):
    proto = _model(
        [helper.make_node("Flatten", ["x"], ["y"], name="flatten")],
        [vi("x", TensorProto.FLOAT, [2, 2])],
        [vi("y", TensorProto.FLOAT, [2, 2])],
    )
    del proto.opset_import[:]
    proto.opset_import.extend(helper.make_opsetid(d, v) for d, v in domains)
    with pytest.raises(jaxonnx.ModelLoadError, match=message):
        jaxonnx.load(proto)
    path = tmp_path / "twice.onnx"
    onnx.save(proto, path)
    for command in ("run", "check"):
        assert main([command, str(path)]) == 1
        err = capsys.readouterr().err
        assert err.startswith(
            "jaxonnx: error: The model's opset_import names the ONNX domain ('' or 'ai.onnx') twice"
        ), err


# --------------------------------------------------------------------------- the command line


def test_the_cli_reports_load_errors_without_a_traceback(tmp_path, capsys):
    path = _model_with_short_external_data(tmp_path)
    assert main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("jaxonnx: error: The external data 'weights.bin' of initializer 'w_all' cannot be read"), err
    huge = tmp_path / "huge.onnx"
    onnx.save(_sparse_model(_sparse(np.zeros(0, np.float32), np.zeros(0, np.int64), [2**40]), declared=[2**40]), huge)
    assert main(["run", str(huge)]) == 1
    assert capsys.readouterr().err.startswith("jaxonnx: error: The sparse initializer 's' cannot be read: ")


def _external_weight_model(tmp_path: pathlib.Path) -> tuple[onnx.ModelProto, np.ndarray]:
    weight = np.arange(6, dtype=np.float32).reshape(2, 3)
    graph = helper.make_graph(
        [helper.make_node("Where", ["keep", "x", "w"], ["y"])],
        "external",
        [
            helper.make_tensor_value_info("keep", TensorProto.BOOL, [2, 3]),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    path = tmp_path / "model.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, location="data.bin", size_threshold=0)
    return onnx.load(str(path), load_external_data=False), weight


def test_backend_prepare_reads_external_data_from_base_dir_only(tmp_path, monkeypatch):
    import jaxonnx.backend

    proto, weight = _external_weight_model(tmp_path)
    monkeypatch.chdir("/")  # the working directory must not matter
    with pytest.raises(jaxonnx.ModelLoadError, match="pass `base_dir=`"):
        jaxonnx.backend.prepare(proto)
    keep = np.array([[True, False, True], [False, True, False]])
    x = -np.ones((2, 3), np.float32)
    (y,) = jaxonnx.backend.prepare(proto, base_dir=str(tmp_path)).run([keep, x])
    np.testing.assert_array_equal(y, np.where(keep, x, weight))


def test_an_all_zero_sparse_initializer_of_moderate_size_loads():
    values = numpy_helper.from_array(np.zeros(0, np.float32), "zeros")
    indices = numpy_helper.from_array(np.zeros(0, np.int64), "zeros_indices")
    sparse = helper.make_sparse_tensor(values, indices, [1100, 1000])  # 4.4 MB dense, no values
    graph = helper.make_graph(
        [helper.make_node("Flatten", ["zeros"], ["y"], axis=0)],
        "sparse",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1100000])],
        sparse_initializer=[sparse],
    )
    (y,) = jaxonnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))()
    assert y.shape == (1, 1100000) and not np.asarray(y).any()
