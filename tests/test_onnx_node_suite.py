"""What the onnx node suite covers: the real-model op families all registered, and at
least 1180 of their 1210 cases run. The cases themselves run through onnx's own
BackendTest in ``tests/test_backend.py`` (every case whose ops are all registered); cases
that cannot pass have a reason in ``tests/node_suite_skips``.
"""

from __future__ import annotations

import pathlib

from _node_cases import case_ops, node_cases

import jaxonnx
from tests.node_suite_skips import all_skips

REGISTERED = set(jaxonnx.supported_ops())
SKIPS = all_skips()
CASES = [c for c in node_cases() if not jaxonnx.unsupported_nodes(c.model)]
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


def test_ops_with_an_onnx_function_body_run_through_it():
    # Ops that jaxonnx does not register but onnx defines with a function body run through
    # it, as onnxruntime runs them: every case made of such ops and registered ones runs.
    from jaxonnx._docs import function_body_ops

    bodies = set(function_body_ops())
    names = {c.name for c in CASES}
    expected = [c for c in node_cases() if case_ops(c) & bodies and case_ops(c) <= REGISTERED | bodies
                and not any(a.type == a.GRAPH for n in c.model.graph.node for a in n.attribute)]
    context_dependent = {"Bernoulli"}  # its body draws with RandomUniformLike: see node_suite_skips/random.py
    missing = [c.name for c in expected if c.name not in names and not case_ops(c) & context_dependent]
    assert expected and not missing, missing[:10]
