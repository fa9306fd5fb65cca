"""Op traits: what an op declares at its ``register(...)`` call, and the core reads.

Each test registers an op of its own (in a copy of the registry, or for the command line in
jaxonnx's own, removed after) that declares a trait, and checks that the padding rules, param
discovery, eager planning or the CLI act on it: a core that went by op names would not.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import jaxonnx
import jaxonnx.ops  # noqa: F401  (registers every op)
from jaxonnx._core.contract import OpContract
from jaxonnx._core.padding import RealLength
from jaxonnx._core.registry import REGISTRY
from jaxonnx.cli import main
from jaxonnx.ops._helpers.schemas import attribute, contrib_schema

DOMAIN = "com.example"


def _schema(name, inputs, outputs, types, attributes=()):
    return contrib_schema(name, f"{name}, a test op.", inputs, outputs, types, attributes, domain=DOMAIN)


def _model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(DOMAIN, 1)])
    model.ir_version = 10
    return model


def _float(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _versions():
    return [op for versions in REGISTRY._versions.values() for op in versions.values()]


def test_the_traits_name_inputs_and_attributes_their_schemas_have():
    """A trait that names a formal input or an attribute names one of that version's schema,
    so the core finds it on every node of the op (a typo would make the trait do nothing)."""
    checked = 0
    for op in _versions():
        contract, schema = op.contract, op.schema
        inputs = [formal.name for formal in schema.inputs]
        named_inputs = [*contract.weights, *([contract.counts_non_zeros_of] if contract.counts_non_zeros_of else [])]
        assert set(named_inputs) <= set(inputs), f"{op.name} names inputs {named_inputs}; its schema has {inputs}"
        graphs = {name for name, a in schema.attributes.items() if a.type == onnx.defs.OpSchema.AttrType.GRAPH}
        assert set(contract.branches) <= graphs, f"{op.name}'s branches {contract.branches} are not its graphs"
        named_attributes = [contract.outputs_attribute] if contract.outputs_attribute else []
        if isinstance(contract.padded_axis, str):
            named_attributes.append(contract.padded_axis)
        assert set(named_attributes) <= set(schema.attributes), f"{op.name} names attributes {named_attributes}"
        if contract.counts_non_zeros_of:
            assert contract.size_hint, f"{op.name} counts its real length but takes no size hint"
        checked += bool(named_inputs or contract.branches or named_attributes)
    assert checked > 40  # Gemm, Conv, the normalizations, the recurrent ops, If, Constant, Compress...


def test_inputs_read_only_to_check_them_are_concrete_ones_of_ops_that_defer_checks():
    """``checked`` (what an eager call may compile whole with traced) names inputs the op
    reads while known and checks after the computation where traced (its ``checks``)."""
    for op in _versions():
        checked = op.contract.checked_inputs()
        assert set(checked) <= set(op.contract.concrete), op.name
        assert not checked or op.contract.takes("checks"), f"{op.name} defers checks it has no `checks` for"
    # GroupQueryAttention reads `total_sequence_length` for its present cache's length: a
    # graph that computes it from the inputs' values runs op by op.
    gqa = jaxonnx.get_op("GroupQueryAttention", 1, "com.microsoft").contract
    assert "total_sequence_length" in gqa.concrete and "total_sequence_length" not in gqa.checked_inputs()
    with pytest.raises(ValueError, match=r"`checked` names inputs of `concrete`; \['y'\] are not"):
        OpContract(concrete=("x",), checked=("x", "y"))


def test_the_weight_inputs_are_learned_weights_of_the_layers_that_declare_them():
    gemm, lstm = jaxonnx.get_op("Gemm", 13).contract, jaxonnx.get_op("LSTM", 22).contract
    assert gemm.weights == ("B", "C") and gemm.linear
    assert lstm.weights == ("W", "R", "B") and not lstm.linear
    assert jaxonnx.get_op("Add", 14).contract.adds and jaxonnx.get_op("Identity", 25).contract.identity


@pytest.fixture
def scratch():
    """A registry the test may change: a copy of jaxonnx's."""
    return REGISTRY.copy()


@pytest.mark.parametrize("declared", [True, False])
def test_a_weight_input_makes_a_one_element_tensor_a_param(scratch, declared):
    # `gain` is one element: a param only where a layer reads it as a weight (or Identity of one).
    scratch.register(
        "Gain",
        1,
        domain=DOMAIN,
        schema=_schema("Gain", [("X", "T"), ("gain", "T")], [("Y", "T")], [("T", ["tensor(float)"])]),
        weights=("gain",) if declared else (),
    )(lambda X, gain: X * gain)
    model = _model(
        [
            helper.make_node("Identity", ["g"], ["g_copy"]),
            helper.make_node("Gain", ["x", "g_copy"], ["y"], domain=DOMAIN),
        ],
        [_float("x", [3])],
        [_float("y", [3])],
        [helper.make_tensor("g", TensorProto.FLOAT, [1], [2.0])],
    )
    loaded = jaxonnx.load(model, registry=scratch)
    assert ("g" in loaded.params) == declared
    np.testing.assert_allclose(loaded(np.ones(3, np.float32))[0], [2.0, 2.0, 2.0])


