"""Examples of the losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

Targets include the ignored class where ``ignore_index`` is set; the weighted means divide
by the weights of the targets that are not ignored, as onnx.reference does.
"""

import numpy as np

from tests.op_examples._example import Example

_rng = np.random.default_rng(11)
_SCORES = _rng.standard_normal((3, 5)).astype(np.float32)
_SCORES_ND = _rng.standard_normal((2, 4, 3, 2)).astype(np.float32)
_LOG_PROB = np.log(np.exp(_SCORES) / np.exp(_SCORES).sum(1, keepdims=True)).astype(np.float32)
_LOG_PROB_ND = _SCORES_ND - np.log(np.exp(_SCORES_ND).sum(1, keepdims=True))
_TARGET = np.array([1, 4, 0], np.int64)
_TARGET_ND = _rng.integers(0, 4, (2, 3, 2)).astype(np.int32)
_WEIGHT = np.array([0.5, 2.0, 1.0, 0.25, 3.0], np.float32)
_WEIGHT_ND = np.array([0.5, 2.0, 1.0, 1.5], np.float32)


def _examples(x, x_nd):
    return [
        Example([x, _TARGET]),
        Example([x, _TARGET], {"reduction": "none"}),
        Example([x, _TARGET], {"reduction": "sum"}),
        Example([x, _TARGET, _WEIGHT]),
        Example([x, _TARGET, _WEIGHT], {"reduction": "sum", "ignore_index": 4}),
        Example([x, _TARGET, _WEIGHT], {"ignore_index": 0}),
        Example([x, _TARGET], {"ignore_index": 1}),
        Example([x_nd, _TARGET_ND]),
        Example([x_nd, _TARGET_ND, _WEIGHT_ND], {"reduction": "none", "ignore_index": 2}),
        Example([x_nd, _TARGET_ND, _WEIGHT_ND], {"ignore_index": -1}),  # nothing ignored
        Example([x_nd, _TARGET_ND, _WEIGHT_ND], {"ignore_index": 3}),
    ]


EXAMPLES = {
    "NegativeLogLikelihoodLoss": _examples(_LOG_PROB, _LOG_PROB_ND),
    "SoftmaxCrossEntropyLoss": [
        *_examples(_SCORES, _SCORES_ND),
        # Only the loss output: the node declares one output.
        Example([_SCORES_ND, _TARGET_ND, _WEIGHT_ND], {"ignore_index": 3}, outputs=1),
    ],
}
