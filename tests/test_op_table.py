"""Every registered op against onnx.reference, once per distinct formulation, with gradients and vmap.

The op list comes from the registry and the inputs from ``tests/op_examples`` (one entry
per op); a registered op without an entry fails ``test_every_registered_op_has_examples``.

Consecutive versions of an op that share their function, contract, attributes (with their
defaults), inputs and outputs, and differ only in types the newer one adds, compute the
same for every input the older one takes: an example runs once, at the newest of them
(:func:`formulations`; ``test_versions_run_once_differ_only_by_widened_types`` checks the
schemas, and ``test_every_version_accepts_the_examples_run_at_a_newer_one`` that the older
versions take the example's types). An example runs with JAX inputs, and also with numpy
inputs where the registry hands numpy to the function (see :func:`_numpy_path_differs`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

import jaxonnx
from jaxonnx import _platform
from jaxonnx._core.dtypes import onnx_type_name
from tests._formulations import formulations as op_formulations
from tests._grads import check_grads
from tests.op_examples import all_examples

EXAMPLES = all_examples()
#: Every registered op of every domain, keyed by (domain, op_type).
REGISTERED = {
    (domain, op_type): versions
    for domain in sorted(jaxonnx.REGISTRY.domains())
    for op_type, versions in jaxonnx.supported_ops(domain).items()
}
_DIFFERENTIABLE = onnx.defs.OpSchema.DifferentiationCategory.Differentiable


def test_every_registered_op_has_examples():
    missing = sorted(set(REGISTERED) - set(EXAMPLES))
    assert not missing, f"registered ops without an entry in tests/op_examples: {missing}"
    unknown = sorted(set(EXAMPLES) - set(REGISTERED))
    assert not unknown, f"examples for ops that are not registered: {unknown}"


def _case_id(op: jaxonnx.OpVersion, index: int) -> str:
    return f"{op.domain + '.' if op.domain else ''}{op.name}-{index}"


def _valid(op: jaxonnx.OpVersion, example) -> bool:
    if example.versions is not None and op.since_version not in example.versions:
        return False
    if not set(example.attributes) - set(op.contract.public_keywords()) <= set(op.schema.attributes):
        return False
    formals = op.schema.inputs
    variadic = formals and formals[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic
    return len(example.inputs) <= len(formals) or bool(variadic)


def formulations() -> list[list[jaxonnx.OpVersion]]:
    """Every registered version, grouped into formulations (tests/_formulations.py)."""
    return [group for (domain, op_type) in REGISTERED for group in op_formulations(op_type, domain)]


FORMULATIONS = formulations()


def _cases():
    """Each example once per formulation, at the newest version of it that the example is for."""
    cases = []
    for group in FORMULATIONS:
        for index, example in enumerate(EXAMPLES.get((group[0].domain, group[0].op_type), [])):
            valid = [op for op in group if _valid(op, example)]
            if valid:
                cases.append(pytest.param(valid[-1], example, id=_case_id(valid[-1], index)))
    return cases


def _dropped_versions():
    """``(version, example, version it runs at)`` for each example a formulation runs at a newer version only."""
    dropped = []
    for group in FORMULATIONS:
        for example in EXAMPLES.get((group[0].domain, group[0].op_type), []):
            valid = [op for op in group if _valid(op, example)]
            dropped += [(op, example, valid[-1]) for op in valid[:-1]]
    return dropped


def test_versions_run_once_differ_only_by_widened_types():
    """The op table runs an example once per formulation; each of its versions has the same
    function, contract, attributes (and defaults), inputs and outputs as the next, whose
    type constraints contain its own. The grouping also saves a third of the versions."""
    for group in FORMULATIONS:
        for older, newer in zip(group, group[1:]):
            assert (older.op_type, older.domain) == (newer.op_type, newer.domain)
            assert older.fn is newer.fn and older.contract == newer.contract, (older.name, newer.name)
            assert older.defaults.keys() == newer.defaults.keys(), (older.name, newer.name)
            assert all(np.array_equal(older.defaults[k], newer.defaults[k]) for k in older.defaults), (
                older.name,
                newer.name,
            )
            assert [f[:2] + f[3:] for f in older._formals] == [f[:2] + f[3:] for f in newer._formals], (
                older.name,
                newer.name,
            )
            assert [o.name for o in older.schema.outputs] == [o.name for o in newer.schema.outputs]
            for (name, _, old, _), (_, _, new, _) in zip(older._formals, newer._formals):
                assert old <= new, f"{newer.name} refuses {sorted(old - new)} for `{name}`, which {older.name} takes."
    versions = sum(len(group) for group in FORMULATIONS)
    assert versions == sum(len(v) for v in REGISTERED.values())
    assert len(FORMULATIONS) < 0.7 * versions, (len(FORMULATIONS), versions)


def test_every_version_accepts_the_examples_run_at_a_newer_one():
    """What running an example at an older version of its formulation checked beyond the
    run at the newest (the same function and attributes): that the older version takes
    the example's element types."""
    dropped = _dropped_versions()
    assert dropped
    for op, example, runs_at in dropped:
        allowed = {name: types for name, _, types, _ in op._formals}
        for name, x in zip(op.formal_names(len(example.inputs)), example.inputs):
            if isinstance(x, np.ndarray) and x.dtype.kind not in "OUS":
                type_name = onnx_type_name(x.dtype)
                assert type_name in allowed[name], (
                    f"{op.name} does not take {type_name} for `{name}`; {runs_at.name} does."
                )


