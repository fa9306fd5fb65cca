"""MatMulNBits (com.microsoft, version 1): a product with weights quantized to 2, 4 or 8
bits in blocks along K, as onnxruntime's quantizers and onnxruntime-genai's model builder
write them."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import onnx.defs
import onnx.helper

from jaxonnx._core.registry import is_traced, register
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.quantization import unpack_low_bits_first
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema

_INT = onnx.defs.OpSchema.AttrType.INT
_FLOATS = ["tensor(float)", "tensor(float16)", "tensor(bfloat16)"]
_SCHEMA = contrib_schema(
    "MatMulNBits",
    "Y = A @ dequantize(B)^T + bias: B is N x K quantized to `bits` bits in blocks of `block_size` along K.",
    inputs=[
        ("A", "T1"),
        ("B", "T2"),
        ("scales", "T1"),
        ("zero_points", "T3", "optional"),
        ("g_idx", "T4", "optional"),
        ("bias", "T1", "optional"),
    ],
    outputs=[("Y", "T1")],
    type_constraints=[
        ("T1", _FLOATS),
        ("T2", ["tensor(uint8)"]),
        ("T3", ["tensor(uint8)"] + _FLOATS),
        ("T4", ["tensor(int32)"]),
    ],
    differentiable=("A", "scales", "zero_points", "bias"),
    attributes=[
        attribute_without_default("K", _INT, "Input feature dimension of the weight matrix.", required=True),
        attribute_without_default("N", _INT, "Output feature dimension of the weight matrix.", required=True),
        attribute_without_default("block_size", _INT, "Size of each quantization block along K.", required=True),
        attribute("bits", 4, "Bit width of the quantized weights (2, 4 or 8)."),
        attribute(
            "accuracy_level", 0, "The lowest internal precision allowed for A: 0 unset, 1 fp32, 2 fp16, 3 bf16, 4 int8."
        ),
        attribute(
            "weight_prepacked", 0, "Whether B comes in an execution provider's prepacked layout (0: not prepacked)."
        ),
    ],
)

#: The float weights dequantized at once, in bytes: the weight matrix is taken in chunks of
#: rows of ``W`` this large, each dequantized into the cache and multiplied at once (a
#: ``lax.map``), instead of the whole float matrix being written out and read back, which
#: is much faster at decode shapes (measured: benchmarks/matmul_nbits_results.md).
CHUNK_BYTES = 1 << 20


@register("MatMulNBits", 1, domain="com.microsoft", schema=_SCHEMA, concrete=("g_idx",))
def matmul_nbits(
    A,
    B,
    scales,
    zero_points=None,
    g_idx=None,
    bias=None,
    *,
    K=None,
    N=None,
    block_size=None,
    bits=4,
    accuracy_level=0,
    weight_prepacked=0,
):
    """Implements com.microsoft MatMulNBits: ``Y = A @ W^T + bias`` with ``W`` (N x K)
    quantized in blocks along K.

    ``W[n, k] = (q[n, k] - zero_point[n, g(k)]) * scales[n, g(k)]``, where ``q[n, k]`` is
    the ``k``-th ``bits``-wide value of row ``n`` of ``B`` (packed along K, the first value
    in the lowest bits of each byte), and ``g(k) = k // block_size``, or ``g_idx[k]`` where
    given (GPTQ's act-order). The zero points are packed uint8 (the same packing, along the
    blocks of each row), unpacked floats of ``A``'s type (HQQ), or absent: ``2**(bits - 1)``.

    The product is computed in float32 (float16 and bfloat16 ``A`` are widened, and ``Y``
    rounded back), whatever ``accuracy_level`` says: the attribute only *allows* a lower
    internal precision. onnxruntime's CPU kernel takes ``accuracy_level=4`` as leave to
    quantize each block of ``A`` to int8 (a symmetric scale ``max|a| / 127`` per block of
    ``block_size`` values) and accumulate in int32; its results then differ from this
    float32 product by ``A``'s rounding error, up to ``sum_k |W[n, k]| * max|a| / 254``
    per block, where jaxonnx keeps full float32 accuracy.

    A ``B`` with a zero dimension stands for an omitted projection: ``Y`` is zeros (plus
    ``bias``). Gradients flow to ``A``, ``scales``, float ``zero_points`` and ``bias``;
    ``B`` and uint8 zero points are integers and have none, so a 4-bit model's scales can
    be fine-tuned (QLoRA-style) while its weights stay quantized.

    Args:
        A: ``(..., K)``, float32, float16 or bfloat16.
        B: uint8 ``(N, ceil(K / block_size), block_size * bits / 8)``.
        scales: ``(N, ceil(K / block_size))`` (or flattened), of ``A``'s type.
        zero_points: optional: uint8 ``(N, ceil(ceil(K / block_size) * bits / 8))``
            (packed), or ``(N, ceil(K / block_size))`` of ``A``'s type; either may be flattened.
        g_idx: optional int32 ``(K,)`` (or padded to whole blocks): the block of each row of ``W^T``.
        bias: optional ``(N,)``.
        K, N: the weight's input and output features.
        block_size: the block length along K (onnxruntime requires a power of two >= 16;
            any length whose ``block_size * bits`` is a whole number of bytes is accepted here).
        bits: 2, 4 or 8.
        accuracy_level: accepted and ignored (see above).
        weight_prepacked: must be 0; the prepacked layouts are CUDA kernels' own.

    Returns:
        ``(..., N)`` of ``A``'s type.

    Example:
        >>> a = jnp.array([[1.0, 2.0]])
        >>> b = jnp.array([[[0x9A, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88]]], jnp.uint8)  # 10, 9, 8, ...
        >>> jaxonnx.ops.matmul_nbits(a, b, jnp.array([[0.5]]), K=2, N=1, block_size=16)  # (10-8)/2, (9-8)/2
        Array([[2.]], dtype=float32)
    """
    if weight_prepacked:
        raise OnnxValidationError(
            f"got `weight_prepacked`={weight_prepacked}: `B` in a CUDA kernel's prepacked layout, which only that "
            "kernel reads; give the weights unpacked (`weight_prepacked`=0)."
        )
    if bits not in (2, 4, 8):
        raise OnnxValidationError(f"got `bits`={bits}; MatMulNBits quantizes to 2, 4 or 8 bits.")
    if block_size < 1 or block_size * bits % 8:
        raise OnnxValidationError(
            f"got `block_size`={block_size}; it must be positive and fill whole bytes at {bits} bits "
            f"(onnxruntime takes powers of two from 16)."
        )
    if A.ndim < 1 or A.shape[-1] != K:
        raise OnnxValidationError(f"needs `A` of shape (..., K={K}), got {tuple(A.shape)}.")
    k_blocks = -(-K // block_size)
    blob = block_size * bits // 8
    out_shape = tuple(A.shape[:-1]) + (N,)
    xp = namespace(A, B, scales, zero_points, g_idx, bias)
    if bias is not None and tuple(bias.shape) != (N,):
        raise OnnxValidationError(f"needs `bias` of shape ({N},), got {tuple(bias.shape)}.")
    if B.ndim == 3 and 0 in B.shape and all(b in (0, e) for b, e in zip(B.shape, (N, k_blocks, blob))):
        # An omitted projection (onnxruntime-genai's optional weights): zeros, or the bias.
        zeros = xp.zeros(out_shape, A.dtype)
        return zeros if bias is None else zeros + bias.astype(A.dtype).reshape((1,) * (len(out_shape) - 1) + (N,))
    if tuple(B.shape) != (N, k_blocks, blob):
        raise OnnxValidationError(
            f"needs `B` of shape (N, ceil(K / block_size), block_size * bits / 8) = {(N, k_blocks, blob)}, "
            f"got {tuple(B.shape)}."
        )
    scales = _per_block(scales, N, k_blocks, "scales")
    zero = _zero_points(zero_points, N, k_blocks, bits, scales.dtype)
    groups = _groups(g_idx, K, k_blocks, block_size)
    y = _product(A, B, scales, zero, groups, K=K, block_size=block_size, bits=bits)
    if bias is not None:
        y = y + bias.astype(np.float32).reshape(1, N)
    return y.astype(A.dtype).reshape(out_shape)


def _per_block(value, n: int, k_blocks: int, name: str):
    """A per-block ``(N, k_blocks)`` input, accepted flattened too (onnxruntime's older files)."""
    if tuple(value.shape) not in ((n, k_blocks), (n * k_blocks,)):
        raise OnnxValidationError(
            f"needs `{name}` of shape ({n}, {k_blocks}) (or flattened), got {tuple(value.shape)}."
        )
    return value.reshape(n, k_blocks)


def _zero_points(zero_points, n: int, k_blocks: int, bits: int, float_dtype):
    """The zero points as ``(N, k_blocks)``: unpacked from uint8, floats as given, or the
    default ``2**(bits - 1)`` (a Python int)."""
    if zero_points is None:
        return 1 << (bits - 1)
    if zero_points.dtype == np.uint8:
        width = -(-k_blocks * bits // 8)
        if tuple(zero_points.shape) not in ((n, width), (n * width,)):
            raise OnnxValidationError(
                f"needs packed uint8 `zero_points` of shape ({n}, {width}) (or flattened), got {tuple(zero_points.shape)}."
            )
        return unpack_low_bits_first(zero_points.reshape(n, width), bits)[:, :k_blocks]
    if zero_points.dtype != float_dtype:
        raise OnnxTypeError(
            f"needs float `zero_points` of the type of `scales` ({np.dtype(float_dtype).name}), got {np.dtype(zero_points.dtype).name}."
        )
    return _per_block(zero_points, n, k_blocks, "zero_points")


def _groups(g_idx, k: int, k_blocks: int, block_size: int):
    """The block of each of the K rows: ``g_idx`` (checked where known), or None for ``k // block_size``."""
    if g_idx is None:
        return None
    if tuple(g_idx.shape) not in ((k,), (k_blocks * block_size,)):
        raise OnnxValidationError(
            f"needs `g_idx` of shape ({k},) or ({k_blocks * block_size},), got {tuple(g_idx.shape)}."
        )
    g_idx = g_idx[:k]
    if not is_traced(g_idx):
        values = np.asarray(g_idx)
        bad = np.flatnonzero((values < 0) | (values >= k_blocks))
        if bad.size:
            raise OnnxValidationError(
                f"got `g_idx`[{bad[0]}]={values[bad[0]]}; the block indices lie in [0, {k_blocks})."
            )
    return g_idx


def _product(A, codes, scales, zero, groups, *, K: int, block_size: int, bits: int):
    """``A @ W^T`` in float32, ``W`` dequantized from the packed ``codes`` (N, k_blocks, blob)."""
    xp = namespace(A, codes, scales, zero, groups)
    n, k_blocks, blob = codes.shape
    per_byte = 8 // bits
    padded = k_blocks * block_size
    a = A.astype(np.float32).reshape(-1, K)
    # Scales and zero points per block, as (N, k_blocks, 1, 1), or per row of W^T with g_idx
    # as (N, k_blocks, blob, per_byte): either way they broadcast against the codes below.
    scales = scales.astype(np.float32)
    zero = np.float32(zero) if isinstance(zero, int) else zero.astype(np.float32)
    if groups is None:
        scales = scales.reshape(n, k_blocks, 1, 1)
        zero = zero if zero.ndim == 0 else zero.reshape(n, k_blocks, 1, 1)
    else:
        groups = xp.concatenate([groups, xp.zeros(padded - K, groups.dtype)]) if padded != K else groups
        take = (lambda v: v[:, groups]) if xp is np else (lambda v: jnp.take(v, groups, axis=1, mode="clip"))
        scales = take(scales).reshape(n, k_blocks, blob, per_byte)
        zero = zero if zero.ndim == 0 else take(zero).reshape(n, k_blocks, blob, per_byte)
    if padded != K:
        a = xp.concatenate([a, xp.zeros((a.shape[0], padded - K), np.float32)], axis=1)
    if xp is np:
        values = unpack_low_bits_first(codes, bits).reshape(n, k_blocks, blob, per_byte).astype(np.float32)
        weights = ((values - zero) * scales).reshape(n, padded)
        return a @ weights.T
    return _chunked_product(a, codes, scales, zero, bits=bits)


def _chunked_product(a, codes, scales, zero, *, bits: int):
    """``a @ W^T`` with ``W`` dequantized chunk by chunk of its rows (see :data:`CHUNK_BYTES`).

    Within a chunk the codes are taken apart by their position in the byte (the ``p``-th
    value of every byte at once, a shift and a mask), so that no interleaving copy is
    needed: the ``p``-th values multiply the ``p``-th columns of each ``per_byte`` columns of ``a``.
    """
    n, k_blocks, blob = codes.shape
    per_byte = 8 // bits
    rows = int(min(n, max(1, CHUNK_BYTES // (4 * k_blocks * blob * per_byte))))
    chunks = -(-n // rows)
    m = a.shape[0]
    a_phases = [a.reshape(m, k_blocks, blob, per_byte)[..., p].reshape(m, -1) for p in range(per_byte)]

    def by_chunk(v):
        """``v``'s rows of W grouped in chunks (padded with zeros), or a scalar as it is."""
        if v.ndim == 0:
            return v
        if chunks * rows != n:
            v = jnp.concatenate([v, jnp.zeros((chunks * rows - n,) + v.shape[1:], v.dtype)])
        return v.reshape((chunks, rows) + v.shape[1:])

    def chunk_product(chunk_codes, chunk_scales, chunk_zero):
        y = None
        for p in range(per_byte):
            values = chunk_codes if bits == 8 else (chunk_codes >> np.uint8(bits * p)) & np.uint8((1 << bits) - 1)
            weights = (values.astype(np.float32) - _at_position(chunk_zero, p)) * _at_position(chunk_scales, p)
            part = jax.lax.dot_general(
                a_phases[p], weights.reshape(rows, -1), (((1,), (1,)), ((), ())), precision=jax.lax.Precision.HIGHEST
            )
            y = part if y is None else y + part
        return y

    zero_chunks = by_chunk(zero)
    if zero_chunks.ndim == 0:  # the default zero point, a constant
        per_chunk = jax.lax.map(lambda args: chunk_product(*args, zero_chunks), (by_chunk(codes), by_chunk(scales)))
    else:
        per_chunk = jax.lax.map(lambda args: chunk_product(*args), (by_chunk(codes), by_chunk(scales), zero_chunks))
    return jnp.moveaxis(per_chunk, 0, 1).reshape(m, chunks * rows)[:, :n]


def _at_position(v, p: int):
    """The scales or zero points of the ``p``-th value of each byte: ``v`` is ``(..., 1)``
    (one per block) or ``(..., per_byte)`` (one per row of W^T), or a scalar."""
    if v.ndim == 0:
        return v
    return v[..., 0] if v.shape[-1] == 1 else v[..., p]


__all__ = ["matmul_nbits"]
