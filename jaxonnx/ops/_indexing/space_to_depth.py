"""SpaceToDepth: versions 1, 13 (bfloat16) and 28 (`mode`)."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace


@register("SpaceToDepth", 28)
def space_to_depth(input, *, blocksize: int, mode: str = "DCR"):
    """Implements ONNX SpaceToDepth: moves ``blocksize`` x ``blocksize`` spatial blocks into
    channels (NCHW), the inverse of DepthToSpace in the same ``mode``.

    ``mode="DCR"`` puts the block position before the channel (``(blocksize, blocksize, C)``),
    ``"CRD"`` after it (``(C, blocksize, blocksize)``, PyTorch's ``pixel_unshuffle``).

    Args:
        input: a 4-D array ``(N, C, H, W)``; ``H`` and ``W`` divisible by ``blocksize``.
        blocksize: the block edge, >= 1.
        mode: ``"DCR"`` or ``"CRD"``.

    Returns:
        An array of shape ``(N, C * blocksize**2, H / blocksize, W / blocksize)``.

    Example:
        >>> jaxonnx.ops.space_to_depth(jnp.arange(4).reshape(1, 1, 2, 2), blocksize=2)[0, :, 0, 0]
        Array([0, 1, 2, 3], dtype=int32)
    """
    # A graph's STRING attributes arrive as bytes (onnx.helper.get_attribute_value).
    if mode not in ("DCR", "CRD"):
        raise OnnxValidationError(f"got `mode`={mode!r}; it must be DCR or CRD.")
    b = blocksize
    if input.ndim != 4 or b < 1 or input.shape[2] % b or input.shape[3] % b:
        raise OnnxValidationError(
            f"needs a 4-D `input` whose height and width divide by `blocksize` (>= 1), got shape "
            f"{tuple(input.shape)} and `blocksize`={blocksize}."
        )
    n, c, h, w = input.shape
    order = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    xp = namespace(input)
    return xp.transpose(input.reshape((n, c, h // b, b, w // b, b)), order).reshape((n, c * b * b, h // b, w // b))


@register("SpaceToDepth", 1, 13)
def _space_to_depth_1(input, *, blocksize):
    return space_to_depth(input, blocksize=blocksize, mode="DCR")


__all__ = ["space_to_depth"]
