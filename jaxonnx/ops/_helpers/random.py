"""Random keys for the ops that draw (training-mode Dropout, the random ops), the JAX way.

JAX has no hidden random state. A node with a ``seed`` attribute draws from a key made of
that seed, the same draw on every call. A node without one draws from the key the caller
passes (``model(x, rng=key)``; the graph runner folds in the node's position, see
:mod:`jaxonnx._core.graph`). Without either, an eager call draws from a fresh key (as
onnxruntime draws anew per run), and a traced call raises: a key made while tracing would be
a constant of the compiled computation, the same "random" draw on every call.
"""

from __future__ import annotations

import secrets

import jax
import jax.numpy as jnp

from jaxonnx._core.registry import is_traced
from jaxonnx._errors import OnnxValidationError


def draw_key(seed, rng):
    """The key a node draws from: its ``seed``'s, else the caller's ``rng``, else (eagerly
    only) a fresh one.

    Raises:
        OnnxValidationError: under a trace (``jax.jit``, ``vmap``, ``grad``) with neither.
    """
    if seed is not None:
        return jax.random.PRNGKey(int(seed) % 2**32)
    if rng is not None:
        return rng
    # Under omnistaging every array made inside a trace is a tracer: this asks "are we tracing?".
    if is_traced(jnp.zeros(())):
        raise OnnxValidationError(
            "draws random numbers but has no `seed` attribute and got no key; under jax.jit a key made "
            "here would be a constant, the same draw on every call. Pass one: `model(x, rng=key)` or "
            "`model.apply(params, x, rng=key)` with `key = jax.random.key(0)` (split it per step)."
        )
    return jax.random.PRNGKey(secrets.randbits(32))
