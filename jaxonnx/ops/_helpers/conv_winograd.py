"""Winograd F(2x2, 3x3) for standard 3x3 convolutions on XLA:CPU. Registers no op.

XLA:CPU runs a standard (``group=1``) 3x3 convolution well below the rate of its own dot.
Winograd's F(2x2, 3x3) (Lavin and Gray, 2015) computes each 2x2 output tile from a 4x4 input
tile with 16 products instead of 36: the input tiles are transformed (``B^T d B``), each of
the 16 tile positions becomes one dot over channels (``(tiles, C) @ (C, M)``, channels-last,
the layout XLA:CPU's dot runs fastest), and the products are transformed back (``A^T m A``).
The transforms read and write more than the input and output, so it pays where the dots
dominate: many channels on small maps (:func:`winograd_wins`). Every coefficient is 0, +-1 or
+-1/2, so it rounds about as the direct convolution does.

Everything is plain ``jax.numpy``: autodiff, vmap and jit go through it. Weights given as a
numpy array are transformed in float64 at trace time. float16 and bfloat16 compute in
float32 and round once, as XLA:CPU's convolution does.

Why each choice, in full: the docs page ``docs/design/cpu-formulations.md``; the
measurements: ``benchmarks/cpu_formulations_results.md`` (section 6) and
``benchmarks/conv_standard_results.md``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

# F(2x2, 3x3): B^T transforms 4x4 input tiles, G the 3x3 kernel, A^T the 4x4 products back
# to 2x2 outputs. Every coefficient is 0, +-1 or +-1/2, so the transforms round no worse
# than the sums of the direct convolution.
_BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]])
_G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
_AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]])
_TILE, _OUT = 4, 2
# The 2-D transforms as matrices: G g G^T is (16, 9) (row 4 i + j, column 3 k + l) times the
# flattened kernel; B^T d B is (16, 4, 4) times the tile; A^T m A is (4, 16) times the products.
_GG = np.kron(_G, _G)
_BB = np.einsum("ia,jb->ijab", _BT, _BT).reshape(_TILE * _TILE, _TILE, _TILE)
_AA = np.kron(_AT, _AT)

# Winograd needs at least this many input and output channels: the CNN fixture's 3-8
# channels tied with XLA's convolution and compiled slower. Single convolutions and
# chains also suggested limits on size (512 channels on 7x7 at batch 1, 64 on 56x56 at batch
# 8), but those flipped between runs on the busy machine, and in ResNet-18 Winograd for
# every 3x3 stride-1 convolution beat every narrower choice at batch 1 and 8.
_MIN_CHANNELS = 64
# With XLA:CPU's convolutions on Eigen instead of YNNPACK (``jaxonnx._xla_cpu``), they run on
# every core and Winograd pays only from 256 channels: under that flag, interleaved in a
# model, ResNet-18 and a YOLOv8n-like detector ran faster with Winograd from 256 channels
# than from 64 or 128, and slower still with no Winograd at all (measured:
# benchmarks/cpu_formulations_results.md, section 6).
_MIN_CHANNELS_EIGEN = 256


def winograd_wins(x_shape, w_shape, strides, dilations, group, *, ynn=True) -> bool:
    """Whether :func:`winograd_convolve` ran faster than XLA:CPU's convolution for this shape.

    It applies to 2-D, stride-1, dilation-1, 3x3 convolutions with ``group=1`` and at least
    64 input and output channels where XLA:CPU's convolution is YNNPACK's (on one core), 256
    where it is Eigen's (on every core; see ``jaxonnx._xla_cpu``). The measurements:
    ``benchmarks/cpu_formulations_results.md``.

    Args:
        x_shape: the input's shape ``(N, C, H, W)``.
        w_shape: the weights' shape ``(M, C, kh, kw)``.
        strides: the stride per spatial axis.
        dilations: the dilation per spatial axis.
        group: the number of channel groups.
        ynn: whether XLA:CPU runs this process's convolutions through YNNPACK.

    Returns:
        True where Winograd is the faster formulation on CPU.

    Example:
        >>> winograd_wins((1, 256, 14, 14), (256, 256, 3, 3), (1, 1), (1, 1), 1)
        True
        >>> winograd_wins((1, 32, 56, 56), (64, 32, 3, 3), (1, 1), (1, 1), 1)
        False
        >>> winograd_wins((1, 128, 28, 28), (128, 128, 3, 3), (1, 1), (1, 1), 1, ynn=False)
        False
    """
    return (
        len(x_shape) == 4
        and group == 1
        and tuple(w_shape[2:]) == (3, 3)
        and tuple(strides) == (1, 1)
        and tuple(dilations) == (1, 1)
        and min(w_shape[0], w_shape[1]) >= (_MIN_CHANNELS if ynn else _MIN_CHANNELS_EIGEN)
    )


def winograd_convolve(x, w, padding, *, channels_last=False):
    """A stride-1, dilation-1, 3x3, ``group=1`` 2-D convolution by Winograd's F(2x2, 3x3).

    Equals ``lax.conv_general_dilated(x, w, (1, 1), padding)`` up to float32 reassociation.

    Args:
        x: input of shape ``(N, C, H, W)``, or ``(N, H, W, C)`` with ``channels_last``.
        w: weights of shape ``(M, C, 3, 3)``; a numpy array is transformed at trace time.
        padding: ``((top, bottom), (left, right))``; negative amounts crop.
        channels_last: ``x`` and the result have their channels last.

    Returns:
        An array of shape ``(N, M, H + top + bottom - 2, W + left + right - 2)`` (or
        ``(N, H', W', M)`` with ``channels_last``) and the dtype of ``x``.

    Example:
        >>> x = jnp.arange(16.0).reshape(1, 1, 4, 4)
        >>> winograd_convolve(x, jnp.ones((1, 1, 3, 3)), ((0, 0), (0, 0)))[0, 0]
        Array([[45., 54.],
               [81., 90.]], dtype=float32)
    """
    if not channels_last:
        # The dots run channels-last (see the module docstring): the transposes are only
        # here when the neighbours are channels-first.
        return winograd_convolve(x.transpose(0, 2, 3, 1), w, padding, channels_last=True).transpose(0, 3, 1, 2)
    n, h, wd, c = x.shape
    out_channels = w.shape[0]
    if w.shape[1:] != (c, 3, 3):
        raise ValueError(
            f"winograd_convolve needs weights of shape (M, {c}, 3, 3) for an input of shape {x.shape}; got {w.shape}."
        )
    (top, bottom), (left, right) = padding
    out_h, out_w = h + top + bottom - 2, wd + left + right - 2
    if out_h < 1 or out_w < 1:
        raise ValueError(
            f"winograd_convolve: a 3x3 window does not fit an input of shape {x.shape} padded by {padding}."
        )
    dtype = x.dtype
    compute = jnp.float32 if jnp.finfo(dtype).bits < 32 else dtype
    x = x.astype(compute)
    u = _transform_weights(w, compute)
    tiles_h, tiles_w = -(-out_h // _OUT), -(-out_w // _OUT)
    # Pad (or crop) to whole tiles: 2 * tiles + 2 rows and columns. The extra bottom and
    # right zeros only feed outputs that are cropped off at the end.
    pad_h, pad_w = _OUT * tiles_h + 2, _OUT * tiles_w + 2
    # Channels-last: the 16 dots read (tiles, C) rows and write (tiles, M) rows, the layout
    # XLA:CPU's dot runs fastest (see the module docstring).
    x = jax.lax.pad(
        x, jnp.zeros((), x.dtype), [(0, 0, 0), (top, pad_h - h - top, 0), (left, pad_w - wd - left, 0), (0, 0, 0)]
    )
    v = _transform_input(x, tiles_h, tiles_w)  # (16, N, th, tw, C)
    products = jnp.einsum("knhwc,kcm->knhwm", v, u)
    y = _transform_output(products)  # (N, th, 2, tw, 2, M)
    y = y.reshape(n, _OUT * tiles_h, _OUT * tiles_w, out_channels)[:, :out_h, :out_w]
    return y.astype(dtype)


def _combine(coefficients, terms):
    """``sum(c * t)`` over the nonzero coefficients, adding or subtracting where ``c`` is +-1."""
    total = None
    for c, t in zip(coefficients, terms):
        if c == 0:
            continue
        term = t if c == 1 else -t if c == -1 else t * float(c)  # a weak scalar keeps t's dtype
        total = term if total is None else total + term
    return total


def _transform_weights(w, dtype):
    """``G g G^T`` for every (output, input) channel pair, as ``(16, C, M)`` of ``dtype``."""
    m, c = w.shape[:2]
    if isinstance(w, np.ndarray):
        return np.einsum("mct,kt->kcm", w.reshape(m, c, 9).astype(np.float64), _GG).astype(dtype)
    # One dot, not 16 sums of taps: XLA folds it quickly for constant weights (an ONNX
    # initializer inside jax.jit), where folding the sums was slow (measured:
    # benchmarks/cpu_formulations_results.md).
    gg = _GG.astype(dtype)
    return jnp.einsum("mct,kt->kcm", w.reshape(m, c, 9).astype(dtype), gg, precision=jax.lax.Precision.HIGHEST)


def _transform_input(x, tiles_h, tiles_w):
    """``B^T d B`` of every 4x4 input tile (stride 2) of the padded channels-last ``x``, as
    ``(16, N, th, tw, C)``: tile position first."""
    n, _, _, c = x.shape
    # Tiles overlap by 2: rows 0-1 of tile t are block t and rows 2-3 block t + 1 of the
    # input cut into 2x2 blocks (a reshape and plain slices, faster than stride-2 slices).
    # All 16 positions come out of one sum over the 16 tile elements, each times its column
    # of B^T (x) B^T: one fusion writing the stacked array, where 16 separate sums made 16
    # fusions (and 16 dots, or a stacking copy) and compiled slower (measured:
    # benchmarks/cpu_formulations_results.md).
    blocks = x.reshape(n, tiles_h + 1, _OUT, tiles_w + 1, _OUT, c)
    total = None
    for i in range(_TILE):
        for j in range(_TILE):
            element = blocks[:, i // 2 : i // 2 + tiles_h, i % 2, j // 2 : j // 2 + tiles_w, j % 2]
            coefficients = _BB[:, i, j].astype(x.dtype).reshape(_TILE * _TILE, 1, 1, 1, 1)
            term = element[None] * coefficients
            total = term if total is None else total + term
    return total


def _transform_output(products):
    """``A^T m A`` of every tile's 16 products ``(16, N, th, tw, M)``, interleaved into
    ``(N, th, 2, tw, 2, M)``."""
    y = [_combine(_AA[p], [products[k] for k in range(_TILE * _TILE)]) for p in range(_OUT * _OUT)]
    return jnp.stack([jnp.stack(y[p * _OUT : (p + 1) * _OUT], 3) for p in range(_OUT)], 2)


__all__ = ["winograd_convolve", "winograd_wins"]
