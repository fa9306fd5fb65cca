"""Documentation generated from the registry: the README's op / since_version / dtype table.

``python -m jaxonnx._docs`` rewrites the table in README.md; a test checks it is current.
"""

from __future__ import annotations

import os
import re

from jaxonnx._core.registry import DEFAULT_DOMAIN, REGISTRY, get_op, supported_ops

_START, _END = "<!-- support-table:start -->", "<!-- support-table:end -->"

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


def support_table() -> str:
    """Markdown tables, one per domain (the default domain first), one row per op: its
    registered since_versions, whether it takes a size hint, and the element types of its
    data input in the newest version (from onnx's schema, or the op's own for domains onnx
    does not define; the data input is the formal with the widest type list)."""
    rows = _domain_table(DEFAULT_DOMAIN)
    for domain in sorted(REGISTRY.domains() - {DEFAULT_DOMAIN}):
        rows += ["", f"Domain `{domain}`:", ""] + _domain_table(domain)
    bodies = function_body_ops()
    if bodies:
        rows += ["", "Ops that jaxonnx does not register but runs through the function body onnx defines "
                     f"for them (at the model's opset, as onnxruntime does): {', '.join(bodies)}."]
    return "\n".join(rows)


def _domain_table(domain: str) -> list[str]:
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
        rows.append(f"| {op_type}{note} | {', '.join(map(str, versions))} | {_describe(types)} |")
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
    return sorted(name for name, schema in newest.items()
                  if name not in registered and (schema.has_function or schema.has_context_dependent_function))


def update_readme(path: str) -> bool:
    """Rewrites the table between the markers in ``path``; returns whether it changed."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    block = f"{_START}\n{support_table()}\n{_END}"
    new = re.sub(re.escape(_START) + ".*?" + re.escape(_END), lambda _: block, text, flags=re.S)
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return new != text


if __name__ == "__main__":
    readme = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
    print("README.md updated" if update_readme(readme) else "README.md already current")
