"""What the onnx node suite covers: the real-model op families all registered, and at
least 1180 of their 1210 cases run. The cases themselves run through onnx's own
BackendTest in ``tests/test_backend.py`` (every case whose ops are all registered); cases
that cannot pass have a reason in ``tests/node_suite_skips``.
"""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
from _node_cases import as_backend_input, case_ops, node_cases, supported_case_names, tensor_graph

import jaxonnx
from tests.node_suite_skips import all_skips

REGISTERED = set(jaxonnx.supported_ops())
SKIPS = all_skips()
_SUPPORTED = set(supported_case_names())
CASES = [c for c in node_cases() if c.name in _SUPPORTED]
REAL_MODEL_OPS = {
    word
    for line in (pathlib.Path(__file__).parent / "data" / "real_model_ops.txt").read_text().splitlines()
    if not line.startswith("#")
    for word in line.split()
}


def test_skips_name_real_cases_with_reasons():
    names = {c.name for c in node_cases()}
    unknown = sorted(set(SKIPS) - names)
    assert not unknown, f"skips of cases onnx does not have: {unknown}"
    assert all(isinstance(r, str) and len(r) > 20 for r in SKIPS.values())


def test_the_real_model_ops_are_registered_and_their_cases_run():
    missing = sorted(REAL_MODEL_OPS - REGISTERED)
    assert not missing, f"real-model ops not registered: {missing}"
    real = [c for c in node_cases() if case_ops(c) <= REAL_MODEL_OPS]
    running = [c for c in real if c.name not in SKIPS]
    # onnx 1.23 has 1210 such cases; the target is that at least 1180 run (and pass, in test_backend.py).
    assert len(real) >= 1210 and len(running) >= 1180, (len(real), len(running))


def test_the_whole_node_suite_runs():
    # Every op of onnx's node cases is registered (1884 in onnx 1.23); at least 1850 run (and
    # pass, in test_backend.py): the rest are skipped with a written reason each.
    unsupported = [c.name for c in node_cases() if c not in CASES]
    running = [c for c in CASES if c.name not in SKIPS]
    assert not unsupported, unsupported[:10]
    assert len(node_cases()) >= 1884 and len(running) >= 1850, (len(node_cases()), len(running))


def test_ops_with_an_onnx_function_body_run_through_it():
    # Ops that onnx defines with a function body run through it when jaxonnx has no module of
    # its own, as onnxruntime runs them. Every such op of onnx 1.23 has its own module now, so
    # the fallback is checked on a scratch registry without them: each op's first node case
    # (28 ops) then runs through its body and gives onnx's expected outputs.
    bodies = {s.name for s in onnx.defs.get_all_schemas() if s.domain == "" and s.has_function and not s.deprecated}
    scratch = jaxonnx.REGISTRY.copy()
    for op in bodies:
        scratch._versions.pop(("", op), None)
    first_cases = {}
    for case in node_cases():
        (op,) = case_ops(case) if len(case_ops(case)) == 1 else (None,)
        if op in bodies and tensor_graph(case) and case.name not in SKIPS:
            first_cases.setdefault(op, case)
    assert len(first_cases) >= 25, sorted(first_cases)
    for op, case in first_cases.items():
        model = jaxonnx.load(case.model, registry=scratch)
        assert [row[2] for row in model.describe_nodes()] != [op] and "function body" in model.describe_nodes()[0][2], (
            op,
            model.describe_nodes(),
        )
        inputs, expected = case.data_sets[0]
        actual = model(*[as_backend_input(x) for x in inputs])
        for a, e in zip(actual, expected):
            np.testing.assert_allclose(
                np.asarray(a, np.float64),
                as_backend_input(e).astype(np.float64),
                rtol=case.rtol,
                atol=case.atol,
                err_msg=case.name,
            )
