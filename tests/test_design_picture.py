"""docs/design.md's architecture picture matches the tree: it is drawn by
tools/draw_architecture.py, every module it names exists, and every module of the package
is named (bare names such as ``planning.py`` resolved in the folder of the path before them)."""

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


def test_every_module_of_the_package_is_in_the_picture():
    # The op families are one box (jaxonnx/ops/_family/), their shared code another
    # (jaxonnx/ops/_helpers/); a subpackage's __init__.py is its folder's, named with it.
    named = set(_drawing().named_paths())
    package = _ROOT / "jaxonnx"
    wanted = {"jaxonnx/ops/_helpers/", "jaxonnx/ops/_family/"}
    for path in package.rglob("*.py"):
        relative = path.relative_to(_ROOT).as_posix()
        if relative.startswith("jaxonnx/ops/") or "__pycache__" in relative:
            continue
        if path.name == "__init__.py" and path.parent != package:
            wanted.add(f"{path.parent.relative_to(_ROOT).as_posix()}/")
        else:
            wanted.add(relative)
    wanted |= {f"jaxonnx/{p.name}/" for p in package.iterdir() if p.is_dir() and not (p / "__init__.py").exists()}
    wanted -= {"jaxonnx/__pycache__/"}
    missing = sorted(w for w in wanted if not any(n == w or (w.endswith("/") and n.startswith(w)) for n in named))
    assert not missing, f"the architecture picture leaves out {missing}: add them in tools/draw_architecture.py"
