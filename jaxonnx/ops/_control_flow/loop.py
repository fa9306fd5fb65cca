"""Loop: every version (1, 11, 13, 16, 19, 21, 23, 24, 25; later versions only widen the types).

How a loop runs depends on what is known at trace time (see the README's "Control flow
under jax.jit"):

- Everything concrete (an eager call): a Python loop, exactly as the text runs it; carried
  values may change shape between iterations, and scan outputs are stacked as they come.
- A trip count known at trace time and no traced early exit: ``jax.lax.scan``, which is
  differentiable in reverse mode and vmappable.
- A traced early exit (the body's condition depends on traced values) or a traced trip
  count: with a size hint on the loop's first output giving the most iterations, a masked
  ``lax.scan`` of that length (differentiable; scan outputs padded with zeros past the last
  iteration, and more iterations than the hint raise at run time); without one,
  ``jax.lax.while_loop`` (forward only), and scan outputs are refused.
- Carried values that change shape between iterations under a trace: unrolled when the trip
  count is known at trace time, else refused with an error naming the value.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxTypeError, OnnxValidationError, StaticValueError
from jaxonnx.ops._helpers.bounds import refuse_at_run_time_if
from jaxonnx.ops._helpers.common import is_traced

_UNROLL_LIMIT = 10_000  # a static trip count this large with shape-changing values is refused


@register("Loop", 1, 11, 13, 16, 19, 21, 23, 24, 25, concrete=("M", "cond"), size_hint="bound")
def loop(M=None, cond=None, *v_initial, body, size=None):
    """Implements ONNX Loop: runs ``body`` while the iteration count is below ``M`` and the
    condition holds, carrying values from one iteration to the next.

    Args:
        M: the trip count (an int64 scalar), or None for no limit.
        cond: the initial condition (a bool scalar), or None for true.
        *v_initial: the initial loop-carried values.
        body: a function of ``(iteration_num, condition, *carried)`` returning
            ``(condition, *carried, *scan_outputs)``.
        size: the most iterations, for a loop whose end is only known at run time under a
            trace (a size hint); scan outputs are then that long, padded with zeros.

    Returns:
        The final carried values, then each scan output stacked along a new first axis.

    Example:
        >>> body = lambda i, c, total: (c, total + i, total)
        >>> jaxonnx.ops.loop(np.array(3), None, np.array(0), body=body)
        (Array(3, dtype=int32), Array([0, 0, 1], dtype=int32))
    """
    for name, value in (("M", M), ("cond", cond)):
        if value is not None and np.size(value) != 1:
            raise OnnxValidationError(f"needs a one-element `{name}`, got shape {tuple(np.shape(value))}.")
    trip = None if M is None or is_traced(M) else int(np.asarray(M).reshape(()))
    carried = list(v_initial)
    traced_start = is_traced(M) or is_traced(cond) or any(_has_tracer(v) for v in carried)
    if not traced_start:
        result = _python_loop(trip, cond, carried, body, stop_at_tracer=True)
        if result is not None:
            return result
    if trip is not None and (cond is None or not is_traced(cond)):
        if cond is not None and not bool(np.asarray(cond).reshape(())):
            return _no_iteration(carried, body)
        return _scan_loop(trip, carried, body, size)
    if size is not None:
        return _bounded_loop(M, cond, carried, body, size)
    return _while_loop(M, cond, carried, body)


def _has_tracer(value) -> bool:
    return any(is_traced(leaf) for leaf in jax.tree.leaves(value))


def _python_loop(trip, cond, carried, body, *, stop_at_tracer: bool, changing=()):
    """The loop as the text runs it, while every value stays concrete; None as soon as a
    value turns out traced (the body reads traced outer values), to run it as JAX instead."""
    running = True if cond is None else bool(np.asarray(cond).reshape(()))
    condition = np.array(running) if cond is None else np.asarray(cond).reshape(()).astype(bool)
    scans: list[list] = []
    i = 0
    while running and (trip is None or i < trip):
        outputs = body(np.array(i, np.int64), condition, *carried)
        _check_count(outputs, len(carried))
        if stop_at_tracer and any(_has_tracer(v) for v in outputs):
            return None
        if is_traced(outputs[0]):  # unrolling: a traced exit cannot end a Python loop
            raise _changing_error(carried, list(changing))
        condition = np.asarray(outputs[0]).reshape(()).astype(bool)
        running = bool(condition)
        carried = list(outputs[1 : 1 + len(carried)])
        step_scans = outputs[1 + len(carried) :]
        if not scans:
            scans = [[] for _ in step_scans]
        for stack, value in zip(scans, step_scans):
            stack.append(value)
        i += 1
    if not scans and i == 0:
        return _no_iteration(carried, body)
    return (*carried, *[_stack(stack, k) for k, stack in enumerate(scans)])


def _stack(values, k):
    shapes = {np.shape(v) for v in values}
    if len(shapes) > 1:
        raise OnnxValidationError(
            f"got scan output {k} with different shapes in different iterations ({sorted(shapes)}); "
            "a scan output stacks one value per iteration, so they must agree."
        )
    xp = jnp if any(isinstance(v, jax.Array) for v in values) else np
    return xp.stack([xp.asarray(v) for v in values])


def _check_count(outputs, carried: int) -> None:
    if len(outputs) < 1 + carried:
        raise OnnxValidationError(
            f"got a body with {len(outputs)} outputs for {carried} loop-carried values; it must return the "
            f"condition, the {carried} carried values, then the scan outputs."
        )


def _no_iteration(carried, body):
    """Zero iterations: the initial values, and empty scan outputs of the body's shapes."""
    shapes = jax.eval_shape(lambda *v: body(jnp.zeros((), _index_dtype()), jnp.ones((), bool), *v), *carried)
    _check_count(shapes, len(carried))
    scans = [jnp.zeros((0, *s.shape), s.dtype) for s in shapes[1 + len(carried) :]]
    return (*carried, *scans)


