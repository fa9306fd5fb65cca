"""The ops of the ``ai.onnx.preview.training`` domain: the optimizers Adagrad, Adam and
Momentum, and Gradient."""
