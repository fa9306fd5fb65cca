"""Real PyTorch exports through jaxonnx, against torch's own outputs and gradients.

The fixtures in ``tests/fixtures/models`` were made by ``tools/export_fixtures.py`` (the
``export`` extra): small models with random weights (an MLP, a CNN, a ResNet, MobileNetV3-small,
a ViT, GPT-2, BERT and an indexing module), each exported by ``torch.onnx.export`` with
``dynamo=True`` and with the TorchScript path, with a static and a dynamic batch (and
sequence). ``manifest.json`` says which array of each ``.npz`` is which. This file never
imports torch.

Every ``.onnx`` in the folder is tested (the parameters come from the folder, never from a
hand-written list), with JAX's 64-bit mode on (the suite's default), and off (JAX's default)
for the fixtures where that changes anything (``X64_OFF_CHANGES``):

- eager outputs at the export's input shape, and at a second shape for dynamic exports, then
  the first again (no stale executable);
- ``jax.jit`` outputs, where the eager call is not already ``jax.jit``'s executable (a graph
  run op by op, or a file with size hints);
- ``jax.grad`` of ``sum(output * cotangent)`` w.r.t. the float inputs, and w.r.t. the
  initializers that are one-to-one copies of a torch parameter, through ``model.params`` /
  ``model.apply``.

The files themselves (their manifest entries, and onnxruntime reproducing torch's outputs
from them) are checked by ``tools/check_model_fixtures.py``, which records their hashes in
``sha256.json``; ``test_fixtures_are_the_checked_files`` checks the hashes.

A fixture that uses an op jaxonnx does not register fails, naming the missing ops.

Tolerance, per array: ``|actual - expected| <= ATOL_SCALE * max|expected| + RTOL * |expected|``
with ``RTOL = 1e-4`` and ``ATOL_SCALE = 1e-5``: float32 results, where torch and XLA may sum in
different orders, judged relative to the array's own magnitude (logits, hidden states and
gradients differ in scale by orders of magnitude). The export script measured torch's own
float32 error against float64 for every fixture, and it is a small fraction of this
(``test_fixture_is_well_conditioned``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest
from jax.extend import core as jax_core

import jaxonnx
from jaxonnx import _platform
from tests._shared import per_run

FIXTURES = Path(__file__).parent / "fixtures" / "models"
RTOL, ATOL_SCALE = 1e-4, 1e-5


def _manifest() -> dict:
    with open(FIXTURES / "manifest.json") as f:
        return json.load(f)


MANIFEST = _manifest()
EXPORTED = sorted(path.stem for path in FIXTURES.glob("*.onnx"))
DYNAMIC = [name for name in EXPORTED if MANIFEST["fixtures"].get(name, {}).get("dynamic")]


@contextlib.contextmanager
def x64_mode(on: bool):
    """JAX's 64-bit mode on (the suite's setting) or off (JAX's default).

    With it off, jaxonnx warns that int64 inputs (token ids, gather indices) compute in 32
    bits; these tests choose that mode, so the warning is expected (tests/test_x64_policy.py
    checks it).
    """
    with jax.enable_x64(on), warnings.catch_warnings():
        if not on:
            warnings.filterwarnings("ignore", category=jaxonnx.X64Warning)
        yield


def _avals(jaxpr):
    """The abstract value of every variable of ``jaxpr`` and of the jaxprs in its equations."""
    for variable in (*jaxpr.invars, *jaxpr.constvars, *jaxpr.outvars):
        yield getattr(variable, "aval", None)
    for equation in jaxpr.eqns:
        for variable in (*equation.invars, *equation.outvars):
            yield getattr(variable, "aval", None)
        for param in equation.params.values():
            for value in param if isinstance(param, (tuple, list)) else (param,):
                if isinstance(value, jax_core.ClosedJaxpr):
                    yield from _avals(value.jaxpr)
                elif isinstance(value, jax_core.Jaxpr):
                    yield from _avals(value)


def computes_64_bit_values(model: jaxonnx.Model, inputs) -> bool:
    """Whether ``model`` on ``inputs``, traced with JAX's 64-bit mode on, holds a 64-bit
    value (int64, uint64, float64 or complex128: what the mode off makes 32-bit) in its computation.

    The mode changes only such values (numpy values known at trace time stay numpy either
    way): a model that holds none computes the same with it off, so its x64-off pass is
    left out (``test_the_x64_off_pass_runs_where_the_mode_changes_a_value``)."""
    with jax.enable_x64(True):
        jaxpr = jax.make_jaxpr(model)(*inputs).jaxpr
    return any(
        jax.dtypes.canonicalize_dtype(aval.dtype) != _x64_off_dtype(aval.dtype)
        for aval in _avals(jaxpr)
        if isinstance(getattr(aval, "dtype", None), np.dtype) and not _python_scalar(aval)
    )


def _python_scalar(aval) -> bool:
    """A weakly typed scalar: a Python number in the library's code (``jnp.clip(y, 0, 1)``
    passes its bounds as int64 under the 64-bit mode), which JAX converts to the type of the
    array it meets either way, so the mode changes no value computed with it."""
    return bool(getattr(aval, "weak_type", False)) and not getattr(aval, "shape", ())


def _x64_off_dtype(dtype) -> np.dtype:
    with jax.enable_x64(False):
        return jax.dtypes.canonicalize_dtype(dtype)


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


@functools.cache
def _traced(name: str) -> tuple[bool, bool]:
    """Whether the fixture's computation holds a 64-bit value, and whether it makes a
    platform-dependent choice (a convolution or pooling with a CPU formulation)."""
    fx = fixture(name)
    before = _platform.calls()
    wide = computes_64_bit_values(fx.load(jit=True), as_inputs(fx.arrays("inputs")))
    return wide, _platform.calls() > before


def as_inputs(arrays: dict[str, np.ndarray]) -> list[jax.Array]:
    """The inputs as a user passes them: JAX arrays, so int64 token ids arrive as int32 when
    JAX's 64-bit mode is off. ``jax.device_put`` converts as ``jnp.asarray`` does, without
    compiling an identity program per new shape and dtype (jax 0.10)."""
    return [jax.device_put(value) for value in arrays.values()]


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


#: What the traces say of each fixture, found once per run and shared by the xdist workers
#: (49 traces: several seconds of CPU in each worker's collection).
_TRAITS = per_run("real-model-traits", lambda: {name: _traced(name) for name in EXPORTED})
#: The fixtures whose computation holds a 64-bit value, so that JAX's 64-bit mode off
#: changes it (:func:`computes_64_bit_values`): they run a second time with it off.
X64_OFF_CHANGES = [name for name in EXPORTED if _TRAITS[name][0]]
#: The fixtures with a formulation per platform (jaxonnx._platform): they also run as each
#: other platform (GPU, TPU) computes them, in test_outputs_as_other_platforms_compute_them.
PLATFORM_DEPENDENT = [name for name in EXPORTED if _TRAITS[name][1]]
PASSES = [pytest.param(name, True, id=f"x64-{name}") for name in EXPORTED] + [
    pytest.param(name, False, id=f"x32-{name}") for name in X64_OFF_CHANGES
]


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


def test_fixtures_are_the_checked_files():
    """Each .onnx, .npz and manifest.json is the file tools/check_model_fixtures.py checked
    (onnxruntime reproduces torch's outputs from it, its manifest entry describes it)."""
    recorded = json.loads((FIXTURES / "sha256.json").read_text())
    present = sorted(
        path.name for path in [*FIXTURES.glob("*.onnx"), *FIXTURES.glob("*.npz"), FIXTURES / "manifest.json"]
    )
    assert sorted(recorded) == present, "files added or removed since tools/check_model_fixtures.py ran; run it again."
    changed = [name for name in present if hashlib.sha256((FIXTURES / name).read_bytes()).hexdigest() != recorded[name]]
    assert not changed, f"changed since tools/check_model_fixtures.py checked them (run it again): {changed}"


@pytest.mark.parametrize("name", EXPORTED)
def test_fixture_is_well_conditioned(name):
    """torch's own float32 rounding (against float64) is a small part of the tolerance, so a
    correct float32 implementation passes; the outputs depend on the inputs, so a wrong one fails."""
    checks = fixture(name).entry["checks"]
    for check in (
        "torch_float32_vs_float64",
        "torch_input_gradients_float32_vs_float64",
        "torch_param_gradients_float32_vs_float64",
    ):
        assert checks[check] < 0.25, f"{name}: {check} uses {checks[check]:.0%} of the tolerance."
    assert checks["output_spread_over_batch"] > 1e-3


# --------------------------------------------------------------------------- through jaxonnx


@pytest.mark.parametrize("name, x64", PASSES)
def test_outputs(name, x64):
    """Eager outputs at the export's shape and, for dynamic exports, at a second batch (and
    sequence) size, then the first again; and under ``jax.jit`` where the eager call is not
    already its executable.

    A graph compiled whole runs an eager call as ``jax.jit`` of the graph, compiled once per
    input signature (``Model.compile``), so those calls check jit; a graph run op by op (or
    loaded with size hints for jit) also runs jitted, at both shapes (it retraces, with
    shapes computed afresh)."""
    fx = fixture(name)
    with x64_mode(x64):
        model = fx.load()
        assert_outputs(fx, model(*as_inputs(fx.arrays("inputs"))), "outputs", "eager")
        if fx.entry["dynamic"]:
            assert_outputs(fx, model(*as_inputs(fx.arrays("second_inputs"))), "second_outputs", "eager, second shape")
            assert_outputs(fx, model(*as_inputs(fx.arrays("inputs"))), "outputs", "eager, first shape again")
        if model.eager_mode.startswith("whole graph") and not fx.entry["size_hints"]:
            # The calls above ran the per-signature executables of jax.jit(graph), not op by op.
            assert len(model._plan.compiled) == 1 + fx.entry["dynamic"], model.eager_mode
            return
        jitted = jax.jit(fx.load(jit=True))
        assert_outputs(fx, jitted(*as_inputs(fx.arrays("inputs"))), "outputs", "jit")
        if fx.entry["dynamic"]:
            assert_outputs(fx, jitted(*as_inputs(fx.arrays("second_inputs"))), "second_outputs", "jit, second shape")
            assert_outputs(fx, jitted(*as_inputs(fx.arrays("inputs"))), "outputs", "jit, first shape again")


@pytest.mark.parametrize("name, x64", PASSES)
def test_gradients(name, x64):
    """``jax.grad`` of ``sum(output * cotangent)`` w.r.t. the float inputs and the named
    initializers (via ``model.params`` / ``model.apply``), against torch's autograd."""
    fx = fixture(name)
    with x64_mode(x64):
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


@pytest.mark.parametrize("name", PLATFORM_DEPENDENT)
def test_outputs_as_other_platforms_compute_them(name):
    """Eager outputs at the export's shape with every platform-dependent choice forced to
    each other platform's branch (XLA's convolution and reduce_window for GPU and TPU,
    where the CPU runs its rewrites): what a GPU computes, checked on a CPU."""
    fx = fixture(name)
    for branch in _platform.other_branches():
        with _platform.forced_branch(branch):
            model = fx.load()  # a new model: its executables are traced inside the block
            before = _platform.calls()
            assert_outputs(fx, model(*as_inputs(fx.arrays("inputs"))), "outputs", f"eager, {branch} branch")
            assert _platform.calls() > before


def test_platform_dependent_fixtures_are_found():
    """The image models' convolutions and poolings have CPU formulations; the text models have none."""
    assert {"cnn_dynamo_static", "resnet_torchscript_static", "mobilenet_v3_small_dynamo_static"} <= set(
        PLATFORM_DEPENDENT
    )
    assert not {"mlp_dynamo_static", "gpt2_dynamo_static"} & set(PLATFORM_DEPENDENT)


# --------------------------------------------------------------------------- the x64-off selection


def _tiny_model(input_type: int, *, argmax: bool = False) -> onnx.ModelProto:
    """Cast to float, x @ w, a Reshape by an int64 constant shape (known at trace time),
    HardSigmoid (its clip takes Python bounds: weakly typed int64 scalars with the mode on);
    with ``argmax``, an ArgMax (int64 by the text) cast back to float and added."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    output = "result" if argmax else "out"
    nodes = [
        helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
        helper.make_node("MatMul", ["xf", "w"], ["y"]),
        helper.make_node("Reshape", ["y", "shape"], ["flat"]),
        helper.make_node("HardSigmoid", ["flat"], ["out"]),
    ]
    if argmax:
        nodes += [
            helper.make_node("ArgMax", ["out"], ["position"], axis=1),
            helper.make_node("Cast", ["position"], ["positionf"], to=TensorProto.FLOAT),
            helper.make_node("Add", ["out", "positionf"], ["result"]),
        ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", input_type, [2, 3])],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
        initializer=[
            numpy_helper.from_array(rng.normal(size=(3, 4)).astype(np.float32), "w"),
            numpy_helper.from_array(np.array([2, 4], np.int64), "shape"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_the_x64_off_pass_runs_where_the_mode_changes_a_value():
    """A float32 model whose only 64-bit values are known at trace time (a Reshape's shape)
    or Python scalars in the library's code (HardSigmoid's bounds) computes no 64-bit value,
    and gives the same bits with the mode off; an int64 input, a
    float64 input, or an op whose output the text makes int64 (ArgMax) each count."""
    from onnx import TensorProto

    x = np.random.default_rng(1).normal(size=(2, 3))
    float32 = jaxonnx.load(_tiny_model(TensorProto.FLOAT))
    assert not computes_64_bit_values(float32, [jnp.asarray(x, jnp.float32)])
    with x64_mode(True):
        on = float32(jnp.asarray(x, jnp.float32))
    with x64_mode(False):
        off = jaxonnx.load(_tiny_model(TensorProto.FLOAT))(jnp.asarray(x, jnp.float32))
    np.testing.assert_array_equal(np.asarray(on[0]), np.asarray(off[0]))
    assert computes_64_bit_values(jaxonnx.load(_tiny_model(TensorProto.INT64)), [jnp.asarray(x.astype(np.int64))])
    assert computes_64_bit_values(jaxonnx.load(_tiny_model(TensorProto.DOUBLE)), [jnp.asarray(x)])
    assert computes_64_bit_values(
        jaxonnx.load(_tiny_model(TensorProto.FLOAT, argmax=True)), [jnp.asarray(x, jnp.float32)]
    )
    # The fixtures: every one whose graph inputs or outputs are 64-bit runs the x64-off pass.
    wide = (TensorProto.INT64, TensorProto.UINT64, TensorProto.DOUBLE)
    declared_64_bit = [
        name
        for name in EXPORTED
        if any(
            v.type.tensor_type.elem_type in wide
            for v in (
                *onnx.load(FIXTURES / f"{name}.onnx").graph.input,
                *onnx.load(FIXTURES / f"{name}.onnx").graph.output,
            )
        )
    ]
    assert declared_64_bit and set(declared_64_bit) <= set(X64_OFF_CHANGES)
    assert len(X64_OFF_CHANGES) < len(EXPORTED)
