"""Checks of values that an op meets traced, made after the computation: how an eager call
compiles a whole graph and still raises on an index out of range.

An op such as Gather reads its indices at trace time where they are known, to raise on one
out of range; traced (under ``jax.jit``) it clamps them, as XLA does. An eager call of a
model whose indices come from its inputs (an embedding's token ids) used to run op by op to
keep that error, far slower than compiled (measured:
``benchmarks/cpu_formulations_results.md``, section 10). Instead the eager call compiles the
graph with a :class:`DeferredChecks` in each node's
:class:`~jaxonnx._core.context.OpContext` (ops whose contract sets ``checks``): the op
appends, at trace time, a traced flag of the positions that fail, with the values and a
message; the executable returns the flags beside the graph's outputs, and the call raises
the first failing check's error after the computation: the error a run of the node on the
known values raises, naming the node and its inputs, with the op's own error as its cause.
Values the checks pass are computed exactly as before.

Example:
    >>> import jaxonnx
    >>> from jaxonnx._core.checks import DeferredChecks
    >>> checks = DeferredChecks()
    >>> def f(indices):
    ...     checks.for_node("Node 'g' (Gather-13, inputs indices: int32[2]) failed", "Gather-13").fail_where(
    ...         indices >= 3, indices, "got index {value} at position {position} of `indices`, outside [-3, 2].")
    ...     return checks.flags()
    >>> flags = jax.jit(f)(jnp.array([0, 5]))
    >>> checks.raise_failed(flags)
    Traceback (most recent call last):
    ...
    jaxonnx._errors.OnnxValidationError: Node 'g' (Gather-13, inputs indices: int32[2]) failed: Gather-13 got index 5 at position (1,) of `indices`, outside [-3, 2].
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxonnx._errors import OnnxValidationError


class DeferredChecks:
    """The checks one trace of a graph defers, in the order the ops made them."""

    def __init__(self):
        self._messages: list[tuple[str, str, str]] = []  # (node context, op name, message) per check
        self._traced: list[tuple[Any, Any, dict]] = []  # (failing positions, values, fields) per check
        self._shapes: list[tuple[int, ...]] = []  # the shape of each check's positions

    def for_node(self, context: str, op_name: str) -> NodeChecks:
        """What one node's ops append to: its errors read ``{context}: {op_name} {message}``,
        as the graph runner names a node that fails (``context``, e.g. "Node 'g' (Gather-13,
        inputs ...) failed") in front of the op's own error (``op_name``, e.g. "Gather-13")."""
        return NodeChecks(self, context, op_name)

    def flags(self) -> tuple:
        """The traced results of the checks: whether each check fails anywhere (one array,
        read back in one transfer), and per check the first failing position (flat), the
        value there and the message's other fields (read only when it failed)."""
        if not self._traced:
            return ()
        failed, details = [], []
        for failing, values, fields in self._traced:
            flat = failing.reshape(-1)
            first = jnp.argmax(flat)
            failed.append(jnp.any(flat))
            details.append((first, jnp.asarray(values).reshape(-1)[first] if flat.size else first, fields))
        return jnp.stack(failed), tuple(details)

    def raise_failed(self, flags) -> None:
        """Raises the error of the first check that failed, given the computed ``flags``."""
        if not flags:
            return
        failed = np.asarray(flags[0])
        if not failed.any():
            return
        index = int(np.argmax(failed))
        first, value, fields = flags[1][index]
        context, op_name, message = self._messages[index]
        shape = self._shapes[index]
        position = tuple(int(i) for i in np.unravel_index(int(first), shape)) if shape else ()
        # Fields as the op's own message shows known values: a scalar as a number, an array as a list.
        shown = {name: np.asarray(field).tolist() for name, field in fields.items()}
        text = message.format(value=np.asarray(value).item(), position=position, **shown)
        own = OnnxValidationError(f"{op_name} {text}")  # the op's error on the known values
        raise OnnxValidationError(f"{context}: {own}") from own


class NodeChecks:
    """One node's share of a :class:`DeferredChecks`: what an op's ``checks`` keyword is."""

    def __init__(self, checks: DeferredChecks, context: str, op_name: str):
        self._checks, self._context, self._op_name = checks, context, op_name

    def fail_where(self, failing, values, message: str, /, **fields) -> None:
        """Defers a check: ``failing`` (traced booleans) marks the positions that fail,
        ``values`` holds the value at each, and ``message`` (a sentence with ``{value}`` and
        ``{position}`` fields) is the error of the first failing position. ``fields`` (traced
        arrays by name, e.g. ``values=indices`` or ``low=indices.min()``) fill the message's
        other fields, where it names more than one value: read back only when it fails."""
        taken = {"value", "position"} & set(fields)
        if taken:
            raise ValueError(f"fail_where fills {sorted(taken)} itself; give the message's other fields other names.")
        self._checks._messages.append((self._context, self._op_name, message))
        self._checks._traced.append((failing, values, fields))
        self._checks._shapes.append(tuple(np.shape(failing)))
