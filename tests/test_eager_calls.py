"""Eager calls, ``model(x)`` as onnxruntime's users write ``session.run``: the whole graph's
executable, reached without per-call work that costs more than a small model runs (a
computation to see whether a trace is in progress; the input checks again for arrays of a
shape and type already checked), and without skipping a check that a new input needs."""

from __future__ import annotations

import functools
import json
import pathlib
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest

import jaxonnx

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "models"


@pytest.fixture(scope="module")
def mlp():
    model = jaxonnx.load(FIXTURES / "mlp_dynamo_dynamic.onnx")
    x = np.asarray(np.load(FIXTURES / "mlp_dynamo_dynamic.npz")["inputs.0"], np.float32)
    return model, x


def _primitives_run_eagerly(fn) -> int:
    """How many primitives JAX evaluated one at a time, outside any trace, while ``fn`` ran
    (a compiled executable called from Python is not among them)."""
    from jax._src import core

    count = 0
    original = core.EvalTrace.process_primitive

    def counting(self, primitive, tracers, params):
        nonlocal count
        count += 1
        return original(self, primitive, tracers, params)

    core.EvalTrace.process_primitive = counting
    try:
        jax.block_until_ready(fn())
    finally:
        core.EvalTrace.process_primitive = original
    return count


def test_a_warm_eager_call_runs_only_the_compiled_graph(mlp):
    model, x = mlp
    x = jax.device_put(x)
    model(x)  # compiles
    assert _primitives_run_eagerly(lambda: model(x)) == 0
    assert _primitives_run_eagerly(lambda: model(x=x)) == 0  # by name: checked, no computation either


def test_repeated_eager_calls_equal_the_jitted_model(mlp):
    model, x = mlp
    expected = jax.jit(model)(x)
    for value in (x, jax.device_put(x), jax.device_put(x), jax.device_put(np.concatenate([x, x]))):
        got = model(value)
        rows = len(value)
        np.testing.assert_allclose(np.asarray(got[0])[: len(x)], np.asarray(expected[0]), rtol=1e-6, atol=1e-6)
        assert got[0].shape[0] == rows


def test_arrays_of_a_new_shape_or_type_are_checked_again(mlp):
    model, x = mlp
    model(jax.device_put(x))
    model(jax.device_put(x))  # the signature is known now
    with pytest.raises(jaxonnx.OnnxTypeError, match="'x'.*int32"):
        model(jax.device_put(x.astype(np.int32)))
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"'x' is declared with shape"):
        model(jax.device_put(np.ones((x.shape[0], x.shape[1] + 1), np.float32)))


def test_a_model_on_constants_inside_a_trace_is_traced(mlp):
    # No input is a tracer, yet the call is traced: the model must be staged into the
    # caller's computation, not run eagerly at trace time.
    model, x = mlp
    constant = jax.device_put(x)
    model(constant)
    jaxpr = jax.make_jaxpr(lambda: model(constant))()
    assert any(eq.primitive.name in ("pjit", "jit", "dot_general") for eq in jaxpr.jaxpr.eqns)
    np.testing.assert_allclose(
        np.asarray(jax.jit(lambda: model(constant))()[0]), np.asarray(model(constant)[0]), rtol=1e-6, atol=1e-6
    )
    # Under jax.jit: one program, not each primitive of an eager gradient compiled on its own.
    grads = jax.jit(jax.grad(lambda scale: model(constant * scale)[0].sum()))(1.0)
    assert np.isfinite(float(grads))


def test_small_computations_compile_their_products_single_threaded(mlp):
    from jaxonnx import _xla_cpu

    model, x = mlp
    small = jax.jit(model).lower(x)
    large = jax.jit(lambda a: a @ a).lower(np.ones((256, 256)))  # 33 million flops
    expected = dict(_xla_cpu._SMALL_COMPUTATION_OPTIONS) if _xla_cpu.TOOK_CONVOLUTIONS_OUT else {}
    assert jaxonnx.compiler_options(small) == expected
    assert jaxonnx.compiler_options(large) == {}
    compiled = model.compile(x)
    jitted = small.compile()  # jax.jit(model) for this input, without jaxonnx's options
    if expected:  # the products are Eigen's, not YNNPACK's
        assert "__ynn_fusion" in jitted.as_text()
        assert "__ynn_fusion" not in compiled.as_text()
    x = jax.device_put(x)
    np.testing.assert_allclose(np.asarray(compiled(x)[0]), np.asarray(jitted(x)[0]), rtol=1e-6, atol=1e-6)


def test_compile_takes_shapes_and_refuses_other_inputs(mlp):
    model, x = mlp
    run = model.compile(jax.ShapeDtypeStruct((5, x.shape[1]), jnp.float32))
    assert run(jax.device_put(np.ones((5, x.shape[1]), np.float32)))[0].shape[0] == 5
    with pytest.raises(TypeError):
        run(jax.device_put(np.ones((6, x.shape[1]), np.float32)))


