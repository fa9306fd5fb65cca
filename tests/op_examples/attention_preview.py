"""Examples of the ai.onnx.preview ops (FlexAttention). Its modifiers are Python functions, as
the graph runner hands subgraphs to the op; those examples take onnx.reference's own
computation as the oracle, with the functions in place of subgraph evaluators."""

from __future__ import annotations

import numpy as np
from onnx.reference.ops.aionnx_preview.op_flex_attention import _compute_flex_attention

from tests.op_examples._example import Example

DOMAIN = "ai.onnx.preview"

_rng = np.random.default_rng(11)


def _normal(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


# Written with operators and `astype` only, so that one function runs on numpy (the oracle)
# and on JAX arrays (the op, also under grad and vmap); the constants take the scores' type.
_CAUSAL = np.where(np.tril(np.ones((1, 1, 3, 4), bool), k=1), 0.0, -np.inf)
_RELATIVE = np.subtract.outer(np.arange(3), np.arange(4)).reshape(1, 1, 3, 4).astype(np.float64)


def _causal_score_mod(scores):
    return (scores + _CAUSAL.astype(scores.dtype),)


def _relative_score_mod(scores):
    return (scores + _RELATIVE.astype(scores.dtype) * 0.25,)


def _halving_prob_mod(probabilities):
    return (probabilities * 0.5,)


class _Evaluator:
    """A Python function in the place of onnx.reference's subgraph evaluator."""

    def __init__(self, fn):
        self.fn, self.input_names = fn, ["x"]

    def run(self, _, feeds, attributes=None):
        return [np.asarray(self.fn(feeds["x"])[0])]


def _reference(Q, K, V, *, score_mod=None, prob_mod=None, **attributes):
    return _compute_flex_attention(
        Q, K, V, score_mod=score_mod and _Evaluator(score_mod), prob_mod=prob_mod and _Evaluator(prob_mod), **attributes
    )


_Q, _K, _V = _normal(2, 4, 3, 5), _normal(2, 2, 4, 5), _normal(2, 2, 4, 3)

EXAMPLES = {
    "FlexAttention": [
        Example([_Q, _K, _V]),  # grouped-query heads: 4 query heads share 2 key/value heads
        Example([_Q[:, :2], _K, _V], {"scale": 0.3}),
        Example([_Q, _K, _V], {"score_mod": _causal_score_mod}, reference=_reference),
        Example([_Q, _K, _V], {"score_mod": _relative_score_mod, "prob_mod": _halving_prob_mod}, reference=_reference),
    ],
}
