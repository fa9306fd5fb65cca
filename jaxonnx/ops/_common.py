"""Helpers shared by the op modules: array namespace choice, static values, axes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._dtypes import as_jax
from jaxonnx._errors import OnnxValidationError, StaticValueError


def namespace(*arrays):
    """numpy when every given array is numpy (so static values stay exact), else jax.numpy."""
    if all(a is None or isinstance(a, (np.ndarray, np.generic)) for a in arrays):
        return np
    return jnp


def public_array(x, *, op: str, name: str):
    """How ``jaxonnx.ops`` functions take an array: JAX arrays and tracers as they are,
    numpy numbers exactly as JAX arrays, and string tensors as numpy (eager only)."""
    if isinstance(x, jax.Array):
        return x
    x = np.asarray(x)
    if x.dtype.kind in "OUS":
        return x
    return as_jax(x, what=f"`{name}` of {op}")


def is_traced(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def static_array(x, *, op: str, name: str, hint: str = "") -> np.ndarray:
    """The concrete numpy value of ``x``; raises a trace-time error naming ``name`` if it is traced."""
    if is_traced(x):
        raise StaticValueError(
            f"{op} needs the value of `{name}` to decide its output shape, but `{name}` is "
            f"traced (shape {tuple(x.shape)}, dtype {x.dtype}) so its value is unknown at trace "
            f"time. Pass it as a Python value or a numpy array{hint}."
        )
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