def _reference(op: jaxonnx.OpVersion, example) -> list[np.ndarray]:
    if example.reference is not None:
        return list(example.reference(*example.inputs, **example.attributes))
    names = [f"in{i}" if x is not None else "" for i, x in enumerate(example.inputs)]
    outputs = [f"out{i}" for i in range(example.outputs or len(op.schema.outputs))]
    node = helper.make_node(op.op_type, names, outputs, domain=op.domain, **example.attributes)
    graph = helper.make_graph([node], "example", [], [helper.make_tensor_value_info(o, 0, None) for o in outputs])
    opsets = {op.domain: op.since_version} if op.domain else {}
    opsets.setdefault("", onnx.defs.onnx_opset_version() if op.domain else op.since_version)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()])
    model.ir_version = 8
    feeds = {n: x for n, x in zip(names, example.inputs) if n}
    return ReferenceEvaluator(model).run(None, feeds)


def _fed(x, feed: str):
    """An example input as numpy or JAX; a sequence stays a list (of numpy or JAX arrays)."""
    if x is None or feed == "numpy":
        return x
    if isinstance(x, dict) or (isinstance(x, np.ndarray) and x.dtype.kind in "OUS"):
        return x  # a map or a string tensor: JAX holds neither, those ops run eagerly on them
    # device_put, not jnp.asarray: jax 0.10's jnp.asarray compiles an identity program per
    # new shape and dtype (about 15 ms); device_put copies (the same dtypes, x64 on).
    return [jax.device_put(v) for v in x] if isinstance(x, list) else jax.device_put(x)


def _as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


def _assert_close(actual, expected, example):
    if isinstance(expected, list):  # a sequence
        assert isinstance(actual, list) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _assert_close(a, e, example)
        return
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(actual, expected, rtol=example.rtol, atol=example.atol)
    else:
        np.testing.assert_array_equal(actual, expected)


def _numpy_path_differs(op: jaxonnx.OpVersion, example) -> bool:
    """Whether numpy inputs reach the op's function as numpy (an op that folds, or one that
    reads inputs while known, or a sequence, which stays a list of numpy arrays); otherwise
    the registry converts them to JAX first, and the JAX run checks the same code."""
    return op.contract.folds or bool(op.contract.concrete) or any(isinstance(x, list) for x in example.inputs)


@pytest.mark.parametrize("op, example", _cases())
def test_matches_onnx_reference(op, example):
    """Eager values against onnx.reference (with numpy inputs too where the registry hands
    them to the function), each other platform's formulation where the op has one, and, at
    an op's newest version, vmap against a loop (:func:`_assert_vmap_equals_a_loop`)."""
    expected = _reference(op, example)
    for feed in ("numpy", "jax") if _numpy_path_differs(op, example) else ("jax",):
        inputs = [_fed(x, feed) for x in example.inputs]
        before = _platform.calls()
        _assert_matches(op, example, inputs, expected)
        if feed == "jax" and _platform.calls() > before:
            # A formulation per platform (a convolution, a pooling, a cumulative sum): it runs
            # again as each other platform computes it (jaxonnx._platform), so what GPU and
            # TPU compute is checked on every run; other ops cost nothing more.
            for branch in _platform.other_branches():
                with _platform.forced_branch(branch):
                    _assert_matches(op, example, inputs, expected)
    if _checks_vmap(op, example):
        _assert_vmap_equals_a_loop(op, example)


def _assert_matches(op, example, inputs, expected):
    actual = _as_tuple(op(*inputs, **example.attributes))
    assert len(actual) >= len([e for e in expected if e is not None])
    for a, e in zip(actual, expected):
        if e is not None:
            _assert_close(a, e, example)


