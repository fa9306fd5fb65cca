"""Pad: versions 1, 2 (attributes), 11, 13 (inputs), 18 (`axes`), 19 (`wrap` mode), 21, 23, 24, 25."""

from __future__ import annotations

import builtins

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import int_list, namespace, normalize_axis

MODES = ("constant", "reflect", "edge", "wrap")


@register("Pad", 19, 21, 23, 24, 25, static=("pads", "axes"))
def pad(data, pads, constant_value=None, axes=None, *, mode: str = "constant"):
    """Implements ONNX Pad: ``data`` extended (or cut, for negative pads) along ``axes``.

    ``pads`` is ``[begin_0, begin_1, ..., end_0, end_1, ...]``, one begin and one end per
    axis of ``axes`` (every axis by default). ``pads`` and ``axes`` decide the output shape,
    so they must be known at trace time; ``constant_value`` may be traced. Negative pads
    remove elements: they are applied first, so ``reflect``, ``edge`` and ``wrap`` read
    the cut array (as onnxruntime does; ``onnx.reference`` refuses negative pads).
    ``reflect`` mirrors without repeating the edge, like ``np.pad``.

    Args:
        data: the array to pad.
        pads: int64 array of length ``2 * len(axes)``.
        constant_value: the scalar for ``mode="constant"`` (default 0), of the dtype of ``data``.
        axes: the padded axes (negative ones count from the back; each at most once).
        mode: ``"constant"``, ``"reflect"``, ``"edge"`` or ``"wrap"``.

    Returns:
        The padded array, with the dtype of ``data``.

    Example:
        >>> jaxonnx.ops.pad(jnp.array([[1, 2, 3, 4]]), np.array([2, -1]), axes=np.array([1]), mode="reflect")
        Array([[3, 2, 1, 2, 3]], dtype=int32)
    """
    # A graph's STRING attributes arrive as bytes (onnx.helper.get_attribute_value).
    if mode not in MODES:
        raise OnnxValidationError(f"got `mode`={mode!r}; it must be one of {', '.join(MODES)}.")
    rank = data.ndim
    pads = int_list(pads, name="pads")
    if axes is None:
        axes = tuple(range(rank))
    else:
        axes = tuple(normalize_axis(a, rank, name="axes") for a in int_list(axes, name="axes"))
        if len(set(axes)) != len(axes):
            raise OnnxValidationError(f"got repeated `axes` {list(axes)}; each axis may appear once.")
    if len(pads) != 2 * len(axes):
        raise OnnxValidationError(
            f"needs 2 `pads` per padded axis ({len(axes)} axes, of `data` with shape "
            f"{tuple(data.shape)}), got {len(pads)}: {list(pads)}."
        )
    widths = [(0, 0)] * rank
    for i, axis in enumerate(axes):
        widths[axis] = (pads[i], pads[len(axes) + i])
    cut = tuple(builtins.slice(max(-begin, 0), data.shape[d] - max(-end, 0)) for d, (begin, end) in enumerate(widths))
    for d, (begin, end) in enumerate(widths):
        if max(-begin, 0) + max(-end, 0) > data.shape[d]:
            raise OnnxValidationError(
                f"got negative `pads` that remove {max(-begin, 0) + max(-end, 0)} elements from axis {d} "
                f"of size {data.shape[d]} (`data` shape {tuple(data.shape)})."
            )
    data = data[cut]
    widths = [(max(begin, 0), max(end, 0)) for begin, end in widths]
    empty = [d for d, w in enumerate(widths) if w != (0, 0) and data.shape[d] == 0]
    if mode != "constant" and empty:
        raise OnnxValidationError(
            f"cannot pad axis {empty[0]} of size 0 in mode {mode!r} (`data` shape {tuple(data.shape)} "
            "after negative pads): there is nothing to repeat."
        )
    if all(w == (0, 0) for w in widths):
        return data
    xp = namespace(data)
    if mode != "constant":
        return xp.pad(data, widths, mode=mode)
    if constant_value is None:
        constant_value = np.asarray("" if data.dtype.kind in "OUS" else 0).astype(data.dtype)
    elif constant_value.size != 1:
        raise OnnxValidationError(f"needs a scalar `constant_value`, got shape {tuple(constant_value.shape)}.")
    return xp.pad(data, widths, mode="constant", constant_values=constant_value.reshape(()))


@register("Pad", 18, static=("pads", "axes"))
def _pad_18(data, pads, constant_value=None, axes=None, *, mode="constant"):
    return pad(data, pads, constant_value, axes, mode=_mode(mode, MODES[:3]))


@register("Pad", 11, 13, static=("pads",))
def _pad_11(data, pads, constant_value=None, *, mode="constant"):
    return pad(data, pads, constant_value, mode=_mode(mode, MODES[:3]))


@register("Pad", 2)
def _pad_2(data, *, pads, mode="constant", value=0.0):
    return pad(data, np.asarray(pads, np.int64), np.asarray(value, data.dtype), mode=_mode(mode, MODES[:3]))


@register("Pad", 1)
def _pad_1(data, *, paddings, mode="constant", value=0.0):
    return pad(data, np.asarray(paddings, np.int64), np.asarray(value, data.dtype), mode=_mode(mode, MODES[:3]))


def _mode(mode, accepted) -> str:
    # A graph's STRING attributes arrive as bytes (onnx.helper.get_attribute_value).
    if mode not in accepted:
        raise OnnxValidationError(
            f"got `mode`={mode!r}; this version accepts {', '.join(accepted)} (wrap came with version 19)."
        )
    return mode


__all__ = ["pad"]
