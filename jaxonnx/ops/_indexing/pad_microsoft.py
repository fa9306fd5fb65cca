"""Pad (com.microsoft, version 1): onnxruntime's Pad with its pads as an input, before ONNX's Pad-11."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.schemas import attribute, contrib_schema

_SCHEMA = contrib_schema(
    "Pad",
    "Y = X padded (cut where negative) by `pads`, [begin_0, ..., end_0, ...], as `mode` says.",
    inputs=[("data", "T"), ("pads", "tensor(int64)"), ("value", "T", "optional")],
    outputs=[("output", "T")],
    type_constraints=[("T", ["tensor(float16)", "tensor(float)", "tensor(double)"])],
    attributes=[attribute("mode", "constant", "'constant', 'reflect' or 'edge'.")],
)


@register("Pad", 1, domain="com.microsoft", schema=_SCHEMA, static=("pads",))
def pad_microsoft(data, pads, value=None, *, mode: str = "constant"):
    """Implements com.microsoft Pad: ``data`` extended (or cut, for negative pads) on every axis.

    ``pads`` is ``[begin_0, ..., begin_r-1, end_0, ..., end_r-1]``, 1-D or of shape
    ``(1, 2r)``; it decides the output shape, so it must be known at trace time. Negative pads
    cut first, so ``reflect`` and ``edge`` read the cut array, as onnxruntime does.

    Args:
        data: the array to pad, of rank r.
        pads: int64, ``2r`` values.
        value: the scalar for ``mode="constant"`` (default 0); may be traced.
        mode: ``"constant"``, ``"reflect"`` or ``"edge"``.

    Returns:
        The padded array, with the dtype of ``data``.

    Example:
        >>> jaxonnx.ops.pad_microsoft(jnp.array([[1.0, 2.0]]), np.array([0, 1, 0, -1]))
        Array([[0., 1.]], dtype=float32)
    """
    if mode not in ("constant", "reflect", "edge"):
        raise OnnxValidationError(f"got `mode`={mode!r}; it must be 'constant', 'reflect' or 'edge'.")
    pads = np.asarray(pads).astype(np.int64)
    if pads.ndim == 2 and pads.shape[0] == 1:
        pads = pads[0]
    rank = data.ndim
    if pads.shape != (2 * rank,):
        raise OnnxValidationError(
            f"needs `pads` of {2 * rank} values ([begin_0, ..., end_0, ...]) for `data` of rank {rank}, "
            f"got shape {tuple(np.asarray(pads).shape)}."
        )
    begins, ends = pads[:rank], pads[rank:]
    if mode == "constant":
        # lax.pad cuts at negative widths itself. The fill goes in by a where: lax.pad's
        # transpose rule fails for a traced fill beside a constant `data`.
        widths = [(int(b), int(e), 0) for b, e in zip(begins, ends)]
        padded = lax.pad(jnp.asarray(data), jnp.zeros((), data.dtype), widths)
        if value is None:
            return padded
        inside = lax.pad(jnp.ones(data.shape, bool), False, widths)
        return jnp.where(inside, padded, jnp.asarray(value, data.dtype).reshape(()))
    cut = tuple(slice(-min(b, 0), data.shape[axis] + min(e, 0)) for axis, (b, e) in enumerate(zip(begins, ends)))
    data = data[cut]
    widths = [(max(int(b), 0), max(int(e), 0)) for b, e in zip(begins, ends)]
    for axis, (b, e) in enumerate(widths):
        if (b or e) and data.shape[axis] == 0 or mode == "reflect" and max(b, e) >= data.shape[axis]:
            raise OnnxValidationError(
                f"cannot pad axis {axis} of length {data.shape[axis]} by ({b}, {e}) in mode {mode!r}."
            )
    return jnp.pad(data, widths, mode=mode)


__all__ = ["pad_microsoft"]
