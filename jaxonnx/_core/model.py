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
import warnings
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
import onnx

from jaxonnx import ops as _ops  # noqa: F401  (registers every op)
from jaxonnx._core.dtypes import (
    X64_ON_HINT,
    as_jax,
    as_str_array,
    is_narrowed,
    is_string_array,
    jax_dtype,
    narrowed,
    numpy_dtype,
    onnx_type_name,
    x64_enabled,
)
from jaxonnx._errors import (
    ModelLoadError,
    OnnxTypeError,
    OnnxValidationError,
    StaticValueError,
    UnsupportedOpError,
    X64Warning,
    with_context,
)
from jaxonnx._core.loading import (
    canonical_domain,
    check_model,
    check_sparse,
    external_tensors,
    node_attributes,
    opset_versions,
    parse_model,
    read_external_data,
    read_tensor,
    sparse_to_numpy,
    tensor_to_numpy,
)
from jaxonnx._core.registry import OpVersion, get_op, supported_ops
from jaxonnx.ops._helpers.common import is_traced

# --------------------------------------------------------------------------- loading


def load(model, *, size_hints: Mapping[str, int] | None = None, base_dir: str | os.PathLike | None = None) -> Model:
    """Loads an ONNX model as a :class:`Model`, a pure JAX function of its graph inputs.

    Args:
        model: a path to an ``.onnx`` file, its bytes, or an ``onnx.ModelProto``.
        size_hints: the data-dependent output length of ops that take a size hint
            (Compress: along its axis; NonZero: the number of nonzeros), by output name,
            e.g. ``{"kept": 128}``, for inputs only known at run time. The output then
            always has that length: the selected entries first, then padding; selecting
            more raises at run time rather than truncating.
        base_dir: the folder that external data (of initializers, sparse tensors and node
            attributes alike) is read from when ``model`` is bytes or a ModelProto (a path's
            own folder is used otherwise). Locations that resolve outside it are refused, and
            external data is never looked up relative to the working directory: bytes or a
            ModelProto with external data and no ``base_dir`` are refused.

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
        UnsupportedOpError: for ops, domains or non-tensor graph inputs and outputs that
            jaxonnx does not run.

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
        raise ModelLoadError(
            f"`load` takes a path, bytes or an onnx.ModelProto, got {type(model).__name__}."
        )
    return Model(proto, size_hints=size_hints, base_dir=base_dir)


# --------------------------------------------------------------------------- the prepared graph

#: The 64-bit type that JAX narrows to each 32-bit type while `jax_enable_x64` is off.
_WIDE = {np.dtype(narrow): np.dtype(wide) for narrow, wide in
         [(np.int32, np.int64), (np.uint32, np.uint64), (np.float32, np.float64), (np.complex64, np.complex128)]}


def _narrowing_note(declared: _TensorType, value) -> str:
    """Why a JAX value has a 32-bit dtype that the declaration does not name, when x64 is off:
    JAX (or ``jax.jit``, for a traced value) converts 64-bit arrays to 32 bits."""
    wide = _WIDE.get(np.dtype(value.dtype))
    if x64_enabled() or wide is None or not isinstance(value, jax.Array):
        return ""
    who = "jax.jit" if is_traced(value) else "JAX"
    return (
        f" (if it was a {wide} array, {who} converted the {wide} array to {value.dtype} because "
        f"jax_enable_x64 is off; {X64_ON_HINT})"
    )



@dataclasses.dataclass(frozen=True)
class ValueInfo:
    """A declared graph input or output, as onnxruntime's ``NodeArg`` describes it.

    Attributes:
        name: the graph value's name.
        type: the ONNX type as text, e.g. ``"tensor(float)"`` (``"tensor(?)"`` when the
            element type is not declared).
        shape: one entry per dim: an int, the name of a symbolic dim, or None for a dim
            with neither (or a negative ``dim_value``); None when the rank is not declared.
        dtype: the numpy element type (ml_dtypes for bfloat16 and the narrow floats), or
            None when not declared.
    """

    name: str
    type: str
    shape: list[int | str | None] | None
    dtype: np.dtype | None


@dataclasses.dataclass(frozen=True)
class _TensorType:
    """A declared graph input or output (or an initializer's own type, for ``params``)."""

    name: str
    dtype: np.dtype | None
    shape: tuple[int | str | None, ...] | None  # None: rank unknown

    @classmethod
    def of_array(cls, name: str, array: np.ndarray) -> _TensorType:
        """The exact type of an array, e.g. of an initializer that a param replaces."""
        return cls(name, array.dtype, tuple(array.shape))

    def type_text(self) -> str:
        type_name = onnx_type_name(self.dtype) if self.dtype is not None else "?"
        dims = "?" if self.shape is None else "[" + ", ".join("?" if d is None else str(d) for d in self.shape) + "]"
        return f"tensor({type_name}){dims}"

    def describe(self) -> str:
        return f"{self.name}: {self.type_text()}"

    def info(self) -> ValueInfo:
        type_name = onnx_type_name(self.dtype) if self.dtype is not None else "?"
        return ValueInfo(self.name, f"tensor({type_name})", None if self.shape is None else list(self.shape), self.dtype)

    def accepts_dtype(self, dtype, *, as_jax_computes: bool = True) -> bool:
        """Whether ``dtype`` is the declared type; with ``as_jax_computes``, the 32-bit
        counterpart of a declared 64-bit type is accepted too while ``jax_enable_x64`` is off."""
        if self.dtype is None:
            return True
        if self.dtype == object:
            return np.dtype(dtype).kind in "OUS"
        if np.dtype(dtype) == self.dtype:
            return True
        return as_jax_computes and is_narrowed(self.dtype) and np.dtype(dtype) == jax_dtype(self.dtype)

    def accepts_shape(self, shape) -> bool:
        if self.shape is None:
            return True
        shape = tuple(shape)
        return len(shape) == len(self.shape) and all(
            not isinstance(d, int) or d == s for d, s in zip(self.shape, shape)
        )


@dataclasses.dataclass(frozen=True)
class _Node:
    name: str
    op: OpVersion
    inputs: tuple[str, ...]  # "" for an omitted optional input
    outputs: tuple[str, ...]
    attributes: dict[str, Any]
    size: int | None  # the size hint of a Compress output


def _declared(value_info: onnx.ValueInfoProto, kind: str) -> _TensorType:
    """The declared type of a graph input or output. Everything the IR lets a declaration
    leave out means "any": no shape field (any rank), a dim with neither value nor name
    (any length), an UNDEFINED element type, and an output with no type at all."""
    tensor_type = value_info.type.tensor_type
    if kind == "output" and not value_info.HasField("type"):
        return _TensorType(value_info.name, None, None)
    if not value_info.type.HasField("tensor_type"):
        raise UnsupportedOpError(
            f"The graph {kind} {value_info.name!r} is not a tensor ({value_info.type.WhichOneof('value')}); "
            "jaxonnx runs tensor graphs only."
        )
    dtype = numpy_dtype(tensor_type.elem_type) if tensor_type.elem_type else None
    shape = None
    if tensor_type.HasField("shape"):
        # paddle2onnx and others write `dim_value: -1` for a dynamic dim; like onnxruntime,
        # a negative dim means "unknown", as a dim with neither value nor name does.
        shape = tuple(
            (d.dim_value if d.dim_value >= 0 else None) if d.HasField("dim_value") else (d.dim_param or None)
            for d in tensor_type.shape.dim
        )
    return _TensorType(value_info.name, dtype, shape)


class Model:
    """An ONNX model prepared once as a pure JAX function. Create it with :func:`jaxonnx.load`.

    ``model(*inputs)`` takes the graph inputs that have no initializer, in graph order,
    and returns a tuple with one array per graph output. ``model.run({name: value})``
    takes inputs by name (initializer-backed inputs included) and returns ``{name: output}``.
    ``model.apply(params, *inputs)`` runs with ``params`` (see :attr:`params`) in place of
    the stored initializers, for gradients with respect to the model's weights.

    Each output is checked against its declared element type and rank (declared dims are
    not checked); string outputs are fresh numpy copies, never views of the initializers.
    """

    def __init__(self, proto: onnx.ModelProto, *, size_hints=None, base_dir=None):
        proto_copy = onnx.ModelProto()
        proto_copy.CopyFrom(proto)
        graph = proto_copy.graph
        self.opsets = opset_versions(proto_copy)
        self.graph_name = graph.name
        # `jax.jit(model)` names its computation after this (`jit_<graph name>`).
        self.__name__ = graph.name or "onnx_model"
        unimported = sorted({canonical_domain(n.domain) for n in graph.node} - set(self.opsets))
        if unimported:
            raise ModelLoadError(
                f"The model's nodes use the domains {unimported} but its opset_import names no version "
                "for them (is the model truncated?)."
            )
        # External data locations are checked before anything else reads the model, and the
        # data is read only after onnx's checker (see `check_model`).
        external, root = external_tensors(proto_copy, base_dir)
        # Ops are resolved before onnx's checker runs, so an op used below its first
        # version gets jaxonnx's error (which versions exist) rather than the checker's.
        resolved = self._resolve_ops(graph, dict(size_hints or {}))
        check_model(proto_copy)
        read_external_data(external, root)
        # Attributes are read only now, when their external tensors hold their data.
        self.nodes = tuple(
            _Node(
                name=node.name or f"{node.op_type}_{index}",
                op=op,
                inputs=tuple(node.input),
                outputs=tuple(node.output),
                attributes=node_attributes(node, index),
                size=size,
            )
            for index, (node, (op, size)) in enumerate(zip(graph.node, resolved))
        )
        for node in self.nodes:
            sparse = node.attributes.get("sparse_value")
            if isinstance(sparse, onnx.SparseTensorProto):
                try:
                    check_sparse(sparse)
                except Exception as e:  # noqa: BLE001
                    raise ModelLoadError(
                        f"The sparse_value of node {node.name!r} ({node.op.name}) cannot be read: {e}"
                    ) from e

        self.initializers: dict[str, np.ndarray] = {}
        for tensor in graph.initializer:
            self.initializers[tensor.name] = read_tensor(tensor_to_numpy, tensor, f"initializer {tensor.name!r}")
        for sparse in graph.sparse_initializer:
            name = sparse.values.name
            self.initializers[name] = read_tensor(sparse_to_numpy, sparse, f"sparse initializer {name!r}")

        declared = [_declared(v, "input") for v in graph.input]
        self._declared = {i.name: i for i in declared}
        for name, value in self.initializers.items():
            if name in self._declared:
                expected = self._declared[name]
                if not (expected.accepts_dtype(value.dtype, as_jax_computes=False) and expected.accepts_shape(value.shape)):
                    raise ModelLoadError(
                        f"The graph input {name!r} is declared {expected.type_text()} but its initializer is "
                        f"{_TensorType.of_array(name, value).type_text()}."
                    )
        self.input_names = tuple(i.name for i in declared if i.name not in self.initializers)
        self._declared_outputs = tuple(_declared(o, "output") for o in graph.output)
        self.output_names = tuple(o.name for o in self._declared_outputs)
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
        if narrowed_values:
            warnings.warn(
                f"`jax_enable_x64` is off, so the 64-bit graph values of the model {self.graph_name!r} compute "
                f"in 32 bits: {', '.join(narrowed_values)}. Integer inputs that do not fit in 32 bits raise; "
                f"to keep every type exact, {X64_ON_HINT}.",
                X64Warning,
                stacklevel=4,
            )

    def _resolve_ops(self, graph: onnx.GraphProto, size_hints: dict[str, int]) -> list[tuple[OpVersion, int | None]]:
        """``(op version, size hint)`` per node; every unsupported op is named in one error."""
        problems, resolved = [], []
        for index, node in enumerate(graph.node):
            domain = canonical_domain(node.domain)
            node_name = node.name or f"{node.op_type}_{index}"  # as `Model.nodes` names it
            label = f"node {node_name!r} ({node.op_type}"
            if not supported_ops(domain):
                problems.append(f"{label}, domain {node.domain!r}): jaxonnx knows no ops of the domain {node.domain!r}")
                continue
            if node.op_type not in supported_ops(domain):
                problems.append(f"{label}): not supported")
                continue
            try:
                op = get_op(node.op_type, self.opsets[domain], domain)
            except UnsupportedOpError as e:  # the model's opset is below the op's first version
                problems.append(f"{label}): {str(e).rstrip('.')}")
                continue
            size = None
            hinted = [o for o in node.output if o in size_hints]
            if hinted:
                if not op.takes_size_hint:
                    hinted_ops = sorted(name for name, versions in supported_ops(domain).items()
                                        if get_op(name, max(versions), domain).takes_size_hint)
                    raise OnnxValidationError(
                        f"A size hint was given for {hinted[0]!r}, the output of node "
                        f"{node_name!r} ({op.name}); only outputs of "
                        f"{', '.join(hinted_ops)} take size hints."
                    )
                size = size_hints.pop(hinted[0])
                if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
                    raise OnnxValidationError(
                        f"The size hint for {hinted[0]!r} must be a non-negative int, got {size!r}."
                    )
                size = int(size)
            resolved.append((op, size))
        if problems:
            supported = ", ".join(f"{op} {list(versions)}" for op, versions in supported_ops().items())
            raise UnsupportedOpError(
                "The model uses ops jaxonnx does not support: " + "; ".join(problems)
                + f". jaxonnx supports these ops of the ONNX domain (ai.onnx), with their versions: {supported}."
            )
        if size_hints:
            compress_outputs = [
                o for (op, _), node in zip(resolved, graph.node) if op.takes_size_hint for o in node.output
            ]
            raise OnnxValidationError(
                f"Size hints were given for {sorted(size_hints)}, which no node produces; "
                f"outputs that take size hints: {compress_outputs or 'none'}."
            )
        return resolved

    # ----------------------------------------------------------------------- calling

    @property
    def params(self) -> dict[str, jax.Array]:
        """The floating-point initializers as JAX arrays, by name: the model's trainable weights.

        Integer and bool initializers (indices, Slice bounds, conditions) are not params: they
        stay static, so the shapes they decide are known at trace time.
        """
        return {
            name: as_jax(value, what=f"initializer {name!r}")
            for name, value in self.initializers.items()
            if jax.numpy.issubdtype(value.dtype, jax.numpy.inexact)
        }

    def __call__(self, *inputs, **named_inputs) -> tuple:
        """Runs the model: graph inputs positionally in graph order, or by name as keywords
        (``model(x=..., cond=...)``), or both; returns one value per graph output."""
        return self._evaluate(self._call_feed(inputs, named_inputs), {})

    def _call_feed(self, inputs, named_inputs) -> dict[str, Any]:
        """The feed of a call, positional inputs first, then keywords by graph input name."""
        takes = f"The model takes {len(self.input_names)} inputs ({', '.join(self.input_names) or 'none'})"
        if len(inputs) > len(self.input_names) or (not named_inputs and len(inputs) != len(self.input_names)):
            raise OnnxValidationError(
                f"{takes}, got {len(inputs)}; pass them in this order, by name as keywords, or as "
                "`model.run({name: value})`."
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

    def run(self, feed: Mapping[str, Any]) -> dict[str, Any]:
        """Runs the model on inputs given by name; returns ``{output name: value}``."""
        unknown = sorted(set(feed) - set(self._declared))
        missing = sorted(set(self.input_names) - set(feed))
        if unknown or missing:
            raise OnnxValidationError(
                f"The model's inputs are {', '.join(self._declared)}; got unknown {unknown} and "
                f"missing {missing}."
            )
        return dict(zip(self.output_names, self._evaluate(dict(feed), {})))

    def apply(self, params: Mapping[str, Any], *inputs, **named_inputs) -> tuple:
        """Like calling the model, with ``params`` in place of the initializers of those names."""
        unknown = sorted(set(params) - set(self.initializers))
        if unknown:
            raise OnnxValidationError(f"`params` names {unknown}, which are not initializers of the model.")
        return self._evaluate(self._call_feed(inputs, named_inputs), dict(params))

    def _evaluate(self, feed: dict[str, Any], params: dict[str, Any]) -> tuple:
        values: dict[str, Any] = dict(self.initializers)
        for name, value in params.items():
            own_type = _TensorType.of_array(name, self.initializers[name])
            values[name] = self._checked_input(own_type, value, kind="param")
        for name, value in feed.items():
            values[name] = self._checked_input(self._declared[name], value, kind="input")
        for node in self.nodes:
            self._run_node(node, values)
        return tuple(self._output(declared, values[declared.name]) for declared in self._declared_outputs)

    @staticmethod
    def _checked_input(declared: _TensorType, value, *, kind: str):
        """``value`` checked against its declaration; with ``jax_enable_x64`` off, a 64-bit
        numpy value becomes its 32-bit counterpart, exactly or with an error naming it."""
        if not isinstance(value, jax.Array):
            value = np.asarray(value)
            if is_string_array(value):
                # Initializers and Constants hold `str`; bytes inputs are decoded to match.
                value = as_str_array(value)
        if not declared.accepts_dtype(value.dtype):
            raise OnnxTypeError(
                f"The {kind} {declared.name!r} is declared tensor({onnx_type_name(declared.dtype)}) but got "
                f"dtype {value.dtype}; jaxonnx does not cast inputs{_narrowing_note(declared, value)}."
            )
        if not declared.accepts_shape(value.shape):
            raise OnnxValidationError(
                f"The {kind} {declared.name!r} is declared with shape {list(declared.shape)} but got shape "
                f"{list(value.shape)}."
            )
        if isinstance(value, np.ndarray):
            value = narrowed(value, what=f"{kind} {declared.name!r}")
        return value

    @staticmethod
    def _output(declared: _TensorType, value):
        """Checks an output against its declared element type and rank; string outputs are
        copied, since they may be views of the model's own initializers."""
        dtype = value.dtype if hasattr(value, "dtype") else np.asarray(value).dtype
        if not declared.accepts_dtype(dtype):
            raise OnnxTypeError(
                f"The graph output {declared.name!r} is declared {declared.type_text()} but the graph "
                f"computed tensor({onnx_type_name(dtype)}) of shape {list(np.shape(value))}"
                f"{_narrowing_note(declared, value)}."
            )
        if declared.shape is not None and np.ndim(value) != len(declared.shape):
            raise OnnxTypeError(
                f"The graph output {declared.name!r} is declared {declared.type_text()} (rank "
                f"{len(declared.shape)}) but the graph computed shape {list(np.shape(value))}."
            )
        if isinstance(value, jax.Array):
            return value
        if is_string_array(value):
            return np.array(value, dtype=object, copy=True)
        return as_jax(value, what=f"graph output {declared.name!r}")

    def _run_node(self, node: _Node, values: dict[str, Any]) -> None:
        args = [values[name] if name else None for name in node.inputs]
        extra = {"size": node.size} if node.size is not None else {}
        if node.op.contract.output_count:
            extra["output_count"] = len(node.outputs)
        with jax.named_scope(node.name):
            try:
                results = node.op(*args, **node.attributes, **extra)
            except Exception as error:
                raise self._node_error(node, args, error) from error
        if not isinstance(results, tuple):
            results = (results,)
        for name, result in zip(node.outputs, results):
            if name:
                values[name] = result

    def _node_error(self, node: _Node, args, error: Exception) -> Exception:
        shapes = ", ".join(
            f"{name or '<omitted>'}: "
            + ("None" if a is None else f"{onnx_type_name(a.dtype)}{list(np.shape(a))}{' traced' if is_traced(a) else ''}")
            for name, a in zip(node.inputs, args)
        )
        context = f"Node {node.name!r} ({node.op.name}, inputs {shapes}) failed"
        if isinstance(error, StaticValueError):
            formals = [formal.name for formal in node.op.schema.inputs]
            traced = [
                name
                for formal, name, a in zip(formals, node.inputs, args)
                if name and is_traced(a) and error.argument in (None, formal)
            ]
            way_out = (
                f"or give a size hint, `jaxonnx.load(model, size_hints={{{node.outputs[0]!r}: <length>}})`"
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
        return with_context(error, context)

    # ----------------------------------------------------------------------- description

    def __repr__(self) -> str:
        inputs = ", ".join(self._declared[n].describe() for n in self.input_names)
        return (
            f"Model({self.graph_name!r}, opset {self.opsets.get('', '?')}, {len(self.nodes)} nodes, "
            f"inputs ({inputs}), outputs {list(self.output_names)})"
        )

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

    def describe_nodes(self) -> list[tuple[str, str, str]]:
        """``(node name, op type, resolved version)`` for every node, in graph order."""
        return [(n.name, n.op.op_type, n.op.name) for n in self.nodes]
