"""The ways a test runs a loaded model so that each compiles a different program."""

from __future__ import annotations

from collections.abc import Callable

import jax

import jaxonnx


def eager_and_jitted(loaded: jaxonnx.Model, call: Callable | None = None) -> list[Callable]:
    """``call`` (the model itself, or a function of it such as ``loaded.run``), and
    ``jax.jit(call)`` where an eager call runs op by op. Where the eager call compiles the
    whole graph it runs ``jax.jit``'s executable of the graph already (``Model.eager_mode``),
    and a second ``jax.jit`` would compile the same program again."""
    call = loaded if call is None else call
    return [call] if loaded.eager_mode.startswith("whole graph") else [call, jax.jit(call)]
