"""What jaxonnx and its tests import is what pyproject.toml declares.

A fresh ``pip install -e .`` installs the declared dependencies and what they require, and
nothing else; the test suite's own extras (onnxruntime, ...) pull in more, which once hid
that ``jax.export`` serialization needs ``flatbuffers``. Likewise, a package installed by
hand on CI's machine once hid that onnxruntime's MatMulNBits quantizer, which the tests
use, imports ``onnx_ir``, which onnxruntime does not require. Both checks run Python in a
subprocess in which importing any third-party package outside a declared set fails, as it
would in a fresh virtual environment.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import pathlib
import re
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _distribution(requirement: str) -> str:
    """The normalized distribution name of a requirement string (``"onnx_ir>=0.1"``)."""
    return re.split(r"[<>=!~\[; ]", requirement.strip())[0].lower().replace("_", "-").replace(".", "-")


def _declared_distributions(*extras: str) -> set[str]:
    """jaxonnx's declared dependencies, and those of ``extras``, with everything they require."""
    todo = list(PROJECT["dependencies"]) + [r for extra in extras for r in PROJECT["optional-dependencies"][extra]]
    seen: set[str] = set()
    while todo:
        requirement = todo.pop()
        name = _distribution(requirement)
        if name in seen:
            continue
        seen.add(name)
        wanted = re.search(r"\[([^\]]+)\]", requirement.split(";")[0])  # a requirement's own extras
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for r in requires:
            marker = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", r)
            if marker is None or (wanted and marker.group(1) in {w.strip() for w in wanted.group(1).split(",")}):
                todo.append(r)
    return seen


def _declared_closure(*extras: str) -> set[str]:
    """The import names of jaxonnx's declared dependencies (and ``extras``') and everything
    they require."""
    seen = _declared_distributions(*extras)
    modules = {"jaxonnx"}
    for module, distributions in importlib.metadata.packages_distributions().items():
        if any(_distribution(d) in seen for d in distributions):
            modules.add(module)
    return modules


_RUNNER = r"""
import pathlib, sys
root = pathlib.Path(sys.argv[1])
for page, heading in [("README.md", "## Quickstart"), ("docs/getting-started.md", "## A model in five lines"),
                      ("docs/guide/transformations.md", "# jit, gradients and vmap"),
                      ("docs/guide/finetuning.md", "# Fine-tuning, params and saving")]:
    text = (root / page).read_text(encoding="utf-8")
    block = text.split(heading, 1)[1].split("```python", 1)[1].split("```", 1)[0]
    exec(compile(block, f"{page} ({heading})", "exec"), {})
print("ok")
"""


def _only_declared(tmp_path: pathlib.Path, *extras: str) -> pathlib.Path:
    """A folder holding (as links) just the declared dependencies' modules (and their
    metadata, which some read at import): with Python's site-packages switched off (``-S``),
    it is all the third-party code there is."""
    site = tmp_path / "site"
    site.mkdir()
    allowed = _declared_closure(*extras) - {"jaxonnx"}
    distributions = {d.replace("-", "_") for d in _declared_distributions(*extras)}
    for root in map(pathlib.Path, sys.path):
        if root.name != "site-packages" or not root.is_dir():
            continue
        for entry in root.iterdir():
            top = entry.name.split(".", 1)[0]
            metadata = entry.name.endswith(".dist-info") and entry.name.split("-", 1)[0].lower() in distributions
            if (top in allowed or metadata) and not (site / entry.name).exists():
                (site / entry.name).symlink_to(entry)
    return site


def test_the_readme_examples_need_only_declared_dependencies(tmp_path):
    site = _only_declared(tmp_path)
    env = {"PYTHONPATH": f"{ROOT}{os.pathsep}{site}", "PATH": os.environ.get("PATH", ""), "JAX_PLATFORMS": "cpu"}
    result = subprocess.run(
        [sys.executable, "-S", "-c", _RUNNER, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]


def _third_party_imports() -> set[str]:
    """Every absolute import (dotted, as written) in jaxonnx/, tests/ and the notebooks that
    the suite executes, outside the standard library and the project's own modules; imports
    inside functions and ``try`` blocks count: the suite runs them."""
    sources = [p.read_text(encoding="utf-8") for folder in ("jaxonnx", "tests") for p in (ROOT / folder).rglob("*.py")]
    for notebook in (ROOT / "notebooks").glob("*.ipynb"):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        sources += ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    local = {p.stem for p in (ROOT / "tests").glob("*.py")} | {"jaxonnx", "tests"}
    found: set[str] = set()
    for source in sources:
        lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]  # IPython magics
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
    return {m for m in found if m.split(".")[0] not in sys.stdlib_module_names | local}


_IMPORTER = r"""
import importlib, sys
missing = []
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as error:
        missing.append(f"{name} (needs {error.name})")
print("missing:", "; ".join(missing) if missing else "none")
"""


def test_every_import_of_the_library_and_the_tests_is_declared(tmp_path):
    # `pip install -e '.[test]'` in a fresh environment (README, .ci/run) must bring every
    # module that jaxonnx, its tests and its executed notebooks import, and every module
    # those import in turn: each is imported here with only the dependencies and the `test`
    # extra on the path.
    modules = sorted(_third_party_imports())
    assert "onnxruntime.quantization.matmul_nbits_quantizer" in modules  # the import that hid onnx_ir
    site = _only_declared(tmp_path, "test")
    env = {"PYTHONPATH": f"{ROOT}{os.pathsep}{site}", "PATH": os.environ.get("PATH", ""), "JAX_PLATFORMS": "cpu"}
    result = subprocess.run(
        [sys.executable, "-S", "-c", _IMPORTER, *modules],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "missing: none", (
        f"imported but declared in no extra that `pip install -e '.[test]'` installs: {result.stdout.strip()}"
    )
