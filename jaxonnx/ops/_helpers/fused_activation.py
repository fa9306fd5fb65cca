"""The activations onnxruntime fuses into FusedConv and FusedGemm, by name and parameters, as
its CPU kernels read them (``contrib_ops/cpu/fused_activation.cc`` for FusedConv, the element-
wise functors of ``core/providers/cpu/activation`` for FusedGemm). Registers no op."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxonnx._errors import OnnxValidationError


def _constant(value, like):
    return jnp.asarray(value, like.dtype)


def _softplus(x):
    return jnp.logaddexp(x, jnp.zeros_like(x))


#: FusedConv's activations (MLAS's): name -> (parameter count, function of y and the parameters).
CONV_ACTIVATIONS = {
    "Relu": (0, lambda y: jnp.maximum(y, jnp.zeros_like(y))),
    "Tanh": (0, jnp.tanh),
    "Sigmoid": (0, jax.nn.sigmoid),
    "Silu": (0, lambda y: y * jax.nn.sigmoid(y)),  # newer onnxruntime releases fuse it too
    "LeakyRelu": (1, lambda y, alpha: jnp.where(y >= 0, y, _constant(alpha, y) * y)),
    "Clip": (2, lambda y, low, high: jnp.clip(y, _constant(low, y), _constant(high, y))),
    "HardSigmoid": (2, lambda y, alpha, beta: jnp.clip(_constant(alpha, y) * y + _constant(beta, y), 0, 1)),
}


def conv_activation(y, activation, activation_params):
    """``y`` through FusedConv's ``activation`` (None or ``""``: none), its parameters from
    ``activation_params`` (LeakyRelu: alpha; Clip: min, max; HardSigmoid: alpha, beta)."""
    if not activation:
        return y
    if activation not in CONV_ACTIVATIONS:
        raise OnnxValidationError(
            f"got `activation`={activation!r}; it is one of {', '.join(sorted(CONV_ACTIVATIONS))} (or none)."
        )
    count, function = CONV_ACTIVATIONS[activation]
    params = list(activation_params or ())
    if len(params) != count:
        raise OnnxValidationError(f"needs {count} `activation_params` for the activation {activation!r}, got {params}.")
    return function(y, *params)


#: FusedGemm's activations: name -> (the attributes it reads, of activation_alpha / _beta /
#: _gamma, and the function of y and those).
GEMM_ACTIVATIONS = {
    "Relu": ((), lambda y: jnp.maximum(y, jnp.zeros_like(y))),
    "Sigmoid": ((), jax.nn.sigmoid),
    "Tanh": ((), jnp.tanh),
    "Softsign": ((), lambda y: y / (1 + jnp.abs(y))),
    "Softplus": ((), _softplus),
    "LeakyRelu": (("alpha",), lambda y, a: jnp.where(y >= 0, y, _constant(a, y) * y)),
    "Elu": (("alpha",), lambda y, a: jnp.where(y >= 0, y, _constant(a, y) * jnp.expm1(jnp.minimum(y, 0)))),
    "ThresholdedRelu": (("alpha",), lambda y, a: jnp.where(y > _constant(a, y), y, jnp.zeros_like(y))),
    "HardSigmoid": (("alpha", "beta"), lambda y, a, b: jnp.clip(_constant(a, y) * y + _constant(b, y), 0, 1)),
    "ScaledTanh": (("alpha", "beta"), lambda y, a, b: _constant(a, y) * jnp.tanh(_constant(b, y) * y)),
    "ParametricSoftplus": (("alpha", "beta"), lambda y, a, b: _constant(a, y) * _softplus(_constant(b, y) * y)),
    "Selu": (
        ("alpha", "gamma"),
        lambda y, a, g: _constant(g, y) * jnp.where(y > 0, y, _constant(a, y) * jnp.expm1(jnp.minimum(y, 0))),
    ),
}


def gemm_activation(y, activation, *, alpha=None, beta=None, gamma=None):
    """``y`` through FusedGemm's ``activation``, its parameters from ``activation_alpha``,
    ``activation_beta`` and ``activation_gamma`` (each one the activation reads is required,
    as onnxruntime requires it)."""
    if activation not in GEMM_ACTIVATIONS:
        raise OnnxValidationError(
            f"got `activation`={activation!r}; it is one of {', '.join(sorted(GEMM_ACTIVATIONS))}."
        )
    names, function = GEMM_ACTIVATIONS[activation]
    given = {"alpha": alpha, "beta": beta, "gamma": gamma}
    missing = [f"activation_{name}" for name in names if given[name] is None]
    if missing:
        raise OnnxValidationError(f"needs the attribute `{missing[0]}` for the activation {activation!r}.")
    return function(y, *(given[name] for name in names))
