"""GatherBlockQuantized (com.microsoft, version 1): Gather from a block-quantized table
(int4, uint4, packed uint8 of 2, 4 or 8 bits, float8, float4), dequantized; the embedding
tables of onnxruntime's weight-only quantizer and onnxruntime-genai's models."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.dtypes import onnx_type_name
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace, normalize_axis
from jaxonnx.ops._helpers.quantization import unpack_low_bits_first
from jaxonnx.ops._helpers.schemas import attribute, contrib_schema

_FLOAT_CODES = [
    "tensor(float8e4m3fn)",
    "tensor(float8e4m3fnuz)",
    "tensor(float8e5m2)",
    "tensor(float8e5m2fnuz)",
    "tensor(float4e2m1)",
]
_SCHEMA = contrib_schema(
    "GatherBlockQuantized",
    "Gather of a block-quantized `data` along `gather_axis`, dequantized with `scales` and `zero_points` "
    "blocked along `quantize_axis`; out-of-range indices give zeros.",
    inputs=[("data", "T1"), ("indices", "Tind"), ("scales", "T2"), ("zero_points", "T1", "optional")],
    outputs=[("output", "T2")],
    type_constraints=[
        ("T1", ["tensor(int4)", "tensor(uint4)", "tensor(uint8)"] + _FLOAT_CODES),
        ("T2", ["tensor(float)", "tensor(float16)", "tensor(bfloat16)"]),
        ("Tind", ["tensor(int32)", "tensor(int64)"]),
    ],
    differentiable=("scales",),
    attributes=[
        attribute("bits", 4, "Bits per value of uint8 `data` (2, 4 or 8)."),
        attribute(
            "block_size", 128, "Block length along `quantize_axis` (0: the whole axis, float8 and float4 `data` only)."
        ),
        attribute("quantize_axis", 1, "The axis quantized in blocks."),
        attribute("gather_axis", 0, "The axis gathered on."),
    ],
)


@register("GatherBlockQuantized", 1, domain="com.microsoft", schema=_SCHEMA)
def gather_block_quantized(
    data, indices, scales, zero_points=None, *, bits=4, block_size=128, quantize_axis=1, gather_axis=0
):
    """Implements com.microsoft GatherBlockQuantized: ``Gather(dequantize(data), indices,
    gather_axis)``, with indices outside ``[-s, s)`` reading zeros (as onnxruntime does; ONNX
    Gather refuses them).

    ``dequantize(data)[..., i, ...] = (data[..., i, ...] - zero_point[..., i // block_size,
    ...]) * scales[..., i // block_size, ...]`` along ``quantize_axis``, the difference
    exact and the product in float32, rounded to ``scales``' type. Only the gathered slices
    are dequantized.

    - int4 and uint4 ``data``: any axes; the zero points of ``data``'s type (default 0).
    - uint8 ``data``: ``bits`` 2, 4 or 8 values a byte, packed along the last axis, the first
      in the lowest bits; ``gather_axis`` 0 and ``quantize_axis`` the last; zero points
      packed the same way along their last axis (default ``2**(bits - 1)``).
    - float8 and float4 ``data``: symmetric (no zero points); ``block_size`` 0 takes the
      whole axis as one block; a ``scales`` dimension of 1 off ``quantize_axis`` broadcasts.

    Args:
        data: the quantized table, of rank r >= 1.
        indices: int32 or int64 indices into ``gather_axis``, of any shape.
        scales: ``data``'s shape with ``ceil(d / block_size)`` at ``quantize_axis`` (``d``
            the unpacked length), float32, float16 or bfloat16.
        zero_points: optional, of ``data``'s type and ``scales``' shape (packed for uint8).
        bits: bits per value of uint8 ``data``.
        block_size: the block length along ``quantize_axis``.
        quantize_axis, gather_axis: the axes (negative from the back).

    Returns:
        ``data.shape[:gather_axis] + indices.shape + data.shape[gather_axis + 1:]`` (the last
        axis unpacked for uint8), of ``scales``' type.

    Example:
        >>> data = jnp.array([[1, -2], [3, 4], [-8, 7]], jnp.int4)
        >>> jaxonnx.ops.gather_block_quantized(data, jnp.array([2, 5, -3]), jnp.array([[0.5], [1.0], [2.0]]), block_size=16)
        Array([[-16. ,  14. ],
               [  0. ,   0. ],
               [  0.5,  -1. ]], dtype=float32)
    """
    kind = onnx_type_name(data.dtype)
    rank = data.ndim
    if rank < 1:
        raise OnnxValidationError("needs `data` of rank 1 or more, got a scalar.")
    gather_axis, quantize_axis = normalize_axis(gather_axis, rank), normalize_axis(quantize_axis, rank)
    floats = kind.startswith("float")
    if kind == "uint8":
        if bits not in (2, 4, 8):
            raise OnnxValidationError(f"got `bits`={bits}; uint8 `data` holds 2, 4 or 8 bits a value.")
        if gather_axis != 0 or quantize_axis != rank - 1 or rank < 2:
            raise OnnxValidationError(
                f"got `gather_axis`={gather_axis} and `quantize_axis`={quantize_axis} for uint8 `data` of rank {rank}; "
                "uint8 tables are gathered on axis 0 and quantized along the last, where their values are packed."
            )
    elif not floats and bits != 4:
        raise OnnxValidationError(f"got `bits`={bits} for {kind} `data`, which holds 4 bits a value.")
    if floats and zero_points is not None:
        raise OnnxValidationError(
            f"got `zero_points` for {kind} `data`, which is quantized symmetrically (no zero points)."
        )
    if block_size < 0 or (block_size == 0 and not floats):
        raise OnnxValidationError(
            f"got `block_size`={block_size}; it must be positive (0, the whole axis, only for float8 and float4 `data`)."
        )
    per_byte = 8 // bits if kind == "uint8" else 1
    logical = list(data.shape)
    logical[-1] *= per_byte if kind == "uint8" else 1
    length = logical[quantize_axis]
    block = block_size or max(length, 1)
    blocks = -(-length // block)
    _check_scales(scales, logical, quantize_axis, blocks, broadcasts=floats)
    if zero_points is not None:
        expected = list(scales.shape)
        expected[-1] = -(-expected[-1] // per_byte) if kind == "uint8" else expected[-1]
        if list(zero_points.shape) != expected:
            raise OnnxValidationError(
                f"needs `zero_points` of shape {tuple(expected)}, got {tuple(zero_points.shape)}."
            )

    xp = namespace(data, indices, scales, zero_points)
    size = data.shape[gather_axis]
    valid = (indices >= -size) & (indices < size)
    rows = xp.where(valid, xp.where(indices < 0, indices + size, indices), 0)
    out_axis = quantize_axis if quantize_axis < gather_axis else quantize_axis + indices.ndim - 1
    gathered = _take(data, rows, gather_axis, xp)
    if kind == "uint8":
        gathered = unpack_low_bits_first(gathered, bits) if bits < 8 else gathered

    def parameter(values):
        """``values`` (per block) taken like ``data`` and spread over the blocks' elements."""
        if quantize_axis == gather_axis:  # each gathered slice has its own block
            return _take(values, rows // block, gather_axis, xp)
        if values.shape[gather_axis] == 1:  # broadcast along the gathered axis
            taken = values.reshape(values.shape[:gather_axis] + (1,) * indices.ndim + values.shape[gather_axis + 1 :])
        else:
            taken = _take(values, rows, gather_axis, xp)
        return xp.repeat(taken, block, axis=out_axis)[(slice(None),) * out_axis + (slice(0, length),)]

    scale = parameter(scales).astype(np.float32)
    if floats:
        y = gathered.astype(np.float32) * scale
    else:
        if zero_points is None:
            zero = np.int32(1 << (bits - 1)) if kind == "uint8" else np.int32(0)
        else:
            zero = zero_points
            if kind == "uint8" and bits < 8:
                zero = unpack_low_bits_first(zero, bits)[..., : scales.shape[-1]]
            zero = parameter(zero).astype(np.int32)
        y = (gathered.astype(np.int32) - zero).astype(np.float32) * scale
    mask = valid.reshape((1,) * gather_axis + tuple(valid.shape) + (1,) * (rank - gather_axis - 1))
    return xp.where(mask, y, np.float32(0)).astype(scales.dtype)


def _check_scales(scales, logical, quantize_axis: int, blocks: int, *, broadcasts: bool):
    expected = list(logical)
    expected[quantize_axis] = blocks
    ok = scales.ndim == len(logical) and all(
        s == e or (broadcasts and s == 1 and axis != quantize_axis)
        for axis, (s, e) in enumerate(zip(scales.shape, expected))
    )
    if not ok:
        shown = " (or 1 off `quantize_axis`)" if broadcasts else ""
        raise OnnxValidationError(f"needs `scales` of shape {tuple(expected)}{shown}, got {tuple(scales.shape)}.")


def _take(values, rows, axis: int, xp):
    """``values`` gathered along ``axis`` at the (in-range) ``rows``."""
    if xp is np:
        return np.take(values, rows, axis=axis)
    return jnp.take(values, rows, axis=axis, mode="clip")


__all__ = ["gather_block_quantized"]
