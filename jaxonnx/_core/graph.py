"""The graph runner: one prepared graph type for the main graph, every subgraph and every
function body, and the one place where a node becomes an op call.

Read top to bottom:

1. :class:`Graph.prepare` resolves every node's op for the model's opsets (a registered
   op, else a model-local function, else the function body onnx defines for the op), reads
   the graph's initializers, prepares every GRAPH attribute as a :class:`Graph` of its own
   (at any depth), and finds the outer-scope names the graph reads. Every unsupported op,
   at any depth, goes into one list, so a model fails to load with one error naming them all.
2. :meth:`Graph.run` evaluates the nodes in order on a dict of values (the enclosing
   scope's values it reads, its initializers, its inputs).
3. :func:`run_node` calls a node's op: its inputs, its attributes (each GRAPH attribute as
   a function of the subgraph's inputs, closed over the values visible at the node, as
   ``lax.cond`` takes functions) and an :class:`~jaxonnx._core.context.OpContext` with what
   the op's contract takes from the node and the call, inside ``jax.named_scope``.

Gradient (``ai.onnx.preview.training``) differentiates part of its own graph: the nodes
that compute its ``y`` from its ``xs`` and ``zs``. :func:`_cut_computations` cuts them out
at preparation as a graph of their own (its inputs ``xs`` then ``zs``, its output ``y``,
every other value it reads taken from the enclosing graph as a constant), and
:func:`run_node` hands it to the op as a function, as a GRAPH attribute is handed over.

Values known at trace time (initializers, ``Constant`` outputs and everything computed
only from them) stay numpy, in subgraphs too, so shape arithmetic folds everywhere.

Random keys: a node's key is ``jax.random.fold_in(key, i)`` for the ``i``-th node of its
graph, where ``key`` is the caller's key for the main graph and the key of the enclosing
node for a subgraph (an op that runs a subgraph several times, e.g. Loop, folds in the
iteration). The same key therefore always gives the same draws, and different nodes draw
independently.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, cast

import jax
import numpy as np
import onnx

from jaxonnx._core import layout
from jaxonnx._core import padding as padding_rules
from jaxonnx._core.context import OpContext
from jaxonnx._core.dtypes import onnx_type_name
from jaxonnx._core.loading import canonical_domain, node_attributes, read_tensor, sparse_to_numpy, tensor_to_numpy
from jaxonnx._core.registry import REGISTRY, OpContract, OpVersion, Registry, is_traced
from jaxonnx._core.types import ValueType, declared_values
from jaxonnx._errors import (
    JaxOnnxError,
    ModelLoadError,
    OnnxValidationError,
    StaticValueError,
    UnsupportedOpError,
    with_context,
)

_FUNCTION_DEPTH_LIMIT = 64  # a function that calls itself would otherwise expand forever


@dataclasses.dataclass
class Environment:
    """What every graph of one model is prepared with: the opsets, the op registry, the
    model's local functions, the size hints still unclaimed (claimed ones are removed), the
    loop bounds (by node name, node path or output name) and those claimed so far,
    load-time options, and the list of unsupported ops found so far."""

    opsets: dict[str, int]
    registry: Registry = REGISTRY
    functions: dict[tuple[str, str], onnx.FunctionProto] = dataclasses.field(default_factory=dict)
    size_hints: dict[str, int] = dataclasses.field(default_factory=dict)
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    problems: list[str] = dataclasses.field(default_factory=list)
    hinted_outputs: list[str] = dataclasses.field(default_factory=list)
    loop_bounds: dict[str, int] = dataclasses.field(default_factory=dict)
    claimed_bounds: set[str] = dataclasses.field(default_factory=set)
    bounded_nodes: list[str] = dataclasses.field(default_factory=list)

    def with_opsets(self, opsets: Mapping[str, int]) -> Environment:
        """The same environment for a function body, whose own opset_import applies."""
        return dataclasses.replace(self, opsets={**self.opsets, **opsets})


@dataclasses.dataclass(frozen=True)
class Node:
    """A node prepared once: its op, its value names, its attributes (a GRAPH attribute as
    a prepared :class:`Graph`), and its size hint."""

    name: str
    path: str  # the name for errors: "Add_3", or "/If_0/then_branch/Add_3" in a subgraph
    op: Any  # an OpVersion or a FunctionOp: called as op(*inputs, ctx=..., **attributes)
    inputs: tuple[str, ...]  # "" for an omitted optional input
    outputs: tuple[str, ...]
    attributes: dict[str, Any]
    size: int | None = None
    computation: Graph | None = None  # what Gradient differentiates: y as a function of xs and zs

    @property
    def subgraphs(self) -> list[Graph]:
        return [
            g
            for value in self.attributes.values()
            for g in (value if isinstance(value, list) else [value])
            if isinstance(g, Graph)
        ]

    @property
    def bodies(self) -> list[Graph]:
        """Every graph the node runs: its GRAPH attributes and Gradient's computation."""
        return self.subgraphs + ([self.computation] if self.computation is not None else [])


