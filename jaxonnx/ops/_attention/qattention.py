"""QAttention (com.microsoft, version 1): com.microsoft Attention whose input projection is
a product of quantized matrices, as onnxruntime's dynamic quantization writes it."""

from __future__ import annotations

import numpy as np
import onnx.defs
import onnx.helper

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.attention import stacked_self_attention
from jaxonnx.ops._helpers.quantization import (
    per_tensor_value,
    quantized_matmul,
    row_and_column_layout,
    zero_points_apart,
)
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema

_INT = onnx.defs.OpSchema.AttrType.INT
_FLOAT = onnx.defs.OpSchema.AttrType.FLOAT
_SCHEMA = contrib_schema(
    "QAttention",
    "Multi-head self attention after a quantized input projection.",
    inputs=[
        ("input", "T1"),
        ("weight", "T2"),
        ("bias", "T3"),
        ("input_scale", "T3"),
        ("weight_scale", "T3"),
        ("mask_index", "T4", "optional"),
        ("input_zero_point", "T1", "optional"),
        ("weight_zero_point", "T2", "optional"),
        ("past", "T3", "optional"),
    ],
    outputs=[("output", "T3"), ("present", "T3", "optional")],
    type_constraints=[
        ("T1", ["tensor(int8)", "tensor(uint8)"]),
        ("T2", ["tensor(int8)", "tensor(uint8)"]),
        ("T3", ["tensor(float)", "tensor(float16)"]),
        ("T4", ["tensor(int32)"]),
    ],
    attributes=[
        attribute_without_default("num_heads", _INT, "Number of attention heads.", required=True),
        attribute("unidirectional", 0, "Causal attention."),
        attribute_without_default("scale", _FLOAT, "Scale of Q K^T (default 1 / sqrt(head_size))."),
        attribute_without_default("mask_filter_value", _FLOAT, "Added to masked scores (default -10000)."),
        attribute_without_default("do_rotary", _INT, "Rotary embedding (not supported)."),
        attribute_without_default("past_present_share_buffer", _INT, "Not supported."),
    ],
    differentiable=("bias", "input_scale", "weight_scale", "past"),
)


@register("QAttention", 1, domain="com.microsoft", schema=_SCHEMA, folds=False)
def qattention(
    input,
    weight,
    bias,
    input_scale,
    weight_scale,
    mask_index=None,
    input_zero_point=None,
    weight_zero_point=None,
    past=None,
    *,
    num_heads=None,
    unidirectional=0,
    scale=None,
    mask_filter_value=None,
    do_rotary=None,
    past_present_share_buffer=None,
):
    """Implements com.microsoft QAttention: com.microsoft Attention after the quantized
    projection ``(input - input_zero_point) @ (weight - weight_zero_point) * input_scale *
    weight_scale + bias`` (the integer product exact in int32, then float).

    Args:
        input: uint8 or int8 ``(batch, S, input_hidden)``.
        weight: uint8 or int8 ``(input_hidden, 3 * hidden)``.
        bias: float ``(3 * hidden,)``.
        input_scale: scalar.
        weight_scale: scalar, or ``(3 * hidden,)`` per column.
        mask_index: optional int32 mask, any kind com.microsoft Attention takes.
        input_zero_point: optional scalar of ``input``'s type.
        weight_zero_point: optional scalar, or ``(3 * hidden,)`` per column, of ``weight``'s type.
        past: optional ``(2, batch, num_heads, past_length, head_size)``.
        num_heads: the heads.
        unidirectional: 1 masks the keys after each query's position.
        scale: the factor of ``Q K^T``; ``1 / sqrt(head_size)`` when absent or 0.
        mask_filter_value: what masked scores get added; -10000 when absent.
        do_rotary, past_present_share_buffer: not supported (an error).

    Returns:
        ``(output, present)``: ``(batch, S, hidden)`` and the stacked keys and values
        (without ``past``, this call's, as onnxruntime computes them).

    Example:
        >>> x = np.ones((1, 2, 4), np.uint8)
        >>> w = np.concatenate([np.eye(4, dtype=np.int8)] * 3, axis=1)
        >>> b, scales = np.zeros(12, np.float32), (np.float32(0.5), np.float32(1.0))
        >>> y, present = jaxonnx.ops.qattention(x, w, b, *scales, num_heads=2)
        >>> y
        Array([[[0.5, 0.5, 0.5, 0.5],
                [0.5, 0.5, 0.5, 0.5]]], dtype=float32)
        >>> present.shape   # no past: this call's keys and values, stacked
        (2, 1, 2, 2, 2)
    """
    if do_rotary or past_present_share_buffer:
        raise OnnxValidationError(
            f"got `do_rotary`={do_rotary}, `past_present_share_buffer`={past_present_share_buffer}; QAttention supports "
            "neither (onnxruntime's CPU kernel neither)."
        )
    if input.ndim != 3 or weight.ndim != 2 or weight.shape[0] != input.shape[2] or weight.shape[1] % 3:
        raise OnnxValidationError(
            f"needs a 3-D `input` (batch, sequence, input_hidden) and `weight` (input_hidden, 3 * hidden), got "
            f"{tuple(input.shape)} and {tuple(weight.shape)}."
        )
    hidden = weight.shape[1] // 3
    if tuple(bias.shape) != (3 * hidden,):
        raise OnnxValidationError(f"needs `bias` of shape ({3 * hidden},), got {tuple(bias.shape)}.")
    input_zero = per_tensor_value(input_zero_point, "input_zero_point")
    column_shape = row_and_column_layout(weight_zero_point, weight, rows=False, name="weight_zero_point")
    accumulated = quantized_matmul(
        zero_points_apart(input, input_zero),
        zero_points_apart(weight, weight_zero_point, column_shape),
        names=("input", "weight"),
    )
    scale_shape = row_and_column_layout(weight_scale, weight, rows=False, name="weight_scale")
    multiplier = per_tensor_value(input_scale, "input_scale").astype(np.float32) * weight_scale.astype(
        np.float32
    ).reshape(scale_shape)
    if multiplier.ndim:  # per column, over (batch, sequence, columns)
        multiplier = multiplier.reshape(1, 1, -1)
    dtype = bias.dtype
    projected = (accumulated.astype(np.float32) * multiplier).astype(dtype) + bias.reshape(1, 1, -1)
    q, k, v = projected[..., :hidden], projected[..., hidden : 2 * hidden], projected[..., 2 * hidden :]
    return stacked_self_attention(
        q,
        k,
        v,
        num_heads=num_heads,
        mask_index=mask_index,
        past=past,
        attention_bias=None,
        past_sequence_length=None,
        unidirectional=unidirectional,
        scale=scale,
        filter_value=-10000.0 if mask_filter_value is None else mask_filter_value,
        share_buffer=False,
    )


__all__ = ["qattention"]
