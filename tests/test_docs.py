"""The docs site stays true: it builds in strict mode (broken links, missing anchors or
references and any warning fail), its generated pages match the registry, every public
name has a reference entry with an example, and the code of its pages runs.

Code blocks fenced ```python run, page by page in order, each page in one fresh namespace
and from an empty temporary folder (a page reaches its files through jaxonnx or makes
them); a page's ```bash blocks that run the `jaxonnx` command run after them, in that same
folder. Pages are read as mkdocs reads them, snippet includes resolved, so CONTRIBUTING.md's
blocks run as docs/contributing.md. Blocks fenced ```py are sketches (a file that is not
there, a registration with `...` for its body) and are not run, nor are other shell blocks
(installs, the suite, serving the site).
"""

from __future__ import annotations

import html
import os
import pathlib
import re
import shlex
import subprocess
import sys
import textwrap
import urllib.parse

import pytest

import jaxonnx
from jaxonnx._docs import ops_reference, ops_stub, support_table

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# Pages whose ```python blocks run elsewhere, and why.
RUN_ELSEWHERE = {
    "guide/scaling-out.md": "a program for two processes: tests/test_distributed.py runs it so",
}


def _page_text(page: str) -> str:
    """The page as mkdocs reads it: each `--8<-- "FILE"` line (pymdownx.snippets, its base
    path the repository root) replaced by that file."""
    text = (DOCS / page).read_text(encoding="utf-8")
    return re.sub(r'^--8<-- "([^"]+)"$', lambda m: (ROOT / m.group(1)).read_text(encoding="utf-8"), text, flags=re.M)


def _blocks(text: str, language: str) -> list[str]:
    """The blocks fenced ```language, a list item's indented ones too, dedented."""
    return [
        textwrap.dedent(body) for body in re.findall(rf"^[ \t]*```{language}\n(.*?)^[ \t]*```", text, flags=re.S | re.M)
    ]


def _python_blocks(text: str) -> list[str]:
    return _blocks(text, "python")


def _command_blocks(text: str) -> list[str]:
    """The ```bash blocks that run the jaxonnx command (not installs, the suite or mkdocs)."""
    return [b for b in _blocks(text, "bash") if re.search(r"^jaxonnx ", b, flags=re.M)]


def _pages_with_code() -> list[str]:
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    return [
        p for p in pages if p not in RUN_ELSEWHERE and (_python_blocks(_page_text(p)) or _command_blocks(_page_text(p)))
    ]


def test_the_pages_with_code_include_contributing_and_the_commands():
    pages = _pages_with_code()
    assert {"contributing.md", "guide/cli.md", "guide/generation.md"} <= set(pages)
    assert _command_blocks(_page_text("guide/cli.md")) and _python_blocks(_page_text("contributing.md"))


def test_the_site_builds_strictly(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", JAX_PLATFORMS="cpu")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    site = tmp_path / "site"
    # The pages a reader reaches first are there, the notebooks with their figures.
    assert (site / "index.html").is_file() and (site / "api" / "ops.html").is_file()
    notebook = (site / "notebooks" / "02_gradients.html").read_text(encoding="utf-8")
    assert "data:image/png;base64" in notebook
    assert 'href="api/ops.html#slice"' in (site / "ops.html").read_text(encoding="utf-8")
    assert _broken_links(site) == []


def _broken_links(site: pathlib.Path) -> list[str]:
    """Links between the built pages (the nav, the op table's, the notebooks') whose file or
    anchor is missing. 404.html is left out: it links from the server's root."""
    anchors: dict[pathlib.Path, set[str]] = {}
    broken = []
    for page in sorted(site.rglob("*.html")):
        if page.name == "404.html":
            continue
        for href in re.findall(r'\bhref="([^"]+)"', page.read_text(encoding="utf-8")):
            href = html.unescape(href)
            if re.match(r"[a-z]+:|//", href):
                continue
            path, _, anchor = href.partition("#")
            target = (page.parent / urllib.parse.unquote(path)).resolve() if path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(site)}: {href}")
            elif anchor and target.suffix == ".html":
                if target not in anchors:
                    anchors[target] = set(re.findall(r'\bid="([^"]+)"', target.read_text(encoding="utf-8")))
                if urllib.parse.unquote(anchor) not in anchors[target]:
                    broken.append(f"{page.relative_to(site)}: {href}")
    return broken


def test_the_generated_pages_match_the_registry():
    stale = "is stale: run `python -m jaxonnx._docs`."
    assert support_table() in (DOCS / "ops.md").read_text(encoding="utf-8"), f"docs/ops.md {stale}"
    assert ops_reference() in (DOCS / "api" / "ops.md").read_text(encoding="utf-8"), f"docs/api/ops.md {stale}"
    stub = ROOT / "jaxonnx" / "ops" / "__init__.pyi"
    assert stub.read_text(encoding="utf-8") == ops_stub(), f"jaxonnx/ops/__init__.pyi {stale}"