class Graph:
    """A graph prepared once; :meth:`run` evaluates it.

    Attributes:
        name: the graph's name.
        path: where it sits in the model, for errors ("" for the main graph,
            "/If_0/then_branch" for a subgraph).
        nodes: the prepared nodes, in graph order.
        initializers: exact numpy arrays by name.
        inputs, outputs: the declared types of the graph's inputs and outputs.
        outer_names: the names the graph (or any graph inside it) reads from enclosing scopes.
    """

    _pads_itself: bool  # whether a size-hinted node is inside it, at any depth (set by `_reads_padding`)

    def __init__(
        self, name, path, nodes, initializers, inputs, outputs, outer_names, key_indices=None, value_info=None
    ):
        self.name = name
        self.path = path
        self.nodes: tuple[Node, ...] = nodes
        self.initializers: dict[str, np.ndarray] = initializers
        self.inputs: tuple[ValueType, ...] = inputs
        self.outputs: tuple[ValueType, ...] = outputs
        self.outer_names: frozenset[str] = outer_names
        # The position each node's random key is folded from: its own index, except in a
        # computation cut out for Gradient, whose nodes draw as they do in their graph.
        self.key_indices: tuple[int, ...] = tuple(range(len(nodes))) if key_indices is None else key_indices
        # The graph's value_info declarations, checked as nodes compute them (types.py), and
        # the values whose shape was found to differ (a DeclaredShapeWarning each, once).
        self.value_info: dict[str, ValueType] = value_info or {}
        self.warned_shapes: set[str] = set()

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs)

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.outputs)

    # ----------------------------------------------------------------------- preparing

    @classmethod
    def prepare(
        cls,
        proto: onnx.GraphProto,
        env: Environment,
        *,
        path: str = "",
        outer: frozenset[str] = frozenset(),
        read_initializers: bool = True,
    ) -> Graph:
        """Prepares ``proto`` (and every subgraph in it) for ``env``; unsupported ops are
        added to ``env.problems``, not raised, so that one error can name them all."""
        initializers: dict[str, np.ndarray] = {}
        if read_initializers:
            for tensor in proto.initializer:
                initializers[tensor.name] = read_tensor(
                    tensor_to_numpy, tensor, f"initializer {tensor.name!r}{_in(path)}"
                )
            for sparse in proto.sparse_initializer:
                name = sparse.values.name
                initializers[name] = read_tensor(sparse_to_numpy, sparse, f"sparse initializer {name!r}{_in(path)}")
        inputs = tuple(ValueType.declared(v, "input", _in(path)) for v in proto.input)
        outputs = tuple(ValueType.declared(v, "output", _in(path)) for v in proto.output)
        defined = set(initializers) | {i.name for i in inputs} | {t.name for t in proto.initializer}
        defined |= {s.values.name for s in proto.sparse_initializer}
        nodes: list[Node] = []
        reads: set[str] = set()
        for index, node_proto in enumerate(proto.node):
            node = prepare_node(node_proto, index, env, path, outer | defined)
            if node is not None:
                nodes.append(node)
                for sub in node.subgraphs:
                    reads |= sub.outer_names
            reads |= {name for name in node_proto.input if name}
            defined |= {name for name in node_proto.output if name}
        reads |= {o.name for o in outputs if o.name}
        if any(node.op.contract.takes("computation") for node in nodes):
            nodes = _cut_computations(nodes, defined | outer, path)
        outer_names = frozenset(reads - defined)
        if path and outer_names - outer:
            missing = sorted(outer_names - outer)
            raise ModelLoadError(
                f"The subgraph {path} reads {', '.join(map(repr, missing))}, which no node, input or "
                "initializer of it or of an enclosing graph defines."
            )
        return cls(
            proto.name,
            path,
            tuple(nodes),
            initializers,
            inputs,
            outputs,
            outer_names,
            value_info=declared_values(proto),
        )

    # ----------------------------------------------------------------------- running

    def run(
        self,
        feed: Mapping[str, Any],
        scope: Mapping[str, Any] = {},
        *,
        rng=None,
        options: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        checks=None,
        scope_padding: Mapping[str, padding_rules.Marks] | None = None,
        output_padding: list | None = None,
    ) -> tuple:
        """The graph's outputs for ``feed`` (its inputs by name), reading ``scope`` (the
        enclosing graphs' values) for the outer names it uses. Values are not checked
        against the declarations here; :class:`~jaxonnx.Model` checks the main graph's.
        ``checks``: a :class:`~jaxonnx._core.checks.DeferredChecks` that collects the checks
        of traced values the ops defer (an eager call's compiled graph), or None.
        ``scope_padding``: the padding marks of the enclosing graphs' values (a subgraph
        reads padded values as its node's ops would); ``output_padding``: a list that gets
        the marks of the graph's outputs (None where an output has none)."""
        values: dict[str, Any] = {name: scope[name] for name in self.outer_names if name in scope}
        values.update(self.initializers)
        values.update(params or {})
        values.update(feed)
        options = dict(options or {})
        # The values a size hint's padding reaches (padding.py), from the enclosing scope on.
        padding: dict[str, padding_rules.Marks] = {
            name: marks for name, marks in (scope_padding or {}).items() if name in self.outer_names
        }
        for index, node in zip(self.key_indices, self.nodes):
            if params and node.outputs and node.outputs[0] in params and _trait(node, "outputs_attribute", ""):
                continue  # a param replaces this Constant's value (paddle2onnx stores weights as Constants)
            run_node(
                node, values, rng=_node_key(rng, index), options=options, padding=padding, graph_rng=rng, checks=checks
            )
            if self.value_info:
                self._check_declared(node, values, padding)
        if output_padding is not None:
            output_padding.extend(padding.get(name) if name else None for name in self.output_names)
        else:  # the caller gets the outputs (the main graph, a function body): padding it asked for only
            for name in self.output_names:
                origin = padding_rules.unasked_padding(padding.get(name)) if name else None
                if origin is not None:
                    raise self._unasked_padding(name, origin)
        return tuple(
            padding_rules.real_output(layout.channels_first(values[name]), padding.get(name)) if name else None
            for name in self.output_names
        )

    def _unasked_padding(self, name: str, origin: padding_rules.Mark) -> StaticValueError:
        """The error for the output ``name``, padded by a slice between traced bounds (``origin``)
        where no size hint asks for a padded output."""
        node = next(n for n in self.walk() if n.path == origin.node)
        traced = [i for i in node.inputs[1:3] if i]
        error = StaticValueError(
            f"Node {node.path!r} ({node.op.name}) slices between bounds known only at run time: the input "
            f"{', '.join(map(repr, traced))} depends on graph inputs, so under jax.jit its output {origin.output!r} is "
            f"padded to its input's length, and it reaches the graph output {name!r}, where no size hint asks for a "
            "padded value. Ways out: make it an initializer or the output of Constant nodes (then jaxonnx knows it "
            f"at trace time), give a size hint (`jaxonnx.load(model, size_hints={{{origin.output!r}: <length>}})`: the "
            "output is then that long, its real entries first), or run the model outside `jax.jit`."
        )
        error.argument = "starts"
        return error

    def _check_declared(self, node: Node, values, padding) -> None:
        """Checks what ``node`` computed against the graph's value_info, as onnxruntime does:
        another element type is an error, another shape a warning (see ``ValueType.check_computed``).
        A value a size hint pads has the hinted length on purpose and is not compared."""
        for name in node.outputs:
            declared = self.value_info.get(name)
            if declared is not None and name not in padding:
                declared.check_computed(values[name], node=f"{node.path!r} ({node.op.name})", warned=self.warned_shapes)

    def walk(self):
        """Every node of the graph and of its subgraphs, depth first."""
        for node in self.nodes:
            yield node
            for sub in node.subgraphs:
                yield from sub.walk()


