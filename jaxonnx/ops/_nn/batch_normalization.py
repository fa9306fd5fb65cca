"""BatchNormalization: versions 1, 6, 7, 9 (inference), 14 and 15 (`training_mode`)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.normalization import compute_type, inverse_std, moments


@register("BatchNormalization", 14, 15, folds=False, weights=("scale", "B"))
def batch_normalization(
    X, scale, B, input_mean, input_var, *, epsilon=1e-5, momentum=0.9, training_mode=0, channels_last=False
):
    """Implements ONNX BatchNormalization: ``X`` normalized per channel (axis 1).

    In inference (``training_mode=0``) ``Y = scale * (X - input_mean) / sqrt(input_var +
    epsilon) + B``. In training mode the batch's own mean and (population) variance over
    every axis but 1 normalize ``X``, and the running statistics are updated:
    ``running = input * momentum + batch * (1 - momentum)``.

    Args:
        X: of shape ``(N, C, D1, ..., Dn)``.
        scale, B: of shape ``(C,)``.
        input_mean, input_var: the running statistics, of shape ``(C,)``.
        epsilon: added to the variance.
        momentum: the weight of the running statistics in training mode.
        training_mode: 1 for the training computation and outputs.
        channels_last: ``X`` is ``(N, D1, ..., Dn, C)`` and so is ``Y``.

    Returns:
        ``Y`` (dtype of ``X``) in inference; ``(Y, running_mean, running_var)`` in training
        mode (dtype of ``input_mean``).

    Example:
        >>> x = jnp.array([[[1.0, 3.0], [5.0, 5.0]]])
        >>> ones = jnp.ones(2)
        >>> jaxonnx.ops.batch_normalization(x, ones, ones, jnp.array([2.0, 4.0]), ones, epsilon=0.0)
        Array([[[0., 2.],
                [2., 2.]]], dtype=float32)
    """
    if X.ndim < 2:
        raise OnnxValidationError(f"needs `X` of rank >= 2 (N, C, ...), got shape {tuple(X.shape)}.")
    params = _checked(
        X,
        (X.shape[-1 if channels_last else 1],),
        scale=scale,
        B=B,
        input_mean=input_mean,
        input_var=input_var,
        channels_last=channels_last,
    )
    if not training_mode:
        return _normalized(X, *params, epsilon)
    work = compute_type(X.dtype)
    axes = tuple(range(X.ndim - 1)) if channels_last else (0,) + tuple(range(2, X.ndim))
    mean, centered, variance = moments(X.astype(work), axes)
    scale, B = (p.astype(work) for p in params[:2])
    Y = (centered * inverse_std(variance, epsilon) * scale + B).astype(X.dtype)
    running = []
    for running_value, batch_value in ((input_mean, mean), (input_var, variance)):
        batch_value = batch_value.reshape(-1).astype(running_value.dtype)
        weight = jnp.asarray(momentum, dtype=running_value.dtype)
        running.append(running_value * weight + batch_value * (1 - weight))
    return Y, running[0], running[1]


@register("BatchNormalization", 1, 6, 7, 9, folds=False, weights=("scale", "B"))
def _batch_normalization_1(
    X, scale, B, mean, var, *, consumed_inputs=None, epsilon=1e-5, is_test=None, momentum=0.9, spatial=1
):
    # Versions before 14 infer training from the node's output count, which an op does not
    # see: they compute the inference output (Y), as exported models (is_test=1) use them.
    if X.ndim < 2:
        raise OnnxValidationError(f"needs `X` of rank >= 2 (N, C, ...), got shape {tuple(X.shape)}.")
    # spatial=0 (versions 1 to 7): statistics per element of a sample, not per channel.
    shape = (X.shape[1],) if spatial else tuple(X.shape[1:])
    return _normalized(X, *_checked(X, shape, scale=scale, B=B, mean=mean, var=var), epsilon)


def _checked(X, shape, channels_last=False, **params):
    for name, value in params.items():
        if tuple(value.shape) != shape:
            raise OnnxValidationError(
                f"needs `{name}` of shape {shape} for `X` of shape {tuple(X.shape)}, got {tuple(value.shape)}."
            )
    if channels_last:
        return tuple(value.reshape((1,) * (X.ndim - 1) + shape) for value in params.values())
    return tuple(value.reshape((1,) + shape + (1,) * (X.ndim - 1 - len(shape))) for value in params.values())


def _normalized(X, scale, B, mean, var, epsilon):
    work = compute_type(X.dtype)
    scale, B, mean, var = (p.astype(work) for p in (scale, B, mean, var))
    factor = scale * inverse_std(var, epsilon)
    return ((X.astype(work) - mean) * factor + B).astype(X.dtype)


__all__ = ["batch_normalization"]