@pytest.fixture(scope="module")
def gpt2():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxonnx.X64Warning)
        model = jaxonnx.load(FIXTURES / "gpt2_dynamo_dynamic.onnx")
    data = np.load(FIXTURES / "gpt2_dynamo_dynamic.npz")
    return model, [data["inputs.0"], data["inputs.1"]]


def test_an_embedding_model_compiles_whole_and_still_checks_its_ids(gpt2):
    # The token ids reach a Gather: the eager call compiles the graph with the bounds check
    # deferred, instead of running op by op (27-35 ms a call before, against ~0.1 ms).
    model, (ids, mask) = gpt2
    assert model.eager_mode == "whole graph compiled per input signature"
    expected = jax.jit(model)(ids, mask)
    for _ in range(2):
        got = model(ids, mask)
        np.testing.assert_allclose(np.asarray(got[0]), np.asarray(expected[0]), rtol=1e-5, atol=1e-5)
    assert _primitives_run_eagerly(lambda: model(ids, mask)) == 0
    bad = ids.copy()
    bad[0, 1] = 10**6
    with pytest.raises(
        jaxonnx.OnnxValidationError,
        match=r"Node 'node_embedding' \(Gather-13, inputs [^)]*\) failed: Gather-13 got index 1000000 at "
        r"position \(0, 1\) "
        r"of `indices`, outside \[-100, 99\]",
    ):
        model(bad, mask)
    bad[0, 1] = -101  # one below the negative range
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"got index -101 at position \(0, 1\)"):
        model(bad, mask)
    bad[0, 1] = -100  # in range: counts from the back
    np.testing.assert_allclose(
        np.asarray(model(bad, mask)[0]), np.asarray(jax.jit(model)(bad, mask)[0]), rtol=1e-5, atol=1e-5
    )


def test_jax_arrays_run_the_checked_executable_of_their_signature_and_raise_alike(gpt2):
    # Positional JAX arrays skip the feed's checks once their signature is known (as for a
    # graph without deferred checks); the executable still raises on an out-of-range id.
    model, (ids, mask) = gpt2
    ids, mask = jax.device_put(ids), jax.device_put(mask)
    expected = jax.jit(model)(ids, mask)
    before = len(model._plan.compiled)
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(model(ids, mask)[0]), np.asarray(expected[0]), rtol=1e-5, atol=1e-5)
    assert len(model._plan.compiled) == before + 1  # one executable for the three calls
    assert _primitives_run_eagerly(lambda: model(ids, mask)) == 0
    bad = np.asarray(ids).copy()
    bad[0, 1] = 10**6
    bad = jax.device_put(bad)
    with pytest.raises(jaxonnx.OnnxValidationError) as fast:
        model(bad, mask)
    with pytest.raises(jaxonnx.OnnxValidationError) as general:
        model(np.asarray(bad), np.asarray(mask))  # numpy inputs take the checked general path
    assert str(fast.value) == str(general.value)
    assert "Gather-13 got index 1000000 at position (0, 1) of `indices`" in str(fast.value)
    assert len(model._plan.compiled) == before + 1  # same signature: the same executable raised


def test_under_jit_out_of_range_ids_are_clamped_as_documented(gpt2):
    model, (ids, mask) = gpt2
    bad = ids.copy()
    bad[0, 1] = 10**6
    clamped = bad.copy()
    clamped[0, 1] = 99
    np.testing.assert_array_equal(
        np.asarray(jax.jit(model)(bad, mask)[0]), np.asarray(jax.jit(model)(clamped, mask)[0])
    )


# --------------------------------------------------------------------------- indices from the inputs
# Every op that reads input-derived indices at trace time to raise on one out of range defers
# that check as Gather does: the eager call compiles the graph whole and still raises.


def _scatter_elements_reference(data, indices, updates, axis):
    """ScatterElements with ``reduction="add"`` in a loop; an index out of range writes nothing."""
    out = data.copy()
    for position in np.ndindex(indices.shape):
        dim = data.shape[axis]
        if -dim <= indices[position] < dim:
            target = list(position)
            target[axis] = indices[position] % dim
            out[tuple(target)] += updates[position]
    return out


def _scatter_nd_reference(data, indices, updates):
    """ScatterND with ``reduction="add"`` in a loop; a row with an index out of range writes nothing."""
    out = data.copy()
    for row in np.ndindex(indices.shape[:-1]):
        if all(-n <= i < n for i, n in zip(indices[row], data.shape)):
            out[tuple(int(i) % n for i, n in zip(indices[row], data.shape))] += updates[row]
    return out


def _gather_nd_reference(data, indices):
    """GatherND of ``data`` by pairs; a pair out of range reads zero."""
    inside = (indices >= -np.array(data.shape)) & (indices < np.array(data.shape))
    rows = [data[tuple(pair)] if ok.all() else 0 for pair, ok in zip(indices, inside)]
    return np.array(rows, data.dtype)


def _negative_log_likelihood_reference(log_prob, target):
    """``-log_prob[n, target[n]]``, nan for a target outside the classes."""
    classes = log_prob.shape[1]
    picked = log_prob[np.arange(len(target)), np.clip(target, 0, classes - 1)]
    return np.where((target >= 0) & (target < classes), -picked, np.nan).astype(log_prob.dtype)


