"""Examples of the attention family: Attention, RMSNormalization, RotaryEmbedding, TensorScatter,
LinearAttention, CausalConvWithState."""

import numpy as np

from tests.op_examples._example import Example

_rng = np.random.default_rng(23)


def _normal(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _bool(*shape):
    return _rng.random(shape) < 0.7


_ROW_MASKED = np.array([[False] * 6, [True] * 6, [True, False, True, False, True, True], [False] * 5 + [True]])

EXAMPLES = {
    "Attention": [
        Example([_normal(2, 3, 4, 8), _normal(2, 3, 6, 8), _normal(2, 3, 6, 5)]),
        # 3-D grouped-query (4 query heads over 2 key/value heads), causal, scaled, probabilities.
        Example(
            [_normal(2, 4, 12), _normal(2, 6, 6), _normal(2, 6, 8)],
            {"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1, "scale": 0.3, "qk_matmul_output_mode": 3},
        ),
        # A float mask of rank 3 and the past cache; the scores with the bias.
        Example(
            [
                _normal(1, 2, 3, 4),
                _normal(1, 2, 2, 4),
                _normal(1, 2, 2, 4),
                _normal(2, 3, 5),
                _normal(1, 2, 3, 4),
                _normal(1, 2, 3, 4),
            ],
            {"qk_matmul_output_mode": 2},
        ),
        # A boolean mask shorter than past + new keys (the rest masked), causal from the past.
        Example(
            [
                _normal(2, 2, 3, 4),
                _normal(2, 2, 2, 4),
                _normal(2, 2, 2, 4),
                _bool(2, 1, 3, 4),
                _normal(2, 2, 3, 4),
                _normal(2, 2, 3, 4),
            ],
            {"is_causal": 1, "qk_matmul_output_mode": 3},
        ),
        # A fully masked row gives zeros; the soft-capped scores. (onnx.reference's mode 0 also
        # holds the soft-capped scores, where the text and the function body hold the raw ones:
        # examples with a soft cap declare mode 1, 2 or 3, or three outputs.)
        Example(
            [_normal(1, 2, 4, 8), _normal(1, 2, 6, 8), _normal(1, 2, 6, 8), _ROW_MASKED],
            {"softcap": 2.0, "qk_matmul_output_mode": 1},
        ),
        Example([_normal(1, 2, 4, 8), _normal(1, 2, 6, 8), _normal(1, 2, 6, 8)], {"softcap": 0.5}, outputs=3),
        # The external cache: valid keys per batch, causal from offset nonpad - q (batch 1's is
        # -1: its first query attends nothing).
        Example(
            [
                _normal(2, 2, 3, 4),
                _normal(2, 2, 5, 4),
                _normal(2, 2, 5, 4),
                None,
                None,
                None,
                np.array([4, 2], np.int64),
            ],
            {"is_causal": 1, "qk_matmul_output_mode": 3},
        ),
        # No valid key in batch 0; an additive mask as long as the valid keys (shorter than K).
        Example(
            [
                _normal(2, 2, 3, 4),
                _normal(2, 2, 5, 4),
                _normal(2, 2, 5, 4),
                _normal(3, 4),
                None,
                None,
                np.array([0, 4], np.int64),
            ]
        ),
        # Version 25's windows, with the external cache and alone.
        Example(
            [
                _normal(2, 4, 3, 4),
                _normal(2, 2, 6, 4),
                _normal(2, 2, 6, 3),
                _bool(4, 3, 6),
                None,
                None,
                np.array([6, 4], np.int64),
            ],
            {"is_causal": 1, "left_window_size": 1, "qk_matmul_output_mode": 3},
        ),
        Example(
            [_normal(1, 2, 5, 4), _normal(1, 2, 5, 4), _normal(1, 2, 5, 4)],
            {"left_window_size": 1, "right_window_size": 2},
        ),
        # Softmax in double; an integer mask is added to the scores.
        Example(
            [
                _normal(1, 2, 3, 4),
                _normal(1, 2, 3, 4),
                _normal(1, 2, 3, 4),
                _rng.integers(-2, 3, (3, 3)).astype(np.int8),
            ],
            {"softmax_precision": 11, "qk_matmul_output_mode": 3},
        ),
        # Half precision (no gradient check in half precision).
        Example(
            [
                _normal(1, 2, 3, 8, dtype=np.float16),
                _normal(1, 2, 4, 8, dtype=np.float16),
                _normal(1, 2, 4, 8, dtype=np.float16),
            ],
            {"is_causal": 1, "softmax_precision": 1},
            grad=False,
            rtol=2e-3,
            atol=2e-3,
        ),
        # `V` of another float type than `Q` (T2 beside T1): `Y` is of `Q`'s.
        Example([_normal(1, 2, 3, 4), _normal(1, 2, 5, 4), _normal(1, 2, 5, 3, dtype=np.float16)], atol=1e-3),
        # (bfloat16 is checked by onnx's node cases, with their tolerance: this table compares
        # bfloat16 bit for bit, and onnx.reference rounds every step of its softmax sum.)
    ],
    "RMSNormalization": [
        Example([_normal(2, 3, 4), _normal(4)]),
        Example([_normal(2, 3, 4), _normal(1, 4)], {"axis": 1, "epsilon": 1e-3}),
        Example([_normal(2, 5), _normal(2, 5)], {"axis": 0}),
        Example([_normal(3, 4, dtype=np.float16), _normal(4, dtype=np.float16)], grad=False, rtol=2e-3, atol=2e-3),
    ],
    "RotaryEmbedding": [
        Example([_normal(2, 3, 4, 8), _normal(10, 4), _normal(10, 4), np.array([[0, 1, 2, 3], [5, 6, 7, 9]])]),
        Example(
            [_normal(2, 3, 4, 8), _normal(10, 2), _normal(10, 2), np.array([[0, 1, 2, 3], [5, 6, 7, 9]])],
            {"interleaved": 1, "rotary_embedding_dim": 4},
        ),
        Example([_normal(2, 4, 12), _normal(2, 4, 3), _normal(2, 4, 3)], {"num_heads": 2}),
        Example([_normal(2, 4, 12), _normal(2, 4, 2), _normal(2, 4, 2)], {"num_heads": 3, "interleaved": 1}),
        # Caches of batch 1 broadcast over the batch (PyTorch's opset-23 export writes them).
        Example([_normal(2, 3, 4, 8), _normal(1, 4, 4), _normal(1, 4, 4)]),
    ],
    "TensorScatter": [
        Example([_normal(2, 3, 6, 4), _normal(2, 3, 2, 4), np.array([1, 4], np.int64)]),
        Example([_normal(2, 5, 3), _normal(2, 3, 3)]),
        Example(
            [_normal(2, 2, 5, 3), _normal(2, 2, 3, 3), np.array([3, 6], np.int64)], {"mode": "circular", "axis": 2}
        ),
        Example(
            [np.arange(12, dtype=np.int32).reshape(2, 6), -np.ones((2, 4), np.int32), np.array([2, 0], np.int64)],
            {"axis": 1},
        ),
    ],
    "CausalConvWithState": [
        Example([_normal(2, 3, 5), _normal(3, 1, 4), _normal(3), _normal(2, 3, 3)]),
        Example([_normal(2, 3, 5), _normal(3, 1, 3)], {"activation": "silu"}),
        Example([_normal(1, 2, 4), _normal(2, 1, 1), None, _normal(1, 2, 0)], {"activation": "swish"}),
        Example(
            [_normal(1, 2, 6, dtype=np.float16), _normal(2, 1, 3, dtype=np.float16)],
            {"activation": "silu"},
            grad=False,
            rtol=2e-3,
            atol=2e-3,
        ),
    ],
    "LinearAttention": [
        Example(
            [_normal(2, 3, 8), _normal(2, 3, 8), _normal(2, 3, 6)],
            {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "linear"},
        ),
        # Grouped (4 query heads over 2 states), a past state, per-head decay.
        Example(
            [_normal(2, 4, 12), _normal(2, 4, 6), _normal(2, 4, 4), _normal(2, 2, 3, 2), -np.abs(_normal(2, 4, 2))],
            {"q_num_heads": 4, "kv_num_heads": 2, "update_rule": "gated", "scale": 0.5},
        ),
        Example(
            [
                _normal(1, 3, 4),
                _normal(1, 3, 4),
                _normal(1, 3, 6),
                None,
                None,
                _rng.random((1, 3, 1)).astype(np.float32),
            ],
            {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "delta"},
        ),
        # The default rule with decay per key feature and beta per head.
        Example(
            [
                _normal(2, 3, 8),
                _normal(2, 3, 4),
                _normal(2, 3, 6),
                _normal(2, 2, 2, 3),
                -np.abs(_normal(2, 3, 4)),
                _rng.random((2, 3, 2)).astype(np.float32),
            ],
            {"q_num_heads": 4, "kv_num_heads": 2},
        ),
        Example(
            [
                _normal(1, 2, 4, dtype=np.float16),
                _normal(1, 2, 4, dtype=np.float16),
                _normal(1, 2, 4, dtype=np.float16),
                _normal(1, 1, 4, 4),
                -np.abs(_normal(1, 2, 1, dtype=np.float16)),
                _rng.random((1, 2, 1)).astype(np.float16),
            ],
            {"q_num_heads": 1, "kv_num_heads": 1},
            grad=False,
            rtol=2e-3,
            atol=2e-3,
        ),
    ],
}