def _in(path: str) -> str:
    return f" in the subgraph {path}" if path else ""


def _node_key(rng, index: int):
    return None if rng is None else jax.random.fold_in(rng, index)


class Subgraph:
    """A prepared subgraph closed over the values visible at its node: a function of the
    subgraph's inputs that returns its outputs (a tuple), as ``lax.cond`` takes functions.

    ``input_names`` / ``output_names`` and ``inputs`` / ``outputs`` (declared types) say
    what it takes and gives. ``rng=`` gives the draws of one call their own key (Loop
    folds in the iteration); by default they use the key of the node that runs it.
    """

    def __init__(
        self,
        graph: Graph,
        scope: Mapping[str, Any],
        rng,
        options,
        padding: Mapping[str, padding_rules.Marks] | None = None,
        carry_counts: bool = False,
    ):
        self.graph = graph
        self._scope = {name: scope[name] for name in graph.outer_names if name in scope}
        self._padding = {name: padding[name] for name in graph.outer_names if padding and name in padding}
        self._rng = rng
        self._options = options
        self._carry_counts = carry_counts
        self.inputs, self.outputs = graph.inputs, graph.outputs
        self.input_names, self.output_names = graph.input_names, graph.output_names
        self.path = graph.path
        self.output_marks: list[list[padding_rules.Marks | None]] = []  # per call (a trace)
        # Set by the runner for an If on a padded length: the shape each output is padded
        # to (None: as it is), and the mark the padding names (see `_if_on_a_length`).
        self.pad_to: list[tuple[int, ...] | None] | None = None
        self.pad_origin: padding_rules.Mark | None = None

    def _padded(self, outputs: tuple, marks: list) -> tuple[tuple, list]:
        """The outputs padded with zeros to ``pad_to``, marked at their own lengths."""
        assert self.pad_to is not None and self.pad_origin is not None  # set together by `_pad_branches`
        padded, padded_marks = [], []
        for value, output_marks, target in zip(outputs, marks, self.pad_to):
            if target is None or not hasattr(value, "shape") or tuple(np.shape(value)) == target:
                padded.append(value)
                padded_marks.append(output_marks)
                continue
            shape = np.shape(value)
            axes = dict({} if output_marks is None else output_marks.axes)
            for axis, (length, full) in enumerate(zip(shape, target)):
                if full > length and axis not in axes:
                    axes[axis] = dataclasses.replace(self.pad_origin, count=length)
            widths = [(0, full - length) for length, full in zip(shape, target)]
            padded.append(np.pad(value, widths) if isinstance(value, np.ndarray) else jax.numpy.pad(value, widths))
            padded_marks.append(padding_rules.Marks(axes))
        return tuple(padded), padded_marks

    def __call__(self, *inputs, rng=None):
        if len(inputs) != len(self.graph.inputs):
            raise OnnxValidationError(
                f"The subgraph {self.path} takes {len(self.graph.inputs)} inputs "
                f"({', '.join(self.input_names) or 'none'}), got {len(inputs)}."
            )
        feed = dict(zip(self.input_names, inputs))
        marks: list[padding_rules.Marks | None] = []
        outputs = self.graph.run(
            feed,
            self._scope,
            rng=self._rng if rng is None else rng,
            options=self._options,
            scope_padding=self._padding,
            output_padding=marks,
        )
        if self.pad_to is not None:
            outputs, marks = self._padded(outputs, marks)
        self.output_marks.append(marks)
        if not self._carry_counts:
            return outputs
        # The marks' counts leave as outputs: inside jax.lax.cond they are values of the
        # branch's own trace, which only its outputs can carry out. One int32 per axis of
        # each array output (its whole length where it is not marked), so that both
        # branches give the same outputs whatever each marks.
        counts = []
        for value, output_marks in zip(outputs, marks):
            axes = {} if output_marks is None else output_marks.axes
            for axis in range(np.ndim(value) if hasattr(value, "shape") else 0):
                counts.append(jax.numpy.asarray(axes[axis].count if axis in axes else np.shape(value)[axis], np.int32))
        return (*outputs, *counts)


