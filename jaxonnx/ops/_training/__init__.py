"""The optimizers of the ``ai.onnx.preview.training`` domain: Adagrad, Adam and Momentum."""