def _reverse_sequence_reference(x, lengths):
    """ReverseSequence with ``time_axis=0``, ``batch_axis=1``, each length clipped into [0, T]."""
    out = x.copy()
    for b, n in enumerate(np.clip(lengths, 0, x.shape[0])):
        out[:n, b] = x[:n, b][::-1]
    return out


class _Case(NamedTuple):
    op_type: str
    opset: int
    attributes: dict
    inputs: dict  # name -> in-range value (None: omitted); the node takes them in this order
    outputs: dict  # name -> onnx element type
    index: str  # the input whose values the op checks
    bad: tuple  # (position, value) out of range
    message: str  # the op's error, after "failed: "
    documented: Callable  # inputs (by name) -> the first output under jax.jit
    domain: str = ""


_FLOAT, _INT32 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT32
_DATA = np.arange(12, dtype=np.float32).reshape(3, 4)
_LOG_PROB = np.log(np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25], [0.7, 0.1, 0.1, 0.1]], np.float32))
_RNG = np.random.default_rng(0)
_EMBEDDING = {
    "word_embedding": _RNG.standard_normal((5, 4)).astype(np.float32),
    "position_embedding": _RNG.standard_normal((3, 4)).astype(np.float32),
    "segment_embedding": None,
    "gamma": np.ones(4, np.float32),
    "beta": np.zeros(4, np.float32),
}


def _embedding_reference(inputs):
    """EmbedLayerNormalization's output with the ids clamped into the word table."""
    ids = np.clip(inputs["input_ids"], 0, 4)
    total = inputs["word_embedding"][ids] + inputs["position_embedding"][np.arange(3)][None]
    mean = total.mean(-1, keepdims=True)
    return (total - mean) / np.sqrt(((total - mean) ** 2).mean(-1, keepdims=True) + 1e-12)


_CACHES = {
    "cos_cache": _RNG.standard_normal((5, 2)).astype(np.float32),
    "sin_cache": _RNG.standard_normal((5, 2)).astype(np.float32),
}


def _tensor_scatter_reference(inputs):
    """TensorScatter along axis 1 in "linear" mode; positions past the cache are dropped."""
    out = inputs["past_cache"].copy()
    for b, start in enumerate(inputs["write_indices"]):
        for s, row in enumerate(inputs["update"][b]):
            if 0 <= start + s < out.shape[1]:
                out[b, start + s] = row
    return out


def _rotary_reference(x, positions, inputs):
    """RoPE of ``x`` (batch, sequence, heads, 4), halves paired; a position past the caches
    reads nan, a negative one counts from the back."""
    inside = (positions >= -5) & (positions < 5)
    cos = np.where(inside[..., None], inputs["cos_cache"][np.clip(positions, -5, 4)], np.nan)[:, :, None]
    sin = np.where(inside[..., None], inputs["sin_cache"][np.clip(positions, -5, 4)], np.nan)[:, :, None]
    x1, x2 = x[..., :2], x[..., 2:]
    return np.concatenate([cos * x1 - sin * x2, sin * x1 + cos * x2], axis=-1).astype(np.float32)


def _max_unpool_reference(x, indices, shape):
    """MaxUnpool as a loop; an index outside the output is dropped."""
    out = np.zeros(int(np.prod(shape)), x.dtype)
    for value, index in zip(x.reshape(-1), indices.reshape(-1)):
        if 0 <= index < out.size:
            out[index] = value
    return out.reshape(shape)


def _max_roi_pool_reference(x, rois):
    """MaxRoiPool of one bin per RoI (whole-pixel RoIs, scale 1); a batch id outside ``x`` reads nan."""
    rows = []
    for batch, x1, y1, x2, y2 in rois.astype(int):
        inside = 0 <= batch < len(x)
        rows.append(x[batch, :, y1 : y2 + 1, x1 : x2 + 1].max(axis=(1, 2)) if inside else np.full(x.shape[1], np.nan))
    return np.array(rows, x.dtype).reshape(len(rois), x.shape[1], 1, 1)


