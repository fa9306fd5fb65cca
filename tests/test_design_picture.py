"""docs/design.md's architecture picture matches the tree: it is drawn by
tools/draw_architecture.py, and every module it names exists."""

from __future__ import annotations

import importlib.util
import pathlib

_ROOT = pathlib.Path(__file__).resolve().parents[1]


def _drawing():
    spec = importlib.util.spec_from_file_location("draw_architecture", _ROOT / "tools" / "draw_architecture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_picture_is_the_one_the_tool_draws():
    drawn = _drawing().svg()
    assert (_ROOT / "docs" / "assets" / "architecture.svg").read_text() == drawn, (
        "docs/assets/architecture.svg is stale: run `python tools/draw_architecture.py`"
    )


def test_every_module_the_picture_names_exists():
    named = _drawing().named_paths()
    assert "jaxonnx/_core/contract.py" in named and "jaxonnx/generation/" in named
    missing = [path for path in named if "_family" not in path and not (_ROOT / path).exists()]
    assert not missing, f"the architecture picture names modules that do not exist: {missing}"