def run_node(
    node: Node,
    values: dict[str, Any],
    *,
    rng=None,
    options: Mapping[str, Any] | None = None,
    padding: dict[str, padding_rules.Marks] | None = None,
    graph_rng=None,
    checks=None,
) -> None:
    """Runs one node on ``values`` (by name) and stores its outputs there; ``padding``
    holds the marks of the values a size hint's padding reaches, and the node's op
    follows its contract's padding rule on them (see :mod:`jaxonnx._core.padding`).
    ``graph_rng`` is the key of the node's graph, from which a computation cut out for
    Gradient draws as its nodes do in the graph."""
    padding = {} if padding is None else padding
    args = [values[name] if name else None for name in node.inputs]
    marks = [padding.get(name) if name else None for name in node.inputs]
    marked = any(m is not None for m in marks)
    if node.computation is not None:
        read = sorted(
            name for name in node.computation.outer_names if name in padding and padding[name].counted is None
        )
        if read:  # Gradient differentiates its computation as a whole: no rule follows the padding into it
            raise node_error(
                node,
                args,
                padding_rules.refusal(
                    node,
                    padding[read[0]].origin(),
                    "differentiates a computation that reads it, where no rule follows the padding",
                ),
            )
    # Marks follow the values a subgraph reads from the enclosing scope, and come out through
    # If's outputs (its outputs are its branch's); see `_subgraph_output_marks`.
    on_length = _is_if_on_a_length(node, marks)
    if on_length:
        args, marks, marked = [padding[node.inputs[0]].real], [None], False
    padded_bodies = on_length or any(_reads_padding(body, padding) for body in node.subgraphs)
    carry_counts = padded_bodies and bool(_trait(node, "branches", ()))
    attributes = {
        name: _bind(value, values, rng, options, padding if padded_bodies else None, carry_counts)
        for name, value in node.attributes.items()
    }
    if on_length:
        _pad_branches(node, attributes, padding[node.inputs[0]].origin())  # its length_origin: it has no axes
    computation = None if node.computation is None else Subgraph(node.computation, values, graph_rng, options)
    deferred = None
    # Not where padding reaches the node: its rule sends padded indices out of range on purpose.
    if checks is not None and not marked and isinstance(node.op, OpVersion) and node.op.contract.takes("checks"):
        # Named as a run on the known values names the node that fails (see `node_error`).
        known = [layout.channels_first(a) for a in args]
        deferred = checks.for_node(node_context(node, known, traced_as_known=True), node.op.name)
    ctx = OpContext(
        node=node.path,
        output_count=len(node.outputs),
        size=node.size,
        rng=rng,
        options=dict(options or {}),
        real_length=padding_rules.asks_real_length(node),
        computation=computation,
        checks=deferred,
    )

    def call(arguments):
        return node.op(*arguments, ctx=ctx, **attributes)

    output_marks = None
    with jax.named_scope(node.name):
        try:
            # Convolution activations stay channels-last where the node allows it (layout.py).
            results = (
                layout.run(node, args, ctx, attributes) if ctx.options.get("channels_last") and not marked else None
            )
            if results is None:
                args = [layout.channels_first(a) for a in args]
                if marked:
                    results, output_marks = padding_rules.run(node, args, attributes, marks, call)
                else:
                    results = call(args)
        except Exception as error:
            raise node_error(node, [layout.channels_first(a) for a in args], error) from error
    if not isinstance(results, tuple):
        results = (results,)
    missing = [name for name in node.outputs[len(results) :] if name]
    if missing:  # else the first reader of the output would end in a bare KeyError
        raise UnsupportedOpError(
            f"Node {node.path!r} ({node.op.name}) declares {len(node.outputs)} outputs, but jaxonnx's {node.op.name} "
            f"returned {len(results)} for these inputs and attributes: it does not compute the output"
            f"{'s' * (len(missing) > 1)} {', '.join(map(repr, missing))} here."
        )
    if padded_bodies:
        results, output_marks = _subgraph_output_marks(node, args, results, attributes, carry_counts, output_marks)
    if ctx.real_length:  # a size-hinted node's outputs start their own marks
        results, started, counted = padding_rules.of_size_hint(node, results)
        output_marks = output_marks if started is None else started
        for index, counted_marks in counted.items():
            if node.inputs[index] not in padding:
                padding[node.inputs[index]] = counted_marks
    for index, (name, result) in enumerate(zip(node.outputs, results)):
        if name:
            values[name] = result
            padding.pop(name, None)
            if output_marks is not None and (marks_of_output := output_marks[index]) is not None:
                padding[name] = marks_of_output


def _trait(node: Node, name: str, default: Any) -> Any:
    """The trait ``name`` that the node's op declares (:class:`~jaxonnx._core.contract.OpContract`),
    or ``default`` for an op without a contract (a model's local function)."""
    return getattr(getattr(node.op, "contract", None), name, default)


def _bind(value, values, rng, options, padding=None, carry_counts=False):
    if isinstance(value, Graph):
        return Subgraph(value, values, rng, options, padding, carry_counts)
    if isinstance(value, list) and value and isinstance(value[0], Graph):
        return [Subgraph(g, values, rng, options, padding, carry_counts) for g in value]
    return value


def _is_if_on_a_length(node: Node, marks: list) -> bool:
    """Whether ``node`` is an If (an op that runs one of its ``branches``) whose condition
    is computed from a padded length (TorchScript's ``if boxes.numel() == 0`` on a
    size-hinted value)."""
    return (
        bool(_trait(node, "branches", ()))
        and bool(marks)
        and marks[0] is not None
        and marks[0].lengths is not None
        and not marks[0].axes
    )


