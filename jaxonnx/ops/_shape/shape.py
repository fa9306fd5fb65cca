"""Shape: versions 1, 13, 15, 19, 21, 23, 24 and 25 (15 adds `start` and `end`)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.padding import Call, as_tuple, length_marks
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.common import dims_array


def _on_padding(call: Call):
    """Shape's rule on padding: the shape of a marked value is the hinted (padded) length, as
    static numpy so that shape arithmetic folds, flagged as a length whose real value is the
    real count."""
    call.only_inputs((0,), "")
    results = as_tuple(call.run(call.args))
    data = call.args[0]
    axes = call.axis_marks(0)
    if not axes:
        return results, [None]  # the shape of a length: its length is not padded
    rank = np.ndim(data)
    start = call.attributes.get("start", 0) or 0
    end = call.attributes.get("end")
    dims = list(range(rank))[slice(start, end)]
    shape = np.asarray(results[0])
    flags = np.array([d in axes for d in dims], bool)
    real = (
        jnp.stack(
            [
                jnp.asarray(axes[d].count if d in axes else n).astype(jnp.asarray(shape).dtype)
                for d, n in zip(dims, shape)
            ]
        )
        if dims
        else jnp.asarray(shape)
    )
    return results, [length_marks(flags, real, next(iter(axes.values())))]


@register("Shape", 15, 19, 21, 23, 24, 25, padding=_on_padding, shape_only=True)
def shape(data, *, start: int = 0, end: int | None = None):
    """Implements ONNX Shape: the dims of ``data`` from axis ``start`` to ``end``, as int64.

    The dims of an array are known at trace time, so the result is an exact numpy int64
    array even for a traced ``data``: shape arithmetic built on it (Gather, Concat,
    Reshape...) stays static under ``jax.jit`` and is recomputed on every trace. Only the
    symbolic dims of ``jax.export`` give a JAX array (int32 with ``jax_enable_x64`` off).

    Args:
        data: an array of any element type.
        start: the first axis; negative counts from the back; clamped to ``[0, rank]``.
        end: the axis after the last; negative counts from the back; clamped to
            ``[0, rank]``; ``None`` means ``rank``. ``start >= end`` gives an empty result.

    Returns:
        A 1-D int64 array.

    Example:
        >>> jaxonnx.ops.shape(jnp.zeros((2, 3, 4)), start=-2)
        array([3, 4])
    """
    return dims_array(data.shape[start:end])


@register("Shape", 1, 13, padding=_on_padding, shape_only=True)
def _shape_1(data):
    return shape(data)


__all__ = ["shape"]
