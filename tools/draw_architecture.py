"""Draws docs/assets/architecture.svg, the picture on docs/design.md.

The boxes name the modules of the tree as it is: a box names a module by its path
(``jaxonnx/_core/model.py``) or, after a path, by its name in that path's folder
(``planning.py``). ``tests/test_design_picture.py`` checks that every module the picture
names exists and that every module of the package is named (the op families by
``jaxonnx/ops/_family/``), so a move or a new module that leaves the picture stale fails.
Run ``python tools/draw_architecture.py`` after changing the boxes below.
"""

from __future__ import annotations

import html
import pathlib
import re

WIDTH, HEIGHT = 1100, 740
INK = "#455a64"
NOTE = "#37474f"
FILLS = {
    "op": "#fff3e0",
    "load": "#e3f2fd",
    "model": "#e8f5e9",
    "call": "#fce4ec",
    "beside": "#f3e5f5",
    "user": "#eceff1",
}

# name: (x, y, width, height, fill, title, lines)
BOXES = {
    "op": (
        20,
        40,
        300,
        90,
        "op",
        "jaxonnx/ops/_family/op.py",
        [
            '@register("Op", 13, 18, static=..., padding=...,',
            "layout=..., weights=...): one pure function;",
            "its contract and traits, beside it",
            "shared code: jaxonnx/ops/_helpers/",
        ],
    ),
    "registry": (
        400,
        40,
        300,
        90,
        "op",
        "Registry: jaxonnx/_core/registry.py",
        [
            "(domain, op) → since_versions → OpVersion",
            "OpContract: jaxonnx/_core/contract.py",
            "needs read off the function's signature",
        ],
    ),
    "file": (20, 185, 130, 70, "user", "an .onnx file,", ["bytes or", "ModelProto"]),
    "load": (170, 185, 200, 70, "load", "load()", ["jaxonnx/_core/loading.py,", "preparation.py"]),
    "prepare": (
        390,
        185,
        250,
        70,
        "load",
        "Graph.prepare",
        ["jaxonnx/_core/graph.py: ops resolved,", "subgraphs, initializers; types.py,", "dtypes.py: declared types"],
    ),
    "model": (
        660,
        170,
        420,
        100,
        "model",
        "Model: jaxonnx/_core/model.py (a façade)",
        [
            "planning.py: eager plan, one compiled graph",
            "params.py: which initializers are params (weights= traits)",
            "serialization.py: save, to_proto · reports.py: unsupported ops",
            "a pytree: params are leaves, the graph is static",
        ],
    ),
    "run": (
        860,
        350,
        220,
        66,
        "model",
        "Graph.run → run_node",
        ["jaxonnx/_core/graph.py", "model(x), jit, grad, vmap"],
    ),
    "context": (600, 350, 230, 66, "call", "OpContext", ["jaxonnx/_core/context.py", "node, size, rng, checks, ..."]),
    "contract": (
        300,
        350,
        270,
        66,
        "call",
        "OpVersion(...)",
        [
            "jaxonnx/_core/conversion.py: static → numpy",
            "schema_checks.py: types, attributes",
        ],
    ),
    "function": (
        20,
        350,
        250,
        66,
        "op",
        "the op function",
        ["jax.numpy / lax / numpy, its needs as", "parameters; jaxonnx/_platform.py", "picks a platform's formulation"],
    ),
    "checks": (340, 450, 230, 52, "beside", "deferred checks", ["jaxonnx/_core/checks.py (checked=)"]),
    "padding": (600, 450, 230, 52, "beside", "padding marks", ["jaxonnx/_core/padding.py (padding=)"]),
    "layout": (860, 450, 220, 52, "beside", "channels-last values", ["jaxonnx/_core/layout.py (layout=)"]),
    "generation": (
        20,
        555,
        250,
        66,
        "user",
        "jaxonnx/generation/",
        ["cache.py, sampling.py, decode.py,", "prompts.py, loading.py"],
    ),
    "finetuning": (
        290,
        555,
        250,
        66,
        "user",
        "jaxonnx/finetuning/",
        ["adapters.py (lora), loss.py,", "requantize.py"],
    ),
    "cli": (
        560,
        555,
        250,
        66,
        "user",
        "jaxonnx/cli/",
        ["run.py, check.py, bench.py, generate.py,", "demo.py, inputs.py, hints.py, errors.py"],
    ),
    "backend": (830, 555, 250, 66, "user", "jaxonnx/backend.py", ["onnx.backend on run_node"]),
    "api": (
        20,
        665,
        250,
        62,
        "user",
        "jaxonnx/__init__.py",
        ["the public API, re-exported", "__main__.py: python -m jaxonnx", "_errors.py: the errors and warnings"],
    ),
    "tuning": (
        290,
        665,
        250,
        62,
        "user",
        "set at import",
        ["jaxonnx/_xla_cpu.py: XLA:CPU's flags", "_tuning.py: glibc's allocator"],
    ),
    "docs": (
        560,
        665,
        250,
        62,
        "user",
        "jaxonnx/_docs.py",
        ["the op table, op reference and", "ops stub, from the registry"],
    ),
    "examples": (
        830,
        665,
        250,
        62,
        "user",
        "bundled models",
        ["jaxonnx/_demo.py, _examples.py,", "data/: the demo and examples"],
    ),
}

