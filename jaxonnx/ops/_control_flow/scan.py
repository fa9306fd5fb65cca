"""Scan: every version (8 with a batch axis and ``sequence_lens``; 9, 11, 16, 19, 21, 23, 24,
25 with per-input axes and directions; the later versions only widen the types)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import normalize_axis


@register("Scan", 9, 11, 16, 19, 21, 23, 24, 25, folds=False)
def scan(
    *inputs,
    body,
    num_scan_inputs,
    scan_input_axes=None,
    scan_input_directions=None,
    scan_output_axes=None,
    scan_output_directions=None,
):
    """Implements ONNX Scan as ``jax.lax.scan``: ``body`` runs once per slice of the scan
    inputs, carrying the state values; its scan outputs are stacked.

    Args:
        *inputs: the initial states, then the ``num_scan_inputs`` scan inputs.
        body: a function of ``(*states, *scan_input_slices)`` returning
            ``(*states, *scan_output_slices)``.
        num_scan_inputs: how many of ``inputs`` are scanned.
        scan_input_axes, scan_output_axes: the scanned axis of each scan input / output
            (default 0; negative counts from the end).
        scan_input_directions, scan_output_directions: 0 forward, 1 reverse (default 0).

    Returns:
        The final states, then the scan outputs.

    Example:
        >>> body = lambda total, x: (total + x, total + x)
        >>> jaxonnx.ops.scan(jnp.zeros(2), jnp.ones((3, 2)), body=body, num_scan_inputs=1)[1]
        Array([[1., 1.],
               [2., 2.],
               [3., 3.]], dtype=float32)
    """
    count = len(inputs) - num_scan_inputs
    if num_scan_inputs < 1 or count < 0:
        raise OnnxValidationError(f"got `num_scan_inputs`={num_scan_inputs} for {len(inputs)} inputs.")
    states, xs = list(inputs[:count]), list(inputs[count:])
    in_axes = _per_value(scan_input_axes, num_scan_inputs, "scan_input_axes")
    in_reverse = _per_value(scan_input_directions, num_scan_inputs, "scan_input_directions")
    xs = [jnp.moveaxis(x, normalize_axis(a, x.ndim, name="scan_input_axes"), 0) for x, a in zip(xs, in_axes)]
    lengths = {x.shape[0] for x in xs}
    if len(lengths) != 1:
        raise OnnxValidationError(f"got scan inputs of different lengths along their scan axes: {sorted(lengths)}.")
    xs = [jnp.flip(x, 0) if r else x for x, r in zip(xs, in_reverse)]

    def step(carry, slices):
        outputs = body(*carry, *slices)
        if len(outputs) < count:
            raise OnnxValidationError(f"got a body with {len(outputs)} outputs for {count} states.")
        new = [jnp.asarray(v) for v in outputs[:count]]
        for k, (before, after) in enumerate(zip(carry, new)):
            if before.shape != after.shape or before.dtype != after.dtype:
                raise OnnxValidationError(
                    f"got a body that changes state {k} from {before.dtype}{list(before.shape)} to "
                    f"{after.dtype}{list(after.shape)}; a state keeps its shape and type."
                )
        return new, [jnp.asarray(v) for v in outputs[count:]]

    final, ys = jax.lax.scan(step, [jnp.asarray(s) for s in states], xs)
    out_axes = _per_value(scan_output_axes, len(ys), "scan_output_axes")
    out_reverse = _per_value(scan_output_directions, len(ys), "scan_output_directions")
    ys = [jnp.flip(y, 0) if r else y for y, r in zip(ys, out_reverse)]
    ys = [jnp.moveaxis(y, 0, normalize_axis(a, y.ndim, name="scan_output_axes")) for y, a in zip(ys, out_axes)]
    return (*final, *ys)


@register("Scan", 8, folds=False)
def _scan_8(sequence_lens, *inputs, body, num_scan_inputs, directions=None):
    # Scan-8: axis 0 of every input is a batch axis, axis 1 the scanned one.
    if sequence_lens is not None:
        lengths = np.asarray(sequence_lens) if not isinstance(sequence_lens, jax.core.Tracer) else None
        full = {x.shape[1] for x in inputs[len(inputs) - num_scan_inputs :]}
        if lengths is None or not np.all(np.isin(lengths, list(full))):
            raise OnnxValidationError(
                "got `sequence_lens` shorter than the scan inputs; jaxonnx runs Scan-8 over whole sequences "
                "only (every length equal to the scan axis)."
            )

    def one(*values):
        return scan(
            *values,
            body=body,
            num_scan_inputs=num_scan_inputs,
            scan_input_axes=[0] * num_scan_inputs,
            scan_input_directions=directions,
        )

    return jax.vmap(one)(*inputs)


def _per_value(values, count: int, name: str) -> list[int]:
    values = [0] * count if values is None else [int(v) for v in values]
    if len(values) != count:
        raise OnnxValidationError(f"got {len(values)} entries in `{name}` for {count} values.")
    return values


__all__ = ["scan"]
