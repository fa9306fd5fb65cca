"""SequenceMap (17): a subgraph applied to each element of one or more sequences."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError


@register("SequenceMap", 17)
def sequence_map(input_sequence, *additional_inputs, body):
    """Implements ONNX SequenceMap: ``body`` applied to the ``i``-th element of each sequence
    (a tensor input is passed whole to every call); each output is a sequence of the results.

    The sequences' lengths are known at trace time, so this is a Python loop over them.

    Example:
        >>> jaxonnx.ops.sequence_map([np.ones(2), np.ones(3)], body=lambda x: (x.sum(),))
        ([np.float64(2.0), np.float64(3.0)],)
    """
    inputs = (input_sequence, *additional_inputs)
    lengths = {len(x) for x in inputs if isinstance(x, list)}
    if len(lengths) > 1:
        raise OnnxValidationError(f"got sequences of different lengths {sorted(lengths)}.")
    count = lengths.pop()
    results = [body(*[x[i] if isinstance(x, list) else x for x in inputs]) for i in range(count)]
    outputs = len(body.output_names) if hasattr(body, "output_names") else (len(results[0]) if results else 0)
    return tuple([list(r[k] for r in results) for k in range(outputs)])


__all__ = ["sequence_map"]
