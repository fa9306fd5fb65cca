"""Clip: versions 1 and 6 (bounds as attributes), 11, 12 and 13 (bounds as optional inputs)."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace


@register("Clip", 11, 12, 13, padding="elementwise", layout="elementwise")
@np.errstate(all="ignore")  # a folded bound cast to float16 may overflow to inf, as in JAX
def clip(input, min=None, max=None):
    """Implements ONNX Clip: ``input`` limited to ``[min, max]``.

    Computed as ``minimum(maximum(input, min), max)``: when ``min > max`` every element
    becomes ``max``, as the operator's text says; nan stays nan.

    Args:
        input: a numeric array.
        min: the lower bound, a scalar (a one-element tensor is accepted) of the dtype of
            ``input``; ``None`` for no lower bound.
        max: the upper bound, likewise.

    Returns:
        An array of the shape and dtype of ``input``.

    Example:
        >>> jaxonnx.ops.clip(jnp.array([-2.0, 0.5, 3.0]), -1.0, 1.0)
        Array([-1. ,  0.5,  1. ], dtype=float32)
    """
    xp = namespace(input, min, max)
    out = input
    if min is not None:
        out = xp.maximum(out, _scalar(min, "min"))
    if max is not None:
        out = xp.minimum(out, _scalar(max, "max"))
    return out


@register("Clip", 1, 6, padding="elementwise")
@np.errstate(all="ignore")
def _clip_6(input, *, min=None, max=None, consumed_inputs=None):
    # Clip-6's bounds default to -FLT_MAX/FLT_MAX (also for double); Clip-1's to none.
    xp = namespace(input)
    min, max = (None if v is None else xp.asarray(v, dtype=input.dtype) for v in (min, max))
    return clip(input, min, max)


def _scalar(bound, name: str):
    if bound.size != 1:
        raise OnnxValidationError(f"needs a scalar `{name}` (one element), got shape {tuple(bound.shape)}.")
    return bound.reshape(())


__all__ = ["clip"]