@pytest.mark.parametrize("linear", [True, False])
def test_an_operand_added_to_a_linear_ops_output_is_a_bias(scratch, linear):
    scratch.register(
        "Project",
        1,
        domain=DOMAIN,
        schema=_schema("Project", [("X", "T")], [("Y", "T")], [("T", ["tensor(float)"])]),
        linear=linear,
    )(lambda X: 3 * X)
    model = _model(
        [helper.make_node("Project", ["x"], ["p"], domain=DOMAIN), helper.make_node("Add", ["p", "b"], ["y"])],
        [_float("x", [2])],
        [_float("y", [2])],
        [helper.make_tensor("b", TensorProto.FLOAT, [1], [0.5])],
    )
    loaded = jaxonnx.load(model, registry=scratch)
    assert ("b" in loaded.params) == linear
    np.testing.assert_allclose(loaded(np.ones(2, np.float32))[0], [3.5, 3.5])


def _shape_of(scratch, shape_only):
    scratch.register(
        "ShapeOf",
        1,
        domain=DOMAIN,
        schema=_schema("ShapeOf", [("X", "T")], [("Y", "tensor(int64)")], [("T", ["tensor(float)"])]),
        shape_only=shape_only,
    )(lambda X: np.array(np.shape(X), np.int64))


@pytest.mark.parametrize("shape_only", [True, False])
def test_a_shape_only_op_never_makes_a_weight_decide_a_shape(scratch, shape_only):
    # `w` reaches Reshape's shape only through ShapeOf(x + w): a shape-only op reads no value of
    # its input, so `w` stays a trainable param; an op that may read them makes it shape-deciding.
    _shape_of(scratch, shape_only)
    model = _model(
        [
            helper.make_node("Add", ["x", "w"], ["s"]),
            helper.make_node("ShapeOf", ["s"], ["shape"], domain=DOMAIN),
            helper.make_node("Reshape", ["s", "shape"], ["y"]),
        ],
        [_float("x", [2, 3])],
        [_float("y", [2, 3])],
        [helper.make_tensor("w", TensorProto.FLOAT, [2, 3], np.arange(6.0))],
    )
    loaded = jaxonnx.load(model, registry=scratch)
    assert ("w" in loaded.params) == shape_only
    # Nor does it make the graph's eager call run op by op (its output is known at trace time).
    assert loaded.eager_mode.startswith("whole graph") == shape_only
    np.testing.assert_allclose(loaded(np.ones((2, 3), np.float32))[0], np.arange(6.0).reshape(2, 3) + 1)


@pytest.mark.parametrize("as_text", [1, 0])
def test_an_op_that_makes_strings_by_its_attributes_runs_op_by_op(scratch, as_text):
    def label(X, *, as_text=0):
        if as_text:
            return np.array([f"{v:g}" for v in np.asarray(X).reshape(-1)], dtype=object).reshape(np.shape(X))
        return X

    scratch.register(
        "Label",
        1,
        domain=DOMAIN,
        schema=_schema(
            "Label",
            [("X", "T")],
            [("Y", "T2")],
            [("T", ["tensor(float)"]), ("T2", ["tensor(float)", "tensor(string)"])],
            [attribute("as_text", 0)],
        ),
        makes_strings=lambda attributes: attributes.get("as_text") == 1,
    )(label)
    model = _model(
        [
            helper.make_node("Label", ["x"], ["text"], domain=DOMAIN, as_text=as_text),
            helper.make_node("Size", ["text"], ["y"]),
        ],
        [_float("x", [2])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [])],
    )
    loaded = jaxonnx.load(model, registry=scratch)
    # A trace would hand the op a tracer where it makes strings: the call runs op by op.
    assert ("makes strings" in loaded.eager_mode) == bool(as_text)
    assert int(loaded(np.array([1.5, 2.0], np.float32))[0]) == 2


def _pick_rows(data, keep, *, size=None, fill_value=None, real_length=False):
    """The rows of ``data`` where ``keep`` is true; with ``size``, padded with zero rows."""
    if size is None:
        return np.asarray(data)[np.asarray(keep, bool)]
    (index,) = jnp.nonzero(keep, size=size, fill_value=0)
    count = jnp.count_nonzero(keep)
    rows = jnp.where((jnp.arange(size) < count)[:, None], jnp.asarray(data)[index], 0)
    return (rows, RealLength(count, (0,))) if real_length else rows