def _as_carry(values):
    return [jnp.asarray(v) for v in values]


def _changing(carried, outputs) -> list[int]:
    """Positions of carried values whose shape or type the body changes."""
    return [
        k for k, (before, after) in enumerate(zip(carried, outputs))
        if jax.tree.structure(before) != jax.tree.structure(after)
        or any(np.shape(a) != np.shape(b) or jnp.result_type(a) != jnp.result_type(b)
               for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after)))
    ]


def _body_shapes(body, carried, condition):
    return jax.eval_shape(lambda *v: body(jnp.zeros((), _index_dtype()), condition, *v), *carried)


def _scan_loop(trip: int, carried, body, size):
    """A static trip count: ``lax.scan``; a traced exit needs a masked scan."""
    condition = np.array(True)
    shapes = _body_shapes(body, carried, condition)
    _check_count(shapes, len(carried))
    changing = _changing(carried, list(shapes[1 : 1 + len(carried)]))
    if changing:
        return _unrolled(trip, carried, body, changing)
    traced_exit = []

    def step(state, i):
        outputs = body(i.astype(_index_dtype()), condition, *state)
        if not traced_exit:
            traced_exit.append(is_traced(outputs[0]) or isinstance(outputs[0], jax.Array))
        return _as_carry(outputs[1 : 1 + len(state)]), _as_carry(outputs[1 + len(state) :])

    state, scans = jax.lax.scan(step, _as_carry(carried), jnp.arange(trip))
    if not traced_exit or not traced_exit[0]:
        return (*state, *scans)
    # The body's condition depends on traced values: the loop may stop early.
    return _bounded_loop(np.array(trip), None, carried, body, trip if size is None else min(size, trip))


def _unrolled(trip: int, carried, body, changing):
    """Carried values that change shape under a trace, with a static trip count: the loop is
    unrolled (one copy of the body per iteration in the computation)."""
    if trip > _UNROLL_LIMIT:
        raise OnnxValidationError(
            f"got carried values {changing} that change shape between iterations and {trip} iterations, "
            f"more than the {_UNROLL_LIMIT} jaxonnx unrolls; run the model outside `jax.jit`."
        )
    return _python_loop(trip, None, carried, body, stop_at_tracer=False, changing=changing)


