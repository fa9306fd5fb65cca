"""RandomUniform and RandomUniformLike: versions 1 and 22 (22 adds bfloat16)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxonnx._core.dtypes import jax_dtype
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.casting import schema_types
from jaxonnx.ops._helpers.random import draw_dtype, draw_key, draw_shape, float_output_dtype

_TYPES = {version: schema_types("RandomUniform", version, "T") for version in (1, 22)}
_LIKE_TYPES = {version: schema_types("RandomUniformLike", version, "T2") for version in (1, 22)}


def _uniform(shape, dtype, *, low, high, seed, rng):
    key = draw_key(seed, rng)
    dtype = jax_dtype(dtype)
    draw = jax.random.uniform(key, shape, draw_dtype(dtype), minval=low, maxval=high).astype(dtype)
    if draw_dtype(dtype) != dtype and low < high:
        # A float32 draw just below `high` may round up to it in a half type: keep [low, high).
        below_high = jnp.nextafter(jnp.asarray(high, dtype), jnp.asarray(low, dtype))
        draw = jnp.minimum(draw, below_high)
    return draw


@register("RandomUniform", 22)
def random_uniform(*, shape, dtype=1, high=1.0, low=0.0, seed=None, rng=None):
    """Implements ONNX RandomUniform: a tensor of ``shape`` drawn uniformly from [``low``, ``high``).

    The draw comes from ``jax.random.uniform``: from a key made of ``seed`` when given (the
    same tensor on every call), else from ``rng``, the caller's key (``model(x, rng=key)``
    folds it with the node's position); eagerly without either from a fresh key, and under
    ``jax.jit`` without either an error. Half types are drawn in float32 and rounded
    (a draw that rounds up to ``high`` becomes the largest value below it).

    Args:
        shape: the output shape (a list of ints).
        dtype: the ``onnx.TensorProto`` code of the output type (default 1, float).
        high: the upper bound (excluded).
        low: the lower bound.
        seed: a seed for a deterministic draw.
        rng: a ``jax.random`` key, used when there is no ``seed``.

    Returns:
        The draw, of the ``dtype``'s element type.

    Example:
        >>> x = jaxonnx.ops.random_uniform(shape=[4], low=2.0, high=3.0, seed=0.0)
        >>> x.shape, bool(((2 <= x) & (x < 3)).all())
        ((4,), True)
    """
    return _uniform(
        draw_shape(shape), float_output_dtype(dtype, None, allowed=_TYPES[22]), low=low, high=high, seed=seed, rng=rng
    )


@register("RandomUniform", 1)
def _random_uniform_1(*, shape, dtype=1, high=1.0, low=0.0, seed=None, rng=None):
    return _uniform(
        draw_shape(shape), float_output_dtype(dtype, None, allowed=_TYPES[1]), low=low, high=high, seed=seed, rng=rng
    )


@register("RandomUniformLike", 22, shape_only=True)
def random_uniform_like(input, *, dtype=None, high=1.0, low=0.0, seed=None, rng=None):
    """Implements ONNX RandomUniformLike: a uniform draw from [``low``, ``high``) of ``input``'s shape.

    Only the shape of ``input`` is read (and its type when ``dtype`` is not given); the
    key is chosen as in :func:`random_uniform`.

    Args:
        input: any tensor; its shape is the output's.
        dtype: the ``onnx.TensorProto`` code of the output type; by default ``input``'s
            type, which must then be a float type.
        high: the upper bound (excluded).
        low: the lower bound.
        seed: a seed for a deterministic draw.
        rng: a ``jax.random`` key, used when there is no ``seed``.

    Returns:
        The draw, of ``input``'s shape.

    Example:
        >>> jaxonnx.ops.random_uniform_like(jnp.zeros((2, 2)), rng=jax.random.key(0)).shape
        (2, 2)
    """
    return _uniform(
        input.shape, float_output_dtype(dtype, input, allowed=_LIKE_TYPES[22]), low=low, high=high, seed=seed, rng=rng
    )


@register("RandomUniformLike", 1, shape_only=True)
def _random_uniform_like_1(input, *, dtype=None, high=1.0, low=0.0, seed=None, rng=None):
    return _uniform(
        input.shape, float_output_dtype(dtype, input, allowed=_LIKE_TYPES[1]), low=low, high=high, seed=seed, rng=rng
    )


__all__ = ["random_uniform", "random_uniform_like"]
