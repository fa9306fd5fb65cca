"""Size hints' padding, as marks on positions: a padded entry never counts as a real one.

A size hint (``size_hints=`` of :func:`jaxonnx.load`) gives a data-dependent output a fixed
length: its real entries first, then padding. The size-hinted op also returns its real length
(a :class:`RealLength`, traced under ``jax.jit``), and from there the graph runner carries a
:class:`Marks` beside every value the padding reaches. Each consumer follows the rule its
contract names (``padding=`` of :func:`jaxonnx.register`):

- a rule shared by many ops, by name: ``"elementwise"`` (the output keeps every input's
  marks), ``"moves"`` (where the marked positions land is found by running the op on a probe
  that numbers them; they must stay a prefix of one axis), and the reductions ``"sum"``,
  ``"prod"``, ``"max"``, ``"min"``, ``"mean"`` (marked entries are left out of a reduced axis);
- or a :data:`Rule` of the op's own, a function of a :class:`Call` written beside the op
  (a gather reads zeros at marked indices, a scatter drops marked updates, ...), built from
  the helpers below.

Two kinds of marks: **positions** (``Marks.axes[a] = Mark(count, ...)``: the entries at
positions ``>= count`` along axis ``a`` are padding, whatever their values) and **lengths**
(``Shape`` of a marked value gives the hinted length as static numpy, ``Marks.lengths`` flags
those entries and ``Marks.real`` holds their real values). Any op without a rule that meets a
mark, and any rule that cannot give the exact answer, raises
:class:`~jaxonnx.OnnxValidationError` naming the size-hinted output and the node it reached.
What each op means on padding is in the size hints guide (``docs/guide/shapes.md``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._errors import OnnxValidationError

#: A rule: what an op means on padded inputs. It takes the node's :class:`Call` and returns
#: the op's outputs and each output's :class:`Marks` (None where it has none).
Rule = Callable[["Call"], tuple[tuple, list]]

#: The rules shared by many ops, by name (``padding="elementwise"``): the ``padding=`` of an
#: op's contract is one of these or a :data:`Rule` of the op's own, written beside the op.
KINDS = ("", "elementwise", "moves", "sum", "prod", "max", "min", "mean")


@dataclasses.dataclass(frozen=True)
class RealLength:
    """What a size-hinted op asked for ``real_length=True`` returns after its outputs.

    Attributes:
        count: the real length: an int, or a traced integer scalar under ``jax.jit``.
        axes: per output, the axis its padding runs along (None: not padded).
    """

    count: Any
    axes: tuple[int | None, ...]
    counted: int | None = None  # the input whose non-zero entries ``count`` counts (NonZero's X)


@dataclasses.dataclass(frozen=True)
class Mark:
    """Positions ``>= count`` along an axis are padding, started by a size-hinted output."""

    count: Any  # an int32 scalar, traced under jax.jit
    output: str  # the size-hinted output it started at
    node: str  # the node that wrote it
    hinted: bool = True  # False: padded to its input's own length (a Slice with traced bounds), no hint asked

    def __post_init__(self):
        # One dtype for every count, so that counts compare and combine under strict promotion.
        object.__setattr__(self, "count", jnp.asarray(self.count).astype(jnp.int32))


@dataclasses.dataclass(frozen=True)
class Marks:
    """The marks of one value: padded positions by axis, and the entries that are lengths."""

    axes: dict[int, Mark] = dataclasses.field(default_factory=dict)
    lengths: np.ndarray | None = None  # bool, the value's shape: entries that stand for a padded length
    real: Any = None  # the value with the real lengths in place of the flagged entries
    length_origin: Mark | None = None  # the mark whose length the flagged entries hold
    # The value (a mask) whose non-zero entries a mark's real length counts, and its padded
    # length: its sum over all axes is that length (dynamo writes ``x[mask] = v`` so).
    counted: tuple[Mark, int] | None = None

    def origin(self) -> Mark:
        origin = next(iter(self.axes.values())) if self.axes else self.length_origin
        assert origin is not None, "a value with marks has a padded axis or flagged lengths (and their origin)"
        return origin


def length_marks(lengths: np.ndarray, real, origin: Mark) -> Marks | None:
    """The marks of a value whose ``lengths`` entries (bool) hold ``origin``'s padded length,
    ``real`` the value with the real lengths; None when no entry is flagged."""
    lengths = np.asarray(lengths, bool)
    return Marks({}, lengths, real, origin) if lengths.any() else None


@dataclasses.dataclass
class Call:
    """One node call as a rule sees it: the node, its inputs and attributes, each input's
    marks (None where it has none) and ``run(args)``, which runs the op on other inputs.

    Example:
        A rule for an op that keeps its input's marks where its output keeps the input's
        shape (a sketch; ``"elementwise"`` is the full rule):

        >>> def keeps_marks(call: Call):
        ...     outputs = as_tuple(call.run(call.args))
        ...     marks = call.axis_marks(0)
        ...     return outputs, [Marks(dict(marks)) if marks else None for _ in outputs]
    """

    node: Any
    args: list
    attributes: dict
    marks: list[Marks | None]
    run: Callable[[Sequence], tuple]

    @property
    def origin(self) -> Mark:
        return next(m for m in self.marks if m is not None).origin()

    def refuse(self, what: str) -> NoReturn:
        """Raises the error for padding that reaches this node, which ``what`` (a clause:
        "takes it as a parameter"): no rule gives the exact answer."""
        _refuse(self.node, self.origin, what)

    def axis_marks(self, index: int) -> dict[int, Mark]:
        """Input ``index``'s padded positions, by axis (empty where it has none)."""
        marks = self.marks[index]
        return {} if marks is None else marks.axes

    def length_flags(self, index: int) -> np.ndarray | None:
        """Which entries of input ``index`` stand for a padded length (None: none do)."""
        marks = self.marks[index]
        return None if marks is None or marks.lengths is None else marks.lengths

    def has_lengths(self) -> bool:
        """Whether any input holds a padded length."""
        return any(m is not None and m.lengths is not None for m in self.marks)

    def length_origin(self) -> Mark:
        """The mark whose length the inputs' flagged entries hold."""
        origin = next(m.length_origin for m in self.marks if m is not None and m.lengths is not None)
        assert origin is not None, "flagged lengths carry the mark whose length they hold"
        return origin

    def reals(self) -> list:
        """The inputs with each length replaced by its real value."""
        return [m.real if m is not None and m.lengths is not None else a for a, m in zip(self.args, self.marks)]

    def only_inputs(self, indices: Sequence[int], what: str) -> None:
        """Refuses marks on inputs other than ``indices``."""
        for i, m in enumerate(self.marks):
            if m is not None and i not in indices:
                self.refuse(what)

    def no_lengths(self) -> None:
        """Refuses an input that holds a padded length."""
        if self.has_lengths():
            self.refuse("takes a padded length as data")


