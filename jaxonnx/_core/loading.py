"""Reading ONNX files safely: decoding, onnx's checker, external data and tensors.

Everything that can go wrong while reading a model becomes a :class:`ModelLoadError`
naming the tensor or file: garbage or truncated bytes, external data that resolves
outside the model's folder, short files, malformed tensors and attributes.
"""

from __future__ import annotations

import contextlib
import heapq
import math
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import external_data_helper, helper, numpy_helper

from jaxonnx._core.dtypes import as_str_array
from jaxonnx._errors import ModelLoadError, OnnxValidationError

DEFAULT_DOMAIN = ""
_DOMAIN_ALIASES = {"ai.onnx": DEFAULT_DOMAIN}


def canonical_domain(domain: str) -> str:
    """``"ai.onnx"`` and ``""`` name the same domain."""
    return _DOMAIN_ALIASES.get(domain, domain)


def parse_model(data: bytes, source: str) -> onnx.ModelProto:
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise ModelLoadError(
            f"{source} is not a valid ONNX model: the protobuf could not be decoded ({e}); "
            "the file may be truncated or not an ONNX file."
        ) from None
    if not proto.HasField("graph"):
        raise ModelLoadError(f"{source} is not a valid ONNX model: it has no graph (is it truncated?).")
    return proto


def check_text(proto: onnx.ModelProto) -> None:
    """Refuses a model with a name that is not valid UTF-8, naming where it is.

    ONNX's names (op types, domains, node, value, attribute, tensor, graph and function
    names, external data locations) are protobuf ``string``s, and protobuf hands a corrupt
    one over as ``bytes`` instead of refusing the file: it would reach onnx's C++ bindings
    (``onnx.defs.get_schema``), file paths and dict keys as the wrong type. One walk over the
    model, subgraphs and functions included, before anything reads them. (Doc strings and
    metadata are never read, so they are not checked.)

    Raises:
        ModelLoadError: naming the field and the node, attribute, value, tensor, function or
            graph that holds it.
    """
    if _all_text(proto):
        return
    # Something is corrupt: the walk again, slower, to say where.
    for index, entry in enumerate(proto.opset_import):
        _check_field(entry, "domain", lambda i=index: f"the opset_import {i}")
    _check_graph(proto.graph, lambda: "the main graph")
    for index, function in enumerate(proto.functions):

        def where(i=index, f=function):
            return f"the function {i} ({f.name!r}, domain {f.domain!r})"

        for field in ("name", "domain", "input", "output", "attribute"):
            _check_field(function, field, where)
        for entry in function.opset_import:
            _check_field(entry, "domain", where)
        for attribute in function.attribute_proto:
            _check_field(attribute, "name", lambda a=attribute, w=where: f"the attribute ({a.name!r}) of {w()}")
        _check_nodes(function.node, where)
    raise ModelLoadError("A name in the model is not valid UTF-8 text: the file is corrupt.")


def _all_text(proto: onnx.ModelProto) -> bool:
    """Whether every name :func:`check_text` checks is ``str`` (the fast walk)."""
    if any(type(entry.domain) is not str for entry in proto.opset_import):
        return False
    for function in proto.functions:
        if not (
            _texts(function.name, function.domain)
            and _all_str(function.input)
            and _all_str(function.output)
            and _all_str(function.attribute)
            and _nodes_text(function.node)
            and all(type(a.name) is str for a in function.attribute_proto)
            and all(type(entry.domain) is str for entry in function.opset_import)
        ):
            return False
    return _graph_text(proto.graph)


def _texts(*values) -> bool:
    return all(type(value) is str for value in values)


def _all_str(values) -> bool:
    return all(type(value) is str for value in values)


def _tensor_text(tensor) -> bool:
    return type(tensor.name) is str and all(_texts(e.key, e.value) for e in tensor.external_data)


def _graph_text(graph) -> bool:
    return (
        type(graph.name) is str
        and all(type(v.name) is str for v in graph.input)
        and all(type(v.name) is str for v in graph.output)
        and all(type(v.name) is str for v in graph.value_info)
        and all(_tensor_text(t) for t in graph.initializer)
        and all(_tensor_text(s.values) and _tensor_text(s.indices) for s in graph.sparse_initializer)
        and _nodes_text(graph.node)
    )


