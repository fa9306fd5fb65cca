"""Size hints' padding, as marks on positions: a padded entry never counts as a real one.

A size hint (``size_hints=`` of :func:`jaxonnx.load`) gives a data-dependent output a fixed
length: its real entries first, then padding. The size-hinted op (NonZero, Compress, Unique,
NonMaxSuppression) also reports its real length, a scalar computed at run time (the number
of non-zeros, of selected slices, of unique values, of selected boxes; traced under
``jax.jit``): the graph runner asks for it through the op's contract (``real_length=True``,
see :class:`RealLength`). From there the runner carries a :class:`Marks` beside every value
the padding reaches, and each consumer's contract (``padding=`` of :func:`jaxonnx.register`)
names the rule below that says what the op means on it.

Two kinds of marks:

- **Positions.** ``Marks.axes[a] = Mark(count, ...)``: the entries at positions ``>= count``
  along axis ``a`` are not real, *whatever their values*. Arithmetic may change the padded
  entries' values; the mark stays.
- **Lengths.** ``Shape`` of a marked value gives the hinted (padded) length, as a static
  numpy value, so shape arithmetic stays static; ``Marks.lengths`` flags the entries that
  stand for a padded length and ``Marks.real`` holds the value with the real counts in
  their place. The values built from such a shape keep the mark on their positions.

The rules (the ``padding=`` kinds):

- ``"elementwise"``: unary, binary and variadic ops with broadcasting, Cast, Where, Clip,
  comparisons: the output keeps every input's marks (an axis marked by two inputs keeps the
  smaller count); lengths are computed on the real values too.
- ``"moves"``: Identity, Transpose, Squeeze, Unsqueeze, Reshape, Flatten, Slice, Split,
  Expand, Tile...: where each marked position lands is found by running the op, at trace
  time, on a probe that numbers the positions along the marked axis. A marked axis that
  comes out whole (or cut to a prefix, ``Slice(x, 0, k)``) keeps its mark; one that is
  merged, reversed or offset is refused.
- ``"reshape"``, ``"expand"``, ``"slice"``: ``"moves"``, where a parameter may also be a
  length: a target shape (Reshape's, aligned to the output's first axes) or a broadcast shape
  (Expand's, aligned to its last axes) marks the axes it sizes at the real counts; the ends
  of a slice from 0 by step 1 (Slice's input 2, ``x[:len(y)]``) mark the axis at the real
  count.
- ``"concat"``: along a marked axis, the real entries of the inputs are moved to the front
  (in order) and the padding behind them, as the exact concatenation would have them.
- ``"gather"``, ``"gather_elements"``, ``"gather_nd"``: marked indices read zeros (the
  output is marked at the same positions); marked data keeps its marks on the axes that
  are not indexed.
- ``"scatter"``, ``"scatter_nd"``: marked indices or updates write nothing (a row of indices
  per update in ``"scatter_nd"``, a single index in ``"scatter"``); the output keeps the
  data's marks.
- ``"sum"``, ``"prod"``, ``"max"``, ``"min"``, ``"mean"``: reductions (Reduce*, ArgMax,
  ArgMin) leave marked entries out of a reduced axis: they count as 0 in a sum, 1 in a
  product, as the lowest value for a maximum (and ArgMax, ReduceLogSumExp) and the highest
  for a minimum, and a mean divides by the real count. Axes that are not reduced keep
  their marks.
- ``"matmul"``: MatMul's rows of ``A``, columns of ``B`` and (unbroadcast) batch axes keep
  their marks in the product; along the contracted axis, the marked entries of either
  operand count as 0 (both operands are zeroed there, so padding's values never reach a
  real entry). A Mixture-of-Experts layer as Optimum exports it runs each expert's MLP on
  the rows that NonZero routed to it, then scatters them back.
- ``"top_k"``: marked entries rank last; the outputs are marked past ``min(count, K)``.
  A ``K`` that is a length gives outputs marked at the real ``K``.
- ``"non_max_suppression"``: marked boxes (the box axis of ``boxes`` and ``scores``) are
  never selected: they rank last, so they neither take a real box's place nor suppress
  one, and the rows that name them are dropped (the real rows first, as the exact result).
- ``"shape"``, ``"size"``: lengths (above). ``"constant_of_shape"``, ``"range"``: values
  built from lengths are marked at the real lengths.

A counted mask (the input whose non-zeros a size-hinted op counted: NonZero's) stays counted
through ops that keep its non-zero entries (``keeps_non_zeros=`` of the op's contract), and
its sum over every axis (``sums=True``) is a length whose real value is that count.

Any other op that meets a mark raises :class:`~jaxonnx.OnnxValidationError` naming the
size-hinted output, the node it reached and the ways out, as does a rule that cannot give
the exact answer (a merged axis). Marks follow the values a subgraph (If's branches,
Loop's and Scan's bodies) reads from the enclosing scope, as they follow values into an
op, and come out through If's outputs (its branch's); a Loop or Scan whose body's outputs
are padded is refused (the graph runner, ``graph.py``). A graph output may
carry position marks (that is what the size hint asks for: the padded value); a graph
output that is a length gives its real value. Eager calls and ``jax.jit`` follow the same
rules, so they give the same answer or the same error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.bounds import refuse_at_run_time_if

KINDS = (
    "",
    "elementwise",
    "moves",
    "reshape",
    "expand",
    "slice",
    "concat",
    "gather",
    "gather_elements",
    "gather_nd",
    "scatter",
    "scatter_nd",
    "sum",
    "prod",
    "max",
    "min",
    "mean",
    "matmul",
    "top_k",
    "shape",
    "size",
    "constant_of_shape",
    "range",
    "non_max_suppression",
)


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


def _length_marks(lengths: np.ndarray, real, origin: Mark) -> Marks | None:
    lengths = np.asarray(lengths, bool)
    return Marks({}, lengths, real, origin) if lengths.any() else None


@dataclasses.dataclass
class Call:
    """One node call as a rule sees it: the node, its inputs and attributes, each input's
    marks (None where it has none) and ``run(args)``, which runs the op on other inputs."""

    node: Any
    args: list
    attributes: dict
    marks: list[Marks | None]
    run: Callable[[Sequence], tuple]

    @property
    def origin(self) -> Mark:
        return next(m for m in self.marks if m is not None).origin()

    def refuse(self, what: str) -> NoReturn:
        _refuse(self.node, self.origin, what)


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
        results = _outputs(run_op(args))
        return _counted_outputs(node, args, attributes, counted, results)
    call = Call(node, list(args), attributes, list(marks), run_op)
    kind = getattr(getattr(node.op, "contract", None), "padding", "")
    rule = _RULES.get(kind)
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
        "move values, gathers, scatters, reductions, TopK, Shape); see the docs' size hints page (docs/guide/shapes.md)."
    )


# --------------------------------------------------------------------------- helpers


def real_mask(shape: tuple[int, ...], axes: dict[int, Mark]):
    """A bool array broadcastable to ``shape``: True at the real positions."""
    mask = None
    for axis, mark in axes.items():
        along = jnp.arange(shape[axis], dtype=jnp.int32) < mark.count
        along = along.reshape([-1 if d == axis else 1 for d in range(len(shape))])
        mask = along if mask is None else mask & along
    return jnp.ones((1,) * len(shape), bool) if mask is None else mask


def _merge(into: dict[int, Mark], axis: int, mark: Mark) -> None:
    if axis in into and into[axis] is not mark:
        into[axis] = dataclasses.replace(into[axis], count=jnp.minimum(into[axis].count, mark.count))
    else:
        into[axis] = mark


def _with_count(mark: Mark, count) -> Mark:
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


def _filled(value, axes: dict[int, Mark], fill):
    """``value`` with ``fill`` (a number, ``"lowest"`` or ``"highest"``) at the marked positions of ``axes``."""
    value = jnp.asarray(value)  # numpy int64 becomes int32 with x64 off: the fill follows
    fill = {"lowest": _lowest, "highest": _highest}[fill](value.dtype) if isinstance(fill, str) else fill
    return jnp.where(real_mask(value.shape, axes), value, jnp.asarray(fill, value.dtype))


def _reals(call: Call) -> list:
    """The inputs with each length replaced by its real value."""
    return [m.real if m is not None and m.lengths is not None else a for a, m in zip(call.args, call.marks)]


def _length_flags(call: Call, index: int):
    m = call.marks[index]
    return None if m is None or m.lengths is None else m.lengths


def _length_origin(call: Call) -> Mark:
    origin = next(m.length_origin for m in call.marks if m is not None and m.lengths is not None)
    assert origin is not None, "flagged lengths carry the mark whose length they hold"
    return origin


def _has_lengths(call: Call) -> bool:
    return any(m is not None and m.lengths is not None for m in call.marks)


def _axis_marks(call: Call, index: int) -> dict[int, Mark]:
    m = call.marks[index]
    return {} if m is None else m.axes


def _only_inputs(call: Call, indices: Sequence[int], what: str) -> None:
    """Refuses marks on inputs other than ``indices``."""
    for i, m in enumerate(call.marks):
        if m is not None and i not in indices:
            call.refuse(what)


def _outputs(results) -> tuple:
    return results if isinstance(results, tuple) else (results,)


# --------------------------------------------------------------------------- rules


def _elementwise(call: Call):
    results = _outputs(call.run(call.args))
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
            _merge(axes, out_axis, mark)
    lengths: np.ndarray | None = None
    real: tuple = ()  # set with ``lengths``
    if _has_lengths(call):
        lengths = np.zeros(shape, bool)
        for marks in call.marks:
            if marks is not None and marks.lengths is not None:
                lengths = lengths | np.broadcast_to(marks.lengths, shape)
        real = _outputs(call.run(_reals(call)))
    out = []
    for index, _ in enumerate(results):
        length = None if lengths is None else _length_marks(lengths, real[index], _length_origin(call))
        out.append(_combine(dict(axes), length))
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
    for axis, mark in _axis_marks(call, 0).items():
        if data.shape[axis] == 0:
            continue  # no positions to mark
        if any(isinstance(a, jax.core.Tracer) for a in call.args[1:] if a is not None):
            call.refuse("moves it by traced parameters")
        probes = _outputs(call.run([_probe(data.shape, axis, data.dtype), *call.args[1:]]))
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
            _merge(out[index], landed, _with_count(mark, count))
    return out


def _moves(call: Call, lengths_as: str = ""):
    """``lengths_as``: what a padded length in a parameter means (see the kinds above): ``""``
    (it is refused), ``"shape"`` (Reshape), ``"broadcast_shape"`` (Expand) or ``"ends"`` (Slice)."""
    results = _outputs(call.run(call.args))
    positions = _moved_marks(call, results)
    lengths: list[Marks | None] = [None] * len(results)
    first = call.marks[0]
    if first is not None and first.lengths is not None:
        flags = _outputs(call.run([np.asarray(first.lengths, np.int64), *call.args[1:]]))
        real = _outputs(call.run([first.real, *call.args[1:]]))
        lengths = [_length_marks(np.asarray(f) != 0, r, _length_origin(call)) for f, r in zip(flags, real)]
    for i in range(1, len(call.args)):
        flags = _length_flags(call, i)
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
            _merge(positions[0], axis, _with_count(_length_origin(call), real[entry]))
    return results, [_combine(p, n) for p, n in zip(positions, lengths)]


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
        _merge(positions, axis, _with_count(_length_origin(call), real[entry]))


def _combine(axes: dict[int, Mark], lengths: Marks | None) -> Marks | None:
    if lengths is None:
        return Marks(axes) if axes else None
    if not axes:
        return lengths
    return dataclasses.replace(lengths, axes=axes)


def _concat(call: Call):
    results = _outputs(call.run(call.args))
    out = results[0]
    axis = call.attributes.get("axis", 0)
    axis = axis + out.ndim if axis < 0 else axis
    axes: dict[int, Mark] = {}
    for marks in call.marks:
        for a, mark in ({} if marks is None else marks.axes).items():
            if a != axis:
                _merge(axes, a, mark)
    along = [m.axes[axis] if m is not None and axis in m.axes else None for m in call.marks]
    if any(along):
        # The real entries of each input first, in order, then all the padding: as the exact
        # concatenation of the real parts would have them.
        masks = [
            jnp.arange(a.shape[axis]) < (m.count if m is not None else a.shape[axis]) for a, m in zip(call.args, along)
        ]
        real = jnp.concatenate(masks)
        order = jnp.argsort(~real, stable=True)
        out = jnp.take(jnp.asarray(out), order, axis=axis)
        count = sum(m.count if m is not None else a.shape[axis] for a, m in zip(call.args, along))
        axes[axis] = _with_count(next(m for m in along if m is not None), count)
    lengths = None
    if _has_lengths(call):
        flags = [
            np.zeros(np.shape(a), bool) if _length_flags(call, i) is None else _length_flags(call, i)
            for i, a in enumerate(call.args)
        ]
        lengths = _length_marks(
            np.concatenate(flags, axis=axis), _outputs(call.run(_reals(call)))[0], _length_origin(call)
        )
    return (out,), [_combine(axes, lengths)]


def _gather(call: Call):
    data, indices = call.args[0], call.args[1]
    axis = call.attributes.get("axis", 0)
    axis = axis + data.ndim if axis < 0 else axis
    index_axes = _axis_marks(call, 1)
    if _length_flags(call, 1) is not None:
        call.refuse("takes a padded length as indices")
    args = list(call.args)
    if index_axes:
        mask = real_mask(indices.shape, index_axes)
        args[1] = jnp.where(mask, indices, 0)
    results = _outputs(call.run(args))
    out = results[0]
    axes: dict[int, Mark] = {}
    if index_axes:
        shaped = mask.reshape((1,) * axis + mask.shape + (1,) * (data.ndim - axis - 1))
        out = jnp.where(shaped, out, 0)
        for a, mark in index_axes.items():
            _merge(axes, axis + a, mark)
    for a, mark in _axis_marks(call, 0).items():
        if a != axis:  # a gathered axis: the indices name real positions
            _merge(axes, a if a < axis else a + indices.ndim - 1, mark)
    lengths = None
    if _length_flags(call, 0) is not None:
        flags = np.take(_length_flags(call, 0), np.asarray(indices), axis=axis)
        lengths = _length_marks(flags, _outputs(call.run(_reals(call)))[0], _length_origin(call))
    return (out,), [_combine(axes, lengths)]


def _gather_elements(call: Call):
    data, indices = call.args[0], call.args[1]
    axis = call.attributes.get("axis", 0)
    axis = axis + data.ndim if axis < 0 else axis
    _no_lengths(call)
    index_axes = _axis_marks(call, 1)
    args = list(call.args)
    mask = real_mask(indices.shape, index_axes)
    if index_axes:
        args[1] = jnp.where(mask, indices, 0)
    out = _outputs(call.run(args))[0]
    if index_axes:
        out = jnp.where(mask, out, 0)
    axes = dict(index_axes)
    for a, mark in _axis_marks(call, 0).items():
        if a != axis and indices.shape[a] == data.shape[a]:
            _merge(axes, a, mark)
        elif a != axis:
            call.refuse(f"reads a part of the padded axis {a}")
    return (out,), [Marks(axes) if axes else None]


def _gather_nd(call: Call):
    indices = call.args[1]
    batch = call.attributes.get("batch_dims", 0) or 0
    _no_lengths(call)
    index_axes = _axis_marks(call, 1)
    if indices.ndim - 1 in index_axes:
        call.refuse("marks the coordinates of its index rows as padding")
    args = list(call.args)
    mask = real_mask(indices.shape[:-1], index_axes)
    if index_axes:
        args[1] = jnp.where(mask[..., None], indices, 0)
    out = _outputs(call.run(args))[0]
    axes = dict(index_axes)
    if index_axes:
        out = jnp.where(mask.reshape(mask.shape + (1,) * (out.ndim - mask.ndim)), out, 0)
    k = indices.shape[-1]
    for a, mark in _axis_marks(call, 0).items():
        if a < batch:
            _merge(axes, a, mark)
        elif a >= batch + k:
            _merge(axes, indices.ndim - 1 + a - batch - k, mark)
    return (out,), [Marks(axes) if axes else None]


def _scatter(call: Call, nd: bool = False):
    """``nd``: each update has a row of indices (``"scatter_nd"``), not a single index."""
    data, indices, updates = call.args[:3]
    _no_lengths(call)
    rows = indices.shape[:-1] if nd else indices.shape
    keep = jnp.ones(rows, bool)
    for i in (1, 2):
        for a, mark in _axis_marks(call, i).items():
            if a >= len(rows):
                call.refuse("marks a part of each update as padding, not whole updates")
            keep = keep & real_mask(rows, {a: mark})
    indices = jnp.asarray(indices)
    if nd and updates.ndim and 0 < len(rows) == 1 and updates.shape[0] < rows[0] and 0 in _axis_marks(call, 1):
        # `x.masked_scatter(mask, src)`: the updates are `src` cut to the padded length of the
        # selection (Slice(src, 0, n)), so no longer than `src`; the rows past them are marked
        # (there are never more real rows than `src` has entries, which torch requires).
        count = _axis_marks(call, 1)[0].count
        refuse_at_run_time_if(
            count > updates.shape[0],
            lambda found: (
                f"Node {call.node.path!r} ({call.node.op.name}) scatters {int(found)} selected positions but has "
                f"only {updates.shape[0]} updates."
            ),
            count,
        )
        updates = jnp.pad(jnp.asarray(updates), [(0, rows[0] - updates.shape[0])] + [(0, 0)] * (updates.ndim - 1))
    if nd:
        beyond = jnp.asarray(np.array(data.shape[: indices.shape[-1]]), indices.dtype)
        dropped = jnp.where(keep[..., None], indices, beyond)
    else:
        dropped = jnp.where(keep, indices, data.shape[call.attributes.get("axis", 0)])
    # Traced, out-of-range indices write nothing (the op's rule); eagerly too, run under jit.
    results = _outputs(jax.jit(lambda d, i, u: call.run([d, i, u, *call.args[3:]]))(data, dropped, updates))
    axes = _axis_marks(call, 0)
    return results, [Marks(dict(axes)) if axes else None for _ in results]


def _no_lengths(call: Call) -> None:
    if _has_lengths(call):
        call.refuse("takes a padded length as data")


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
        _only_inputs(call, (0,), "takes it as its reduction axes")
        rank = np.ndim(data)
        reduced, keepdims = _reduced_axes(call, rank)
        axes = _axis_marks(call, 0)
        gone = {a: m for a, m in axes.items() if a in reduced}
        args = list(call.args)
        if gone:
            fill = {"sum": 0, "mean": 0, "prod": 1, "max": "lowest", "min": "highest"}[kind]
            args[0] = _filled(data, gone, fill)
        if gone and kind == "mean":  # the sum of the real entries over their number
            total = jnp.sum(args[0], axis=reduced, keepdims=keepdims)
            count = jnp.asarray(np.prod([data.shape[a] for a in reduced if a not in gone]), total.dtype)
            for mark in gone.values():
                count = count * mark.count.astype(total.dtype)
            integer = jnp.issubdtype(total.dtype, jnp.integer)  # truncated toward zero, as the op's own mean
            results = (jax.lax.div(total, count) if integer else total / count,)
        else:
            results = _outputs(call.run(args))
        kept: dict[int, Mark] = {}
        for a, mark in axes.items():
            if a not in reduced:
                kept[a if keepdims else a - sum(r < a for r in reduced)] = mark
        lengths = None
        data_lengths = _length_flags(call, 0)
        if data_lengths is not None:
            flags = np.any(data_lengths, axis=reduced, keepdims=keepdims)
            lengths = _length_marks(flags, _outputs(call.run(_reals(call)))[0], _length_origin(call))
        return results, [_combine(kept, lengths) for _ in results]

    return rule


def _matmul(call: Call):
    a, b = call.args[0], call.args[1]
    if _has_lengths(call):
        call.refuse("multiplies padded lengths")
    rank_a, rank_b = np.ndim(a), np.ndim(b)
    marks_a, marks_b = _axis_marks(call, 0), _axis_marks(call, 1)
    inner_a, inner_b = rank_a - 1, max(rank_b - 2, 0)
    # Entries padded along the contracted axis (in either operand) add nothing: both are 0 there.
    inner = [m for m in (marks_a.get(inner_a), marks_b.get(inner_b)) if m is not None]
    args = list(call.args)
    for mark in inner:
        args[0] = _filled(args[0], {inner_a: mark}, 0)
        args[1] = _filled(args[1], {inner_b: mark}, 0)
    results = _outputs(call.run(args))
    shape = np.shape(results[0])
    rank = len(shape)
    batch = rank - (rank_a >= 2) - (rank_b >= 2)
    axes: dict[int, Mark] = {}
    # By position, not identity: MatMul(X, X) passes one array twice.
    for is_b, (operand, marks, operand_rank, inner_axis) in enumerate(
        ((a, marks_a, rank_a, inner_a), (b, marks_b, rank_b, inner_b))
    ):
        for axis, mark in marks.items():
            if axis == inner_axis:
                continue
            if axis >= operand_rank - 2:  # A's rows or B's columns
                out_axis = rank - 1 if is_b or rank_b < 2 else rank - 2
            else:
                out_axis = axis + batch - (operand_rank - 2)
                if shape[out_axis] != np.shape(operand)[axis]:
                    call.refuse(f"broadcasts the padded axis {axis} to length {shape[out_axis]}")
            _merge(axes, out_axis, mark)
    return results, [Marks(axes) if axes else None]


def _top_k(call: Call):
    data, k = call.args[0], call.args[1] if len(call.args) > 1 else None
    axis = call.attributes.get("axis", -1)
    axis = axis + data.ndim if axis < 0 else axis
    largest = call.attributes.get("largest", 1)
    if _length_flags(call, 0) is not None:
        call.refuse("ranks padded lengths")
    axes = dict(_axis_marks(call, 0))
    args = list(call.args)
    if axis in axes:  # marked entries rank last
        args[0] = _filled(data, {axis: axes[axis]}, "lowest" if largest else "highest")
    results = _outputs(call.run(args))
    length = np.shape(results[0])[axis]
    if axis in axes:
        axes[axis] = _with_count(axes[axis], jnp.minimum(axes[axis].count, length))
    if k is not None and call.marks[1] is not None:
        real_k = jnp.asarray(call.marks[1].real).reshape(-1)[0]
        _merge(axes, axis, _with_count(_length_origin(call), real_k))
    return results, [Marks(dict(axes)) if axes else None for _ in results]


def _shape(call: Call):
    _only_inputs(call, (0,), "")
    results = _outputs(call.run(call.args))
    data = call.args[0]
    axes = _axis_marks(call, 0)
    if not axes:
        return results, [None]  # the shape of a length: its length is not padded
    rank = np.ndim(data)
    start = call.attributes.get("start", 0) or 0
    end = call.attributes.get("end")
    dims = list(range(rank))[slice(start, end)]
    shape = np.asarray(results[0])
    flags = np.array([d in axes for d in dims], bool)
    real = (
        jnp.stack(
            [
                jnp.asarray(axes[d].count if d in axes else n).astype(jnp.asarray(shape).dtype)
                for d, n in zip(dims, shape)
            ]
        )
        if dims
        else jnp.asarray(shape)
    )
    return results, [_length_marks(flags, real, next(iter(axes.values())))]


def _size(call: Call):
    data = call.args[0]
    axes = _axis_marks(call, 0)
    results = _outputs(call.run(call.args))
    if not axes:
        return results, [None]
    real = jnp.asarray(1, jnp.asarray(results[0]).dtype)
    for d, n in enumerate(np.shape(data)):
        real = real * (axes[d].count.astype(real.dtype) if d in axes else n)  # counts are int32
    return results, [_length_marks(np.ones((), bool), real, next(iter(axes.values())))]


def _constant_of_shape(call: Call):
    results = _outputs(call.run(call.args))
    shape_marks = call.marks[0]
    if shape_marks is None or shape_marks.lengths is None:
        call.refuse("takes it as its value")
    flags = shape_marks.lengths
    real = jnp.asarray(shape_marks.real).reshape(-1)
    axes = {int(i): _with_count(_length_origin(call), real[i]) for i in np.flatnonzero(flags.reshape(-1))}
    return results, [Marks(axes)]


def _range(call: Call):
    results = _outputs(call.run(call.args))
    if any(m is not None and m.lengths is None for m in call.marks):
        call.refuse("takes a padded value as a bound")
    start, limit, delta = (jnp.asarray(r).reshape(()) for r in _reals(call)[:3])
    count = jnp.maximum(jnp.ceil((limit - start) / delta), 0).astype(jnp.int32)
    return results, [Marks({0: _with_count(_length_origin(call), jnp.minimum(count, np.shape(results[0])[0]))})]


def _non_max_suppression(call: Call):
    scores = call.args[1]
    _only_inputs(call, (0, 1), "takes it as a parameter")
    if _has_lengths(call):
        call.refuse("takes a padded length as boxes or scores")
    marks = [
        *_axis_marks(call, 0).items(),
        *((a - 1 if a == 2 else -a - 1, m) for a, m in _axis_marks(call, 1).items()),
    ]
    if any(axis != 1 for axis, _ in marks):  # boxes' axis 1 and scores' axis 2 are the boxes
        call.refuse("pads an axis other than the boxes (a batch, a class or a coordinate)")
    count = marks[0][1].count
    for _, mark in marks[1:]:
        count = jnp.minimum(count, mark.count)
    args = list(call.args)
    # Visited after every real box, a marked box can neither take a real one's place under
    # max_output_boxes_per_class nor suppress one: the real rows are the exact result's.
    args[1] = _filled(scores, {2: Mark(count, "", "")}, "lowest")
    results = _outputs(call.run(args))
    rows = jnp.asarray(results[0])
    real = results[-1] if isinstance(results[-1], RealLength) else None
    keep = rows[:, 2] < count.astype(rows.dtype)
    if real is not None:
        keep = keep & (jnp.arange(rows.shape[0]) < jnp.asarray(real.count))
    if real is None and not isinstance(keep, jax.core.Tracer):  # exact rows: drop those that name a marked box
        selected = rows[np.asarray(keep)]
        return (selected if isinstance(results[0], jax.Array) else np.asarray(selected),), [None]
    # Padded rows: the real ones first, then the op's own padding ([batches, classes, boxes]).
    pads = jnp.asarray(np.array(scores.shape), rows.dtype)
    order = jnp.argsort(~keep, stable=True)
    kept = keep[order]
    selected = jnp.where(kept[:, None], rows[order], pads)
    if real is None:
        return (selected,), [None]
    return (selected, RealLength(jnp.count_nonzero(keep), real.axes)), [None, None]


_RULES: dict[str, Callable[[Call], tuple[tuple, list]]] = {
    "elementwise": _elementwise,
    "moves": _moves,
    "reshape": lambda call: _moves(call, lengths_as="shape"),
    "expand": lambda call: _moves(call, lengths_as="broadcast_shape"),
    "slice": lambda call: _moves(call, lengths_as="ends"),
    "concat": _concat,
    "gather": _gather,
    "gather_elements": _gather_elements,
    "gather_nd": _gather_nd,
    "scatter": _scatter,
    "scatter_nd": lambda call: _scatter(call, nd=True),
    **{kind: _reduction(kind) for kind in ("sum", "prod", "max", "min", "mean")},
    "matmul": _matmul,
    "top_k": _top_k,
    "shape": _shape,
    "size": _size,
    "constant_of_shape": _constant_of_shape,
    "range": _range,
    "non_max_suppression": _non_max_suppression,
}