# --------------------------------------------------------------------------- the runner's side


def of_size_hint(node, results: tuple) -> tuple[tuple, list[Marks | None] | None, dict[int, Marks]]:
    """A size-hinted node's outputs (its :class:`RealLength` taken off), the marks they
    start (None where the op gave no real length: a Slice between known bounds), and the
    marks of its inputs whose non-zero entries the real length counts."""
    *outputs, real = results
    if not isinstance(real, RealLength):  # the op gave no real length: it started no padding
        return tuple(results), None, {}
    marks = []
    for name, axis in zip(node.outputs, real.axes):
        marks.append(None if axis is None else Marks({axis: Mark(real.count, name, node.path, node.size is not None)}))
    counted = {}
    if real.counted is not None:
        mark = next(m for m in marks if m is not None)
        counted[real.counted] = Marks(counted=(next(iter(mark.axes.values())), node.size))
    return tuple(outputs), marks + [None] * (len(outputs) - len(marks)), counted


def asks_real_length(node) -> bool:
    """Whether the node's op takes a size hint whose padding is marked (not a loop bound)."""
    size_hint = getattr(getattr(node.op, "contract", None), "size_hint", False)
    if size_hint == "own_length":  # bounded by its input's length without a hint
        return True
    return node.size is not None and bool(size_hint) and size_hint != "bound"


