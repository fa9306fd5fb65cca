"""The README's commands match CI's, its quickstart runs and its links resolve; the docs'
"jit, gradients and vmap" example (once the README's) runs, on many devices and on one."""

import os
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
TRANSFORMATIONS = ROOT / "docs" / "guide" / "transformations.md"


def _slug(heading: str) -> str:
    """A heading's anchor as the docs site (Python-Markdown's toc) makes it, or its explicit `{ #id }`."""
    explicit = re.search(r"\{\s*#([\w.-]+)\s*\}\s*$", heading)
    if explicit:
        return explicit.group(1)
    text = re.sub(r"`|\*", "", heading).strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"[-\s]+", "-", text).strip("-")


def test_readme_links_resolve():
    links = re.findall(r"\]\(([^)\s]+)\)", README)
    assert links
    for link in links:
        if re.match(r"[a-z]+://", link):
            continue
        path, _, anchor = link.partition("#")
        target = (ROOT / path).resolve() if path else ROOT / "README.md"
        assert target.exists(), f"README links to {link}, which does not exist"
        if anchor and target.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), flags=re.M)
            assert anchor in {_slug(h) for h in headings}, f"README links to {link}: no such heading"


def test_readme_links_the_docs_op_table():
    assert "](docs/ops.md)" in README
    assert "<!-- support-table:start -->" not in README  # the table lives in docs/ops.md now


def test_readme_setup_commands():
    assert "pip install -e . && python -m jaxonnx" in README
    assert "pip install -e '.[docs]' && mkdocs serve" in README


def test_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = "pip install -q -e '.[test]' && python -m pytest -q -n 2"
    assert command in ci
    assert command in README


def _python_block_after(heading: str, text: str = README) -> str:
    section = text.split(heading, 1)[1]
    return section.split("```python", 1)[1].split("```", 1)[0]


def _transformations_block() -> str:
    return _python_block_after("# jit, gradients and vmap", TRANSFORMATIONS.read_text(encoding="utf-8"))


def test_docs_gradients_and_transformations_example_runs():
    namespace: dict = {}
    exec(compile(_transformations_block(), str(TRANSFORMATIONS), "exec"), namespace)
    # The fine-tuning step changed the weights, and vmap/sharding/export agree with eager.
    assert namespace["gx"].shape == (8, 3)
    assert namespace["ys"].shape == (2, 8, 3)
    (eager,) = namespace["model"](namespace["x"], namespace["keep"])
    (eager_tiled,) = namespace["model"](namespace["xs"], namespace["keeps"])
    import jax
    import numpy as np

    # The sharding part uses every device there is (8 virtual CPU devices here), not a fixed count.
    assert namespace["n_devices"] == len(jax.devices()) and namespace["xs"].shape == (8 * len(jax.devices()), 3)
    np.testing.assert_array_equal(np.asarray(namespace["y_sharded"]), np.asarray(eager_tiled))
    np.testing.assert_array_equal(np.asarray(namespace["y"]), np.asarray(eager))  # the exported model


def test_docs_gradients_example_runs_on_a_single_device():
    import subprocess
    import sys

    # A laptop or a one-GPU machine: one device, no XLA_FLAGS.
    code = (
        "import jax, sys; jax.config.update('jax_enable_x64', True); assert len(jax.devices()) == 1\n"
        "exec(compile(sys.stdin.read(), 'transformations.md', 'exec'), {})\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["JAX_PLATFORMS"] = "cpu"
    result = subprocess.run(
        [sys.executable, "-c", code],
        input=_transformations_block(),
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_readme_quickstart_runs():
    namespace: dict = {}
    exec(compile(_python_block_after("## Quickstart"), "README.md", "exec"), namespace)
    assert namespace["y"].shape == (1, 9)
    assert namespace["g"].shape == (4, 6)
