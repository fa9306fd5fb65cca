"""Examples of the ops onnxruntime registers in the default domain although onnx defines no
such version: SimplifiedLayerNormalization-1 (LayerNormalization-1, onnxruntime's contrib
version, runs nn.py's LayerNormalization examples against onnx.reference's).

onnx.reference has no SimplifiedLayerNormalization, so its examples carry a numpy oracle of
onnxruntime's text, in float64; tests/test_microsoft_fused_ops.py checks it against onnxruntime.
"""

import numpy as np

from tests.op_examples._example import Example

_rng = np.random.default_rng(33)


def _normal(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _simplified(x, scale, axis=-1, epsilon=1e-5, stash_type=1):
    axis = axis % x.ndim
    axes = tuple(range(axis, x.ndim))
    v = x.astype(np.float64)
    inv = 1 / np.sqrt((v * v).mean(axis=axes, keepdims=True) + epsilon)
    return [(v * inv * scale).astype(scale.dtype), inv.astype(np.float32 if stash_type == 1 else np.float64)]


EXAMPLES = {
    "SimplifiedLayerNormalization": [
        # With stash_type 1 `inv_std_var` is float32 even for double data, too coarse for the
        # float64 finite differences of the gradient check; the stash_type 11 examples check them.
        Example([_normal(2, 3, 8), _normal(8)], grad=False, reference=_simplified),
        Example(
            [_normal(2, 3, 4), _normal(3, 4)], {"axis": 1, "epsilon": 1e-3, "stash_type": 11}, reference=_simplified
        ),
        Example([_normal(2, 3, 4), _normal(1, 4)], {"axis": -2, "stash_type": 11}, reference=_simplified),
        Example([_normal(3, 8, dtype=np.float16), _normal(8)], grad=False, rtol=2e-3, atol=2e-3, reference=_simplified),
        Example([_normal(3, 8), _normal(8)], {"stash_type": 11}, reference=_simplified),
    ],
}
