"""The README's generated parts and commands match the code."""

import pathlib

from jaxonnx._docs import support_table

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_support_table_matches_the_registry():
    assert support_table() in README, "README's op table is stale: run `python -m jaxonnx._docs`."


def test_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = "pip install -q -e '.[test]' && python -m pytest -q"
    assert command in ci
    assert command in README
