"""Squeeze: versions 1, 11, 13, 21, 23, 24 and 25 (`axes` is an attribute before 13)."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import int_list, normalize_axis


@register("Squeeze", 13, 21, 23, 24, 25, static=("axes",), padding="moves", keeps_non_zeros=True)
def squeeze(data, axes=None):
    """Implements ONNX Squeeze: ``data`` without the size-1 dims listed in ``axes``.

    Args:
        data: an array.
        axes: integers in ``[-rank, rank - 1]``, each naming a dim of size 1, each once;
            ``None`` removes every size-1 dim. Decides the output shape, so it must be known
            at trace time.

    Returns:
        ``data`` reshaped without those dims.

    Example:
        >>> jaxonnx.ops.squeeze(jnp.zeros((1, 3, 1)), [-1]).shape
        (1, 3)
    """
    return _squeeze(data, None if axes is None else int_list(axes, name="axes"), allow_negative=True)


@register("Squeeze", 11, padding="moves", keeps_non_zeros=True)
def _squeeze_11(data, *, axes=None):
    return _squeeze(data, axes, allow_negative=True)


@register("Squeeze", 1, padding="moves", keeps_non_zeros=True)
def _squeeze_1(data, *, axes=None):
    return _squeeze(data, axes, allow_negative=False)


def _squeeze(data, axes, *, allow_negative):
    shape = tuple(data.shape)
    if axes is None:
        axes = [d for d, n in enumerate(shape) if n == 1]
    axes = [normalize_axis(int(a), data.ndim, name="axes", allow_negative=allow_negative) for a in axes]
    if len(set(axes)) != len(axes):
        raise OnnxValidationError(f"got repeated `axes` {axes}; each axis may appear once.")
    for axis in axes:
        if shape[axis] != 1:
            raise OnnxValidationError(
                f"got `axes` with axis {axis}, which has size {shape[axis]} in `data` of shape {shape}; "
                "only dims of size 1 can be squeezed."
            )
    if not axes:
        return data
    return data.reshape(tuple(n for d, n in enumerate(shape) if d not in axes))


__all__ = ["squeeze"]
