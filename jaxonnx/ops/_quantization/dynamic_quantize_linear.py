"""DynamicQuantizeLinear: version 11 (uint8 only)."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.broadcasting import true_divide
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.quantization import INTEGER_RANGES, quantize, round_half_to_even


@register("DynamicQuantizeLinear", 11)
@np.errstate(all="ignore")  # the zero point of an all-zero input divides 0 by the scale
def dynamic_quantize_linear(x):
    """Implements ONNX DynamicQuantizeLinear: ``x`` quantized to uint8 with a scale and zero
    point computed from its range, which is widened to include 0.

    In float32, as the text says: ``y_scale = (max(0, max(x)) - min(0, min(x))) / 255``,
    ``y_zero_point = round(saturate(0 - min(0, min(x)) / y_scale))``, then
    ``y = saturate(round(x / y_scale) + y_zero_point)``, rounding half to even and
    saturating to [0, 255]. Where the range is empty (``x`` all zeros, or no elements), the
    text's scale would be 0; ``y_scale`` is then 1 / 255, as onnx.reference computes it
    (onnxruntime gives 1), and ``y`` and ``y_zero_point`` are 0 either way.

    Args:
        x: a float32 array.

    Returns:
        ``(y, y_scale, y_zero_point)``: uint8 of ``x``'s shape, a float32 scalar and a uint8 scalar.

    Example:
        >>> y, scale, zero_point = jaxonnx.ops.dynamic_quantize_linear(jnp.array([-1.0, 0.0, 3.0]))
        >>> y, zero_point
        (Array([  0,  64, 255], dtype=uint8), Array(64, dtype=uint8))
    """
    xp = namespace(x)
    low, high = INTEGER_RANGES["uint8"]
    # `initial=0` widens the range to include 0 (and gives 0 for an empty `x`).
    x_max = xp.max(x, initial=0.0).astype(np.float32)
    x_min = xp.min(x, initial=0.0).astype(np.float32)
    span = xp.where(x_max == x_min, np.float32(1), x_max - x_min)
    # True divisions: XLA would multiply by a rounded reciprocal of the constant 255.
    y_scale = true_divide(span, xp.asarray(high - low, dtype=np.float32))
    zero_point = round_half_to_even(xp.clip(np.float32(low) - true_divide(x_min, y_scale), low, high)).astype(np.uint8)
    layout = ("tensor", None)
    y = quantize(x, y_scale, zero_point, "uint8", layout)
    return y, y_scale, zero_point


__all__ = ["dynamic_quantize_linear"]
