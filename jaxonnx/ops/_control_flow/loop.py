"""Loop: every version (1, 11, 13, 16, 19, 21, 23, 24, 25; later versions only widen the types).

How a loop runs depends on what is known at trace time (see the docs' "Control flow under
jax.jit", docs/guide/control-flow.md):

- Everything concrete (an eager call): a Python loop, exactly as the text runs it; carried
  values may change shape between iterations, and scan outputs are stacked as they come.
- A trip count known at trace time and no traced early exit: ``jax.lax.scan``, which is
  differentiable in reverse mode and vmappable.
- A traced early exit (the body's condition depends on traced values) or a traced trip
  count: with a bound giving the most iterations (``loop_bounds=`` of ``jaxonnx.load``, or a
  size hint on the loop's first output), a masked ``lax.scan`` of that length: each step
  runs the body only while the loop runs (``lax.cond``), so values are the while loop's and
  reverse mode differentiates it exactly; scan outputs are padded with zeros past the last
  iteration, and a loop that needs more iterations than the bound raises at run time.
  Without one, ``jax.lax.while_loop``: forward mode differentiates it, reverse mode raises
  an error naming the node and ``loop_bounds``; scan outputs are refused.
- With a bound, every form keeps to it: scan outputs are always that long, and more
  iterations raise (eagerly too), so eager and jitted calls agree.
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
from jaxonnx.ops._helpers.forward_only import forward_only

_UNROLL_LIMIT = 10_000  # a static trip count this large with shape-changing values is refused


@register("Loop", 1, 11, 13, 16, 19, 21, 23, 24, 25, concrete=("M", "cond"), size_hint="bound")
def loop(M=None, cond=None, *v_initial, body, size=None, node=""):
    """Implements ONNX Loop: runs ``body`` while the iteration count is below ``M`` and the
    condition holds, carrying values from one iteration to the next.

    Args:
        M: the trip count (an int64 scalar), or None for no limit.
        cond: the initial condition (a bool scalar), or None for true.
        *v_initial: the initial loop-carried values.
        body: a function of ``(iteration_num, condition, *carried)`` returning
            ``(condition, *carried, *scan_outputs)``.
        size: the most iterations (a loop bound, ``loop_bounds=`` of ``jaxonnx.load``): a loop
            whose end is only known at run time then runs as a masked ``lax.scan`` of that
            length, scan outputs are that long, padded with zeros, and more iterations raise.
        node: the node's name, for the errors raised after the call (a bound overflowed at
            run time, reverse mode through an unbounded loop).

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
    body = _counter_as_declared(body)
    carried = list(v_initial)
    traced_start = is_traced(M) or is_traced(cond) or any(_has_tracer(v) for v in carried)
    if not traced_start:
        result = _python_loop(trip, cond, carried, body, stop_at_tracer=True, size=size, node=node)
        if result is not None:
            return _padded(result, len(carried), size)
    if trip is not None and (cond is None or not is_traced(cond)):
        if cond is not None and not bool(np.asarray(cond).reshape(())):
            return _padded(_no_iteration(carried, body), len(carried), size)
        return _padded(_scan_loop(trip, carried, body, size, node), len(carried), size)
    if size is not None:
        return _bounded_loop(M, cond, carried, body, size, node)
    return _while_loop(M, cond, carried, body, node)


def _counter_as_declared(body):
    """``body`` taking its iteration number and condition in the shape it declares them:
    onnxruntime follows the declaration, and a body declaring them ``[1]`` (onnxruntime's own
    crop-and-resize and fp16 transform test files) reads a one-element 1-D tensor where the IR
    says scalar, e.g. stacking ``iteration_num`` as a scan output of shape ``(trip, 1)``. The
    loop itself keeps scalars; only the values handed to the body are reshaped."""
    declared = [getattr(value, "shape", None) for value in getattr(body, "inputs", ())[:2]]
    if not any(shape is not None and len(shape) == 1 for shape in declared):
        return body
    one_element = [shape is not None and len(shape) == 1 for shape in declared]

    def as_declared(iteration_num, condition, *carried, **keywords):
        iteration_num, condition = (
            value.reshape(1) if one_element[k] else value for k, value in enumerate((iteration_num, condition))
        )
        return body(iteration_num, condition, *carried, **keywords)

    return as_declared


