"""nn family (Conv, pools, normalizations, Dropout, Resize, ...): cases that cannot pass."""

_DROPOUT_RNG = (
    "training-mode Dropout with ratio > 0: the expected output and mask are the draws of "
    "numpy's RandomState(seed).uniform; the operator only says elements are dropped at random "
    "with probability `ratio`, and jaxonnx draws its mask with jax.random"
)

SKIPS = {
    "test_training_dropout": _DROPOUT_RNG,
    "test_training_dropout_default": _DROPOUT_RNG,
    "test_training_dropout_default_mask": _DROPOUT_RNG,
    "test_training_dropout_mask": _DROPOUT_RNG,
}
