"""Gelu: version 20; onnxruntime's com.microsoft Gelu, BiasGelu, FastGelu, QuickGelu and
BiasSplitGelu (version 1)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.schemas import attribute, contrib_schema


@register("Gelu", 20, folds=False, padding="elementwise", layout="elementwise")
def gelu(X, *, approximate: str = "none"):
    """Implements ONNX Gelu: ``X * Phi(X)``, ``Phi`` the standard normal CDF.

    Args:
        X: a float array.
        approximate: ``"none"`` for the exact form ``0.5 * X * (1 + erf(X / sqrt(2)))``,
            ``"tanh"`` for ``0.5 * X * (1 + tanh(sqrt(2 / pi) * (X + 0.044715 * X**3)))``.

    Example:
        >>> jaxonnx.ops.gelu(jnp.array([-1.0, 1.0])).round(6)  # x * Phi(x)
        Array([-0.158655,  0.841345], dtype=float32)
    """
    if approximate not in ("none", "tanh"):
        raise OnnxValidationError(f"got `approximate`={approximate!r}; it must be 'none' or 'tanh'.")
    return jax.nn.gelu(X, approximate=approximate == "tanh")


# onnxruntime's com.microsoft Gelus, BiasGelu and BiasSplitGelu (version 1). They compute
# half-precision data in float32 and cast once, as onnxruntime's kernels do.
_MS = "com.microsoft"
_FLOATS = ["tensor(float16)", "tensor(float)", "tensor(double)", "tensor(bfloat16)"]
_GELU_SCHEMA = contrib_schema(
    "Gelu", "Y = 0.5 * X * (1 + erf(X / sqrt(2))).", [("X", "T")], [("Y", "T")], [("T", _FLOATS)]
)
_BIAS_GELU_SCHEMA = contrib_schema(
    "BiasGelu",
    "C = Gelu(A + B), B a 1-D bias along the last dim.",
    [("A", "T"), ("B", "T")],
    [("C", "T")],
    [("T", _FLOATS)],
)
_FAST_GELU_SCHEMA = contrib_schema(
    "FastGelu",
    "Y = 0.5 * X * (1 + tanh(0.7978845608 * (X + 0.044715 * X^3))), X plus the optional bias.",
    [("X", "T"), ("bias", "T", "optional")],
    [("Y", "T")],
    [("T", _FLOATS)],
)
_QUICK_GELU_SCHEMA = contrib_schema(
    "QuickGelu",
    "Y = X * sigmoid(alpha * X).",
    [("X", "T")],
    [("Y", "T")],
    [("T", _FLOATS)],
    [attribute("alpha", 1.702, "The factor inside the sigmoid.")],
)
_BIAS_SPLIT_GELU_SCHEMA = contrib_schema(
    "BiasSplitGelu",
    "X + bias split in halves along the last dim: Y = left * Gelu(right).",
    [("X", "T"), ("bias", "T")],
    [("Y", "T")],
    [("T", ["tensor(float16)", "tensor(float)"])],
)


def _in_float32(x):
    """Half-precision data computes in float32 (as onnxruntime's kernels); float32 and double stay."""
    return x.astype(np.float32) if np.dtype(x.dtype).itemsize < 4 else x


def _plus_bias(X, bias, name: str = "bias"):
    """``X + bias`` for a 1-D ``bias`` along the last dim, as onnxruntime's bias Gelus require it."""
    if bias is None:
        return _in_float32(X)
    if bias.ndim != 1 or X.ndim < 1 or bias.shape[0] != X.shape[-1]:
        raise OnnxValidationError(
            f"needs `{name}` 1-D, of the last dim of the input {tuple(X.shape)}, got shape {tuple(bias.shape)}."
        )
    return _in_float32(X) + _in_float32(bias).reshape((1,) * (X.ndim - 1) + (-1,))


@register("Gelu", 1, domain=_MS, schema=_GELU_SCHEMA, folds=False)
def _microsoft_gelu(X):
    # com.microsoft Gelu is the exact Gelu: onnx's Gelu-20 with approximate="none".
    return jax.nn.gelu(_in_float32(X), approximate=False).astype(X.dtype)


@register("BiasGelu", 1, domain=_MS, schema=_BIAS_GELU_SCHEMA, folds=False)
def bias_gelu(A, B):
    """Implements com.microsoft BiasGelu: the exact Gelu of ``A + B``.

    Args:
        A: the input, rank >= 1.
        B: a 1-D bias of the length of ``A``'s last dim.

    Returns:
        ``0.5 * (A + B) * (1 + erf((A + B) / sqrt(2)))``, of the shape and type of ``A``.

    Example:
        >>> jaxonnx.ops.bias_gelu(jnp.array([[-2.0, 0.0]]), jnp.array([1.0, 1.0])).round(6)
        Array([[-0.158655,  0.841345]], dtype=float32)
    """
    return jax.nn.gelu(_plus_bias(A, B, "B"), approximate=False).astype(A.dtype)


@register("FastGelu", 1, domain=_MS, schema=_FAST_GELU_SCHEMA, folds=False)
def fast_gelu(X, bias=None):
    """Implements com.microsoft FastGelu: Gelu's tanh approximation of ``X + bias``.

    ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))`` with ``x = X + bias``
    (onnxruntime's optimizer writes it for BERT's and GPT-2's approximate Gelu).

    Args:
        X: the input, rank >= 1.
        bias: optional 1-D, of the length of ``X``'s last dim.

    Returns:
        The shape and type of ``X``.

    Example:
        >>> jaxonnx.ops.fast_gelu(jnp.array([-1.0, 1.0])).round(6)
        Array([-0.158808,  0.841192], dtype=float32)
    """
    return jax.nn.gelu(_plus_bias(X, bias), approximate=True).astype(X.dtype)


@register("QuickGelu", 1, domain=_MS, schema=_QUICK_GELU_SCHEMA, folds=False)
def quick_gelu(X, *, alpha=1.702):
    """Implements com.microsoft QuickGelu: ``X * sigmoid(alpha * X)`` (CLIP's Gelu).

    Args:
        X: the input.
        alpha: the factor inside the sigmoid.

    Returns:
        The shape and type of ``X``.

    Example:
        >>> jaxonnx.ops.quick_gelu(jnp.array([-1.0, 0.0, 1.0]), alpha=1.0).round(6)
        Array([-0.268941,  0.      ,  0.731059], dtype=float32)
    """
    x = _in_float32(X)
    return (x * jax.nn.sigmoid(jnp.asarray(alpha, x.dtype) * x)).astype(X.dtype)


@register("BiasSplitGelu", 1, domain=_MS, schema=_BIAS_SPLIT_GELU_SCHEMA, folds=False)
def bias_split_gelu(X, bias):
    """Implements com.microsoft BiasSplitGelu: ``X + bias`` halved, the left half times the Gelu of the right.

    Stable Diffusion's GEGLU: with ``h = X + bias`` split along the last dim into ``left``
    and ``right``, ``Y = left * Gelu(right)`` (the exact Gelu). onnxruntime runs this op on
    CUDA only; this follows the text of its ``docs/ContribOperators.md`` (tests check it
    against numpy).

    Args:
        X: ``(N, S, D)``, ``D`` even.
        bias: ``(D,)``.

    Returns:
        ``(N, S, D / 2)``, of the type of ``X``.

    Example:
        >>> jaxonnx.ops.bias_split_gelu(jnp.array([[[2.0, 0.0]]]), jnp.array([0.0, 1.0])).round(6)
        Array([[[1.682689]]], dtype=float32)
    """
    if X.ndim != 3 or X.shape[-1] % 2:
        raise OnnxValidationError(f"needs `X` of shape (N, S, D) with an even D, got {tuple(X.shape)}.")
    h = _plus_bias(X, bias)
    half = X.shape[-1] // 2
    return (h[..., :half] * jax.nn.gelu(h[..., half:], approximate=False)).astype(X.dtype)


__all__ = ["gelu", "bias_gelu", "fast_gelu", "quick_gelu", "bias_split_gelu"]
