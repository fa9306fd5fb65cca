"""If: every version (1, 11, 13, 16, 19, 21, 23, 24, 25; later versions only widen the types)."""

from __future__ import annotations

import jax
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx.ops._helpers.common import is_traced


@register("If", 1, 11, 13, 16, 19, 21, 23, 24, 25, concrete=("cond",), branches=("then_branch", "else_branch"))
def if_(cond, *, then_branch, else_branch):
    """Implements ONNX If: the outputs of ``then_branch`` when ``cond`` is true, else of
    ``else_branch``.

    A ``cond`` known at trace time (numpy: an initializer, a Constant, shape arithmetic,
    or a numpy value passed into a jitted function) runs only the chosen branch, like a
    Python ``if``, so the branches may differ in shape and type. A traced ``cond`` runs
    ``jax.lax.cond``, whose branches must agree in every output's shape and type.

    Args:
        cond: a one-element bool tensor.
        then_branch: a function of no inputs returning the branch's outputs (a tuple).
        else_branch: the same for a false ``cond``.

    Returns:
        The chosen branch's outputs.

    Example:
        >>> jaxonnx.ops.if_(np.array(True), then_branch=lambda: (1.0,), else_branch=lambda: (2.0,))
        (1.0,)
    """
    if np.size(cond) != 1:
        raise OnnxValidationError(f"needs a one-element `cond`, got shape {tuple(np.shape(cond))}.")
    if not is_traced(cond):
        return tuple(then_branch() if bool(np.asarray(cond).reshape(())) else else_branch())
    then_shapes = jax.eval_shape(then_branch)
    else_shapes = jax.eval_shape(else_branch)
    if len(then_shapes) != len(else_shapes):
        raise OnnxValidationError(
            f"got branches with {len(then_shapes)} (then_branch) and {len(else_shapes)} (else_branch) outputs."
        )
    differ = [
        f"output {i}: {_text(a)} against {_text(b)}"
        for i, (a, b) in enumerate(zip(then_shapes, else_shapes))
        if jax.tree.structure(a) != jax.tree.structure(b)
        or any(x.shape != y.shape or x.dtype != y.dtype for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))
    ]
    if differ:
        raise OnnxTypeError(
            f"got a traced `cond` and branches whose outputs differ ({'; '.join(differ)}); under jax.jit "
            "a traced condition runs both branches as one computation (jax.lax.cond), which needs equal "
            "shapes and types. Make `cond` known at trace time: compute it from initializers or Constant "
            "nodes, or pass the inputs it depends on as numpy values (e.g. `jax.jit(lambda x: model(x, "
            "np.int64(16000)))`), or run the model outside `jax.jit`."
        )
    predicate = jax.numpy.asarray(cond).reshape(()).astype(bool)
    return tuple(jax.lax.cond(predicate, lambda: tuple(then_branch()), lambda: tuple(else_branch())))


def _text(shape) -> str:
    leaves = jax.tree.leaves(shape)
    if isinstance(shape, list):
        return f"a sequence of {len(leaves)}"
    return f"{leaves[0].dtype}{list(leaves[0].shape)}" if leaves else "None"


__all__ = ["if_"]
