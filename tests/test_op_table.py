"""Every registered op against onnx.reference at every version, with gradients and vmap.

The op list comes from the registry and the inputs from ``tests/op_examples`` (one entry
per op); a registered op without an entry fails ``test_every_registered_op_has_examples``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest
from jax.test_util import check_grads
from onnx import helper
from onnx.reference import ReferenceEvaluator

import jaxonnx
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


def _cases():
    cases = []
    for (domain, op_type), versions in REGISTERED.items():
        for index, example in enumerate(EXAMPLES.get((domain, op_type), [])):
            for since in versions:
                op = jaxonnx.get_op(op_type, since, domain)
                if _valid(op, example):
                    cases.append(pytest.param(op, example, id=_case_id(op, index)))
    return cases


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
    return [jnp.asarray(v) for v in x] if isinstance(x, list) else jnp.asarray(x)


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


@pytest.mark.parametrize("op, example", _cases())
def test_matches_onnx_reference(op, example):
    expected = _reference(op, example)
    for feed in ("numpy", "jax"):
        inputs = [_fed(x, feed) for x in example.inputs]
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
        i for i, (name, x) in enumerate(zip(names, example.inputs))
        if x is not None and np.asarray(x).dtype.kind == "f" and name not in op.contract.static
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
    for i in _differentiable_inputs(op, example):
        def f(x, i=i):
            args = list(inputs)
            args[i] = x
            outs = _as_tuple(op(*args, **example.attributes))
            return tuple(o for o in outs if jnp.issubdtype(o.dtype, jnp.inexact))

        # Under jax.jit, as models are differentiated (and compiled once: eager check_grads
        # dispatched every primitive of each numeric difference, 2x slower in the suite).
        check_grads(jax.jit(f), (jnp.asarray(inputs[i]),), order=1, modes=("rev", "fwd"), atol=tol, rtol=tol)


def _batched_inputs(op: jaxonnx.OpVersion, example) -> list[int]:
    """The inputs vmap batches: every array input except the static ones."""
    names = op.formal_names(len(example.inputs))
    return [i for i, (name, x) in enumerate(zip(names, example.inputs)) if x is not None and name not in op.contract.static]


@pytest.mark.parametrize(
    "op, example", _newest_cases(lambda op, ex: ex.vmap and not op.takes_size_hint and _batched_inputs(op, ex))
)
def test_vmap_equals_a_loop(op, example):
    batched = _batched_inputs(op, example)
    def variant(x, k):  # a second example: floats changed, indices and masks kept valid
        x = np.asarray(x)
        return x * np.asarray(1.5, x.dtype) + np.asarray(0.25 * k, x.dtype) if x.dtype.kind == "f" else x
    stacks = {i: np.stack([variant(example.inputs[i], k) for k in range(2)]) for i in batched}

    def one(*xs):
        args = list(example.inputs)
        for i, x in zip(batched, xs):
            args[i] = x
        return _as_tuple(op(*args, **example.attributes))

    # Both jitted, as models run (eager vmap dispatched every primitive: 2x slower in the suite).
    vmapped = jax.jit(jax.vmap(one))(*(jnp.asarray(stacks[i]) for i in batched))
    looped = [jax.jit(one)(*(jnp.asarray(stacks[i][k]) for i in batched)) for k in range(2)]
    for position, out in enumerate(vmapped):
        expected = np.stack([np.asarray(looped[k][position]) for k in range(2)])
        np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6, atol=1e-6)