def _attention_reference(inputs):
    """Attention of one query over the first ``nonpad_kv_seqlen`` keys of each batch (all keys past them)."""
    q, k, v = inputs["Q"], inputs["K"], inputs["V"]
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(q.shape[-1])
    valid = np.arange(k.shape[2])[None, :] < np.clip(inputs["nonpad_kv_seqlen"], 0, k.shape[2])[:, None]
    scores = np.where(valid[:, None, None, :], scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return np.einsum("bhqk,bhkd->bhqd", weights / weights.sum(-1, keepdims=True), v).astype(np.float32)


_INDEX_CASES = {
    (case.domain + "." if case.domain else "") + case.op_type: case
    for case in (
        _Case(
            "GatherElements",
            13,
            {"axis": 0},
            {"data": _DATA, "indices": np.array([[0, 2, -1, 1], [2, -3, 0, 1]])},
            {"y": _FLOAT},
            "indices",
            ((1, 2), 3),
            "GatherElements-13 got index 3 at position (1, 2) of `indices`, outside [-3, 2] for axis 0 of `data` "
            "with shape (3, 4).",
            # Negative indices wrapped, then clamped.
            lambda i: np.take_along_axis(
                i["data"], np.clip(np.where(i["indices"] < 0, i["indices"] + 3, i["indices"]), 0, 2), 0
            ),
        ),
        _Case(
            "GatherND",
            13,
            {},
            {"data": _DATA, "indices": np.array([[1, 2], [0, -1]])},
            {"y": _FLOAT},
            "indices",
            ((1, 1), 7),
            "GatherND-13 got index 7 at position (1, 1) of `indices`, outside [-4, 3] for dim 1 of `data` "
            "with shape (3, 4).",
            lambda i: _gather_nd_reference(i["data"], i["indices"]),
        ),  # zeros
        _Case(
            "ScatterElements",
            18,
            {"axis": 1, "reduction": "add"},
            {
                "data": _DATA,
                "indices": np.array([[3, 0, 3], [-1, 1, 2]]),
                "updates": np.arange(1, 7, dtype=np.float32).reshape(2, 3),
            },
            {"y": _FLOAT},
            "indices",
            ((1, 0), -5),
            "ScatterElements-18 got index -5 at position (1, 0) of `indices`, outside [-4, 3] for dim 1 of `data` "
            "with shape (3, 4).",
            lambda i: _scatter_elements_reference(i["data"], i["indices"], i["updates"], 1),
        ),  # dropped
        _Case(
            "ScatterND",
            18,
            {"reduction": "add"},
            {
                "data": _DATA,
                "indices": np.array([[2], [-3]]),
                "updates": np.arange(1, 9, dtype=np.float32).reshape(2, 4),
            },
            {"y": _FLOAT},
            "indices",
            ((1, 0), 3),
            "ScatterND-18 got index 3 at position (1, 0) of `indices`, outside [-3, 2] for dim 0 of `data` "
            "with shape (3, 4).",
            lambda i: _scatter_nd_reference(i["data"], i["indices"], i["updates"]),
        ),  # dropped
        _Case(
            "Scatter",
            10,
            {"axis": 0},
            # Zero data: with distinct targets, "add" is writing, and a dropped update leaves 0.
            {
                "data": np.zeros((3, 4), np.float32),
                "indices": np.array([[2, 0, 1], [0, 1, 2]]),
                "updates": np.arange(1, 7, dtype=np.float32).reshape(2, 3),
            },
            {"y": _FLOAT},
            "indices",
            ((0, 1), 9),
            "Scatter-9 got index 9 at position (0, 1) of `indices`, outside [-3, 2] for dim 0 of `data` "
            "with shape (3, 4).",
            lambda i: _scatter_elements_reference(i["data"], i["indices"], i["updates"], 0),
        ),
        _Case(
            "NegativeLogLikelihoodLoss",
            13,
            {"reduction": "none"},
            {"input": _LOG_PROB, "target": np.array([3, 0, 1])},
            {"loss": _FLOAT},
            "target",
            ((1,), 4),
            "NegativeLogLikelihoodLoss-13 got class 4 at position (1,) of `target`, outside [0, 3] and not "
            "`ignore_index` (None).",
            lambda i: _negative_log_likelihood_reference(i["input"], i["target"]),
        ),  # nan
        _Case(
            "SoftmaxCrossEntropyLoss",
            13,
            {"reduction": "none", "ignore_index": 2},
            {"scores": _LOG_PROB * 3, "labels": np.array([3, 2, 1])},
            {"loss": _FLOAT},
            "labels",
            ((2,), -1),
            "SoftmaxCrossEntropyLoss-13 got class -1 at position (2,) of `labels`, outside [0, 3] and not "
            "`ignore_index` (2).",
            lambda i: np.where(
                i["labels"] == 2,
                0,
                _negative_log_likelihood_reference(
                    jax.nn.log_softmax(i["scores"], axis=1), np.where(i["labels"] == 2, 0, i["labels"])
                ),
            ),
        ),  # nan
        _Case(
            "ReverseSequence",
            10,
            {"time_axis": 0, "batch_axis": 1},
            {"input": np.arange(24, dtype=np.float32).reshape(4, 2, 3), "sequence_lens": np.array([2, 4])},
            {"y": _FLOAT},
            "sequence_lens",
            ((1,), 5),
            "ReverseSequence-10 got `sequence_lens`[1]=5, outside [0, 4] (the time dim 0 of `input` (4, 2, 3)).",
            lambda i: _reverse_sequence_reference(i["input"], i["sequence_lens"]),
        ),  # clipped
        _Case(
            "EmbedLayerNormalization",
            1,
            {"epsilon": 1e-12},
            {"input_ids": np.array([[1, 4, 0]], np.int32), "segment_ids": None, **_EMBEDDING},
            {"output": _FLOAT, "mask_index": _INT32},
            "input_ids",
            ((0, 1), 5),
            "EmbedLayerNormalization-1 got input_ids[0, 1]=5, outside the 5 rows of `word_embedding`.",
            _embedding_reference,
            domain="com.microsoft",
        ),  # clamped
        _Case(
            "TensorScatter",
            24,
            {"axis": 1, "mode": "linear"},
            {
                "past_cache": _RNG.standard_normal((2, 4, 3)).astype(np.float32),
                "update": _RNG.standard_normal((2, 2, 3)).astype(np.float32),
                "write_indices": np.array([1, 2]),
            },
            {"present_cache": _FLOAT},
            "write_indices",
            ((1,), 3),
            "TensorScatter-24 got `write_indices`=[1, 3] for an update of length 2 along axis 1; in 'linear' mode "
            "each is in [0, 2], so the update fits the cache.",
            _tensor_scatter_reference,
        ),  # dropped past the end
        _Case(
            "RotaryEmbedding",
            23,
            {},
            {
                "X": _RNG.standard_normal((1, 2, 3, 4)).astype(np.float32),
                **_CACHES,
                "position_ids": np.array([[0, 4, 2]]),
            },
            {"Y": _FLOAT},
            "position_ids",
            ((0, 1), 7),
            "RotaryEmbedding-23 got `position_ids` from 0 to 7; each is in [0, 5), the rows of the caches.",
            lambda i: _rotary_reference(i["X"].transpose(0, 2, 1, 3), i["position_ids"], i).transpose(0, 2, 1, 3),
        ),  # nan
        _Case(
            "RotaryEmbedding",
            1,
            {"num_heads": 1},
            {
                "input": _RNG.standard_normal((1, 3, 4)).astype(np.float32),
                "position_ids": np.array([[0, 4, 2]]),
                **_CACHES,
            },
            {"output": _FLOAT},
            "position_ids",
            ((0, 2), -1),
            "RotaryEmbedding-1 got positions from -1 to 4; each is in [0, 5), the rows of the caches.",
            lambda i: _rotary_reference(i["input"][:, :, None], i["position_ids"], i)[:, :, 0],
            domain="com.microsoft",
        ),
        _Case(
            "MaxUnpool",
            11,
            {"kernel_shape": [2, 2], "strides": [2, 2]},
            {"X": np.array([[[[1, 2], [3, 4]]]], np.float32), "I": np.array([[[[0, 3], [9, 14]]]])},
            {"Y": _FLOAT},
            "I",
            ((0, 0, 1, 1), 16),
            "MaxUnpool-11 got `I` with indices in [0, 16] for an output of shape [1, 1, 4, 4] (16 elements); every "
            "index must be in [0, 15].",
            lambda i: _max_unpool_reference(i["X"], i["I"], (1, 1, 4, 4)),
        ),  # dropped
        _Case(
            "MaxRoiPool",
            17,
            {"pooled_shape": [1, 1]},
            {
                "X": np.arange(32, dtype=np.float32).reshape(2, 1, 4, 4),
                "rois": np.array([[0, 0, 0, 1, 1], [1, 1, 1, 3, 2]], np.float32),
            },
            {"Y": _FLOAT},
            "rois",
            ((1, 0), 3),
            "MaxRoiPool-1 got batch ids [0.0, 3.0] in `rois` for `X` of 2 images; each must be in [0, 1].",
            lambda i: _max_roi_pool_reference(i["X"], i["rois"]),
        ),  # nan
        _Case(
            "Attention",
            24,
            {},
            {
                "Q": _RNG.standard_normal((2, 1, 1, 2)).astype(np.float32),
                "K": _RNG.standard_normal((2, 1, 3, 2)).astype(np.float32),
                "V": _RNG.standard_normal((2, 1, 3, 2)).astype(np.float32),
                "attn_mask": None,
                "past_key": None,
                "past_value": None,
                "nonpad_kv_seqlen": np.array([2, 3]),
            },
            {"Y": _FLOAT},
            "nonpad_kv_seqlen",
            ((1,), 5),
            "Attention-24 got `nonpad_kv_seqlen`=[2, 5]; each is in [0, 3], the key sequence length.",
            _attention_reference,
        ),  # all keys
    )
}


def _indices_model(case: _Case) -> onnx.ModelProto:
    """A model of one node that takes all its inputs (the checked indices too) from the graph inputs."""
    from onnx import helper

    given = _given(case)
    inputs = [
        helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype), value.shape)
        for name, value in given.items()
    ]
    outputs = [helper.make_tensor_value_info(name, kind, None) for name, kind in case.outputs.items()]
    node = helper.make_node(
        case.op_type,
        [name if name in given else "" for name in case.inputs],
        list(case.outputs),
        name=f"node_{case.op_type}",
        domain=case.domain,
        **case.attributes,
    )
    graph = helper.make_graph([node], case.op_type, inputs, outputs)
    opsets = [helper.make_opsetid("", case.opset if not case.domain else 17)]
    opsets += [helper.make_opsetid(case.domain, case.opset)] if case.domain else []
    return helper.make_model(graph, opset_imports=opsets)