@pytest.fixture
def pick_rows_registered():
    """PickRows, a size-hinted op of the test's own, registered in jaxonnx's registry (the
    command line loads with it) and removed after."""
    REGISTRY.register(
        "PickRows",
        1,
        domain=DOMAIN,
        schema=_schema(
            "PickRows",
            [("data", "T"), ("keep", "B")],
            [("rows", "T")],
            [("T", ["tensor(float)"]), ("B", ["tensor(bool)"])],
        ),
        size_hint="zeros",
        counts_non_zeros_of="keep",
        padded_axis=0,
    )(_pick_rows)
    try:
        yield
    finally:
        del REGISTRY._versions[(DOMAIN, "PickRows")]
        REGISTRY._listings.clear()


def test_a_new_size_hinted_op_gets_the_commands_real_part(tmp_path, capsys, pick_rows_registered):
    model = _model(
        [helper.make_node("PickRows", ["x", "keep"], ["picked"], name="pick", domain=DOMAIN)],
        [_float("x", [4, 2]), helper.make_tensor_value_info("keep", TensorProto.BOOL, [4])],
        [_float("picked", ["n", 2])],
    )
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    np.save(tmp_path / "x.npy", np.array([[1, 2], [3, -4], [0, 0], [0, 5]], np.float32))
    np.save(tmp_path / "keep.npy", np.array([True, False, True, False]))
    inputs = ["--input", f"x={tmp_path / 'x.npy'}", "--input", f"keep={tmp_path / 'keep.npy'}"]
    for jit in ([], ["--jit"]):
        assert main(["run", str(path), *inputs, *jit, "--size-hint", "picked=3"]) == 0
        out = capsys.readouterr().out
        assert "picked: shape [3, 2], dtype float32, size hint 3: 2 real rows + 1 padding, min 0, max 2" in out


def test_a_trait_naming_an_input_the_schema_lacks_is_refused(scratch):
    del scratch._versions[("", "Relu")]
    with pytest.raises(ValueError, match=r"^Relu-14 has no inputs \['x'\] \(named in its contract\)"):
        scratch.register("Relu", 14, weights=("x",))(lambda X: X)  # its input is `X`
    with pytest.raises(ValueError, match=r"^Relu-14 has no inputs \['mask'\]"):
        scratch.register("Relu", 14, counts_non_zeros_of="mask")(lambda X: X)
    assert "Relu" not in scratch.supported_ops()


@pytest.mark.parametrize("keeps_non_zeros", [True, False])
def test_a_count_of_non_zeros_stays_a_length_through_an_op_that_keeps_them(scratch, keeps_non_zeros):
    # `mask.sum()` where NonZero(mask) is size-hinted is that output's length: under jax.jit it
    # is the hinted length (static, so Range can use it) standing for the real count, as long
    # as every op between keeps the mask's non-zeros.
    scratch.register(
        "Copy",
        1,
        domain=DOMAIN,
        schema=_schema("Copy", [("X", "T")], [("Y", "T")], [("T", ["tensor(bool)"])]),
        padding="moves",
        keeps_non_zeros=keeps_non_zeros,
    )(lambda X: X)
    ints = {"zero": np.array(0, np.int64), "one": np.array(1, np.int64)}
    model = _model(
        [
            helper.make_node("NonZero", ["mask"], ["where"]),
            helper.make_node("Copy", ["mask"], ["copied"], domain=DOMAIN),
            helper.make_node("Cast", ["copied"], ["ones"], to=TensorProto.INT64),
            helper.make_node("ReduceSum", ["ones"], ["count"], keepdims=0),
            helper.make_node("Range", ["zero", "count", "one"], ["positions"]),
            helper.make_node("ReduceSum", ["positions"], ["total"], keepdims=0),
        ],
        [helper.make_tensor_value_info("mask", TensorProto.BOOL, [2, 3])],
        [helper.make_tensor_value_info("total", TensorProto.INT64, [])],
        [helper.make_tensor(name, TensorProto.INT64, [], [int(v)]) for name, v in ints.items()],
    )
    loaded = jax.jit(jaxonnx.load(model, registry=scratch, size_hints={"where": 5}))
    mask = np.array([[True, False, True], [False, True, False]])
    if keeps_non_zeros:
        assert int(loaded(mask)[0]) == 0 + 1 + 2
    else:  # the count is a traced value, which Range cannot take as its length
        with pytest.raises(jaxonnx.StaticValueError, match="limit"):
            loaded(mask)
