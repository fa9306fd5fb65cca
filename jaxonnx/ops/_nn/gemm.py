"""Gemm: versions 1, 6, 7, 9, 11 and 13 (1 and 6 have `broadcast`; C is optional from 11); and
onnxruntime's com.microsoft FusedGemm (version 1), a Gemm and an activation."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import onnx.defs

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.fused_activation import gemm_activation
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema


@register("Gemm", 7, 9, 11, 13, weights=("B", "C"), linear=True)
def gemm(A, B, C=None, *, alpha=1.0, beta=1.0, transA=0, transB=0):
    """Implements ONNX Gemm: ``alpha * A' @ B' + beta * C``, with ``A'`` and ``B'`` optionally transposed.

    Args:
        A: a 2-D array, ``(M, K)`` (``(K, M)`` if ``transA``).
        B: a 2-D array of the dtype of ``A``, ``(K, N)`` (``(N, K)`` if ``transB``).
        C: optional; broadcast one way to ``(M, N)`` (a scalar, ``(N,)``, ``(M, 1)``, ...).
        alpha: the factor of the product.
        beta: the factor of ``C``.
        transA: whether to transpose ``A`` first.
        transB: whether to transpose ``B`` first.

    Returns:
        An ``(M, N)`` array of the dtype of ``A``.

    Example:
        >>> jaxonnx.ops.gemm(jnp.ones((2, 3)), jnp.ones((4, 3)), jnp.arange(4.0), transB=1, alpha=0.5)
        Array([[1.5, 2.5, 3.5, 4.5],
               [1.5, 2.5, 3.5, 4.5]], dtype=float32)
    """
    if A.ndim != 2 or B.ndim != 2:
        raise OnnxValidationError(f"needs 2-D `A` and `B`, got shapes {tuple(A.shape)} and {tuple(B.shape)}.")
    a = A.T if transA else A
    b = B.T if transB else B
    if a.shape[1] != b.shape[0]:
        raise OnnxValidationError(
            f"cannot multiply `A` of shape {tuple(A.shape)} (transA={transA}) by `B` of shape "
            f"{tuple(B.shape)} (transB={transB}): the inner dims {a.shape[1]} and {b.shape[0]} differ."
        )
    shape = (a.shape[0], b.shape[1])
    xp = namespace(A, B, C)
    y = np.matmul(a, b) if xp is np else jnp.matmul(a, b, preferred_element_type=A.dtype)
    if C is not None and beta != 0:
        if C.ndim > 2 or any(c not in (1, n) for c, n in zip(C.shape[::-1], shape[::-1])):
            raise OnnxValidationError(f"cannot broadcast `C` of shape {tuple(C.shape)} to the output shape {shape}.")
        C = C.reshape((1,) * (2 - C.ndim) + tuple(C.shape))
    else:
        C = None
    exact = y.dtype.kind not in "iu" or (alpha == 1 and beta == 1)
    # Integer data with fractional factors: computed in floats and truncated once, as onnx's reference does.
    work = y.dtype if exact else (np.float64 if xp is np or y.dtype.itemsize == 8 else np.float32)
    out = _scaled(y.astype(work), alpha, xp)
    if C is not None:
        out = out + _scaled(C.astype(work), beta, xp)
    return out.astype(y.dtype)


def _scaled(y, factor, xp):
    return y if factor == 1 else y * xp.asarray(factor, dtype=y.dtype)


@register("Gemm", 1, 6, weights=("B", "C"), linear=True)
def _gemm_1(A, B, C, *, alpha=1.0, beta=1.0, transA=0, transB=0, broadcast=0):
    # Before 7, `C` must already have the output's shape unless `broadcast` is set.
    if not broadcast and A.ndim == 2 and B.ndim == 2:
        rows = A.shape[1] if transA else A.shape[0]
        cols = B.shape[0] if transB else B.shape[1]
        if tuple(C.shape) != (rows, cols):
            raise OnnxValidationError(
                f"got `C` of shape {tuple(C.shape)} with `broadcast`=0; it must have the output shape {(rows, cols)}."
            )
    return gemm(A, B, C, alpha=alpha, beta=beta, transA=transA, transB=transB)


_FLOAT = onnx.defs.OpSchema.AttrType.FLOAT
_FUSED_GEMM_SCHEMA = contrib_schema(
    "FusedGemm",
    "Y = activation(alpha * A' @ B' + beta * C).",
    inputs=[("A", "T"), ("B", "T"), ("C", "T", "optional")],
    outputs=[("Y", "T")],
    # onnxruntime's schema lists the integer types of Gemm too, but its activations (and
    # its only kernel, float32) take float data: so do these.
    type_constraints=[("T", ["tensor(float16)", "tensor(float)", "tensor(double)"])],
    attributes=[
        attribute("alpha", 1.0, "The factor of the product."),
        attribute("beta", 1.0, "The factor of C."),
        attribute("transA", 0, "Whether A is transposed."),
        attribute("transB", 0, "Whether B is transposed."),
        attribute_without_default("activation", onnx.defs.OpSchema.AttrType.STRING, "The activation's op type."),
        attribute_without_default("activation_alpha", _FLOAT, "The activation's alpha."),
        attribute_without_default("activation_beta", _FLOAT, "The activation's beta."),
        attribute_without_default("activation_gamma", _FLOAT, "The activation's gamma."),
    ],
)


@register("FusedGemm", 1, domain="com.microsoft", schema=_FUSED_GEMM_SCHEMA, folds=False)
def fused_gemm(
    A,
    B,
    C=None,
    *,
    alpha=1.0,
    beta=1.0,
    transA=0,
    transB=0,
    activation=None,
    activation_alpha=None,
    activation_beta=None,
    activation_gamma=None,
):
    """Implements com.microsoft FusedGemm: Gemm followed by an activation.

    ``Y = activation(alpha * A' @ B' + beta * C)``, the Gemm as ONNX's. The activation is one
    of the element-wise ops onnxruntime fuses (Relu, Sigmoid, Tanh, Softsign, Softplus,
    LeakyRelu, Elu, ThresholdedRelu, HardSigmoid, ScaledTanh, ParametricSoftplus, Selu), with
    its ``alpha``, ``beta`` and ``gamma`` from ``activation_alpha``, ``activation_beta`` and
    ``activation_gamma``.

    Args:
        A, B, C: as Gemm's.
        alpha, beta, transA, transB: as Gemm's.
        activation: the activation's op type (required, as onnxruntime requires it).
        activation_alpha, activation_beta, activation_gamma: its parameters.

    Returns:
        ``(M, N)``, of the type of ``A``.

    Example:
        >>> jaxonnx.ops.fused_gemm(jnp.array([[1.0, -2.0]]), jnp.eye(2), activation="LeakyRelu", activation_alpha=0.5)
        Array([[ 1., -1.]], dtype=float32)
    """
    y = gemm(A, B, C, alpha=alpha, beta=beta, transA=transA, transB=transB)
    if activation is None:
        raise OnnxValidationError("needs the attribute `activation` (onnxruntime refuses a FusedGemm without one).")
    return gemm_activation(y, activation, alpha=activation_alpha, beta=activation_beta, gamma=activation_gamma)


__all__ = ["gemm", "fused_gemm"]
