"""Channels-last activations between convolutions: one layout for a run of ops.

ONNX's convolutions, pools and normalizations are channels-first, ``(N, C, D1, ..., Dn)``.
XLA:CPU runs its convolutions channels-last and puts a transpose before and after each
one; jaxonnx's CPU formulations (the depthwise sums, Winograd) run channels-last too. In a
network those transposes do not cancel, since elementwise ops (bias, activation, the
residual Add, the squeeze-and-excitation Mul) sit between them. So the graph runner keeps
what a Conv outputs channels-last, as :class:`ChannelsLast` (``(N, D1, ..., Dn, C)``), and
hands it on in that layout to the ops that allow it:

- elementwise ops, the operands that are not channels-last moved to match (a constant in
  numpy, at trace time);
- ops whose contract takes ``channels_last`` (Conv, the pools, BatchNormalization);
- ops whose layout is only an axis (Concat, Split, the reductions) or a per-axis input
  (Resize), with the axis moved.

Any other op gets the value transposed back to ONNX's layout, as do the graph's outputs: a
transpose XLA drops where nothing reads it, and a bitcast where the spatial sizes are 1.
Values are the same up to float32 reassociation; gradients go through plain ``jnp``.
``jaxonnx.load(..., channels_last=False)`` runs every op in ONNX's layout.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.context import OpContext
from jaxonnx._core.registry import OpVersion

# Elementwise ops of the default domain: the layout of their operands is the layout of
# their result. Random ones are left out (a mask drawn over the moved shape would differ
# from the one drawn in ONNX's layout), as are ops with an axis attribute and Cast (to strings
# it makes numpy object arrays).
_UNARY = frozenset(
    {
        "Abs",
        "Acos",
        "Acosh",
        "Asin",
        "Asinh",
        "Atan",
        "Atanh",
        "Ceil",
        "Celu",
        "Cos",
        "Cosh",
        "Elu",
        "Erf",
        "Exp",
        "Floor",
        "Gelu",
        "HardSigmoid",
        "HardSwish",
        "Identity",
        "IsInf",
        "IsNaN",
        "LeakyRelu",
        "Log",
        "Mish",
        "Neg",
        "Not",
        "Reciprocal",
        "Relu",
        "Round",
        "Selu",
        "Shrink",
        "Sigmoid",
        "Sign",
        "Sin",
        "Sinh",
        "Softplus",
        "Softsign",
        "Sqrt",
        "Tan",
        "Tanh",
        "ThresholdedRelu",
    }
)
# Numpy-style broadcasting from these versions on (Add-6 and older broadcast by an axis).
_BROADCASTING = {
    "Add": 7,
    "Sub": 7,
    "Mul": 7,
    "Div": 7,
    "Pow": 7,
    "Max": 8,
    "Min": 8,
    "Sum": 8,
    "Mean": 8,
    "PRelu": 7,
    "Clip": 11,
    "Where": 9,
    "Equal": 7,
    "Greater": 7,
    "Less": 7,
    "GreaterOrEqual": 12,
    "LessOrEqual": 12,
    "And": 7,
    "Or": 7,
    "Xor": 7,
    "Mod": 10,
}
_REDUCTIONS = frozenset(
    {
        "ReduceL1",
        "ReduceL2",
        "ReduceLogSum",
        "ReduceLogSumExp",
        "ReduceMax",
        "ReduceMean",
        "ReduceMin",
        "ReduceProd",
        "ReduceSum",
        "ReduceSumSquare",
    }
)


class ChannelsLast:
    """A value the graph runner holds channels-last: ``array`` is ``(N, D1, ..., Dn, C)`` for
    the ONNX value of shape ``(N, C, D1, ..., Dn)``. It never leaves the runner."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    @property
    def shape(self) -> tuple:
        """The ONNX shape ``(N, C, D1, ..., Dn)``."""
        shape = self.array.shape
        return (shape[0], shape[-1], *shape[1:-1])

    @property
    def dtype(self):
        return self.array.dtype

    @property
    def ndim(self) -> int:
        return self.array.ndim

    def channels_first(self):
        """The value in ONNX's layout."""
        return jnp.moveaxis(self.array, -1, 1)


def channels_first(value):
    """``value`` in ONNX's layout (anything but a :class:`ChannelsLast` unchanged)."""
    return value.channels_first() if isinstance(value, ChannelsLast) else value


def _moved(value, rank: int):
    """An operand of an elementwise op beside channels-last values of ``rank``: ranked up
    to ``rank`` as ONNX broadcasting does, then its axis 1 moved last. Scalars and None
    stay as they are; numpy stays numpy."""
    if isinstance(value, ChannelsLast):
        return value.array
    if value is None or np.ndim(value) == 0:
        return value
    xp = np if isinstance(value, np.ndarray) else jnp
    value = xp.reshape(value, (1,) * (rank - np.ndim(value)) + tuple(np.shape(value)))
    return xp.moveaxis(value, 1, -1)


def _axis(axis: int, rank: int) -> int:
    """Where ONNX axis ``axis`` of a rank-``rank`` value sits channels-last."""
    axis = axis % rank
    return 0 if axis == 0 else rank - 1 if axis == 1 else axis - 1


