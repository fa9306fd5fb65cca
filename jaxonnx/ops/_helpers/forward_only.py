"""Values that forward mode differentiates but reverse mode must not: a marker whose
reverse-mode derivative raises jaxonnx's own error instead of JAX's.

JAX differentiates ``lax.while_loop`` in forward mode (``jax.jvp``, ``jax.jacfwd``) but not
in reverse mode, and says so with its own error when it transposes the loop, long after the
op that built the loop has returned (under ``jax.jit`` inside ``jax.grad``, even after the
whole model has been traced). Passing the loop's results through :func:`forward_only` puts
an identity in the computation whose transpose comes first and raises the op's error, which
can say what to do about it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from jaxonnx._errors import StaticValueError

_forward_only_p = Primitive("jaxonnx_forward_only")
_forward_only_p.def_impl(lambda value, *, message: value)
_forward_only_p.def_abstract_eval(lambda value, *, message: value)


def _refuse_transpose(cotangent, value, *, message):
    raise StaticValueError(message)


# Linear: its forward-mode derivative is itself applied to the tangent (zero tangents are
# skipped), and its transpose, reached only by reverse mode with a nonzero cotangent, raises.
ad.deflinear2(_forward_only_p, _refuse_transpose)
batching.primitive_batchers[_forward_only_p] = lambda values, dims, *, message: (
    _forward_only_p.bind(values[0], message=message),
    dims[0],
)
mlir.register_lowering(_forward_only_p, lambda ctx, value, *, message: [value])


def forward_only(value, message: str):
    """``value`` unchanged; reverse-mode differentiation through it raises
    ``StaticValueError(message)``. Integer and bool values, which carry no gradient, and
    values that are not traced pass as they are.

    Args:
        value: an array.
        message: the error's full sentence (it is raised outside the op, so it names the
            node and the op itself).

    Example:
        >>> y = forward_only(jnp.ones(2), "no reverse mode here")
        >>> jax.jvp(lambda x: forward_only(x, "no reverse mode here"), (jnp.ones(2),), (jnp.ones(2),))[1]
        Array([1., 1.], dtype=float32)
    """
    if not isinstance(value, jax.core.Tracer) or not jnp.issubdtype(value.dtype, jnp.inexact):
        return value
    return _forward_only_p.bind(value, message=message)


__all__ = ["forward_only"]
