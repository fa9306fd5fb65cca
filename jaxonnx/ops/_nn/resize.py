"""Resize: versions 10, 11, 13, 18 and 19.

Resizing is separable: each resized axis is one weighted sum of a few gathered taps, with
indices and weights computed exactly in numpy from the static output shape (and `roi`).
"""

from __future__ import annotations

import math

import numpy as np

from jaxonnx._core.registry import is_traced, register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import int_list, namespace, normalize_axis

_TRANSFORMS = {
    "half_pixel": lambda y, scale, n, out, roi: (y + 0.5) / scale - 0.5,
    "half_pixel_symmetric": lambda y, scale, n, out, roi: n / 2 * (1 - out / (scale * n)) + (y + 0.5) / scale - 0.5,
    "pytorch_half_pixel": lambda y, scale, n, out, roi: (y + 0.5) / scale - 0.5 if out > 1 else 0 * y,
    "align_corners": lambda y, scale, n, out, roi: y * (n - 1) / (out - 1) if out > 1 else 0 * y,
    "asymmetric": lambda y, scale, n, out, roi: y / scale,
    "tf_half_pixel_for_nn": lambda y, scale, n, out, roi: (y + 0.5) / scale,
    "tf_crop_and_resize": lambda y, scale, n, out, roi: (
        roi[0] * (n - 1)
        + (y * (roi[1] - roi[0]) * (n - 1) / (out - 1) if out > 1 else (roi[1] - roi[0]) * (n - 1) / 2 + 0 * y)
    ),
}
_NEAREST = {
    "round_prefer_floor": lambda x: np.where(x - np.floor(x) <= 0.5, np.floor(x), np.ceil(x)),
    "round_prefer_ceil": lambda x: np.where(x - np.floor(x) < 0.5, np.floor(x), np.ceil(x)),
    "floor": np.floor,
    "ceil": np.ceil,
}


def _cubic(a):
    def kernel(t):
        t = np.abs(t)
        near = ((a + 2) * t - (a + 3)) * t * t + 1
        far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
        return np.where(t <= 1, near, np.where(t < 2, far, 0.0))

    return kernel


def _linear(t):
    return np.clip(1 - np.abs(t), 0, None)


def _per_axis_inputs_moved(inputs, attributes, order):
    """``roi``, ``scales`` and ``sizes`` with their values put in ``order``, the order of
    ``X``'s axes when the graph runner holds it channels-last (``OpContract.layout``).

    Each holds one value per axis of ``X`` (``roi`` its starts, then its ends), and Resize
    resamples each axis on its own, so moving those values as ``X``'s axes move resizes the
    same. None (run in ONNX's layout) with the ``axes`` attribute or traced inputs.

    Example:
        >>> _per_axis_inputs_moved([None, np.array([1, 1, 2, 3], np.float32)], {}, (0, 2, 3, 1))
        [None, array([1., 2., 3., 1.], dtype=float32)]
    """
    if attributes.get("axes") is not None or any(is_traced(value) for value in inputs):
        return None

    def moved(value, parts):
        if value is None or np.size(value) == 0:
            return value
        value = np.asarray(value)
        return value.reshape(parts, len(order))[:, list(order)].reshape(-1)

    roi, scales, sizes = (list(inputs) + [None] * 3)[:3]
    return [moved(roi, 2), moved(scales, 1), moved(sizes, 1)][: len(inputs)]


@register("Resize", 19, static=("roi", "scales", "sizes"), layout=_per_axis_inputs_moved)
def resize(
    X,
    roi=None,
    scales=None,
    sizes=None,
    *,
    antialias=0,
    axes=None,
    coordinate_transformation_mode="half_pixel",
    cubic_coeff_a=-0.75,
    exclude_outside=0,
    extrapolation_value=0.0,
    keep_aspect_ratio_policy="stretch",
    mode="nearest",
    nearest_mode="round_prefer_floor",
):
    """Implements ONNX Resize: ``X`` resampled to a new shape by nearest, linear or cubic interpolation.

    Exactly one of ``scales`` and ``sizes`` is given; both decide the output shape, so they
    (and ``roi``) must be known at trace time. With ``scales`` the output size is
    ``floor(size * scale)`` and the coordinate transform uses the scale as given; with
    ``sizes`` it uses ``out / in`` (after ``keep_aspect_ratio_policy``). Axes whose size
    and scale stay 1 are untouched. Integer data is interpolated in float32 and rounded.

    Args:
        X: the input.
        roi: ``[starts..., ends...]`` per resized axis, for ``tf_crop_and_resize`` only.
        scales: a float per resized axis.
        sizes: an output size per resized axis.
        antialias: for linear and cubic downsampling, widen the kernel by ``1 / scale``.
        axes: the resized axes (default: all, in order); negative counts from the back.
        coordinate_transformation_mode: how an output index maps to an input coordinate:
            ``half_pixel``, ``half_pixel_symmetric``, ``pytorch_half_pixel``,
            ``align_corners``, ``asymmetric`` or ``tf_crop_and_resize``.
        cubic_coeff_a: the cubic kernel's ``a`` (-0.75 as PyTorch, -0.5 as TensorFlow).
        exclude_outside: give taps outside the input weight 0 and renormalize.
        extrapolation_value: the value of ``tf_crop_and_resize`` samples outside the input.
        keep_aspect_ratio_policy: ``stretch``, ``not_larger`` or ``not_smaller`` (with ``sizes``).
        mode: ``nearest``, ``linear`` or ``cubic``.
        nearest_mode: ``round_prefer_floor``, ``round_prefer_ceil``, ``floor`` or ``ceil``.

    Returns:
        The resized array, with the dtype of ``X``.

    Example:
        >>> x = jnp.array([[1.0, 2.0], [3.0, 4.0]])
        >>> jaxonnx.ops.resize(x, scales=np.array([1.0, 2.0], np.float32), mode="nearest",
        ...                    coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        Array([[1., 1., 2., 2.],
               [3., 3., 4., 4.]], dtype=float32)
    """
    return _resize(
        X,
        roi,
        scales,
        sizes,
        antialias=antialias,
        axes=axes,
        transform=coordinate_transformation_mode,
        cubic_coeff_a=cubic_coeff_a,
        exclude_outside=exclude_outside,
        extrapolation_value=extrapolation_value,
        policy=keep_aspect_ratio_policy,
        mode=mode,
        nearest_mode=nearest_mode,
        transforms=set(_TRANSFORMS) - {"tf_half_pixel_for_nn"},
    )


