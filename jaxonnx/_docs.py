"""Documentation generated from the registry: the docs site's op / since_version / dtype
table (docs/ops.md), its API reference of ``jaxonnx.ops`` (docs/api/ops.md), and the type
stub ``jaxonnx/ops/__init__.pyi`` through which IDEs and type checkers see ``jaxonnx.ops``
(which fills its namespace at import).

``python -m jaxonnx._docs`` rewrites all three; tests/test_docs.py checks they are current.
"""

from __future__ import annotations

import inspect
import os
import re

from jaxonnx._core.registry import DEFAULT_DOMAIN, REGISTRY, get_op, supported_ops

_START, _END = "<!-- support-table:start -->", "<!-- support-table:end -->"
_API_START, _API_END = "<!-- ops-reference:start -->", "<!-- ops-reference:end -->"
# Where docs/ops.md links an op: its entry in the API reference, by the public function's name.
_API_PAGE = "api/ops.md"

# In the order they are listed; a group whose types are all allowed gets one short label.
_GROUPS = [
    ("bool", ["bool"]),
    ("int8–int64", ["int8", "int16", "int32", "int64"]),
    ("uint8–uint64", ["uint8", "uint16", "uint32", "uint64"]),
    ("float16, float, double", ["float16", "float", "double"]),
    ("bfloat16", ["bfloat16"]),
    ("complex64/128", ["complex64", "complex128"]),
    ("float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz)", ["float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"]),
    ("float8e8m0", ["float8e8m0"]),
    ("int4/uint4", ["int4", "uint4"]),
    ("float4e2m1", ["float4e2m1"]),
    ("int2/uint2", ["int2", "uint2"]),
    ("string (eager only)", ["string"]),
]


def _describe(types: set[str]) -> str:
    parts = []
    for label, group in _GROUPS:
        present = [t for t in group if t in types]
        parts += [label] if len(present) == len(group) else present
    parts += sorted(types - {t for _, group in _GROUPS for t in group})
    return ", ".join(parts)


def public_functions() -> dict[tuple[str, str], str]:
    """``{(domain, op_type): name}`` of the ops that ``jaxonnx.ops`` exports as ``jaxonnx.ops.<name>``."""
    import jaxonnx.ops

    names = {}
    for name in jaxonnx.ops.__all__:
        op = getattr(getattr(jaxonnx.ops, name), "onnx_op", None)
        if op is not None:
            names.setdefault((op.domain, op.op_type), name)
    return names


def support_table() -> str:
    """Markdown tables, one per domain (the default domain first), one row per op: its
    registered since_versions, whether it takes a size hint, and the element types of its
    data input in the newest version (from onnx's schema, or the op's own for domains onnx
    does not define; the data input is the formal with the widest type list). An op that
    ``jaxonnx.ops`` exports links to its entry in the API reference."""
    rows = ["## The default domain (ai.onnx) { #domain-ai-onnx }", ""] + _domain_table(DEFAULT_DOMAIN)
    for domain in sorted(REGISTRY.domains() - {DEFAULT_DOMAIN}):
        anchor = "domain-" + re.sub(r"[^a-z0-9]+", "-", domain.lower())
        rows += ["", f"## Domain `{domain}` {{ #{anchor} }}", ""] + _domain_table(domain)
    bodies = function_body_ops()
    if bodies:
        rows += [
            "",
            "Ops that jaxonnx does not register but runs through the function body onnx defines "
            f"for them (at the model's opset, as onnxruntime does): {', '.join(bodies)}.",
        ]
    return "\n".join(rows)


def _domain_table(domain: str) -> list[str]:
    public = public_functions()
    rows = [
        "| Op | since_versions | element types of the data input (newest version) |",
        "|---|---|---|",
    ]
    for op_type, versions in supported_ops(domain).items():
        op = get_op(op_type, max(versions), domain)
        schema = op.schema
        constraints = {c.type_param_str: c.allowed_type_strs for c in schema.type_constraints}
        formals = schema.outputs if not schema.inputs else schema.inputs
        allowed = max((constraints.get(f.type_str, [f.type_str]) for f in formals), key=len)
        types = {t[len("tensor(") : -1] for t in allowed if t.startswith("tensor(")}
        note = " (size hint)" if op.takes_size_hint else ""
        name = public.get((domain, op_type))
        label = f"[{op_type}]({_API_PAGE}#{name})" if name else op_type
        rows.append(f"| {label}{note} | {', '.join(map(str, versions))} | {_describe(types)} |")
    return rows


