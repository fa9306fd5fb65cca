"""Real PyTorch exports through jaxonnx, against torch's own outputs and gradients.

The fixtures in ``tests/fixtures/models`` were made by ``tools/export_fixtures.py`` (the
``export`` extra): small models with random weights (an MLP, a CNN, a ResNet, MobileNetV3-small,
a ViT, GPT-2, BERT and an indexing module), each exported by ``torch.onnx.export`` with
``dynamo=True`` and with the TorchScript path, with a static and a dynamic batch (and
sequence). ``manifest.json`` says which array of each ``.npz`` is which. This file never
imports torch.

Every ``.onnx`` in the folder is tested (the parameters come from the folder, never from a
hand-written list), with JAX's 64-bit mode on (the suite's default) and off (JAX's default):

- eager outputs at the export's input shape, and at a second shape for dynamic exports;
- ``jax.jit`` outputs, the same jitted function called at both shapes (no stale trace);
- ``jax.grad`` of ``sum(output * cotangent)`` w.r.t. the float inputs, and w.r.t. the
  initializers that are one-to-one copies of a torch parameter, through ``model.params`` /
  ``model.apply``.

A fixture that uses an op jaxonnx does not register fails, naming the missing ops.

Tolerance, per array: ``|actual - expected| <= ATOL_SCALE * max|expected| + RTOL * |expected|``
with ``RTOL = 1e-4`` and ``ATOL_SCALE = 1e-5``: float32 results, where torch and XLA may sum in
different orders, judged relative to the array's own magnitude (logits, hidden states and
gradients differ in scale by orders of magnitude). The export script measured torch's own
float32 error against float64 for every fixture, and it is a small fraction of this
(``test_fixture_is_well_conditioned``).
"""

from __future__ import annotations

import collections
import functools
import json
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import onnx.reference
import onnxruntime
import pytest

import jaxonnx

FIXTURES = Path(__file__).parent / "fixtures" / "models"
RTOL, ATOL_SCALE = 1e-4, 1e-5


def _manifest() -> dict:
    with open(FIXTURES / "manifest.json") as f:
        return json.load(f)


MANIFEST = _manifest()
EXPORTED = sorted(path.stem for path in FIXTURES.glob("*.onnx"))
DYNAMIC = [name for name in EXPORTED if MANIFEST["fixtures"].get(name, {}).get("dynamic")]


@pytest.fixture(params=[True, False], ids=["x64", "x32"])
def x64(request):
    """Runs a test with JAX's 64-bit mode on (the suite's setting) and off (JAX's default).

    With it off, jaxonnx warns that int64 inputs (token ids, gather indices) compute in 32
    bits; these tests choose that mode, so the warning is expected (tests/test_x64_policy.py
    checks it).
    """
    with jax.enable_x64(request.param), warnings.catch_warnings():
        if not request.param:
            warnings.filterwarnings("ignore", category=jaxonnx.X64Warning)
        yield request.param