def _newest_cases(predicate):
    cases = []
    for (domain, op_type), versions in REGISTERED.items():
        op = jaxonnx.get_op(op_type, max(versions), domain)
        for index, example in enumerate(EXAMPLES.get((domain, op_type), [])):
            if _valid(op, example) and predicate(op, example):
                cases.append(pytest.param(op, example, id=_case_id(op, index)))
    return cases


def _differentiable_inputs(op: jaxonnx.OpVersion, example) -> list[int]:
    names = op.formal_names(len(example.inputs))
    formals = {f.name: f for f in op.schema.inputs}
    return [
        i
        for i, (name, x) in enumerate(zip(names, example.inputs))
        if x is not None
        and np.asarray(x).dtype.kind == "f"
        and name not in op.contract.static
        and formals[name].differentiation_category == _DIFFERENTIABLE
    ]


@pytest.mark.parametrize("op, example", _newest_cases(lambda op, ex: ex.grad and _differentiable_inputs(op, ex)))
def test_gradients(op, example):
    # float64 where the version accepts double (tight numeric checks), else the example's type.
    allowed = dict((name, types) for name, _, types, _ in op._formals)
    names = op.formal_names(len(example.inputs))
    inputs = [
        x.astype(np.float64) if x is not None and np.asarray(x).dtype.kind == "f" and "double" in allowed[name] else x
        for name, x in zip(names, example.inputs)
    ]
    tol = 1e-4 if all(np.asarray(inputs[i]).dtype == np.float64 for i in _differentiable_inputs(op, example)) else 5e-2

    def f(*args):
        outs = _as_tuple(op(*args, **example.attributes))
        return tuple(o for o in outs if jnp.issubdtype(o.dtype, jnp.inexact))

    # jax.test_util.check_grads's checks (a JVP and a VJP per differentiable input against
    # central differences), compiled as one program instead of four per input (tests/_grads.py).
    argnums = _differentiable_inputs(op, example)
    before = _platform.calls()
    check_grads(f, inputs, argnums=argnums, atol=tol, rtol=tol)
    if _platform.calls() > before:  # the other platforms' formulations (see test_matches_onnx_reference)
        for branch in _platform.other_branches():
            with _platform.forced_branch(branch):
                check_grads(f, inputs, argnums=argnums, atol=tol, rtol=tol)


def _batched_inputs(op: jaxonnx.OpVersion, example) -> list[int]:
    """The inputs vmap batches: every array input except the static ones."""
    names = op.formal_names(len(example.inputs))
    return [
        i for i, (name, x) in enumerate(zip(names, example.inputs)) if x is not None and name not in op.contract.static
    ]


def _checks_vmap(op: jaxonnx.OpVersion, example) -> bool:
    """Whether the reference case checks vmap: at the op's newest version, for an example
    that allows it, of an op whose output lengths do not depend on values."""
    newest = op.since_version == max(REGISTERED[(op.domain, op.op_type)])
    return newest and example.vmap and not op.takes_size_hint and bool(_batched_inputs(op, example))


#: Ops whose eager single calls differ from the jitted batched call by more than the vmap
#: check's tolerance (GridSample-22's 3-D cases: 1.5e-6 in float32), so their single calls
#: are jitted too, with the batched call.
_LOOPED_UNDER_JIT = {"GridSample"}


def _assert_vmap_equals_a_loop(op, example):
    """vmap over two examples (the example and a variant) equals the op on each alone.

    The batched call is jitted, as models run (an eager vmap dispatches every primitive);
    the single calls run eagerly, right after the reference case's eager call on the same
    shapes and types, so they reuse its compiled primitives and compile nothing."""
    batched = _batched_inputs(op, example)

    def variant(x, k):  # a second example: floats changed, indices and masks kept valid
        x = np.asarray(x)
        return x * np.asarray(1.5, x.dtype) + np.asarray(0.25 * k, x.dtype) if x.dtype.kind == "f" else x

    stacks = [np.stack([variant(example.inputs[i], k) for k in range(2)]) for i in batched]

    def one(*xs):
        args = list(example.inputs)
        for i, x in zip(batched, xs):
            args[i] = x
        return _as_tuple(op(*args, **example.attributes))

    xs = [jax.device_put(s) for s in stacks]
    if op.op_type in _LOOPED_UNDER_JIT:
        # The batched call and the two single calls compile once together, as one program.
        vmapped, looped = jax.jit(lambda *xs: (jax.vmap(one)(*xs), [one(*(x[k] for x in xs)) for k in range(2)]))(*xs)
    else:
        vmapped = jax.jit(jax.vmap(one))(*xs)
        looped = [one(*(jax.device_put(s[k]) for s in stacks)) for k in range(2)]
    for position, out in enumerate(vmapped):
        expected = np.stack([np.asarray(looped[k][position]) for k in range(2)])
        np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6, atol=1e-6)
