"""Grouped, depthwise and stem convolutions as XLA:CPU runs them fast: shifted multiply-adds.
Registers no op.

XLA:CPU's convolution (a library call behind layout transposes, on one core where it is
YNNPACK's) is slow for depthwise and narrow grouped convolutions (JAX issues #23713 and
#12868). On CPU, :func:`cpu_convolve` writes such a convolution, and a stem over the image's
few colour channels, as a sum over kernel taps of a strided slice of the padded input times a
broadcast weight: one elementwise loop that XLA fuses and runs on every core, channels-last,
into a few partial sums. 3x3 convolutions with many channels run as Winograd's F(2x2, 3x3)
(``conv_winograd``), 1x1 ones and patch embeddings as one dot, the rest as XLA's convolution;
which ones depends on whether XLA:CPU's convolution is YNNPACK's (``jaxonnx._xla_cpu``). GPUs
and TPUs keep XLA's convolution: the choice is made per platform at lowering time. The sums
have their own derivatives (custom JVPs) so that a gradient's program stays small; float16 and
bfloat16 compute in float32 and round once.

Why each choice, in full: the docs page ``docs/design/cpu-formulations.md``; the
measurements: ``benchmarks/cpu_formulations_results.md``.
"""

from __future__ import annotations

import itertools
import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from jaxonnx._platform import platform_dependent
from jaxonnx._xla_cpu import ynn_convolutions
from jaxonnx.ops._helpers.common import is_traced
from jaxonnx.ops._helpers.conv_winograd import winograd_convolve, winograd_wins
from jaxonnx.ops._helpers.window import onnx_shape

# The thresholds below were measured (benchmarks/cpu_formulations_results.md, section 5).
# One term per (kernel tap, input channel of a group). A depthwise 9x9 kernel (81 terms)
# still ran far faster than XLA's convolution alone; past this the fused loop compiles slowly
# and XLA's convolution is used.
_MAX_TERMS = 160
# At most this many input channels per group are a sum. On the 2-core AVX2 machine XLA's
# grouped convolution beat the sum from 8 on (ResNeXt-50 in a model). On the AMD Zen 5 with
# 512-bit vectors the sum wins at 8, alone and in a model (RegNetY-400MF, ResNeXt-50). At 16
# per group the sum compiled to a loop slower than XLA's convolution (RegNetX-400MF), so 16
# keep XLA's.
_MAX_GROUP_CHANNELS = 8

# A standard convolution (``group=1``) over at most this many input channels, onto at least
# _MIN_STEM_OUTPUTS, with at most _MAX_STEM_TERMS terms, is a sum too: a network's stem on
# the image's 3 colour channels. XLA's (YNNPACK's) convolution runs on one core, the fused
# sum on every core: the sum was faster alone and in MobileNetV3 and EfficientNet-B0.
# ResNet-18's 7x7 stem (147 terms) ran slower as a sum, and so did a stem onto 4 channels
# (half a vector wide channels-last) at batch 8: both keep XLA's convolution. Only 2-D 3x3
# stems were timed; 1-D and 3-D ones are taken by the same counts.
_MAX_STEM_CHANNELS = 4
_MIN_STEM_OUTPUTS = 8
_MAX_STEM_TERMS = 36

# Independent partial sums the terms are spread over (round robin), added pairwise at the
# end: one chain of 25 dependent adds per output vector left the loop waiting on the add
# latency; 4 ran MobileNetV3 and EfficientNet faster than 1 (2 and 8: no better).
_PARTIAL_SUMS = 4


