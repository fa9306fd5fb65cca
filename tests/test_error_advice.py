"""Every option an error message of jaxonnx suggests exists where it points (issue 41 §7).

The messages are read from the library's sources: a backticked ``--flag`` must be an option
of a ``jaxonnx`` command, and a backticked ``name=`` that is no ONNX attribute must be a
parameter of a public jaxonnx function or Model method. The main pieces of advice are then
followed, and must work.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import pathlib
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import jaxonnx
from jaxonnx.cli import _parser

SOURCES = sorted((pathlib.Path(jaxonnx.__file__).parent).rglob("*.py"))
# flags of XLA and jax config names that messages quote, not jaxonnx's
FOREIGN_FLAG = re.compile(r"--xla_")


def _messages(path: pathlib.Path) -> list[str]:
    """The text of every error the file raises or hands to a refusing call (its string parts;
    f-string fields left out) and of the functions that build messages."""
    tree = ast.parse(path.read_text())

    def called(node):
        return getattr(node.func, "id", None) or getattr(node.func, "attr", "")

    roots = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Raise) or isinstance(node, ast.Call) and re.search(r"Error$|refus|fail", called(node))
    ]
    roots += [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and re.search("message|refusal|failure", node.name)
    ]
    texts = []
    for root in roots:
        for node in ast.walk(root):
            if isinstance(node, ast.JoinedStr):
                texts.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                texts.append(node.value)
    return texts


def _advice(pattern: str) -> dict[str, list[str]]:
    """``pattern``'s first group in every backticked span of the library's error messages
    (they quote code between backticks), with the files that raise it."""
    found: dict[str, list[str]] = {}
    for path in SOURCES:
        for text in _messages(path):
            for span in re.findall(r"`([^`\n]+)`", text):
                for match in re.finditer(pattern, span):
                    found.setdefault(match.group(1), []).append(path.name)
    return found


def _cli_options() -> set[str]:
    options = set()
    parsers = [_parser()]
    while parsers:
        parser = parsers.pop()
        for action in parser._actions:
            options.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
    return options


def _python_parameters() -> set[str]:
    names = set()
    callables = [getattr(jaxonnx, n) for n in jaxonnx.__all__ if callable(getattr(jaxonnx, n))]
    callables += [
        getattr(jaxonnx.Model, n)
        for n in dir(jaxonnx.Model)
        if not n.startswith("_") and callable(getattr(jaxonnx.Model, n))
    ]
    callables += [jaxonnx.generation.find_cache, jaxonnx.finetuning.lora, jaxonnx.finetuning.causal_lm_loss]
    callables += [
        getattr(jaxonnx.finetuning.LoraModel, n)
        for n in dir(jaxonnx.finetuning.LoraModel)
        if not n.startswith("_") and callable(getattr(jaxonnx.finetuning.LoraModel, n))
    ]
    for function in callables:
        try:
            names.update(inspect.signature(function).parameters)
        except (TypeError, ValueError):
            continue
    return names


def _own_parameters(file_name: str) -> set[str]:
    """The parameters of the functions a file defines: an op's message may suggest its own
    keyword (``size=`` of NonZero's function)."""
    names = set()
    for path in SOURCES:
        if path.name == file_name:
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.update(a.arg for a in node.args.args + node.args.kwonlyargs)
    return names


def _onnx_attribute_names() -> set[str]:
    return {name for schema in onnx.defs.get_all_schemas_with_history() for name in schema.attributes}


def test_every_suggested_command_option_exists():
    suggested = {
        flag: files
        for flag, files in _advice(r"(?<![\w-])(--[a-z][a-z0-9_-]*)").items()
        if not FOREIGN_FLAG.match(flag)
    }
    assert "--size-hint" in suggested  # the scan sees the messages
    options = _cli_options()
    missing = {flag: files for flag, files in suggested.items() if flag not in options}
    assert not missing, f"messages suggest command options no command has: {missing}"


def test_every_suggested_keyword_exists():
    suggested = _advice(r"(?<![\w.-])([a-z_]+)=(?!=)")
    assert {"size_hints", "loop_bounds", "dims"} <= set(suggested)
    attributes = _onnx_attribute_names()
    parameters = _python_parameters()
    missing = {
        name: files
        for name, files in suggested.items()
        if name not in parameters
        and name not in attributes
        and not name.startswith("jax_")
        and not all(name in _own_parameters(file) for file in files)
    }
    assert not missing, f"messages suggest keywords no public function takes: {missing}"


def _nonzero_model():
    graph = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["nz"], name="find")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])],
        [helper.make_tensor_value_info("nz", TensorProto.INT64, [1, "n"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 9
    return model


def test_following_the_size_hint_advice_works():
    import jax

    x = np.array([0.0, 1.0, 2.0, 0.0, 3.0], np.float32)
    model = jaxonnx.load(_nonzero_model())
    with pytest.raises(jaxonnx.JaxOnnxError, match=r"size_hints=") as info:
        jax.jit(model)(x)
    assert "size_hints=" in str(info.value)
    hinted = jaxonnx.load(_nonzero_model(), size_hints={"nz": 5})
    (padded,) = jax.jit(hinted)(x)
    np.testing.assert_array_equal(np.asarray(padded)[0, :3], [1, 2, 4])