# (from, to, label, side of from, side of to)
ARROWS = [
    ("op", "registry", "register at import", "right", "left"),
    ("registry", "prepare", "resolve", "bottom", "top"),
    ("file", "load", "", "right", "left"),
    ("load", "prepare", "", "right", "left"),
    ("prepare", "model", "", "right", "left"),
    ("model", "run", "a call", "bottom", "top"),
    ("run", "context", "", "left", "right"),
    ("context", "contract", "", "left", "right"),
    ("contract", "function", "", "left", "right"),
]
DASHED = [("run", "checks"), ("run", "padding"), ("run", "layout")]


def _anchor(name: str, side: str) -> tuple[float, float]:
    x, y, w, h = BOXES[name][:4]
    return {
        "left": (x, y + h / 2),
        "right": (x + w, y + h / 2),
        "top": (x + w / 2, y),
        "bottom": (x + w / 2, y + h),
    }[side]


def _box(x, y, w, h, fill, title, lines) -> list[str]:
    parts = [
        f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="8" fill="{FILLS[fill]}" stroke="{INK}" stroke-width="1.2"/>'
    ]
    top = y + h / 2 - 7.5 * len(lines) + 4
    parts.append(
        f'<text x="{x + w / 2}" y="{top}" font-size="13" text-anchor="middle" font-weight="bold">{html.escape(title)}</text>'
    )
    for i, line in enumerate(lines):
        parts.append(
            f'<text x="{x + w / 2}" y="{top + 15 * (i + 1)}" font-size="11" text-anchor="middle">{html.escape(line)}</text>'
        )
    return parts


def svg() -> str:
    """The picture, as SVG text."""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        'font-family="Helvetica, Arial, sans-serif">',
        "<title>jaxonnx architecture: ops declare their contract and traits at register; load prepares a graph "
        "with ops resolved from the registry; a call runs each node through its context and contract; "
        "generation, fine-tuning, the CLI and the backend build on Model and run_node</title>",
        f'<defs><marker id="a" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{INK}"/></marker></defs>',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="20" y="24" font-size="12" fill="{NOTE}">at import and at load: prepared once</text>',
        f'<line x1="10" y1="300" x2="{WIDTH - 10}" y2="300" stroke="#b0bec5" stroke-dasharray="6 4"/>',
        f'<text x="20" y="330" font-size="12" fill="{NOTE}">at each call (eager, or traced under jax.jit)</text>',
        f'<line x1="10" y1="522" x2="{WIDTH - 10}" y2="522" stroke="#b0bec5" stroke-dasharray="6 4"/>',
        f'<text x="20" y="545" font-size="12" fill="{NOTE}">built on Model and run_node</text>',
        f'<line x1="10" y1="635" x2="{WIDTH - 10}" y2="635" stroke="#b0bec5" stroke-dasharray="6 4"/>',
        f'<text x="20" y="655" font-size="12" fill="{NOTE}">around them: the package\'s face, its settings at import, '
        "its generated docs and bundled models</text>",
    ]
    for x, y, w, h, fill, title, lines in BOXES.values():
        parts += _box(x, y, w, h, fill, title, lines)
    for start, end, label, side_from, side_to in ARROWS:
        (x1, y1), (x2, y2) = _anchor(start, side_from), _anchor(end, side_to)
        parts.append(
            f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{INK}" stroke-width="1.5" marker-end="url(#a)"/>'
        )
        if label:
            horizontal = y1 == y2
            x, y = ((x1 + x2) / 2, y1 - 8) if horizontal else ((x1 + x2) / 2 + 8, (y1 + y2) / 2)
            anchor = "middle" if horizontal else "start"
            parts.append(f'<text x="{x}" y="{y}" font-size="11" text-anchor="{anchor}" fill="{NOTE}">{label}</text>')
    for start, end in DASHED:
        (x1, y1), (x2, y2) = _anchor(start, "bottom"), _anchor(end, "top")
        parts.append(
            f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{INK}" stroke-width="1.2" stroke-dasharray="4 3" '
            'marker-start="url(#a)" marker-end="url(#a)"/>'
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def named_paths() -> list[str]:
    """Every path the picture names, as ``jaxonnx/...``: a box's full paths, and the bare
    names (``planning.py``, ``data/``) after one, in the folder of the path before them
    (checked by tests/test_design_picture.py)."""
    paths = set()
    for name, box in BOXES.items():
        folder = None
        for word in (w.strip(",:;()") for text in (box[5], *box[6]) for w in text.split()):
            if word.startswith("jaxonnx/"):
                paths.add(word)
                folder = word if word.endswith("/") else word.rsplit("/", 1)[0] + "/"
            elif re.fullmatch(r"[\w.]+\.py|\w+/", word):
                if folder is None:
                    raise ValueError(f"box {name!r} names {word!r} before any jaxonnx/... path to place it in")
                paths.add(folder + word)
    return sorted(paths)


if __name__ == "__main__":
    target = pathlib.Path(__file__).resolve().parents[1] / "docs" / "assets" / "architecture.svg"
    target.write_text(svg())
    print(f"wrote {target}")