def _given(case: _Case) -> dict:
    return {name: value for name, value in case.inputs.items() if value is not None}


def _with_bad_index(case: _Case) -> dict:
    position, value = case.bad
    inputs = _given(case)
    inputs[case.index] = inputs[case.index].copy()
    inputs[case.index][position] = value
    return inputs


def _op_by_op(model, inputs: dict):
    """The graph run node by node on concrete values (what an eager call ran before)."""
    return model.graph.run({name: jax.device_put(value) for name, value in inputs.items()})


@functools.cache
def _index_model(name: str) -> jaxonnx.Model:
    """One loaded model per case, shared by the three tests below: an executable one test
    compiled (the eager call's, ``jax.jit``'s) serves the others, which still call what they check."""
    return jaxonnx.load(_indices_model(_INDEX_CASES[name]))


@pytest.mark.parametrize("name", sorted(_INDEX_CASES))
def test_indices_from_the_inputs_compile_whole_and_equal_onnxruntime(name, run_onnxruntime):
    case = _INDEX_CASES[name]
    proto = _indices_model(case)
    model = _index_model(name)
    assert model.eager_mode == "whole graph compiled per input signature"
    inputs = _given(case)
    expected = run_onnxruntime(proto, inputs)
    for _ in range(2):
        for got, want in zip(model(**inputs), expected, strict=True):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)
    for got, want in zip(_op_by_op(model, inputs), expected, strict=True):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)
    positional = [jax.device_put(value) for value in inputs.values()]
    assert _primitives_run_eagerly(lambda: model(*positional)) == 0