def _nodes_text(nodes) -> bool:
    for node in nodes:
        if not (_texts(node.name, node.op_type, node.domain) and _all_str(node.input) and _all_str(node.output)):
            return False
        for attribute in node.attribute:
            if not _texts(attribute.name, attribute.ref_attr_name):
                return False
            kind = attribute.type
            if kind == onnx.AttributeProto.GRAPH and not _graph_text(attribute.g):
                return False
            if kind == onnx.AttributeProto.GRAPHS and not all(_graph_text(g) for g in attribute.graphs):
                return False
            if kind == onnx.AttributeProto.TENSOR and not _tensor_text(attribute.t):
                return False
            if kind == onnx.AttributeProto.SPARSE_TENSOR and not (
                _tensor_text(attribute.sparse_tensor.values) and _tensor_text(attribute.sparse_tensor.indices)
            ):
                return False
    return True


def _check_field(message, field: str, where) -> None:
    """Raises if ``message.field`` (a string, or a repeated one) came as bytes; ``where()``
    says what ``message`` is, made only for the error."""
    value = getattr(message, field)
    for index, text in enumerate([value] if isinstance(value, (str, bytes)) else value):
        if isinstance(text, bytes):
            which = field if isinstance(value, (str, bytes)) else f"{field}[{index}]"
            raise ModelLoadError(
                f"The {which} of {where()} is not valid UTF-8 text ({text[:60]!r}): the file is corrupt."
            )


def _check_tensor(tensor, where) -> None:
    _check_field(tensor, "name", where)
    for entry in tensor.external_data:
        _check_field(entry, "key", where)
        _check_field(entry, "value", where)


def _check_graph(graph: onnx.GraphProto, where) -> None:
    _check_field(graph, "name", where)
    for field in ("input", "output", "value_info"):
        for index, value in enumerate(getattr(graph, field)):
            _check_field(
                value,
                "name",
                lambda f=field, i=index, v=value: f"the {f.replace('_', ' ')} {i} ({v.name!r}) of {where()}",
            )
    for tensor in graph.initializer:
        _check_tensor(tensor, lambda t=tensor: f"the initializer ({t.name!r}) of {where()}")
    for sparse in graph.sparse_initializer:
        _check_tensor(sparse.values, lambda: f"a sparse initializer of {where()}")
        _check_tensor(sparse.indices, lambda: f"a sparse initializer of {where()}")
    _check_nodes(graph.node, where)


def _check_nodes(nodes, where) -> None:
    for index, node in enumerate(nodes):

        def node_where(i=index, n=node):
            return f"node {i}{f' ({n.name!r})' if n.name else ''} of {where()}"

        for field in ("name", "op_type", "domain", "input", "output"):
            _check_field(node, field, node_where)
        for attribute in node.attribute:

            def attribute_where(a=attribute):
                return f"the attribute ({a.name!r}) of {node_where()}"

            _check_field(attribute, "name", attribute_where)
            _check_field(attribute, "ref_attr_name", attribute_where)
            if attribute.HasField("t"):
                _check_tensor(attribute.t, attribute_where)
            if attribute.HasField("sparse_tensor"):
                _check_tensor(attribute.sparse_tensor.values, attribute_where)
                _check_tensor(attribute.sparse_tensor.indices, attribute_where)
            if attribute.HasField("g"):
                _check_graph(
                    attribute.g,
                    lambda a=attribute_where, g=attribute.g: (
                        f"the subgraph{f' ({g.name!r})' if g.name else ''} of {a()}"
                    ),
                )
            for graph in attribute.graphs:
                _check_graph(
                    graph,
                    lambda a=attribute_where, g=graph: f"the subgraph{f' ({g.name!r})' if g.name else ''} of {a()}",
                )


def sort_nodes(proto: onnx.ModelProto) -> None:
    """Puts the nodes of every graph of the model (subgraphs and functions included) in an
    order where each node comes after the nodes whose outputs it reads, as onnxruntime does
    before it runs a graph: the IR asks for that order, onnx's checker refuses a graph
    without it, and graph-editing tools write such graphs. A sorted graph is left as it is;
    among the nodes ready to run, the earlier one comes first. A cycle is left to onnx's
    checker to report."""
    _sort_graph_nodes(proto.graph.node)
    for function in proto.functions:
        _sort_graph_nodes(function.node)


def _subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    graphs = []
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            graphs.append(attribute.g)
        elif attribute.type == onnx.AttributeProto.GRAPHS:
            graphs.extend(attribute.graphs)
    return graphs