def _overflow_message(node: str, size: int, *, at_run_time: bool = False) -> str:
    """The error of a loop that needs more iterations than its bound. Raised during the
    call, it is labelled with the op and node by the registry and the interpreter; raised
    at run time (a host callback under a trace), it names them itself."""
    named = (f"Loop node {node!r} " if node else "Loop ") if at_run_time else ""
    way_out = f"`loop_bounds={{{node!r}: N}}` of `jaxonnx.load`" if node else "`size=`"
    return (
        f"{named}needs more than its bound of {size} iterations; its results would be cut short, so they "
        f"are refused. Give a larger bound ({way_out})."
    )


def _padded(result, carried: int, size):
    """Scan outputs padded with zeros to the bound's length, as the masked scan gives them."""
    if size is None:
        return result
    values, scans = list(result[:carried]), result[carried:]
    for scan in scans:
        xp = jnp if isinstance(scan, jax.Array) else np
        values.append(xp.concatenate([scan, xp.zeros((size - scan.shape[0], *scan.shape[1:]), scan.dtype)]))
    return tuple(values)


def _has_tracer(value) -> bool:
    return any(is_traced(leaf) for leaf in jax.tree.leaves(value))


def _python_loop(trip, cond, carried, body, *, stop_at_tracer: bool, changing=(), size=None, node=""):
    """The loop as the text runs it, while every value stays concrete; None as soon as a
    value turns out traced (the body reads traced outer values), to run it as JAX instead.
    With a bound (``size``), a loop that goes on past it raises."""
    running = True if cond is None else bool(np.asarray(cond).reshape(()))
    condition = np.array(running) if cond is None else np.asarray(cond).reshape(()).astype(bool)
    scans: list[list] = []
    i = 0
    while running and (trip is None or i < trip):
        if size is not None and i == size:
            raise OnnxValidationError(_overflow_message(node, size))
        outputs = body(np.array(i, np.int64), condition, *carried)
        _check_count(outputs, len(carried))
        # A carried sequence (a list: its length grows) cannot go through a lax loop: unrolled
        # while the condition stays known (dynamo's EmbeddingBag, SequenceInsert per bag).
        if stop_at_tracer and any(_has_tracer(v) for v in outputs):
            if not any(isinstance(v, list) for v in carried) or is_traced(outputs[0]):
                return None
            if i >= _UNROLL_LIMIT:
                raise OnnxValidationError(
                    f"carries a sequence through more than the {_UNROLL_LIMIT} iterations "
                    "jaxonnx unrolls under a trace; run the model outside `jax.jit`."
                )
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
        k
        for k, (before, after) in enumerate(zip(carried, outputs))
        if jax.tree.structure(before) != jax.tree.structure(after)
        or any(
            np.shape(a) != np.shape(b) or jnp.result_type(a) != jnp.result_type(b)
            for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after))
        )
    ]


def _body_shapes(body, carried, condition):
    return jax.eval_shape(lambda *v: body(jnp.zeros((), _index_dtype()), condition, *v), *carried)


def _scan_loop(trip: int, carried, body, size, node):
    """A static trip count: ``lax.scan``; a traced exit needs a masked scan."""
    condition = np.array(True)
    shapes = _body_shapes(body, carried, condition)
    _check_count(shapes, len(carried))
    changing = _changing(carried, list(shapes[1 : 1 + len(carried)]))
    if changing:
        if size is not None and trip > size:
            raise OnnxValidationError(_overflow_message(node, size))
        return _unrolled(trip, carried, body, changing)
    traced_exit = []

    def step(state, i):
        outputs = body(i.astype(_index_dtype()), condition, *state)
        if not traced_exit:
            traced_exit.append(is_traced(outputs[0]) or isinstance(outputs[0], jax.Array))
        return _as_carry(outputs[1 : 1 + len(state)]), _as_carry(outputs[1 + len(state) :])

    state, scans = jax.lax.scan(step, _as_carry(carried), jnp.arange(trip))
    if not traced_exit or not traced_exit[0]:
        if size is not None and trip > size:  # no exit: the loop runs all `trip` iterations
            raise OnnxValidationError(_overflow_message(node, size))
        return (*state, *scans)
    # The body's condition depends on traced values: the loop may stop early.
    return _bounded_loop(np.array(trip), None, carried, body, trip if size is None else min(size, trip), node)


