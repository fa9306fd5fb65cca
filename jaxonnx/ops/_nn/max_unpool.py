"""MaxUnpool: versions 9, 11 and 22 (11 only rewords the default of `strides`, 22 adds bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import int_list, is_traced
from jaxonnx.ops._helpers.window import window_attributes


@register("MaxUnpool", 9, 11, 22, static=("output_shape",), concrete=("I",), folds=False)
def max_unpool(X, I, output_shape=None, *, kernel_shape=None, pads=None, strides=None, checks=None):  # noqa: E741 (ONNX's input names)
    """Implements ONNX MaxUnpool: puts each value of ``X`` at its flat index ``I`` in zeros.

    The output has shape ``(N, C, (D - 1) * stride - pad_begin - pad_end + kernel, ...)``,
    or ``output_shape`` when given. ``I`` holds flat indices into the whole output (as
    MaxPool's ``Indices``: ``n * C * size + c * size + spatial index``), counted in the
    output's own shape: the indices a MaxPool of an input of ``output_shape`` gives put
    its maxima back in place (as onnxruntime and PyTorch's ``max_unpool`` read them).
    When two values share an index, one of them is kept.

    Args:
        X: the values, of shape ``(N, C, D1, ..., Dn)``.
        I: int64 flat indices, of the shape of ``X``. A known index outside the output
            raises; under ``jax.jit`` its value is dropped.
        output_shape: optional static output shape (rank of ``X``).
        kernel_shape: the pooling window per spatial axis (required).
        pads, strides: the pooling's padding and steps, as in MaxPool.
        checks: where the check of a traced ``I`` goes, to be made after the computation
            (an eager call's compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        An array of the output shape and the dtype of ``X``, zero where no index points.

    Example:
        >>> jaxonnx.ops.max_unpool(jnp.array([[[2.0, 5.0]]]), jnp.array([[[1, 2]]]), kernel_shape=[2], strides=[2])
        Array([[[0., 2., 5., 0.]]], dtype=float32)
    """
    if kernel_shape is None:
        raise OnnxValidationError("needs `kernel_shape` (the pooling window per spatial axis), got none.")
    kernel, strides, _, padding, _ = window_attributes(X.shape, kernel_shape, strides, None, pads, "NOTSET")
    if tuple(I.shape) != tuple(X.shape):
        raise OnnxValidationError(f"needs `I` of the shape of `X` {tuple(X.shape)}, got {tuple(I.shape)}.")
    inferred = tuple(X.shape[:2]) + tuple(
        (n - 1) * s - (low + high) + k for n, s, (low, high), k in zip(X.shape[2:], strides, padding, kernel)
    )
    if output_shape is None:
        shape = inferred
    else:
        shape = int_list(output_shape, name="output_shape")
        if len(shape) != X.ndim or shape[:2] != tuple(X.shape[:2]) or min(shape) < 0:
            raise OnnxValidationError(
                f"got `output_shape`={list(shape)} for `X` of shape {tuple(X.shape)}; it needs {X.ndim} "
                f"non-negative dims starting with {list(X.shape[:2])}."
            )
    if min(inferred) < 0:
        raise OnnxValidationError(
            f"got a negative output shape {list(inferred)} from `X` of shape {tuple(X.shape)} and the pooling attributes."
        )
    total = int(np.prod(shape))
    message = (
        f"got `I` with indices in [{{low}}, {{high}}] for an output of shape {list(shape)} ({total} elements); "
        f"every index must be in [0, {total - 1}]."
    )
    if not is_traced(I):
        indices = np.asarray(I)
        if indices.size and (indices.min() < 0 or indices.max() >= total):
            raise OnnxValidationError(message.format(low=int(indices.min()), high=int(indices.max())))
    elif checks is not None and I.size:  # an empty one has nothing to check (nor a min)
        checks.fail_where((I < 0) | (I >= total), I, message, low=I.min(), high=I.max())
    # A traced out-of-range index is dropped (its value goes nowhere).
    flat = jnp.zeros((total,), X.dtype).at[jnp.asarray(I).reshape(-1)].set(X.reshape(-1), mode="drop")
    return flat.reshape(shape)


__all__ = ["max_unpool"]