def _reads(node: onnx.NodeProto) -> set[str]:
    """The names a node reads: its inputs and, through its subgraphs, the names they use."""
    names = set(node.input)
    for graph in _subgraphs(node):
        for inner in graph.node:
            names |= _reads(inner)
        names |= {o.name for o in graph.output}
    return names


def _sort_graph_nodes(nodes) -> None:
    producer = {}
    for index, node in enumerate(nodes):
        for name in node.output:
            producer[name] = index
    producer.pop("", None)
    in_order = True
    for index, node in enumerate(nodes):
        graphs = _subgraphs(node)
        for graph in graphs:
            _sort_graph_nodes(graph.node)
        reads = _reads(node) if graphs else node.input
        if in_order and any(producer.get(name, -1) >= index for name in reads):
            in_order = False
    if in_order:
        return
    needs = [
        {producer[name] for name in _reads(node) if name in producer} - {index} for index, node in enumerate(nodes)
    ]
    waiting = [len(deps) for deps in needs]  # Kahn's algorithm, the earliest ready node first
    readers: list[list[int]] = [[] for _ in nodes]
    for index, deps in enumerate(needs):
        for dep in deps:
            readers[dep].append(index)
    ready = [index for index, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        index = heapq.heappop(ready)
        order.append(index)
        for reader in readers[index]:
            waiting[reader] -= 1
            if waiting[reader] == 0:
                heapq.heappush(ready, reader)
    if len(order) < len(nodes):
        return  # a cycle: onnx's checker names it
    copies = []
    for index in order:
        copy = onnx.NodeProto()
        copy.CopyFrom(nodes[index])
        copies.append(copy)
    del nodes[:]
    nodes.extend(copies)


def opset_versions(proto: onnx.ModelProto) -> dict[str, int]:
    """The model's opset version by canonical domain; a domain imported twice at two
    versions is refused (twice at one version, as skl2onnx writes it, is that version)."""
    versions: dict[str, tuple[str, int]] = {}
    for entry in proto.opset_import:
        domain = canonical_domain(entry.domain)
        if domain in versions and versions[domain][1] != entry.version:
            first_name, first_version = versions[domain]
            label = "the ONNX domain ('' or 'ai.onnx')" if domain == "" else f"the domain {domain!r}"
            raise ModelLoadError(
                f"The model's opset_import names {label} twice: {first_name!r} version "
                f"{first_version} and {entry.domain!r} version {entry.version}; it must name each domain once."
            )
        versions[domain] = (entry.domain, entry.version)
    return {domain: version for domain, (_, version) in versions.items()}


def tensor_holders(graph: onnx.GraphProto, where: str = ""):
    """``(tensor or sparse tensor, description)`` for every TensorProto and SparseTensorProto
    of the graph and its subgraphs: initializers, sparse initializers, and the tensors and
    sparse tensors held by node attributes."""
    for tensor in graph.initializer:
        yield tensor, f"initializer {tensor.name!r}{where}"
    for sparse in graph.sparse_initializer:
        yield sparse, f"sparse initializer {sparse.values.name!r}{where}"
    for index, node in enumerate(graph.node):
        for attribute in node.attribute:
            owner = f"attribute {attribute.name!r} of node {node.name or index!r}{where}"
            if attribute.HasField("t"):
                yield attribute.t, f"tensor {attribute.t.name!r} in the {owner}"
            for tensor in attribute.tensors:
                yield tensor, f"tensor {tensor.name!r} in the {owner}"
            if attribute.HasField("sparse_tensor"):
                yield attribute.sparse_tensor, f"sparse tensor in the {owner}"
            for sparse in attribute.sparse_tensors:
                yield sparse, f"sparse tensor in the {owner}"
            if attribute.HasField("g"):
                yield from tensor_holders(attribute.g, f" (in a subgraph of node {node.name or index!r})")
            for subgraph in attribute.graphs:
                yield from tensor_holders(subgraph, f" (in a subgraph of node {node.name or index!r})")


def all_tensors(graph: onnx.GraphProto):
    """``(tensor, description)`` for every TensorProto, the values and indices of sparse tensors included."""
    for holder, where in tensor_holders(graph):
        if isinstance(holder, onnx.SparseTensorProto):
            yield holder.values, f"{where} (its values)"
            yield holder.indices, f"{where} (its indices)"
        else:
            yield holder, where


def uses_external_data(holder) -> bool:
    if isinstance(holder, onnx.SparseTensorProto):
        return uses_external_data(holder.values) or uses_external_data(holder.indices)
    return onnx.external_data_helper.uses_external_data(holder)


def _declarations_the_checker_reads(proto: onnx.ModelProto):
    """Fills in, on the proto itself, what onnx's checker demands of the top-level graph's
    inputs and outputs beyond the IR; returns an undo function.

    The IR lets a tensor type leave out its shape ("absent shape = any shape", written by
    ``helper.make_tensor_value_info(name, elem_type, None)``), and onnxruntime and
    onnx.reference run such models; the checker refuses them ("Field 'shape' of 'type' is
    required but missing"). A graph output with no type at all (any type; onnxruntime runs
    it) is refused the same way, and so is an output whose type sets none of its cases
    (``make_value_info(name, TypeProto())``; onnxruntime runs it too). The checker sees a
    stand-in (an empty shape, an UNDEFINED element type) that it accepts; jaxonnx reads the
    original declarations, where absent means "any". Graph inputs must still declare a type
    (onnxruntime refuses them too).
    """
    # Callables of no arguments; `...` since some bind a loop variable as a default argument.
    undo: list[Callable[..., object]] = []
    if proto.ir_version < 4:
        # Before IR 4 an initializer had to be a graph input too; onnxruntime runs files of
        # those versions whose initializers are not, as exporters of the time wrote some.
        listed = {v.name for v in proto.graph.input}
        missing = [t for t in proto.graph.initializer if t.name not in listed]
        for tensor in missing:
            proto.graph.input.append(helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims)))
        if missing:
            count = len(proto.graph.input) - len(missing)
            undo.append(lambda: [proto.graph.input.pop() for _ in range(len(proto.graph.input) - count)])
    values = [(v, "input") for v in proto.graph.input] + [(v, "output") for v in proto.graph.output]
    for value_info, kind in values:
        if kind == "output" and not value_info.HasField("type"):
            value_info.type.tensor_type.elem_type = onnx.TensorProto.UNDEFINED
            undo.append(lambda v=value_info: v.ClearField("type"))
        elif kind == "output" and value_info.type.WhichOneof("value") is None:
            # A type with no case set (`make_value_info(name, TypeProto())`) says as little.
            value_info.type.tensor_type.elem_type = onnx.TensorProto.UNDEFINED
            undo.append(lambda v=value_info: v.type.ClearField("tensor_type"))
        if value_info.type.HasField("tensor_type") and not value_info.type.tensor_type.HasField("shape"):
            value_info.type.tensor_type.shape.SetInParent()
            undo.append(lambda t=value_info.type.tensor_type: t.ClearField("shape"))

    def restore():
        for step in reversed(undo):
            step()

    return restore