def test_every_op_function_links_from_the_table_to_its_entry():
    table, reference = support_table(), ops_reference()
    for anchor in re.findall(r"\]\(api/ops\.md#(\w+)\)", table):
        assert f"{{ #{anchor} }}" in reference, anchor
    assert len(re.findall(r"\]\(api/ops\.md#", table)) >= 200  # most ops are public functions


def test_every_public_name_has_a_reference_entry_with_an_example():
    page = (DOCS / "api" / "index.md").read_text(encoding="utf-8")
    entries = re.split(r"^::: ", page, flags=re.M)[1:]
    documented = {entry.split(None, 1)[0]: entry for entry in entries}
    for name in jaxonnx.__all__:
        assert f"jaxonnx.{name}" in documented, f"docs/api/index.md has no entry for jaxonnx.{name}"
        docstring = getattr(jaxonnx, name).__doc__ or ""
        example_in_docstring = ">>>" in docstring
        # The entry's own text runs up to the next entry: an example there is a ```python block.
        assert example_in_docstring or "```python" in documented[f"jaxonnx.{name}"], (
            f"jaxonnx.{name} has an example neither in its docstring nor on docs/api/index.md"
        )


@pytest.mark.parametrize("page", _pages_with_code())
def test_the_code_of_the_page_runs(page, monkeypatch, tmp_path):
    # From an empty folder, as a reader runs it: a page names the files it reads through
    # jaxonnx (`example_path`, `demo_model_path`) or makes them, never relative to a checkout.
    folder = tmp_path / "reader"
    folder.mkdir()
    monkeypatch.chdir(folder)
    text = _page_text(page)
    namespace: dict = {}
    exec("import jax, jax.numpy as jnp, numpy as np, jaxonnx", namespace)  # what the API page says it starts with
    for number, block in enumerate(_python_blocks(text), 1):
        exec(compile(block, f"docs/{page} (block {number})", "exec"), namespace)
    commands = _command_blocks(text)
    if commands:
        env = _command_environment(tmp_path / "bin")
        for number, block in enumerate(commands, 1):
            result = subprocess.run(
                ["bash", "-e", "-o", "pipefail", "-c", block],
                cwd=folder,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            assert result.returncode == 0, f"docs/{page} (bash block {number}):\n{block}\n{result.stderr[-3000:]}"


def _command_environment(bin_folder: pathlib.Path) -> dict[str, str]:
    """An environment whose `python` and `jaxonnx` are this interpreter and this checkout's
    package, whatever the PATH holds."""
    bin_folder.mkdir()
    for name, command in (("python", ""), ("jaxonnx", " -m jaxonnx")):
        script = bin_folder / name
        script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)}{command} "$@"\n')
        script.chmod(0o755)
    python_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PATH=f"{bin_folder}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=python_path)


def test_getting_started_states_no_figure_the_readme_contradicts():
    # The suite's size and time change every turn; the README is the one place that says them.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    figures = re.findall(
        r"(\d[\d,.]*)\s+(tests|minutes|seconds)", (DOCS / "getting-started.md").read_text(encoding="utf-8")
    )
    assert [f for f in figures if " ".join(f) not in readme] == []


def _map_sections(block: str) -> dict[str, set[str]]:
    """The names in each folder's part of CONTRIBUTING's map: a line indented two spaces
    names an entry of the package ("" for the package itself) and, when it is a folder,
    opens that folder's part, which runs over the lines indented deeper below it."""
    sections: dict[str, set[str]] = {"": set()}
    folder = ""
    for line in block.splitlines()[1:]:  # below "jaxonnx/"
        names = set(re.findall(r"[\w.]+/?", line))
        if line.startswith("  ") and not line.startswith("   "):
            head = line.split()[0]
            sections[""] |= names
            folder = head.rstrip("/") if head.endswith("/") else ""
            if folder:
                sections[folder] = set()
        elif folder:
            sections[folder] |= names
    return sections


def test_contributing_map_matches_the_tree():
    # The layout map in CONTRIBUTING.md names every module and folder of the package and of
    # each of its subpackages (the op families as folders), each in its own folder's part,
    # and nothing that is not there. An empty __init__.py only marks a package.
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    block = text.split("## The layout", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    sections = _map_sections(block)
    package = ROOT / "jaxonnx"
    folders = {"": package} | {p.name: p for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert set(folders) == set(sections), f"CONTRIBUTING's map has parts for {sorted(sections)}"
    for name, folder in folders.items():
        present = {
            p.name + ("/" if p.is_dir() else "")
            for p in folder.iterdir()
            if p.name != "__pycache__" and not (name and p.name == "__init__.py" and p.stat().st_size == 0)
        }
        where = f"jaxonnx/{name}/" if name else "jaxonnx/"
        assert present - sections[name] == set(), (
            f"CONTRIBUTING's map of {where} leaves out {sorted(present - sections[name])}"
        )
        files = {n for n in sections[name] if n.endswith((".py", ".pyi", "/")) or n == "py.typed"}
        missing = {n for n in files if not (folder / n.rstrip("/")).exists()}
        assert missing == set(), f"CONTRIBUTING's map of {where} names {sorted(missing)}, which are not there"
