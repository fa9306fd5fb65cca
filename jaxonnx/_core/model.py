"""The ONNX model interpreter: an ONNX graph as a pure JAX function.

Read top to bottom:

1. ``load`` reads a path, bytes or ``onnx.ModelProto`` and checks it (the file-safety
   details, external data included, live in ``_loading.py``).
2. ``Model.__init__`` prepares the graph once: resolves every node's op for the model's
   opset, converts initializers to exact numpy arrays, and validates size hints.
3. ``Model.__call__`` / ``run`` / ``apply`` check the inputs against the graph's declared
   types and walk the nodes in order, each inside ``jax.named_scope``.

Values known at trace time (initializers, ``Constant`` outputs and everything computed
only from them) stay numpy while the graph runs, so Slice bounds and Compress conditions
derived from them are static under ``jax.jit``. Anything that touches a graph input
becomes a JAX value, and ``jax.jit(model)`` traces the whole graph into one computation.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import warnings
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import onnx
from onnx import numpy_helper

from jaxonnx import ops as _ops  # noqa: F401  (registers every op)
from jaxonnx._core.checks import DeferredChecks
from jaxonnx._core.dtypes import (
    X64_ON_HINT,
    as_jax,
    is_narrowed,
    is_string_array,
    jax_dtype,
    onnx_type_name,
    x64_enabled,
)
from jaxonnx._core.graph import Environment, Graph
from jaxonnx._core.loading import (
    canonical_domain,
    check_model,
    check_sparse,
    check_text,
    decode_attribute,
    external_tensors,
    opset_versions,
    parse_model,
    read_external_data,
    run_as_onnxruntime_spells,
    sort_nodes,
)
from jaxonnx._core.registry import REGISTRY, OpVersion, Registry, is_traced, trace_in_progress
from jaxonnx._core.types import ValueInfo, ValueType
from jaxonnx._errors import (
    LeniencyWarning,
    ModelLoadError,
    OnnxValidationError,
    UnsupportedOpError,
    X64Warning,
)
from jaxonnx._xla_cpu import compiler_options

# --------------------------------------------------------------------------- loading


def load(
    model,
    *,
    size_hints: Mapping[str, int] | None = None,
    loop_bounds: Mapping[str, int] | None = None,
    base_dir: str | os.PathLike | None = None,
    registry: Registry | None = None,
    straight_through: bool = False,
    channels_last: bool = True,
) -> Model:
    """Loads an ONNX model as a :class:`Model`, a pure JAX function of its graph inputs.

    Args:
        model: a path to an ``.onnx`` file, its bytes, or an ``onnx.ModelProto``.
        size_hints: the data-dependent output length of ops that take a size hint
            (Compress: along its axis; NonZero: the number of nonzeros), by output name,
            e.g. ``{"kept": 128}``, for inputs only known at run time. The output then
            always has that length: the selected entries first, then padding; selecting
            more raises at run time rather than truncating.
        loop_bounds: the most iterations of Loop nodes whose end is only known at run time
            (a trip count or condition computed from the inputs, as ``torch`` ``while_loop``
            exports), keyed by the node's name (its path inside a subgraph, as errors show
            it) or one of its outputs, e.g. ``{"node_while_loop": 64}``. Such a loop then runs
            as a masked ``lax.scan`` of that many steps, which reverse mode differentiates
            (``jax.grad``), and its scan outputs are that long, padded with zeros; a loop
            that would run more iterations raises rather than cutting its results short.
            Without a bound it runs as ``lax.while_loop``, which only forward mode
            differentiates. A size hint on a Loop's first output is the same bound.
        base_dir: the folder that external data (of initializers, sparse tensors and node
            attributes alike) is read from when ``model`` is bytes or a ModelProto (a path's
            own folder is used otherwise). Locations that resolve outside it are refused, and
            external data is never looked up relative to the working directory: bytes or a
            ModelProto with external data and no ``base_dir`` are refused.
        registry: the op registry to resolve ops with (jaxonnx's own by default), e.g. a
            ``jaxonnx.REGISTRY.copy()`` with ops of your own registered into it.
        straight_through: quantization-aware training: QuantizeLinear's rounding passes
            gradients straight through inside its range (as PyTorch's fake-quant does)
            instead of its true gradient, zero almost everywhere. Off by default.
        channels_last: keep the activations between convolutions channels-last (``(N, H,
            W, C)``) where the ops between them allow it, as XLA and jaxonnx's CPU
            formulations compute them: fewer transposes, the same values up to float32
            reassociation (``jaxonnx/_core/layout.py``). On by default; False runs every op
            in ONNX's layout.

    Returns:
        The prepared model. ``jax.jit(model)`` compiles the whole graph at once.

    Warns:
        X64Warning: when ``jax_enable_x64`` is off and graph inputs or outputs are declared
            with 64-bit types; it lists them, since they will compute in 32 bits.

    Raises:
        ModelLoadError: for anything that keeps the model from loading safely (an unreadable
            or malformed file, external data outside the model's folder or shorter than its
            entry says, a sparse tensor too large to expand, an initializer that does not
            match its input's declared type, a domain imported twice, ...).
        UnsupportedOpError: for ops (at any depth of subgraphs and functions) and domains
            that jaxonnx does not run.

    Example:
        >>> model = jaxonnx.load(jaxonnx.demo_model_path())
        >>> (y,) = jax.jit(model)(jnp.ones((4, 6), jnp.float32))
        >>> y.shape
        (1, 9)
    """
    if isinstance(model, onnx.ModelProto):
        proto = model
    elif isinstance(model, (bytes, bytearray, memoryview)):
        proto = parse_model(bytes(model), "the given bytes")
    elif isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise ModelLoadError(f"Cannot read the ONNX model {path!r}: {e.strerror}.") from e
        except MemoryError as e:
            raise ModelLoadError(f"Cannot read the ONNX model {path!r}: it does not fit in memory.") from e
        proto = parse_model(data, repr(path))
        if base_dir is None:
            base_dir = os.path.dirname(os.path.abspath(path))
    else:
        raise ModelLoadError(f"`load` takes a path, bytes or an onnx.ModelProto, got {type(model).__name__}.")
    options = {"channels_last": bool(channels_last)}
    if straight_through:
        options["straight_through"] = True
    return Model(
        proto, size_hints=size_hints, loop_bounds=loop_bounds, base_dir=base_dir, registry=registry, options=options
    )


# --------------------------------------------------------------------------- the model


@jax.tree_util.register_pytree_node_class
class Model:
    """An ONNX model prepared once as a pure JAX function. Create it with :func:`jaxonnx.load`.

    ``model(*inputs)`` takes the graph inputs that have no initializer, in graph order (or
    by name as keywords, or one dict of them), and returns a tuple with one value per graph
    output. ``model.run(None, {name: value})`` is onnxruntime's ``InferenceSession.run``.
    ``model.apply(params, *inputs)`` runs with ``params`` (see :attr:`params`) in place of
    the stored weights, for gradients with respect to them. A ``Model`` is a pytree whose
    leaves are its params, so ``jax.grad(loss)(model)`` and optax work on it directly.

    Tensors are arrays; a sequence is a list of arrays; an optional is None or its value.
    Each output is checked against its declared element type; a computed shape that differs
    from the declared one warns once (:class:`~jaxonnx.DeclaredShapeWarning`) and the value
    is returned, as onnxruntime does. String outputs are fresh numpy copies, never views of
    the initializers.
    """

    def __init__(
        self, proto: onnx.ModelProto, *, size_hints=None, base_dir=None, registry=None, options=None, loop_bounds=None
    ):
        proto_copy = onnx.ModelProto()
        proto_copy.CopyFrom(proto)
        check_text(proto_copy)  # corrupt text would reach onnx's bindings and dict keys as bytes
        sort_nodes(proto_copy)  # as onnxruntime runs graphs whose nodes are out of order
        graph = proto_copy.graph
        self.opsets = opset_versions(proto_copy)
        # What onnxruntime runs although the IR or the schema refuses it: one warning per load.
        leniencies = run_as_onnxruntime_spells(
            proto_copy, lambda op_type: _attributes_known((registry or REGISTRY), op_type, self.opsets.get(""))
        )
        if leniencies:
            warnings.warn(
                f"{len(leniencies)} departure{'s' * (len(leniencies) > 1)} from the ONNX text, run as "
                f"onnxruntime runs {'them' if len(leniencies) > 1 else 'it'}: {'; '.join(leniencies)}.",
                LeniencyWarning,
                stacklevel=3,
            )
        self.graph_name = graph.name
        self.options = {"channels_last": True, **(options or {})}
        # `jax.jit(model)` names its computation after this (`jit_<graph name>`).
        self.__name__ = graph.name or "onnx_model"
        functions = {(f.domain, f.name): f for f in proto_copy.functions}
        used = {canonical_domain(n.domain) for n in graph.node if (n.domain, n.op_type) not in functions}
        # onnxruntime's transformer optimizer at opt_level 0 writes com.microsoft nodes without
        # importing the domain; onnxruntime runs a domain it knows at its newest version, and
        # so does jaxonnx for a domain its registry has ops of (the newest registered version).
        for domain in sorted(used - set(self.opsets) - {""}):
            known = [v for versions in (registry or REGISTRY).supported_ops(domain).values() for v in versions]
            if known:
                proto_copy.opset_import.append(onnx.helper.make_opsetid(domain, max(known)))
                self.opsets[domain] = max(known)
        unimported = sorted(used - set(self.opsets))
        if unimported:
            raise ModelLoadError(
                f"The model's nodes use the domains {unimported} but its opset_import names no version "
                "for them (is the model truncated?)."
            )
        # External data locations are checked before anything else reads the model, and the
        # data is read only after onnx's checker (see `check_model`).
        external, root = external_tensors(proto_copy, base_dir)
        hints = dict(size_hints or {})
        env = Environment(
            self.opsets, registry or REGISTRY, functions, hints, self.options, loop_bounds=dict(loop_bounds or {})
        )
        # Ops are resolved before onnx's checker runs, so an op used below its first
        # version gets jaxonnx's error (which versions exist) rather than the checker's.
        problems = _unsupported(
            graph,
            dataclasses.replace(
                env, size_hints=dict(hints), problems=[], hinted_outputs=[], claimed_bounds=set(), bounded_nodes=[]
            ),
        )
        if problems:
            raise UnsupportedOpError(unsupported_message(problems, self.opsets))
        check_model(proto_copy, schemas=_schemas_onnx_lacks(env.registry))
        if root is not None:  # None: the model has no external data
            read_external_data(external, root)
        self.graph = Graph.prepare(graph, env)
        unclaimed_bounds = sorted(set(env.loop_bounds) - env.claimed_bounds)
        if unclaimed_bounds:
            raise OnnxValidationError(
                f"Loop bounds were given for {unclaimed_bounds}, which name no Loop node nor its outputs; "
                f"the Loop nodes: {env.bounded_nodes or 'none'}."
            )
        if env.size_hints:
            raise OnnxValidationError(
                f"Size hints were given for {sorted(env.size_hints)}, which no node produces; "
                f"outputs that take size hints: {env.hinted_outputs or 'none'}."
            )
        for node in self.graph.walk():
            sparse = node.attributes.get("sparse_value")
            if isinstance(sparse, onnx.SparseTensorProto):
                try:
                    check_sparse(sparse)
                except Exception as e:  # noqa: BLE001
                    raise ModelLoadError(
                        f"The sparse_value of node {node.path!r} ({node.op.name}) cannot be read: {e}"
                    ) from e
        self._proto = proto_copy
        self.nodes = self.graph.nodes
        self._file_initializers: dict[str, np.ndarray] = self.graph.initializers
        self._declared = {i.name: i for i in self.graph.inputs}
        for name, value in self._file_initializers.items():
            if name in self._declared:
                expected = self._declared[name]
                if expected.kind != "tensor" or not (
                    expected.accepts_dtype(value.dtype, as_jax_computes=False) and expected.accepts_shape(value.shape)
                ):
                    raise ModelLoadError(
                        f"The graph input {name!r} is declared {expected.type_text()} but its initializer is "
                        f"{ValueType.of_array(name, value).type_text()}."
                    )
        self.input_names = tuple(i.name for i in self.graph.inputs if i.name not in self._file_initializers)
        self._declared_outputs = self.graph.outputs
        self.output_names = tuple(o.name for o in self._declared_outputs)
        self._declared_inputs_only: frozenset[str] = frozenset()
        # Outputs whose length a size hint (or loop bound) may set: their declared dims are
        # not compared with what they compute.
        self._hinted_lengths = _downstream(
            self.graph, {o for n in self.graph.nodes if n.size is not None for o in n.outputs}
        )
        self._find_weights()
        self._load_options = {
            "size_hints": dict(size_hints or {}),
            "options": self.options,
            "loop_bounds": dict(loop_bounds or {}),
        }
        self._params: dict[str, Any] | None = None  # a pytree's own params (see tree_unflatten)
        self._base = self  # the model a pytree copy was made from (see tree_flatten)
        self._plan_eager_calls()
        self._warn_if_narrowed()

    def _warn_if_narrowed(self) -> None:
        """One X64Warning listing the 64-bit graph inputs and outputs, if x64 is off."""
        if x64_enabled():
            return
        inputs = [self._declared[name] for name in self.input_names]
        narrowed_values = [
            f"{kind} {t.name!r} ({onnx_type_name(t.dtype)} as {onnx_type_name(jax_dtype(t.dtype))})"
            for kind, values in (("input", inputs), ("output", self._declared_outputs))
            for t in values
            if t.dtype is not None and is_narrowed(t.dtype)
        ]
        if narrowed_values and _x64_warning_due():
            warnings.warn(
                f"`jax_enable_x64` is off: the model {self.graph_name!r} computes {', '.join(narrowed_values)} in 32 "
                f"bits (integer inputs that do not fit raise); {X64_ON_HINT}.",
                X64Warning,
                stacklevel=4,
            )

    # ----------------------------------------------------------------------- calling

    @property
    def params(self) -> dict[str, jax.Array]:
        """The model's trainable weights as JAX arrays, by name: what ``named_parameters()``
        was in PyTorch.

        The rule, the same for every exporter: a float tensor of the graph is a param when
        it is an initializer or the value of a ``Constant`` node (paddle2onnx stores weights
        that way; named by the node's output), it has more than one element or is read as a
        layer's weight, and it does not decide a shape. So these are left out:

        - integer and bool tensors (indices, Slice bounds, conditions);
        - one-element tensors, the exporter's constants (a GELU's ``0.5`` and ``0.044715``,
          a Pow exponent ``3.0``, an attention scale, an epsilon), unless a layer reads it as
          its weight (a Gemm/Conv/MatMul weight or bias, a normalization's scale or bias, a
          recurrence's weights, a bias added to a MatMul's output): the bias of a single
          output unit is a param;
        - tensors whose value decides a shape (a Resize's ``scales``), which must stay
          known at trace time; passing one traced to :meth:`apply` is an error.

        :attr:`all_params` has every float tensor; :meth:`apply` takes any of them.

        The values are those the model computes with: after a training step
        (``jax.tree.map`` or ``optax.apply_updates`` on the model) they are the updated
        weights, not the file's.

        Example:
            >>> trained = optax.apply_updates(model, updates)  # doctest: +SKIP
            >>> trained.params  # the updated weights, as `trained(x)` computes with  # doctest: +SKIP
        """
        return {name: self._weight(name) for name in self._trainable}

    @property
    def all_params(self) -> dict[str, jax.Array]:
        """Every float initializer and float ``Constant`` value, by name, as JAX arrays (the
        shape-deciding ones too): for fine-tuning what :attr:`params` leaves out. Like
        :attr:`params`, the values the model computes with."""
        return {name: self._weight(name) for name in self._weights}

    @property
    def initializers(self) -> dict[str, np.ndarray | jax.Array]:
        """The main graph's initializers by name, as the model computes with them: the file's
        exact numpy arrays (integer, bool and string ones included), with each param replaced
        by its current value after a training step (a JAX array)."""
        own = self._params or {}
        return {name: own[name] if name in own else value for name, value in self._file_initializers.items()}

    def _weight(self, name: str):
        """A weight as the model computes with it: a pytree copy's own leaf (what
        ``jax.tree.map`` or optax made, or a pickle restored), else the file's value."""
        own = self._params or {}
        if name in own:
            value = own[name]
            return as_jax(value, what=f"weight {name!r}") if isinstance(value, (np.ndarray, np.generic)) else value
        return self._file_weight(name)

    def _file_weight(self, name: str) -> jax.Array:
        """The file's value of a weight as a JAX array, made once per x64 mode and shared by
        every pytree copy. Flattening the model (each call of a jitted function that takes it
        as an argument) would otherwise copy every weight to the device again: 5.5 ms per
        call for the small ResNet fixture on CPU, 12 ms for ResNet-18 on an H100, against a
        forward pass of 0.85 and 2 ms."""
        cache = self._base.__dict__.setdefault("_file_weights_on_device", {})
        key = (name, x64_enabled())
        if key not in cache:
            # Concrete even while a jit traces (a tracer must not outlive its trace).
            with jax.ensure_compile_time_eval():
                cache[key] = as_jax(self._weights[name], what=f"weight {name!r}")
        return cache[key]

    def _find_weights(self) -> None:
        """The float tensors a param may replace, and which of them are trainable."""
        self._weights: dict[str, np.ndarray] = {
            name: value
            for name, value in self._file_initializers.items()
            if np.issubdtype(value.dtype, np.inexact) and name not in self._declared_inputs_only
        }
        for node in self.nodes:
            value = node.attributes.get("value")
            if getattr(node.op, "op_type", None) == "Constant" and isinstance(value, onnx.TensorProto):
                array = decode_attribute(value)
                if np.issubdtype(array.dtype, np.inexact):
                    self._weights[node.outputs[0]] = array
        self._shape_deciding = _shape_deciding(self.graph)
        weight_slots = _read_as_weights(self.graph)
        self._trainable = [
            name
            for name, value in self._weights.items()
            if (value.size > 1 or (value.ndim and name in weight_slots)) and name not in self._shape_deciding
        ]

    def __call__(self, *inputs, rng=None, **named_inputs) -> tuple:
        """Runs the model: graph inputs positionally in graph order, or by name as keywords
        (``model(x=..., cond=...)``), or as one dict; returns one value per graph output.

        ``rng``: a ``jax.random`` key for the model's random draws (training-mode Dropout,
        the random ops); see :mod:`jaxonnx._core.graph` for how each node's key is made.
        """
        compiled = self._compiled_call(inputs, rng, named_inputs)
        if compiled is not None:
            return compiled(*inputs)
        if len(inputs) == 1 and isinstance(inputs[0], Mapping) and not named_inputs:
            named_inputs = dict(inputs[0])  # onnxruntime's feed dict
            inputs = ()
        return self._evaluate(self._call_feed(inputs, named_inputs), self._params or {}, rng)

    def compile(self, *inputs) -> jax.stages.Compiled:
        """The model compiled ahead of time for inputs like ``inputs`` (positional, in graph
        order: arrays or ``jax.ShapeDtypeStruct``), with the XLA options its size calls for
        (:func:`jaxonnx.compiler_options`: on CPU, a computation of under a million flops
        runs its products on one thread). Calling it runs no Python of jaxonnx's and checks
        nothing an op would check on known values (under ``jax.jit``, an index out of range
        is clamped as the op documents). An eager ``model(x)`` of JAX arrays runs one of
        these per input signature, or, where the graph's ops check values that come from the
        inputs (a Gather's indices), one compiled with those checks, which it reads back
        after each call to raise as running op by op would.

        Example:
            >>> model = jaxonnx.load("tests/fixtures/models/mlp_dynamo_dynamic.onnx")
            >>> run = model.compile(jax.ShapeDtypeStruct((4, 8), jnp.float32))
            >>> [y.shape for y in run(jnp.ones((4, 8)))]
            [(4, 4)]
        """
        lowered = jax.jit(self._run_positional).lower(*inputs)
        return lowered.compile(compiler_options(lowered) or None)

    def _run_positional(self, *inputs, checks=None) -> tuple:
        return self._run_graph(dict(zip(self.input_names, inputs)), {}, None, checks=checks)

    def _compiled_call(self, inputs, rng, named_inputs):
        """What an eager call of JAX arrays, given positionally, runs: the executable of its
        input signature (:meth:`compile`, made after the inputs' checks passed); None where
        the call takes the general path (inputs by name or not all JAX arrays, a key, a
        pytree copy's params, a graph run op by op or one that draws, a trace in progress).
        The checks and the feed cost more than a small model runs, so a signature is checked
        once. A graph whose ops defer checks gets its checked executable
        (:meth:`_checked_executable`), which raises after the computation as the general
        path (:meth:`_checked_call`) does."""
        if (
            rng is not None
            or named_inputs
            or self._params
            or self._whole_graph is None
            or self._draws
            or len(inputs) != len(self.input_names)
        ):
            return None
        signature = _array_signature(inputs)
        if signature is None or trace_in_progress():
            return None
        compiled = self._compiled.get(signature)
        if compiled is None:
            for name, value in zip(self.input_names, inputs):
                self._declared[name].checked_input(value, kind="input")  # raises, naming the input
            compiled = self._compiled[signature] = (
                self._checked_executable(self._run_positional, *inputs)
                if self._defers_checks
                else self.compile(*inputs)
            )
        return compiled

    def _checked_executable(self, run_graph, *args):
        """``run_graph(*args, checks=...)`` (the graph's run) compiled for arguments like
        ``args`` with a :class:`DeferredChecks`, as a function of such arguments that runs it
        and raises the first failed check's error, naming its node, as running op by op on
        concrete values would. What :meth:`_compiled_call` and :meth:`_checked_call` run for
        a graph whose ops check values that come from the inputs."""
        checks = DeferredChecks()

        def run(*args):
            return run_graph(*args, checks=checks), checks.flags()

        lowered = jax.jit(run).lower(*args)
        compiled = lowered.compile(compiler_options(lowered) or None)

        def call(*args):
            outputs, flags = compiled(*args)
            checks.raise_failed(flags)
            return outputs

        return call

    def _call_feed(self, inputs, named_inputs) -> dict[str, Any]:
        """The feed of a call, positional inputs first, then keywords by graph input name."""
        count = len(self.input_names)
        takes = f"The model takes {count} input{'' if count == 1 else 's'} ({', '.join(self.input_names) or 'none'})"
        if len(inputs) > len(self.input_names) or (not named_inputs and len(inputs) != len(self.input_names)):
            raise OnnxValidationError(
                f"{takes}, got {len(inputs)}; pass them in this order, by name as keywords, or as "
                "`model.run(None, {name: value})`."
            )
        feed = dict(zip(self.input_names, inputs))
        twice = sorted(set(feed) & set(named_inputs))
        unknown = sorted(set(named_inputs) - set(self._declared))
        missing = [name for name in self.input_names if name not in feed and name not in named_inputs]
        if twice or unknown or missing:
            problems = [
                text
                for names, text in (
                    (twice, f"{twice} both positionally and by name"),
                    (unknown, f"unknown names {unknown}"),
                    (missing, f"no value for {missing}"),
                )
                if names
            ]
            raise OnnxValidationError(f"{takes}; got {' and '.join(problems)}.")
        feed.update(named_inputs)
        return feed

    def run(self, output_names, input_feed: Mapping[str, Any] | None = None, *, rng=None):
        """Runs the model on inputs given by name.

        Two spellings:

        - onnxruntime's ``InferenceSession.run(output_names, input_feed)``: returns a list
          of the outputs named in ``output_names`` (all of them for None), in that order;
        - ``run(feed)``: returns ``{output name: value}``.

        Example:
            >>> model = jaxonnx.load(jaxonnx.demo_model_path())
            >>> [y] = model.run(None, {"x": np.ones((4, 6), np.float32)})
            >>> y.shape
            (1, 9)
        """
        feed: Mapping[str, Any] | None
        if input_feed is None and isinstance(output_names, Mapping):
            feed, selected = output_names, None
        else:
            feed, selected = input_feed, output_names
            if not isinstance(feed, Mapping):
                raise OnnxValidationError(
                    f"`run` takes `input_feed` as a dict of input values by name, got {type(feed).__name__}."
                )
        problems = []
        unknown = sorted(set(feed) - set(self._declared))
        missing = [name for name in self.input_names if name not in feed]
        if unknown:
            problems.append(f"unknown names {unknown}")
        if missing:
            problems.append(f"no value for {missing}")
        if problems:
            raise OnnxValidationError(
                f"The model's inputs are {', '.join(self._declared) or 'none'}; got {' and '.join(problems)}."
            )
        outputs = dict(zip(self.output_names, self._evaluate(dict(feed), self._params or {}, rng)))
        if selected is None and input_feed is None:
            return outputs
        if selected is None:
            return list(outputs.values())
        unknown = [name for name in selected if name not in outputs]
        if unknown:
            raise OnnxValidationError(
                f"`output_names` names {unknown}, which are not outputs of the model; its outputs are "
                f"{', '.join(self.output_names)}."
            )
        return [outputs[name] for name in selected]

    def apply(self, params: Mapping[str, Any], *inputs, rng=None, **named_inputs) -> tuple:
        """Like calling the model, with ``params`` in place of the weights of those names."""
        unknown = sorted(set(params) - set(self._weights) - set(self._file_initializers))
        if unknown:
            raise OnnxValidationError(
                f"`params` names {unknown}, which are not initializers or Constant values of the model."
            )
        if len(inputs) == 1 and isinstance(inputs[0], Mapping) and not named_inputs:
            named_inputs = dict(inputs[0])
            inputs = ()
        return self._evaluate(self._call_feed(inputs, named_inputs), {**(self._params or {}), **params}, rng)

    def _evaluate(self, feed: dict[str, Any], params: Mapping[str, Any], rng) -> tuple:
        checked_params = {name: self._checked_param(name, value) for name, value in params.items()}
        checked_feed = {name: self._declared[name].checked_input(value, kind="input") for name, value in feed.items()}
        if _tracing(checked_feed, checked_params):
            return self._run_graph(checked_feed, checked_params, rng)
        if rng is None and self._draws:
            # An eager call without a key draws anew, as onnxruntime does (see ops/_helpers/random.py).
            rng = jax.random.PRNGKey(secrets.randbits(32))
        if (
            self._whole_graph is not None
            and set(checked_params) <= set(self._trainable)
            and not any(isinstance(v, (list, np.ndarray)) and is_string_array(v) for v in checked_feed.values())
        ):
            if self._defers_checks:
                return self._checked_call(checked_feed, checked_params, rng)
            return self._whole_graph(checked_feed, checked_params, rng)
        return self._run_graph(checked_feed, checked_params, rng)

    def _checked_call(self, feed, params, rng) -> tuple:
        """An eager call of a graph whose ops check values that come from the inputs (a
        Gather's indices): compiled whole per signature with those checks deferred
        (:mod:`jaxonnx._core.checks`), run, and the first failed check raised, naming its
        node, as running op by op on concrete values would."""
        key = (_signature_key(feed), _signature_key(params), _signature_key({"rng": rng}))
        call = self._checked.get(key)
        if call is None:
            call = self._checked[key] = self._checked_executable(self._run_graph, feed, params, rng)
        return call(feed, params, rng)

    def _run_graph(self, feed, params, rng, checks=None) -> tuple:
        outputs = self.graph.run(feed, rng=rng, options=self.options, params=params, checks=checks)
        warned = self.graph.warned_shapes
        return tuple(
            declared.output(value, warned=None if declared.name in self._hinted_lengths else warned)
            for declared, value in zip(self._declared_outputs, outputs)
        )

    def _plan_eager_calls(self) -> None:
        """Whether an eager call compiles the whole graph at once (one XLA computation per
        input signature, like ``jax.jit(model)``) instead of dispatching op by op. It does
        unless some node reads, at trace time, a value computed from the graph inputs (a
        Slice bound, a condition, a NonZero's input, an index it bounds-checks): those run
        op by op on concrete values, as before. ``eager_mode`` says which, and why."""
        self._draws = any(getattr(getattr(n.op, "contract", None), "rng", False) for n in self.graph.walk())
        strings = [
            t.name for t in (*self.graph.inputs, *self.graph.outputs) if t.dtype is not None and t.dtype.kind in "OUS"
        ]
        strings += [name for name, value in self._file_initializers.items() if value.dtype.kind in "OUS"]
        maps = [t.name for t in (*self.graph.inputs, *self.graph.outputs) if _holds_map(t)]
        made = _string_made_inside(self.graph, {*self.input_names, *self._trainable})
        reason = (
            f"the string value {strings[0]!r}, which JAX cannot hold"
            if strings
            else f"the map value {maps[0]!r}, a Python dict"
            if maps
            else f"node {made.path!r} ({made.op.name}) makes strings, which JAX cannot hold"
            if made
            else _needs_concrete_values(self.graph, set(self.input_names))
        )
        self.eager_mode = "whole graph compiled per input signature" if reason is None else f"op by op: {reason}"
        self._whole_graph = jax.jit(self._run_graph) if reason is None else None
        # The executable of each input signature of eager calls (see `_compiled_call`).
        self._compiled: dict[tuple, Any] = {}
        # A graph whose ops check values computed from the inputs compiles whole for an
        # eager call only with those checks deferred (see `_checked_call`), per signature.
        self._defers_checks = reason is None and any(
            isinstance(node.op, OpVersion) and node.op.contract.takes("checks") for node in self.graph.nodes
        )
        self._checked: dict[tuple, Any] = {}

    def _checked_param(self, name: str, value):
        own = self._weights.get(name, self._file_initializers.get(name))
        assert own is not None, "`apply` refused the names that are not weights"
        if name in self._shape_deciding and any(is_traced(v) for v in jax.tree.leaves(value)):
            raise OnnxValidationError(
                f"The param {name!r} decides a shape (it reaches {self._shape_deciding[name]}), so its value must "
                "be known at trace time and it cannot be traced (differentiated or passed through jax.jit as an "
                "argument); it is not in `model.params`. Leave it out of the params you pass."
            )
        dtype = getattr(value, "dtype", None)
        if (
            dtype is not None
            and np.issubdtype(own.dtype, np.inexact)
            and jnp.issubdtype(dtype, jnp.inexact)
            and np.dtype(dtype) != own.dtype
        ):
            # Mixed precision: a param kept in another float type (bfloat16 master weights,
            # or float32 ones for a float16 model) is cast to the model's type at the boundary;
            # gradients flow back through the cast in the param's own type.
            value = jnp.asarray(value).astype(jax_dtype(own.dtype))
        return ValueType.of_array(name, own).checked_input(value, kind="param")

    # ----------------------------------------------------------------------- pytree, pickle, saving

    def tree_flatten(self):
        """A ``Model`` is a pytree: its leaves are :attr:`params` (the values it runs with),
        its graph is static, so ``jax.grad(loss)(model)`` gives a model of gradients."""
        names = tuple(self._trainable)
        own = self._params or {}
        # A leaf is kept as it is (a tracer, or whatever `jax.tree.map` put there).
        leaves = [own[name] if name in own else self._file_weight(name) for name in names]
        return leaves, (self._base, names)

    @classmethod
    def tree_unflatten(cls, aux, leaves):
        base, names = aux
        copy = object.__new__(cls)
        copy.__dict__.update(base.__dict__)
        copy._params = dict(zip(names, leaves))
        return copy

    def __getstate__(self):
        # The prepared graph holds onnx schemas, which do not pickle: a pickle holds the
        # model's bytes, the load options and the current params, and loading it prepares
        # the graph again (with jaxonnx's own registry).
        params = {k: np.asarray(v) for k, v in (self._params or {}).items()}
        return {"proto": self._proto.SerializeToString(), "load": self._load_options, "params": params}

    def __setstate__(self, state):
        proto = onnx.ModelProto()
        proto.ParseFromString(state["proto"])
        self.__init__(
            proto,
            size_hints=state["load"]["size_hints"],
            options=state["load"]["options"],
            loop_bounds=state["load"].get("loop_bounds"),
        )
        self._params = state["params"] or None

    def to_proto(self, params: Mapping[str, Any] | None = None) -> onnx.ModelProto:
        """The ONNX model with the weights it computes with (those of a pytree copy that
        optax updated, say), and ``params`` in place of the weights of those names, written
        into its initializers and Constant values: what :meth:`apply` with ``params`` runs.
        Every other byte is kept: graph, metadata, opsets, and each weight's element type (a
        float16 or bfloat16 weight stays one).

        Raises:
            OnnxValidationError: for a name that is no weight of the model, or a value of
                another shape (or not a float array).
        """
        params = {**(self._params or {}), **(params or {})}
        unknown = sorted(set(params) - set(self._weights))
        if unknown:
            raise OnnxValidationError(
                f"`params` names {unknown}, which are not float initializers or Constant values of the model."
            )
        arrays = {}
        for name, value in params.items():
            own = self._weights[name]
            array = np.asarray(value)
            if array.shape != own.shape or not np.issubdtype(array.dtype, np.inexact):
                raise OnnxValidationError(
                    f"The param {name!r} is {own.dtype}{list(own.shape)} in the model but got "
                    f"{array.dtype}{list(array.shape)}."
                )
            arrays[name] = array.astype(own.dtype)
        proto = onnx.ModelProto()
        proto.CopyFrom(self._proto)
        for tensor in proto.graph.initializer:
            if tensor.name in arrays:
                tensor.CopyFrom(numpy_helper.from_array(arrays[tensor.name], tensor.name))
        for node in proto.graph.node:
            if node.op_type == "Constant" and node.output[0] in arrays:
                for attribute in node.attribute:
                    if attribute.name == "value":
                        attribute.t.CopyFrom(numpy_helper.from_array(arrays[node.output[0]], attribute.t.name))
        return proto

    def save(
        self, path: str | os.PathLike, params: Mapping[str, Any] | None = None, *, external_data: bool | None = None
    ) -> None:
        """Writes the model, with the weights it computes with and ``params`` in place of
        those named there (see :meth:`to_proto`), to ``path``.

        Args:
            external_data: store the tensors in a file beside the model (``<name>.data``),
                as models over protobuf's 2 GB limit must be; by default only when the
                model would exceed that limit.

        Example:
            >>> model.save("finetuned.onnx", params)  # doctest: +SKIP
        """
        proto = self.to_proto(params)
        if external_data is None:
            external_data = proto.ByteSize() > 2**31 - 2**20
        path = os.fspath(path)
        if external_data:
            onnx.save_model(
                proto,
                path,
                save_as_external_data=True,
                all_tensors_to_one_file=True,
                location=os.path.basename(path) + ".data",
                size_threshold=0,
            )
        else:
            onnx.save_model(proto, path)

    # ----------------------------------------------------------------------- description

    @property
    def inputs(self) -> tuple[ValueInfo, ...]:
        """The graph inputs a call takes (those without an initializer), in call order, as
        onnxruntime's ``session.get_inputs()`` gives them: name, type text and shape, with
        symbolic dims by name and unknown dims as None.

        Example:
            >>> model = jaxonnx.load(jaxonnx.demo_model_path())
            >>> [(i.name, i.type, i.shape) for i in model.inputs]
            [('x', 'tensor(float)', [4, 6])]
        """
        return tuple(self._declared[name].info() for name in self.input_names)

    @property
    def outputs(self) -> tuple[ValueInfo, ...]:
        """The graph outputs, in order, like :attr:`inputs`."""
        return tuple(declared.info() for declared in self._declared_outputs)

    def get_inputs(self) -> tuple[ValueInfo, ...]:
        """onnxruntime's spelling of :attr:`inputs`."""
        return self.inputs

    def get_outputs(self) -> tuple[ValueInfo, ...]:
        """onnxruntime's spelling of :attr:`outputs`."""
        return self.outputs

    def __repr__(self) -> str:
        inputs = ", ".join(self._declared[n].describe() for n in self.input_names)
        return (
            f"Model({self.graph_name!r}, opset {self.opsets.get('', '?')}, {len(self.nodes)} "
            f"node{'' if len(self.nodes) == 1 else 's'}, "
            f"inputs ({inputs}), outputs {list(self.output_names)})"
        )

    def describe_nodes(self) -> list[tuple[str, str, str]]:
        """``(node path, op type, resolved version)`` for every node, subgraphs included, in
        graph order (a subgraph's nodes after the node that holds it)."""
        return [(n.path, getattr(n.op, "op_type", n.name.split("_")[0]), n.op.name) for n in self.graph.walk()]


_X64_WARNED: list[bool] = []  # whether this process has shown an X64Warning under the default filters


def _x64_warning_due() -> bool:
    """Whether to warn: once per process under Python's default filters (each model of an
    LLM's session would repeat it), every time where a filter asks for every one ("always",
    "error", as tests and ``pytest.warns`` set)."""
    action = warnings.defaultaction  # type: ignore[attr-defined]  # exists at run time; typeshed leaves it out
    for filter_action, message, category, module, _ in warnings.filters:
        if (
            issubclass(X64Warning, category)
            and (message is None or message.pattern in ("", ".*"))
            and (module is None or module.pattern in ("", ".*"))
        ):
            action = filter_action
            break
    if action in ("always", "error", "ignore"):
        return True  # "ignore" is warnings' own to apply
    first = not _X64_WARNED
    _X64_WARNED.append(True)
    return first


def _attributes_known(registry, op_type: str, opset: int | None) -> set[str] | None:
    """The attribute names the registry's op of the default domain takes at ``opset``, or None
    where it has none (the op's own error comes later)."""
    try:
        return set(registry.get_op(op_type, opset, "").schema.attributes) if opset is not None else None
    except Exception:  # noqa: BLE001  (an unsupported op or version is reported by name later)
        return None


def _schemas_onnx_lacks(registry) -> list:
    """The schemas registered beside ops of the default domain (versions onnx does not define,
    such as onnxruntime's SimplifiedLayerNormalization-1), for onnx's checker."""
    return [
        op.own_schema
        for name, versions in registry.supported_ops("").items()
        for version in versions
        if (op := registry.get_op(name, version, "")).own_schema is not None
    ]


def _downstream(graph: Graph, names: set[str]) -> frozenset[str]:
    """``names`` and every value of ``graph`` computed from them (through subgraphs too)."""
    reached = set(names)
    for node in graph.nodes:
        reads = {n for n in node.inputs if n} | {n for sub in node.bodies for n in sub.outer_names}
        if reads & reached:
            reached |= {n for n in node.outputs if n}
    return frozenset(reached)


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
        if op.contract.size_hint or op.contract.takes("rng"):
            return f"node {node.path!r} ({op.name}) has a data-dependent length or draws"
        formals = op.formal_names(len(node.inputs))
        # Values read only to check them are checked after the computation (checks.py).
        needs = set(op.contract.static) | (set() if op.contract.takes("checks") else set(op.contract.concrete))
        bad = [formal for formal, name in zip(formals, node.inputs) if name in dependent and formal in needs]
        if bad:
            return f"node {node.path!r} ({op.name}) reads the value of `{bad[0]}`, computed from the inputs"
        if op.op_type not in _SHAPE_ONLY:
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
    """``top`` or the first of the nodes ``inner`` (its bodies') that may make strings."""
    for node in (top, *inner):
        op = node.op
        if not isinstance(op, OpVersion):
            continue
        if op.op_type == "Cast" and node.attributes.get("to") == onnx.TensorProto.STRING:
            return node
        if op.domain == "ai.onnx.ml" and op.op_type == "CategoryMapper":
            return node  # int64 to string or back, by the input's type
        if op.domain == "ai.onnx.ml" and op.op_type == "LabelEncoder":
            values = node.attributes.get("values_tensor")
            if "values_strings" in node.attributes or getattr(values, "data_type", None) == onnx.TensorProto.STRING:
                return node
        constraints = {c.type_param_str: c.allowed_type_strs for c in op.schema.type_constraints}
        for formal in op.schema.outputs:
            if set(constraints.get(formal.type_str, [formal.type_str])) == {"tensor(string)"}:
                return node
    return None


#: Ops whose outputs depend only on their inputs' shapes (and types), not on their values.
_SHAPE_ONLY = frozenset({"Shape", "Size", "EyeLike", "RandomNormalLike", "RandomUniformLike"})


def _shape_deciding(graph: Graph) -> dict[str, str]:
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
            if getattr(node.op, "op_type", "") in _SHAPE_ONLY:
                continue  # its output depends on its input's shape, never on its values
            reached = next((deciding[o] for o in node.outputs if o in deciding), None)
            if reached:
                for name in node.inputs:
                    if name and name not in deciding:
                        deciding[name] = reached
                        changed = True
    return deciding


def _unsupported(graph: onnx.GraphProto, env: Environment) -> list[str]:
    """Every node, at any depth, whose op nothing runs (as sentences): a dry run of
    preparing the graph that reads no tensor data."""
    Graph.prepare(graph, env, read_initializers=False)
    return env.problems


# The inputs that hold a layer's learned weights (by position): a one-element tensor read
# there (the bias of a single output unit, a one-channel normalization's scale) is a param,
# while one-element tensors elsewhere are the exporter's constants (0.5, a Pow exponent).
_WEIGHT_INPUTS = {
    "Gemm": (1, 2),
    "MatMul": (1,),
    "Conv": (1, 2),
    "ConvTranspose": (1, 2),
    "PRelu": (1,),
    "BatchNormalization": (1, 2),
    "InstanceNormalization": (1, 2),
    "LayerNormalization": (1, 2),
    "GroupNormalization": (1, 2),
    "RMSNormalization": (1,),
    "LSTM": (1, 2, 3),
    "GRU": (1, 2, 3),
    "RNN": (1, 2, 3),
}
# Ops whose output a bias is added to (``x @ W + b`` as MatMul then Add).
_LINEAR_OPS = {"MatMul", "Gemm", "Conv", "ConvTranspose"}


def _read_as_weights(graph) -> set[str]:
    """The names read in a layer's weight inputs (through Identity nodes), and the operand
    added to a linear op's output: where a one-element tensor is a learned weight."""
    produced_by = {out: node for node in graph.nodes for out in node.outputs}
    sources = {}  # an Identity's output -> the name it copies
    for node in graph.nodes:
        if getattr(node.op, "op_type", None) == "Identity" and node.inputs:
            sources[node.outputs[0]] = node.inputs[0]

    def origin(name):
        while name in sources:
            name = sources[name]
        return name

    names = set()
    for node in graph.nodes:
        op_type = getattr(node.op, "op_type", "")
        for index in _WEIGHT_INPUTS.get(op_type, ()):
            if index < len(node.inputs) and node.inputs[index]:
                names.add(origin(node.inputs[index]))
        if op_type == "Add" and len(node.inputs) == 2:
            for mine, other in (node.inputs, node.inputs[::-1]):
                if getattr(getattr(produced_by.get(other), "op", None), "op_type", None) in _LINEAR_OPS:
                    names.add(origin(mine))
    return names


def unsupported_nodes(model: onnx.ModelProto, *, registry: Registry | None = None) -> list[str]:
    """The nodes of ``model`` (subgraphs and functions included) whose ops jaxonnx cannot
    run, one sentence each; empty when it runs them all (registered ops, the model's local
    functions, and ops that onnx defines with a function body).

    Example:
        >>> jaxonnx.unsupported_nodes(onnx.load(jaxonnx.demo_model_path()))
        []
    """
    check_text(model)
    functions = {(f.domain, f.name): f for f in model.functions}
    return _unsupported(model.graph, Environment(opset_versions(model), registry or REGISTRY, functions))


def unsupported_message(problems: list[str], opsets: Mapping[str, int]) -> str:
    """One error for every unsupported op of a model: the ops with their node counts first,
    then the nodes, and the ways out."""
    counts: dict[str, int] = {}
    for problem in problems:
        op = problem.split("(", 1)[1].split(")", 1)[0].split(",")[0]
        counts[op] = counts.get(op, 0) + 1
    ops = ", ".join(f"{op} ({n} node{'s' if n > 1 else ''})" for op, n in counts.items())
    opset_text = ", ".join(f"{domain or 'ai.onnx'} {version}" for domain, version in sorted(opsets.items()))
    shown = problems[:10] + ([f"... and {len(problems) - 10} more"] if len(problems) > 10 else [])
    return (
        f"The model uses ops jaxonnx does not support: {ops} (opsets: {opset_text}). The nodes: "
        + "; ".join(shown)
        + ". The docs' support table (docs/ops.md) lists what jaxonnx runs, `python -m jaxonnx check MODEL.onnx` "
        "shows every node, and `jaxonnx.register` supplies a missing op yourself (see docs/guide/loading.md)."
    )
