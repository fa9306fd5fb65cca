"""Preparing a model once, at load: a checked copy of its proto (text, node order, the
domains it uses, the departures onnxruntime allows, external data, onnx's checker), its
graph with every op resolved (``Graph.prepare``), and the checks of the size hints, loop
bounds, sparse values and initializers against that graph. What ``Model.__init__`` runs
before it plans calls."""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Mapping
from typing import Any

import onnx

from jaxonnx._core.graph import Environment, Graph
from jaxonnx._core.loading import (
    canonical_domain,
    check_model,
    check_sparse,
    check_text,
    external_tensors,
    opset_versions,
    read_external_data,
    run_as_onnxruntime_spells,
    sort_nodes,
)
from jaxonnx._core.registry import REGISTRY, Registry
from jaxonnx._core.reports import find_unsupported, unsupported_message
from jaxonnx._core.types import ValueType
from jaxonnx._errors import LeniencyWarning, ModelLoadError, OnnxValidationError, UnsupportedOpError


@dataclasses.dataclass(frozen=True)
class PreparedModel:
    """A model ready to run.

    Attributes:
        proto: the checked copy of the model (nodes sorted, domains onnxruntime runs without
            an opset_import imported, external data read in).
        opsets: the version of each domain the model imports, by domain ("" for ai.onnx).
        graph: the main graph, prepared.
        hinted_lengths: the values whose length a size hint (or loop bound) may set, and
            every value computed from them: their declared dims are not compared with what
            they compute.
    """

    proto: onnx.ModelProto
    opsets: dict[str, int]
    graph: Graph
    hinted_lengths: frozenset[str]


def prepare_model(
    proto: onnx.ModelProto,
    *,
    size_hints: Mapping[str, int] | None,
    loop_bounds: Mapping[str, int] | None,
    base_dir: str | os.PathLike | None,
    registry: Registry | None,
    options: dict[str, Any],
) -> PreparedModel:
    """``proto`` checked and prepared to run, as ``jaxonnx.load`` documents its arguments.

    Warns:
        LeniencyWarning: once, listing what onnxruntime runs although the IR or the schema
            refuses it.

    Raises:
        ModelLoadError: for anything that keeps the model from loading safely.
        UnsupportedOpError: for every op and domain jaxonnx does not run, in one error.
        OnnxValidationError: for size hints or loop bounds that name nothing of the graph.

    Example:
        >>> import onnx
        >>> from jaxonnx._core.preparation import prepare_model
        >>> proto = onnx.load(jaxonnx.demo_model_path())
        >>> prepared = prepare_model(
        ...     proto, size_hints=None, loop_bounds=None, base_dir=None, registry=None, options={}
        ... )
        >>> prepared.opsets[""] == proto.opset_import[0].version
        True
    """
    registry = registry or REGISTRY
    proto_copy = onnx.ModelProto()
    proto_copy.CopyFrom(proto)
    check_text(proto_copy)  # corrupt text would reach onnx's bindings and dict keys as bytes
    sort_nodes(proto_copy)  # as onnxruntime runs graphs whose nodes are out of order
    graph = proto_copy.graph
    opsets = opset_versions(proto_copy)
    # What onnxruntime runs although the IR or the schema refuses it: one warning per load.
    leniencies = run_as_onnxruntime_spells(
        proto_copy, lambda op_type: _lenient_attributes(registry, op_type, opsets.get(""))
    )
    if leniencies:
        warnings.warn(
            f"{len(leniencies)} departure{'s' * (len(leniencies) > 1)} from the ONNX text, run as "
            f"onnxruntime runs {'them' if len(leniencies) > 1 else 'it'}: {'; '.join(leniencies)}.",
            LeniencyWarning,
            stacklevel=4,  # load's caller, through Model.__init__
        )
    functions = {(f.domain, f.name): f for f in proto_copy.functions}
    used = {canonical_domain(n.domain) for n in graph.node if (n.domain, n.op_type) not in functions}
    # onnxruntime's transformer optimizer at opt_level 0 writes com.microsoft nodes without
    # importing the domain; onnxruntime runs a domain it knows at its newest version, and
    # so does jaxonnx for a domain its registry has ops of (the newest registered version).
    for domain in sorted(used - set(opsets) - {""}):
        known = [v for versions in registry.supported_ops(domain).values() for v in versions]
        if known:
            proto_copy.opset_import.append(onnx.helper.make_opsetid(domain, max(known)))
            opsets[domain] = max(known)
    unimported = sorted(used - set(opsets))
    if unimported:
        raise ModelLoadError(
            f"The model's nodes use the domains {unimported} but its opset_import names no version "
            "for them (is the model truncated?)."
        )
    # External data locations are checked before anything else reads the model, and the
    # data is read only after onnx's checker (see `check_model`).
    external, root = external_tensors(proto_copy, base_dir)
    hints = dict(size_hints or {})
    env = Environment(opsets, registry, functions, hints, options, loop_bounds=dict(loop_bounds or {}))
    # Ops are resolved before onnx's checker runs, so an op used below its first
    # version gets jaxonnx's error (which versions exist) rather than the checker's.
    problems = find_unsupported(
        graph,
        dataclasses.replace(
            env, size_hints=dict(hints), problems=[], hinted_outputs=[], claimed_bounds=set(), bounded_nodes=[]
        ),
    )
    if problems:
        raise UnsupportedOpError(unsupported_message(problems, opsets))
    check_model(proto_copy, schemas=_schemas_onnx_lacks(env.registry))
    if root is not None:  # None: the model has no external data
        read_external_data(external, root)
    prepared = Graph.prepare(graph, env)
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
    for node in prepared.walk():
        sparse = node.attributes.get("sparse_value")
        if isinstance(sparse, onnx.SparseTensorProto):
            try:
                check_sparse(sparse)
            except Exception as e:  # noqa: BLE001
                raise ModelLoadError(
                    f"The sparse_value of node {node.path!r} ({node.op.name}) cannot be read: {e}"
                ) from e
    _check_initialized_inputs(prepared)
    hinted_lengths = _downstream(prepared, {o for n in prepared.nodes if n.size is not None for o in n.outputs})
    return PreparedModel(proto_copy, opsets, prepared, hinted_lengths)


def _check_initialized_inputs(graph: Graph) -> None:
    """Refuses a graph input whose initializer (its default value) does not match its type."""
    declared = {i.name: i for i in graph.inputs}
    for name, value in graph.initializers.items():
        if name in declared:
            expected = declared[name]
            if expected.kind != "tensor" or not (
                expected.accepts_dtype(value.dtype, as_jax_computes=False) and expected.accepts_shape(value.shape)
            ):
                raise ModelLoadError(
                    f"The graph input {name!r} is declared {expected.type_text()} but its initializer is "
                    f"{ValueType.of_array(name, value).type_text()}."
                )


def _lenient_attributes(registry, op_type: str, opset: int | None) -> set[str] | None:
    """The attribute names the registry's op of the default domain takes at ``opset`` where it
    ignores unknown ones (``OpContract.ignores_unknown_attributes``), else None (an unknown
    attribute, op or version is its own error later)."""
    try:
        op = registry.get_op(op_type, opset, "") if opset is not None else None
    except Exception:  # noqa: BLE001  (an unsupported op or version is reported by name later)
        return None
    return set(op.schema.attributes) if op is not None and op.contract.ignores_unknown_attributes else None


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