def convolve(x, w, strides, padding, dilations, group, *, channels_last=False):
    """``lax.conv_general_dilated(x, w, strides, padding, rhs_dilation=dilations,
    feature_group_count=group)`` in ONNX's layouts (``(N, C, D...)``, ``(M, C / group, k...)``),
    with static geometry and explicit ``(low, high)`` padding per spatial axis;
    ``channels_last``: ``x`` and the result are ``(N, D..., C)``.

    On CPU it runs as :func:`cpu_convolve`; elsewhere as XLA's convolution."""
    strides, dilations = tuple(strides), tuple(dilations)
    padding = tuple(tuple(p) for p in padding)
    geometry = {
        "strides": strides,
        "padding": padding,
        "dilations": dilations,
        "group": group,
        "channels_last": channels_last,
    }
    if _cpu_formulation(onnx_shape(x.shape, channels_last), w.shape, strides, padding, dilations, group) is None:
        return xla_convolve(x, w, **geometry)
    if not is_traced(w):
        # Weights known at trace time (an initializer under jax.jit) stay numpy, out of the
        # branches' operands: Winograd then transforms them once in numpy, where XLA's
        # constant folding of the same transform was slow to compile (measured:
        # benchmarks/cpu_formulations_results.md).
        w = np.asarray(w)
        return platform_dependent(
            x, cpu=partial(cpu_convolve, w=w, **geometry), default=partial(xla_convolve, w=w, **geometry)
        )
    return platform_dependent(x, w, cpu=partial(cpu_convolve, **geometry), default=partial(xla_convolve, **geometry))


def _cpu_formulation(x_shape, w_shape, strides, padding, dilations, group, *, ynn=None) -> str | None:
    """Which rewrite the CPU runs for a convolution of ONNX shapes ``x_shape`` and
    ``w_shape``: "winograd", "dot" (1x1), "sums" (shifted multiply-adds), or None for XLA's
    convolution. ``ynn``: whether XLA:CPU's convolution is YNNPACK's (one core) rather than
    Eigen's (every core); None reads it from this process's flags (``jaxonnx._xla_cpu``)."""
    ynn = ynn_convolutions() if ynn is None else ynn
    if winograd_wins(x_shape, w_shape, strides, dilations, group, ynn=ynn):
        return "winograd"
    # Eigen's 1x1 convolution beat YNNPACK's dot (which runs with Eigen's threads contending
    # under that flag) in MobileNetV3-large, EfficientNet-B0 and the OCR-like detector
    # (measured: benchmarks/cpu_formulations_results.md).
    if pointwise(w_shape, padding, group) and ynn:
        return "dot"
    if patches(w_shape, strides, padding, dilations, group):
        return "patches"
    if multiply_adds(w_shape, group):
        return "sums"
    return None


def pointwise(w_shape, padding, group) -> bool:
    """Whether the CPU runs a convolution as one dot over channels: a 1x1 kernel, no
    padding, ``group=1`` (any stride: the input is sliced first)."""
    return group == 1 and all(k == 1 for k in w_shape[2:]) and all(p == (0, 0) for p in padding)


def patches(w_shape, strides, padding, dilations, group) -> bool:
    """Whether the CPU runs a convolution as one dot over non-overlapping patches: a kernel
    larger than 1x1 that moves by its own size (a ViT's or ConvNeXt's patch embedding), no
    padding or dilation, ``group=1``. The patches are a reshape of the input, so the dot
    reads it once: the ViT fixture ran faster with this dot for its 16x16 patch embedding
    than with Eigen's convolution (measured: ``benchmarks/cpu_formulations_results.md``)."""
    kernel = tuple(w_shape[2:])
    return (
        group == 1
        and math.prod(kernel) > 1
        and tuple(strides) == kernel
        and all(r == 1 for r in dilations)
        and all(p == (0, 0) for p in padding)
    )


def multiply_adds(w_shape, group) -> bool:
    """Whether the CPU runs a convolution with weights of shape ``w_shape`` as shifted
    multiply-adds: grouped, at most ``_MAX_GROUP_CHANNELS`` input channels per group and at
    most ``_MAX_TERMS`` (tap, group input channel) terms; or a stem (``group=1``, at most
    ``_MAX_STEM_CHANNELS`` input channels, at least ``_MIN_STEM_OUTPUTS`` output channels,
    at most ``_MAX_STEM_TERMS`` terms)."""
    terms = w_shape[1] * math.prod(w_shape[2:])
    if group == 1:
        return w_shape[1] <= _MAX_STEM_CHANNELS and w_shape[0] >= _MIN_STEM_OUTPUTS and terms <= _MAX_STEM_TERMS
    return w_shape[1] <= _MAX_GROUP_CHANNELS and terms <= _MAX_TERMS


