"""``jaxonnx check MODEL.onnx``: op counts, unsupported ops, and per node its op, resolved
version and support, read without loading the model."""

from __future__ import annotations

import difflib
import textwrap

from jaxonnx.cli.inputs import _read_model


def _walk(graph, prefix: str = ""):
    """``(path, node, in a subgraph?)`` of every node, subgraph bodies (GRAPH and GRAPHS attributes) right
    after the node that holds them. Paths name unnamed nodes as the interpreter does
    (``<op>_<index in its graph>``); a subgraph node's path starts with the holding node's,
    e.g. ``/If_0/then_branch/Add_2``."""
    from onnx import AttributeProto

    for index, node in enumerate(graph.node):
        name = node.name or f"{node.op_type}_{index}"
        path = f"{prefix}/{name}" if prefix else name
        yield path, node, bool(prefix)
        here = f"{prefix}/{name}"
        for attribute in node.attribute:
            if attribute.type == AttributeProto.GRAPH:
                yield from _walk(attribute.g, f"{here}/{attribute.name}")
            elif attribute.type == AttributeProto.GRAPHS:
                for i, body in enumerate(attribute.graphs):
                    yield from _walk(body, f"{here}/{attribute.name}[{i}]")


def _wrapped(lead: str, items: list[str], width: int = 100) -> str:
    """``lead`` and the comma-separated ``items`` in lines of at most ``width`` characters,
    never breaking inside an item (``Conv 12`` stays on one line)."""
    glued = [item.replace(" ", "\xa0") for item in items]  # textwrap breaks at ASCII spaces only
    text = textwrap.fill(lead + ", ".join(glued), width=width, subsequent_indent="  ", break_on_hyphens=False)
    return text.replace("\xa0", " ")


def _elide(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: the middle gives way to "...", since node
    names differ most at their ends (``/model/backbone/.../Conv_12``)."""
    if len(text) <= width:
        return text
    head = (width - 3) // 2
    return f"{text[:head]}...{text[len(text) - (width - 3 - head) :]}"


def _function_body(op_type: str, opset, domain: str):
    """``"Op-N (body)"`` when onnx defines ``op_type`` with a function body at ``opset``,
    which jaxonnx runs when it does not register the op; else None."""
    import onnx

    if opset is None:
        return None
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None
    # onnx's stub of OpSchema lacks these two properties, which the compiled class has.
    if schema.has_function or schema.has_context_dependent_function:  # type: ignore[attr-defined]
        return f"{op_type}-{schema.since_version} (body)"
    return None


def _check(args) -> int:
    import jaxonnx
    from jaxonnx._core.loading import canonical_domain, opset_versions
    from jaxonnx._errors import UnsupportedOpError

    proto = _read_model(args.model)
    opsets = opset_versions(proto)  # a domain imported twice is a ModelLoadError
    # As `load` does (and onnxruntime): a top-level node's domain the file imports no version of
    # runs at the newest registered one (convert_generation's T5 BeamSearch files, for one).
    for domain in sorted({canonical_domain(n.domain) for n in proto.graph.node} - set(opsets) - {""}):
        registered = [v for versions in jaxonnx.supported_ops(domain).values() for v in versions]
        if registered:
            opsets[domain] = max(registered)
    rows = []  # (path, op, resolved, status)
    in_subgraphs = 0
    op_counts: dict[str, int] = {}
    unsupported: dict[str, list[int]] = {}  # op -> [top-level nodes, subgraph nodes]
    local_functions = {(f.domain, f.name) for f in proto.functions}
    for path, node, nested in _walk(proto.graph):
        domain = canonical_domain(node.domain)
        op = node.op_type if not domain else f"{node.domain}.{node.op_type}"
        op_counts[op] = op_counts.get(op, 0) + 1
        try:
            if (node.domain, node.op_type) in local_functions:
                rows.append((path, op, "local function", "supported (the model's own function)"))
                in_subgraphs += nested
                continue
            body = _function_body(node.op_type, opsets.get(domain), domain)
            if body and node.op_type not in jaxonnx.supported_ops(domain):
                rows.append((path, op, body, "supported (onnx's function body)"))
                in_subgraphs += nested
                continue
            if domain not in opsets:
                raise UnsupportedOpError(f"the model imports no opset for the domain {node.domain!r}")
            if not jaxonnx.supported_ops(domain):
                raise UnsupportedOpError(f"jaxonnx knows no ops of the domain {node.domain!r}")
            if node.op_type not in jaxonnx.supported_ops(domain):
                raise UnsupportedOpError("jaxonnx does not implement this op")
            resolved = jaxonnx.get_op(node.op_type, opsets[domain], domain).name
            status = "supported"
        except UnsupportedOpError as error:
            resolved, status = "-", f"NOT supported: {error}"
            counts = unsupported.setdefault(op, [0, 0])
            counts[nested] += 1
        rows.append((path, op, resolved, status))
        in_subgraphs += nested

    top_level = len(rows) - in_subgraphs
    opset_text = ", ".join(f"{domain or 'ai.onnx'} {version}" for domain, version in opsets.items())
    print(
        f"{args.model}: opset {opset_text}; {top_level} node{'' if top_level == 1 else 's'}"
        + (f" and {in_subgraphs} more in subgraphs" if in_subgraphs else "")
        + f", {len(op_counts)} op types"
    )
    print(_wrapped("ops: ", [f"{op} {n}" for op, n in sorted(op_counts.items(), key=lambda item: (-item[1], item[0]))]))
    if unsupported:
        total = sum(sum(c) for c in unsupported.values())

        def where(top: int, sub: int) -> str:
            nodes = f"{top + sub} node{'s' if top + sub > 1 else ''}"
            return nodes if not sub else f"{nodes}, {sub} in subgraphs"

        ops = [
            f"{op} ({where(*c)})" for op, c in sorted(unsupported.items(), key=lambda item: (-sum(item[1]), item[0]))
        ]
        print(_wrapped(f"NOT supported: {total} of {len(rows)} nodes; ", ops))
    else:
        print("all nodes supported")
    print()
    widths = [
        min(max(len(header), *(len(row[i]) for row in rows)) if rows else len(header), limit)
        for i, (header, limit) in enumerate([("node", 48), ("op", 24), ("resolved", 24)])
    ]
    print(f"  {'node':<{widths[0]}}  {'op':<{widths[1]}}  {'resolved':<{widths[2]}}  status")
    for row in rows:
        cells = [_elide(cell, width).ljust(width) for cell, width in zip(row, widths)]
        print(f"  {'  '.join(cells)}  {row[3]}")
    if not unsupported:
        return 0
    for domain in sorted({op.rsplit(".", 1)[0] if "." in op else "" for op in unsupported}):
        # the ops of the unsupported ops' own domain, the near names first: the default
        # domain's 200 say nothing about a com.microsoft op
        known = list(jaxonnx.supported_ops(domain))
        missing = [op.rsplit(".", 1)[-1] for op in unsupported if (op.rsplit(".", 1)[0] if "." in op else "") == domain]
        near = list(dict.fromkeys(n for op in missing for n in difflib.get_close_matches(op, known, n=3, cutoff=0.6)))
        if near:
            print(f"near names in {domain or 'ai.onnx'}: {', '.join(near)}")
        print(
            _wrapped(f"jaxonnx supports in {domain or 'ai.onnx'}: ", known)
            if known
            else f"jaxonnx knows no ops of the domain {domain!r}"
        )
    return 1
