"""Exact gradients, vmap, multi-device sharding and StableHLO export.

Every formulation of every op (from ``jaxonnx.supported_ops()``, so the tests grow with the
registry) and the interpreter, through ``jaxonnx.load``. A formulation is a run of versions
that share their function, contract, attributes and formals and differ only in the types
the newer ones add (``tests/_formulations.py``); its newest version runs the cases (and an
older one only a case the newest lacks). ``tests/test_op_table.py`` checks that grouping,
and ``test_every_registered_version_has_cases`` that the older versions take the cases' types.

These ops only move values, so each output element is a copy of one input element (or a
fill value). The *source map* of a call says which: it is the op run by onnx's reference
implementation (``onnx.reference``, independent of jaxonnx) on index arrays,
``np.arange(size).reshape(shape)``. From it, in numpy:

- the forward value is ``inputs.flat[source]``,
- the JVP of a tangent is ``tangent.flat[source]``,
- the VJP of a cotangent is the scatter-add ``np.add.at(zeros, source, cotangent)``;
  repeated indices accumulate, fill positions (-1) get nothing.

Also: vmap equals a Python loop; a loaded model sharded along its batch axis over 8
devices equals the single-device result and stays sharded; ``jax.export`` round trips
(concrete and symbolic batch, with ``vjp_order=1``); jit traces once per shape.
"""

from __future__ import annotations

import dataclasses
import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest
from _models import mixed_inputs, mixed_model
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from jax.test_util import check_grads
from onnx import helper
from onnx.reference import ReferenceEvaluator

import jaxonnx
from jaxonnx._core.dtypes import onnx_type_name
from tests._formulations import formulations