def function_body_ops() -> list[str]:
    """The default-domain ops onnx defines with a function body that jaxonnx does not
    register (it runs them through that body)."""
    import onnx.defs

    newest: dict[str, onnx.defs.OpSchema] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain in ("", "ai.onnx") and not schema.deprecated:
            if schema.name not in newest or schema.since_version > newest[schema.name].since_version:
                newest[schema.name] = schema
    registered = supported_ops()
    return sorted(
        name
        for name, schema in newest.items()
        if name not in registered and (schema.has_function or schema.has_context_dependent_function)
    )


def ops_reference() -> str:
    """The API reference of ``jaxonnx.ops``: one entry per public name, headed by its
    signature, with its docstring rendered by mkdocstrings from the module that defines it."""
    import jaxonnx.ops

    entries = []
    for name in jaxonnx.ops.__all__:
        function = getattr(jaxonnx.ops, name)
        op = getattr(function, "onnx_op", None)
        what = f"ONNX {op.op_type}" + (f" ({op.domain})" if op.domain else "") if op else "helper"
        entries += [
            f"## `{name}` {{ #{name} }}",
            "",
            f"```py\njaxonnx.ops.{name}{inspect.signature(function)}\n```",
            "",
            f"::: {function.__module__}.{function.__qualname__}",
            "    options:",
            "      show_root_heading: false",
            "      show_root_toc_entry: false",
            "",
            f"<small>{what}</small>",
            "",
        ]
    return "\n".join(entries).rstrip("\n")


def ops_stub() -> str:
    """The text of ``jaxonnx/ops/__init__.pyi``: every name of ``jaxonnx.ops``, imported
    explicitly from the module that defines it, so that an IDE finds its signature and
    docstring."""
    import jaxonnx.ops

    lines = [
        '"""Type stub of :mod:`jaxonnx.ops`, generated by ``python -m jaxonnx._docs``: do not edit."""',
        "",
    ]
    for name in jaxonnx.ops.__all__:
        module = getattr(jaxonnx.ops, name).__module__
        lines.append(f"from {module} import {name} as {name}")
    lines += ["", "__all__ = ["] + [f'    "{name}",' for name in jaxonnx.ops.__all__] + ["]", ""]
    return "\n".join(lines)


def _replace_between(path: str, start: str, end: str, body: str) -> bool:
    """Rewrites the text between the markers in ``path``; returns whether it changed."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if start not in text or end not in text:
        raise ValueError(f"{path} has no {start} ... {end} markers.")
    block = f"{start}\n{body}\n{end}"
    new = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return new != text


def update_docs(docs_dir: str) -> list[str]:
    """Rewrites the generated parts of the docs site; returns the files that changed."""
    changed = []
    for page, start, end, body in [
        ("ops.md", _START, _END, support_table()),
        (os.path.join("api", "ops.md"), _API_START, _API_END, ops_reference()),
    ]:
        if _replace_between(os.path.join(docs_dir, page), start, end, body):
            changed.append(os.path.join("docs", page))
    stub = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops", "__init__.pyi")
    text = ops_stub()
    if not os.path.exists(stub) or open(stub, encoding="utf-8").read() != text:
        with open(stub, "w", encoding="utf-8") as f:
            f.write(text)
        changed.append("jaxonnx/ops/__init__.pyi")
    return changed


if __name__ == "__main__":
    docs = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")
    changed = update_docs(docs)
    print(
        f"updated {', '.join(changed)}"
        if changed
        else "docs/ops.md, docs/api/ops.md and jaxonnx/ops/__init__.pyi already current"
    )
