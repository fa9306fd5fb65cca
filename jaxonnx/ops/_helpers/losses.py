"""The loss part shared by NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: pick each
sample's log-probability of its target class, weight it, and reduce. Registers no op."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import is_traced
from jaxonnx._errors import OnnxValidationError

REDUCTIONS = ("none", "sum", "mean")


def check_loss_inputs(scores, target, weight, reduction, *, names):
    """Refuses shapes and a ``reduction`` that do not fit, naming the argument and value."""
    scores_name, target_name, weight_name = names
    if reduction not in REDUCTIONS:
        raise OnnxValidationError(f"got `reduction`={reduction!r}; it must be one of {list(REDUCTIONS)}.")
    if scores.ndim < 2:
        raise OnnxValidationError(
            f"needs `{scores_name}` of shape (N, C, d1, ..., dk), got shape {tuple(scores.shape)}."
        )
    expected = (scores.shape[0], *scores.shape[2:])
    if tuple(target.shape) != expected:
        raise OnnxValidationError(
            f"needs `{target_name}` of shape {expected} for `{scores_name}` of shape {tuple(scores.shape)}, "
            f"got shape {tuple(target.shape)}."
        )
    if weight is not None and tuple(weight.shape) != (scores.shape[1],):
        raise OnnxValidationError(
            f"needs `{weight_name}` of shape ({scores.shape[1]},) (one per class), got shape {tuple(weight.shape)}."
        )


def negative_log_likelihood(log_prob, target, weight, *, ignore_index, reduction, target_name="target", checks=None):
    """``-log_prob[n, target[n, d...], d...] * weight[target]``, 0 where ``target`` is
    ``ignore_index``, reduced by ``reduction``; ``mean`` divides by the sum of the weights
    (1 each without ``weight``) of the targets that are not ignored.

    Targets outside ``[0, C)`` that are not ``ignore_index`` raise when ``target`` is
    concrete; under ``jax.jit`` their loss is nan (and so is any reduction over them), and
    their check goes to ``checks`` (a :class:`~jaxonnx._core.checks.NodeChecks`) where one
    is given, to be made after the computation."""
    classes = log_prob.shape[1]
    # A concrete target is checked in numpy: under jax.jit a jnp mask of it would be traced.
    xp = jnp if is_traced(target) else np
    target = target if is_traced(target) else np.asarray(target)
    ignored = xp.zeros(target.shape, bool) if ignore_index is None else target == ignore_index
    outside = ((target < 0) | (target >= classes)) & ~ignored
    message = (
        f"got class {{value}} at position {{position}} of `{target_name}`, outside [0, {classes - 1}] "
        f"and not `ignore_index` ({ignore_index})."
    )
    if not is_traced(target):
        bad = np.asarray(outside)
        if bad.any():
            where = tuple(int(i[0]) for i in np.nonzero(bad))
            raise OnnxValidationError(message.format(value=np.asarray(target)[where], position=where))
    elif checks is not None:
        checks.fail_where(outside, target, message)
    # Ignored and invalid targets read class 0 (whose value is then masked out).
    safe = jnp.where(ignored | outside, 0, target).astype(np.int32 if classes < 2**31 else np.int64)
    picked = jnp.take_along_axis(log_prob, safe[:, None], axis=1)[:, 0]
    sample_weight = jnp.ones_like(picked) if weight is None else weight.astype(picked.dtype)[safe]
    sample_weight = jnp.where(ignored, jnp.zeros_like(sample_weight), sample_weight)
    # 0 * inf would be nan: an ignored sample whose class-0 log-probability is -inf still gives 0.
    loss = jnp.where(ignored, jnp.zeros_like(picked), -picked * sample_weight)
    loss = jnp.where(outside, jnp.full_like(loss, np.nan), loss)
    if reduction == "none":
        return loss
    # float16/bfloat16 sum in float32: a sum over many samples would overflow or round away.
    wide = np.float32 if loss.dtype.itemsize == 2 else loss.dtype
    total = jnp.sum(loss.astype(wide))
    if reduction == "sum":
        return total.astype(loss.dtype)
    return (total / jnp.sum(sample_weight.astype(wide))).astype(loss.dtype)
