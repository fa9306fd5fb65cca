"""The ai.onnx.ml domain: the operators scikit-learn models convert to (skl2onnx, onnxmltools).

Numeric ops are JAX array programs (tree ensembles descend every tree for every row at
once with gathers); ops on string tensors, maps and sequences of maps run eagerly on
Python and numpy values, since JAX holds neither strings nor dicts of strings.
"""
