"""Padded slices and scatters under size hints (issue 41 §11), on PyTorch's exports
(tools/export_padded_slice_fixtures.py): ``torch.nn.EmbeddingBag`` with offsets (a Loop whose
body slices each bag between offsets read from the data: a Slice between traced bounds is
padded to its input's length and marked, and the bag's reduction leaves the padding out)
and ``x.masked_scatter(mask, src)`` (a ScatterND whose number of updates depends on the
mask: marked updates write nothing). Each runs eagerly, under ``jax.jit``, at a second
shape, and with gradients, equal to torch's (computed when the fixtures were made)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper

import jaxonnx

FIXTURES = Path(__file__).parent / "fixtures" / "size_hints"
MANIFEST = json.loads((FIXTURES / "padded_slices.json").read_text())
EXPORTED = sorted(name for name, entry in MANIFEST.items() if "error" not in entry)


def test_every_module_was_exported_by_both_exporters():
    assert not [name for name, entry in MANIFEST.items() if "error" in entry]
    assert len(EXPORTED) == 10


def _inputs(arrays, entry, index):
    return [arrays[f"in{index}_{name}"] for name in entry["inputs"]]


@pytest.mark.parametrize("x64", [True, False], ids=["x64", "x32"])
@pytest.mark.parametrize("name", EXPORTED)
def test_exports_run_eagerly_and_jitted_at_two_shapes_as_torch(name, x64):
    entry = MANIFEST[name]
    arrays = np.load(FIXTURES / f"{name}.npz")
    with jax.enable_x64(x64), warnings.catch_warnings():
        # x32: the int64 indices and offsets compute as int32, as the warning says (they fit).
        warnings.simplefilter("ignore", jaxonnx.X64Warning)
        model = jaxonnx.load(str(FIXTURES / f"{name}.onnx"), size_hints=entry["size_hints"])
        jitted = jax.jit(model)
        shapes = set()
        for index in (0, 1):
            inputs = _inputs(arrays, entry, index)
            want = arrays[f"out{index}_{entry['outputs'][0]}"]
            shapes.add(want.shape)
            for run in (model, jitted):
                (got,) = run(*inputs)
                np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6, err_msg=f"{name} set {index}")
    assert len(shapes) == 2  # the second set is another shape: a second trace


@pytest.mark.parametrize("name", EXPORTED)
def test_gradients_under_jit_are_torchs(name):
    entry = MANIFEST[name]
    arrays = np.load(FIXTURES / f"{name}.npz")
    model = jaxonnx.load(str(FIXTURES / f"{name}.onnx"), size_hints=entry["size_hints"])
    positions = [entry["inputs"].index(n) for n in entry["differentiable"]]
    for index in (0, 1):
        inputs = _inputs(arrays, entry, index)
        cotangent = arrays[f"cot{index}"]

        def loss(*floats, inputs=inputs, cotangent=cotangent):
            args = list(inputs)
            for position, value in zip(positions, floats):
                args[position] = value
            return jnp.sum(model(*args)[0] * cotangent)

        grads = jax.jit(jax.grad(loss, argnums=tuple(range(len(positions)))))(*[inputs[p] for p in positions])
        for input_name, got in zip(entry["differentiable"], grads):
            np.testing.assert_allclose(
                np.asarray(got),
                arrays[f"grad{index}_{input_name}"],
                rtol=1e-5,
                atol=1e-6,
                err_msg=f"{name} d/d{input_name} set {index}",
            )


def test_embedding_bag_under_jit_was_refused_for_its_traced_slice_and_is_a_padded_slice_now():
    # The bag's Slice inside the Loop is padded to the length of `indices` (no hint needed):
    # without the marks its padding would read weight[0] into every bag's sum.
    entry = MANIFEST["bag_sum_torchscript"]
    arrays = np.load(FIXTURES / "bag_sum_torchscript.npz")
    inputs = _inputs(arrays, entry, 1)
    inputs[0] = (inputs[0] + 100 * (np.arange(len(inputs[0]))[:, None] == 0)).astype(np.float32)  # a loud row 0
    (got,) = jax.jit(jaxonnx.load(str(FIXTURES / "bag_sum_torchscript.onnx")))(*inputs)
    weight, indices, offsets = inputs
    bounds = [*offsets.tolist(), len(indices)]
    want = np.stack([weight[indices[a:b]].sum(0) for a, b in zip(bounds, bounds[1:])])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def _slice_model():
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        [
            helper.make_node("Slice", ["x", "starts", "ends"], ["part"]),
            helper.make_node("ReduceMax", ["part"], ["top"], keepdims=0),
        ],
        "g",
        [vi("x", T.FLOAT, [6]), vi("starts", T.INT64, [1]), vi("ends", T.INT64, [1])],
        [vi("part", T.FLOAT, None), vi("top", T.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


X6 = np.array([5, -1, -2, -3, 9, -4], np.float32)


@pytest.mark.parametrize(("start", "end"), [(1, 4), (-3, 6), (4, 2), (-100, 100)])
def test_a_slice_between_traced_bounds_is_padded_to_its_hint_and_its_reductions_leave_the_padding_out(start, end):
    model = jaxonnx.load(_slice_model(), size_hints={"part": 6})
    bounds = (np.array([start]), np.array([end]))
    want = X6[start:end]
    for run in (model, jax.jit(model)):
        part, top = run(X6, *bounds)
        assert np.shape(part) == (6,)
        np.testing.assert_array_equal(np.asarray(part)[: len(want)], want)
        assert not np.asarray(part)[len(want) :].any()  # zeros past the real entries
        if len(want):
            assert float(top) == want.max()  # not the padding's 0, nor x[0] = 5 read past the bounds


def test_a_padded_slice_no_hint_asks_for_is_refused_at_the_graph_output():
    model = jaxonnx.load(_slice_model())
    part, top = model(X6, np.array([1]), np.array([4]))  # eagerly: exact
    np.testing.assert_array_equal(part, X6[1:4])
    with pytest.raises(
        jaxonnx.StaticValueError,
        match=r"Node 'Slice_0' \(Slice-13\) slices between bounds known only "
        r"at run time.*graph output 'part'.*size_hints=\{'part': <length>\}",
    ):
        jax.jit(model)(X6, np.array([1]), np.array([4]))


def test_a_slice_longer_than_its_hint_raises_at_run_time():
    model = jax.jit(jaxonnx.load(_slice_model(), size_hints={"part": 2}))
    with pytest.raises(Exception, match=r"Slice cut 3 entries at run time but its output was given size=2"):
        jax.block_until_ready(model(X6, np.array([1]), np.array([4])))


def test_the_slice_op_takes_traced_bounds_with_a_size():
    got = jax.jit(lambda s, e: jaxonnx.ops.slice(jnp.asarray(X6), s, e, size=4))(np.array([1]), np.array([4]))
    np.testing.assert_array_equal(np.asarray(got), [-1, -2, -3, 0])
    with pytest.raises(jaxonnx.StaticValueError, match=r"give `size=`"):
        jax.jit(lambda s: jaxonnx.ops.slice(jnp.asarray(X6), s, np.array([4])))(np.array([1]))
