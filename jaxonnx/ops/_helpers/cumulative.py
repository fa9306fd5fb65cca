"""The running reductions shared by CumSum and CumProd. Registers no op."""

from __future__ import annotations

import jax
import numpy as np

from jaxonnx._errors import OnnxValidationError
from jaxonnx._platform import platform_dependent
from jaxonnx.ops._helpers.common import int_list, namespace, normalize_axis


def running(x, axis, *, exclusive: int, reverse: int, product: bool):
    """The running sums (``product=False``) or products of ``x`` along the static ``axis``.

    ``exclusive`` leaves each element out of its own result (the first is the identity, 0
    or 1); ``reverse`` runs from the end of the axis towards its start. In the dtype of
    ``x`` (integers wrap); numpy inputs in numpy."""
    values = int_list(axis, name="axis")
    if len(values) != 1:
        raise OnnxValidationError(f"needs one `axis`, got {list(values)}.")
    axis = normalize_axis(values[0], x.ndim)
    xp = namespace(x)
    if reverse:
        x = xp.flip(x, axis)
    if xp is np:
        with np.errstate(over="ignore"):  # float overflow is inf, as in JAX
            results = (np.cumprod if product else np.cumsum)(x, axis=axis, dtype=x.dtype)
    else:
        results = _jax_running(x, axis, product)
    if exclusive and x.shape[axis]:
        # Shift by one along the axis: the identity first, and each result moves one place on.
        head = [slice(None)] * x.ndim
        head[axis] = slice(0, 1)
        body = [slice(None)] * x.ndim
        body[axis] = slice(0, -1)
        identity = xp.ones_like(x[tuple(head)]) if product else xp.zeros_like(x[tuple(head)])
        results = xp.concatenate([identity, results[tuple(body)]], axis=axis)
    return xp.flip(results, axis) if reverse else results


def _jax_running(x, axis: int, product: bool):
    # XLA:CPU runs lax.cumsum as a reduce_window over the whole axis, O(n^2) work: slower
    # than a log-depth associative scan on long axes (and lax.cumprod likewise; measured:
    # benchmarks/cpu_formulations_results.md, section 9). Other platforms keep lax's, which
    # their compilers rewrite into a scan. Both give exact gradients, also at zeros of a
    # product (no division).
    combine, default = (jax.lax.mul, jax.lax.cumprod) if product else (jax.lax.add, jax.lax.cumsum)
    return platform_dependent(
        x,
        cpu=lambda x: jax.lax.associative_scan(combine, x, axis=axis),
        default=lambda x: default(x, axis=axis),
    )
