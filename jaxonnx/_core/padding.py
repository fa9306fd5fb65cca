"""The padding contract of size hints: a padded value never reaches a result silently.

A size hint (``size_hints=`` of :func:`jaxonnx.load`) gives a data-dependent output a fixed
length: its real entries first, then padding. NonZero pads with out-of-range indices (each
dim's size), Compress with zeros; Unique pads `Y` and `counts` with zeros, `indices` with
out-of-range indices, and `inverse_indices` (whose length is not data-dependent) not at all. The graph runner tracks, at trace time, which values
carry padding, from the size-hinted output to every consumer, and asks each consumer's
contract (``padding=`` of :func:`jaxonnx.register`) what it does with it:

- ``"keeps"``: the op moves values without computing on them (Identity, Transpose, Cast,
  Reshape, Squeeze, Unsqueeze, Slice, Split, Concat, Flatten), so its outputs carry the
  padding on;
- ``"reads"``: a gather (Gather, GatherND, GatherElements): padded indices read zeros,
  eagerly and under ``jax.jit`` alike, and its output carries zero padding (padded data
  passes its own padding on); zero padding as indices is refused (0 is a real position);
- ``"drops"``: a scatter (ScatterND, ScatterElements, Scatter): padded indices write
  nothing (zero padding as indices is refused);
- ``"sums"``: ReduceSum, ReduceL1, ReduceL2, ReduceSumSquare: zero padding adds nothing, so the result is exact (index padding is
  refused).

Any other op that meets padding raises :class:`~jaxonnx.OnnxValidationError` naming the
size-hinted output, the node it reached and the ways out. A graph output may carry padding:
that is what the size hint asks for. The same rules hold eagerly and under ``jax.jit``, so
both give the same answer or the same error.
"""

from __future__ import annotations

import dataclasses

from jaxonnx._errors import OnnxValidationError


@dataclasses.dataclass(frozen=True)
class Padding:
    """Where a value's padding comes from, and what it is."""

    output: str  # the size-hinted output the padding started at
    node: str  # the node that wrote it
    zeros: bool  # padded entries are zeros (Compress, gathers), else out-of-range indices


def of_size_hint(node) -> list[Padding | None] | None:
    """The padding each output of a size-hinted node starts (None for an output whose length
    the hint does not set), or None when the node has no size hint or its hint bounds a loop.

    The contract's ``size_hint`` says what the padding is: True, out-of-range indices
    (NonZero); ``"zeros"``, zeros (Compress); or a tuple with one entry per output (Unique):
    ``"indices"``, ``"zeros"`` or ``""`` (that output's length does not depend on the hint).
    """
    kind = node.op.contract.size_hint
    if node.size is None or kind == "bound":
        return None
    if isinstance(kind, tuple):
        return [Padding(name, node.path, zeros=k == "zeros") if k else None for name, k in zip(node.outputs, kind)]
    return [Padding(node.outputs[0], node.path, zeros=kind == "zeros")] * len(node.outputs)


def of_inputs(node, padding: dict[str, Padding]) -> dict[str, Padding]:
    """The padded inputs of ``node`` by formal name, checked against its op's contract."""
    padded = {name: padding[name] for name in node.inputs if name and name in padding}
    if not padded:
        return {}
    op = node.op
    role = getattr(getattr(op, "contract", None), "padding", "")
    formals = op.formal_names(len(node.inputs)) if hasattr(op, "formal_names") else list(node.inputs)
    by_formal = {formal: padding[name] for formal, name in zip(formals, node.inputs) if name in padded}
    origin = next(iter(padded.values()))
    if role == "sums" and not all(p.zeros for p in padded.values()):
        _refuse(node, origin, "sums its input, but this padding is out-of-range indices, not zeros")
    if role == "drops" and "indices" not in by_formal:
        _refuse(node, origin, "writes padded values at real positions")
    if role in ("reads", "drops") and "indices" in by_formal and by_formal["indices"].zeros:
        # Zero padding in indices names element 0, a real position: it would be read or written.
        _refuse(node, by_formal["indices"], "takes it as indices, but this padding is zeros (a real position), not out-of-range indices")
    if not role:
        _refuse(node, origin, "computes on its values")
    return by_formal


def of_outputs(node, by_formal: dict[str, Padding]) -> Padding | None:
    """The padding the node's outputs carry, given its padded inputs."""
    if not by_formal:
        return None
    role = node.op.contract.padding
    first = next(iter(by_formal.values()))
    if role == "keeps":
        return first
    if role == "reads":
        # Padded indices read zeros; padded data passes its own padding on to what is read.
        read = [p for formal, p in by_formal.items() if formal != "indices"]
        return Padding(first.output, first.node, zeros=all(p.zeros for p in read))
    return None  # "drops" and "sums" consume the padding


def _refuse(node, origin: Padding, what: str):
    raise OnnxValidationError(
        f"The size-hinted output {origin.output!r} (of node {origin.node!r}) is padded past its real length, "
        f"and its padding reaches node {node.path!r} ({node.op.name}), which {what}: the result would be "
        "silently wrong. Ways out: run the model without a size hint for that output (eagerly, where every "
        "length is exact), or keep the padded value to ops that respect padding (gathers, scatters, "
        "ReduceSum of zero padding, and the ops that only move values); see the README's size hints section."
    )
