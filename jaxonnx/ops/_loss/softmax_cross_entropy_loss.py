"""SoftmaxCrossEntropyLoss: versions 12 and 13 (13 only adds bfloat16)."""

from __future__ import annotations

import jax
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.losses import check_loss_inputs, negative_log_likelihood


# folds=False: a loss is never shape arithmetic.
@register("SoftmaxCrossEntropyLoss", 12, 13, concrete=("labels",), folds=False)
def softmax_cross_entropy_loss(
    scores, labels, weights=None, *, ignore_index: int | None = None, reduction: str = "mean", checks=None
):
    """Implements ONNX SoftmaxCrossEntropyLoss: the negative log-likelihood of ``log_softmax(scores)`` over dim 1.

    The log-softmax is computed stably (shifted by the largest score, in float32 for
    float16 and bfloat16 inputs); the loss is then exactly
    :func:`negative_log_likelihood_loss` of it, with ``labels`` as the targets and
    ``weights`` as the class weights (``ignore_index`` and ``reduction`` as there).

    Args:
        scores: float scores of shape ``(N, C, d1, ..., dk)``, ``k >= 0``.
        labels: int32/int64 classes of shape ``(N, d1, ..., dk)``.
        weights: optional class weights of shape ``(C,)``.
        ignore_index: a label whose samples give loss 0 and weight 0.
        reduction: ``"none"``, ``"sum"`` or ``"mean"``.
        checks: where the check of traced ``labels`` goes, to be made after the
            computation (an eager call's compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        ``(output, log_prob)``: the loss, and the log-probabilities (the optional second
        output, of the shape of ``scores``), both of the dtype of ``scores``.

    Example:
        >>> loss, log_prob = jaxonnx.ops.softmax_cross_entropy_loss(jnp.array([[2.0, 0.0], [0.0, 0.0]]), jnp.array([0, 1]))
        >>> loss
        Array(0.4100376, dtype=float32)
    """
    check_loss_inputs(scores, labels, weights, reduction, names=("scores", "labels", "weights"))
    wide = np.float32 if scores.dtype.itemsize == 2 else scores.dtype
    log_prob = jax.nn.log_softmax(scores.astype(wide), axis=1)
    loss = negative_log_likelihood(
        log_prob, labels, weights, ignore_index=ignore_index, reduction=reduction, target_name="labels", checks=checks
    )
    return loss.astype(scores.dtype), log_prob.astype(scores.dtype)


__all__ = ["softmax_cross_entropy_loss"]