def run(node, args: list, attributes: dict, marks: list[Marks | None], run_op) -> tuple[tuple, list[Marks | None]]:
    """Runs ``node`` on marked inputs by its contract's rule; returns its outputs and their marks."""
    counted = [None if m is None else m.counted for m in marks]
    marks = [None if m is None or (not m.axes and m.lengths is None) else m for m in marks]
    if all(m is None for m in marks):  # only counted masks: their values are all real
        results = as_tuple(run_op(args))
        return _counted_outputs(node, args, attributes, counted, results)
    call = Call(node, list(args), attributes, list(marks), run_op)
    declared = getattr(getattr(node.op, "contract", None), "padding", "")
    rule = declared if callable(declared) else _RULES.get(declared)
    if rule is None:
        call.refuse("has no rule for padded entries (its contract sets no `padding`)")
    return rule(call)


def _counted_outputs(node, args, attributes, counted, results):
    """A counted mask (see ``Marks.counted``) stays counted through the ops that keep its
    non-zero entries, and its sum over all axes is a length: the hinted length, with the
    count as its real value, as ``Shape`` of the padded value gives it."""
    contract = getattr(node.op, "contract", None)  # None for a model's local function
    source = counted[0]
    if source is None or contract is None:
        return results, [None] * len(results)
    value = args[0]
    if contract.keeps_non_zeros:
        kept = contract.keeps_non_zeros is True or np.bool_ in (np.dtype(value.dtype), np.dtype(results[0].dtype))
        return results, [Marks(counted=source) if kept else None] + [None] * (len(results) - 1)
    if contract.sums:
        call = Call(node, list(args), attributes, [], lambda a: a)
        reduced, _ = _reduced_axes(call, np.ndim(value))
        if len(reduced) == np.ndim(value) and np.ndim(value) > 0:
            mark, length = source
            real = results[0]
            static = np.full(np.shape(real), length, np.dtype(real.dtype))
            return (static,), [Marks({}, np.ones(np.shape(real), bool), real, mark)]
    return results, [None] * len(results)


def real_output(value, marks: Marks | None):
    """A graph output as the caller gets it: a length gives its real value."""
    if marks is not None and marks.lengths is not None and not marks.axes:
        return marks.real
    return value


def unasked_padding(marks: Marks | None) -> Mark | None:
    """The mark of a graph output padded where no size hint asked for it (a Slice with
    traced bounds, padded to its input's length), or None."""
    return next((m for m in ({} if marks is None else marks.axes).values() if not m.hinted), None)


def _refuse(node, origin: Mark, what: str) -> NoReturn:
    raise refusal(node, origin, what)


def refusal(node, origin: Mark, what: str) -> OnnxValidationError:
    """The error for padding that reaches ``node``, which ``what``: no rule gives its meaning."""
    return OnnxValidationError(
        f"The size-hinted output {origin.output!r} (of node {origin.node!r}) is padded past its real length, "
        f"and its padding reaches node {node.path!r} ({node.op.name}), which {what}: the result would be "
        "silently wrong. Ways out: run the model without a size hint for that output (eagerly, where every "
        "length is exact), or keep the padded value to ops with a padding rule (elementwise ops, ops that "
        "move values, gathers, scatters, reductions, top-k, shape); see the docs' size hints page (docs/guide/shapes.md)."
    )


# --------------------------------------------------------------------------- helpers for rules