@pytest.mark.parametrize("name", sorted(_INDEX_CASES))
def test_out_of_range_indices_from_the_inputs_raise_as_op_by_op(name):
    case = _INDEX_CASES[name]
    model = _index_model(name)
    inputs = _given(case)
    model(**inputs)  # compiled and checked for this signature
    bad = _with_bad_index(case)
    with pytest.raises(jaxonnx.OnnxValidationError) as deferred:
        model(**bad)
    with pytest.raises(jaxonnx.OnnxValidationError) as op_by_op:
        _op_by_op(model, bad)
    version = model.graph.nodes[0].op.name
    assert str(deferred.value) == str(op_by_op.value)  # the node, its inputs and the op's error
    assert str(deferred.value).startswith(f"Node 'node_{case.op_type}' ({version}, inputs ")
    assert str(deferred.value).endswith(f") failed: {case.message}")
    # The op's own error is chained, as op by op.
    assert isinstance(deferred.value.__cause__, jaxonnx.OnnxValidationError)
    assert str(deferred.value.__cause__) == str(op_by_op.value.__cause__) == case.message
    # The failed call leaves the model usable: the next in-range call computes.
    np.testing.assert_allclose(
        np.asarray(model(**inputs)[0]), np.asarray(jax.jit(model)(**inputs)[0]), rtol=1e-6, atol=1e-6
    )


@pytest.mark.parametrize("name", sorted(_INDEX_CASES))
def test_under_jit_out_of_range_indices_from_the_inputs_behave_as_documented(name):
    case = _INDEX_CASES[name]
    model = _index_model(name)
    bad = _with_bad_index(case)
    np.testing.assert_allclose(np.asarray(jax.jit(model)(**bad)[0]), case.documented(bad), rtol=1e-5, atol=1e-5)
    # The reference agrees with the model where every index is in range.
    inputs = _given(case)
    np.testing.assert_allclose(np.asarray(jax.jit(model)(**inputs)[0]), case.documented(inputs), rtol=1e-5, atol=1e-5)


def test_every_version_of_the_index_checking_ops_defers_its_checks():
    from jaxonnx._core.registry import get_op, supported_ops

    checked = {(case.domain, case.op_type, case.index) for case in _INDEX_CASES.values()}
    checked |= {("", "Gather", "indices"), ("com.microsoft", "QEmbedLayerNormalization", "input_ids")}
    checked |= {("com.microsoft", "GroupQueryAttention", "seqlens_k")}
    for domain, op_type, index in sorted(checked):
        for since in supported_ops(domain)[op_type]:
            op = get_op(op_type, since, domain)
            if index in [formal.name for formal in op.schema.inputs]:  # Attention-23 has no `nonpad_kv_seqlen`
                assert op.contract.takes("checks"), f"{op_type}-{since}"
                # read only to check it: a graph that computes it still compiles whole
                assert index not in op.contract.concrete or index in op.contract.checked_inputs(), f"{op_type}-{since}"


