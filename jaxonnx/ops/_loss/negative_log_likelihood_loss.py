"""NegativeLogLikelihoodLoss: versions 12, 13 and 22 (they only widen the type list)."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.losses import check_loss_inputs, negative_log_likelihood


# folds=False: a loss is never shape arithmetic.
@register("NegativeLogLikelihoodLoss", 12, 13, 22, concrete=("target",), folds=False)
def negative_log_likelihood_loss(
    input, target, weight=None, *, ignore_index: int | None = None, reduction: str = "mean", checks=None
):
    """Implements ONNX NegativeLogLikelihoodLoss: ``-input[n, target[n, d...], d...] * weight[target]``.

    Args:
        input: log-probabilities of shape ``(N, C, d1, ..., dk)``, ``k >= 0``.
        target: int32/int64 class indices of shape ``(N, d1, ..., dk)``, each in
            ``[0, C)`` or equal to ``ignore_index``. Other values raise when ``target`` is
            concrete; under ``jax.jit`` their loss is nan.
        weight: optional float weights of shape ``(C,)``, one per class (1 without it).
        ignore_index: a target value whose samples give loss 0 and weight 0.
        reduction: ``"none"`` (the loss of shape ``(N, d1, ..., dk)``), ``"sum"``, or
            ``"mean"``: the sum divided by the sum of the weights of the targets that are
            not ignored (their count without ``weight``; nan when every target is ignored).
            onnx.reference divides by the count of all targets in one corner, ``mean``
            with ``ignore_index=-1`` and no ``weight``; the text's weighted mean is used
            there too.
        checks: where the check of traced ``target`` goes, to be made after the
            computation (an eager call's compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        The loss, of the dtype of ``input``.

    Example:
        >>> log_prob = jnp.log(jnp.array([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]]))
        >>> jaxonnx.ops.negative_log_likelihood_loss(log_prob, jnp.array([0, 1]), jnp.array([1.0, 3.0, 1.0]))
        Array(0.34064445, dtype=float32)
    """
    check_loss_inputs(input, target, weight, reduction, names=("input", "target", "weight"))
    return negative_log_likelihood(input, target, weight, ignore_index=ignore_index, reduction=reduction, checks=checks)


__all__ = ["negative_log_likelihood_loss"]
