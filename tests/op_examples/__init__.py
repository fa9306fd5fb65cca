"""Example inputs of every registered op, one module per op family.

Each module defines ``EXAMPLES = {"OpType": [Example(...), ...]}`` for the ops of one domain:
``DOMAIN = "ai.onnx.ml"`` at the top of a module names it (the default domain otherwise).
:func:`all_examples` merges them, keyed by ``(domain, op_type)``. ``tests/test_op_table.py`` runs each example at every registered version it
is valid for against ``onnx.reference``, and checks gradients and vmap.
"""

from __future__ import annotations

import importlib
import pkgutil

from tests.op_examples._example import Example


def all_examples() -> dict[tuple[str, str], list[Example]]:
    merged: dict[tuple[str, str], list[Example]] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        domain = getattr(module, "DOMAIN", "")
        for op_type, examples in module.EXAMPLES.items():
            if (domain, op_type) in merged:
                raise ValueError(f"{op_type} has examples in two modules ({info.name} and another).")
            merged[domain, op_type] = list(examples)
    return merged
