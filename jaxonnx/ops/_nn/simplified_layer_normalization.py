"""SimplifiedLayerNormalization (onnxruntime's RMS norm, version 1 of the default domain)."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.dtypes import jax_dtype
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import normalize_axis
from jaxonnx.ops._helpers.normalization import broadcast_to_rank, contrib_normalize
from jaxonnx.ops._helpers.schemas import FLOATS, attribute, contrib_schema

#: onnxruntime declares it in the default domain (``contrib_defs.cc``), where onnx defines
#: no op of this name; onnxruntime-genai's model builder writes it there.
_SCHEMA = contrib_schema(
    "SimplifiedLayerNormalization",
    "Y = X / sqrt(mean(X^2) + epsilon) * scale over the dims from `axis` on (RMS normalization).",
    inputs=[("X", "T"), ("scale", "V")],
    outputs=[("Y", "V"), ("inv_std_var", "U", "optional")],
    type_constraints=[("T", FLOATS), ("U", ["tensor(float)", "tensor(double)"]), ("V", FLOATS)],
    attributes=[
        attribute("axis", -1, "The first normalized dim."),
        attribute("epsilon", 1e-5, "Added to the mean square."),
        attribute("stash_type", 1, "The type of inv_std_var: 1 float, 11 double."),
    ],
    domain="",
)
_STASH_TYPES = {1: np.float32, 11: np.float64}


def _stash_dtype(stash_type: int):
    if stash_type not in _STASH_TYPES:
        raise OnnxValidationError(f"got `stash_type`={stash_type}; it is 1 (float) or 11 (double).")
    return jax_dtype(_STASH_TYPES[stash_type])  # float32 in JAX's 32-bit mode


@register("SimplifiedLayerNormalization", 1, schema=_SCHEMA, folds=False, ignores_unknown_attributes=True)
def simplified_layer_normalization(X, scale, *, axis=-1, epsilon=1e-5, stash_type=1):
    """Implements onnxruntime's SimplifiedLayerNormalization: ``X / sqrt(mean(X * X) + epsilon) * scale``.

    The mean square is over the dims from ``axis`` on. onnxruntime registers the op in the
    default domain (version 1), although onnx defines no op of this name; it is the RMS norm of
    LLaMA-style models that onnxruntime's optimizer and onnxruntime-genai's builder write. It
    computes in float32 (double for double ``X``) and casts once, to the type of ``scale``.

    Args:
        X: the input, any float type.
        scale: broadcast one way to ``X.shape[axis:]``; its type is the output's.
        axis: the first normalized dim, in ``[-rank, rank - 1]``.
        epsilon: added to the mean square.
        stash_type: the type of ``inv_std_var``: 1 (float32) or 11 (double).

    Returns:
        ``(Y, inv_std_var)``: ``Y`` of the shape of ``X`` and the type of ``scale``;
        ``1 / sqrt(mean(X * X) + epsilon)`` with the normalized dims of size 1.

    Example:
        >>> jaxonnx.ops.simplified_layer_normalization(jnp.array([[2.0, -2.0]]), jnp.array([1.0, 3.0]), epsilon=0.0)
        (Array([[ 1., -3.]], dtype=float32), Array([[0.5]], dtype=float32))
    """
    stats = _stash_dtype(stash_type)
    axis = normalize_axis(axis, X.ndim)
    normalized, _, inv = contrib_normalize(X, tuple(range(axis, X.ndim)), epsilon, simplified=True)
    scale = broadcast_to_rank(scale, X.ndim, name="scale", shape=X.shape, target=tuple(X.shape[axis:]))
    return (normalized * scale.astype(normalized.dtype)).astype(scale.dtype), inv.astype(stats)


__all__ = ["simplified_layer_normalization"]