def xla_convolve(x, w, *, strides, padding, dilations, group, channels_last=False):
    """XLA's convolution (what every platform but the CPU runs)."""
    w = jnp.asarray(w, x.dtype) if isinstance(w, np.ndarray) else w
    rank = x.ndim
    if channels_last:  # (N, D..., C) in and out, weights as ONNX's (M, C / group, k...)
        last = (0, rank - 1, *range(1, rank - 1))
        numbers = jax.lax.ConvDimensionNumbers(lhs_spec=last, rhs_spec=tuple(range(rank)), out_spec=last)
    else:
        numbers = None
    return jax.lax.conv_general_dilated(
        x, w, strides, padding, rhs_dilation=dilations, feature_group_count=group, dimension_numbers=numbers
    )


def cpu_convolve(x, w, *, strides, padding, dilations, group, channels_last=False, ynn=None):
    """The convolution as XLA:CPU runs it fastest: shifted multiply-adds for depthwise and
    narrow grouped convolutions and for stems over a few input channels, Winograd's
    F(2x2, 3x3) for 3x3 ones with 64 or more channels (256 with Eigen's convolutions;
    ``ops/_helpers/conv_winograd.py``), one dot for 1x1 ones (with YNNPACK's convolutions),
    XLA's convolution for the others (see the module docstring and
    ``docs/design/cpu-formulations.md``).
    ``channels_last``: ``x`` and the result are ``(N, D..., C)``; ``ynn``: as for
    :func:`_cpu_formulation`."""
    formulation = _cpu_formulation(
        onnx_shape(x.shape, channels_last), w.shape, strides, padding, dilations, group, ynn=ynn
    )
    if formulation == "winograd":
        return winograd_convolve(x, w, padding, channels_last=channels_last)
    if formulation == "dot":
        return _pointwise(x, w, strides, channels_last)
    if formulation == "patches":
        return _patches(x, w, channels_last)
    if formulation is None:
        return xla_convolve(
            x, w, strides=strides, padding=padding, dilations=dilations, group=group, channels_last=channels_last
        )
    n, spatial = x.shape[0], onnx_shape(x.shape, channels_last)[2:]
    out_channels, kernel = w.shape[0], w.shape[2:]
    sizes = [
        (d + lo + hi - (k - 1) * r - 1) // s + 1
        for d, (lo, hi), k, s, r in zip(spatial, padding, kernel, strides, dilations)
    ]
    dtype = x.dtype
    if jnp.issubdtype(dtype, jnp.floating) and jnp.finfo(dtype).bits < 32:
        x, w = x.astype(jnp.float32), w.astype(jnp.float32)
    # The sums' derivatives (custom JVPs) keep the input's type: weights of another type
    # (ONNX's Conv takes one type for both) compute in the input's.
    w = np.asarray(w, x.dtype) if isinstance(w, np.ndarray) else w.astype(x.dtype)
    # Taps whose every window position falls in the zero padding add nothing: leave them
    # out (a 5x5 depthwise kernel on a 1x1 map keeps 1 tap of 25) and pad only what the
    # kept taps read; a negative amount crops input the window never reaches.
    first, last = [], []
    for d, (lo, _), k, s, r, size in zip(spatial, padding, kernel, strides, dilations, sizes):
        reach = [t for t in range(k) if t * r - lo < d and t * r - lo + (size - 1) * s >= 0]
        if not reach:  # every window reads only padding
            return jnp.zeros((n, *sizes, out_channels) if channels_last else (n, out_channels, *sizes), dtype)
        first.append(reach[0])
        last.append(reach[-1])
    w = w[(slice(None), slice(None)) + tuple(slice(a, b + 1) for a, b in zip(first, last))]
    kernel = w.shape[2:]
    pads = [(0, 0, 0)]
    for d, (lo, _), a, k, s, r, size in zip(spatial, padding, first, kernel, strides, dilations, sizes):
        low = lo - a * r
        pads.append((low, (size - 1) * s + (k - 1) * r + 1 - d - low, 0))
    taps = list(itertools.product(*map(range, kernel)))
    if group == 1:
        static = (tuple(taps), tuple(pads), tuple(strides), tuple(dilations), tuple(sizes))
        y = _stem_sum(x if not channels_last else jnp.moveaxis(x, -1, 1), w, *static)
        return (y if channels_last else jnp.moveaxis(y, -1, 1)).astype(dtype)
    # Channels-last (why: docs/design/cpu-formulations.md): the channel axis last.
    x = jax.lax.pad(x if channels_last else jnp.moveaxis(x, 1, -1), jnp.zeros((), x.dtype), pads + [(0, 0, 0)])
    # Without the barrier XLA reads a tap that lies inside the unpadded input straight from
    # ``x`` (channels first), through the transpose: one load per lane.
    x = jax.lax.optimization_barrier(x)
    y = _grouped_sum(x, w, tuple(taps), tuple(strides), tuple(dilations), tuple(sizes), group)
    return (y if channels_last else jnp.moveaxis(y, -1, 1)).astype(dtype)


