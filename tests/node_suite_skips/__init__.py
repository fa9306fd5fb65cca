"""onnx node cases that jaxonnx does not run, each with its reason, one module per op family.

Each module defines ``SKIPS = {"test_case_name": "reason"}``. A reason is one of: the
case's data deviates from the operator's text (say how), or it uses an element type that
neither JAX nor ml_dtypes can hold. A case that merely fails is not skipped: the op is fixed.
"""

from __future__ import annotations

import importlib
import pkgutil


def all_skips() -> dict[str, str]:
    merged: dict[str, str] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name, reason in module.SKIPS.items():
            if name in merged:
                raise ValueError(f"{name} is skipped in two modules.")
            merged[name] = reason
    return merged
