"""Examples of the sequence and optional ops: a sequence is a list of arrays, an empty
optional is None. onnx.reference runs them too."""

from __future__ import annotations

import numpy as np

from tests.op_examples._example import Example

_a = np.arange(6, dtype=np.float32).reshape(2, 3)
_b = np.ones((1, 3), np.float32)
_seq = [_a, _b, _a * 2]
_i = np.array(1, np.int64)

EXAMPLES = {
    "SequenceConstruct": [Example([_a, _b], grad=False, vmap=False)],
    "SequenceEmpty": [Example([], grad=False, vmap=False)],
    "SequenceAt": [Example([_seq, np.array(-1, np.int64)], grad=False, vmap=False)],
    "SequenceLength": [Example([_seq], grad=False, vmap=False)],
    "SequenceInsert": [Example([_seq, _b, _i], grad=False, vmap=False), Example([_seq, _b], grad=False, vmap=False)],
    "SequenceErase": [Example([_seq, _i], grad=False, vmap=False), Example([_seq], grad=False, vmap=False)],
    "SplitToSequence": [
        Example([np.arange(10, dtype=np.float32).reshape(5, 2), np.array(2, np.int64)], grad=False, vmap=False),
        Example([np.arange(6, dtype=np.float32).reshape(3, 2)], {"keepdims": 0}, grad=False, vmap=False),
    ],
    "ConcatFromSequence": [
        Example([_seq], {"axis": 0}, grad=False, vmap=False),
        Example([[_a, _a]], {"axis": 1, "new_axis": 1}, grad=False, vmap=False),
    ],
    "SequenceMap": [
        Example(
            [_seq],
            {"body": lambda x: (x * 2,)},
            grad=False,
            vmap=False,
            reference=lambda seq, body: [[body(x)[0] for x in seq]],
        )
    ],
    # onnx.reference holds a non-empty optional as a one-element list; jaxonnx as the value itself.
    "Optional": [Example([_a], grad=False, vmap=False, reference=lambda x, **_: [x])],
    "OptionalHasElement": [Example([_a], grad=False, vmap=False)],
    "OptionalGetElement": [Example([_a], grad=False, vmap=False)],
}
