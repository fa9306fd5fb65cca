"""Broadcasting for the elementwise ops: ONNX's multidirectional rule (numpy's), spelled out.

The ranks are equalised here, with leading 1-dims, so that JAX's
``jax_numpy_rank_promotion="raise"`` setting accepts the ops and a mismatch is an ONNX
error naming the inputs instead of a numpy or JAX one. Also the operands of a matrix
product as ``numpy.matmul`` broadcasts them (:func:`matmul_operands`) and the correctly
rounded float division by a broadcast divisor (:func:`true_divide`). Registers no op.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._errors import OnnxValidationError


def broadcast_together(*arrays, names):
    """``arrays`` of one rank (numpy's rule; ``None`` entries stay ``None``).

    Raises:
        OnnxValidationError: if the shapes do not broadcast, naming each input and shape.
    """
    present = [a for a in arrays if a is not None]
    shapes = [tuple(a.shape) for a in present]
    try:
        # jnp's version also takes the symbolic dims of `jax.export` (shape polymorphism).
        jnp.broadcast_shapes(*shapes)
    except ValueError:
        described = ", ".join(f"`{name}` {tuple(a.shape)}" for name, a in zip(names, arrays) if a is not None)
        raise OnnxValidationError(f"cannot broadcast {described} to one shape (numpy's rule).") from None
    rank = max((len(s) for s in shapes), default=0)
    return tuple(
        a if a is None or a.ndim == rank else a.reshape((1,) * (rank - a.ndim) + tuple(a.shape)) for a in arrays
    )


def variadic_names(count: int) -> list[str]:
    """How errors name the inputs of a variadic op (Max, Sum, ...): `data_0[i]`."""
    return [f"data_0[{i}]" for i in range(count)]


def true_divide(A, B):
    """``A / B`` for float arrays of one rank, correctly rounded (IEEE) in JAX as in numpy.

    XLA's simplifier turns a division by a broadcast value, or by a constant (a concrete
    divisor inside ``jax.jit``, e.g. an initializer), into a multiplication by its
    reciprocal, which is up to about 1.5 ulp off (and inf where ``1 / B`` overflows). A
    divisor materialized at the output shape behind an optimization barrier stays a true
    division, which took no longer than the rewritten form on CPU, both dominated by memory
    (measured: ``benchmarks/cpu_formulations_results.md``, section 9).
    Inside ``jax.jit`` a constant is a tracer like any other value, so every JAX divisor
    goes behind the barrier.
    """
    if isinstance(A, jax.Array) or isinstance(B, jax.Array):
        B = jax.lax.optimization_barrier(jnp.broadcast_to(B, jnp.broadcast_shapes(A.shape, B.shape)))
    return A / B


def matmul_operands(a, b, *, names=("A", "B")):
    """``a`` and ``b`` as ``numpy.matmul`` multiplies them, with one rank (leading 1-dims;
    a 1-D ``a`` is a row, a 1-D ``b`` a column), and the shape of the product (without
    the dims of 1-D operands).

    Raises:
        OnnxValidationError: for a scalar operand, unequal inner dims or batch dims that do
            not broadcast, naming both operands and their shapes.
    """
    a_name, b_name = names
    if a.ndim == 0 or b.ndim == 0:
        raise OnnxValidationError(
            f"needs `{a_name}` and `{b_name}` of rank >= 1, got shapes {tuple(a.shape)} and {tuple(b.shape)}."
        )
    a_shape = (1,) + tuple(a.shape) if a.ndim == 1 else tuple(a.shape)
    b_shape = tuple(b.shape) + (1,) if b.ndim == 1 else tuple(b.shape)
    try:
        batch = np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    except ValueError:
        batch = None
    if a_shape[-1] != b_shape[-2] or batch is None:
        raise OnnxValidationError(
            f"cannot multiply `{a_name}` of shape {tuple(a.shape)} by `{b_name}` of shape {tuple(b.shape)}: the last "
            f"dim of `{a_name}` must equal the second-to-last of `{b_name}` (the only dim of a 1-D operand), and the "
            "leading dims must broadcast."
        )
    out_shape = batch + a_shape[-2:-1] * (a.ndim > 1) + b_shape[-1:] * (b.ndim > 1)
    rank = max(len(a_shape), len(b_shape))
    a = a.reshape((1,) * (rank - len(a_shape)) + a_shape)
    b = b.reshape((1,) * (rank - len(b_shape)) + b_shape)
    return a, b, out_shape
