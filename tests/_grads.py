"""``jax.test_util.check_grads(f, args, order=1, modes=("fwd", "rev"))``'s checks, compiled once.

``check_grads`` checks, for each argument it is given, a forward-mode JVP against central
differences along a random tangent, and a reverse-mode VJP by the inner products
``<t, J^T c> == <J t, c>`` for a random cotangent. It calls ``f``, ``jax.jvp(f)``,
``jax.vjp(f)`` and the VJP function separately, and each is compiled on its own: four XLA
compilations per argument, which is most of the op table's gradient time.
:func:`check_grads` here makes the same checks, per argument with the same step, the same
tolerances (``check_grads``'s: ``atol`` times the output's size, ``rtol`` times its size) and
the same random tangents (``numpy.random.RandomState(0)``, as ``check_grads`` draws them), from
one ``jax.jit`` program that evaluates them all: ``f`` at the point and at the points a step
either side along each tangent, each argument's JVP, and one VJP whose cotangent gives
every argument's ``J^T c`` at once (the partial VJPs ``check_grads`` takes one argument at a
time are the slices of it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import numpy as np

EPS = 1e-4  # jax.test_util's finite-difference step


def _random_like(rng: np.random.RandomState, x) -> np.ndarray:
    """What jax.test_util's ``rand_like`` draws (real dtypes)."""
    return np.asarray(rng.randn(*x.shape), dtype=x.dtype)


def _assert_close(actual, expected, atol: float, rtol: float, what: str) -> None:
    """jax.test_util's ``check_close`` for one array: tolerances scaled by the sizes."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, atol=atol * actual.size, rtol=rtol * expected.size, err_msg=what)


def check_grads(
    f: Callable, args: Sequence, *, atol: float, rtol: float, argnums: Sequence[int] | None = None, eps: float = EPS
) -> None:
    """Checks ``f``'s JVP and VJP with respect to each ``args[i]``, ``i`` in ``argnums`` (every
    argument by default), against central differences, as ``check_grads(g_i, (args[i],),
    order=1, modes=("fwd", "rev"), atol=atol, rtol=rtol)`` does for ``g_i``, ``f`` of
    ``args[i]`` with the other arguments fixed. The other arguments are passed to ``f`` as
    they are given (numpy stays numpy, known while tracing); ``f`` returns an array or a tuple
    of them (inexact)."""
    argnums = list(range(len(args))) if argnums is None else list(argnums)
    assert argnums, "nothing to differentiate"
    # device_put, not jnp.asarray, which compiles an identity program per new shape and dtype.
    diff = {i: jax.device_put(args[i]) for i in argnums}

    @jax.jit  # traced once: the program below calls it five times per argument
    def g(xs: dict) -> tuple:
        return _as_tuple(f(*[xs.get(i, a) for i, a in enumerate(args)]))

    outputs = jax.eval_shape(g, diff)
    tangents, cotangents = {}, {}
    for i in argnums:
        rng = np.random.RandomState(0)  # check_jvp's and check_vjp's draws for argument i
        tangents[i] = _random_like(rng, diff[i])
        cotangents[i] = tuple(_random_like(rng, o) for o in outputs)
    cotangent = cotangents[argnums[0]]  # the one VJP's cotangent: argument argnums[0]'s draw

    @jax.jit
    def program(diff, tangents, cotangent):
        value = g(diff)
        checks = {}
        for i, t in tangents.items():
            at = lambda x, i=i: g({**diff, i: x})  # noqa: E731
            primal, tangent_out = jax.jvp(at, (diff[i],), (t,))
            delta = t * eps
            ahead, behind = at(diff[i] + delta), at(diff[i] - delta)
            numerical = tuple((p - n) * (0.5 / eps) for p, n in zip(ahead, behind))
            checks[i] = primal, tangent_out, numerical
        primal, vjp = jax.vjp(g, diff)
        return value, checks, primal, vjp(cotangent)[0]

    value, checks, vjp_primal, cotangent_outs = program(diff, tangents, cotangent)
    for i in argnums:
        jvp_primal, tangent_out, numerical = checks[i]
        assert [t.dtype for t in tangent_out] == [p.dtype for p in jvp_primal], f"argument {i}: JVP dtypes"
        for name, actual, expected in (("primal", jvp_primal, value), ("tangent", tangent_out, numerical)):
            for a, e in zip(actual, expected):
                _assert_close(a, e, atol, rtol, f"argument {i}: JVP {name}")
        # <t, J^T c> against <J t (numerical), c>, as check_vjp compares them.
        projection = np.real(np.vdot(tangents[i], np.asarray(cotangent_outs[i])))
        expected = sum(np.real(np.vdot(np.asarray(n), c)) for n, c in zip(numerical, cotangent))
        _assert_close(projection, expected, atol, rtol, f"argument {i}: VJP cotangent projection")
    for a, e in zip(vjp_primal, value):
        _assert_close(a, e, atol, rtol, "VJP primal")


def _as_tuple(value) -> tuple:
    return value if isinstance(value, tuple) else (value,)