def _pad_branches(node: Node, attributes, origin: padding_rules.Mark) -> None:
    """Prepares an If on a padded length to run on the real condition.

    The condition's hinted value is not the real one (``numel() == 0`` is false at the
    hinted length even when no entry is real), so the If follows the real condition, and
    the branches, which may then differ in their outputs' lengths (an empty result against
    one of the hinted length), give each output at the longer of the two: the shorter
    branch's is padded with zeros and marked at its own length, as a size hint pads."""
    branches = [attributes.get(name) for name in _trait(node, "branches", ())]
    if not all(isinstance(b, Subgraph) for b in branches):
        return
    shapes = [jax.eval_shape(lambda b=b: tuple(b()))[: len(node.outputs)] for b in branches]
    targets = []
    for then_shape, else_shape in zip(*shapes):
        same_kind = (
            all(hasattr(s, "shape") for s in (then_shape, else_shape))
            and len(then_shape.shape) == len(else_shape.shape)
            and then_shape.dtype == else_shape.dtype
        )
        targets.append(tuple(max(a, b) for a, b in zip(then_shape.shape, else_shape.shape)) if same_kind else None)
    for branch in branches:
        branch.output_marks.clear()  # the shapes' traces: their counts belong to no call
        branch.pad_to, branch.pad_origin = targets, origin


def _reads_padding(body: Graph, padding: Mapping[str, padding_rules.Marks]) -> bool:
    """Whether ``body`` reads a padded value from the enclosing scope, or pads one itself
    (a size-hinted node inside it, at any depth)."""
    pads = getattr(body, "_pads_itself", None)
    if pads is None:  # once per prepared graph: the walk is the same every run
        pads = body._pads_itself = any(padding_rules.asks_real_length(inner) for inner in body.walk())
    return pads or any(name in padding for name in body.outer_names)


def _subgraph_output_marks(node: Node, args, results: tuple, attributes, carried: bool, output_marks):
    """The node's outputs and their marks where its subgraphs read or made padded values.

    If's outputs are its branch's: with ``carried`` (see :class:`Subgraph`), the branch
    returned the counts of its outputs' marks behind its outputs, and each axis that a
    branch marked is marked at the count the chosen branch gave. Any other op (Loop, Scan)
    computes its outputs from its body's, by rules of its own: a body output that carries
    padding is refused, as an op without a padding rule refuses it."""
    bodies = [
        v
        for value in attributes.values()
        for v in (value if isinstance(value, list) else [value])
        if isinstance(v, Subgraph)
    ]
    if not carried:
        for body in bodies:
            for call_marks in body.output_marks:
                padded = [m for m in call_marks if m is not None and m.axes]
                if padded:
                    raise node_error(
                        node,
                        args,
                        padding_rules.refusal(
                            node,
                            padded[0].origin(),
                            "computes its outputs from its subgraph's padded outputs, which no rule follows out of it",
                        ),
                    )
        return results, output_marks
    outputs, counts = results[: len(node.outputs)], list(results[len(node.outputs) :])
    marks: list[padding_rules.Marks | None] = []
    for index, value in enumerate(outputs):
        rank = np.ndim(value) if hasattr(value, "shape") else 0
        along, counts = counts[:rank], counts[rank:]
        axes = {}
        for axis in range(rank):
            origin = next(
                (
                    m.axes[axis]
                    for body in bodies
                    for call_marks in body.output_marks
                    if index < len(call_marks)
                    for m in [call_marks[index]]
                    if m is not None and axis in m.axes
                ),
                None,
            )
            if origin is not None:
                axes[axis] = dataclasses.replace(origin, count=along[axis])
        marks.append(padding_rules.Marks(axes) if axes else None)
    return outputs, marks


def describe_value(value, *, traced_as_known: bool = False) -> str:
    """A value's type and shape for errors: ``float[2, 3] traced``, ``seq(3)``, ``None``
    (a traced value without ``traced`` where it stands for a known one: a deferred check's)."""
    if value is None:
        return "None"
    if isinstance(value, (list, tuple)):
        return f"seq({len(value)})"
    if isinstance(value, Mapping):
        return f"map({len(value)})"
    traced = " traced" if is_traced(value) and not traced_as_known else ""
    return f"{onnx_type_name(value.dtype)}{list(np.shape(value))}{traced}"


def node_context(node: Node, args, *, traced_as_known: bool = False) -> str:
    """``Node 'path' (Op-version, inputs name: type[shape], ...) failed``: how a node's errors begin."""
    shapes = ", ".join(
        f"{name or '<omitted>'}: {describe_value(a, traced_as_known=traced_as_known)}"
        for name, a in zip(node.inputs, args)
    )
    return f"Node {node.path!r} ({node.op.name}, inputs {shapes}) failed"


def node_error(node: Node, args, error: Exception) -> Exception:
    """The error of a node's op with the node, its op version and its inputs in front."""
    if isinstance(error, JaxOnnxError) and str(error).startswith("Node '/"):
        return error  # a node of a subgraph failed: its own message names it, and its path
    context = node_context(node, args)
    if isinstance(error, StaticValueError) and isinstance(node.op, OpVersion):
        formals = [formal.name for formal in node.op.schema.inputs]
        traced = [
            name
            for formal, name, a in zip(formals, node.inputs, args)
            if name and is_traced(a) and error.argument in (None, formal)
        ]
        way_out = (
            f"or give a loop bound, `jaxonnx.load(model, loop_bounds={{{node.path!r}: <most iterations>}})`"
            if node.op.contract.size_hint == "bound"
            else f"or give a size hint, `jaxonnx.load(model, size_hints={{{node.outputs[0]!r}: <length>}})`"
            if node.op.takes_size_hint
            else "or run the model outside `jax.jit`, where every value is concrete"
        )
        static_error = StaticValueError(
            f"{context}: {error} In the graph, the input {', '.join(map(repr, traced))} depends on "
            f"graph inputs, so it is only known at run time. Two ways out: make it an initializer or "
            f"the output of Constant nodes (then jaxonnx knows it at trace time), {way_out}."
        )
        static_error.argument = error.argument
        return static_error
    return cast(Exception, with_context(error, context))  # the same type as `error`


# --------------------------------------------------------------------------- resolving ops


