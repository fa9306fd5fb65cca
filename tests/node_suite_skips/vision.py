"""vision family (NonMaxSuppression, RoiAlign, GridSample, the extra pools, ...): cases that cannot pass."""

SKIPS = {
    "test_maxunpool_export_with_output_shape": (
        "the expected output counts the flat indices in the inferred 4x4 shape and pads it to "
        "`output_shape` (5x5); the text makes `I` the indices of MaxPool's input, whose shape "
        "`output_shape` gives, so index 5 is row 1 column 0 of the 5x5 output, as onnxruntime 1.32 "
        "and PyTorch's max_unpool compute and jaxonnx gives"
    ),
}
