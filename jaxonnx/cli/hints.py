"""Size-hinted outputs: their real part in the summaries, and an overflow's message naming
the output and the hint that fits."""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from jaxonnx.cli.errors import _for_the_command_line, _RunFailed
from jaxonnx.cli.inputs import _Prepared


@dataclasses.dataclass(frozen=True)
class _Hinted:
    """A graph output of a size-hinted node: its padded length, and how much of it is real."""

    node: str
    size: int
    axis: int  # the axis along which the output has `size` entries
    source: str  # the value whose non-zero count is the real length (Compress: the condition; NonZero: its input)
    count: int | None = None  # the real length, if it could be computed


def _hinted_outputs(prepared: _Prepared, *, jit: bool) -> dict[str, _Hinted]:
    """The size-hinted graph outputs, with their real lengths: those of the ops whose real
    length is the number of non-zeros of an input (their contract's ``counts_non_zeros_of``:
    Compress selects as many slices as its condition has true entries, NonZero finds as many
    columns as its input has non-zeros), padded along their contract's ``padded_axis``. The
    rest of the hinted length is padding (Compress pads zeros, which real slices can be too,
    so the count is taken from the input that decides it, not from the output)."""
    outputs = {o.name for o in prepared.proto.graph.output}
    found = {}
    for node in prepared.model.nodes:  # the ops as the load resolved them
        contract = getattr(node.op, "contract", None)  # None for a model's local function
        if contract is None or not contract.size_hint or not contract.counts_non_zeros_of:
            continue
        formals = node.op.formal_names(len(node.inputs))
        if contract.counts_non_zeros_of not in formals:
            continue  # the deciding input is omitted: nothing to count
        source = node.inputs[formals.index(contract.counts_non_zeros_of)]
        axis = contract.padded_axis
        if isinstance(axis, str):  # the attribute that holds it; 0 where the node has none
            axis = node.attributes.get(axis) or 0
        for name in node.outputs:
            if name in prepared.hints and name in outputs:
                found[name] = _Hinted(node.name, prepared.hints[name], axis, source)
    if not found:
        return found
    counts = _non_zero_counts(prepared, sorted({h.source for h in found.values()}), jit=jit)
    return {name: dataclasses.replace(h, count=counts.get(h.source)) for name, h in found.items()}


def _non_zero_counts(prepared: _Prepared, names: list[str], *, jit: bool) -> dict[str, int]:
    """The number of non-zeros of each named value of the graph on the command's feed: a copy
    of the model with those values as its outputs runs once more ({} if it cannot)."""
    import jax
    import onnx

    import jaxonnx

    extra = onnx.ModelProto()
    extra.CopyFrom(prepared.proto)
    del extra.graph.output[:]
    extra.graph.output.extend(onnx.ValueInfoProto(name=name) for name in names)  # no type: any
    try:
        model = jaxonnx.load(extra, size_hints=prepared.hints, base_dir=prepared.model_dir)
        values = (jax.jit(model.run) if jit else model.run)(prepared.feed)
        return {name: int(np.count_nonzero(np.asarray(values[name]))) for name in names}
    except Exception:  # any failure: the summary then shows the padded length only
        return {}


def _real_part(value, hinted: _Hinted | None):
    """The entries of a size-hinted output before its padding (the whole value otherwise),
    and the text that says how many of the padded length are real."""
    value = np.asarray(value)
    if hinted is None or value.ndim <= hinted.axis:
        return value, ""
    length = value.shape[hinted.axis]
    unit = (
        "row"
        if hinted.axis == 0
        else "column"
        if hinted.axis == 1 and value.ndim == 2
        else f"slice along axis {hinted.axis}"
    )
    if hinted.count is None or hinted.count > length:
        return value, f", size hint {hinted.size} (how many {unit}s are real is unknown)"
    plural = "s" if hinted.count != 1 else ""
    return (
        np.take(value, np.arange(hinted.count), axis=hinted.axis),
        f", size hint {hinted.size}: {hinted.count} real {unit}{plural} + {length - hinted.count} padding",
    )


def _summary(value) -> str:
    value = np.asarray(value)
    if value.dtype == object or value.size == 0:
        return f"values {value.reshape(-1)[:4].tolist()}"
    if value.dtype.kind in "biuf":
        as_float = value.astype(np.float64)
        return f"min {as_float.min():.6g}, max {as_float.max():.6g}, mean {as_float.mean():.6g}"
    return f"first {value.reshape(-1)[:3].tolist()}"


def _print_outputs(outputs: dict, hinted: dict[str, _Hinted]) -> None:
    for name, value in outputs.items():
        real, note = _real_part(value, hinted.get(name))
        of_real = " (of the real entries)" if note and real.size != np.size(value) else ""
        print(f"  {name}: shape {list(np.shape(value))}, dtype {value.dtype}{note}, {_summary(real)}{of_real}")


#: A size-hinted op's overflow under ``jax.jit``, found at run time: its message begins with
#: the op's type (``Compress selected 5 slices at run time but its output was given size=4``).
_OVERFLOW = re.compile(r"(\w+) (?:selected|found) (\d+) .*? at run time but its output was given size=(\d+)")


#: The same overflow found by the eager path, which knows the node (the interpreter names it).
_EAGER_OVERFLOW = re.compile(r"^Node '([^']*)' \([\w.]+-\d+, .*?(?:selected|found) (\d+) .*?but `size`=\d+")


def _failure(error: Exception, prepared: _Prepared) -> _RunFailed:
    """The command's message for a model that failed on its inputs: a size-hint overflow
    names the output (and the hint that fits), and made-up inputs are said to be made up."""
    message = _for_the_command_line(error)
    overflow = _OVERFLOW.search(message)
    if overflow:
        op_type, count, size = overflow.group(1), int(overflow.group(2)), int(overflow.group(3))
        candidates = [
            (name, node)
            for index, node in enumerate(prepared.proto.graph.node)
            if node.op_type == op_type
            for name in node.output
            if prepared.hints.get(name) == size
        ]
        if candidates:
            names = " or ".join(repr(name) for name, _ in candidates)
            nodes = ", ".join(repr(node.name or node.op_type) for _, node in candidates)
            option = (
                f"`--size-hint {candidates[0][0]}={count}`" if len(candidates) == 1 else f"`--size-hint OUTPUT={count}`"
            )
            message = f"The size-hinted output {names} (node {nodes}) overflowed: " + message.replace(
                "`--size-hint OUTPUT=N`", f"{option} or more"
            )
    eager = _EAGER_OVERFLOW.search(message)
    if eager:
        label, count = eager.group(1), int(eager.group(2))
        outputs = [
            node.output[0]
            for index, node in enumerate(prepared.proto.graph.node)
            if (node.name or f"{node.op_type}_{index}") == label
        ]
        if outputs:
            message = message.replace(
                "Give a larger `size`.",
                f"Give its output {outputs[0]!r} a larger size hint: `--size-hint {outputs[0]}={count}` or more.",
            )
    return _RunFailed(message, prepared.random_note())