@partial(jax.custom_jvp, nondiff_argnums=(2, 3, 4, 5, 6))
def _grouped_sum(x, w, taps, strides, dilations, sizes, group):
    """:func:`_multiply_adds` of ``x`` (padded, channels-last) shifted to each tap."""
    return _multiply_adds([_shift(x, tap, strides, dilations, sizes) for tap in taps], w, group, sizes)


@partial(_grouped_sum.defjvp, symbolic_zeros=True)
def _grouped_sum_jvp(taps, strides, dilations, sizes, group, primals, tangents):
    """The grouped sum's value and its weights' tangent as contractions, its input's tangent
    as the sum (see :func:`_stem_sum_jvp`; MobileNetV3-small's gradient in
    ``benchmarks/conv_gradients_results.md``)."""
    x, w = primals
    dx, dw = tangents
    out_channels, group_channels = w.shape[:2]

    def stacked(x):  # (N, O..., G, C / G, taps)
        shifted = jnp.stack([_shift(x, tap, strides, dilations, sizes) for tap in taps], axis=-1)
        return shifted.reshape(*shifted.shape[:-2], group, group_channels, len(taps))

    def contracted(x, w):
        w = w.reshape(group, out_channels // group, group_channels, len(taps))
        y = jnp.einsum("...gct,gjct->...gj", stacked(x), w)
        return y.reshape(*y.shape[:-2], out_channels)

    y = contracted(x, w)
    dy = jnp.zeros_like(y)
    if not isinstance(dx, SymbolicZero):
        dy = dy + _grouped_sum(dx, w, taps, strides, dilations, sizes, group)
    if not isinstance(dw, SymbolicZero):
        dy = dy + contracted(x, dw)
    return y, dy


def _shifted_planes(x, taps, pads, strides, dilations, sizes):
    """Each channel's plane of ``x`` (channels-first, unpadded), padded and shifted to each
    tap, in :func:`_stem_sum`'s term order (tap, then channel): ``(N, O...)`` each."""
    n, channels = x.shape[:2]
    x = jax.lax.pad(x, jnp.zeros((), x.dtype), [(0, 0, 0), (0, 0, 0)] + list(pads[1:]))
    for tap in taps:
        start = [k * r for k, r in zip(tap, dilations)]
        limit = [b + (size - 1) * s + 1 for b, size, s in zip(start, sizes, strides)]
        for c in range(channels):
            yield jax.lax.slice(x, [0, c, *start], [n, c + 1, *limit], (1, 1, *strides)).reshape(n, *sizes)


@partial(jax.custom_jvp, nondiff_argnums=(2, 3, 4, 5, 6))
def _stem_sum(x, w, taps, pads, strides, dilations, sizes):
    """A stem's sum (``group=1``, a few input channels) read from ``x`` channels-first
    ``(N, C, D...)``: each term is one channel's plane, shifted to a tap, times that tap's
    weights over the output channels. Returns ``(N, O..., M)``.

    An image comes channels-first, and a plane of it is contiguous, so the input is padded
    in place rather than first moved channels-last: with the channel axis last (3 wide) the
    copy and the loop that reads it ran slower (measured on MobileNetV3's stem:
    ``benchmarks/cpu_formulations_results.md``). A channels-last input (the layout pass
    moves the image so) is moved back, which XLA cancels against that move. The terms are
    those of :func:`_multiply_adds` in its order (tap, then channel), so the sum is the same.
    """
    channels = x.shape[1]
    ones = (1,) * (1 + len(sizes))
    w = w.reshape(w.shape[0], channels, -1)
    planes = _shifted_planes(x, taps, pads, strides, dilations, sizes)
    terms = itertools.product(range(len(taps)), range(channels))
    return _sum([plane[..., None] * w[:, c, t].reshape(*ones, -1) for (t, c), plane in zip(terms, planes)])


@partial(_stem_sum.defjvp, symbolic_zeros=True)
def _stem_sum_jvp(taps, pads, strides, dilations, sizes, primals, tangents):
    """The stem's value and its weights' tangent as dots of the stacked planes, its input's
    tangent as the sum (linear in ``x``).

    Differentiated as the sum, the weights' gradient is one reduction per weight, and XLA fuses
    an elementwise producer into each of its consumers: the sum, and what follows it up to
    the cotangent (a normalization, a max pool's selection), was computed again in each
    reduction. With the dots, which read their operands from memory, the test fixtures'
    two-convolution CNN's gradient program is much smaller and compiles much faster
    (measured: ``benchmarks/conv_gradients_results.md``). Without differentiation the sum
    runs as before, fused into the next op. Under ``jax.grad`` the value comes from the dot,
    the same sum in another order. The input's tangent stays the sum: written as a dot too,
    its transpose compiled wrongly under the test suite's XLA flags (``tests/conftest.py``;
    a batch normalization's gradient off by 0.5), and as the sum it transposes to one fusion
    of pads."""
    x, w = primals
    dx, dw = tangents
    static = (taps, pads, strides, dilations, sizes)
    m, channels = w.shape[0], x.shape[1]

    def by_term(weights):  # (M, C, taps) -> (taps * C, M): the planes' order, tap then channel
        return weights.reshape(m, channels, -1).transpose(2, 1, 0).reshape(-1, m)

    planes = jnp.stack(list(_shifted_planes(x, *static)), axis=-1)  # (N, O..., taps * C)
    y = jnp.dot(planes, by_term(w))
    dy = jnp.zeros_like(y)
    if not isinstance(dx, SymbolicZero):
        dy = dy + _stem_sum(dx, w, *static)
    if not isinstance(dw, SymbolicZero):
        dy = dy + jnp.dot(planes, by_term(dw))
    return y, dy


def _pointwise(x, w, strides, channels_last):
    """A 1x1 convolution as one dot over channels: XLA:CPU's dot ran the 1x1 convolutions of
    MobileNetV3 faster than its (YNNPACK's) convolution (measured:
    ``benchmarks/cpu_formulations_results.md``), channels-last ``(pixels, C) @ (C, M)`` or
    channels-first ``(M, C) @ (C, pixels)``. A stride slices the input first."""
    if any(s > 1 for s in strides):
        step = (1, *strides, 1) if channels_last else (1, 1, *strides)
        x = jax.lax.slice(x, (0,) * x.ndim, x.shape, step)
    m, c = w.shape[:2]
    if isinstance(w, np.ndarray):
        w = w.reshape(m, c).astype(x.dtype)
        if channels_last:  # (C, M): the dot's right operand as it reads it, transposed in numpy
            return jnp.dot(x, np.ascontiguousarray(w.T))
    else:
        w = w.reshape(m, c)
        if channels_last:
            return jnp.dot(x, w.T)
    return jnp.einsum("mc,nc...->nm...", w, x)


def _patches(x, w, channels_last):
    """A convolution whose stride is its kernel (no padding, no dilation, ``group=1``) as one
    dot: the input cropped to whole patches, each patch flattened ``(k..., C)``, times the
    weights flattened the same way, ``(patches, k... C) @ (k... C, M)``."""
    n, c, *spatial = onnx_shape(x.shape, channels_last)
    m, kernel = w.shape[0], tuple(w.shape[2:])
    sizes = [d // k for d, k in zip(spatial, kernel)]
    rank = len(kernel)
    x = x if channels_last else jnp.moveaxis(x, 1, -1)
    x = x[(slice(None), *(slice(0, o * k) for o, k in zip(sizes, kernel)))]
    # (N, o1, k1, o2, k2, ..., C) -> (N, o1, o2, ..., k1, k2, ..., C)
    x = x.reshape((n, *itertools.chain.from_iterable(zip(sizes, kernel)), c))
    x = x.transpose((0, *range(1, 2 * rank, 2), *range(2, 2 * rank + 1, 2), 2 * rank + 1))
    x = x.reshape(n, *sizes, math.prod(kernel) * c)
    order = (*range(2, 2 + rank), 1, 0)  # (M, C, k...) -> (k..., C, M)
    if isinstance(w, np.ndarray):
        w = np.ascontiguousarray(w.transpose(order)).reshape(-1, m).astype(x.dtype)
    else:
        w = w.transpose(order).reshape(-1, m)
    y = jnp.dot(x, w)
    return y if channels_last else jnp.moveaxis(y, -1, 1)


def _shift(x, tap, strides, dilations, sizes):
    """The input each output position reads at kernel tap ``tap`` (``x`` padded and
    channels-last)."""
    start = [t * r for t, r in zip(tap, dilations)]
    limit = [t * r + (size - 1) * s + 1 for t, r, size, s in zip(tap, dilations, sizes, strides)]
    return jax.lax.slice(x, [0, *start, 0], [x.shape[0], *limit, x.shape[-1]], (1, *strides, 1))


def _sum(terms):
    """``sum(terms)`` as ``_PARTIAL_SUMS`` interleaved partial sums, then added pairwise."""
    partial = [None] * min(_PARTIAL_SUMS, len(terms))
    for i, term in enumerate(terms):
        j = i % len(partial)
        partial[j] = term if partial[j] is None else partial[j] + term
    while len(partial) > 1:
        partial = [a + b for a, b in zip(partial[::2], partial[1::2])] + partial[len(partial) - len(partial) % 2 :]
    return partial[0]


def _multiply_adds(shifted, w, group, sizes):
    """Sum over taps and a group's input channels of a channels-last shifted input
    ``(N, O..., C)`` times its weight, broadcast over the group's output channels: one
    elementwise loop XLA fuses. Returns ``(N, O..., M)``."""
    n, out_channels, group_channels = shifted[0].shape[0], w.shape[0], w.shape[1]
    per_group = out_channels // group
    ones = (1,) * (1 + len(sizes))
    w = w.reshape(group, per_group, group_channels, -1)
    terms = []
    for t, xs in enumerate(shifted):
        if group_channels == per_group == 1:  # depthwise
            terms.append(xs * w[:, 0, 0, t].reshape(*ones, group))
            continue
        # Output channel g * per_group + j reads input channels g * group_channels + c.
        xs = xs.reshape(n, *sizes, group, 1, group_channels)
        terms += [xs[..., c] * w[:, :, c, t].reshape(*ones, group, per_group) for c in range(group_channels)]
    return _sum(terms).reshape(n, *sizes, out_channels)
