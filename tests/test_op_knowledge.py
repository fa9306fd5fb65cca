"""Op knowledge lives beside the op: the core and the CLI never name an op.

What the layout pass, the padding rules, param discovery and the CLI need to know about an op
(elementwise, reduces over axes, holds weights, shape-only, ...) is declared at the op's own
``register(...)`` call, in its contract. These tests read the source of ``jaxonnx/_core/`` and
``jaxonnx/cli/`` and fail on any string literal that is a registered op's name, outside
docstrings: a table of op names there is knowledge that a new op would have to edit.
"""

from __future__ import annotations

import ast
import pathlib

import jaxonnx
import jaxonnx.ops  # noqa: F401  (registers every op)
from jaxonnx._core.registry import REGISTRY, _snake_case

_PACKAGE = pathlib.Path(jaxonnx.__file__).parent
_CORE_AND_CLI = sorted([*(_PACKAGE / "_core").glob("*.py"), *(_PACKAGE / "cli").glob("*.py")])


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of a module and its classes and functions."""
    owners = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, owners)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def _op_names_in(path: pathlib.Path, op_names: set[str]) -> list[tuple[int, str]]:
    """Each string literal of ``path`` that is one of ``op_names``, outside docstrings, with its line."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in op_names
        and id(node) not in docstrings
    ]


def test_the_core_and_the_cli_name_no_op():
    op_names = {op_type for _, op_type in REGISTRY._versions}
    found = [
        f"{path.relative_to(_PACKAGE.parent)}:{line}: {name!r}"
        for path in _CORE_AND_CLI
        for line, name in _op_names_in(path, op_names)
    ]
    assert not found, "op names in the core or the CLI (declare a trait at the op's register call):\n" + "\n".join(
        found
    )


def test_the_scan_finds_an_op_name_where_one_is_written(tmp_path):
    """The scan itself: a table of op names is found, the same names in a docstring are not."""
    source = tmp_path / "table.py"
    source.write_text('"""Relu and Add are fine here."""\n_UNARY = ("Relu", "Add")\n')
    assert _op_names_in(source, {"Relu", "Add"}) == [(2, "Relu"), (2, "Add")]


def _snake_op_names_in(path: pathlib.Path, snake_names: set[str]) -> list[tuple[int, str]]:
    """Each function, class or string literal of ``path`` (outside docstrings) named after
    one of ``snake_names``, a leading underscore aside: a rule or table keyed by an op."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = node.name
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            name = node.value
        else:
            continue
        if name.lstrip("_") in snake_names:
            found.append((node.lineno, name))
    return found


def test_the_core_and_the_cli_have_no_rule_named_after_an_op():
    """A per-op rule in the core (``def _top_k``, ``"gather_nd"``) is op knowledge too: it
    belongs in the op's file, passed to ``register`` (as ``padding=`` and ``layout=`` take a
    function). Names of one word (``shape``, ``size``, ``sum``) are ordinary words and not
    checked."""
    snake_names = {_snake_case(op_type) for _, op_type in REGISTRY._versions}
    snake_names = {name for name in snake_names if "_" in name}
    found = [
        f"{path.relative_to(_PACKAGE.parent)}:{line}: {name!r}"
        for path in _CORE_AND_CLI
        for line, name in _snake_op_names_in(path, snake_names)
    ]
    assert not found, "rules named after an op in the core or the CLI (move them beside the op):\n" + "\n".join(found)


def test_the_snake_case_scan_finds_a_rule_named_after_an_op(tmp_path):
    source = tmp_path / "rules.py"
    source.write_text('"""top_k is fine here."""\ndef _top_k(call):\n    return "gather_nd"\n')
    assert _snake_case("NonMaxSuppression") == "non_max_suppression" and _snake_case("GatherND") == "gather_nd"
    assert _snake_op_names_in(source, {"top_k", "gather_nd"}) == [(2, "_top_k"), (3, "gather_nd")]