def check_model(proto: onnx.ModelProto, schemas=()) -> None:
    """Runs onnx's checker on the model, with two stand-ins for the check only.

    ``schemas``: ops of the default domain that onnx does not define but the registry does
    (onnxruntime's SimplifiedLayerNormalization-1 and LayerNormalization-1), declared to onnx
    for the check only, so that the checker checks their nodes as it checks onnx's own.

    Every external tensor is swapped for an empty stand-in of the same name and type (a
    zero-length first dim): the checker needs none of the data; given the data it would
    re-serialize a model holding more than protobuf's 2 GiB, and given the external
    references it would look the files up relative to the working directory (an in-memory
    model has no folder of its own). And shape-less graph inputs and outputs, which the IR
    allows and the checker refuses, get an empty shape (see
    :func:`_declarations_the_checker_reads`). Everything else the checker refuses stays refused.
    """
    restore_declarations = _declarations_the_checker_reads(proto)
    swapped = []
    for holder, _ in tensor_holders(proto.graph):
        if uses_external_data(holder):
            parts = [holder.values, holder.indices] if isinstance(holder, onnx.SparseTensorProto) else [holder]
            for tensor in parts:
                saved = onnx.TensorProto()
                saved.CopyFrom(tensor)
                swapped.append((tensor, saved))
                dims = [0, *tensor.dims[1:]]
                tensor.Clear()
                tensor.name, tensor.data_type = saved.name, saved.data_type
                tensor.dims.extend(dims)
    try:
        with _declared_to_onnx(schemas):
            onnx.checker.check_model(proto)
    except (onnx.checker.ValidationError, ValueError) as e:
        raise ModelLoadError(f"The ONNX model does not pass onnx's checker: {e}") from None
    except Exception as e:  # noqa: BLE001  (e.g. protobuf's EncodeError, MemoryError)
        raise ModelLoadError(f"onnx's checker could not check the model: {e} ({type(e).__name__}).") from e
    finally:
        for tensor, saved in swapped:
            tensor.CopyFrom(saved)
        restore_declarations()