@register("Resize", 18, static=("roi", "scales", "sizes"), layout=_per_axis_inputs_moved)
def _resize_18(X, roi=None, scales=None, sizes=None, *, coordinate_transformation_mode="half_pixel", **attributes):
    # half_pixel_symmetric arrived in 19.
    transforms = set(_TRANSFORMS) - {"tf_half_pixel_for_nn", "half_pixel_symmetric"}
    return _resize(
        X, roi, scales, sizes, transform=coordinate_transformation_mode, transforms=transforms, **_renamed(attributes)
    )


@register("Resize", 11, 13, static=("roi", "scales", "sizes"), layout=_per_axis_inputs_moved)
def _resize_11(X, roi=None, scales=None, sizes=None, *, coordinate_transformation_mode="half_pixel", **attributes):
    # No antialias, axes or keep_aspect_ratio_policy; tf_half_pixel_for_nn (removed in 13) is kept.
    transforms = set(_TRANSFORMS) - {"half_pixel_symmetric"}
    return _resize(
        X, roi, scales, sizes, transform=coordinate_transformation_mode, transforms=transforms, **_renamed(attributes)
    )


@register("Resize", 10, static=("scales",))
def _resize_10(X, scales, *, mode="nearest"):
    # Resize-10 maps coordinates asymmetrically (x / scale); its nearest rounding is
    # onnxruntime's: down when upsampling, up when downsampling.
    return _resize(
        X, None, scales, None, transform="asymmetric", mode=mode, nearest_mode="resize_10", transforms={"asymmetric"}
    )


def _renamed(attributes):
    attributes = dict(attributes)
    if "keep_aspect_ratio_policy" in attributes:
        attributes["policy"] = attributes.pop("keep_aspect_ratio_policy")
    return attributes


