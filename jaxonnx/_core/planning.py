"""How a model's calls execute, decided once at load.

An eager call compiles the whole graph per input signature, as ``jax.jit(model)`` does,
unless a node reads at trace time a value computed from the inputs, or the graph holds
strings or maps, which JAX cannot; then it runs op by op on concrete values.
:class:`EagerPlan` holds that decision and the executables it made. :func:`shape_deciding`
finds the values that must stay known at trace time.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np

from jaxonnx._core.checks import DeferredChecks
from jaxonnx._core.dtypes import is_string_array
from jaxonnx._core.graph import Graph
from jaxonnx._core.registry import OpVersion, is_traced, trace_in_progress
from jaxonnx._xla_cpu import compiler_options


class EagerPlan:
    """How the eager calls of one model run, and the executables they made.

    Args:
        graph: the model's prepared graph.
        run_graph: ``run_graph(feed, params, rng, checks=None)``, the graph's run by names.
        run_positional: ``run_positional(*inputs, checks=None)``, the same by position, with
            the file's weights.
        input_names: the graph inputs a call takes, in call order.
        trainable: the params that may be traced; a call passing any other compiles nothing.
        initializers: the file's initializers (string ones keep a call op by op).

    Attributes:
        mode: what ``Model.eager_mode`` says: the whole graph compiled per input signature,
            or op by op and why.
        draws: whether a node draws random values (an eager call without a key draws anew).
        whole_graph: ``jax.jit(run_graph)``, or None where calls run op by op.
        defers_checks: whether the whole graph compiles with the checks of its ops' values
            deferred (:mod:`jaxonnx._core.checks`).

    Example:
        >>> from onnx import TensorProto, helper
        >>> x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in "xy")
        >>> relu = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
        >>> jaxonnx.load(helper.make_model(relu)).eager_mode
        'whole graph compiled per input signature'
        >>> jaxonnx.load(jaxonnx.demo_model_path()).eager_mode  # its Compress takes a size hint
        "op by op: node 'drop_row_1' (Compress-11) has a data-dependent length or draws"
    """

    def __init__(
        self,
        graph: Graph,
        *,
        run_graph: Callable[..., tuple],
        run_positional: Callable[..., tuple],
        input_names: tuple[str, ...],
        trainable: list[str],
        initializers: Mapping[str, np.ndarray],
    ):
        self.run_graph = run_graph
        self.run_positional = run_positional
        self.input_count = len(input_names)
        self.trainable = frozenset(trainable)
        self.draws = _draws(graph)
        strings = [t.name for t in (*graph.inputs, *graph.outputs) if t.dtype is not None and t.dtype.kind in "OUS"]
        strings += [name for name, value in initializers.items() if value.dtype.kind in "OUS"]
        maps = [t.name for t in (*graph.inputs, *graph.outputs) if _holds_map(t)]
        made = _string_made_inside(graph, {*input_names, *trainable})
        reason = (
            f"the string value {strings[0]!r}, which JAX cannot hold"
            if strings
            else f"the map value {maps[0]!r}, a Python dict"
            if maps
            else f"node {made.path!r} ({made.op.name}) makes strings, which JAX cannot hold"
            if made
            else _needs_concrete_values(graph, set(input_names))
        )
        self.mode = "whole graph compiled per input signature" if reason is None else f"op by op: {reason}"
        self.whole_graph = jax.jit(run_graph) if reason is None else None
        # The executable of each input signature of positional eager calls (`executable_for`).
        self.compiled: dict[tuple, Any] = {}
        # A graph whose ops check values computed from the inputs compiles whole for an
        # eager call only with those checks deferred (see `_checked_call`), per signature.
        self.defers_checks = reason is None and any(
            isinstance(node.op, OpVersion) and node.op.contract.takes("checks") for node in graph.nodes
        )
        self.checked: dict[tuple, Any] = {}

    def executable_for(self, inputs: tuple, check_inputs: Callable[[tuple], None]) -> Callable[..., tuple] | None:
        """What an eager call of JAX arrays, given positionally with the file's weights and no
        key, runs: the executable of its input signature (:func:`compile_ahead`, made after
        ``check_inputs(inputs)`` passed); None where the call takes the general path
        (:meth:`run`): inputs not all JAX arrays, a graph run op by op or one that draws, a
        trace in progress. The checks and the feed cost more than a small model runs, so a
        signature is checked once. A graph whose ops defer checks gets its checked
        executable (:func:`checked_executable`), which raises after the computation as the
        general path does."""
        if self.whole_graph is None or self.draws or len(inputs) != self.input_count:
            return None
        signature = _array_signature(inputs)
        if signature is None or trace_in_progress():
            return None
        compiled = self.compiled.get(signature)
        if compiled is None:
            check_inputs(inputs)  # raises, naming the input
            compiled = self.compiled[signature] = (
                checked_executable(self.run_positional, *inputs)
                if self.defers_checks
                else compile_ahead(self.run_positional, *inputs)
            )
        return compiled

    def run(self, feed: dict[str, Any], params: dict[str, Any], rng) -> tuple:
        """A call on checked inputs and params: traced as it is under a transformation, else
        the whole graph compiled for this signature, else op by op."""
        if _tracing(feed, params):
            return self.run_graph(feed, params, rng)
        if rng is None and self.draws:
            # An eager call without a key draws anew, as onnxruntime does (see ops/_helpers/random.py).
            rng = jax.random.PRNGKey(secrets.randbits(32))
        if (
            self.whole_graph is not None
            and set(params) <= self.trainable
            and not any(isinstance(v, (list, np.ndarray)) and is_string_array(v) for v in feed.values())
        ):
            if self.defers_checks:
                return self._checked_call(feed, params, rng)
            return self.whole_graph(feed, params, rng)
        return self.run_graph(feed, params, rng)

    def _checked_call(self, feed, params, rng) -> tuple:
        """An eager call of a graph whose ops check values that come from the inputs (a
        Gather's indices): compiled whole per signature with those checks deferred
        (:mod:`jaxonnx._core.checks`), run, and the first failed check raised, naming its
        node, as running op by op on concrete values would."""
        key = (_signature_key(feed), _signature_key(params), _signature_key({"rng": rng}))
        call = self.checked.get(key)
        if call is None:
            call = self.checked[key] = checked_executable(self.run_graph, feed, params, rng)
        return call(feed, params, rng)


def compile_ahead(run: Callable[..., tuple], *args) -> jax.stages.Compiled:
    """``run`` compiled ahead of time for arguments like ``args``, with the XLA options its
    size calls for (:func:`jaxonnx.compiler_options`)."""
    lowered = jax.jit(run).lower(*args)
    return lowered.compile(compiler_options(lowered) or None)


def checked_executable(run_graph: Callable[..., tuple], *args) -> Callable[..., tuple]:
    """``run_graph(*args, checks=...)`` (the graph's run) compiled for arguments like
    ``args`` with a :class:`DeferredChecks`, as a function of such arguments that runs it
    and raises the first failed check's error, naming its node, as running op by op on
    concrete values would. What eager calls run for a graph whose ops check values that
    come from the inputs."""
    checks = DeferredChecks()

    def run(*args):
        return run_graph(*args, checks=checks), checks.flags()

    compiled = compile_ahead(run, *args)

    def call(*args):
        outputs, flags = compiled(*args)
        checks.raise_failed(flags)
        return outputs

    return call


def _draws(graph: Graph) -> bool:
    """Whether a node draws random values (its op takes ``rng``), at any depth: in subgraphs
    and in the bodies of the model's local functions."""
    for node in graph.walk():
        if isinstance(node.op, OpVersion) and node.op.contract.takes("rng"):
            return True
        body = getattr(node.op, "body", None)  # a FunctionOp's prepared body
        if isinstance(body, Graph) and _draws(body):
            return True
    return False


def _holds_map(declared) -> bool:
    """Whether a declared type is a map or holds maps (ZipMap's seq(map(...)))."""
    return declared is not None and (declared.kind == "map" or _holds_map(declared.element))


def _tracing(*trees) -> bool:
    """Whether this call is being traced (inside ``jax.jit``, ``grad``, ``vmap``): a traced
    input, or a trace in progress though no input is traced (a model called on constants
    inside a jitted function)."""
    return any(is_traced(v) for tree in trees for v in jax.tree.leaves(tree)) or trace_in_progress()


def _signature_key(values: Mapping[str, Any]) -> tuple:
    """What an executable compiled for ``values`` (by name) depends on: each one's shape,
    type and, for a JAX array, placement."""
    return tuple(
        sorted(
            (
                name,
                None
                if value is None
                else (
                    np.shape(value),
                    str(value.dtype) if hasattr(value, "dtype") else type(value).__name__,
                    getattr(value, "sharding", None),
                    getattr(value, "weak_type", False),
                ),
            )
            for name, value in values.items()
        )
    )


def _array_signature(inputs) -> tuple | None:
    """The shapes, types and shardings of positional inputs that are all JAX arrays (not
    tracers), or None: what the checks of an eager call depend on."""
    signature = []
    for value in inputs:
        if type(value) is not _ARRAY_TYPE:
            return None
        signature.append((value.shape, value.dtype, value.sharding))
    return tuple(signature)


_ARRAY_TYPE = jax._src.array.ArrayImpl


def _needs_concrete_values(graph: Graph, dependent: set[str]) -> str | None:
    """Why the graph cannot be compiled whole for an eager call (a node that reads the value
    of something computed from the graph inputs at trace time), or None."""
    dependent = set(dependent)
    for node in graph.nodes:
        reads = [name for name in node.inputs if name in dependent]
        outer = {name for sub in node.bodies for name in sub.outer_names} & dependent
        op = node.op
        if not reads and not outer:
            continue
        if not isinstance(op, OpVersion) or node.subgraphs:
            return f"node {node.path!r} ({op.name}) runs a body on values computed from the inputs"
        # A slice padded to its own length is data-dependent only through its bounds, which
        # are static inputs: the check below finds them when they are computed from the inputs.
        padded_by_bounds = op.contract.size_hint == "own_length"
        if (op.contract.size_hint and not padded_by_bounds) or op.contract.takes("rng"):
            return f"node {node.path!r} ({op.name}) has a data-dependent length or draws"
        formals = op.formal_names(len(node.inputs))
        # Values read only to check them are checked after the computation (checks.py).
        needs = set(op.contract.static) | (set(op.contract.concrete) - set(op.contract.checked_inputs()))
        bad = [formal for formal, name in zip(formals, node.inputs) if name in dependent and formal in needs]
        if bad:
            return f"node {node.path!r} ({op.name}) reads the value of `{bad[0]}`, computed from the inputs"
        if not op.contract.shape_only:  # else its outputs are known at trace time
            dependent |= {name for name in node.outputs if name}
    return None


def _string_made_inside(graph: Graph, dependent: set[str]):
    """The first node, at any depth, that may turn numbers into strings (a Cast to string,
    an op whose outputs are string tensors, a label encoder with string values) from values
    computed from ``dependent`` (the graph inputs and traced params), or None. Such a graph
    runs op by op even with no string at its boundary: a trace of it would hand the string
    op a tracer. A node that reads only constants is left out: what it computes stays numpy
    at trace time."""
    dependent = set(dependent)
    for top in graph.nodes:
        outer = {name for body in top.bodies for name in body.outer_names}
        # On constants only, an op that folds computes numpy at trace time; one that draws
        # or computes with JAX (or a function) gives JAX values, as does any reading `dependent`.
        folds = isinstance(top.op, OpVersion) and top.op.contract.folds and not top.op.contract.takes("rng")
        if folds and not (set(top.inputs) | outer) & dependent:
            continue
        dependent |= {name for name in top.outputs if name}
        made = _string_maker(top, [node for body in top.bodies for node in body.walk()])
        if made is not None:
            return made
    return None


def _string_maker(top, inner: list):
    """``top`` or the first of the nodes ``inner`` (its bodies') that may make strings: its
    contract says so (``makes_strings``, True or a function of the node's attributes), or
    its schema allows only strings for an output."""
    for node in (top, *inner):
        op = node.op
        if not isinstance(op, OpVersion):
            continue
        makes_strings = op.contract.makes_strings
        if makes_strings is True or (callable(makes_strings) and makes_strings(node.attributes)):
            return node
        constraints = {c.type_param_str: c.allowed_type_strs for c in op.schema.type_constraints}
        for formal in op.schema.outputs:
            if set(constraints.get(formal.type_str, [formal.type_str])) == {"tensor(string)"}:
                return node
    return None


def shape_deciding(graph: Graph) -> dict[str, str]:
    """The values whose value decides a shape: those that reach a static input of an op
    (``OpContract.static``) through any chain of nodes, each with the first node and input it
    reaches, for errors."""
    deciding: dict[str, str] = {}
    nodes = list(graph.walk())
    for node in nodes:
        op = node.op
        if isinstance(op, OpVersion) and op.contract.static:
            for formal, name in zip(op.formal_names(len(node.inputs)), node.inputs):
                if name and formal in op.contract.static:
                    deciding.setdefault(name, f"the input `{formal}` of node {node.path!r} ({op.name})")
    changed = True
    while changed:  # everything a shape-deciding value is computed from decides the shape too
        changed = False
        for node in reversed(nodes):
            if getattr(getattr(node.op, "contract", None), "shape_only", False):
                continue  # its output depends on its input's shape, never on its values
            reached = next((deciding[o] for o in node.outputs if o in deciding), None)
            if reached:
                for name in node.inputs:
                    if name and name not in deciding:
                        deciding[name] = reached
                        changed = True
    return deciding