def _unrolled(trip: int, carried, body, changing):
    """Carried values that change shape under a trace, with a static trip count: the loop is
    unrolled (one copy of the body per iteration in the computation)."""
    if trip > _UNROLL_LIMIT:
        raise OnnxValidationError(
            f"got carried values {changing} that change shape between iterations and {trip} iterations, "
            f"more than the {_UNROLL_LIMIT} jaxonnx unrolls; run the model outside `jax.jit`."
        )
    return _python_loop(trip, None, carried, body, stop_at_tracer=False, changing=changing)


def _bounded_loop(M, cond, carried, body, size: int, node: str = ""):
    """At most ``size`` iterations as a ``lax.scan`` whose steps run the body only while the
    loop runs (``lax.cond``): once it has ended, the carried values stop changing and scan
    outputs are zeros. The values are the while loop's, and reverse mode differentiates it
    exactly: a step past the end runs neither the body nor its derivative, so a body that
    would give inf or NaN on the final values (which the loop never feeds it) cannot leak
    into the gradients."""
    condition0 = jnp.ones((), bool) if cond is None else jnp.asarray(cond).reshape(()).astype(bool)
    shapes = _body_shapes(body, carried, condition0)
    _check_count(shapes, len(carried))
    changing = _changing(carried, list(shapes[1 : 1 + len(carried)]))
    if changing:
        raise _changing_error(carried, changing)
    limit = None if M is None else jnp.asarray(M).reshape(())
    initial = _as_carry(carried)
    scan_shapes = shapes[1 + len(carried) :]

    def run(index, condition, values):
        outputs = body(index, condition, *values)
        new_values = [jnp.asarray(new).astype(old.dtype) for new, old in zip(outputs[1 : 1 + len(values)], values)]
        scans = [jnp.asarray(s).astype(shape.dtype) for s, shape in zip(outputs[1 + len(values) :], scan_shapes)]
        return jnp.asarray(outputs[0]).reshape(()).astype(bool), new_values, scans

    def skip(index, condition, values):
        return condition, list(values), [jnp.zeros(shape.shape, shape.dtype) for shape in scan_shapes]

    def step(state, i):
        running, condition, values = state
        index = i.astype(_index_dtype())
        active = running & condition & (True if limit is None else index < limit)
        new_condition, new_values, scans = jax.lax.cond(active, run, skip, index, condition, values)
        return (active, new_condition, new_values), scans

    (running, condition, values), scans = jax.lax.scan(
        step, (jnp.ones((), bool), condition0, initial), jnp.arange(size)
    )
    # Still running after `size` iterations: the loop would go on, and its results would be cut.
    unfinished = running & condition & (True if limit is None else size < limit)
    refuse_at_run_time_if(unfinished, _overflow_message(node, size, at_run_time=is_traced(unfinished)))
    return (*values, *scans)


def _while_loop(M, cond, carried, body, node: str = ""):
    """A traced trip count or condition without a bound: ``lax.while_loop``, which forward
    mode differentiates; reverse mode raises an error that says to give a bound."""
    condition0 = jnp.ones((), bool) if cond is None else jnp.asarray(cond).reshape(()).astype(bool)
    shapes = _body_shapes(body, carried, condition0)
    _check_count(shapes, len(carried))
    if len(shapes) > 1 + len(carried):
        raise StaticValueError(
            "ends at a point only known at run time (a traced trip count or condition), and has scan outputs, "
            "whose length would then be unknown at trace time. Give a bound on its iterations "
            f"(`loop_bounds={{{node or '<the Loop node>'!r}: N}}` of `jaxonnx.load`): the scan outputs are then N "
            "long, padded with zeros, and gradients flow through a masked scan."
        )
    changing = _changing(carried, list(shapes[1:]))
    if changing:
        raise _changing_error(carried, changing)
    if M is not None and not is_traced(M):
        # A static trip count bounds the loop: a masked scan, which reverse mode differentiates.
        return _bounded_loop(M, cond, carried, body, int(np.asarray(M).reshape(())), node)
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
    named = f"Loop node {node!r}" if node else "This Loop"
    message = (
        f"{named} ends at a point only known at run time (a trip count or condition computed from the inputs), "
        "so it runs as `lax.while_loop`, which JAX differentiates in forward mode only (`jax.jvp`, `jax.jacfwd`). "
        "For reverse mode (`jax.grad`, `jax.vjp`), give the most iterations it can run: "
        f"`jaxonnx.load(model, loop_bounds={{{node or '<the Loop node>'!r}: N}})`; it then runs as a masked "
        "`lax.scan` of N steps, which reverse mode differentiates, and raises if it needs more."
    )
    return tuple(forward_only(value, message) for value in values)


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
