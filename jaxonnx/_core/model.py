"""The public face of a loaded ONNX model: :func:`load` and :class:`Model`.

``load`` reads a path, bytes or ``onnx.ModelProto``; ``Model`` prepares it once
(``preparation.py``), finds its params (``params.py``), plans how its calls execute
(``planning.py``) and checks what each call passes. Writing weights back into ONNX is
``serialization.py``; the errors and warnings a load reports are ``reports.py``.
``jaxonnx._core.graph`` runs the graph itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
import onnx

from jaxonnx import ops as _ops  # noqa: F401  (registers every op)
from jaxonnx._core.dtypes import as_jax, x64_enabled
from jaxonnx._core.loading import parse_model
from jaxonnx._core.params import checked_param, float_tensors, trainable_names
from jaxonnx._core.planning import EagerPlan, compile_ahead, shape_deciding
from jaxonnx._core.preparation import prepare_model
from jaxonnx._core.registry import Registry
from jaxonnx._core.reports import warn_if_narrowed
from jaxonnx._core.serialization import save_proto, with_weights
from jaxonnx._core.types import ValueInfo
from jaxonnx._errors import ModelLoadError, OnnxValidationError

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
        self.options = {"channels_last": True, **(options or {})}
        prepared = prepare_model(
            proto,
            size_hints=size_hints,
            loop_bounds=loop_bounds,
            base_dir=base_dir,
            registry=registry,
            options=self.options,
        )
        self._proto = prepared.proto
        self.opsets = prepared.opsets
        self.graph = prepared.graph
        self.graph_name = self._proto.graph.name
        # `jax.jit(model)` names its computation after this (`jit_<graph name>`).
        self.__name__ = self.graph_name or "onnx_model"
        self.nodes = self.graph.nodes
        self._file_initializers: dict[str, np.ndarray] = self.graph.initializers
        self._declared = {i.name: i for i in self.graph.inputs}
        self.input_names = tuple(i.name for i in self.graph.inputs if i.name not in self._file_initializers)
        self._declared_outputs = self.graph.outputs
        self.output_names = tuple(o.name for o in self._declared_outputs)
        # Outputs whose length a size hint (or loop bound) may set: their declared dims are
        # not compared with what they compute.
        self._hinted_lengths = prepared.hinted_lengths
        self._find_weights()
        self._load_options = {
            "size_hints": dict(size_hints or {}),
            "options": self.options,
            "loop_bounds": dict(loop_bounds or {}),
        }
        self._params: dict[str, Any] | None = None  # a pytree's own params (see tree_unflatten)
        self._base = self  # the model a pytree copy was made from (see tree_flatten)
        self._plan = EagerPlan(
            self.graph,
            run_graph=self._run_graph,
            run_positional=self._run_positional,
            input_names=self.input_names,
            trainable=self._trainable,
            initializers=self._file_initializers,
        )
        # Whether an eager call compiles the whole graph at once (one XLA computation per
        # input signature, like `jax.jit(model)`) or dispatches op by op, and why.
        self.eager_mode = self._plan.mode
        warn_if_narrowed(self.graph_name, [self._declared[name] for name in self.input_names], self._declared_outputs)

    # ----------------------------------------------------------------------- params

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
        as an argument) would otherwise copy every weight to the device again, which costs
        more than a small model's forward pass (benchmarks/results.md, section 5)."""
        cache = self._base.__dict__.setdefault("_file_weights_on_device", {})
        key = (name, x64_enabled())
        if key not in cache:
            # Concrete even while a jit traces (a tracer must not outlive its trace).
            with jax.ensure_compile_time_eval():
                cache[key] = as_jax(self._weights[name], what=f"weight {name!r}")
        return cache[key]

    def _find_weights(self) -> None:
        """The float tensors a param may replace, and which of them are trainable (a
        subclass that trains other params, as LoRA's adapters, sets `_trainable` here)."""
        self._weights: dict[str, np.ndarray] = float_tensors(self.graph, self._file_initializers)
        self._shape_deciding = shape_deciding(self.graph)
        self._trainable = trainable_names(self.graph, self._weights, self._shape_deciding)

    # ----------------------------------------------------------------------- calling

    def __call__(self, *inputs, rng=None, **named_inputs) -> tuple:
        """Runs the model: graph inputs positionally in graph order, or by name as keywords
        (``model(x=..., cond=...)``), or as one dict; returns one value per graph output.

        ``rng``: a ``jax.random`` key for the model's random draws (training-mode Dropout,
        the random ops); see :mod:`jaxonnx._core.graph` for how each node's key is made.
        """
        if rng is None and not named_inputs and not self._params:
            compiled = self._plan.executable_for(inputs, self._check_positional)
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
        return compile_ahead(self._run_positional, *inputs)

    def _run_positional(self, *inputs, checks=None) -> tuple:
        return self._run_graph(dict(zip(self.input_names, inputs)), {}, None, checks=checks)

    def _check_positional(self, inputs: tuple) -> None:
        """Checks positional inputs against their declared types, raising with the name."""
        for name, value in zip(self.input_names, inputs):
            self._declared[name].checked_input(value, kind="input")

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
        return self._plan.run(checked_feed, checked_params, rng)

    def _run_graph(self, feed, params, rng, checks=None) -> tuple:
        outputs = self.graph.run(feed, rng=rng, options=self.options, params=params, checks=checks)
        warned = self.graph.warned_shapes
        return tuple(
            declared.output(value, warned=None if declared.name in self._hinted_lengths else warned)
            for declared, value in zip(self._declared_outputs, outputs)
        )

    def _checked_param(self, name: str, value):
        own = self._weights.get(name, self._file_initializers.get(name))
        assert own is not None, "`apply` refused the names that are not weights"
        return checked_param(name, value, own, self._shape_deciding)

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
        return with_weights(self._proto, self._weights, {**(self._params or {}), **(params or {})})

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
        save_proto(self.to_proto(params), path, external_data=external_data)

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