def _resize(
    X,
    roi,
    scales,
    sizes,
    *,
    transform,
    transforms,
    mode="nearest",
    nearest_mode="round_prefer_floor",
    antialias=0,
    axes=None,
    cubic_coeff_a=-0.75,
    exclude_outside=0,
    extrapolation_value=0.0,
    policy="stretch",
):
    _check_choice("mode", mode, ("nearest", "linear", "cubic"))
    _check_choice("coordinate_transformation_mode", transform, sorted(transforms))
    _check_choice(
        "nearest_mode", nearest_mode, [*_NEAREST, "resize_10"] if nearest_mode == "resize_10" else list(_NEAREST)
    )
    _check_choice("keep_aspect_ratio_policy", policy, ("stretch", "not_larger", "not_smaller"))
    rank = X.ndim
    axes = tuple(range(rank)) if axes is None else tuple(normalize_axis(a, rank, name="axes") for a in axes)
    if len(set(axes)) != len(axes):
        raise OnnxValidationError(f"got repeated `axes` {list(axes)}; each axis may appear once.")
    scales = None if scales is None or scales.size == 0 else np.asarray(scales, dtype=np.float64).reshape(-1)
    sizes = None if sizes is None or sizes.size == 0 else int_list(sizes, name="sizes")
    if (scales is None) == (sizes is None):
        raise OnnxValidationError(
            "needs exactly one of `scales` and `sizes` (a non-empty one), got "
            f"{'both' if scales is not None else 'neither'}."
        )
    given = scales if scales is not None else sizes
    if len(given) != len(axes):
        name = "scales" if scales is not None else "sizes"
        raise OnnxValidationError(
            f"needs one value of `{name}` per resized axis ({len(axes)}), got {np.asarray(given).tolist()}."
        )
    in_sizes = [X.shape[a] for a in axes]
    if scales is not None:
        if not np.all(scales > 0):
            raise OnnxValidationError(f"needs positive `scales`, got {scales.tolist()}.")
        out_sizes = [int(math.floor(s * n)) for s, n in zip(scales, in_sizes)]
    else:
        if min(sizes) < 0:
            raise OnnxValidationError(f"needs non-negative `sizes`, got {list(sizes)}.")
        scales = np.array([o / n if n else 1.0 for o, n in zip(sizes, in_sizes)])
        out_sizes = list(sizes)
        if policy != "stretch":
            scale = (min if policy == "not_larger" else max)(scales)
            scales = np.full(len(axes), scale)
            out_sizes = [int(scale * n + 0.5) for n in in_sizes]
    regions = _regions(roi, len(axes), transform)
    if transform == "tf_crop_and_resize" and regions is None:
        raise OnnxValidationError("needs `roi` (starts, then ends, per resized axis) for tf_crop_and_resize.")
    xp = namespace(X)
    work = X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float32)
    data = X if mode == "nearest" else X.astype(work)
    for index, (axis, scale, n, out) in enumerate(zip(axes, scales, in_sizes, out_sizes)):
        region = None if regions is None else regions[index]
        if out == n and math.isclose(scale, 1.0) and (region is None or tuple(region) == (0.0, 1.0)):
            continue
        if n == 0 and out:
            raise OnnxValidationError(f"cannot resize axis {axis} of size 0 to {out}.")
        source = _TRANSFORMS[transform](np.arange(out, dtype=np.float64), scale, n, out, region)
        data = _resample(
            data,
            axis,
            n,
            source,
            scale,
            xp,
            mode=mode,
            nearest_mode=nearest_mode,
            a=cubic_coeff_a,
            antialias=antialias,
            exclude_outside=exclude_outside,
        )
        if transform == "tf_crop_and_resize":
            outside = ((source < 0) | (source > n - 1)).reshape((1,) * axis + (-1,) + (1,) * (rank - 1 - axis))
            data = xp.where(outside, xp.asarray(extrapolation_value, dtype=data.dtype), data)
    if data.dtype == X.dtype:
        return data
    if X.dtype.kind in "iu":  # as onnx's reference: rounded, saturated
        info = np.iinfo(X.dtype)
        return xp.clip(xp.round(data), info.min, info.max).astype(X.dtype)
    return data.astype(X.dtype)


def _check_choice(name, value, choices):
    if value not in choices:
        raise OnnxValidationError(f"got `{name}`={value!r}; it must be one of {', '.join(choices)}.")


def _regions(roi, count, transform):
    if roi is None or roi.size == 0 or transform != "tf_crop_and_resize":
        return None
    roi = np.asarray(roi, dtype=np.float64).reshape(-1)
    if roi.size != 2 * count:
        raise OnnxValidationError(
            f"needs `roi` of {2 * count} values (starts, then ends, per resized axis), got {roi.tolist()}."
        )
    return list(zip(roi[:count], roi[count:]))


def _resample(data, axis, n, source, scale, xp, *, mode, nearest_mode, a, antialias, exclude_outside):
    """``data`` resampled along ``axis`` at the input coordinates ``source``."""
    shape = (1,) * axis + (-1,) + (1,) * (data.ndim - 1 - axis)
    if mode == "nearest":
        if nearest_mode == "resize_10":
            index = np.floor(source) if scale >= 1 else np.ceil(source)
        else:
            index = _NEAREST[nearest_mode](source)
        index = np.clip(index, 0, n - 1).astype(np.int32)
        repeats = len(index) // n
        if xp is not np and repeats > 1 and np.array_equal(index, np.repeat(np.arange(n), repeats)):
            # Each input row `repeats` times (upsampling by an integer factor): a broadcast,
            # no index arithmetic; its gradient, a sum, adds the same terms as the gather's.
            # On XLA:CPU it runs a little faster than the gather, more so on a loaded machine
            # (measured: benchmarks/cpu_formulations_results.md, section 9).
            data = xp.expand_dims(data, axis + 1)
            data = xp.broadcast_to(data, data.shape[: axis + 1] + (repeats,) + data.shape[axis + 2 :])
            return data.reshape(data.shape[:axis] + (n * repeats,) + data.shape[axis + 2 :])
        return xp.take(data, index, axis=axis)
    kernel, support = (_linear, 1) if mode == "linear" else (_cubic(a), 2)
    stretch = min(scale, 1.0) if antialias else 1.0
    start = math.floor(-support / stretch) + 1
    floor = np.floor(source)
    offsets = np.arange(start, 2 - start)  # the taps around floor(source)
    taps = floor[:, None] + offsets[None, :]
    weights = kernel((offsets[None, :] - (source - floor)[:, None]) * stretch)
    if antialias:
        weights = weights / weights.sum(axis=1, keepdims=True)
    if exclude_outside:
        weights = np.where((taps < 0) | (taps > n - 1), 0.0, weights)
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    taps = np.clip(taps, 0, n - 1).astype(np.int32)
    result = None
    for k in range(taps.shape[1]):
        term = xp.take(data, taps[:, k], axis=axis) * xp.asarray(weights[:, k].reshape(shape), dtype=data.dtype)
        result = term if result is None else result + term
    return result


__all__ = ["resize"]
