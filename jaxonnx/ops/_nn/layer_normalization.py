"""LayerNormalization: version 17, and onnxruntime's version 1 of the default domain (its
contrib op from before onnx defined one); the normalization the other *Normalization ops share."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.dtypes import jax_dtype
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import normalize_axis
from jaxonnx.ops._helpers.normalization import (
    broadcast_to_rank,
    compute_type,
    contrib_normalize,
    inverse_std,
    moments,
)
from jaxonnx.ops._helpers.schemas import FLOATS, attribute, contrib_schema


@register("LayerNormalization", 17, folds=False, weights=("Scale", "B"), ignores_unknown_attributes=True)
def layer_normalization(X, Scale, B=None, *, axis=-1, epsilon=1e-5, stash_type=1):
    """Implements ONNX LayerNormalization: ``X`` normalized over dims ``axis...``, times ``Scale``, plus ``B``.

    Args:
        X: the input.
        Scale: broadcast one way to ``X.shape[axis:]``.
        B: optional; broadcast one way to ``X.shape[axis:]``.
        axis: the first normalized dim, in ``[-rank, rank - 1]``.
        epsilon: added to the variance.
        stash_type: 1 computes half-precision ``X`` in float32.

    Returns:
        ``(Y, Mean, InvStdDev)``: ``Y`` of the dtype of ``X``; the mean and ``1 / sqrt(var +
        epsilon)`` over the normalized dims, with those dims of size 1 (float32 for
        half-precision ``X``, else the dtype of ``X``).

    Example:
        >>> y, mean, inv_std = jaxonnx.ops.layer_normalization(jnp.array([[1.0, 3.0]]), jnp.ones(2), epsilon=0.0)
        >>> y, mean
        (Array([[-1.,  1.]], dtype=float32), Array([[2.]], dtype=float32))
    """
    axis = normalize_axis(axis, X.ndim)
    work = compute_type(X.dtype, stash_type)
    normalized = tuple(X.shape[axis:])
    mean, centered, variance = moments(X.astype(work), tuple(range(axis, X.ndim)))
    inv = inverse_std(variance, epsilon)
    scale = broadcast_to_rank(Scale, X.ndim, name="Scale", shape=X.shape, target=normalized)
    Y = (centered * inv).astype(X.dtype) * scale
    if B is not None:
        Y = Y + broadcast_to_rank(B, X.ndim, name="B", shape=X.shape, target=normalized)
    stats = compute_type(X.dtype)
    return Y, mean.astype(stats), inv.astype(stats)


#: onnxruntime's LayerNormalization, a contrib op it declares in the default domain at version
#: 1 (its kernels run models of opsets 1-16); onnxruntime's transformer optimizer writes it into
#: BERT-style models exported below opset 17. Scale and B may have another float type than X.
_SCHEMA_1 = contrib_schema(
    "LayerNormalization",
    "Y = (X - mean) / sqrt(var + epsilon) * Scale + B over the dims from `axis` on.",
    inputs=[("X", "T"), ("Scale", "V"), ("B", "V", "optional")],
    outputs=[("Y", "V"), ("Mean", "U", "optional"), ("InvStdDev", "U", "optional")],
    type_constraints=[("T", FLOATS), ("U", ["tensor(float)", "tensor(double)"]), ("V", FLOATS)],
    attributes=[
        attribute("axis", -1, "The first normalized dim."),
        attribute("epsilon", 1e-5, "Added to the variance."),
        attribute("stash_type", 1, "The type of Mean and InvStdDev: 1 float, 11 double."),
    ],
    domain="",
)


@register(
    "LayerNormalization", 1, schema=_SCHEMA_1, folds=False, weights=("Scale", "B"), ignores_unknown_attributes=True
)
def _layer_normalization_1(X, Scale, B=None, *, axis=-1, epsilon=1e-5, stash_type=1):
    # onnxruntime's kernel computes in float32 (double for double X) and casts once, to
    # Scale's type; its statistics are of the type stash_type names.
    if stash_type not in (1, 11):
        raise OnnxValidationError(f"got `stash_type`={stash_type}; it is 1 (float) or 11 (double).")
    axis = normalize_axis(axis, X.ndim)
    normalized_shape = tuple(X.shape[axis:])
    y, mean, inv = contrib_normalize(X, tuple(range(axis, X.ndim)), epsilon, simplified=False)
    y = y * broadcast_to_rank(Scale, X.ndim, name="Scale", shape=X.shape, target=normalized_shape).astype(y.dtype)
    if B is not None:
        y = y + broadcast_to_rank(B, X.ndim, name="B", shape=X.shape, target=normalized_shape).astype(y.dtype)
    stats = np.float32 if stash_type == 1 else jax_dtype(np.float64)
    return y.astype(Scale.dtype), mean.astype(stats), inv.astype(stats)


__all__ = ["layer_normalization"]
