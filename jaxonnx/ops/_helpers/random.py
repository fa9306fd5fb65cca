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
import numpy as np
import onnx

from jaxonnx._core.dtypes import jax_dtype, numpy_dtype, onnx_type_name
from jaxonnx._core.registry import is_traced
from jaxonnx._errors import OnnxTypeError, OnnxValidationError


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


def draw_dtype(dtype) -> jnp.dtype:
    """The dtype a float draw is made in before it becomes ``dtype``: float32 for the half
    types (16-bit draws have too few random bits for their tails and their means), float64
    for float64 where JAX computes it (``jax_enable_x64`` on)."""
    return jnp.dtype(jnp.float64) if jax_dtype(dtype) == np.float64 else jnp.dtype(jnp.float32)


def float_output_dtype(dtype, like, *, allowed: frozenset[str]) -> np.dtype:
    """The output dtype of a random op: the ``dtype`` attribute (an ``onnx.TensorProto``
    code), else the dtype of ``like`` (the input of the ``*Like`` ops), checked against the
    version's output types ``allowed`` (ONNX type names).

    Raises:
        OnnxTypeError: for a ``dtype`` code, or an input dtype taken in its place, that the
            version's outputs do not allow.
    """
    if dtype is None:
        if like is None:
            raise OnnxTypeError("needs the `dtype` attribute, which was not given.")
        name = onnx_type_name(like.dtype)
        if name not in allowed:
            raise OnnxTypeError(
                f"got an input of type {name} and no `dtype`; the output takes the input's type only where it is "
                f"one of {', '.join(sorted(allowed))}, so give `dtype`."
            )
        return np.dtype(like.dtype)
    name = onnx.TensorProto.DataType.Name(dtype).lower() if dtype in onnx.TensorProto.DataType.values() else None
    if name not in allowed:
        raise OnnxTypeError(
            f"got `dtype`={dtype} ({name or 'not an ONNX type code'}); it must be the code of one of "
            f"{', '.join(sorted(allowed))}."
        )
    return numpy_dtype(dtype)


def draw_shape(shape) -> tuple[int, ...]:
    """The ``shape`` attribute of RandomNormal / RandomUniform as a tuple of ints."""
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise OnnxValidationError(f"got `shape`={list(shape)}; its dimensions must not be negative.")
    return shape
