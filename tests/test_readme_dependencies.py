"""The README's quickstart and the docs' core examples run with only the dependencies
jaxonnx declares.

A fresh ``pip install -e .`` installs the declared dependencies and what they require, and
nothing else; the test suite's own extras (onnxruntime, ...) pull in more, which once hid
that ``jax.export`` serialization needs ``flatbuffers``. This runs the README's examples in
a subprocess in which importing any other third-party package fails, as it would there.
"""

from __future__ import annotations

import importlib.metadata
import os
import pathlib
import re
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _declared_closure() -> set[str]:
    """The import names of jaxonnx's declared dependencies and everything they require."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    seen: set[str] = set()
    todo = list(declared)
    while todo:
        name = re.split(r"[<>=!~\[; ]", todo.pop())[0].lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        try:
            todo += [r for r in importlib.metadata.requires(name) or [] if "extra ==" not in r]
        except importlib.metadata.PackageNotFoundError:
            continue
    modules = {"jaxonnx"}
    for module, distributions in importlib.metadata.packages_distributions().items():
        if any(d.lower().replace("_", "-") in seen for d in distributions):
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


def _only_declared(tmp_path: pathlib.Path) -> pathlib.Path:
    """A folder holding (as links) just the declared dependencies' modules: with Python's
    site-packages switched off (``-S``), it is all the third-party code there is."""
    site = tmp_path / "site"
    site.mkdir()
    allowed = _declared_closure() - {"jaxonnx"}
    for root in map(pathlib.Path, sys.path):
        if root.name != "site-packages" or not root.is_dir():
            continue
        for entry in root.iterdir():
            top = entry.name.split(".", 1)[0]
            if top in allowed and not (site / entry.name).exists():
                (site / entry.name).symlink_to(entry)
    return site


def test_the_readme_examples_need_only_declared_dependencies(tmp_path):
    site = _only_declared(tmp_path)
    env = {"PYTHONPATH": f"{ROOT}{os.pathsep}{site}", "PATH": os.environ.get("PATH", ""), "JAX_PLATFORMS": "cpu"}
    result = subprocess.run(
        [sys.executable, "-S", "-c", _RUNNER, str(ROOT)],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path, env=env,
    )
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]
