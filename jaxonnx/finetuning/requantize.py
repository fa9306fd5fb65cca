"""Folding a LoRA update into a product's weight, quantizing 4-bit weights again as onnxruntime does.

- MatMulNBits: onnxruntime's round-to-nearest block quantizer (MLAS's ``BlockwiseQuantizer``,
  what ``MatMulNBitsQuantizer``'s default and ``quantize_matmul_4bits`` run), per row of the
  N x K weight in blocks of ``block_size`` along K. Symmetric (no zero points):
  ``scale = v / -2**(bits-1)`` with ``v`` the block's value of largest magnitude, zero point
  ``2**(bits-1)``. Asymmetric: the block's range widened to hold 0, ``scale = (max - min) /
  (2**bits - 1)``, zero point ``round(-min / scale)``. Codes are ``clamp(round(w * (1 /
  scale) + zero point))`` in float32, rounding half away from zero.
- MatMulBnb4: bitsandbytes' (and onnxruntime's ``quantize_matmul_bnb4``) absmax per block of
  the flattened weight and the nearest code of the FP4 or NF4 table, by its thresholds.

``tests/test_lora.py`` compares the packed bytes with onnxruntime's own quantizers.
"""

from __future__ import annotations

import numpy as np

from jaxonnx._errors import OnnxValidationError

#: bitsandbytes' decision thresholds (``dQuantizeNF4``): the code is how many lie below ``x``.
_NF4_THRESHOLDS = np.array(
    [
        -0.8480964004993439,
        -0.6106329262256622,
        -0.4599952697753906,
        -0.33967943489551544,
        -0.23460740596055984,
        -0.13791173323988914,
        -0.045525018125772476,
        0.03979014977812767,
        0.1202552504837513,
        0.2035212516784668,
        0.2920137718319893,
        0.3893125355243683,
        0.5016634166240692,
        0.6427869200706482,
        0.8614784181118011,
    ],
    np.float32,
)
#: bitsandbytes' ``dQuantizeFP4``: thresholds on ``|x|`` and the codes between them; the sign is bit 3.
_FP4_THRESHOLDS = np.array([0.00260417, 0.0859375, 0.20833333, 0.29166667, 0.4166667, 0.583333, 0.8333333], np.float32)
_FP4_CODES = np.array([0b000, 0b001, 0b110, 0b111, 0b100, 0b101, 0b010, 0b011], np.uint8)


def fold(
    op_type: str, node: str, inputs: list[str], attributes: dict, values: dict[str, np.ndarray], delta: np.ndarray
) -> dict[str, np.ndarray]:
    """The initializers of a product with ``delta`` ``(K, N)`` (float64, in the adapter's
    orientation: added to ``x @ W``) folded into its weight, by name.

    Raises:
        OnnxValidationError: for a weight this cannot quantize again.
    """
    weight_name = inputs[1]
    weight = values[weight_name]
    if op_type in ("MatMul", "Gemm", "FusedMatMul"):
        update = delta.T if attributes.get("transB", 0) else delta
        return {weight_name: (weight.astype(np.float64) + update).astype(weight.dtype)}
    if op_type == "MatMulNBits":
        return _fold_nbits(node, inputs, attributes, values, delta)
    if op_type == "MatMulBnb4":
        k, n, block = int(attributes["K"]), int(attributes["N"]), int(attributes["block_size"])
        quant_type = int(attributes["quant_type"])
        absmax = values[inputs[2]]
        dense = dequantize_bnb4(weight, absmax, k=k, n=n, block_size=block, quant_type=quant_type)
        update = delta.T if attributes.get("transB", 1) else delta
        merged = (dense.astype(np.float64) + update).astype(np.float32)
        packed, new_absmax = quantize_bnb4(merged, block_size=block, quant_type=quant_type)
        return {weight_name: packed, inputs[2]: new_absmax.astype(absmax.dtype)}
    raise OnnxValidationError(f"Cannot merge an adapter into the {op_type} node {node!r}.")


