"""Pooling windows as XLA:CPU runs them fast: the maximum or sum of strided slices.
Registers no op.

XLA:CPU lowers ``lax.reduce_window`` to a loop over the window inside a loop over the
outputs, which it does not vectorize. Written as the maximum or the sum of the window's
strided slices of the padded input, a pool is one loop that XLA fuses and vectorizes along
the contiguous last axis (the channels, in a model kept channels-last), and runs faster
(measured: ``benchmarks/cpu_formulations_results.md``, section 7). GPUs and TPUs keep
``reduce_window``; the choice is made per platform at lowering time with
``jax.lax.platform_dependent``.

The maximum combines the slices as ``where(s > m or s is NaN, s, m)`` in the window's
row-major order, so it is ``reduce_window``'s exactly (a NaN wins, as with ``lax.max``) and
so is its gradient: on ties all of it goes to the first maximum in row-major order, as
``reduce_window``'s VJP (``select_and_scatter``) gives it. The sum adds the slices into a
few partial sums (``conv_cpu._sum``): the same terms, in another order, so equal up to
floating-point reassociation; its gradient is exact.

Every function takes a window over all axes of ``x``, as ``reduce_window`` does (1 on the
batch and channel axes).
"""

from __future__ import annotations

import itertools
import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._platform import platform_dependent
from jaxonnx.ops._helpers.conv_cpu import _sum

# Past this many window taps the fused loop compiles slowly and gains little: reduce_window.
_MAX_TAPS = 64


def max_pool(x, window, strides, padding, lowest):
    """The maximum over windows of ``x``: ``window`` and ``strides`` per axis, ``padding``
    the ``(low, high)`` amount per axis, padded with ``lowest`` (which never wins). Slices
    on CPU (see the module docstring), ``reduce_window`` elsewhere.

    Example:
        >>> from jaxonnx.ops._helpers.pool_cpu import max_pool
        >>> x = jnp.array([[[1.0], [3.0], [2.0], [5.0]]])          # (N, W, C)
        >>> max_pool(x, (1, 2, 1), (1, 2, 1), ((0, 0),) * 3, -jnp.inf)[..., 0]
        Array([[3., 5.]], dtype=float32)
    """
    geometry = _geometry(window, strides, (1,) * len(window), padding)
    geometry["lowest"] = lowest
    if math.prod(geometry["window"]) > _MAX_TAPS:
        return _reduce_max(x, **geometry)
    return platform_dependent(x, cpu=partial(_slices_max, **geometry), default=partial(_reduce_max, **geometry))


def window_sum(x, window, strides, dilations, padding):
    """The sum over windows of ``x`` (zero padding): ``window``, ``strides`` and
    ``dilations`` per axis, ``padding`` the ``(low, high)`` amount per axis. Slices on CPU
    (see the module docstring), ``reduce_window`` elsewhere.

    Example:
        >>> from jaxonnx.ops._helpers.pool_cpu import window_sum
        >>> window_sum(jnp.array([[1.0, 2.0, 3.0]]), (1, 2), (1, 1), (1, 1), ((0, 0), (1, 0)))
        Array([[1., 3., 5.]], dtype=float32)
    """
    geometry = _geometry(window, strides, dilations, padding)
    if math.prod(geometry["window"]) > _MAX_TAPS:
        return _reduce_sum(x, **geometry)
    return platform_dependent(x, cpu=partial(_slices_sum, **geometry), default=partial(_reduce_sum, **geometry))


def numpy_window_sum(x: np.ndarray, window, strides, dilations, padding) -> np.ndarray:
    """:func:`window_sum` of a numpy array, in numpy (a pool's divisors, known at trace time)."""
    return _sum_of_slices(x, **_geometry(window, strides, dilations, padding), xp=np)


def _geometry(window, strides, dilations, padding) -> dict:
    return {
        "window": tuple(window),
        "strides": tuple(strides),
        "dilations": tuple(dilations),
        "padding": tuple(tuple(p) for p in padding),
    }


def _reduce_max(x, *, window, strides, dilations, padding, lowest):
    return jax.lax.reduce_window(x, lowest, jax.lax.max, window, strides, padding, window_dilation=dilations)


def _reduce_sum(x, *, window, strides, dilations, padding):
    return jax.lax.reduce_window(
        x, np.zeros((), x.dtype), jax.lax.add, window, strides, padding, window_dilation=dilations
    )


def _taps(x_shape, window, strides, dilations, padding, xp):
    """The padding that the windows read (ceil_mode's end padding can reach past it; a
    negative amount crops what they never reach) and, per window tap, the slice of the
    padded input that each output reads there."""
    sizes = [
        (d + lo + hi - (k - 1) * r - 1) // s + 1
        for d, (lo, hi), k, s, r in zip(x_shape, padding, window, strides, dilations)
    ]
    pads = [
        (lo, (size - 1) * s + (k - 1) * r + 1 - d - lo)
        for d, (lo, _), k, s, r, size in zip(x_shape, padding, window, strides, dilations, sizes)
    ]

    def slices(padded):
        for tap in itertools.product(*map(range, window)):
            start = [t * r for t, r in zip(tap, dilations)]
            limit = [b + (size - 1) * s + 1 for b, size, s in zip(start, sizes, strides)]
            if xp is np:
                yield padded[tuple(slice(b, e, s) for b, e, s in zip(start, limit, strides))]
            else:
                yield jax.lax.slice(padded, start, limit, strides)

    return pads, slices


def _pad(x, pads, value, xp):
    if xp is np:
        cropped = x[tuple(slice(max(-lo, 0), x.shape[i] - max(-hi, 0)) for i, (lo, hi) in enumerate(pads))]
        return np.pad(cropped, [(max(lo, 0), max(hi, 0)) for lo, hi in pads], constant_values=value)
    return jax.lax.pad(x, jnp.asarray(value, x.dtype), [(lo, hi, 0) for lo, hi in pads])


def _slices_max(x, *, window, strides, dilations, padding, lowest):
    pads, slices = _taps(x.shape, window, strides, dilations, padding, jnp)
    floating = jnp.issubdtype(x.dtype, jnp.floating)
    result = None
    for part in slices(_pad(x, pads, lowest, jnp)):
        if result is None:
            result = part
            continue
        # Strictly greater: on ties the earlier tap keeps the maximum and its gradient.
        wins = part > result
        if floating:
            wins = wins | jnp.isnan(part)
        result = jnp.where(wins, part, result)
    return result


def _slices_sum(x, *, window, strides, dilations, padding):
    return _sum_of_slices(x, window=window, strides=strides, dilations=dilations, padding=padding, xp=jnp)


def _sum_of_slices(x, *, window, strides, dilations, padding, xp):
    pads, slices = _taps(x.shape, window, strides, dilations, padding, xp)
    return _sum(list(slices(_pad(x, pads, 0, xp))))
