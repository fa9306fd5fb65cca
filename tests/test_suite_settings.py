"""The suite's own settings (tests/conftest.py) change how fast it runs, never what it checks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax._src.interpreters import mlir


def _program(x):
    # Constants, a reduction, a gather and a loop: attributes and types a context holds.
    table = jnp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    rows = jnp.take(table, jnp.clip(x.astype(jnp.int32), 0, 2), axis=0)
    return jax.lax.fori_loop(0, 3, lambda i, acc: acc * 0.5 + rows.sum(0), jnp.zeros(4, jnp.float32))


def _lowered_text(x) -> str:
    # A new function object each time, so that no cached lowering is reused.
    return jax.jit(lambda x: _program(x)).lower(x).as_text()


def test_the_suites_shared_mlir_context_lowers_as_a_fresh_one(monkeypatch):
    x = np.array([0.0, 2.0, 1.0], np.float32)
    shared = _lowered_text(x)
    fresh_context = getattr(mlir.make_ir_context, "fresh_context", None)
    if fresh_context is not None:  # the suite shares contexts (conftest's _share_mlir_contexts)
        monkeypatch.setattr(mlir, "make_ir_context", fresh_context)  # JAX's own, for the second lowering
        assert mlir.make_ir_context() is not mlir.make_ir_context()
    assert _lowered_text(x) == shared
    np.testing.assert_allclose(np.asarray(jax.jit(_program)(x)), np.asarray(_program(x)))


def test_a_program_compiled_again_gets_the_executable_compiled_first(monkeypatch):
    from jax._src import compiler

    x = np.array([0.0, 2.0, 1.0], np.float32)
    on_device_1, on_device_2 = (jax.device_put(x, jax.devices()[i]) for i in (1, 2))

    def compiled(f, argument=x):  # a new function object each time: JAX's own caches miss
        return jax.jit(lambda x: f(x)).lower(argument).compile()

    first, again = compiled(_program), compiled(_program)
    plus_one = compiled(lambda x: _program(x) + 1)
    # The same text for two devices: only the compile options (the device assignment) differ.
    on_1, on_2 = compiled(_program, on_device_1), compiled(_program, on_device_2)
    texts = {jax.jit(_program).lower(on).as_text(debug_info=False) for on in (on_device_1, on_device_2)}
    assert len(texts) == 1
    compile_and_load = getattr(compiler.backend_compile_and_load, "compile_and_load", None)
    if compile_and_load is not None:  # the suite shares executables (conftest's _share_compiled_programs)
        assert again.runtime_executable() is first.runtime_executable()
        # Another constant, or another device (in the compile options): compiled for itself.
        assert plus_one.runtime_executable() is not first.runtime_executable()
        assert on_2.runtime_executable() is not on_1.runtime_executable()
        monkeypatch.setattr(compiler, "backend_compile_and_load", compile_and_load)  # JAX's own
        fresh = compiled(_program)
        assert fresh.runtime_executable() is not first.runtime_executable()
        np.testing.assert_array_equal(np.asarray(fresh(x)), np.asarray(first(x)))
    expected = np.asarray(_program(x))
    np.testing.assert_allclose(np.asarray(again(x)), expected)
    np.testing.assert_allclose(np.asarray(plus_one(x)), expected + 1)
    for on, device in ((on_1, on_device_1), (on_2, on_device_2)):
        np.testing.assert_allclose(np.asarray(on(device)), expected)
        assert on(device).devices() == device.devices()


def test_the_collector_still_frees_a_cycle_made_by_a_test():
    """conftest freezes what collection made and raises the collector's thresholds
    (``pytest_collection_finish``): a reference cycle a test drops is still freed as the test
    allocates, without an explicit ``gc.collect()``."""
    import gc
    import weakref

    class Node:
        pass

    node = Node()
    node.self = node  # a cycle: only the collector frees it
    freed = weakref.ref(node)
    del node
    assert freed() is not None
    # Enough allocations for a collection of the two young generations, in case one of the
    # youngest ran just before `del` and moved the cycle on.
    young, middle, _ = gc.get_threshold()
    kept = [[] for _ in range(young * (middle + 1) + 1)]
    assert freed() is None, f"a dropped cycle outlived {len(kept)} allocations (thresholds {gc.get_threshold()})"
    assert gc.isenabled()