def real_mask(shape: tuple[int, ...], axes: dict[int, Mark]):
    """A bool array broadcastable to ``shape``: True at the real positions."""
    mask = None
    for axis, mark in axes.items():
        along = jnp.arange(shape[axis], dtype=jnp.int32) < mark.count
        along = along.reshape([-1 if d == axis else 1 for d in range(len(shape))])
        mask = along if mask is None else mask & along
    return jnp.ones((1,) * len(shape), bool) if mask is None else mask


def merge(into: dict[int, Mark], axis: int, mark: Mark) -> None:
    """Marks ``axis`` of ``into`` with ``mark``; an axis marked twice keeps the smaller count."""
    if axis in into and into[axis] is not mark:
        into[axis] = dataclasses.replace(into[axis], count=jnp.minimum(into[axis].count, mark.count))
    else:
        into[axis] = mark


def with_count(mark: Mark, count) -> Mark:
    """``mark`` at another real length."""
    return dataclasses.replace(mark, count=count)


def _lowest(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return False
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return -np.inf


def _highest(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return True
    if dtype.kind in "iu":
        return np.iinfo(dtype).max
    return np.inf


def filled(value, axes: dict[int, Mark], fill):
    """``value`` with ``fill`` (a number, ``"lowest"`` or ``"highest"``) at the marked positions of ``axes``."""
    value = jnp.asarray(value)  # numpy int64 becomes int32 with x64 off: the fill follows
    fill = {"lowest": _lowest, "highest": _highest}[fill](value.dtype) if isinstance(fill, str) else fill
    return jnp.where(real_mask(value.shape, axes), value, jnp.asarray(fill, value.dtype))


def as_tuple(results) -> tuple:
    """An op's outputs as a tuple (an op of one output may return it bare)."""
    return results if isinstance(results, tuple) else (results,)


# --------------------------------------------------------------------------- the shared rules


def _elementwise(call: Call):
    results = as_tuple(call.run(call.args))
    shape = np.shape(results[0])
    rank = len(shape)
    axes: dict[int, Mark] = {}
    for arg, marks in zip(call.args, call.marks):
        if marks is None:
            continue
        for axis, mark in marks.axes.items():
            out_axis = axis + rank - np.ndim(arg)
            if shape[out_axis] != np.shape(arg)[axis]:
                call.refuse(f"broadcasts the padded axis {axis} to length {shape[out_axis]}")
            merge(axes, out_axis, mark)
    lengths: np.ndarray | None = None
    real: tuple = ()  # set with ``lengths``
    if call.has_lengths():
        lengths = np.zeros(shape, bool)
        for marks in call.marks:
            if marks is not None and marks.lengths is not None:
                lengths = lengths | np.broadcast_to(marks.lengths, shape)
        real = as_tuple(call.run(call.reals()))
    out = []
    for index, _ in enumerate(results):
        length = None if lengths is None else length_marks(lengths, real[index], call.length_origin())
        out.append(combine(dict(axes), length))
    return results, out


def _probe(shape, axis: int, dtype) -> np.ndarray:
    """Numbers the positions along ``axis``: the probe that shows where they land."""
    numbers = np.arange(shape[axis]).reshape([-1 if d == axis else 1 for d in range(len(shape))])
    dtype = np.dtype(dtype)
    if dtype.kind not in "iuf" or dtype.itemsize < 4:
        dtype = np.dtype(np.int64)
    return np.broadcast_to(numbers, shape).astype(dtype)


def _landing(probe_out: np.ndarray) -> tuple[int, int] | None:
    """The output axis along which a probe came out as a prefix of its positions, in order,
    each repeated ``block`` times (an axis merged with the whole axes after it: Flatten,
    Reshape); None when there is none."""
    shape = probe_out.shape
    # A length-1 axis matches any probe, so it goes last; but a probe of a length-1 axis is all
    # zeros and matches any axis too, so there a length-1 axis goes first (a size hint of 1
    # transposed would otherwise land on the other axis).
    one_position = not probe_out.any()
    for b in sorted(range(len(shape)), key=lambda b: (shape[b] == 1) != one_position):
        along = np.moveaxis(probe_out, b, 0).reshape(shape[b], -1)
        if shape[b] == 0 or not (along == along[:, :1]).all():
            continue  # the probe varies along another axis
        numbers = along[:, 0]
        block = int(np.argmax(numbers != 0)) if (numbers != 0).any() else shape[b]
        if block and np.array_equal(numbers, np.arange(shape[b]) // block):
            return b, block
    return None


def _moved_marks(call: Call, results: tuple) -> list[dict[int, Mark]]:
    """Where the data's marked positions land in each output (see ``"moves"``)."""
    data = call.args[0]
    out: list[dict[int, Mark]] = [{} for _ in results]
    for axis, mark in call.axis_marks(0).items():
        if data.shape[axis] == 0:
            continue  # no positions to mark
        if any(isinstance(a, jax.core.Tracer) for a in call.args[1:] if a is not None):
            call.refuse("moves it by traced parameters")
        probes = as_tuple(call.run([_probe(data.shape, axis, data.dtype), *call.args[1:]]))
        for index, probe_out in enumerate(probes):
            probe_out = np.asarray(probe_out)
            if probe_out.size == 0:
                continue
            landing = _landing(probe_out)
            if landing is None:
                call.refuse(f"moves the padded axis {axis} so that its positions are no longer a prefix of one axis")
            landed, block = landing
            count = mark.count * block
            if probe_out.shape[landed] < data.shape[axis] * block:  # cut to a prefix
                count = jnp.minimum(count, probe_out.shape[landed])
            merge(out[index], landed, with_count(mark, count))
    return out


def moves(call: Call, lengths_as: str = ""):
    """The ``"moves"`` rule: where input 0's marked positions land is found by running the op
    on a probe that numbers them. ``lengths_as``: what a padded length in a parameter means:
    ``""`` (it is refused), ``"shape"`` (a target shape: the axis it sizes is marked at the
    real length), ``"broadcast_shape"`` (the same, aligned to the output's last axes) or
    ``"ends"`` (the ends of a slice from 0 by step 1: ``x[:len(y)]``)."""
    results = as_tuple(call.run(call.args))
    positions = _moved_marks(call, results)
    lengths: list[Marks | None] = [None] * len(results)
    first = call.marks[0]
    if first is not None and first.lengths is not None:
        moved_flags = as_tuple(call.run([np.asarray(first.lengths, np.int64), *call.args[1:]]))
        moved_real = as_tuple(call.run([first.real, *call.args[1:]]))
        lengths = [length_marks(np.asarray(f) != 0, r, call.length_origin()) for f, r in zip(moved_flags, moved_real)]
    for i in range(1, len(call.args)):
        flags = call.length_flags(i)
        marks = call.marks[i]
        if marks is None:
            continue
        if flags is not None and lengths_as == "ends" and i == 2:
            _sliced_to_length(call, flags, positions[0])
            continue
        if flags is None or lengths_as not in ("shape", "broadcast_shape"):
            call.refuse(f"takes it as input {i} (a parameter, not data)")
        # A length in the target shape: the axis it sizes is marked at the real length.
        shape = np.shape(results[0])
        offset = len(shape) - flags.size if lengths_as == "broadcast_shape" else 0
        target = np.asarray(call.args[i]).reshape(-1)
        real = marks.real.reshape(-1)
        for entry in np.flatnonzero(flags.reshape(-1)):
            axis = offset + int(entry)
            if target[entry] <= 0 or shape[axis] != target[entry]:
                call.refuse(f"sizes axis {axis} by a padded length it does not keep")
            merge(positions[0], axis, with_count(call.length_origin(), real[entry]))
    return results, [combine(p, n) for p, n in zip(positions, lengths)]


def _sliced_to_length(call: Call, flags: np.ndarray, positions: dict[int, Mark]) -> None:
    """``Slice(data, 0, n)`` with ``n`` a padded length (``x[:len(y)]``): the real ``n`` entries
    are real, the rest of the hinted length padding."""
    data, starts = call.args[0], np.asarray(call.args[1]).reshape(-1)
    axes = (
        np.arange(len(starts)) if len(call.args) < 4 or call.args[3] is None else np.asarray(call.args[3]).reshape(-1)
    )
    steps = (
        np.ones(len(starts), int)
        if len(call.args) < 5 or call.args[4] is None
        else np.asarray(call.args[4]).reshape(-1)
    )
    length_marks = call.marks[2]
    assert length_marks is not None  # the caller found its flagged lengths
    real = jnp.asarray(length_marks.real).reshape(-1)
    for entry in np.flatnonzero(flags.reshape(-1)):
        axis = int(axes[entry]) % data.ndim
        if starts[entry] != 0 or steps[entry] != 1:
            call.refuse(f"slices axis {axis} up to a padded length from another start or by another step")
        merge(positions, axis, with_count(call.length_origin(), real[entry]))


def combine(axes: dict[int, Mark], lengths: Marks | None) -> Marks | None:
    """One value's marks from its marked positions and its length marks (None: no marks)."""
    if lengths is None:
        return Marks(axes) if axes else None
    if not axes:
        return lengths
    return dataclasses.replace(lengths, axes=axes)


def _reduced_axes(call: Call, rank: int) -> tuple[tuple[int, ...], bool]:
    """The axes a reduction reduces, and whether it keeps them."""
    keepdims = bool(call.attributes.get("keepdims", 1))
    if "axis" in call.attributes:  # ArgMax, ArgMin
        axis = call.attributes["axis"]
        return (axis + rank if axis < 0 else axis,), keepdims
    axes = call.attributes.get("axes")
    if axes is None and len(call.args) > 1 and call.args[1] is not None:
        axes = np.asarray(call.args[1]).reshape(-1).tolist()
    if not axes:
        return (() if call.attributes.get("noop_with_empty_axes", 0) else tuple(range(rank))), keepdims
    return tuple(sorted(int(a) + rank if a < 0 else int(a) for a in axes)), keepdims


def _reduction(kind: str):
    def rule(call: Call):
        data = call.args[0]
        call.only_inputs((0,), "takes it as its reduction axes")
        rank = np.ndim(data)
        reduced, keepdims = _reduced_axes(call, rank)
        axes = call.axis_marks(0)
        gone = {a: m for a, m in axes.items() if a in reduced}
        args = list(call.args)
        if gone:
            fill = {"sum": 0, "mean": 0, "prod": 1, "max": "lowest", "min": "highest"}[kind]
            args[0] = filled(data, gone, fill)
        if gone and kind == "mean":  # the sum of the real entries over their number
            total = jnp.sum(args[0], axis=reduced, keepdims=keepdims)
            count = jnp.asarray(np.prod([data.shape[a] for a in reduced if a not in gone]), total.dtype)
            for mark in gone.values():
                count = count * mark.count.astype(total.dtype)
            integer = jnp.issubdtype(total.dtype, jnp.integer)  # truncated toward zero, as the op's own mean
            results = (jax.lax.div(total, count) if integer else total / count,)
        else:
            results = as_tuple(call.run(args))
        kept: dict[int, Mark] = {}
        for a, mark in axes.items():
            if a not in reduced:
                kept[a if keepdims else a - sum(r < a for r in reduced)] = mark
        lengths = None
        data_lengths = call.length_flags(0)
        if data_lengths is not None:
            flags = np.any(data_lengths, axis=reduced, keepdims=keepdims)
            lengths = length_marks(flags, as_tuple(call.run(call.reals()))[0], call.length_origin())
        return results, [combine(kept, lengths) for _ in results]

    return rule


_RULES: dict[str, Rule] = {
    "elementwise": _elementwise,
    "moves": moves,
    **{kind: _reduction(kind) for kind in ("sum", "prod", "max", "min", "mean")},
}
