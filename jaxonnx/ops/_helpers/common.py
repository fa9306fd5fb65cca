"""Helpers shared by the op modules: the array namespace, static integer lists, axes.

Op errors are sentences without the op's name ("got `axis`=3 ..."): the registry puts the
version label (``Slice-13``) in front.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.dtypes import jax_dtype
from jaxonnx._core.registry import is_traced as is_traced
from jaxonnx._errors import OnnxValidationError


def namespace(*arrays):
    """numpy when every array is numpy (values known at trace time stay exact), else jax.numpy.

    The registry hands an op either all-numpy or all-JAX inputs (see ``OpContract.folds``),
    so looking at one input is enough; ``None`` inputs are skipped.
    """
    return jnp if any(isinstance(a, jax.Array) for a in arrays) else np


def int_list(value: np.ndarray, *, name: str) -> tuple[int, ...]:
    """A static 0-D or 1-D integer tensor as a tuple of exact Python ints."""
    value = np.asarray(value)
    if value.dtype.kind not in "iu" and value.size:
        raise OnnxValidationError(f"needs integer `{name}`, got dtype {value.dtype}.")
    if value.ndim > 1:
        raise OnnxValidationError(f"needs a 1-D `{name}`, got shape {value.shape}.")
    return tuple(int(v) for v in value.reshape(-1))


def normalize_axis(axis: int, rank: int, *, name: str = "axis", allow_negative=True, upper=None) -> int:
    """``axis`` in ``[-rank, upper)`` (``upper`` defaults to ``rank``) as a non-negative int."""
    upper = rank if upper is None else upper
    lower = -rank if allow_negative else 0
    if not lower <= axis < upper:
        raise OnnxValidationError(
            f"got `{name}`={axis} for an input of rank {rank}; the accepted range is [{lower}, {upper - 1}]."
        )
    return axis + rank if axis < 0 else axis


def dims_array(dims):
    """``dims`` as an exact int64 numpy array; symbolic dims (``jax.export``) as a JAX array."""
    if all(isinstance(d, int) for d in dims):
        return np.array(dims, dtype=np.int64).reshape(len(dims))
    return jnp.array(dims, dtype=jax_dtype(np.int64))
