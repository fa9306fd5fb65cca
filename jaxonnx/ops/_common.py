"""Helpers shared by the op modules: array namespace choice, static values, axes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._dtypes import as_jax, is_string_array
from jaxonnx._errors import OnnxTypeError, OnnxValidationError, StaticValueError


def common_namespace(*named, op: str):
    """Puts the ``(name, array)`` pairs ``named`` in one array namespace; returns it and the arrays.

    numpy when every array is numpy (static values stay exact). Otherwise jax.numpy, with
    the numpy arrays converted by :func:`~jaxonnx._dtypes.as_jax`, which refuses to narrow
    64-bit values when ``jax_enable_x64`` is off (``jnp`` would do it silently). String
    tensors stay numpy on the eager path, where concrete JAX arrays beside them become
    numpy too; a traced array beside a string tensor is refused.
    """
    arrays = [value for _, value in named]
    if all(a is None or isinstance(a, (np.ndarray, np.generic)) for a in arrays):
        return np, arrays
    strings = [name for name, value in named if is_string_array(value)]
    if strings:
        traced = [name for name, value in named if is_traced(value)]
        if traced:
            raise OnnxTypeError(
                f"{op} got the string tensor `{strings[0]}` with the traced `{traced[0]}`; JAX cannot "
                "hold strings, so string tensors run only on the eager path (numpy or concrete "
                "inputs, outside `jax.jit`)."
            )
        return np, [None if a is None else np.asarray(a) for a in arrays]
    return jnp, [None if a is None else as_jax(a, what=f"`{name}` of {op}") for name, a in named]


def public_array(x, *, op: str, name: str):
    """How ``jaxonnx.ops`` functions take an array: JAX arrays and tracers as they are,
    numpy numbers exactly as JAX arrays, and string tensors as numpy (eager only)."""
    if isinstance(x, jax.Array):
        return x
    x = np.asarray(x)
    if x.dtype.kind in "OUS":
        return x
    return as_jax(x, what=f"`{name}` of {op}")


def public_static(x):
    """How ``jaxonnx.ops`` functions take a value whose contents matter at trace time
    (a Compress condition, GatherElements indices): numpy stays numpy, so that it is still
    concrete under ``jax.jit`` (``jnp.asarray`` inside a trace would make it a tracer)."""
    return x if isinstance(x, jax.Array) else np.asarray(x)


def is_traced(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def static_array(x, *, op: str, name: str, hint: str = "") -> np.ndarray:
    """The concrete numpy value of ``x``; raises a trace-time error naming ``name`` if it is traced."""
    if is_traced(x):
        error = StaticValueError(
            f"{op} needs the value of `{name}` to decide its output shape, but `{name}` is "
            f"traced (shape {tuple(x.shape)}, dtype {x.dtype}) so its value is unknown at trace "
            f"time. Pass it as a Python value or a numpy array{hint}."
        )
        error.argument = name
        raise error
    return np.asarray(x)


def static_ints(x, *, op: str, name: str, hint: str = "") -> tuple[int, ...]:
    """A 1-D integer tensor (or a Python int/sequence) as a tuple of exact Python ints."""
    value = static_array(x, op=op, name=name, hint=hint)
    if value.dtype.kind not in "iu" and value.size:
        raise OnnxValidationError(f"{op} needs integer `{name}`, got dtype {value.dtype}.")
    if value.ndim > 1:
        raise OnnxValidationError(f"{op} needs a 1-D `{name}`, got shape {value.shape}.")
    return tuple(int(v) for v in value.reshape(-1))


def normalize_axis(axis: int, rank: int, *, op: str, name: str = "axis", allow_negative=True, upper=None) -> int:
    """``axis`` in ``[-rank, upper)`` (``upper`` defaults to ``rank``) as a non-negative int."""
    upper = rank if upper is None else upper
    lower = -rank if allow_negative else 0
    if not lower <= axis < upper:
        raise OnnxValidationError(
            f"{op} got `{name}`={axis} for an input of rank {rank}; the accepted range is "
            f"[{lower}, {upper - 1}]."
        )
    return axis + rank if axis < 0 else axis