def prepare_node(
    proto: onnx.NodeProto, index: int, env: Environment, path: str, visible: set[str] | frozenset[str]
) -> Node | None:
    """The prepared node, or None if its op is unsupported (noted in ``env.problems``).
    Anything else that goes wrong (a malformed node of a corrupt file) is a
    :class:`ModelLoadError` naming the node."""
    try:
        return _prepare_node(proto, index, env, path, visible)
    except JaxOnnxError:
        raise
    except Exception as error:  # noqa: BLE001  (a malformed field: TypeError, ValueError, KeyError, ...)
        where = f"{path}/{proto.name or index}" if path else (proto.name or str(index))
        raise ModelLoadError(
            f"Node {where!r} ({proto.op_type}) cannot be read: {error} ({type(error).__name__}); is the file corrupt?"
        ) from error


def _prepare_node(
    proto: onnx.NodeProto, index: int, env: Environment, path: str, visible: set[str] | frozenset[str]
) -> Node | None:
    name = proto.name or f"{proto.op_type}_{index}"  # as errors and `describe_nodes` name it
    node_path = f"{path}/{name}" if path else name
    op = _resolve(proto, env, node_path)
    attributes = node_attributes(proto, index)
    for attribute in proto.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            attributes[attribute.name] = Graph.prepare(
                attribute.g, env, path=f"{path}/{name}/{attribute.name}", outer=frozenset(visible)
            )
        elif attribute.type == onnx.AttributeProto.GRAPHS:
            attributes[attribute.name] = [
                Graph.prepare(g, env, path=f"{path}/{name}/{attribute.name}[{i}]", outer=frozenset(visible))
                for i, g in enumerate(attribute.graphs)
            ]
    if op is None:
        return None
    size = _size_hint(proto, op, env, node_path)
    return Node(name, node_path, op, tuple(proto.input), tuple(proto.output), attributes, size)


def _resolve(proto: onnx.NodeProto, env: Environment, node_path: str):
    """The node's op: a registered version, a model-local function, or onnx's function body."""
    domain = canonical_domain(proto.domain)
    label = f"node {node_path!r} ({proto.op_type}"
    if (proto.domain, proto.op_type) in env.functions:
        return FunctionOp.local(env.functions[(proto.domain, proto.op_type)], proto, env, node_path)
    if domain not in env.opsets:
        env.problems.append(
            f"{label}, domain {proto.domain!r}): the model imports no opset of the domain {proto.domain!r}"
        )
        return None
    opset = env.opsets[domain]
    if proto.op_type in env.registry.supported_ops(domain):
        try:
            return env.registry.get_op(proto.op_type, opset, domain)
        except UnsupportedOpError as e:  # the model's opset is below the op's first version
            env.problems.append(f"{label}): {str(e).rstrip('.')}")
            return None
    body = FunctionOp.from_schema(proto, domain, opset, env, node_path)
    if body is not None:
        return body
    if not env.registry.supported_ops(domain):
        env.problems.append(f"{label}, domain {proto.domain!r}): jaxonnx knows no ops of the domain {proto.domain!r}")
    else:  # named as `jaxonnx check` names it: domain-qualified outside the default domain
        env.problems.append(f"node {node_path!r} ({domain + '.' if domain else ''}{proto.op_type}): not supported")
    return None


def _cut_computations(nodes: list[Node], visible: set[str], path: str) -> list[Node]:
    """``nodes`` with the computation of each Gradient-like node (an op whose contract sets
    ``computation``) cut out of them: the nodes that compute its ``y`` attribute from the
    values its ``xs`` and ``zs`` attributes name, as a :class:`Graph` whose inputs are
    ``xs`` then ``zs``. The cut follows ``y`` back through node inputs (and the outer names
    of subgraphs) and stops at ``xs`` and ``zs``; what else it reads (initializers, graph
    inputs) stays a constant read from the graph at run time. A computation may contain
    another Gradient (second derivatives), which is cut first."""
    nodes = list(nodes)
    producer = {name: i for i, node in enumerate(nodes) for name in node.outputs if name}
    cutting: set[int] = set()

    def cut(index: int) -> None:
        node = nodes[index]
        xs, zs, y = (_names(node.attributes.get(a)) for a in ("xs", "zs", "y"))
        label = f"Node {node.path!r} ({node.op.name})"
        if len(y) != 1:
            raise ModelLoadError(f"{label} needs one name in its attribute `y`, got {y or 'none'}.")
        stops = set(xs) | set(zs)
        known = visible | set(producer)
        unknown = [name for name in [*xs, *zs, *y] if name not in known]
        if unknown:
            raise ModelLoadError(
                f"{label} names {unknown[0]!r} in its attributes xs, zs or y, which no node, input or "
                f"initializer{_in(path)} defines."
            )
        cutting.add(index)
        taken: set[int] = set()
        pending = [y[0]]
        while pending:
            name = pending.pop()
            if name in stops or name not in producer or producer[name] in taken:
                continue
            taken.add(producer[name])
            needed = nodes[producer[name]]
            if producer[name] in cutting:
                through = "its own outputs" if producer[name] == index else f"the outputs of node {needed.path!r}"
                raise ModelLoadError(
                    f"{label} differentiates {y[0]!r}, which is computed from {through}, a Gradient whose "
                    "computation needs this one's: a cycle."
                )
            if needed.op.contract.takes("computation") and needed.computation is None:
                cut(producer[name])
                needed = nodes[producer[name]]
            pending.extend(n for n in needed.inputs if n)
            for inner in needed.bodies:
                pending.extend(inner.outer_names)
        cutting.discard(index)
        order = sorted(taken)
        body = [nodes[i] for i in order]
        reads = {n for b in body for n in b.inputs if n}
        reads |= {n for b in body for inner in b.bodies for n in inner.outer_names}
        reads |= set(y)
        made = {n for b in body for n in b.outputs if n}
        graph = Graph(
            f"{node.name}/computation",
            f"{node.path}/computation",
            tuple(body),
            {},
            tuple(ValueType(name, "any") for name in [*xs, *zs]),
            (ValueType(y[0], "any"),),
            frozenset(reads - made - stops),
            key_indices=tuple(order),
        )
        nodes[index] = dataclasses.replace(node, computation=graph)

    for index, node in enumerate(nodes):
        if node.op.contract.takes("computation") and node.computation is None:
            cut(index)
    return nodes


