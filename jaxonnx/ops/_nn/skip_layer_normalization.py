"""SkipLayerNormalization and SkipSimplifiedLayerNormalization (com.microsoft, version 1): the
residual sum and the layer (or RMS) norm of transformer blocks, fused."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.normalization import contrib_normalize, contrib_work_type
from jaxonnx.ops._helpers.schemas import attribute, contrib_schema

_FLOATS = ["tensor(float)", "tensor(float16)", "tensor(bfloat16)", "tensor(double)"]
_EPSILON = attribute("epsilon", 1e-12, "Added to the variance (the mean square when simplified).")
_STATISTICS = [("mean", "U", "optional"), ("inv_std_var", "U", "optional"), ("input_skip_bias_sum", "T", "optional")]
_SCHEMA = contrib_schema(
    "SkipLayerNormalization",
    "s = input + skip + bias; output = (s - mean) / sqrt(var + epsilon) * gamma + beta over the last dim.",
    inputs=[("input", "T"), ("skip", "T"), ("gamma", "T"), ("beta", "T", "optional"), ("bias", "T", "optional")],
    outputs=[("output", "T"), *_STATISTICS],
    type_constraints=[("T", _FLOATS), ("U", ["tensor(float)"])],
    attributes=[_EPSILON],
)
_SIMPLIFIED_SCHEMA = contrib_schema(
    "SkipSimplifiedLayerNormalization",
    "s = input + skip + bias; output = s / sqrt(mean(s^2) + epsilon) * gamma over the last dim.",
    inputs=[("input", "T"), ("skip", "T"), ("gamma", "T"), ("bias", "T", "optional")],
    outputs=[("output", "T"), *_STATISTICS],
    type_constraints=[("T", _FLOATS), ("U", ["tensor(float)"])],
    attributes=[_EPSILON],
)


@register("SkipLayerNormalization", 1, domain="com.microsoft", schema=_SCHEMA, folds=False)
def skip_layer_normalization(input, skip, gamma, beta=None, bias=None, *, epsilon=1e-12):
    """Implements com.microsoft SkipLayerNormalization: the layer norm of ``input + skip + bias``.

    ``s = input + skip + bias`` and ``output = (s - mean) / sqrt(var + epsilon) * gamma +
    beta``, the mean and population variance over the last dim, computed in float32 (double
    for double data) and cast once, as onnxruntime's CPU kernel does.

    Args:
        input: ``(batch, sequence, hidden)`` or ``(tokens, hidden)``.
        skip: the residual: the shape of ``input``, or its last two dims, with or without a
            batch of 1 (``(1, sequence, hidden)``, ``(sequence, hidden)``) for a 3-D input.
        gamma: ``(hidden,)``.
        beta: optional ``(hidden,)``.
        bias: optional ``(hidden,)``, added to the sum before the norm.
        epsilon: added to the variance, >= 0.

    Returns:
        ``(output, mean, inv_std_var, input_skip_bias_sum)``: ``output`` and the sum ``s`` of
        the shape and type of ``input``; the mean and ``1 / sqrt(var + epsilon)`` as float32,
        of ``input``'s shape with a last dim of 1.

    Example:
        >>> x = jnp.array([[1.0, 2.0], [3.0, 5.0]])
        >>> y, mean, inv_std, s = jaxonnx.ops.skip_layer_normalization(x, jnp.ones((2, 2)), jnp.ones(2), epsilon=0.0)
        >>> y, mean[:, 0], s[1]
        (Array([[-1.,  1.],
               [-1.,  1.]], dtype=float32), Array([2.5, 5. ], dtype=float32), Array([4., 6.], dtype=float32))
    """
    return _skip_norm(input, skip, gamma, beta, bias, epsilon, simplified=False)


@register("SkipSimplifiedLayerNormalization", 1, domain="com.microsoft", schema=_SIMPLIFIED_SCHEMA, folds=False)
def skip_simplified_layer_normalization(input, skip, gamma, bias=None, *, epsilon=1e-12):
    """Implements com.microsoft SkipSimplifiedLayerNormalization: the RMS norm of ``input + skip + bias``.

    ``s = input + skip + bias`` and ``output = s / sqrt(mean(s * s) + epsilon) * gamma`` over
    the last dim, in float32 (double for double data), as onnxruntime's CPU kernel does.
    onnxruntime-genai's model builder writes it between the blocks of every LLM.

    Args:
        input: ``(batch, sequence, hidden)`` or ``(tokens, hidden)``.
        skip: the residual, shaped as for SkipLayerNormalization.
        gamma: ``(hidden,)``.
        bias: optional ``(hidden,)``, added to the sum before the norm.
        epsilon: added to the mean square, >= 0.

    Returns:
        ``(output, mean, inv_std_var, input_skip_bias_sum)`` as SkipLayerNormalization's;
        ``mean`` is zeros (an RMS norm has no mean; onnxruntime writes zeros there too) and
        ``inv_std_var`` is ``1 / sqrt(mean(s * s) + epsilon)``.

    Example:
        >>> y, _, inv_std, s = jaxonnx.ops.skip_simplified_layer_normalization(
        ...     jnp.array([[1.0, -3.0]]), jnp.array([[1.0, 1.0]]), jnp.array([1.0, 3.0]), epsilon=0.0)
        >>> y, inv_std, s
        (Array([[ 1., -3.]], dtype=float32), Array([[0.5]], dtype=float32), Array([[ 2., -2.]], dtype=float32))
    """
    return _skip_norm(input, skip, gamma, None, bias, epsilon, simplified=True)


def _skip_norm(input, skip, gamma, beta, bias, epsilon, *, simplified):
    if input.ndim not in (2, 3):
        raise OnnxValidationError(f"needs `input` of rank 2 or 3, got shape {tuple(input.shape)}.")
    if (
        skip.ndim not in (2, 3)
        or skip.ndim > input.ndim
        or tuple(skip.shape[-2:]) != tuple(input.shape[-2:])
        or (skip.ndim == 3 and skip.shape[0] not in (1, input.shape[0]))
    ):
        raise OnnxValidationError(
            f"needs `skip` of the shape of `input` {tuple(input.shape)}, or of its last two dims with or without "
            f"a batch of 1; got {tuple(skip.shape)}."
        )
    hidden = input.shape[-1]
    for value, name in ((gamma, "gamma"), (beta, "beta"), (bias, "bias")):
        if value is not None and tuple(value.shape) != (hidden,):
            raise OnnxValidationError(
                f"needs `{name}` of shape ({hidden},) (the hidden size), got {tuple(value.shape)}."
            )
    work = contrib_work_type(input.dtype)
    total = input.astype(work) + skip.astype(work).reshape((1,) * (input.ndim - skip.ndim) + tuple(skip.shape))
    along_hidden = (1,) * (input.ndim - 1) + (hidden,)
    if bias is not None:
        total = total + bias.astype(work).reshape(along_hidden)
    normalized, mean, inv = contrib_normalize(total, (input.ndim - 1,), epsilon, simplified=simplified)
    output = normalized * gamma.astype(work).reshape(along_hidden)
    if beta is not None:
        output = output + beta.astype(work).reshape(along_hidden)
    return output.astype(input.dtype), mean.astype(np.float32), inv.astype(np.float32), total.astype(input.dtype)


__all__ = ["skip_layer_normalization", "skip_simplified_layer_normalization"]
