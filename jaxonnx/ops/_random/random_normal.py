"""RandomNormal and RandomNormalLike: versions 1 and 22 (22 adds bfloat16)."""

from __future__ import annotations

import jax

from jaxonnx._core.dtypes import jax_dtype
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.casting import schema_types
from jaxonnx.ops._helpers.random import draw_dtype, draw_key, draw_shape, float_output_dtype

_TYPES = {version: schema_types("RandomNormal", version, "T") for version in (1, 22)}
_LIKE_TYPES = {version: schema_types("RandomNormalLike", version, "T2") for version in (1, 22)}


def _normal(shape, dtype, *, mean, scale, seed, rng):
    key = draw_key(seed, rng)
    draw = jax.random.normal(key, shape, draw_dtype(dtype))
    return (draw * scale + mean).astype(jax_dtype(dtype))


@register("RandomNormal", 22)
def random_normal(*, shape, dtype=1, mean=0.0, scale=1.0, seed=None, rng=None):
    """Implements ONNX RandomNormal: a tensor of ``shape`` drawn from N(``mean``, ``scale``²).

    The draw comes from ``jax.random.normal``: from a key made of ``seed`` when given (the
    same tensor on every call), else from ``rng``, the caller's key (``model(x, rng=key)``
    folds it with the node's position); eagerly without either from a fresh key, and under
    ``jax.jit`` without either an error. Half types are drawn in float32 and rounded.

    Args:
        shape: the output shape (a list of ints).
        dtype: the ``onnx.TensorProto`` code of the output type (default 1, float).
        mean: the mean of the distribution.
        scale: its standard deviation.
        seed: a seed for a deterministic draw.
        rng: a ``jax.random`` key, used when there is no ``seed``.

    Returns:
        The draw, of the ``dtype``'s element type.

    Example:
        >>> x = jaxonnx.ops.random_normal(shape=[2, 3], mean=5.0, scale=0.5, seed=0.0)
        >>> x.shape, x.dtype, bool((abs(x - 5) < 3).all())
        ((2, 3), dtype('float32'), True)
    """
    return _normal(
        draw_shape(shape),
        float_output_dtype(dtype, None, allowed=_TYPES[22]),
        mean=mean,
        scale=scale,
        seed=seed,
        rng=rng,
    )


@register("RandomNormal", 1)
def _random_normal_1(*, shape, dtype=1, mean=0.0, scale=1.0, seed=None, rng=None):
    return _normal(
        draw_shape(shape),
        float_output_dtype(dtype, None, allowed=_TYPES[1]),
        mean=mean,
        scale=scale,
        seed=seed,
        rng=rng,
    )


@register("RandomNormalLike", 22, shape_only=True)
def random_normal_like(input, *, dtype=None, mean=0.0, scale=1.0, seed=None, rng=None):
    """Implements ONNX RandomNormalLike: a draw from N(``mean``, ``scale``²) of ``input``'s shape.

    Only the shape of ``input`` is read (and its type when ``dtype`` is not given); the
    key is chosen as in :func:`random_normal`.

    Args:
        input: any tensor; its shape is the output's.
        dtype: the ``onnx.TensorProto`` code of the output type; by default ``input``'s
            type, which must then be a float type.
        mean: the mean of the distribution.
        scale: its standard deviation.
        seed: a seed for a deterministic draw.
        rng: a ``jax.random`` key, used when there is no ``seed``.

    Returns:
        The draw, of ``input``'s shape.

    Example:
        >>> jaxonnx.ops.random_normal_like(jnp.zeros((2, 2), jnp.int32), dtype=10, seed=1.0).dtype
        dtype('float16')
    """
    return _normal(
        input.shape,
        float_output_dtype(dtype, input, allowed=_LIKE_TYPES[22]),
        mean=mean,
        scale=scale,
        seed=seed,
        rng=rng,
    )


@register("RandomNormalLike", 1, shape_only=True)
def _random_normal_like_1(input, *, dtype=None, mean=0.0, scale=1.0, seed=None, rng=None):
    return _normal(
        input.shape,
        float_output_dtype(dtype, input, allowed=_LIKE_TYPES[1]),
        mean=mean,
        scale=scale,
        seed=seed,
        rng=rng,
    )


__all__ = ["random_normal", "random_normal_like"]