def op_histogram(model: onnx.ModelProto) -> dict[str, int]:
    """Node count per op type over the graph, its subgraphs and local functions (as the export
    script counts them); ops outside the default domain are written ``domain:Op``."""
    counts = collections.Counter()

    def visit(nodes):
        for node in nodes:
            counts[node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"] += 1
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.GRAPH:
                    visit(attribute.g.node)
                for graph in attribute.graphs:
                    visit(graph.node)

    visit(model.graph.node)
    for function in model.functions:
        visit(function.node)
    return dict(sorted(counts.items()))


class Fixture:
    """One exported model: its manifest entry and its arrays, by role and name."""

    def __init__(self, name: str):
        assert name in MANIFEST["fixtures"], f"{name}.onnx is not in manifest.json; re-run tools/export_fixtures.py."
        self.name = name
        self.entry = MANIFEST["fixtures"][name]
        self.path = FIXTURES / f"{name}.onnx"
        with np.load(FIXTURES / f"{name}.npz") as data:
            self.data = {key: data[key] for key in data.files}

    def arrays(self, role: str) -> dict[str, np.ndarray]:
        return {item["name"]: self.data[item["key"]] for item in self.entry["arrays"].get(role, [])}

    def load(self, *, jit: bool = False) -> jaxonnx.Model:
        """The model; ``jit=True`` gives the size hints that data-dependent outputs (a NonZero's)
        need under ``jax.jit``. An unregistered op fails the test, naming what is missing."""
        hints = self.entry["size_hints"] if jit else None
        try:
            return jaxonnx.load(self.path, size_hints=hints)
        except jaxonnx.UnsupportedOpError as error:
            missing = sorted(set(self.entry["op_histogram"]) - set(jaxonnx.supported_ops()))
            pytest.fail(f"{self.name} uses ops jaxonnx does not register: {', '.join(missing)}.\n{error}")


@functools.cache
def fixture(name: str) -> Fixture:
    return Fixture(name)


def as_inputs(arrays: dict[str, np.ndarray]) -> list[jax.Array]:
    """The inputs as a user passes them: JAX arrays, so int64 token ids arrive as int32 when
    JAX's 64-bit mode is off."""
    return [jnp.asarray(value) for value in arrays.values()]


def assert_close(actual, expected: np.ndarray, what: str) -> None:
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, torch's is {expected.shape}."
    assert actual.dtype == jax.dtypes.canonicalize_dtype(expected.dtype), (
        f"{what}: dtype {actual.dtype}, torch's is {expected.dtype}."
    )
    scale = max(float(np.max(np.abs(expected), initial=0.0)), np.finfo(np.float32).tiny)
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL_SCALE * scale, err_msg=what)


def assert_outputs(fixture_: Fixture, outputs, role: str, how: str) -> None:
    expected = fixture_.arrays(role)
    assert len(outputs) == len(expected), f"{fixture_.name}: {len(outputs)} outputs, torch gave {len(expected)}."
    for (name, want), got in zip(expected.items(), outputs):
        assert_close(got, want, f"{fixture_.name} ({how}), output {name!r}")


# --------------------------------------------------------------------------- the fixtures themselves


def test_manifest_and_folder_agree():
    """Every exported fixture has its .onnx, .npz and manifest entry; failed exports say why."""
    exported = {name for name, entry in MANIFEST["fixtures"].items() if "export_error" not in entry}
    assert exported, "manifest.json lists no exported fixture."
    assert set(EXPORTED) == exported
    assert {path.stem for path in FIXTURES.glob("*.npz")} == exported
    for name, entry in MANIFEST["fixtures"].items():
        if "export_error" in entry:
            assert entry["export_error"].strip(), f"{name}: an export failure without a reason."
    assert MANIFEST["tolerance"] == {"rtol": RTOL, "atol_scale": ATOL_SCALE}


@pytest.mark.parametrize("name", EXPORTED)
def test_fixture_files_match_manifest(name):
    """The op histogram and the arrays are what the manifest says, and onnxruntime (or
    onnx.reference, for the files onnxruntime cannot run) reproduces torch's outputs from the
    .onnx file (so the fixture itself is sound)."""
    fx = fixture(name)
    model = onnx.load(fx.path)
    assert op_histogram(model) == fx.entry["op_histogram"]
    assert next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")) == fx.entry["opset"]

    listed = [item for items in fx.entry["arrays"].values() for item in items]
    assert sorted(item["key"] for item in listed) == sorted(fx.data)
    for item in listed:
        value = fx.data[item["key"]]
        assert (str(value.dtype), list(value.shape)) == (item["dtype"], item["shape"]), item["key"]

    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = [i.name for i in model.graph.input if i.name not in initializers]
    assert list(fx.arrays("inputs")) == graph_inputs
    assert list(fx.arrays("outputs")) == [o.name for o in model.graph.output]
    assert set(fx.arrays("param_gradients")) <= initializers
    assert fx.entry["arrays"].get("input_gradients") or fx.entry["arrays"].get("param_gradients"), (
        f"{name} has no gradient to check."
    )
    assert ("second_inputs" in fx.entry["arrays"]) == fx.entry["dynamic"]

    if fx.entry.get("checked_with") == "reference":
        # onnxruntime cannot run it (the manifest says why): onnx.reference checks the file.
        session = onnx.reference.ReferenceEvaluator(model)
    else:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    roles = [("inputs", "outputs")] + ([("second_inputs", "second_outputs")] if fx.entry["dynamic"] else [])
    for inputs, outputs in roles:
        for got, (output, want) in zip(session.run(None, fx.arrays(inputs)), fx.arrays(outputs).items()):
            assert_close(got, want, f"{name}: onnxruntime, {outputs} {output!r}")


