"""Adapters for the attributes of the elementwise ops' versions before opset 7.

- ``broadcast`` / ``axis`` (Add, Sub, Mul, Div, Pow, Equal, Less, Greater, And, Or, Xor
  versions 1 and 6): the second input is broadcast onto the first, unidirectionally, only
  when ``broadcast=1``; see :func:`unidirectional`.
- ``consumed_inputs`` (most version-1 ops): an in-place memory hint of the old
  optimizer with no effect on the values, accepted and ignored.

Registers no op: each op module registers its own adapters built here.
"""

from __future__ import annotations

from collections.abc import Callable

from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import normalize_axis


def unidirectional(A, B, *, broadcast, axis, names=("A", "B")):
    """``B`` reshaped to the rank of ``A`` as the pre-7 versions broadcast it.

    With ``broadcast=0`` the shapes must be equal. With ``broadcast=1``, ``B`` is either a
    one-element tensor of rank at most ``A``'s, or its shape equals a contiguous run of
    ``A``'s dims starting at ``axis`` (suffix matching when ``axis`` is not given);
    "1-dim expansion" (a 1 in ``B`` against a larger dim of ``A``) is not part of it.
    """
    first, second = names
    a_shape, b_shape = tuple(A.shape), tuple(B.shape)
    if broadcast not in (0, 1):
        raise OnnxValidationError(f"got `broadcast`={broadcast}; it must be 0 or 1.")
    if not broadcast:
        if a_shape != b_shape:
            raise OnnxValidationError(
                f"got `{first}` of shape {a_shape} and `{second}` of shape {b_shape} with `broadcast`=0; "
                "versions before 7 need equal shapes unless `broadcast`=1."
            )
        return B
    if B.ndim > A.ndim:
        raise OnnxValidationError(
            f"cannot broadcast `{second}` of shape {b_shape} onto `{first}` of shape {a_shape}: "
            f"`{second}` has the higher rank (versions before 7 broadcast `{second}` onto `{first}` only)."
        )
    if B.size == 1:
        return B.reshape((1,) * A.ndim)
    start = A.ndim - B.ndim if axis is None else normalize_axis(axis, A.ndim)
    if a_shape[start : start + B.ndim] != b_shape:
        raise OnnxValidationError(
            f"cannot broadcast `{second}` of shape {b_shape} onto `{first}` of shape {a_shape} at "
            f"`axis`={start}: versions before 7 need `{second}`'s shape to equal a run of "
            f"`{first}`'s dims there ({a_shape[start : start + B.ndim]}), or `{second}` to have one element."
        )
    return B.reshape((1,) * start + b_shape + (1,) * (A.ndim - start - B.ndim))


def legacy_binary(fn: Callable, names=("A", "B")) -> Callable:
    """The pre-7 form of the binary op ``fn``: ``broadcast`` / ``axis`` (and
    ``consumed_inputs``) attributes, then ``fn`` on the reshaped inputs."""

    def legacy(A, B, *, broadcast=0, axis=None, consumed_inputs=None):
        return fn(A, unidirectional(A, B, broadcast=broadcast, axis=axis, names=names))

    legacy.__name__ = legacy.__qualname__ = f"_{fn.__name__}_legacy"
    return legacy


def without_consumed_inputs(fn: Callable) -> Callable:
    """``fn`` accepting (and ignoring) version 1's ``consumed_inputs`` attribute."""

    def legacy(*inputs, consumed_inputs=None, **attributes):
        return fn(*inputs, **attributes)

    legacy.__name__ = legacy.__qualname__ = f"_{fn.__name__}_1"
    return legacy
