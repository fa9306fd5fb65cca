"""Reading ONNX files safely: decoding, onnx's checker, external data and tensors.

Everything that can go wrong while reading a model becomes a :class:`ModelLoadError`
naming the tensor or file: garbage or truncated bytes, external data that resolves
outside the model's folder, short files, malformed tensors and attributes.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError

from jaxonnx._errors import ModelLoadError
from jaxonnx._registry import canonical_domain


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


def opset_versions(proto: onnx.ModelProto) -> dict[str, int]:
    """The model's opset version by canonical domain; a domain imported twice is refused."""
    versions: dict[str, tuple[str, int]] = {}
    for entry in proto.opset_import:
        domain = canonical_domain(entry.domain)
        if domain in versions:
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


def check_model(proto: onnx.ModelProto) -> None:
    """Runs onnx's checker with every external tensor swapped, for the check only, for an
    empty stand-in of the same name and type (a zero-length first dim).

    The checker needs none of the data; given the data it would re-serialize a model holding
    more than protobuf's 2 GiB, and given the external references it would look the files up
    relative to the working directory (an in-memory model has no folder of its own).
    """
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
        onnx.checker.check_model(proto)
    except (onnx.checker.ValidationError, ValueError) as e:
        raise ModelLoadError(f"The ONNX model does not pass onnx's checker: {e}") from None
    except Exception as e:  # noqa: BLE001  (e.g. protobuf's EncodeError, MemoryError)
        raise ModelLoadError(f"onnx's checker could not check the model: {e} ({type(e).__name__}).") from e
    finally:
        for tensor, saved in swapped:
            tensor.CopyFrom(saved)


def external_location(tensor: onnx.TensorProto) -> str:
    return next((e.value for e in tensor.external_data if e.key == "location"), "")


def external_tensors(proto: onnx.ModelProto, base_dir) -> tuple[list, str | None]:
    """The tensors kept in external files, after checking that each file lies inside the
    model's folder; returns them with that folder (None when there are none)."""
    tensors = [
        (t, where) for t, where in all_tensors(proto.graph)
        if onnx.external_data_helper.uses_external_data(t)
    ]
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
