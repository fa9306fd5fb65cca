"""The tutorial notebooks: committed executed, and current.

Every ``*.ipynb`` in ``notebooks/`` (the list comes from the folder, so a new notebook is
covered without editing this file) must

- have exactly the cells that ``notebooks/_build.py`` writes (edited there, not by hand);
- run top to bottom in a fresh ``python3`` kernel without a cell error;
- reproduce its committed outputs when executed again (``_build.stale_outputs``): text
  exactly, images by presence and type, and cells tagged ``timing`` or
  ``machine-dependent`` by output type only. A stale notebook fails here instead of
  showing results the code no longer gives.

The ``python3`` kernel is ipykernel's: its wheel installs the kernelspec into the
environment's prefix, and jupyter_client falls back to ipykernel's built-in spec (with
this interpreter) where none is installed, so no ``ipykernel install`` step is needed.
The kernel inherits this process's environment, including conftest's ``XLA_FLAGS`` (8
host devices), so the committed outputs must not depend on the number of devices.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import pathlib
import re

import nbformat
import pytest

NOTEBOOKS = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
MIN_NOTEBOOKS_WITH_FIGURES = 3
MAX_TEXT_OUTPUT_CHARS = 4000  # a printed array bigger than this is a dump, not an illustration


def _build_module():
    spec = importlib.util.spec_from_file_location("_notebooks_build", NOTEBOOKS / "_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILD = _build_module()


def _read(path: pathlib.Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def _code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def _stdout(nb) -> str:
    return "".join(
        output.text
        for cell in _code_cells(nb)
        for output in cell.outputs
        if output.output_type == "stream" and output.name == "stdout"
    )


def _images(nb) -> list[str]:
    return [
        mime
        for cell in _code_cells(nb)
        for output in cell.outputs
        for mime in output.get("data", {})
        if mime.startswith("image/")
    ]


def _prints_or_draws(source: str) -> bool:
    """Whether code outside a function or class definition calls print, display or show."""
    statements = [node for node in ast.parse(source).body if not isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"print", "display", "show"}
        for statement in statements
        for node in ast.walk(statement)
    )


def _check_loss_decreased(text: str) -> None:
    initial = float(re.search(r"^initial loss (\S+)$", text, re.M).group(1))
    final = float(re.search(r"^final loss (\S+)$", text, re.M).group(1))
    assert final < 1e-3 * initial, f"the fit did not converge: initial loss {initial}, final loss {final}"


# Spot checks of what a fresh run printed, beyond "no cell raised" and "as committed"; they
# also hold for the cells whose outputs are compared by type only.
REQUIRED_OUTPUT = {
    "01_quickstart.ipynb": "jaxonnx == onnxruntime: (3, 3) float32",
    "03_data_dependent_shapes.ipynb": "size_hints={'kept': <length>}",
    "04_speed.ipynb": "(outputs equal)",
}
EXTRA_CHECKS = {"02_gradients.ipynb": _check_loss_decreased}


def test_folder_and_build_script_agree():
    """Every notebook in the folder is written by _build.py, and everything it writes is there."""
    present = {path.name for path in PATHS}
    built = set(BUILD.NOTEBOOKS)
    assert present == built, (
        f"notebooks/ has {sorted(present - built)} that notebooks/_build.py does not write, and "
        f"_build.py writes {sorted(built - present)} that are not committed; run `python notebooks/_build.py`."
    )
    assert len(present) >= 4, present


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_notebook_cells_match_build_script(path):
    """A notebook is edited through notebooks/_build.py: its cells, ids and tags are what it writes."""
    expected = nbformat.writes(BUILD.build()[path.name])
    committed = nbformat.writes(BUILD.without_outputs(_read(path)))
    assert committed == expected, (
        f"{path.name}'s cells differ from what notebooks/_build.py writes (edited by hand?); "
        "run `python notebooks/_build.py`."
    )


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_notebook_is_committed_executed(path):
    """Every code cell that prints or draws has its outputs; none has an error; outputs stay small."""
    nb = _read(path)
    missing = [cell.id for cell in _code_cells(nb) if _prints_or_draws(cell.source) and not cell.outputs]
    assert not missing, (
        f"{path.name}: code cells {missing} print or draw but have no outputs; run `python notebooks/_build.py`."
    )
    counts = [cell.execution_count for cell in _code_cells(nb)]
    assert counts == list(range(1, len(counts) + 1)), f"{path.name} was not executed top to bottom once: {counts}"
    for cell in _code_cells(nb):
        for output in cell.outputs:
            assert output.output_type != "error", f"{path.name}, cell {cell.id}: {output.ename}: {output.evalue}"
            texts = [output.get("text", "")] + [v for k, v in output.get("data", {}).items() if k.startswith("text/")]
            longest = max(len(text) for text in texts)
            assert longest <= MAX_TEXT_OUTPUT_CHARS, (
                f"{path.name}, cell {cell.id}: a text output of {longest} characters"
            )


def test_notebooks_have_figures():
    with_figures = [path.name for path in PATHS if "image/png" in _images(_read(path))]
    assert len(with_figures) >= MIN_NOTEBOOKS_WITH_FIGURES, with_figures


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_notebook_outputs_are_current(path):
    """Executing the notebook in a fresh kernel reproduces its committed outputs."""
    fresh = BUILD.execute(BUILD.build()[path.name])  # CellExecutionError, with the cell, on a cell error
    text = _stdout(fresh)
    if path.name in REQUIRED_OUTPUT:
        assert REQUIRED_OUTPUT[path.name] in text, text
    if path.name in EXTRA_CHECKS:
        EXTRA_CHECKS[path.name](text)
    problems = BUILD.stale_outputs(_read(path), fresh)
    assert not problems, (
        f"{path.name}'s committed outputs are not what it gives now; run `python notebooks/_build.py "
        f"{path.name}` and review the diff:\n  " + "\n  ".join(problems)
    )


# --------------------------------------------------------------------------- the check itself


def _first_output(nb, predicate):
    for cell in _code_cells(nb):
        for output in cell.outputs:
            if predicate(cell, output):
                return cell, output
    raise AssertionError("no such output in the committed notebook")


def _volatile(cell) -> bool:
    return bool(BUILD.VOLATILE_TAGS & set(cell.metadata.get("tags", ())))


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_a_committed_notebook_is_current_against_itself(path):
    nb = _read(path)
    assert BUILD.stale_outputs(nb, copy.deepcopy(nb)) == []


def test_hand_edited_text_output_is_stale():
    committed = _read(NOTEBOOKS / "01_quickstart.ipynb")
    tampered = copy.deepcopy(committed)
    cell, output = _first_output(tampered, lambda c, o: o.output_type == "stream" and not _volatile(c))
    output.text = output.text.replace("1", "7", 1) if "1" in output.text else output.text + "7"
    problems = BUILD.stale_outputs(tampered, committed)
    assert len(problems) == 1 and problems[0].startswith(f"cell {cell.id}, output 0:"), problems


def test_hand_edited_markdown_output_is_stale():
    committed = _read(NOTEBOOKS / "04_speed.ipynb")
    tampered = copy.deepcopy(committed)
    cell, output = _first_output(tampered, lambda c, o: "text/markdown" in o.get("data", {}))
    ratio = re.search(r"\| (\d+\.\d\d) \|", output.data["text/markdown"]).group(1)
    output.data["text/markdown"] = output.data["text/markdown"].replace(ratio, ratio[::-1], 1)  # a better ratio
    assert [p.split(":")[0] for p in BUILD.stale_outputs(tampered, committed)] == [f"cell {cell.id}, output 0"]


def test_removed_or_added_outputs_are_stale():
    committed = _read(NOTEBOOKS / "02_gradients.ipynb")
    tampered = copy.deepcopy(committed)
    cell, _ = _first_output(tampered, lambda c, o: "image/png" in o.get("data", {}))
    cell.outputs = []
    assert any(p.startswith(f"cell {cell.id}:") for p in BUILD.stale_outputs(tampered, committed))
    tampered = copy.deepcopy(committed)
    cell = _code_cells(tampered)[-1]
    cell.outputs.append(nbformat.v4.new_output("stream", name="stderr", text="a warning nobody saw\n"))
    assert [p.split(",")[0] for p in BUILD.stale_outputs(tampered, committed)] == [f"cell {cell.id}"]


def test_execution_count_and_source_edits_are_stale():
    committed = _read(NOTEBOOKS / "03_data_dependent_shapes.ipynb")
    tampered = copy.deepcopy(committed)
    _code_cells(tampered)[1].execution_count = 9
    assert BUILD.stale_outputs(tampered, committed), "an out-of-order execution count went unnoticed"
    tampered = copy.deepcopy(committed)
    _code_cells(tampered)[1].source += "\nprint('edited')"
    assert BUILD.stale_outputs(tampered, committed), "an edited source went unnoticed"


def test_images_are_compared_by_presence_and_type_only():
    committed = _read(NOTEBOOKS / "02_gradients.ipynb")
    redrawn = copy.deepcopy(committed)
    _, output = _first_output(redrawn, lambda c, o: "image/png" in o.get("data", {}))
    output.data["image/png"] = "iVBORw0KGgo="  # other PNG bytes (another matplotlib draws differently)
    assert BUILD.stale_outputs(redrawn, committed) == []
    output.data["image/jpeg"] = output.data.pop("image/png")
    assert BUILD.stale_outputs(redrawn, committed), "a PNG that became a JPEG went unnoticed"


def test_tagged_cells_are_compared_by_type_only():
    committed = _read(NOTEBOOKS / "04_speed.ipynb")
    rerun = copy.deepcopy(committed)
    cell, output = _first_output(
        rerun, lambda c, o: BUILD.TIMING in c.metadata.get("tags", ()) and o.output_type == "stream"
    )
    output.text = re.sub(r"\d", "9", output.text)  # other timings
    assert BUILD.stale_outputs(rerun, committed) == []
    output.name = "stderr"  # but a different kind of output is a different result
    assert [p.split(":")[0] for p in BUILD.stale_outputs(rerun, committed)] == [f"cell {cell.id}, output 0"]


def test_stream_chunks_are_compared_as_one_text():
    """A kernel may flush one cell's prints in several chunks; that is not a difference."""
    committed = _read(NOTEBOOKS / "01_quickstart.ipynb")
    chunked = copy.deepcopy(committed)
    cell, output = _first_output(chunked, lambda c, o: o.output_type == "stream" and o.text.count("\n") > 1)
    index = cell.outputs.index(output)
    head, tail = output.text.split("\n", 1)
    cell.outputs[index : index + 1] = [
        nbformat.v4.new_output("stream", name=output.name, text=head + "\n"),
        nbformat.v4.new_output("stream", name=output.name, text=tail),
    ]
    assert BUILD.stale_outputs(chunked, committed) == []


def test_interleaving_of_stdout_and_stderr_is_not_a_difference_but_their_text_is():
    """The kernel flushes the two streams on separate timers: their order is not the cell's result."""
    committed = _read(NOTEBOOKS / "01_quickstart.ipynb")
    cell, output = _first_output(committed, lambda c, o: o.output_type == "stream" and not _volatile(c))
    warning = nbformat.v4.new_output("stream", name="stderr", text="a warning from another thread\n")
    cell.outputs.append(warning)
    flushed_first = copy.deepcopy(committed)
    cell_first = next(c for c in _code_cells(flushed_first) if c.id == cell.id)
    cell_first.outputs.insert(0, cell_first.outputs.pop())
    assert BUILD.stale_outputs(flushed_first, committed) == []
    warning.text = "another warning\n"
    assert [p.split(":")[0] for p in BUILD.stale_outputs(flushed_first, committed)] == [f"cell {cell.id}, output 0"]


def test_unknown_cell_tag_is_refused():
    with pytest.raises(ValueError, match=r"Unknown cell tags \['timings'\]"):
        BUILD.code("print(1)", "timings")
