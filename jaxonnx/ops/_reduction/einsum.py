"""Einsum: versions 12 and 28 (28 adds bfloat16)."""

from __future__ import annotations

import re

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace

_TERM = re.compile(r"[A-Za-z]*(\.\.\.)?[A-Za-z]*")


@register("Einsum", 12, 28)
def einsum(*Inputs, equation: str):
    """Implements ONNX Einsum: the Einstein summation ``equation`` over ``Inputs``.

    The equation is numpy's: comma-separated terms of letters (case-sensitive), an
    optional ``->`` and output term (else the letters that appear once, in ASCII order,
    after the ellipsis dims), ``...`` for broadcast dims, spaces anywhere. float16 and
    bfloat16 accumulate in float32 (as onnx.reference does for bfloat16); integers
    compute in their own type. Float precision is JAX's default for a contraction (exact
    float32 on CPU, where onnx's tolerances are checked).

    Args:
        *Inputs: the operands, one per term, all of one dtype.
        equation: the Einstein summation.

    Returns:
        The result, in the dtype of the inputs.

    Example:
        >>> a = jnp.arange(6.0).reshape(2, 3)
        >>> jaxonnx.ops.einsum(a, a, equation="ij, kj -> ik")
        Array([[ 5., 14.],
               [14., 50.]], dtype=float32)
    """
    shapes = ", ".join(str(tuple(x.shape)) for x in Inputs)
    equation = equation.replace(" ", "")
    left, arrow, right = equation.partition("->")
    terms = left.split(",")
    if len(terms) != len(Inputs):
        raise OnnxValidationError(
            f"got the `equation` {equation!r} with {len(terms)} input terms for {len(Inputs)} inputs (shapes {shapes})."
        )
    for position, (term, x) in enumerate(zip(terms, Inputs)):
        letters = len(term.replace("...", ""))
        if not _TERM.fullmatch(term) or (letters > x.ndim if "..." in term else letters != x.ndim):
            raise OnnxValidationError(
                f"got the term {term!r} for input {position} of rank {x.ndim} in the `equation` {equation!r}; "
                "a term names each dim with one letter, or fewer dims and one `...` for the rest."
            )
    if arrow and not _TERM.fullmatch(right):
        raise OnnxValidationError(
            f"got the output term {right!r} in the `equation` {equation!r}; it takes letters and one `...`."
        )
    xp = namespace(*Inputs)
    dtype = np.dtype(Inputs[0].dtype)
    narrow = dtype.kind == "f" and dtype.itemsize == 2
    try:
        if xp is np:
            operands = [x.astype(np.float32) for x in Inputs] if narrow else Inputs
            out = np.asarray(np.einsum(equation, *operands, optimize=True))
        else:
            out = jnp.einsum(equation, *Inputs, preferred_element_type=np.float32 if narrow else dtype)
    except ValueError as error:  # repeated output letters, mismatched dims, unknown output letters
        raise OnnxValidationError(
            f"cannot evaluate the `equation` {equation!r} on inputs of shapes {shapes}: {error}"
        ) from None
    return out.astype(dtype) if out.dtype != dtype else out


__all__ = ["einsum"]
