"""AffineGrid: version 20."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import int_list, namespace


@register("AffineGrid", 20, static=("size",))
def affine_grid(theta, size, *, align_corners=0):
    """Implements ONNX AffineGrid: the sampling grid of a batch of affine maps (for GridSample).

    The positions of an ``(H, W)`` (or ``(D, H, W)``) image, normalized to ``[-1, 1]``
    (the centres of the corner pixels with ``align_corners``, else their outer edges),
    as homogeneous ``(x, y, 1)`` (``(x, y, z, 1)``) with ``x`` along the last axis, are
    mapped by each ``theta[n]``, as PyTorch's ``affine_grid``.

    Args:
        theta: float ``(N, 2, 3)`` for 2-D or ``(N, 3, 4)`` for 3-D.
        size: static int64 ``[N, C, H, W]`` or ``[N, C, D, H, W]``.
        align_corners: whether -1 and 1 are the corner pixels' centres (1) or edges (0).

    Returns:
        ``(N, H, W, 2)`` or ``(N, D, H, W, 3)`` with the dtype of ``theta``.

    Example:
        >>> jaxonnx.ops.affine_grid(np.array([[[1.0, 0, 0], [0, 1, 0]]], np.float32), np.array([1, 1, 1, 2]))[0, 0]
        Array([[-0.5,  0. ],
               [ 0.5,  0. ]], dtype=float32)
    """
    shape = int_list(size, name="size")
    spatial = len(shape) - 2
    if spatial not in (2, 3) or min(shape) < 0:
        raise OnnxValidationError(
            f"needs `size` [N, C, H, W] or [N, C, D, H, W] of non-negative dims, got {list(shape)}."
        )
    if tuple(theta.shape) != (shape[0], spatial, spatial + 1):
        raise OnnxValidationError(
            f"needs `theta` of shape ({shape[0]}, {spatial}, {spatial + 1}) for `size`={list(shape)}, got {tuple(theta.shape)}."
        )
    xp = namespace(theta)
    axes = []
    for n in shape[2:]:  # D, H, W: exact in float64, then in theta's type
        if align_corners:
            axes.append(np.linspace(-1.0, 1.0, n) if n > 1 else np.full(n, -1.0))
        else:
            axes.append((2 * np.arange(n) + 1) / n - 1)
    mesh = np.meshgrid(*axes, indexing="ij")
    # Homogeneous positions, x (the last axis) first.
    positions = np.stack([*mesh[::-1], np.ones(shape[2:])], axis=-1).astype(theta.dtype)
    flat = positions.reshape(-1, spatial + 1)
    grid = xp.einsum("nij,pj->npi", theta, flat, **({} if xp is np else {"precision": "highest"}))
    return grid.reshape((shape[0], *shape[2:], spatial))


__all__ = ["affine_grid"]