_DECLARING = threading.Lock()


@contextlib.contextmanager
def _declared_to_onnx(schemas):
    """``schemas`` in onnx's schema registry while the block runs (one block at a time: the
    registry is onnx's, global), then removed again, so that onnx itself is left unchanged."""
    if not schemas:
        yield
        return
    with _DECLARING:
        added = []
        try:
            for schema in schemas:
                if (
                    not onnx.defs.has(schema.name, schema.since_version, schema.domain)
                    or onnx.defs.get_schema(schema.name, schema.since_version, schema.domain).since_version
                    != schema.since_version
                ):
                    onnx.defs.register_schema(schema)
                    added.append(schema)
            yield
        finally:
            for schema in added:
                onnx.defs.deregister_schema(schema.name, schema.since_version, schema.domain)


def external_location(tensor: onnx.TensorProto) -> str:
    return next((e.value for e in tensor.external_data if e.key == "location"), "")


def external_tensors(proto: onnx.ModelProto, base_dir) -> tuple[list, str | None]:
    """The tensors kept in external files, after checking that each file lies inside the
    model's folder; returns them with that folder (None when there are none)."""
    tensors = [(t, where) for t, where in all_tensors(proto.graph) if onnx.external_data_helper.uses_external_data(t)]
    if not tensors:
        return [], None
    if base_dir is None:
        raise ModelLoadError(
            "The model keeps tensors in external data files, but it was given as bytes or a "
            "ModelProto; pass `base_dir=` (the folder of the files) or load it from its path."
        )
    root = os.path.realpath(base_dir)
    for tensor, where in tensors:
        location = external_location(tensor)
        resolved = os.path.realpath(os.path.join(root, location))
        if os.path.isabs(location) or os.path.commonpath([root, resolved]) != root:
            raise ModelLoadError(
                f"The {where} points at external data {location!r}, which "
                f"resolves outside the model's folder {root!r}; refusing to read it."
            )
        if not os.path.isfile(resolved):
            raise ModelLoadError(f"The external data file {location!r} of {where} does not exist.")
    return tensors, root


def read_external_data(tensors, root: str) -> None:
    """Reads each external tensor's bytes into it (the locations were checked already)."""
    for tensor, where in tensors:
        try:
            onnx.external_data_helper.load_external_data_for_tensor(tensor, root)
        except Exception as e:  # noqa: BLE001  (OSError, ValueError for a short file, MemoryError, ...)
            raise ModelLoadError(
                f"The external data {external_location(tensor)!r} of {where} cannot be read: {e} ({type(e).__name__})."
            ) from e


def node_attributes(node: onnx.NodeProto, index: int) -> dict[str, Any]:
    attributes = {}
    for attribute in node.attribute:
        try:
            attributes[attribute.name] = onnx.helper.get_attribute_value(attribute)
        except Exception as e:  # noqa: BLE001  (a malformed attribute)
            raise ModelLoadError(
                f"The attribute {attribute.name!r} of node {node.name or index!r} ({node.op_type}) cannot be read: {e}"
            ) from e
    return attributes


def read_tensor(convert, tensor, where: str) -> np.ndarray:
    try:
        return convert(tensor)
    except ModelLoadError:
        raise
    except Exception as e:  # noqa: BLE001  (a malformed tensor: ValueError, TypeError, MemoryError, ...)
        raise ModelLoadError(f"The {where} cannot be read: {e}") from e


# --------------------------------------------------------------------------- tensors

#: Limits on the dense array that a sparse tensor expands to (see :func:`sparse_to_numpy`).
#: A sparse tensor stores only its nonzero values, so a few bytes of model can name a
#: dense shape of any size; these keep a tiny file from forcing a huge allocation.
MAX_SPARSE_DENSE_ELEMENTS = 2**31
MAX_SPARSE_DENSE_BYTES = 16 * 2**30
#: Dense elements allowed per stored value (plus one): at most 2**20 times the sparse data,
#: above a floor of 64 MiB that any sparse tensor may expand to (all-zero tensors are common).
MAX_SPARSE_EXPANSION = 2**20
SPARSE_EXPANSION_FLOOR_BYTES = 64 * 2**20