def _names(value) -> list[str]:
    """A STRING or STRINGS attribute as a list of str (onnx gives bytes)."""
    if value is None:
        return []
    values = value if isinstance(value, (list, tuple)) else [value]
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def _size_hint(proto: onnx.NodeProto, op, env: Environment, node_path: str) -> int | None:
    takes = getattr(op, "takes_size_hint", False)
    if takes:
        env.hinted_outputs.extend(o for o in proto.output if o)
    hinted = [o for o in proto.output if o in env.size_hints]
    bound = _loop_bound(proto, op, env, node_path)
    if bound is not None and not hinted:
        return bound
    if not hinted:
        return None
    if not takes:
        hinted_ops = sorted(
            name
            for name, versions in env.registry.supported_ops().items()
            if env.registry.get_op(name, max(versions)).takes_size_hint
        )
        raise OnnxValidationError(
            f"A size hint was given for {hinted[0]!r}, the output of node {node_path!r} ({op.name}); "
            f"only outputs of {', '.join(hinted_ops)} take size hints."
        )
    size = env.size_hints.pop(hinted[0])
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise OnnxValidationError(f"The size hint for {hinted[0]!r} must be a non-negative int, got {size!r}.")
    if bound is not None and bound != size:
        raise OnnxValidationError(
            f"Node {node_path!r} ({op.name}) got a loop bound of {bound} and a size hint of {size} on {hinted[0]!r}, "
            "two bounds on its iterations; give one."
        )
    return int(size)


def _loop_bound(proto: onnx.NodeProto, op, env: Environment, node_path: str) -> int | None:
    """The node's entry in ``loop_bounds=`` (by its path, its name or one of its outputs),
    for ops whose size hint bounds a loop (contract ``size_hint="bound"``), or None."""
    if getattr(getattr(op, "contract", None), "size_hint", False) != "bound":
        return None
    env.bounded_nodes.append(node_path)
    keys = [k for k in dict.fromkeys([node_path, proto.name, *proto.output]) if k and k in env.loop_bounds]
    if not keys:
        return None
    bounds = {env.loop_bounds[k] for k in keys}
    if len(bounds) > 1:
        raise OnnxValidationError(
            f"Node {node_path!r} ({op.name}) got different loop bounds under {keys}: {sorted(bounds)}; give one."
        )
    bound = env.loop_bounds[keys[0]]
    if isinstance(bound, bool) or not isinstance(bound, (int, np.integer)) or bound < 0:
        raise OnnxValidationError(f"The loop bound for {keys[0]!r} must be a non-negative int, got {bound!r}.")
    env.claimed_bounds.update(keys)
    return int(bound)


# --------------------------------------------------------------------------- functions


