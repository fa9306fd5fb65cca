"""The examples in the public docstrings run and print what they say (JAX's default 32-bit mode)."""

import doctest

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxonnx
import jaxonnx.backend
from jaxonnx import _xla_cpu
from jaxonnx._core import checks, params, planning, preparation, serialization
from jaxonnx.ops._helpers import pool_cpu

PUBLIC = [getattr(jaxonnx.ops, name) for name in jaxonnx.ops.__all__] + [  # every op, from the registry
    jaxonnx.get_op,
    jaxonnx.supported_ops,
    jaxonnx.load,
    jaxonnx.register,
    jaxonnx.demo_model_path,
    jaxonnx.tune_cpu_allocator,
    jaxonnx.compiler_options,
    jaxonnx.Model.compile,
    checks,  # the module: how an eager call defers the checks of traced values
    # The parts of a Model (issue 43 §3), each shown on a model.
    planning.EagerPlan,
    params.float_tensors,
    preparation.prepare_model,
    serialization.with_weights,
    # Helpers whose examples document a rule.
    _xla_cpu.wide_vectors_run_fast,
    _xla_cpu.ynn_convolutions,
    pool_cpu.max_pool,
    pool_cpu.window_sum,
]


@pytest.mark.parametrize("function", PUBLIC, ids=lambda f: f.__name__)
def test_docstring_examples_run(function):
    assert function.__doc__, f"{function.__name__} has no docstring"
    assert "Args:" in function.__doc__ or "Returns:" in function.__doc__ or "Example" in function.__doc__
    tests = doctest.DocTestFinder(recurse=False).find(
        function, globs={"jax": jax, "jnp": jnp, "np": np, "jaxonnx": jaxonnx}
    )
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    with jax.enable_x64(False):
        for test in tests:
            runner.run(test)
    results = runner.summarize(verbose=False)
    assert results.failed == 0