def tensor_to_numpy(tensor: onnx.TensorProto) -> np.ndarray:
    """An ONNX tensor as an exact numpy array (string tensors as object arrays of ``str``).

    External data is never read here: :func:`jaxonnx.load` reads it (checking that it stays
    inside the model's folder) before any tensor is converted, so a tensor that still points
    at a file was not loaded through a model with a known folder.
    """
    if external_data_helper.uses_external_data(tensor):
        raise ModelLoadError(
            f"The tensor {tensor.name!r} keeps its data in the external file {external_location(tensor)!r}, which "
            "jaxonnx reads only while loading a model: load the model from its path or pass "
            "`base_dir=` (the folder of the file) to `jaxonnx.load`."
        )
    array = numpy_helper.to_array(tensor)
    if array.dtype == object:
        array = as_str_array(array)
    return array


def check_sparse(sparse: onnx.SparseTensorProto) -> np.ndarray:
    """Checks a sparse tensor's dims, values and indices without building the dense array;
    returns its indices as int64.

    Raises OnnxValidationError for negative dims, values that are not 1-D, indices that are
    not ``[NNZ]`` (linear) or ``[NNZ, rank]`` integers or fall outside the dims, and a dense
    size above the limits: more than ``MAX_SPARSE_DENSE_ELEMENTS`` elements, more than
    ``MAX_SPARSE_DENSE_BYTES`` bytes, or (above ``SPARSE_EXPANSION_FLOOR_BYTES``) more than
    ``MAX_SPARSE_EXPANSION * (NNZ + 1)`` elements.
    """
    name = sparse.values.name
    dims = [int(d) for d in sparse.dims]
    if any(d < 0 for d in dims):
        raise OnnxValidationError(f"The sparse tensor {name!r} has negative dims {dims}.")
    if len(sparse.values.dims) != 1:
        raise OnnxValidationError(
            f"The values of the sparse tensor {name!r} must be 1-D ([NNZ]), got dims {list(sparse.values.dims)}."
        )
    nnz = int(sparse.values.dims[0])
    size = math.prod(dims)
    itemsize = max(_itemsize(sparse.values.data_type), 1)
    if (
        size > MAX_SPARSE_DENSE_ELEMENTS
        or size * itemsize > MAX_SPARSE_DENSE_BYTES
        or (size * itemsize > SPARSE_EXPANSION_FLOOR_BYTES and size > MAX_SPARSE_EXPANSION * (nnz + 1))
    ):
        raise OnnxValidationError(
            f"The sparse tensor {name!r} with dims {dims} would expand to {size} dense elements "
            f"({size * itemsize} bytes) from {nnz} stored values; jaxonnx refuses more than "
            f"{MAX_SPARSE_DENSE_ELEMENTS} elements, {MAX_SPARSE_DENSE_BYTES} bytes or "
            f"{MAX_SPARSE_EXPANSION} elements per stored value plus one above {SPARSE_EXPANSION_FLOOR_BYTES} bytes."
        )
    return _sparse_indices(sparse, dims, nnz, size)


def _itemsize(elem_type: int) -> int:
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, ValueError, TypeError):
        raise OnnxValidationError(
            f"The element type {elem_type} of a sparse tensor's values has no numpy dtype."
        ) from None
    return 8 if dtype.kind == "O" else dtype.itemsize


def _sparse_indices(sparse: onnx.SparseTensorProto, dims: list[int], nnz: int, size: int) -> np.ndarray:
    name = sparse.values.name
    indices = tensor_to_numpy(sparse.indices)
    if indices.dtype.kind not in "iu":
        raise OnnxValidationError(f"The indices of the sparse tensor {name!r} must be integers, got {indices.dtype}.")
    indices = indices.astype(np.int64)
    if indices.shape not in ((nnz,), (nnz, len(dims))):
        raise OnnxValidationError(
            f"The indices of the sparse tensor {name!r} have shape {list(indices.shape)}; with {nnz} values "
            f"and dims {dims} they must be [{nnz}] (linear) or [{nnz}, {len(dims)}]."
        )
    if indices.ndim == 2:
        outside = np.any((indices < 0) | (indices >= np.array(dims, np.int64)), axis=1)
    else:
        outside = (indices < 0) | (indices >= size)
    if outside.any():
        first = indices[np.argmax(outside)].tolist()
        kind = "index" if indices.ndim == 2 else f"linear index (dense size {size})"
        raise OnnxValidationError(f"The sparse tensor {name!r} has the {kind} {first} outside its dims {dims}.")
    return indices