@pytest.mark.parametrize("name", ["bert_opt0", "bert_opt0_dynamic_int8"])
def test_transformer_optimizer_berts_compile_whole_for_an_eager_call(name, run_onnxruntime):
    # com.microsoft Attention and QAttention take their mask_index traced (it decides no
    # shape), and EmbedLayerNormalization defers its ids' check: an eager call of the
    # optimizer's BERT compiles the graph whole (it ran op by op, 45-110 ms a call).
    # bert_opt2 has bert_opt0's ops (less one Constant): its plan is checked here, its eager
    # outputs against onnxruntime's in test_microsoft_models.py::test_outputs_equal_onnxruntime.
    for also in ("bert_opt2",) if name == "bert_opt0" else ():
        assert jaxonnx.load(FIXTURES.parent / "microsoft" / f"{also}.onnx").eager_mode.startswith("whole graph")
    path = FIXTURES.parent / "microsoft" / f"{name}.onnx"
    model = jaxonnx.load(path)
    assert model.eager_mode == "whole graph compiled per input signature"
    rng = np.random.default_rng(0)
    highs = {"input_ids": 128, "attention_mask": 2, "token_type_ids": 2}  # the fixtures' vocabularies
    inputs = {i.name: rng.integers(0, highs[i.name], (2, 7)).astype(i.dtype) for i in model.inputs}
    inputs["attention_mask"][:, 0] = 1
    expected = run_onnxruntime(onnx.load(path), inputs)
    for _ in range(2):
        for got, want in zip(model(**inputs), expected, strict=True):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)
    positional = [jax.device_put(inputs[n]) for n in model.input_names]
    assert _primitives_run_eagerly(lambda: model(*positional)) == 0


@pytest.mark.filterwarnings("ignore::jaxonnx.DeclaredShapeWarning")  # the builder's, see test_microsoft_models.py
def test_builder_files_compile_whole_and_a_mask_row_of_zeros_raises_as_op_by_op():
    # onnxruntime-genai's builder computes GroupQueryAttention's `seqlens_k` from the attention
    # mask (ReduceSum, Sub): GQA defers its range check, so an eager call compiles the graph
    # whole (op by op it took 247 compiles against 9) and still raises on a row of zeros
    # (`seqlens_k` = -1), naming the node, as op by op. Its outputs against onnxruntime's:
    # test_microsoft_models.py::test_outputs_equal_onnxruntime[genai_*].
    folder = FIXTURES.parent / "microsoft"
    model = jaxonnx.load(folder / "genai_qwen2_fp32.onnx")
    assert model.eager_mode == "whole graph compiled per input signature"
    with open(folder / "manifest.json") as f:  # the builder declares the head size symbolic
        decoder = json.load(f)["fixtures"]["genai_qwen2_fp32"]["decoder"]
    feed = {"input_ids": np.array([[3, 1, 4, 1], [5, 9, 2, 6]]), "attention_mask": np.ones((2, 4), np.int64)}
    caches = [name for name in model.input_names if name.startswith("past_key_values.")]
    feed.update({name: np.zeros((2, decoder["num_kv_heads"], 0, decoder["head_size"]), np.float32) for name in caches})
    feed["attention_mask"][1, 2:] = 0  # right padding: in range
    np.testing.assert_allclose(
        np.asarray(model(**feed)[0]), np.asarray(_op_by_op(model, feed)[0]), rtol=1e-5, atol=1e-5
    )
    feed["attention_mask"][1] = 0
    with pytest.raises(jaxonnx.OnnxValidationError) as deferred:
        model(**feed)
    with pytest.raises(jaxonnx.OnnxValidationError) as op_by_op:
        _op_by_op(model, feed)
    assert str(deferred.value) == str(op_by_op.value)
    assert "(GroupQueryAttention-1, inputs " in str(deferred.value)
    assert str(deferred.value).endswith(
        "failed: GroupQueryAttention-1 got `seqlens_k`=[3, -1]; each seqlens_k + 1 is in [1, 4]."
    )


def test_an_empty_traced_index_has_nothing_to_check():
    # A deferred check that reports the indices' range must not take the min of an empty
    # array at trace time (op by op, an empty input passes its check).
    from jaxonnx._core.checks import DeferredChecks
    from jaxonnx.ops._nn.max_unpool import max_unpool

    checks = DeferredChecks()

    def unpool(x, indices):
        node = checks.for_node("Node 'u' (MaxUnpool-11) failed", "MaxUnpool-11")
        return max_unpool(x, indices, kernel_shape=[2, 2], strides=[2, 2], checks=node), checks.flags()

    out, flags = jax.jit(unpool)(np.zeros((0, 1, 2, 2)), np.zeros((0, 1, 2, 2), np.int32))
    assert out.shape == (0, 1, 4, 4) and flags == ()


def test_a_deferred_check_refuses_fields_it_fills_itself():
    from jaxonnx._core.checks import DeferredChecks

    node = DeferredChecks().for_node("Node 'g' (Gather-13) failed", "Gather-13")
    with pytest.raises(ValueError, match=r"fail_where fills \['position', 'value'\] itself"):
        node.fail_where(jnp.zeros(2, bool), jnp.zeros(2), "got {value} at {position}.", value=1, position=2)