def _bounded_loop(M, cond, carried, body, size: int):
    """At most ``size`` iterations as a masked ``lax.scan``: once the loop has ended, the
    carried values stop changing and scan outputs are zeros. Differentiable."""
    condition0 = jnp.ones((), bool) if cond is None else jnp.asarray(cond).reshape(()).astype(bool)
    shapes = _body_shapes(body, carried, condition0)
    _check_count(shapes, len(carried))
    changing = _changing(carried, list(shapes[1 : 1 + len(carried)]))
    if changing:
        raise _changing_error(carried, changing)
    limit = None if M is None else jnp.asarray(M).reshape(())

    def step(state, i):
        running, condition, values = state
        index = i.astype(_index_dtype())
        active = running & condition & (True if limit is None else index < limit)
        outputs = body(index, condition, *values)
        new_values = [jnp.where(active, jnp.asarray(new), old) for new, old in zip(outputs[1 : 1 + len(values)], values)]
        scans = [jnp.where(active, jnp.asarray(s), jnp.zeros_like(jnp.asarray(s))) for s in outputs[1 + len(values) :]]
        new_condition = jnp.where(active, jnp.asarray(outputs[0]).reshape(()).astype(bool), condition)
        return (active, new_condition, new_values), scans

    (running, condition, values), scans = jax.lax.scan(
        step, (jnp.ones((), bool), condition0, _as_carry(carried)), jnp.arange(size))
    # Still running after `size` iterations: the loop would go on, and its results would be cut.
    unfinished = running & condition & (True if limit is None else size < limit)
    refuse_at_run_time_if(
        unfinished,
        f"Loop ran more than its size hint of {size} iterations; its results would be cut short, so they "
        "are refused. Give a larger size hint (`size_hints=` of `jaxonnx.load`, keyed by the loop's first output).",
    )
    return (*values, *scans)


def _while_loop(M, cond, carried, body):
    """A traced trip count or condition without a bound: ``lax.while_loop`` (forward only)."""
    condition0 = jnp.ones((), bool) if cond is None else jnp.asarray(cond).reshape(()).astype(bool)
    shapes = _body_shapes(body, carried, condition0)
    _check_count(shapes, len(carried))
    if len(shapes) > 1 + len(carried):
        raise StaticValueError(
            "ends at a point only known at run time (a traced trip count or condition), and has scan outputs, "
            "whose length would then be unknown at trace time. Give a size hint with the most iterations "
            "(`size_hints={<the loop's first output>: N}` of `jaxonnx.load`): the scan outputs are then N long, "
            "padded with zeros, and gradients flow through a masked scan."
        )
    changing = _changing(carried, list(shapes[1:]))
    if changing:
        raise _changing_error(carried, changing)
    if M is not None and not is_traced(M):
        # A static trip count bounds the loop: a masked scan, which reverse mode differentiates.
        return _bounded_loop(M, cond, carried, body, int(np.asarray(M).reshape(())))
    limit = None if M is None else jnp.asarray(M).reshape(())

    def keep_going(state):
        i, condition, _ = state
        return condition & (True if limit is None else i < limit)

    def step(state):
        i, condition, values = state
        outputs = body(i, condition, *values)
        return i + 1, jnp.asarray(outputs[0]).reshape(()).astype(bool), _as_carry(outputs[1:])

    start = jnp.zeros((), _index_dtype())
    _, _, values = jax.lax.while_loop(keep_going, step, (start, condition0, _as_carry(carried)))
    return tuple(values)


def _changing_error(carried, changing) -> OnnxTypeError:
    return OnnxTypeError(
        f"got loop-carried values {changing} whose shape or type the body changes between iterations, "
        "and a trip count or condition only known at run time; XLA loops need fixed shapes. Make the trip "
        "count known at trace time (then the loop is unrolled) or run the model outside `jax.jit`."
    )


__all__ = ["loop"]


def _index_dtype():
    """The iteration number's type: int64 as ONNX says, int32 while x64 is off (as JAX computes it)."""
    return jnp.int64 if jax.config.jax_enable_x64 else jnp.int32
