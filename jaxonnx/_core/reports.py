"""What loading a model tells its user: the nodes jaxonnx cannot run, in one error that
names them all (:func:`unsupported_nodes`, :func:`unsupported_message`), and the
X64Warning listing the 64-bit values that compute in 32 bits, once per process."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import onnx

from jaxonnx._core.dtypes import X64_ON_HINT, is_narrowed, jax_dtype, onnx_type_name, x64_enabled
from jaxonnx._core.graph import Environment, Graph
from jaxonnx._core.loading import check_text, opset_versions
from jaxonnx._core.registry import REGISTRY, Registry
from jaxonnx._core.types import ValueType
from jaxonnx._errors import X64Warning


def unsupported_nodes(model: onnx.ModelProto, *, registry: Registry | None = None) -> list[str]:
    """The nodes of ``model`` (subgraphs and functions included) whose ops jaxonnx cannot
    run, one sentence each; empty when it runs them all (registered ops, the model's local
    functions, and ops that onnx defines with a function body).

    Example:
        >>> jaxonnx.unsupported_nodes(onnx.load(jaxonnx.demo_model_path()))
        []
    """
    check_text(model)
    functions = {(f.domain, f.name): f for f in model.functions}
    return find_unsupported(model.graph, Environment(opset_versions(model), registry or REGISTRY, functions))


def find_unsupported(graph: onnx.GraphProto, env: Environment) -> list[str]:
    """Every node, at any depth, whose op nothing runs (as sentences): a dry run of
    preparing the graph that reads no tensor data."""
    Graph.prepare(graph, env, read_initializers=False)
    return env.problems


def unsupported_message(problems: list[str], opsets: Mapping[str, int]) -> str:
    """One error for every unsupported op of a model: the ops with their node counts first,
    then the nodes, and the ways out."""
    counts: dict[str, int] = {}
    for problem in problems:
        op = problem.split("(", 1)[1].split(")", 1)[0].split(",")[0]
        counts[op] = counts.get(op, 0) + 1
    ops = ", ".join(f"{op} ({n} node{'s' if n > 1 else ''})" for op, n in counts.items())
    opset_text = ", ".join(f"{domain or 'ai.onnx'} {version}" for domain, version in sorted(opsets.items()))
    shown = problems[:10] + ([f"... and {len(problems) - 10} more"] if len(problems) > 10 else [])
    return (
        f"The model uses ops jaxonnx does not support: {ops} (opsets: {opset_text}). The nodes: "
        + "; ".join(shown)
        + ". The docs' support table (docs/ops.md) lists what jaxonnx runs, `python -m jaxonnx check MODEL.onnx` "
        "shows every node, and `jaxonnx.register` supplies a missing op yourself (see docs/guide/loading.md)."
    )


def warn_if_narrowed(graph_name: str, inputs: Sequence[ValueType], outputs: Sequence[ValueType]) -> None:
    """One X64Warning listing the 64-bit graph inputs and outputs, if x64 is off (called by
    ``Model.__init__``, whose caller the warning points at)."""
    if x64_enabled():
        return
    narrowed_values = [
        f"{kind} {t.name!r} ({onnx_type_name(t.dtype)} as {onnx_type_name(jax_dtype(t.dtype))})"
        for kind, values in (("input", inputs), ("output", outputs))
        for t in values
        if t.dtype is not None and is_narrowed(t.dtype)
    ]
    if narrowed_values and _x64_warning_due():
        warnings.warn(
            f"`jax_enable_x64` is off: the model {graph_name!r} computes {', '.join(narrowed_values)} in 32 "
            f"bits (integer inputs that do not fit raise); {X64_ON_HINT}.",
            X64Warning,
            stacklevel=4,
        )


_X64_WARNED: list[bool] = []  # whether this process has shown an X64Warning under the default filters


def _x64_warning_due() -> bool:
    """Whether to warn: once per process under Python's default filters (each model of an
    LLM's session would repeat it), every time where a filter asks for every one ("always",
    "error", as tests and ``pytest.warns`` set)."""
    action = warnings.defaultaction  # type: ignore[attr-defined]  # exists at run time; typeshed leaves it out
    for filter_action, message, category, module, _ in warnings.filters:
        if (
            issubclass(X64Warning, category)
            and (message is None or message.pattern in ("", ".*"))
            and (module is None or module.pattern in ("", ".*"))
        ):
            action = filter_action
            break
    if action in ("always", "error", "ignore"):
        return True  # "ignore" is warnings' own to apply
    first = not _X64_WARNED
    _X64_WARNED.append(True)
    return first
