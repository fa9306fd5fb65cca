"""nn family (Conv, pools, normalizations, Dropout, Resize, ...): cases that cannot pass."""

_DROPOUT_RNG = (
    "training-mode Dropout with ratio > 0: the expected output and mask are the draws of "
    "numpy's RandomState(seed).uniform; the operator only says elements are dropped at random "
    "with probability `ratio`, and jaxonnx draws its mask with jax.random"
)

_ALIGN_CORNERS = (
    "Resize align_corners with a fractional scale: the expected values divide by the fractional "
    "output_width (scale * length) - 1, but the operator text divides by length_resized - 1 (the "
    "integer output length); jaxonnx gives what the text and onnxruntime 1.32 give"
)

SKIPS = {
    "test_resize_downsample_scales_cubic_align_corners": _ALIGN_CORNERS,
    "test_resize_downsample_scales_linear_align_corners": _ALIGN_CORNERS,
    "test_training_dropout": _DROPOUT_RNG,
    "test_training_dropout_default": _DROPOUT_RNG,
    "test_training_dropout_default_mask": _DROPOUT_RNG,
    "test_training_dropout_mask": _DROPOUT_RNG,
}
