"""DepthToSpace: versions 1, 11 (`mode`), 13 (bfloat16) and 28."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace

MODES = ("DCR", "CRD")


@register("DepthToSpace", 11, 13, 28)
def depth_to_space(input, *, blocksize: int, mode: str = "DCR"):
    """Implements ONNX DepthToSpace: moves blocks of channels into ``blocksize`` x ``blocksize``
    spatial blocks (NCHW), the inverse of SpaceToDepth.

    ``mode="DCR"`` (depth-column-row) splits the channels as ``(blocksize, blocksize, C')``,
    ``"CRD"`` (column-row-depth, PyTorch's ``pixel_shuffle``) as ``(C', blocksize, blocksize)``.

    Args:
        input: a 4-D array ``(N, C, H, W)``; ``C`` divisible by ``blocksize ** 2``.
        blocksize: the block edge, >= 1.
        mode: ``"DCR"`` or ``"CRD"``.

    Returns:
        An array of shape ``(N, C / blocksize**2, H * blocksize, W * blocksize)``.

    Example:
        >>> jaxonnx.ops.depth_to_space(jnp.arange(4).reshape(1, 4, 1, 1), blocksize=2)[0, 0]
        Array([[0, 1],
               [2, 3]], dtype=int32)
    """
    # A graph's STRING attributes arrive as bytes (onnx.helper.get_attribute_value).
    if mode not in MODES:
        raise OnnxValidationError(f"got `mode`={mode!r}; it must be DCR or CRD.")
    if input.ndim != 4 or blocksize < 1 or input.shape[1] % (blocksize * blocksize):
        raise OnnxValidationError(
            f"needs a 4-D `input` whose channels divide by `blocksize`**2 (blocksize >= 1), got "
            f"shape {tuple(input.shape)} and `blocksize`={blocksize}."
        )
    n, c, h, w = input.shape
    b = blocksize
    depth = c // (b * b)
    if mode == "DCR":
        blocks, order = (n, b, b, depth, h, w), (0, 3, 4, 1, 5, 2)
    else:
        blocks, order = (n, depth, b, b, h, w), (0, 1, 4, 2, 5, 3)
    xp = namespace(input)
    return xp.transpose(input.reshape(blocks), order).reshape((n, depth, h * b, w * b))


@register("DepthToSpace", 1)
def _depth_to_space_1(input, *, blocksize):
    return depth_to_space(input, blocksize=blocksize, mode="DCR")


__all__ = ["depth_to_space"]