def _fold_nbits(node, inputs, attributes, values, delta):
    k, n, block = int(attributes["K"]), int(attributes["N"]), int(attributes["block_size"])
    bits = int(attributes.get("bits", 4))
    present = lambda i: len(inputs) > i and inputs[i] != ""
    for i, name in ((2, "scales"), (3, "zero_points"), (4, "g_idx")):
        if present(i) and inputs[i] not in values:
            raise OnnxValidationError(
                f"Cannot merge into the MatMulNBits node {node!r}: its {name} {inputs[i]!r} is no initializer."
            )
    if present(4):
        raise OnnxValidationError(
            f"Cannot merge into the MatMulNBits node {node!r}: it orders its blocks by `g_idx` (GPTQ's act-order), "
            "which round-to-nearest does not make; save without `merge`, or quantize the merged float model anew."
        )
    zero_points = values[inputs[3]] if present(3) else None
    if zero_points is not None and zero_points.dtype != np.uint8:
        raise OnnxValidationError(
            f"Cannot merge into the MatMulNBits node {node!r}: its zero points are floats (HQQ's), which "
            "round-to-nearest does not make; save without `merge`."
        )
    scales = values[inputs[2]]
    dense = dequantize_nbits(values[inputs[1]], scales, zero_points, k=k, n=n, block_size=block, bits=bits)
    merged = (dense.astype(np.float64) + delta.T).astype(np.float32)
    packed, new_scales, new_zero = quantize_nbits(merged, block_size=block, bits=bits, symmetric=zero_points is None)
    replaced = {inputs[1]: packed, inputs[2]: new_scales.astype(scales.dtype).reshape(scales.shape)}
    if zero_points is not None:
        replaced[inputs[3]] = new_zero.reshape(zero_points.shape)
    return replaced


def _unpack(codes: np.ndarray, bits: int) -> np.ndarray:
    """Values packed along the last axis, the first in the lowest bits of each byte."""
    per_byte = 8 // bits
    mask = np.uint8((1 << bits) - 1)
    return np.stack([(codes >> np.uint8(bits * p)) & mask for p in range(per_byte)], axis=-1).reshape(
        codes.shape[:-1] + (-1,)
    )


def _pack(values: np.ndarray, bits: int) -> np.ndarray:
    per_byte = 8 // bits
    values = values.reshape(values.shape[:-1] + (-1, per_byte)).astype(np.uint8)
    packed = np.zeros(values.shape[:-1], np.uint8)
    for p in range(per_byte):
        packed |= values[..., p] << np.uint8(bits * p)
    return packed


