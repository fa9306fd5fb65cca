"""Reshape: versions 1, 5, 13, 14, 19, 21, 23, 24 and 25 (14 adds `allowzero`)."""

from __future__ import annotations

import math

import numpy as np

from jaxonnx._core.padding import Call, moves
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import int_list


def _on_padding(call: Call):
    """Reshape's rule on padding: the values move (``"moves"``), and a padded length in the
    target shape marks the axis it sizes at the real length."""
    return moves(call, lengths_as="shape")


@register("Reshape", 14, 19, 21, 23, 24, 25, static=("shape",), padding=_on_padding, keeps_non_zeros=True)
def reshape(data, shape, *, allowzero: int = 0):
    """Implements ONNX Reshape: ``data`` with the dims of ``shape``.

    Differs from numpy: by default an entry 0 copies the dim of ``data`` at the same
    position; with ``allowzero=1`` it is a dim of size 0. At most one entry may be -1,
    inferred from the number of elements. ``shape`` decides the output shape, so it must
    be known at trace time (a Python sequence, numpy array or concrete JAX array).

    Args:
        data: the array to reshape.
        shape: 1-D integers, each >= -1.
        allowzero: 0 (the default): an entry 0 copies the input dim; 1: it is a 0 dim, and
            then ``shape`` may not hold both 0 and -1.

    Returns:
        ``data`` reshaped, with its dtype.

    Example:
        >>> jaxonnx.ops.reshape(jnp.zeros((2, 3, 4)), [0, -1]).shape
        (2, 12)
    """
    return _reshape(data, _shape_list(shape), allowzero=bool(allowzero))


@register("Reshape", 5, 13, static=("shape",), padding=_on_padding, keeps_non_zeros=True)
def _reshape_5(data, shape):
    return _reshape(data, _shape_list(shape), allowzero=False)


@register("Reshape", 1, padding=_on_padding, keeps_non_zeros=True)
def _reshape_1(data, *, shape=None, consumed_inputs=None):
    # Reshape-1 takes `shape` as an attribute; `consumed_inputs` is a legacy hint with no effect.
    if shape is None:
        raise OnnxValidationError("needs the attribute `shape`, which was not given.")
    return _reshape(data, [int(d) for d in shape], allowzero=False)


def _shape_list(shape) -> list[int]:
    if np.ndim(shape) != 1:
        raise OnnxValidationError(f"needs a 1-D `shape`, got shape {np.shape(shape)}.")
    return list(int_list(shape, name="shape"))


def _reshape(data, shape: list[int], *, allowzero: bool):
    if any(d < -1 for d in shape) or shape.count(-1) > 1:
        raise OnnxValidationError(
            f"got `shape`={shape}; its entries must be >= -1, with at most one -1 (the inferred dim)."
        )
    if allowzero and 0 in shape and -1 in shape:
        raise OnnxValidationError(
            f"got `shape`={shape} with `allowzero`=1; a 0 dim and -1 together leave the inferred dim undetermined."
        )
    if not allowzero:
        copied = [i for i, d in enumerate(shape) if d == 0 and i >= data.ndim]
        if copied:
            raise OnnxValidationError(
                f"got `shape`={shape}, whose 0 at position {copied[0]} copies that dim of `data`, but `data` "
                f"has shape {tuple(data.shape)} (rank {data.ndim})."
            )
        shape = [data.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    if all(isinstance(d, int) for d in (*data.shape, *shape)):  # symbolic dims: reshape checks
        size, known = math.prod(data.shape), math.prod(d for d in shape if d != -1)
        if (size != known) if -1 not in shape else (known == 0 or size % known):
            raise OnnxValidationError(
                f"cannot reshape `data` of shape {tuple(data.shape)} ({size} elements) to `shape`={shape}."
            )
    return data if list(data.shape) == shape else data.reshape(shape)


__all__ = ["reshape"]