INT64_MIN = np.iinfo(np.int64).min
INT64_MAX = np.iinfo(np.int64).max
TOL = dict(rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- cases


@dataclasses.dataclass(frozen=True, eq=False)  # hashed by identity, for the caches
class Case:
    """One call of an op: positional inputs (numpy) and attributes.

    The floating inputs are the differentiable ones; they are passed as JAX arrays (or
    tracers). The others (indices, conditions, Slice bounds) stay numpy, i.e. static.
    """

    name: str
    args: tuple
    attrs: dict = dataclasses.field(default_factory=dict)

    @property
    def diff(self) -> tuple[int, ...]:
        return tuple(i for i, a in enumerate(self.args) if a is not None and np.issubdtype(a.dtype, np.floating))

    def primals(self) -> tuple[jax.Array, ...]:
        # device_put, not jnp.asarray: the latter compiles an identity program per new shape.
        return tuple(jax.device_put(self.args[i]) for i in self.diff)

    def function(self, op: jaxonnx.OpVersion, **extra):
        """The op as a function of the differentiable inputs only."""

        def f(*values):
            args = list(self.args)
            for i, value in zip(self.diff, values):
                args[i] = value
            return op(*args, **self.attrs, **extra)

        return f


def _normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def _i64(*values):
    return np.array(values, dtype=np.int64)


def _slice_cases(version):
    x = _normal(3, 4, 5)
    if version == 1:  # bounds are attributes; no steps, no negative axes
        return [
            Case("axes02", (x,), dict(starts=[1, -4], ends=[3, 100], axes=[0, 2])),
            Case("default_axes_clamped", (x,), dict(starts=[-100, 1], ends=[2, -1])),
        ]
    cases = [
        Case("negative_steps", (x, _i64(-1, 4), _i64(INT64_MIN, 0), _i64(2, 0), _i64(-1, -2))),
        Case("positive_steps", (x, _i64(0, 1), _i64(INT64_MAX, 4), _i64(1, 2), _i64(2, 1))),
        Case("empty", (x, _i64(2), _i64(2), _i64(1))),
    ]
    if version >= 11:
        cases.append(Case("negative_axis", (x, _i64(-2), _i64(-5), _i64(-1), _i64(-1))))
    return cases


def _gather_elements_cases(version):
    return [
        Case(
            "axis0_repeated_negative",
            (_normal(3, 4), _i64([0, -1, 2, 0], [0, 0, -3, 1], [2, 2, 2, 2], [-1, 1, 0, -2])),
            dict(axis=0),
        ),
        Case(
            "axis_minus1_int32",
            (_normal(3, 4, seed=1), np.array([[3, -4, 0, 0, -1], [1, 1, 1, -3, 2], [0, 0, 0, 0, 0]], np.int32)),
            dict(axis=-1),
        ),
        Case(
            "rank3_axis1",
            (_normal(2, 3, 2, seed=2), np.array([[[0, 2]], [[-1, -1]]], np.int64)),
            dict(axis=1),
        ),
    ]


def _compress_cases(version):
    x = _normal(3, 4)
    cases = [
        Case("no_axis", (x, np.array([True, False, True, True, False, False, True]))),
        Case("axis1_short_condition", (x, np.array([False, True, True])), dict(axis=1)),
        Case("none_selected", (x, np.array([False, False, False])), dict(axis=0)),
    ]
    if version >= 11:
        cases.append(Case("negative_axis", (x, np.array([True, False, True, True])), dict(axis=-1)))
    return cases


def _flatten_cases(version):
    x = _normal(2, 3, 4)
    return [
        Case("default_axis", (x,)),
        Case("scalar_axis0", (np.array(1.5),), dict(axis=0)),
        Case("axis_rank", (x,), dict(axis=3)) if version < 11 else Case("negative_axis", (x,), dict(axis=-2)),
    ]


def _where_cases(version):
    return [
        Case("broadcast", (np.array([[True], [False], [True]]), _normal(1, 4), _normal(3, 4, seed=1))),
        Case("scalar_y", (np.array([[True, False, False], [False, True, True]]), _normal(2, 3), np.array(-2.0))),
    ]


def _identity_cases(version):
    return [Case("matrix", (_normal(2, 3),))]


def _gather_cases(version):
    return [
        Case("axis0_repeated_negative", (_normal(4, 3), _i64([0, -1], [3, 0], [0, 0])), dict(axis=0)),
        Case("axis_minus1_scalar_index", (_normal(2, 3, 4, seed=1), np.array(-2, np.int32)), dict(axis=-1)),
    ]


def _gather_nd_cases(version):
    cases = [Case("pairs_repeated_negative", (_normal(3, 4, 2), _i64([0, -1], [2, 3], [0, -1])))]
    if version >= 12:
        cases.append(Case("batch_dims1", (_normal(2, 3, 4, seed=1), _i64([[2], [-1]], [[0], [0]])), dict(batch_dims=1)))
    return cases


def _scatter_nd_cases(version):  # reduction "none" with unique targets: each element from one input
    return [
        Case("rows", (_normal(4, 3), _i64([2], [-4]), _normal(2, 3, seed=1))),
        Case("elements", (_normal(3, 4, seed=2), _i64([0, -1], [2, 1], [1, 1]), _normal(3, seed=3))),
    ]


def _scatter_elements_cases(version):
    return [
        Case("axis0", (_normal(3, 4), _i64([1, 0, 2, -1], [-1, 2, 0, 0]), _normal(2, 4, seed=1)), dict(axis=0)),
        Case("axis_minus1_short", (_normal(3, 4, seed=2), _i64([3, -4], [1, 2]), _normal(2, 2, seed=3)), dict(axis=-1)),
    ]


def _pad_cases(version):
    x = _normal(2, 3, 4)
    if version <= 2:  # pads are an attribute; value-free modes only (a constant is no input here)
        key = "paddings" if version == 1 else "pads"
        return [
            Case("reflect", (x,), {key: [1, 2, 0, 1, 0, 3], "mode": "reflect"}),
            Case("edge", (x,), {key: [0, 0, 2, 1, 3, 0], "mode": "edge"}),
        ]
    cases = [
        Case("constant_value", (x, _i64(1, 0, 2, 0, 1, 1), np.array(-0.5))),
        Case("reflect", (x, _i64(1, 2, 3, 1, 1, 2)), dict(mode="reflect")),
        Case("edge", (x, _i64(0, 3, 1, 2, 0, 4)), dict(mode="edge")),
    ]
    if version >= 18:
        cases.append(Case("axes", (x, _i64(2, 1, 3, 0), np.array(1.5), _i64(-1, 0))))
    if version >= 19:
        cases.append(Case("wrap", (x, _i64(5, 2), None, _i64(2)), dict(mode="wrap")))
    return cases


def _one_hot_cases(version):
    indices = _i64([0, 3], [4, 1]) if version < 11 else _i64([0, -1], [4, -5])
    return [Case("axis1", (indices, np.array(5, np.int64), _normal(2)), dict(axis=1))]


def _depth_to_space_cases(version):
    cases = [Case("dcr", (_normal(1, 8, 2, 3),), dict(blocksize=2))]
    if version >= 11:
        cases.append(Case("crd", (_normal(2, 4, 3, 2, seed=1),), dict(blocksize=2, mode="CRD")))
    return cases


def _space_to_depth_cases(version):
    cases = [Case("dcr", (_normal(1, 2, 4, 6),), dict(blocksize=2))]
    if version >= 28:
        cases.append(Case("crd", (_normal(2, 1, 3, 3, seed=1),), dict(blocksize=3, mode="CRD")))
    return cases


CASE_BUILDERS = {
    "DepthToSpace": _depth_to_space_cases,
    "Gather": _gather_cases,
    "GatherND": _gather_nd_cases,
    "OneHot": _one_hot_cases,
    "Pad": _pad_cases,
    "ScatterElements": _scatter_elements_cases,
    "ScatterND": _scatter_nd_cases,
    "SpaceToDepth": _space_to_depth_cases,
    "Compress": _compress_cases,
    "Flatten": _flatten_cases,
    "GatherElements": _gather_elements_cases,
    "Identity": _identity_cases,
    "Slice": _slice_cases,
    "Where": _where_cases,
}
# Ops with no tensor inputs: nothing to differentiate, batch or shard.
NO_TENSOR_INPUTS = {"Constant"}


def _newest_of_formulations(op_type: str) -> list[int]:
    """The newest version of each of the op's formulations (tests/_formulations.py)."""
    return [group[-1].since_version for group in formulations(op_type)]


def _op_case_params():
    """Each formulation's cases at its newest version; an older version of it runs only a
    case (by name) that the newest lacks. Returns the params and the (op, case) pairs left
    to the newest version: what those older versions would have run."""
    params, dropped = [], []
    for op_type in jaxonnx.supported_ops():
        if op_type not in CASE_BUILDERS:
            continue
        for group in formulations(op_type):
            newest = {case.name for case in CASE_BUILDERS[op_type](group[-1].since_version)}
            for op in group:
                for case in CASE_BUILDERS[op_type](op.since_version):
                    if op is group[-1] or case.name not in newest:
                        params.append(pytest.param(op, case, id=f"{op.name}-{case.name}"))
                    else:
                        dropped.append((op, case))
    return params, dropped


OP_CASES, _DROPPED_CASES = _op_case_params()


def test_every_registered_version_has_cases():
    # Every registered op's gradients and vmap are checked from one table
    # (tests/test_op_table.py); the ops here also get sharding, export and exact
    # scatter-add VJPs, at every version they have.
    missing = [
        f"{op_type}-{version}"
        for op_type, versions in jaxonnx.supported_ops().items()
        if op_type in CASE_BUILDERS
        for version in versions
        if not CASE_BUILDERS[op_type](version)
    ]
    assert not missing, f"add transformation cases for {missing} to CASE_BUILDERS"
    covered = {(p.values[0].op_type, p.values[0].since_version) for p in OP_CASES}
    for op_type in ("Compress", "Flatten", "GatherElements", "Where", "Slice"):
        assert {v for o, v in covered if o == op_type} == set(_newest_of_formulations(op_type))
    for op, case in (p.values for p in OP_CASES):
        assert op.since_version in jaxonnx.supported_ops()[op.op_type]
        assert case.diff, f"{op.name}-{case.name} has no floating input"
    # What running a case at an older version of its formulation checked beyond the run at
    # the newest (the same function, contract and attributes): that it takes the case's types.
    assert _DROPPED_CASES
    for op, case in _DROPPED_CASES:
        allowed = {name: types for name, _, types, _ in op._formals}
        for name, x in zip(op.formal_names(len(case.args)), case.args):
            if x is not None:
                assert onnx_type_name(x.dtype) in allowed[name], f"{op.name} does not take {x.dtype} for `{name}`"


# --------------------------------------------------------------------------- the expectation


def _onnx_elem_type(dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


@functools.cache
def _reference_model(op_type: str, version: int, case: Case) -> onnx.ModelProto:
    names = [f"in{i}" if a is not None else "" for i, a in enumerate(case.args)]
    while names and not names[-1]:
        names.pop()
    attrs = dict(case.attrs)
    if op_type == "GatherElements" and attrs.get("axis", 0) < 0:
        # onnx's reference GatherElements compares the wrong dims for a negative axis
        # (`shape[:axis] + shape[axis + 1:]`); give it the same axis counted from the front.
        attrs["axis"] += case.args[0].ndim
    node = helper.make_node(op_type, names, ["out"], **attrs)
    inputs = [
        helper.make_tensor_value_info(n, _onnx_elem_type(a.dtype), a.shape) for n, a in zip(names, case.args) if n
    ]
    output = helper.make_tensor_value_info("out", onnx.TensorProto.UNDEFINED, None)
    graph = helper.make_graph([node], "one_op", inputs, [output])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", version)])


def _index_arrays(shapes) -> tuple[list[np.ndarray], int]:
    """float64 arrays of the given shapes holding 0, 1, 2, ... across all of them in order."""
    arrays, offset = [], 0
    for shape in shapes:
        size = int(np.prod(shape, dtype=np.int64))
        arrays.append(np.arange(offset, offset + size, dtype=np.float64).reshape(shape))
        offset += size
    return arrays, offset


def _as_source(values: np.ndarray) -> np.ndarray:
    assert values.dtype == np.float64
    source = values.astype(np.int64)
    assert np.array_equal(source, values), "an index did not survive the reference run"
    return source


def source_map(op: jaxonnx.OpVersion, case: Case) -> tuple[np.ndarray, int]:
    """``(source, n)``: output element k copies element ``source[k]`` of the ``n``
    concatenated (flattened) differentiable inputs. From onnx's reference implementation."""
    key = (op.op_type, op.since_version, case)
    if key not in _SOURCE_MAPS:
        arrays, total = _index_arrays([case.args[i].shape for i in case.diff])
        feeds = {f"in{i}": a for i, a in enumerate(case.args) if a is not None}
        feeds.update({f"in{i}": a for i, a in zip(case.diff, arrays)})
        (out,) = ReferenceEvaluator(_reference_model(op.op_type, op.since_version, case)).run(None, feeds)
        _SOURCE_MAPS[key] = (_as_source(np.asarray(out)), total)
    return _SOURCE_MAPS[key]


_SOURCE_MAPS: dict = {}


def gathered(source: np.ndarray, values) -> np.ndarray:
    """``values`` (the concatenated inputs or tangents) at ``source``; 0 where ``source`` is -1."""
    flat = np.concatenate([np.asarray(v, np.float64).reshape(-1) for v in values])
    return np.where(source >= 0, flat[np.maximum(source, 0)], 0.0)


def scatter_add(source: np.ndarray, total: int, cotangent, shapes) -> list[np.ndarray]:
    """The VJP of a value-moving op: the cotangent summed into the positions it came from."""
    flat = np.zeros(total)
    kept = source >= 0
    np.add.at(flat, source[kept], np.asarray(cotangent)[kept])
    out, offset = [], 0
    for shape in shapes:
        size = int(np.prod(shape, dtype=np.int64))
        out.append(flat[offset : offset + size].reshape(shape))
        offset += size
    return out


def _maybe_jit(f, jit: bool):
    return jax.jit(f) if jit else f


# --------------------------------------------------------------------------- gradients of every op version


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("op, case", OP_CASES)
def test_vjp_is_scatter_add_of_cotangent(op, case, jit):
    source, total = source_map(op, case)
    primals = case.primals()
    shapes = [p.shape for p in primals]
    f = case.function(op)
    cotangent = _normal(*jax.eval_shape(f, *primals).shape, seed=7)
    argnums = tuple(range(len(primals)))

    def vjp_and_grad(primals, cotangent):
        # The VJP and the gradient of the linear loss, in one program under jit.
        out, vjp = jax.vjp(f, *primals)
        loss = lambda *values: jnp.sum(f(*values) * cotangent)  # noqa: E731
        return out, vjp(cotangent), jax.grad(loss, argnums=argnums)(*primals)

    out, grads, loss_grads = _maybe_jit(vjp_and_grad, jit)(primals, jax.device_put(cotangent))
    np.testing.assert_array_equal(out, gathered(source, primals))
    expected = scatter_add(source, total, cotangent, shapes)
    assert len(grads) == len(primals)
    for grad, want, primal in zip(grads, expected, primals):
        assert grad.dtype == np.float64 and grad.shape == primal.shape
        np.testing.assert_allclose(grad, want, **TOL)
    for grad, want in zip(loss_grads, expected):
        np.testing.assert_allclose(grad, want, **TOL)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("op, case", OP_CASES)
def test_jvp_moves_tangents_like_values(op, case, jit):
    source, _ = source_map(op, case)
    primals = case.primals()
    tangents = tuple(jax.device_put(_normal(*p.shape, seed=11 + i)) for i, p in enumerate(primals))
    out, tangent_out = _maybe_jit(lambda p, t: jax.jvp(case.function(op), p, t), jit)(primals, tangents)
    np.testing.assert_array_equal(out, gathered(source, primals))
    assert tangent_out.dtype == np.float64
    np.testing.assert_array_equal(tangent_out, gathered(source, tangents))


@pytest.mark.parametrize("op, case", OP_CASES)
def test_check_grads(op, case):
    check_grads(case.function(op), case.primals(), order=1, modes=("fwd", "rev"))


# --------------------------------------------------------------------------- GatherElements with traced indices


@pytest.mark.parametrize("version", _newest_of_formulations("GatherElements"))
def test_gather_elements_traced_indices_gradient(version):
    op = jaxonnx.get_op("GatherElements", version)
    data = _normal(3, 4)
    indices = _i64([0, -1, 2, 0], [0, 0, -3, 1], [2, 2, 2, 2], [-1, 1, 0, -2])
    case = Case("traced", (data, indices), dict(axis=0))
    source, total = source_map(op, case)
    cotangent = _normal(4, 4, seed=3)

    def loss(d, i):
        return jnp.sum(op(d, i, axis=0) * cotangent)

    # Indices are a jit argument: traced, so negative indices are wrapped in the graph.
    grad = jax.jit(jax.grad(loss))(jnp.asarray(data), jnp.asarray(indices))
    (want,) = scatter_add(source, total, cotangent, [data.shape])
    np.testing.assert_allclose(grad, want, **TOL)
    # Repeated indices really accumulate: data[2, :] is read by a whole row and more.
    assert np.count_nonzero(want) < want.size


# --------------------------------------------------------------------------- Compress: traced condition, size


@pytest.mark.parametrize("size", [3, 5])
@pytest.mark.parametrize("version", _newest_of_formulations("Compress"))
def test_compress_size_hint_gradient_pads_with_zero(version, size):
    op = jaxonnx.get_op("Compress", version)
    data = _normal(3, 4)
    condition = np.array([True, False, True, True])
    source, total = source_map(op, Case("static", (data, condition), dict(axis=1)))
    padded = np.concatenate([source, np.full((3, size - 3), -1)], axis=1)

    def f(d, c):
        return op(d, c, axis=1, size=size)

    out = jax.jit(f)(jnp.asarray(data), jnp.asarray(condition))
    np.testing.assert_array_equal(out, gathered(padded, [data]))

    cotangent = _normal(3, size, seed=4)
    grad = jax.jit(jax.grad(lambda d, c: jnp.sum(f(d, c) * cotangent)))(jnp.asarray(data), jnp.asarray(condition))
    (want,) = scatter_add(padded, total, cotangent, [data.shape])
    np.testing.assert_allclose(grad, want, **TOL)
    np.testing.assert_array_equal(grad[:, 1], 0.0)  # the dropped column

    tangent = _normal(3, 4, seed=6)
    _, tangent_out = jax.jit(lambda d, t, c: jax.jvp(lambda x: f(x, c), (d,), (t,)))(
        jnp.asarray(data), jnp.asarray(tangent), jnp.asarray(condition)
    )
    np.testing.assert_array_equal(tangent_out, gathered(padded, [tangent]))
    np.testing.assert_array_equal(tangent_out[:, 3:], 0.0)  # padding has a zero tangent


def test_public_compress_size_hint_gradient():
    data = jnp.asarray(_normal(5, 2))
    condition = jnp.asarray(np.array([False, True, False, True, True]))
    cotangent = _normal(4, 2, seed=8)

    def loss(d, c):
        return jnp.sum(jaxonnx.ops.compress(d, c, axis=0, size=4) * cotangent)

    grad = jax.jit(jax.grad(loss))(data, condition)
    want = np.zeros((5, 2))
    want[[1, 3, 4]] = cotangent[:3]  # the fourth (padding) row of the cotangent goes nowhere
    np.testing.assert_array_equal(grad, want)
    padded = jax.jit(lambda d, c: jaxonnx.ops.compress(d, c, axis=0, size=4))
    check_grads(lambda d: padded(d, condition), (data,), order=1, modes=("fwd", "rev"))


# --------------------------------------------------------------------------- vmap of every op version


def _batched(array: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``n`` different versions of ``array`` stacked on a new leading axis."""
    return np.stack([array + k * _normal(*array.shape, seed=seed + k) for k in range(n)])


@pytest.mark.parametrize("op, case", OP_CASES)
def test_vmap_equals_loop(op, case):
    f = case.function(op)
    batched = [_batched(np.asarray(p), 3, seed=20 + i) for i, p in enumerate(case.primals())]
    loop = np.stack([f(*(jax.device_put(b[k]) for b in batched)) for k in range(3)])
    np.testing.assert_array_equal(jax.vmap(f)(*map(jax.device_put, batched)), loop)
    # Batched on the last axis instead, under jit.
    moved = [jax.device_put(np.moveaxis(b, 0, -1)) for b in batched]
    np.testing.assert_array_equal(jax.jit(jax.vmap(f, in_axes=-1))(*moved), loop)


@pytest.mark.parametrize("version", _newest_of_formulations("GatherElements"))
def test_vmap_gather_elements_data_and_indices(version):
    op = jaxonnx.get_op("GatherElements", version)
    rng = np.random.default_rng(1)
    data = rng.normal(size=(4, 3, 5))
    indices = rng.integers(-3, 3, size=(4, 2, 5))  # per-example indices, negatives included

    def gather(d, i):
        return op(d, i, axis=0)

    loop_data_only = np.stack([gather(jnp.asarray(d), indices[0]) for d in data])
    np.testing.assert_array_equal(jax.vmap(gather, in_axes=(0, None))(jnp.asarray(data), indices[0]), loop_data_only)
    loop_both = np.stack([gather(jnp.asarray(d), i) for d, i in zip(data, indices)])
    np.testing.assert_array_equal(jax.vmap(gather)(jnp.asarray(data), jnp.asarray(indices)), loop_both)
    np.testing.assert_array_equal(jax.jit(jax.vmap(gather))(jnp.asarray(data), jnp.asarray(indices)), loop_both)

    # Per-example gradients with per-example (traced, repeated, negative) indices.
    cotangent = rng.normal(size=(4, 2, 5))
    grads = jax.vmap(jax.grad(lambda d, i, c: jnp.sum(gather(d, i) * c)))(
        jnp.asarray(data), jnp.asarray(indices), jnp.asarray(cotangent)
    )
    for d, i, c, g in zip(data, indices, cotangent, grads):
        source, total = source_map(op, Case("example", (d, i), dict(axis=0)))
        np.testing.assert_allclose(g, scatter_add(source, total, c, [d.shape])[0], **TOL)


@pytest.mark.parametrize(
    "in_axes", [(0, 0, 0), (None, 0, 0), (0, None, None), (None, 0, None), (None, None, 0), (0, 0, None)]
)
@pytest.mark.parametrize("version", _newest_of_formulations("Where"))
def test_vmap_where(version, in_axes):
    op = jaxonnx.get_op("Where", version)
    rng = np.random.default_rng(2)
    condition = rng.random(size=(3, 2, 4)) < 0.5
    x = rng.normal(size=(3, 1, 4))
    y = rng.normal(size=(3, 2, 1))
    args = (condition, x, y)
    vmapped = jax.vmap(op, in_axes=in_axes)(*(jnp.asarray(a) for a in args))
    loop = np.stack([op(*(jnp.asarray(a[k] if axis == 0 else a) for a, axis in zip(args, in_axes))) for k in range(3)])
    np.testing.assert_array_equal(vmapped, loop)


@pytest.mark.parametrize("version", _newest_of_formulations("Compress"))
def test_vmap_compress_condition_with_size(version):
    op = jaxonnx.get_op("Compress", version)
    data = _normal(4, 3)
    conditions = np.array([[True, False, True, True], [False, False, False, False], [True, True, True, True]])
    vmapped = jax.jit(jax.vmap(lambda c: op(jnp.asarray(data), c, axis=0, size=4)))(jnp.asarray(conditions))
    loop = np.stack([op(jnp.asarray(data), c, axis=0, size=4) for c in conditions])  # static conditions
    np.testing.assert_array_equal(vmapped, loop)
    np.testing.assert_array_equal(vmapped[1], 0.0)


# --------------------------------------------------------------------------- StableHLO export of every op version


@pytest.mark.parametrize("op, case", OP_CASES)
def test_export_roundtrip(op, case):
    f = case.function(op)
    primals = case.primals()
    exported = jax.export.export(jax.jit(f))(*(jax.ShapeDtypeStruct(p.shape, p.dtype) for p in primals))
    restored = jax.export.deserialize(exported.serialize(vjp_order=1))
    out_shape = restored.out_avals[0].shape
    cotangent = jax.device_put(_normal(*out_shape, seed=9))

    @jax.jit
    def restored_and_direct(primals, cotangent):
        # The restored function, its serialized VJP and the direct ones, in one program.
        out, vjp = jax.vjp(restored.call, *primals)
        out_direct, vjp_direct = jax.vjp(f, *primals)
        return out, out_direct, vjp(cotangent), vjp_direct(cotangent)

    out, out_direct, grads, grads_direct = restored_and_direct(primals, cotangent)
    np.testing.assert_array_equal(out, out_direct)
    for got, want in zip(grads, grads_direct):
        np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- jit traces once


def _counting(f):
    calls = []

    def counted(*args):
        calls.append(None)
        return f(*args)

    return counted, calls


@pytest.mark.parametrize("op, case", OP_CASES)
def test_jit_traces_once(op, case):
    counted, traces = _counting(case.function(op))
    jitted = jax.jit(counted)
    source, _ = source_map(op, case)
    for k in range(3):
        shifted = tuple(case.args[i] + k for i in case.diff)  # numpy; the expected value by the source map
        np.testing.assert_array_equal(jitted(*map(jax.device_put, shifted)), gathered(source, shifted))
    assert len(traces) == 1


# --------------------------------------------------------------------------- through the interpreter

OPSETS = [11, 25]


def _model_source_map(proto: onnx.ModelProto, x_shape, idx, cond):
    """Source maps of each output of ``mixed_model`` over ``[x, y, scale]`` flattened, by onnx's reference."""
    model = onnx.ModelProto()
    model.CopyFrom(proto)
    weights = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    (x_index, y_index, scale_index), total = _index_arrays([x_shape, weights["y"].shape, weights["scale"].shape])
    for tensor in model.graph.initializer:
        if tensor.name in ("y", "scale"):
            tensor.CopyFrom(onnx.numpy_helper.from_array(y_index if tensor.name == "y" else scale_index, tensor.name))
    outs = ReferenceEvaluator(model).run(None, {"x": x_index, "idx": idx, "cond": cond})
    return [_as_source(o) for o in outs], total, [x_shape, weights["y"].shape, weights["scale"].shape]


def _integer_cotangents(outs, seed=0):
    # Integer-valued: the scatter-adds are exact whatever the order of summation.
    rng = np.random.default_rng(seed)
    return [rng.integers(-3, 4, size=o.shape).astype(np.float64) for o in outs]


def _linear_loss(outs, cotangents):
    return sum(jnp.sum(o * c) for o, c in zip(outs, cotangents))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("opset", OPSETS)
def test_model_grad_wrt_inputs_and_params(opset, jit, tmp_path):
    proto = mixed_model(opset)
    path = tmp_path / "mixed.onnx"
    onnx.save(proto, path)
    model = jaxonnx.load(path)
    x, idx, cond = mixed_inputs(2)
    params = model.params
    assert sorted(params) == ["scale", "y"]  # int64 bounds and bool `keep` are not params
    sources, total, shapes = _model_source_map(proto, x.shape, idx, cond)
    flat = np.concatenate([x.ravel(), np.asarray(params["y"]).ravel(), np.asarray(params["scale"]).ravel()])

    outs = model(jnp.asarray(x), idx, cond)
    for out, source in zip(outs, sources):
        np.testing.assert_array_equal(out, flat[source])
    cotangents = _integer_cotangents(outs)
    want = functools.reduce(
        lambda acc, sc: [a + b for a, b in zip(acc, scatter_add(sc[0], total, sc[1], shapes))],
        zip(sources, cotangents),
        [np.zeros(s) for s in shapes],
    )

    def loss(params, x, idx, cond):
        return _linear_loss(model.apply(params, x, idx, cond), cotangents)

    grad_params, grad_x = _maybe_jit(jax.grad(loss, argnums=(0, 1)), jit)(params, jnp.asarray(x), idx, cond)
    np.testing.assert_array_equal(grad_x, want[0])
    np.testing.assert_array_equal(grad_params["y"], want[1])
    np.testing.assert_array_equal(grad_params["scale"], want[2])

    # Gradient w.r.t. the graph input through plain `model(...)` agrees.
    grad_x_call = _maybe_jit(jax.grad(lambda x: _linear_loss(model(x, idx, cond), cotangents)), jit)(jnp.asarray(x))
    np.testing.assert_array_equal(grad_x_call, want[0])

    # One fine-tuning step moves the weights, and apply runs with the new ones.
    stepped = jax.tree.map(lambda p, g: p - 0.5 * g, params, grad_params)
    new_outs = model.apply(stepped, jnp.asarray(x), idx, cond)
    new_flat = np.concatenate([x.ravel(), np.asarray(stepped["y"]).ravel(), np.asarray(stepped["scale"]).ravel()])
    for out, source in zip(new_outs, sources):
        np.testing.assert_array_equal(out, new_flat[source])
    assert loss(stepped, x, idx, cond) < loss(params, x, idx, cond)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_model_int_and_bool_inputs_are_not_differentiable(jit):
    model = jaxonnx.load(mixed_model(13))
    x, idx, cond = mixed_inputs(2)

    def loss(x, idx, cond):
        return sum(jnp.sum(o**2) for o in model(x, idx, cond))

    reference = jax.grad(loss)(jnp.asarray(x), idx, cond)  # int and bool inputs as numpy
    # ... and as JAX arrays (traced under jit) give the same gradient.
    grad = _maybe_jit(jax.grad(loss), jit)(jnp.asarray(x), jnp.asarray(idx), jnp.asarray(cond))
    np.testing.assert_array_equal(grad, reference)
    assert grad.dtype == np.float64 and grad.shape == x.shape and np.any(grad != 0)

    # Asking for all of them: int and bool inputs get float0 zeros, not a float gradient.
    grads = _maybe_jit(jax.grad(loss, argnums=(0, 1, 2), allow_int=True), jit)(
        jnp.asarray(x), jnp.asarray(idx), jnp.asarray(cond)
    )
    np.testing.assert_array_equal(grads[0], reference)
    for g, a in zip(grads[1:], (idx, cond)):
        assert g.dtype == jax.dtypes.float0 and g.shape == a.shape
    with pytest.raises(TypeError, match="int|bool"):
        jax.grad(loss, argnums=1)(jnp.asarray(x), jnp.asarray(idx), jnp.asarray(cond))


def test_vmap_over_model_equals_loop():
    model = jaxonnx.load(mixed_model(13))
    batches = [mixed_inputs(2, seed=s) for s in range(3)]
    xs, idxs, conds = (np.stack(parts) for parts in zip(*batches))
    loops = [np.stack(o) for o in zip(*(model(jnp.asarray(x), i, c) for x, i, c in batches))]

    for vmapped in (
        jax.vmap(model)(jnp.asarray(xs), jnp.asarray(idxs), jnp.asarray(conds)),
        jax.jit(jax.vmap(model))(jnp.asarray(xs), jnp.asarray(idxs), jnp.asarray(conds)),
    ):
        assert len(vmapped) == len(loops)
        for got, want in zip(vmapped, loops):
            np.testing.assert_array_equal(got, want)

    # Only the float input batched; the int and bool inputs shared.
    shared = jax.vmap(model, in_axes=(0, None, None))(jnp.asarray(xs), idxs[0], conds[0])
    loop_shared = [np.stack(o) for o in zip(*(model(jnp.asarray(x), idxs[0], conds[0]) for x in xs))]
    for got, want in zip(shared, loop_shared):
        np.testing.assert_array_equal(got, want)

    # vmap over the params: an ensemble of fine-tuned weights.
    params = model.params
    ensemble = {k: jnp.stack([v + k2 for k2 in range(3)]) for k, v in params.items()}
    per_member = jax.vmap(model.apply, in_axes=(0, None, None, None))(ensemble, jnp.asarray(xs[0]), idxs[0], conds[0])
    for k in range(3):
        single = model.apply({n: v[k] for n, v in ensemble.items()}, jnp.asarray(xs[0]), idxs[0], conds[0])
        for got, want in zip(per_member, single):
            np.testing.assert_array_equal(got[k], want)


def _mesh(axis_type: str):
    devices = jax.devices()
    if len(devices) < 8:  # an accelerator machine: the 8 virtual CPU devices of conftest
        devices = jax.devices("cpu")
    assert len(devices) >= 8, "conftest sets --xla_force_host_platform_device_count=8"
    if axis_type == "auto":  # sharding propagated by the compiler
        return Mesh(np.array(devices[:8]), ("batch",))
    # `jax.make_mesh`'s default: shardings are part of the types, checked at trace time.
    return jax.make_mesh((8,), ("batch",), axis_types=(jax.sharding.AxisType.Explicit,), devices=devices[:8])


def _is_batch_sharded(array: jax.Array) -> bool:
    sharding = array.sharding
    return (
        not sharding.is_fully_replicated
        and isinstance(sharding, NamedSharding)
        and sharding.spec[0] == "batch"
        and len(sharding.device_set) == 8
    )


@pytest.mark.parametrize("axis_type", ["auto", "explicit"])
def test_sharded_model_matches_single_device(axis_type):
    model = jaxonnx.load(mixed_model(13))
    x, idx, cond = mixed_inputs(16)
    batch = NamedSharding(_mesh(axis_type), P("batch"))
    sharded = [jax.device_put(a, batch) for a in (x, idx, cond)]
    assert all(_is_batch_sharded(a) for a in sharded)

    single = model(jnp.asarray(x), idx, cond)
    counted, traces = _counting(model)
    jitted = jax.jit(counted)
    outs = jitted(*sharded)
    for got, want in zip(outs, single):
        np.testing.assert_array_equal(got, want)
        assert _is_batch_sharded(got), got.sharding

    cotangents = _integer_cotangents(single, seed=1)

    def loss(params, x, idx, cond):
        return _linear_loss(model.apply(params, x, idx, cond), cotangents)

    grad = jax.grad(loss, argnums=(0, 1))
    grad_params, grad_x = jax.jit(grad)(model.params, *sharded)
    want_params, want_x = grad(model.params, jnp.asarray(x), idx, cond)
    np.testing.assert_array_equal(grad_x, want_x)
    assert _is_batch_sharded(grad_x), grad_x.sharding
    for name in want_params:  # summed over the batch across devices: exact for integer cotangents
        np.testing.assert_array_equal(grad_params[name], want_params[name])

    # New sharded values of the same shapes reuse the compiled program.
    x2 = jax.device_put(x + 1.0, batch)
    np.testing.assert_array_equal(jitted(x2, *sharded[1:])[0], model(jnp.asarray(x + 1.0), idx, cond)[0])
    assert len(traces) == 1


def _abstract(*arrays):
    return [jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype) for a in arrays]


def test_export_model_roundtrip_and_gradient():
    model = jaxonnx.load(mixed_model(25))
    x, idx, cond = mixed_inputs(2)
    exported = jax.export.export(jax.jit(model))(*_abstract(x, idx, cond))
    assert [a.dtype for a in exported.in_avals] == [np.float64, np.int64, np.bool_]
    assert "stablehlo" in exported.mlir_module()
    restored = jax.export.deserialize(exported.serialize(vjp_order=1))
    outs, direct = restored.call(jnp.asarray(x), idx, cond), model(jnp.asarray(x), idx, cond)
    assert len(outs) == len(direct) == 3
    for got, want in zip(outs, direct):
        np.testing.assert_array_equal(got, want)

    cotangents = _integer_cotangents(direct, seed=2)
    grad_restored = jax.jit(jax.grad(lambda x: _linear_loss(restored.call(x, idx, cond), cotangents)))(jnp.asarray(x))
    grad_direct = jax.grad(lambda x: _linear_loss(model(x, idx, cond), cotangents))(jnp.asarray(x))
    np.testing.assert_array_equal(grad_restored, grad_direct)
    assert np.any(grad_direct != 0)

    # Export of apply: the weights are arguments of the StableHLO function too.
    params = model.params
    exported_apply = jax.export.export(jax.jit(model.apply))(
        {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in params.items()}, *_abstract(x, idx, cond)
    )
    restored_apply = jax.export.deserialize(exported_apply.serialize(vjp_order=1))
    shifted = {k: v + 1.0 for k, v in params.items()}
    got_outs = restored_apply.call(shifted, jnp.asarray(x), idx, cond)
    for got, want in zip(got_outs, model.apply(shifted, jnp.asarray(x), idx, cond)):
        np.testing.assert_array_equal(got, want)
    x = jnp.asarray(x)
    grad_params = jax.grad(lambda p: _linear_loss(restored_apply.call(p, x, idx, cond), cotangents))(params)
    want_params = jax.grad(lambda p: _linear_loss(model.apply(p, x, idx, cond), cotangents))(params)
    for name in params:
        np.testing.assert_array_equal(grad_params[name], want_params[name])


def test_export_model_with_symbolic_batch():
    model = jaxonnx.load(mixed_model(25))
    (b,) = jax.export.symbolic_shape("b")
    exported = jax.export.export(jax.jit(model))(
        jax.ShapeDtypeStruct((b, 6, 4), np.float64),
        jax.ShapeDtypeStruct((b, 5, 4), np.int64),
        jax.ShapeDtypeStruct((b, 5, 1), np.bool_),
    )
    assert [tuple(map(str, a.shape)) for a in exported.out_avals] == [("b", "15"), ("b", "5", "4"), ("b", "6", "4")]
    restored = jax.export.deserialize(exported.serialize(vjp_order=1))
    for batch in (1, 3):  # one exported function for every batch size
        x, idx, cond = mixed_inputs(batch, seed=batch)
        direct = model(jnp.asarray(x), idx, cond)
        for got, want in zip(restored.call(jnp.asarray(x), idx, cond), direct):
            np.testing.assert_array_equal(got, want)
        cotangents = _integer_cotangents(direct, seed=batch)
        grad_restored = jax.grad(lambda x: _linear_loss(restored.call(x, idx, cond), cotangents))(jnp.asarray(x))
        grad_direct = jax.grad(lambda x: _linear_loss(model(x, idx, cond), cotangents))(jnp.asarray(x))
        np.testing.assert_array_equal(grad_restored, grad_direct)


def test_model_jit_and_grad_trace_once():
    model = jaxonnx.load(mixed_model(13))
    counted, traces = _counting(model)
    jitted = jax.jit(counted)
    for seed in range(3):
        x, idx, cond = mixed_inputs(2, seed=seed)
        outs = jitted(jnp.asarray(x), jnp.asarray(idx), jnp.asarray(cond))
        for got, want in zip(outs, model(jnp.asarray(x), idx, cond)):
            np.testing.assert_array_equal(got, want)
    assert len(traces) == 1

    @jax.jit
    @chex.assert_max_traces(n=1)
    def grad_step(params, x, idx, cond):
        return jax.grad(lambda p: sum(jnp.sum(o**2) for o in model.apply(p, x, idx, cond)))(params)

    params = model.params
    previous = None
    for seed in range(3):
        x, idx, cond = mixed_inputs(2, seed=seed)
        grads = grad_step(params, jnp.asarray(x), jnp.asarray(idx), jnp.asarray(cond))
        assert previous is None or not np.array_equal(grads["y"], previous)
        previous = grads["y"]
        params = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    # The counter is live: a new shape must trace again, and chex refuses the second trace.
    with pytest.raises(AssertionError, match="traced"):
        x, idx, cond = mixed_inputs(3)
        grad_step(params, jnp.asarray(x), jnp.asarray(idx), jnp.asarray(cond))