def dequantize_nbits(codes, scales, zero_points, *, k: int, n: int, block_size: int, bits: int) -> np.ndarray:
    """MatMulNBits' float32 ``(N, K)`` weight."""
    k_blocks = -(-k // block_size)
    q = _unpack(codes.reshape(n, k_blocks, -1), bits).reshape(n, k_blocks, block_size).astype(np.float32)
    scale = scales.reshape(n, k_blocks).astype(np.float32)[..., None]
    zero: np.float32 | np.ndarray
    if zero_points is None:
        zero = np.float32(1 << (bits - 1))
    else:
        zero = _unpack(zero_points.reshape(n, -1), bits)[:, :k_blocks].astype(np.float32)[..., None]
    return ((q - zero) * scale).reshape(n, k_blocks * block_size)[:, :k]


def quantize_nbits(weight: np.ndarray, *, block_size: int, bits: int, symmetric: bool):
    """onnxruntime's round-to-nearest block quantization of a float32 ``(N, K)`` weight:
    ``(codes (N, k_blocks, block_size * bits / 8), scales (N, k_blocks), packed zero
    points (N, ceil(k_blocks * bits / 8)))``."""
    n, k = weight.shape
    k_blocks = -(-k // block_size)
    padded = np.zeros((n, k_blocks * block_size), np.float32)
    padded[:, :k] = weight
    blocks = padded.reshape(n, k_blocks, block_size)
    top = np.float32((1 << bits) - 1)
    if symmetric:
        low, high = blocks.min(axis=-1), blocks.max(axis=-1)
        widest = np.where(np.abs(high) > np.abs(low), high, low)
        scale = (widest / np.float32(-(1 << (bits - 1)))).astype(np.float32)
        zero = np.full(scale.shape, 1 << (bits - 1), np.float32)
    else:
        low = np.minimum(blocks.min(axis=-1), np.float32(0))
        high = np.maximum(blocks.max(axis=-1), np.float32(0))
        scale = ((high - low) / top).astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            zero_float = np.where(scale != 0, np.float32(0) - low / np.where(scale != 0, scale, 1), low)
        zero = np.clip(_round_half_away(zero_float.astype(np.float32)), 0, top)
    with np.errstate(divide="ignore"):
        reciprocal = np.where(scale != 0, np.float32(1) / np.where(scale != 0, scale, 1), np.float32(0)).astype(
            np.float32
        )
    q = np.clip(_round_half_away(blocks * reciprocal[..., None] + zero[..., None]), 0, top).astype(np.uint8)
    codes = _pack(q, bits)
    zero_codes = zero.astype(np.uint8)
    width = -(-k_blocks * bits // 8) * (8 // bits)
    zero_padded = np.zeros((n, width), np.uint8)
    zero_padded[:, :k_blocks] = zero_codes
    return codes, scale, _pack(zero_padded, bits)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """C's ``roundf``: halves away from zero (numpy's ``round`` takes them to even)."""
    return (np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))).astype(np.float32)


def dequantize_bnb4(codes, absmax, *, k: int, n: int, block_size: int, quant_type: int) -> np.ndarray:
    """MatMulBnb4's float32 ``(N, K)`` weight (codes first in the high nibble)."""
    from jaxonnx.ops._quantization.matmul_bnb4 import CODE_VALUES  # imported here: only MatMulBnb4 needs it

    size = n * k
    values = np.stack([codes >> np.uint8(4), codes & np.uint8(15)], axis=-1).reshape(-1)[:size]
    scale = np.repeat(absmax.astype(np.float32), block_size)[:size]
    return (CODE_VALUES[quant_type][values] * scale).reshape(n, k)


def quantize_bnb4(weight: np.ndarray, *, block_size: int, quant_type: int):
    """bitsandbytes' FP4/NF4 quantization of a float32 ``(N, K)`` weight, flattened row-major:
    ``(codes (ceil(N * K / 2),), absmax (ceil(N * K / block_size),))``."""
    flat = weight.reshape(-1).astype(np.float32)
    size = flat.size
    blocks = -(-size // block_size)
    padded = np.zeros(blocks * block_size, np.float32)
    padded[:size] = flat
    absmax = np.abs(padded.reshape(blocks, block_size)).max(axis=-1)
    with np.errstate(divide="ignore"):
        reciprocal = np.where(absmax != 0, np.float32(1) / np.where(absmax != 0, absmax, 1), np.float32(0)).astype(
            np.float32
        )
    normalized = (padded.reshape(blocks, block_size) * reciprocal[:, None]).reshape(-1)[:size]
    if size % 2:  # the last byte's second code is that of 0, as onnxruntime packs it
        normalized = np.concatenate([normalized, np.zeros(1, np.float32)])
    if quant_type == 1:
        q = (normalized[:, None] > _NF4_THRESHOLDS[None]).sum(axis=-1).astype(np.uint8)
    else:
        magnitude = (np.abs(normalized)[:, None] > _FP4_THRESHOLDS[None]).sum(axis=-1)
        q = _FP4_CODES[magnitude] | np.where(normalized < 0, np.uint8(8), np.uint8(0))
    pairs = q.reshape(-1, 2)
    return (pairs[:, 0] << np.uint8(4)) | pairs[:, 1], absmax


__all__ = ["dequantize_bnb4", "dequantize_nbits", "fold", "quantize_bnb4", "quantize_nbits"]