class FunctionOp:
    """An op that runs a function body: a model-local function (``ModelProto.functions``)
    or the body onnx defines for an op that jaxonnx does not register. Registered ops
    always win over bodies. The body is expanded for the node's attributes (references
    ``ref_attr_name`` resolved, the function's attribute defaults filled in) and prepared
    as a :class:`Graph` once; a context-dependent body (one that depends on the input
    types) is expanded per input signature on first use."""

    contract = OpContract()
    takes_size_hint = False
    _node: onnx.NodeProto  # the node a context-dependent body is expanded for (set by `from_schema`)

    def __init__(self, name: str, kind: str, env: Environment, node_path: str, body=None, expand=None, defaults=None):
        self.name = name  # "LayerNormalization-17 (onnx's function body)", as errors show it
        self.kind = kind
        self._env, self._path = env, node_path
        self._body: Graph | None = body
        self._expand = expand  # input types -> FunctionProto, for context-dependent bodies
        self._bodies: dict[tuple, Graph] = {}
        self._defaults = defaults or {}

    @classmethod
    def local(cls, function: onnx.FunctionProto, node: onnx.NodeProto, env: Environment, node_path: str):
        if node_path.count("/") > _FUNCTION_DEPTH_LIMIT:
            raise ModelLoadError(
                f"The function {function.name!r} calls itself (at {node_path}); jaxonnx cannot run recursion."
            )
        body = _function_graph(function, node, env, node_path)
        return cls(
            f"{function.name} (local function of domain {function.domain!r})", "local function", env, node_path, body
        )

    @classmethod
    def from_schema(cls, node: onnx.NodeProto, domain: str, opset: int, env: Environment, node_path: str):
        try:
            schema = onnx.defs.get_schema(node.op_type, opset, domain)
        except onnx.defs.SchemaError:
            return None
        name = f"{node.op_type}-{schema.since_version} (onnx's function body)"
        # A body refers to the op's attributes; those the node leaves out take the schema's default.
        defaults = {
            n: a.default_value
            for n, a in schema.attributes.items()
            if a.default_value.type != onnx.AttributeProto.UNDEFINED
        }
        # onnx's stubs lack OpSchema's function-body accessors (pybind11 methods it has at run time).
        if schema.has_function:  # type: ignore[attr-defined]  # a stub gap, as above
            # The body for the model's opset; a body onnx wrote only for a later opset (Shrink-9's
            # is written with opset 18's ops) runs with its own opset_import.
            written_for = schema.function_opset_versions  # type: ignore[attr-defined]  # a stub gap, as above
            versions = [v for v in written_for if v <= opset]
            chosen = max(versions) if versions else min(written_for)
            function = onnx.FunctionProto()
            function.ParseFromString(schema.get_function_with_opset_version(chosen))  # type: ignore[attr-defined]  # a stub gap
            if not function.opset_import:
                function.opset_import.add(domain="", version=opset)
            return cls(name, "function body", env, node_path, _function_graph(function, node, env, node_path, defaults))
        if schema.has_context_dependent_function:  # type: ignore[attr-defined]  # a stub gap, as above
            written_for = schema.context_dependent_function_opset_versions  # type: ignore[attr-defined]  # a stub gap
            versions = [v for v in written_for if v <= opset] or [min(written_for)]
            body_for = schema.get_context_dependent_function_with_opset_version  # type: ignore[attr-defined]  # a stub gap

            def expand(input_types: list[onnx.TypeProto]) -> onnx.FunctionProto:
                function = onnx.FunctionProto()
                function.ParseFromString(
                    body_for(max(versions), node.SerializeToString(), [t.SerializeToString() for t in input_types])
                )
                if not function.opset_import:
                    function.opset_import.add(domain="", version=opset)
                return function

            op = cls(name, "function body", env, node_path, expand=expand, defaults=defaults)
            op._node = node
            return op
        return None

    @property
    def body(self) -> Graph | None:
        """The prepared body; None for a context-dependent one, prepared per input signature."""
        return self._body

    def __call__(self, *inputs, ctx: OpContext | None = None, **attributes):
        body = self._body
        if body is None:
            signature = tuple(_signature(v) for v in inputs)
            body = self._bodies.get(signature)
            if body is None:
                types = [_type_proto(v) for v in inputs]
                env = dataclasses.replace(self._env, problems=[])
                body = _function_graph(self._expand(types), self._node, env, self._path, self._defaults)
                if env.problems:
                    raise UnsupportedOpError(
                        f"The body of {self.name} uses ops jaxonnx does not support: " + "; ".join(env.problems) + "."
                    )
                self._bodies[signature] = body
        feed = {name: value for name, value in zip(body.input_names, inputs) if name}
        missing = [name for name in body.input_names[len(inputs) :]]
        feed.update({name: None for name in missing})
        marks: list = []
        outputs = body.run(
            feed, rng=ctx.rng if ctx else None, options=ctx.options if ctx else None, output_padding=marks
        )
        padded = [name for name, m in zip(body.output_names, marks) if m is not None and m.axes]
        if padded:  # the call's outputs are no graph's: no marks go with them
            raise OnnxValidationError(
                f"{self.name}'s output {padded[0]!r} is padded (a slice between bounds known only at run time, "
                "or a size hint inside the body), and the padding would leave the function unmarked; run the "
                "model outside `jax.jit`."
            )
        return outputs


def _signature(value):
    if value is None:
        return None
    if isinstance(value, list):
        return ("seq", tuple(_signature(v) for v in value))
    return (np.dtype(value.dtype).str, np.ndim(value))


def _type_proto(value) -> onnx.TypeProto:
    if value is None:
        return onnx.TypeProto()
    if isinstance(value, list):
        element = _type_proto(value[0]) if value else onnx.helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, None)
        return onnx.helper.make_sequence_type_proto(element)
    from jaxonnx._core.dtypes import onnx_type_name as _name  # noqa: PLC0415  (local: avoids a cycle)

    elem = (
        onnx.helper.np_dtype_to_tensor_dtype(np.dtype(value.dtype))
        if _name(value.dtype) != "string"
        else onnx.TensorProto.STRING
    )
    return onnx.helper.make_tensor_type_proto(elem, list(np.shape(value)))


def _function_graph(
    function: onnx.FunctionProto, call: onnx.NodeProto, env: Environment, node_path: str, schema_defaults=None
) -> Graph:
    """The function's body for one call node: a graph whose inputs and outputs are the
    function's, with attribute references resolved from the call (or the defaults). An
    output that no node of the body computes (an optional output the call does not ask
    for) comes out as None."""
    given = {a.name: a for a in call.attribute}
    defaults = {**(schema_defaults or {}), **{a.name: a for a in function.attribute_proto}}
    graph = onnx.GraphProto(name=function.name)
    for node in function.node:
        copy = graph.node.add()
        copy.CopyFrom(node)
        _resolve_references(copy, given, defaults)
    # The call may omit trailing optional inputs, and name outputs it does not use.
    graph.input.extend(onnx.helper.make_value_info(name, onnx.TypeProto()) for name in function.input)
    computed = {o for node in function.node for o in node.output} | set(function.input)
    graph.output.extend(
        onnx.helper.make_value_info(name if name in computed else "", onnx.TypeProto()) for name in function.output
    )
    opsets = {canonical_domain(o.domain): o.version for o in function.opset_import}
    sub_env = env.with_opsets(opsets)
    # `sub_env` shares `env`'s problem list, so ops the body lacks join the one load error.
    return Graph.prepare(graph, sub_env, path=f"{node_path}/{function.name}", outer=frozenset())


def _resolve_references(node: onnx.NodeProto, given, defaults) -> None:
    """Replaces each attribute that refers to a function attribute (``ref_attr_name``) by
    the call's value, or the function's default; drops it when neither exists."""
    resolved = []
    for attribute in node.attribute:
        if attribute.ref_attr_name:
            source = given.get(attribute.ref_attr_name) or defaults.get(attribute.ref_attr_name)
            if source is None:
                continue
            value = onnx.AttributeProto()
            value.CopyFrom(source)
            value.name = attribute.name
            resolved.append(value)
        else:
            if attribute.type == onnx.AttributeProto.GRAPH:
                for inner in attribute.g.node:
                    _resolve_references(inner, given, defaults)
            resolved.append(attribute)
    del node.attribute[:]
    node.attribute.extend(resolved)