def _slice_model(bounds_from_input: bool):
    from onnx import TensorProto, helper, numpy_helper

    starts = numpy_helper.from_array(np.array([1], np.int64), "starts")
    nodes = [helper.make_node("Slice", ["x", "starts", "ends"], ["y"], name="cut")]
    initializers = [starts]
    if bounds_from_input:  # ends = the length of a second input, a value computed from the inputs
        nodes.insert(0, helper.make_node("ReduceSum", ["n"], ["ends"], name="count", keepdims=1))
    else:
        initializers.append(numpy_helper.from_array(np.array([4], np.int64), "ends"))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])]
    if bounds_from_input:
        inputs.append(helper.make_tensor_value_info("n", TensorProto.INT64, [1]))
    graph = helper.make_graph(
        nodes, "slice", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_a_slice_with_known_bounds_compiles_whole_and_one_with_bounds_from_the_inputs_does_not():
    # Slice takes a padded length only between traced bounds: with constant bounds its
    # length is static, so it must not send the whole model op by op.
    x = np.arange(6, dtype=np.float32)
    known = jaxonnx.load(_slice_model(bounds_from_input=False))
    assert known.eager_mode == "whole graph compiled per input signature"
    np.testing.assert_array_equal(np.asarray(known(x)[0]), x[1:4])
    from_inputs = jaxonnx.load(_slice_model(bounds_from_input=True))
    assert from_inputs.eager_mode.startswith("op by op: node 'cut' (Slice-13) reads the value of `ends`")
    np.testing.assert_array_equal(np.asarray(from_inputs(x, np.array([5]))[0]), x[1:5])


_SEARCH = pathlib.Path(__file__).parent / "fixtures" / "generation_ops" / "gpt2_greedy_search.onnx"


def _greedy_feed(seed: int, max_length: int = 10) -> dict:
    ids = np.random.default_rng(seed).integers(2, 90, (2, 4)).astype(np.int32)
    return {
        "input_ids": ids,
        "max_length": np.array([max_length], np.int32),
        "min_length": np.array([0], np.int32),
        "repetition_penalty": np.array([1.0], np.float32),
        "vocab_mask": np.ones(96, np.int32),
        "prefix_vocab_mask": np.ones((2, 96), np.int32),
        "attention_mask": np.ones_like(ids),
    }


def test_a_search_node_called_eagerly_refuses_prompt_ids_beyond_the_vocabulary():
    """Eagerly, a GreedySearch file's decoder reads the prompt on known values, so a prompt id
    beyond the vocabulary is an error naming the node, not a clamped id (a search node
    compiled as one program of its own would trace the prompt and lose that check)."""
    model = jaxonnx.load(_SEARCH)
    names = [i.name for i in model.inputs]
    feed = _greedy_feed(0)
    feed["input_ids"][0, 1] = 500  # the vocabulary has 96 words
    with pytest.raises(jaxonnx.OnnxValidationError, match="GreedySearch_gpt2"):
        model(**{n: feed[n] for n in names})


def test_a_sampling_file_draws_anew_without_a_key_and_follows_a_key():
    """Without a key every eager call of a Sampling file draws anew, as onnxruntime does per
    run; with one, eager calls repeat the draw and equal jax.jit's."""
    model = jaxonnx.load(_SEARCH.with_name("gpt2_sampling.onnx"))
    names = [i.name for i in model.inputs]
    feed = {n: v for n, v in _greedy_feed(5, max_length=16).items() if n in names}

    def tokens(**extra):
        return np.asarray(jax.tree.leaves(model(**feed, **extra))[0])

    assert len({tokens().tobytes() for _ in range(4)}) > 1
    keyed = tokens(rng=jax.random.key(3))
    np.testing.assert_array_equal(tokens(rng=jax.random.key(3)), keyed)
    static = {n: v for n, v in feed.items() if n != "input_ids"}
    jitted = jax.jit(lambda ids: jax.tree.leaves(model(input_ids=ids, **static, rng=jax.random.key(3)))[0])
    np.testing.assert_array_equal(np.asarray(jitted(feed["input_ids"])), keyed)


@pytest.mark.parametrize("inside", ["graph", "local function"])
def test_a_graph_compiled_whole_that_draws_gets_a_fresh_key_per_eager_call(inside):
    """A RandomNormal without a seed, reading no input, leaves the graph compiled whole, in
    the graph or in a model-local function's body; an eager call without a key draws anew
    (a fresh key for the call), one with a key repeats."""
    from onnx import TensorProto as T
    from onnx import helper

    noise = helper.make_node("RandomNormal", [], ["noise"], shape=[3], dtype=T.FLOAT)
    functions = []
    if inside == "local function":
        functions = [helper.make_function("local", "Noise", [], ["noise"], [noise], [helper.make_opsetid("", 17)])]
        noise = helper.make_node("Noise", [], ["noise"], domain="local")
    graph = helper.make_graph(
        [noise, helper.make_node("Add", ["x", "noise"], ["y"])],
        "noisy",
        [helper.make_tensor_value_info("x", T.FLOAT, [3])],
        [helper.make_tensor_value_info("y", T.FLOAT, [3])],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    model = jaxonnx.load(helper.make_model(graph, opset_imports=opsets, functions=functions))
    assert model.eager_mode == "whole graph compiled per input signature"
    x = np.zeros(3, np.float32)
    first, second = (np.asarray(model(x)[0]) for _ in range(2))
    assert np.all(np.isfinite(first)) and not np.array_equal(first, second)
    keyed = np.asarray(model(x, rng=jax.random.key(1))[0])
    np.testing.assert_array_equal(np.asarray(model(x, rng=jax.random.key(1))[0]), keyed)
