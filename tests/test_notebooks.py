"""The tutorial notebooks: each one exists, is what ``notebooks/_build.py`` writes (without
outputs), and runs top to bottom in a fresh ``python3`` kernel without a cell error.

The ``python3`` kernel is ipykernel's: its wheel installs the kernelspec into the
environment's prefix, and jupyter_client falls back to ipykernel's built-in spec (with
this interpreter) where none is installed, so no ``ipykernel install`` step is needed.
"""

from __future__ import annotations

import importlib.util
import pathlib
import re

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
EXPECTED = (
    "01_quickstart.ipynb",
    "02_gradients.ipynb",
    "03_data_dependent_shapes.ipynb",
    "04_speed.ipynb",
)
CELL_TIMEOUT_S = 120


def _build_module():
    spec = importlib.util.spec_from_file_location("_notebooks_build", NOTEBOOKS / "_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stdout(nb) -> str:
    return "".join(
        output.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "stream" and output.name == "stdout"
    )


def _check_loss_decreased(text: str) -> None:
    initial = float(re.search(r"^initial loss (\S+)$", text, re.M).group(1))
    final = float(re.search(r"^final loss (\S+)$", text, re.M).group(1))
    assert final < 1e-3 * initial, f"the fit did not converge: initial loss {initial}, final loss {final}"


# Spot checks of what a notebook printed, beyond "no cell raised".
REQUIRED_OUTPUT = {
    "01_quickstart.ipynb": "jaxonnx == onnxruntime: (3, 3) float32",
    "03_data_dependent_shapes.ipynb": "size_hints={'kept': <length>}",
}


def test_expected_notebooks_exist():
    present = {path.name for path in NOTEBOOKS.glob("*.ipynb")}
    missing = [name for name in EXPECTED if name not in present]
    assert not missing, f"notebooks missing from {NOTEBOOKS}: {missing}"


@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_matches_build_script(name):
    """A notebook is edited through notebooks/_build.py and committed without outputs."""
    expected = nbformat.writes(_build_module().build()[name]).rstrip("\n")
    committed = (NOTEBOOKS / name).read_text(encoding="utf-8").rstrip("\n")  # nbformat.write adds one
    assert committed == expected, (
        f"{name} differs from what notebooks/_build.py writes (edited by hand, or saved with "
        "outputs?); run `python notebooks/_build.py`."
    )


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_runs(path):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(NOTEBOOKS)}},  # the kernel's working directory
    )
    client.execute()  # raises CellExecutionError, with the cell and its traceback, on a cell error
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    text = _stdout(nb)
    if path.name in REQUIRED_OUTPUT:
        assert REQUIRED_OUTPUT[path.name] in text, text
    if path.name == "02_gradients.ipynb":
        _check_loss_decreased(text)
