"""Channels-last activations between convolutions: one layout for a run of ops.

ONNX's convolutions, pools and normalizations are channels-first, ``(N, C, D1, ..., Dn)``.
XLA:CPU runs its convolutions channels-last and puts a transpose before and after each
one; jaxonnx's CPU formulations (the depthwise sums, Winograd) run channels-last too. In a
network those transposes do not cancel, since elementwise ops (bias, activation, the
residual Add, the squeeze-and-excitation Mul) sit between them. So the graph runner keeps
what a Conv outputs channels-last, as :class:`ChannelsLast` (``(N, D1, ..., Dn, C)``), and
hands it on in that layout to the ops that allow it:

- ops whose contract takes ``channels_last`` (Conv, the pools, BatchNormalization);
- ops that declare how their result follows their inputs' axes (``layout=`` at their
  ``register`` call, see :class:`~jaxonnx._core.contract.OpContract`): elementwise ops, the
  operands that are not channels-last moved to match (a constant in numpy, at trace time);
  ops that work along one axis (Concat, Split) or reduce over axes, with the axes moved;
  ops with per-axis inputs (Resize), which move those inputs themselves.

A trait is declared only on the versions where its rewrite is valid (Add-6 broadcasts along
an axis, not numpy-style, and has none), so the pass never names an op.

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


def channels_last_order(rank: int) -> tuple[int, ...]:
    """The ONNX axes of a rank-``rank`` value in the order a :class:`ChannelsLast` holds them.

    Example:
        >>> channels_last_order(4)
        (0, 2, 3, 1)
    """
    return (0, *range(2, rank), 1)


def run(node, args: list, ctx: OpContext, attributes: dict[str, Any]):
    """The node's outputs with channels-last values kept so, or None where the node cannot
    take them (its caller then runs it on ``channels_first`` of every argument).

    An op whose contract says ``prefers_channels_last`` (Conv) on a rank >= 3 input always
    runs channels-last: its output is where a run of channels-last values starts.
    """
    op = node.op
    if not isinstance(op, OpVersion):
        return None  # a model-local function runs its own nodes
    given = [a for a in args if isinstance(a, ChannelsLast)]
    if op.contract.takes("channels_last") and args and args[0] is not None:
        if not (given or op.contract.prefers_channels_last) or any(isinstance(a, ChannelsLast) for a in args[1:]):
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
    layout = op.contract.layout
    if not given or not layout:
        return None
    rank = given[0].ndim
    if layout == "elementwise":
        if any(a is not None and np.ndim(a) > rank for a in args) or any(a.ndim != rank for a in given):
            return None
        return (ChannelsLast(op(*[_moved(a, rank) for a in args], ctx=ctx, **attributes)),)
    if layout == "along_axis":
        return _along_axis(op, args, ctx, attributes, rank)
    if not isinstance(args[0], ChannelsLast) or any(isinstance(a, ChannelsLast) for a in args[1:]):
        return None
    if layout == "reduces":
        return _reduction(op, args, ctx, attributes, rank)
    if callable(layout):  # the op's own function moves its per-axis inputs as input 0 moved (Resize)
        moved = layout(args[1:], attributes, channels_last_order(rank))
        return None if moved is None else (ChannelsLast(op(args[0].array, *moved, ctx=ctx, **attributes)),)
    return None


def _along_axis(op: OpVersion, args, ctx, attributes, rank):
    """An op that joins or cuts the inputs of its output's type along its ``axis`` attribute
    (Concat, Split) and takes its other inputs as they are (Split's sizes): run with the axis
    moved, every output channels-last."""
    formals = {formal.name: formal.type_str for formal in op.schema.inputs}
    output_type = op.schema.outputs[0].type_str
    joined = [formals[name] == output_type for name in op.formal_names(len(args))]
    if any(isinstance(a, ChannelsLast) for a, j in zip(args, joined) if not j):
        return None
    if any(a is None or np.ndim(a) != rank for a, j in zip(args, joined) if j):
        return None
    axis = attributes.get("axis")
    if axis is None:  # the schema's default (Split's 0)
        axis = op.defaults.get("axis") or 0
    # Non-negative: Concat before version 11 refuses negative axes, and every attribute
    # written here must be valid at the node's own version (so are `_axis`'s results).
    moved = [_moved(a, rank) if j else a for a, j in zip(args, joined)]
    results = op(*moved, ctx=ctx, **{**attributes, "axis": _axis(axis, rank)})
    return tuple(ChannelsLast(r) for r in results) if isinstance(results, tuple) else (ChannelsLast(results),)


def _reduction(op: OpVersion, args, ctx, attributes, rank):
    """A reduction with its axes moved; kept channels-last where it keeps the dims."""
    axes_input = any(formal.name == "axes" for formal in op.schema.inputs)  # an attribute before
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


__all__ = ["ChannelsLast", "channels_first", "channels_last_order", "run"]
