"""The unary math ops: Neg, Abs, Sqrt, Reciprocal, Floor, Ceil, Round, Sign, IsNaN, IsInf
(these fold: exact in numpy and XLA alike) and Exp, Log, Erf and the trigonometric and
hyperbolic functions Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Tanh, Asinh, Acosh,
Atanh (these do not fold, ``folds=False``: numpy's and XLA's transcendental functions
differ in the last bit, and an op gives one answer). Outside their domains the inverse
functions give nan (±inf for Atanh at ±1), as numpy does.

Version 1 of most of them only adds ``consumed_inputs`` (ignored); the others only widen
the type list.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.legacy import without_consumed_inputs


@register("Neg", 6, 13, padding="elementwise", layout="elementwise")
def neg(X):
    """Implements ONNX Neg: ``-X`` (integers wrap: ``-(-128)`` is -128 in int8).

    Example:
        >>> jaxonnx.ops.neg(jnp.array([1, -2]))
        Array([-1,  2], dtype=int32)
    """
    return -X


@register("Abs", 6, 13, padding="elementwise", layout="elementwise")
def abs(X):
    """Implements ONNX Abs: ``|X|`` (integers wrap: ``|-128|`` is -128 in int8).

    Example:
        >>> jaxonnx.ops.abs(jnp.array([1.5, -2.0]))
        Array([1.5, 2. ], dtype=float32)
    """
    return namespace(X).abs(X)


@register("Sqrt", 6, 13, padding="elementwise", layout="elementwise")
@np.errstate(invalid="ignore")  # a folded sqrt of a negative number is nan, as in JAX
def sqrt(X):
    """Implements ONNX Sqrt: the square root, nan for negative ``X``.

    Example:
        >>> jaxonnx.ops.sqrt(jnp.array([4.0, 2.0]))
        Array([2.       , 1.4142135], dtype=float32)
    """
    return namespace(X).sqrt(X)


@register("Reciprocal", 6, 13, padding="elementwise", layout="elementwise")
@np.errstate(divide="ignore")  # a folded 1/0 is inf, as in JAX
def reciprocal(X):
    """Implements ONNX Reciprocal: ``1 / X``.

    Example:
        >>> jaxonnx.ops.reciprocal(jnp.array([4.0, -0.5]))
        Array([ 0.25, -2.  ], dtype=float32)
    """
    return namespace(X).reciprocal(X)


@register("Floor", 6, 13, padding="elementwise", layout="elementwise")
def floor(X):
    """Implements ONNX Floor: the largest integer not above ``X``, in the dtype of ``X``.

    Example:
        >>> jaxonnx.ops.floor(jnp.array([1.5, -1.5]))
        Array([ 1., -2.], dtype=float32)
    """
    return namespace(X).floor(X)


@register("Ceil", 6, 13, padding="elementwise", layout="elementwise")
def ceil(X):
    """Implements ONNX Ceil: the smallest integer not below ``X``, in the dtype of ``X``.

    Example:
        >>> jaxonnx.ops.ceil(jnp.array([1.5, -1.5]))
        Array([ 2., -1.], dtype=float32)
    """
    return namespace(X).ceil(X)


@register("Round", 11, 22, padding="elementwise", layout="elementwise")
def round(X):
    """Implements ONNX Round: the nearest integer, halves to even (``2.5`` gives 2).

    Example:
        >>> jaxonnx.ops.round(jnp.array([0.5, 1.5, 2.5, -2.6]))
        Array([ 0.,  2.,  2., -3.], dtype=float32)
    """
    return namespace(X).round(X)


@register("Sign", 9, 13, padding="elementwise", layout="elementwise")
def sign(input):
    """Implements ONNX Sign: -1, 0 or 1 by the sign of ``input``, in its dtype (nan stays nan).

    Example:
        >>> jaxonnx.ops.sign(jnp.array([-3.0, 0.0, 2.0]))
        Array([-1.,  0.,  1.], dtype=float32)
    """
    return namespace(input).sign(input)


@register("IsNaN", 9, 13, 20, padding="elementwise", layout="elementwise")
def is_nan(X):
    """Implements ONNX IsNaN: whether each element is nan, as a bool array.

    Example:
        >>> jaxonnx.ops.is_nan(jnp.array([1.0, jnp.nan]))
        Array([False,  True], dtype=bool)
    """
    return namespace(X).isnan(X)


@register("IsInf", 10, 20, padding="elementwise", layout="elementwise")
def is_inf(X, *, detect_negative: int = 1, detect_positive: int = 1):
    """Implements ONNX IsInf: whether each element is an infinity, as a bool array.

    Args:
        X: a float array.
        detect_negative: 1 to report -inf, 0 not to.
        detect_positive: 1 to report +inf, 0 not to.

    Example:
        >>> jaxonnx.ops.is_inf(jnp.array([-jnp.inf, 0.0, jnp.inf]), detect_negative=0)
        Array([False, False,  True], dtype=bool)
    """
    for name, value in (("detect_negative", detect_negative), ("detect_positive", detect_positive)):
        if value not in (0, 1):
            raise OnnxValidationError(f"got `{name}`={value}; it must be 0 or 1.")
    xp = namespace(X)
    negative = xp.signbit(X)
    return xp.isinf(X) & ((negative & bool(detect_negative)) | (~negative & bool(detect_positive)))


@register("Exp", 6, 13, folds=False, padding="elementwise", layout="elementwise")
def exp(input):
    """Implements ONNX Exp: ``e ** input``.

    Example:
        >>> jaxonnx.ops.exp(jnp.array([0.0, 1.0]))
        Array([1.       , 2.7182817], dtype=float32)
    """
    return jax.numpy.exp(input)


@register("Log", 6, 13, folds=False, padding="elementwise", layout="elementwise")
def log(input):
    """Implements ONNX Log: the natural logarithm (-inf at 0, nan below).

    Example:
        >>> jaxonnx.ops.log(jnp.array([1.0, 100.0]))
        Array([0.       , 4.6051702], dtype=float32)
    """
    return jax.numpy.log(input)


@register("Sin", 7, 22, folds=False, padding="elementwise", layout="elementwise")
def sin(input):
    """Implements ONNX Sin: the sine of ``input`` in radians.

    Example:
        >>> jaxonnx.ops.sin(jnp.array([0.0, 1.0]))
        Array([0.        , 0.84147096], dtype=float32)
    """
    return jax.numpy.sin(input)


@register("Cos", 7, 22, folds=False, padding="elementwise", layout="elementwise")
def cos(input):
    """Implements ONNX Cos: the cosine of ``input`` in radians.

    Example:
        >>> jaxonnx.ops.cos(jnp.array([0.0, 1.0]))
        Array([1.       , 0.5403023], dtype=float32)
    """
    return jax.numpy.cos(input)


@register("Tanh", 6, 13, folds=False, padding="elementwise", layout="elementwise")
def tanh(input):
    """Implements ONNX Tanh: the hyperbolic tangent.

    Example:
        >>> jaxonnx.ops.tanh(jnp.array([0.0, 1.0]))
        Array([0.       , 0.7615942], dtype=float32)
    """
    return jax.numpy.tanh(input)


@register("Erf", 9, 13, folds=False, padding="elementwise", layout="elementwise")
def erf(input):
    """Implements ONNX Erf: the Gauss error function.

    Erf-9 also takes integers: the result is computed in float and truncated toward zero
    into the input's type, as onnx.reference does (so it is 0: ``|erf| < 1``).

    Example:
        >>> jaxonnx.ops.erf(jnp.array([0.0, 1.0]))
        Array([0.        , 0.84270084], dtype=float32)
    """
    if input.dtype.kind in "iu":
        wide = jax.dtypes.canonicalize_dtype(np.float64)  # float64, or float32 with x64 off
        return jax.lax.erf(input.astype(wide)).astype(input.dtype)
    return jax.lax.erf(input)


@register("Tan", 7, 22, folds=False, padding="elementwise", layout="elementwise")
def tan(input):
    """Implements ONNX Tan: the tangent of ``input`` in radians.

    Example:
        >>> jaxonnx.ops.tan(jnp.array([0.0, 1.0]))
        Array([0.       , 1.5574077], dtype=float32)
    """
    return jax.numpy.tan(input)


@register("Asin", 7, 22, folds=False, padding="elementwise", layout="elementwise")
def asin(input):
    """Implements ONNX Asin: the arcsine, in ``[-pi/2, pi/2]`` (nan outside ``[-1, 1]``, as numpy).

    Example:
        >>> jaxonnx.ops.asin(jnp.array([0.0, 0.5]))
        Array([0.       , 0.5235988], dtype=float32)
    """
    return jax.numpy.arcsin(input)


@register("Acos", 7, 22, folds=False, padding="elementwise", layout="elementwise")
def acos(input):
    """Implements ONNX Acos: the arccosine, in ``[0, pi]`` (nan outside ``[-1, 1]``, as numpy).

    Example:
        >>> jaxonnx.ops.acos(jnp.array([1.0, 0.5]))
        Array([0.       , 1.0471976], dtype=float32)
    """
    return jax.numpy.arccos(input)


@register("Atan", 7, 22, folds=False, padding="elementwise", layout="elementwise")
def atan(input):
    """Implements ONNX Atan: the arctangent, in ``(-pi/2, pi/2)``.

    Example:
        >>> jaxonnx.ops.atan(jnp.array([0.0, 1.0])).round(6)  # pi / 4; its last float32 bit varies by XLA emitter
        Array([0.      , 0.785398], dtype=float32)
    """
    return jax.numpy.arctan(input)


@register("Sinh", 9, 22, folds=False, padding="elementwise", layout="elementwise")
def sinh(input):
    """Implements ONNX Sinh: the hyperbolic sine.

    Example:
        >>> jaxonnx.ops.sinh(jnp.array([0.0, 1.0]))
        Array([0.       , 1.1752012], dtype=float32)
    """
    return jax.numpy.sinh(input)


@register("Cosh", 9, 22, folds=False, padding="elementwise", layout="elementwise")
def cosh(input):
    """Implements ONNX Cosh: the hyperbolic cosine.

    Example:
        >>> jaxonnx.ops.cosh(jnp.array([0.0, 1.0]))
        Array([1.       , 1.5430806], dtype=float32)
    """
    return jax.numpy.cosh(input)


@register("Asinh", 9, 22, folds=False, padding="elementwise", layout="elementwise")
def asinh(input):
    """Implements ONNX Asinh: the inverse hyperbolic sine.

    Example:
        >>> jaxonnx.ops.asinh(jnp.array([0.0, 1.0]))
        Array([0.        , 0.88137364], dtype=float32)
    """
    return jax.numpy.arcsinh(input)


@register("Acosh", 9, 22, folds=False, padding="elementwise", layout="elementwise")
def acosh(input):
    """Implements ONNX Acosh: the inverse hyperbolic cosine (nan below 1, as numpy).

    Example:
        >>> jaxonnx.ops.acosh(jnp.array([1.0, 2.0]))
        Array([0.      , 1.316958], dtype=float32)
    """
    return jax.numpy.arccosh(input)


@register("Atanh", 9, 22, folds=False, padding="elementwise", layout="elementwise")
def atanh(input):
    """Implements ONNX Atanh: the inverse hyperbolic tangent (±inf at ±1, nan outside ``[-1, 1]``, as numpy).

    Example:
        >>> jaxonnx.ops.atanh(jnp.array([0.0, 0.5]))
        Array([0.        , 0.54930615], dtype=float32)
    """
    return jax.numpy.arctanh(input)


for _op_type, _fn in [
    ("Neg", neg),
    ("Abs", abs),
    ("Sqrt", sqrt),
    ("Reciprocal", reciprocal),
    ("Floor", floor),
    ("Ceil", ceil),
]:
    register(_op_type, 1, padding="elementwise", layout="elementwise")(without_consumed_inputs(_fn))
for _op_type, _fn in [("Exp", exp), ("Log", log), ("Tanh", tanh)]:
    register(_op_type, 1, folds=False, padding="elementwise", layout="elementwise")(without_consumed_inputs(_fn))
del _op_type, _fn

__all__ = [
    "neg",
    "abs",
    "sqrt",
    "reciprocal",
    "floor",
    "ceil",
    "round",
    "sign",
    "is_nan",
    "is_inf",
    "exp",
    "log",
    "sin",
    "cos",
    "tanh",
    "erf",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
]
