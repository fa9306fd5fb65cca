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
