"""EmbedLayerNormalization and QEmbedLayerNormalization (com.microsoft, version 1): BERT's
embedding layer (word, position and segment embeddings summed, then a layer norm), fused,
in float and with quantized tables."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import onnx.defs

from jaxonnx._core.registry import is_traced, register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.normalization import contrib_normalize, contrib_work_type
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema

_EPSILON = attribute("epsilon", 1e-12, "Added to the variance.")
_SCHEMA = contrib_schema(
    "EmbedLayerNormalization",
    "The layer norm of word_embedding[input_ids] + position_embedding[position_ids] + segment_embedding[segment_ids].",
    inputs=[
        ("input_ids", "T1"),
        ("segment_ids", "T1", "optional"),
        ("word_embedding", "T"),
        ("position_embedding", "T"),
        ("segment_embedding", "T", "optional"),
        ("gamma", "T"),
        ("beta", "T"),
        ("mask", "T1", "optional"),
        ("position_ids", "T1", "optional"),
    ],
    outputs=[("output", "T"), ("mask_index", "T1", "optional"), ("embedding_sum", "T", "optional")],
    type_constraints=[("T1", ["tensor(int32)"]), ("T", ["tensor(float)", "tensor(float16)"])],
    attributes=[
        _EPSILON,
        attribute_without_default(
            "mask_index_type",
            onnx.defs.OpSchema.AttrType.INT,
            "For shape inference only (0: no mask_index, 1: a 1-D mask_index).",
        ),
    ],
)
_SEGMENT = "Part of the all-or-none segment input group."
_Q_SCHEMA = contrib_schema(
    "QEmbedLayerNormalization",
    "EmbedLayerNormalization of int8 / uint8 tables, gamma and beta, each dequantized with its scale and zero point.",
    inputs=[
        ("input_ids", "T1"),
        ("segment_ids", "T1", "optional"),
        ("word_embedding_quant", "T2"),
        ("position_embedding_quant", "T2"),
        ("segment_embedding", "T2", "optional"),
        ("gamma_quant", "T2"),
        ("beta_quant", "T2"),
        ("mask", "T1", "optional"),
        ("word_embedding_scale", "T"),
        ("position_embedding_scale", "T"),
        ("segment_embedding_scale", "T", "optional"),
        ("gamma_scale", "T"),
        ("beta_scale", "T"),
        ("word_embedding_zero_point", "T2"),
        ("position_embedding_zero_point", "T2"),
        ("segment_embedding_zero_point", "T2", "optional"),
        ("gamma_zero_point", "T2"),
        ("beta_zero_point", "T2"),
    ],
    outputs=[("layernorm_out", "T"), ("mask_index_out", "T1")],
    type_constraints=[("T1", ["tensor(int32)"]), ("T2", ["tensor(int8)", "tensor(uint8)"]), ("T", ["tensor(float)"])],
    attributes=[_EPSILON],
)


@register("EmbedLayerNormalization", 1, domain="com.microsoft", schema=_SCHEMA, folds=False)
def embed_layer_normalization(
    input_ids,
    segment_ids,
    word_embedding,
    position_embedding,
    segment_embedding=None,
    gamma=None,
    beta=None,
    mask=None,
    position_ids=None,
    *,
    epsilon=1e-12,
    mask_index_type=None,
    checks=None,
):
    """Implements com.microsoft EmbedLayerNormalization: BERT's embeddings, summed and layer-normed.

    ``embedding_sum = word_embedding[input_ids] + position_embedding[position_ids] +
    segment_embedding[segment_ids]`` (positions ``0 .. sequence - 1`` without
    ``position_ids``; no segment term without ``segment_ids``), and ``output = (sum - mean) /
    sqrt(var + epsilon) * gamma + beta`` over the hidden dim, in float32.

    Indices outside a table are refused when known (onnxruntime refuses them at run time),
    or after the computation where ``checks`` is given (an eager call); traced ones are
    otherwise clamped into the table, as a gather under ``jax.jit`` does.

    Args:
        input_ids: int32 ``(batch, sequence)``.
        segment_ids: optional int32 ``(batch, sequence)``; given with ``segment_embedding``.
        word_embedding, position_embedding: ``(rows, hidden)`` tables.
        segment_embedding: optional ``(rows, hidden)``.
        gamma, beta: ``(hidden,)``.
        mask: optional int32 ``(batch, sequence)``.
        position_ids: optional int32 ``(batch, sequence)`` or ``(1, sequence)``.
        epsilon: added to the variance, >= 0.
        mask_index_type: read by onnxruntime's shape inference only; the values do not depend on it.
        checks: where the checks of traced ids go, to be made after the computation (an
            eager call's compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        ``(output, mask_index, embedding_sum)``: ``(batch, sequence, hidden)``; int32
        ``(batch,)``, the number of ones in each row of ``mask`` (zeros without a mask), as
        onnxruntime counts; the sum before the norm (with the segment term).

    Example:
        >>> table = jnp.array([[1.0, 3.0], [4.0, 2.0]])
        >>> out, mask_index, total = jaxonnx.ops.embed_layer_normalization(
        ...     jnp.array([[0, 1]], jnp.int32), None, table, jnp.zeros((2, 2)), None, jnp.ones(2), jnp.zeros(2),
        ...     jnp.array([[1, 0]], jnp.int32), epsilon=0.0)
        >>> out, mask_index
        (Array([[[-1.,  1.],
                [ 1., -1.]]], dtype=float32), Array([1], dtype=int32))
    """
    if gamma is None or beta is None:
        raise OnnxValidationError("needs its inputs `gamma` and `beta`.")
    if input_ids.ndim != 2:
        raise OnnxValidationError(f"needs `input_ids` of shape (batch, sequence), got {tuple(input_ids.shape)}.")
    if (segment_ids is None) != (segment_embedding is None):
        raise OnnxValidationError("needs `segment_ids` and `segment_embedding` both or neither.")
    batch, sequence = input_ids.shape
    hidden = word_embedding.shape[-1]
    tables = {
        "word_embedding": word_embedding,
        "position_embedding": position_embedding,
        "segment_embedding": segment_embedding,
    }
    for name, table in tables.items():
        if table is not None and (table.ndim != 2 or table.shape[1] != hidden):
            raise OnnxValidationError(f"needs `{name}` of shape (rows, {hidden}), got {tuple(table.shape)}.")
    for value, name in ((gamma, "gamma"), (beta, "beta")):
        if tuple(value.shape) != (hidden,):
            raise OnnxValidationError(f"needs `{name}` of shape ({hidden},), got {tuple(value.shape)}.")
    for value, name in ((segment_ids, "segment_ids"), (mask, "mask")):
        if value is not None and tuple(value.shape) != (batch, sequence):
            raise OnnxValidationError(
                f"needs `{name}` of the shape of `input_ids` {(batch, sequence)}, got {tuple(value.shape)}."
            )
    if position_ids is None:
        position_ids = np.arange(sequence, dtype=np.int32)[None]
    elif position_ids.ndim != 2 or position_ids.shape[0] not in (1, batch) or position_ids.shape[1] != sequence:
        raise OnnxValidationError(
            f"needs `position_ids` of shape {(batch, sequence)} or {(1, sequence)}, got {tuple(position_ids.shape)}."
        )
    work = contrib_work_type(word_embedding.dtype)
    total = _rows(word_embedding, input_ids, "input_ids", "word_embedding", checks).astype(work)
    total = total + _rows(position_embedding, position_ids, "position_ids", "position_embedding", checks).astype(work)
    if segment_ids is not None:
        total = total + _rows(segment_embedding, segment_ids, "segment_ids", "segment_embedding", checks).astype(work)
    normalized, _, _ = contrib_normalize(total, (2,), epsilon, simplified=False)
    output = normalized * gamma.astype(work).reshape(1, 1, hidden) + beta.astype(work).reshape(1, 1, hidden)
    if mask is None:
        mask_index = jnp.zeros((batch,), np.int32)
    else:
        mask_index = (jnp.asarray(mask) == 1).sum(axis=1, dtype=np.int32)
    return output.astype(word_embedding.dtype), mask_index, total.astype(word_embedding.dtype)


def _rows(table, ids, ids_name: str, table_name: str, checks=None):
    """``table[ids]`` (2-D ``ids``): known ids outside the table are refused, traced ones
    clamped, and checked by ``checks`` after the computation where given."""
    rows = table.shape[0]
    message = f"got {ids_name}[{{position[0]}}, {{position[1]}}]={{value}}, outside the {rows} rows of `{table_name}`."
    if not is_traced(ids):
        concrete = np.asarray(ids)
        bad = (concrete < 0) | (concrete >= rows)
        if bad.any():
            where = tuple(int(i[0]) for i in np.nonzero(bad))
            raise OnnxValidationError(message.format(value=concrete[where], position=where))
    elif checks is not None:
        checks.fail_where((ids < 0) | (ids >= rows), ids, message)
    return jnp.take(jnp.asarray(table), jnp.asarray(ids), axis=0, mode="clip")


@register("QEmbedLayerNormalization", 1, domain="com.microsoft", schema=_Q_SCHEMA, folds=False)
def qembed_layer_normalization(
    input_ids,
    segment_ids,
    word_embedding_quant,
    position_embedding_quant,
    segment_embedding,
    gamma_quant,
    beta_quant,
    mask,
    word_embedding_scale,
    position_embedding_scale,
    segment_embedding_scale,
    gamma_scale,
    beta_scale,
    word_embedding_zero_point,
    position_embedding_zero_point,
    segment_embedding_zero_point=None,
    gamma_zero_point=None,
    beta_zero_point=None,
    *,
    epsilon=1e-12,
    checks=None,
):
    """Implements com.microsoft QEmbedLayerNormalization: EmbedLayerNormalization of quantized tables.

    Each table, ``gamma`` and ``beta`` is dequantized as ``(q - zero_point) * scale`` (per
    tensor, in float32) and the result is EmbedLayerNormalization's, positions ``0 ..
    sequence - 1``. onnxruntime's quantizer (``quantize_dynamic``) writes it in place of
    EmbedLayerNormalization. The segment inputs (``segment_ids``, ``segment_embedding``, its
    scale and zero point) come all together or not at all.

    Args:
        input_ids, segment_ids, mask: int32 ``(batch, sequence)``, as EmbedLayerNormalization's.
        word_embedding_quant, position_embedding_quant, segment_embedding: int8 or uint8 tables.
        gamma_quant, beta_quant: int8 or uint8 ``(hidden,)``.
        *_scale: float32 scalars; *_zero_point: scalars of the quantized type.
        epsilon: added to the variance, >= 0.
        checks: where the checks of traced ids go (see :func:`embed_layer_normalization`).

    Returns:
        ``(layernorm_out, mask_index_out)``: float32 ``(batch, sequence, hidden)`` and int32 ``(batch,)``.

    Example:
        >>> table = jnp.array([[2, 6], [4, 4]], jnp.uint8)
        >>> one, zero = jnp.float32(1.0), jnp.uint8(0)
        >>> out, _ = jaxonnx.ops.qembed_layer_normalization(
        ...     jnp.array([[0]], jnp.int32), None, table, jnp.zeros((1, 2), jnp.uint8), None, jnp.ones(2, jnp.uint8),
        ...     jnp.zeros(2, jnp.uint8), None, one, one, None, one, one, zero, zero, None, zero, zero, epsilon=0.0)
        >>> out
        Array([[[-1.,  1.]]], dtype=float32)
    """
    segment = (segment_ids, segment_embedding, segment_embedding_scale, segment_embedding_zero_point)
    if any(v is None for v in segment) and any(v is not None for v in segment):
        raise OnnxValidationError(
            "needs `segment_ids`, `segment_embedding`, `segment_embedding_scale` and `segment_embedding_zero_point` "
            "all together or none of them."
        )
    if gamma_zero_point is None or beta_zero_point is None:
        raise OnnxValidationError("needs its inputs `gamma_zero_point` and `beta_zero_point`.")

    def real(codes, scale, zero, name):
        for value, what in ((scale, "scale"), (zero, "zero_point")):
            if value.size != 1:
                raise OnnxValidationError(
                    f"needs a scalar `{name}_{what}` (per-tensor), got shape {tuple(value.shape)}."
                )
        xp = namespace(codes, scale, zero)
        difference = codes.astype(np.float32) - xp.asarray(zero).reshape(()).astype(np.float32)
        return difference * xp.asarray(scale).reshape(()).astype(np.float32)

    segment_table = (
        None
        if segment_embedding is None
        else real(segment_embedding, segment_embedding_scale, segment_embedding_zero_point, "segment_embedding")
    )
    output, mask_index, _ = embed_layer_normalization(
        input_ids,
        segment_ids,
        real(word_embedding_quant, word_embedding_scale, word_embedding_zero_point, "word_embedding"),
        real(position_embedding_quant, position_embedding_scale, position_embedding_zero_point, "position_embedding"),
        segment_table,
        real(gamma_quant, gamma_scale, gamma_zero_point, "gamma"),
        real(beta_quant, beta_scale, beta_zero_point, "beta"),
        mask,
        epsilon=epsilon,
        checks=checks,
    )
    return output, mask_index


__all__ = ["embed_layer_normalization", "qembed_layer_normalization"]
