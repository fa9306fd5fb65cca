"""The switch that forces every platform-dependent choice to another platform's branch
(``jaxonnx._platform``): the environment variable, the context manager, their errors, and
that a forced branch reaches the ops' own choices under jax.jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxonnx
from jaxonnx import _platform


def _choose(x):
    return _platform.platform_dependent(x, cpu=lambda x: x + 1, default=lambda x: x * 3)


def test_unforced_the_cpu_runs_its_own_branch():
    assert _platform.forced() is None
    np.testing.assert_array_equal(_choose(jnp.ones(2)), [2.0, 2.0])
    np.testing.assert_array_equal(jax.jit(_choose)(jnp.ones(2)), [2.0, 2.0])


@pytest.mark.parametrize("branch", ["gpu", "tpu", "default"])
def test_a_forced_branch_runs_that_platforms_function(branch, monkeypatch):
    with _platform.forced_branch(branch):
        np.testing.assert_array_equal(jax.jit(lambda x: _choose(x))(jnp.ones(2)), [3.0, 3.0])
    monkeypatch.setenv(_platform.ENVIRONMENT_VARIABLE, branch.upper())
    np.testing.assert_array_equal(_choose(jnp.ones(2)), [3.0, 3.0])
    # The innermost choice wins: the context manager over the environment.
    with _platform.forced_branch("cpu"):
        np.testing.assert_array_equal(_choose(jnp.ones(2)), [2.0, 2.0])


def test_a_platforms_own_branch_is_preferred_to_the_default(monkeypatch):
    # This choice's "cuda" stays out of what the op table forces afterwards in this process.
    monkeypatch.setattr(_platform, "_named", set(_platform._named))

    def choose(x):
        return _platform.platform_dependent(x, cpu=lambda x: x + 1, cuda=lambda x: x - 1, default=lambda x: x * 3)

    with _platform.forced_branch("gpu"):
        np.testing.assert_array_equal(choose(jnp.ones(1)), [0.0])
    with _platform.forced_branch("tpu"):
        np.testing.assert_array_equal(choose(jnp.ones(1)), [3.0])
    assert "cuda" in _platform.named_platforms() and "cuda" in _platform.other_branches()


def test_unknown_branches_are_refused_naming_the_choices(monkeypatch):
    with pytest.raises(
        ValueError, match=r"^No platform branch 'npu'; use one of cpu, gpu, cuda, rocm, tpu, default\.$"
    ):
        with _platform.forced_branch("npu"):
            pass
    monkeypatch.setenv(_platform.ENVIRONMENT_VARIABLE, "npu")
    with pytest.raises(ValueError, match=r"^JAXONNX_PLATFORM_BRANCH='npu' names no platform branch"):
        _choose(jnp.ones(1))


def test_a_pooling_model_lowers_without_its_cpu_formulation_when_forced():
    """AveragePool's CPU formulation is a sum of slices; XLA's elsewhere is reduce_window.
    Forced, the model's computation has only the reduce_window, and gives the same values."""
    from onnx import TensorProto, helper

    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[1, 1])
    graph = helper.make_graph(
        [node],
        "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    x = jnp.asarray(np.random.default_rng(0).normal(size=(1, 2, 6, 6)), jnp.float32)

    cpu_model = jaxonnx.load(proto)
    # Unforced, the choice is made at lowering: the computation holds both branches.
    assert "platform_index" in str(jax.make_jaxpr(cpu_model)(x))
    with _platform.forced_branch("gpu"):
        gpu_model = jaxonnx.load(proto)
        forced = str(jax.make_jaxpr(gpu_model)(x))
        assert "platform_index" not in forced and "reduce_window_sum" in forced
        (on_gpu,) = gpu_model(x)
    (on_cpu,) = cpu_model(x)
    np.testing.assert_allclose(np.asarray(on_gpu), np.asarray(on_cpu), rtol=1e-6, atol=1e-6)
