"""Col2Im: version 18."""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import int_list


@register("Col2Im", 18, static=("image_shape", "block_shape"), folds=False)
def col2im(input, image_shape, block_shape, *, dilations=None, pads=None, strides=None):
    """Implements ONNX Col2Im: sums column blocks back into an image (PyTorch's ``fold``).

    Column ``(c, k)`` of block position ``l`` adds into pixel
    ``l * strides - pads_begin + k * dilations`` of channel ``c`` (blocks in row-major
    order over the block grid, kernel offsets ``k`` row-major within ``block_shape``);
    pixels in the padding are dropped.

    Args:
        input: ``(N, C * prod(block_shape), L)``, ``L`` the number of block positions.
        image_shape: static int64 spatial shape of the image.
        block_shape: static int64 shape of a block.
        dilations, pads, strides: as in Conv (``pads`` all begins, then all ends).

    Returns:
        ``(N, C, *image_shape)`` with the dtype of ``input``.

    Example:
        >>> jaxonnx.ops.col2im(jnp.ones((1, 2, 2)), np.array([3]), np.array([2]))
        Array([[[1., 2., 1.]]], dtype=float32)
    """
    image = int_list(image_shape, name="image_shape")
    block = int_list(block_shape, name="block_shape")
    spatial = len(image)
    if spatial < 1 or len(block) != spatial or min(image) < 1 or min(block) < 1:
        raise OnnxValidationError(
            f"needs positive `image_shape` and `block_shape` of one length, got {list(image)} and {list(block)}."
        )
    values = {}
    for name, value, count, default in (
        ("dilations", dilations, spatial, 1),
        ("strides", strides, spatial, 1),
        ("pads", pads, 2 * spatial, 0),
    ):
        value = (default,) * count if value is None else tuple(int(v) for v in value)
        if len(value) != count or min(value) < default:
            raise OnnxValidationError(f"got `{name}`={list(value)}; it needs {count} values of at least {default}.")
        values[name] = value
    dilations, strides, pads = values["dilations"], values["strides"], values["pads"]
    padded = [n + pads[i] + pads[spatial + i] for i, n in enumerate(image)]
    blocks = [(p - d * (k - 1) - 1) // s + 1 for p, d, k, s in zip(padded, dilations, block, strides)]
    kernel_size = int(np.prod(block))
    if input.ndim != 3 or input.shape[1] % kernel_size or min(blocks) < 1 or input.shape[2] != int(np.prod(blocks)):
        raise OnnxValidationError(
            f"needs `input` of shape (N, C * {kernel_size}, {int(np.prod(blocks))}) for `image_shape`={list(image)}, "
            f"`block_shape`={list(block)} and the attributes ({'x'.join(map(str, blocks))} block positions), got {tuple(input.shape)}."
        )
    batch, channels = input.shape[0], input.shape[1] // kernel_size
    # The flat padded-image position of every (kernel offset, block position), row-major.
    positions = np.zeros((kernel_size, int(np.prod(blocks))), np.int64)
    for k, offset in enumerate(itertools.product(*(range(b) for b in block))):
        grid = np.meshgrid(
            *(np.arange(n) * s + o * d for n, s, o, d in zip(blocks, strides, offset, dilations)), indexing="ij"
        )
        positions[k] = np.ravel_multi_index([g.ravel() for g in grid], padded)
    columns = input.reshape(batch, channels, kernel_size * input.shape[2])
    summed = jnp.zeros((batch, channels, int(np.prod(padded))), input.dtype).at[:, :, positions.ravel()].add(columns)
    summed = summed.reshape((batch, channels, *padded))
    return summed[(slice(None), slice(None), *(slice(pads[i], pads[i] + n) for i, n in enumerate(image)))]


__all__ = ["col2im"]
