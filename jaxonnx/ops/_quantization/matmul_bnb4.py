"""MatMulBnb4 (com.microsoft, version 1): a product with weights in bitsandbytes' 4-bit
FP4 or NF4 formats (QLoRA), as onnxruntime's bnb4 quantizer and transformers.js's
``model_bnb4.onnx`` files write them."""

from __future__ import annotations

import jax
import numpy as np
import onnx.defs
import onnx.helper

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema

_INT = onnx.defs.OpSchema.AttrType.INT
_SCHEMA = contrib_schema(
    "MatMulBnb4",
    "Y = A @ dequantize(B)^T (transB=1) or A @ dequantize(B) (transB=0): B is N x K in 4-bit FP4 or NF4 codes, "
    "scaled by absmax per block of the flattened matrix.",
    inputs=[("A", "T1"), ("B", "T2"), ("absmax", "T1")],
    outputs=[("Y", "T1")],
    type_constraints=[("T1", ["tensor(float)", "tensor(float16)", "tensor(bfloat16)"]), ("T2", ["tensor(uint8)"])],
    differentiable=("A", "absmax"),
    attributes=[
        attribute_without_default("K", _INT, "Input feature count of the weight.", required=True),
        attribute_without_default("N", _INT, "Output feature count of the weight.", required=True),
        attribute_without_default(
            "block_size", _INT, "Elements per absmax block of the flattened weight.", required=True
        ),
        attribute_without_default("quant_type", _INT, "0: FP4, 1: NF4.", required=True),
        attribute("transB", 1, "Whether B is transposed before the product."),
        attribute("training_mode", 0, "Whether the op runs in training mode."),
    ],
)

#: The value of each 4-bit code, as onnxruntime's kernel tables them (float32), indexed by
#: ``quant_type``: FP4 (a sign bit, 2 exponent bits with bias 3, 1 mantissa bit, divided by
#: 12, its largest value) and NF4 (the 16 quantiles of a normal distribution, QLoRA's table).
CODE_VALUES = {
    0: np.array(
        [
            0.0,
            5.208333333e-03,
            0.66666667,
            1.0,
            0.33333333,
            0.5,
            0.16666667,
            0.25,
            -0.0,
            -5.208333333e-03,
            -0.66666667,
            -1.0,
            -0.33333333,
            -0.5,
            -0.16666667,
            -0.25,
        ],
        np.float32,
    ),
    1: np.array(
        [
            -1.0,
            -0.6961928009986877,
            -0.5250730514526367,
            -0.39491748809814453,
            -0.28444138169288635,
            -0.18477343022823334,
            -0.09105003625154495,
            0.0,
            0.07958029955625534,
            0.16093020141124725,
            0.24611230194568634,
            0.33791524171829224,
            0.44070982933044434,
            0.5626170039176941,
            0.7229568362236023,
            1.0,
        ],
        np.float32,
    ),
}
_TYPE_NAMES = {0: "FP4", 1: "NF4"}


@register("MatMulBnb4", 1, domain="com.microsoft", schema=_SCHEMA)
def matmul_bnb4(A, B, absmax, *, K=None, N=None, block_size=None, quant_type=None, transB=1, training_mode=0):
    """Implements com.microsoft MatMulBnb4: a product with an N x K weight in 4-bit FP4 or
    NF4 codes (bitsandbytes' formats).

    The weight is stored flattened, row-major, two codes a byte, the **first in the high
    nibble**: element ``i = n * K + k`` is ``B[i // 2] >> 4`` for even ``i`` and ``B[i // 2]
    & 15`` for odd ``i``. Its value is ``CODE_VALUES[quant_type][code] * absmax[i //
    block_size]``, in float32 as onnxruntime computes it. ``Y = A @ W^T`` (``transB=1``, the
    forward pass: ``A`` is ``(..., K)``) or ``A @ W`` (``transB=0``: ``A`` is ``(..., N)``),
    computed in float32 and rounded to ``A``'s type. ``training_mode`` changes nothing here.
    Gradients flow to ``A`` and ``absmax``.

    Args:
        A: float32, float16 or bfloat16 ``(..., K)`` (``(..., N)`` with ``transB=0``).
        B: uint8 ``(ceil(N * K / 2),)``.
        absmax: ``(ceil(N * K / block_size),)``, of ``A``'s type.
        K, N: the weight's input and output features.
        block_size: elements per absmax block of the flattened weight (a power of two >=
            16 for onnxruntime; any positive length here).
        quant_type: 0 for FP4, 1 for NF4.
        transB: whether the weight is transposed in the product (default 1).
        training_mode: accepted, no effect.

    Returns:
        ``(..., N)`` (``(..., K)`` with ``transB=0``), of ``A``'s type.

    Example:
        >>> b = jnp.array([0xF0], jnp.uint8)  # NF4 codes 15 (1.0) and 0 (-1.0)
        >>> jaxonnx.ops.matmul_bnb4(jnp.array([[3.0, 1.0]]), b, jnp.array([0.5]), K=2, N=1, block_size=16, quant_type=1)
        Array([[1.]], dtype=float32)
    """
    if quant_type not in CODE_VALUES:
        raise OnnxValidationError(f"got `quant_type`={quant_type}; it is 0 (FP4) or 1 (NF4).")
    if block_size < 1:
        raise OnnxValidationError(f"got `block_size`={block_size}; it must be positive.")
    size = N * K
    if tuple(B.shape) != ((size + 1) // 2,):
        raise OnnxValidationError(
            f"needs `B` of shape ({(size + 1) // 2},) (N * K = {size} codes, two a byte), got {tuple(B.shape)}."
        )
    blocks = -(-size // block_size)
    if tuple(absmax.shape) != (blocks,):
        raise OnnxValidationError(
            f"needs `absmax` of shape ({blocks},) (one per {block_size} codes), got {tuple(absmax.shape)}."
        )
    inner = K if transB else N
    if A.ndim < 1 or A.shape[-1] != inner:
        raise OnnxValidationError(f"needs `A` of shape (..., {inner}) with `transB`={transB}, got {tuple(A.shape)}.")
    xp = namespace(A, B, absmax)
    codes = xp.stack([B >> np.uint8(4), B & np.uint8(15)], axis=-1).reshape(-1)[:size]
    table = xp.asarray(CODE_VALUES[quant_type])
    values = table[codes.astype(np.int32)]
    scale = xp.repeat(absmax.astype(np.float32), block_size)[:size] if block_size > 1 else absmax.astype(np.float32)
    weights = (values * scale).reshape(N, K)
    a = A.astype(np.float32).reshape(-1, inner)
    contract = 1 if transB else 0
    if xp is np:
        y = a @ (weights.T if transB else weights)
    else:
        y = jax.lax.dot_general(a, weights, (((1,), (contract,)), ((), ())), precision=jax.lax.Precision.HIGHEST)
    return y.astype(A.dtype).reshape(tuple(A.shape[:-1]) + ((N if transB else K),))


__all__ = ["matmul_bnb4"]
