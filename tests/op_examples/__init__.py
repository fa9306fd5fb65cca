"""Example inputs of every registered op, one module per op family.

Each module defines ``EXAMPLES = {"OpType": [Example(...), ...]}``; :func:`all_examples`
merges them. ``tests/test_op_table.py`` runs each example at every registered version it
is valid for against ``onnx.reference``, and checks gradients and vmap.
"""

from __future__ import annotations

import importlib
import pkgutil

from tests.op_examples._example import Example


def all_examples() -> dict[str, list[Example]]:
    merged: dict[str, list[Example]] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for op_type, examples in module.EXAMPLES.items():
            if op_type in merged:
                raise ValueError(f"{op_type} has examples in two modules ({info.name} and another).")
            merged[op_type] = list(examples)
    return merged
