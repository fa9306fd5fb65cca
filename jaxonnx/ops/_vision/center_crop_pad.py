"""CenterCropPad: version 18."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import int_list, namespace, normalize_axis


@register("CenterCropPad", 18, static=("shape",))
def center_crop_pad(input_data, shape, *, axes=None):
    """Implements ONNX CenterCropPad: crops or zero-pads axes to ``shape``, centred.

    A crop starts at ``(dim - target) // 2`` (half a pixel left of centre when the
    difference is odd); padding puts ``(target - dim) // 2`` zeros before and the rest
    (one more when odd) after.

    Args:
        input_data: the array.
        shape: static int ``[target, ...]``, one per axis in ``axes``.
        axes: the axes to crop or pad (default: every axis); negative counts from the end.

    Returns:
        The array with the target sizes, the dtype of ``input_data``.

    Example:
        >>> jaxonnx.ops.center_crop_pad(jnp.arange(5), np.array([2]))
        Array([1, 2], dtype=int32)
        >>> jaxonnx.ops.center_crop_pad(jnp.array([1.0, 2.0]), np.array([5]))
        Array([0., 1., 2., 0., 0.], dtype=float32)
    """
    rank = input_data.ndim
    targets = int_list(shape, name="shape")
    axes = list(range(rank)) if axes is None else [normalize_axis(a, rank, name="axes") for a in axes]
    if len(set(axes)) != len(axes):
        raise OnnxValidationError(f"got repeated `axes` {list(axes)}.")
    if len(targets) != len(axes) or min(targets, default=0) < 0:
        raise OnnxValidationError(
            f"needs `shape` of {len(axes)} non-negative sizes, one per axis in {axes}, got {list(targets)}."
        )
    xp = namespace(input_data)
    crops = [slice(None)] * rank
    padding = [(0, 0)] * rank
    for axis, target in zip(axes, targets):
        dim = input_data.shape[axis]
        if target < dim:
            start = (dim - target) // 2
            crops[axis] = slice(start, start + target)
        elif target > dim:
            before = (target - dim) // 2
            padding[axis] = (before, target - dim - before)
    cropped = input_data[tuple(crops)]
    if any(padding[a] != (0, 0) for a in range(rank)):
        cropped = xp.pad(cropped, padding)
    return cropped


__all__ = ["center_crop_pad"]