def sparse_to_numpy(sparse: onnx.SparseTensorProto) -> np.ndarray:
    """A sparse ONNX tensor as a dense numpy array, after the checks of :func:`check_sparse`.

    Positions without a stored value are zero ("" for string tensors).
    """
    indices = check_sparse(sparse)
    dims = tuple(int(d) for d in sparse.dims)
    values = tensor_to_numpy(sparse.values)
    if values.dtype == object:
        dense = np.full(dims, "", dtype=object)
    else:
        dense = np.zeros(dims, dtype=values.dtype)
    if indices.ndim == 2:
        dense[tuple(indices.T)] = values
    else:
        dense.reshape(-1)[indices] = values
    return dense


def decode_attribute(value):
    """An attribute value with its TensorProto / SparseTensorProto decoded to numpy."""
    if isinstance(value, onnx.TensorProto):
        return tensor_to_numpy(value)
    if isinstance(value, onnx.SparseTensorProto):
        return sparse_to_numpy(value)
    if isinstance(value, bytes):  # STRING attributes read from a graph (ops see str only)
        return value.decode(errors="replace")
    if isinstance(value, list) and value and all(isinstance(v, bytes) for v in value):
        return [v.decode(errors="replace") for v in value]
    return value


def run_as_onnxruntime_spells(proto: onnx.ModelProto, lenient_attributes) -> list[str]:
    """Rewrites, in place, what onnxruntime runs although the IR or the op's schema refuses it,
    and returns one line per change (for the caller's one warning per load):

    - a main-graph node's ``domain`` written ``"ai.onnx"`` becomes ``""`` (in ``opset_import``
      the IR and onnx's checker already read ``"ai.onnx"`` as the default domain). onnxruntime
      reads it so in the main graph only: in a Loop/If/Scan body or a function it refuses it
      ("No opset import for domain 'ai.onnx'"), and so does onnx's checker for jaxonnx;
    - an attribute that the schema of an op of the default domain does not know is dropped
      where onnxruntime leaves the op's attributes unchecked (its former contrib
      LayerNormalization and SimplifiedLayerNormalization, whose own fusion test files carry
      ``epsion`` and run; every other op refuses it, in onnxruntime and in jaxonnx).
      ``lenient_attributes(op_type)`` gives the attribute names the registry's op knows at
      the model's version where its contract says ``ignores_unknown_attributes``, and None
      for any other op (an unknown attribute is its own error later).

    Example:
        >>> node = helper.make_node("Relu", ["x"], ["y"], name="relu", domain="ai.onnx")
        >>> graph = helper.make_graph([node], "g", [], [])
        >>> run_as_onnxruntime_spells(helper.make_model(graph), lambda op: None)
        ["node 'relu' (Relu): domain 'ai.onnx' read as the default domain ''"]
    """
    changes: list[str] = []

    def rewrite(nodes, where: str, main: bool = False) -> None:
        for index, node in enumerate(nodes):
            label = (
                f"node {node.name!r} ({node.op_type})"
                if node.name
                else f"unnamed node #{index} of {where} ({node.op_type})"
            )
            if main and node.domain == "ai.onnx":
                node.domain = DEFAULT_DOMAIN
                changes.append(f"{label}: domain 'ai.onnx' read as the default domain ''")
            known = lenient_attributes(node.op_type) if node.domain == DEFAULT_DOMAIN else None
            if known is not None:
                unknown = [a.name for a in node.attribute if a.name not in known]
                if unknown:
                    kept = [a for a in node.attribute if a.name not in unknown]
                    del node.attribute[:]
                    node.attribute.extend(kept)
                    changes.append(
                        f"{label}: attribute{'s' * (len(unknown) > 1)} {', '.join(map(repr, unknown))} "
                        f"ignored (not in its schema: {', '.join(sorted(known))})"
                    )
            for graph in _subgraphs(node):
                rewrite(graph.node, f"the subgraph {graph.name!r}" if graph.name else "a subgraph")

    rewrite(proto.graph.node, "the main graph", main=True)
    for function in proto.functions:
        rewrite(function.node, f"function {function.name!r}")
    return changes