@pytest.mark.parametrize("name", EXPORTED)
def test_fixture_is_well_conditioned(name):
    """torch's own float32 rounding (against float64) is a small part of the tolerance, so a
    correct float32 implementation passes; the outputs depend on the inputs, so a wrong one fails."""
    checks = fixture(name).entry["checks"]
    for check in ("torch_float32_vs_float64", "torch_input_gradients_float32_vs_float64",
                  "torch_param_gradients_float32_vs_float64"):
        assert checks[check] < 0.25, f"{name}: {check} uses {checks[check]:.0%} of the tolerance."
    assert checks["output_spread_over_batch"] > 1e-3


# --------------------------------------------------------------------------- through jaxonnx


@pytest.mark.parametrize("name", EXPORTED)
def test_eager_outputs(name, x64):
    fx = fixture(name)
    model = fx.load()
    assert_outputs(fx, model(*as_inputs(fx.arrays("inputs"))), "outputs", "eager")
    if fx.entry["dynamic"]:
        assert_outputs(fx, model(*as_inputs(fx.arrays("second_inputs"))), "second_outputs", "eager, second shape")


@pytest.mark.parametrize("name", EXPORTED)
def test_jit_outputs(name, x64):
    """One jitted function at the export's shape and, for dynamic exports, at a second batch
    (and sequence) size: it retraces there, with shapes computed afresh."""
    fx = fixture(name)
    jitted = jax.jit(fx.load(jit=True))
    assert_outputs(fx, jitted(*as_inputs(fx.arrays("inputs"))), "outputs", "jit")
    if fx.entry["dynamic"]:
        assert_outputs(fx, jitted(*as_inputs(fx.arrays("second_inputs"))), "second_outputs", "jit, second shape")
        assert_outputs(fx, jitted(*as_inputs(fx.arrays("inputs"))), "outputs", "jit, first shape again")


@pytest.mark.parametrize("name", EXPORTED)
def test_gradients(name, x64):
    """``jax.grad`` of ``sum(output * cotangent)`` w.r.t. the float inputs and the named
    initializers (via ``model.params`` / ``model.apply``), against torch's autograd."""
    fx = fixture(name)
    model = fx.load(jit=True)
    inputs = as_inputs(fx.arrays("inputs"))
    cotangents = fx.arrays("cotangents")
    want_inputs = fx.arrays("input_gradients")
    want_params = fx.arrays("param_gradients")
    differentiated = [model.input_names.index(n) for n in want_inputs]
    missing = sorted(set(want_params) - set(model.params))
    assert not missing, f"{name}: the float initializers {missing} are not in model.params."
    params = {n: model.params[n] for n in want_params}

    def loss(params, float_inputs):
        args = list(inputs)
        for position, value in zip(differentiated, float_inputs):
            args[position] = value
        outputs = dict(zip(model.output_names, model.apply(params, *args)))
        return sum(jnp.sum(outputs[n] * jnp.asarray(c)) for n, c in cotangents.items())

    grad_params, grad_inputs = jax.jit(jax.grad(loss, argnums=(0, 1)))(params, [inputs[i] for i in differentiated])
    for (input_name, want), got in zip(want_inputs.items(), grad_inputs):
        assert_close(got, want, f"{name}: gradient w.r.t. input {input_name!r}")
    for param_name, want in want_params.items():
        assert_close(grad_params[param_name], want, f"{name}: gradient w.r.t. initializer {param_name!r}")