def run(node, args: list, ctx: OpContext, attributes: dict[str, Any]):
    """The node's outputs with channels-last values kept so, or None where the node cannot
    take them (its caller then runs it on ``channels_first`` of every argument).

    A Conv on a rank >= 3 input always runs channels-last: its output is where a run of
    channels-last values starts.
    """
    op = node.op
    if not isinstance(op, OpVersion) or op.domain != "":
        return None  # a model-local function runs its own nodes; other domains keep ONNX's layout
    op_type = op.op_type
    given = [a for a in args if isinstance(a, ChannelsLast)]
    if op.contract.takes("channels_last") and args and args[0] is not None:
        if not (given or op_type == "Conv") or any(isinstance(a, ChannelsLast) for a in args[1:]):
            return None
        if sum(1 for name in node.outputs if name) > 1:
            return None  # MaxPool's Indices and training statistics are ONNX-layout values
        x = args[0]
        if np.ndim(x) < 3 or not hasattr(x, "shape"):
            return None
        x = x.array if isinstance(x, ChannelsLast) else jnp.moveaxis(jnp.asarray(x), 1, -1)
        contract_ctx = OpContext(node=ctx.node, output_count=ctx.output_count, options=ctx.options, channels_last=True)
        results = op(x, *args[1:], ctx=contract_ctx, **attributes)
        results = results if isinstance(results, tuple) else (results,)
        return (ChannelsLast(results[0]),) + results[1:]
    if not given:
        return None
    rank = given[0].ndim
    if op_type in _UNARY and len(args) == 1:
        return (ChannelsLast(op(args[0].array, ctx=ctx, **attributes)),)
    if _BROADCASTING.get(op_type, 10**6) <= op.since_version:
        if any(a is not None and np.ndim(a) > rank for a in args) or any(a.ndim != rank for a in given):
            return None
        return (ChannelsLast(op(*[_moved(a, rank) for a in args], ctx=ctx, **attributes)),)
    if op_type == "Concat" and op.since_version >= 4 and _axis(attributes["axis"], rank) == rank - 1:
        if any(a is None or np.ndim(a) != rank for a in args):
            return None
        # Non-negative: Concat before version 11 refuses negative axes, and every attribute
        # written here must be valid at the node's own version (so are `_axis`'s results).
        return (ChannelsLast(op(*[_moved(a, rank) for a in args], ctx=ctx, axis=rank - 1)),)
    if op_type == "Split" and op.since_version >= 13 and isinstance(args[0], ChannelsLast):
        if any(isinstance(a, ChannelsLast) for a in args[1:]):
            return None
        results = op(
            args[0].array, *args[1:], ctx=ctx, **{**attributes, "axis": _axis(attributes.get("axis") or 0, rank)}
        )
        return tuple(ChannelsLast(r) for r in results)
    if op_type in _REDUCTIONS and op.since_version >= 13 and isinstance(args[0], ChannelsLast):
        return _reduction(node, args, ctx, attributes, rank)
    if op_type == "Resize" and op.since_version >= 11 and isinstance(args[0], ChannelsLast):
        return _resize(node, args, ctx, attributes, rank)
    return None


def _reduction(node, args, ctx, attributes, rank):
    """A reduction with its axes moved; kept channels-last where it keeps the dims."""
    op = node.op
    axes_input = op.since_version >= 18 or op.op_type == "ReduceSum"
    axes = args[1] if axes_input and len(args) > 1 else attributes.get("axes")
    keepdims = attributes.get("keepdims")
    if axes is None or isinstance(axes, jax.core.Tracer) or np.size(axes) == 0 or keepdims == 0:
        return None  # all axes (or noop_with_empty_axes) and dropped dims: ONNX's layout
    moved = np.asarray([_axis(int(a), rank) for a in np.asarray(axes).reshape(-1)], np.int64)
    if axes_input:
        result = op(args[0].array, moved, *args[2:], ctx=ctx, **attributes)
    else:
        result = op(args[0].array, *args[1:], ctx=ctx, **{**attributes, "axes": [int(a) for a in moved]})
    return (ChannelsLast(result),)


def _resize(node, args, ctx, attributes, rank):
    """Resize resamples each axis on its own: its per-axis inputs are moved like the data."""
    if attributes.get("axes") is not None or any(isinstance(a, (ChannelsLast, jax.core.Tracer)) for a in args[1:]):
        return None

    def per_axis(value, parts):
        if value is None or np.size(value) == 0:
            return value
        value = np.asarray(value).reshape(parts, rank)
        return np.concatenate([value[:, :1], value[:, 2:], value[:, 1:2]], axis=1).reshape(-1).astype(value.dtype)

    roi, scales, sizes = (list(args[1:]) + [None] * 3)[:3]
    moved = [args[0].array, per_axis(roi, 2), per_axis(scales, 1), per_axis(sizes, 1)][: len(args)]
    return (ChannelsLast(node.op(*moved, ctx=ctx, **attributes)),)


__all__ = ["ChannelsLast", "channels_first", "run"]
