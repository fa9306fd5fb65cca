"""BiasAdd (com.microsoft, version 1): a bias and a residual added, Stable Diffusion's fusion."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.schemas import contrib_schema

_SCHEMA = contrib_schema(
    "BiasAdd",
    "Y = X + bias + skip, bias along the channels (the last dim).",
    inputs=[("X", "T"), ("bias", "T"), ("skip", "T")],
    outputs=[("Y", "T")],
    type_constraints=[("T", ["tensor(float16)", "tensor(float)"])],
)


@register("BiasAdd", 1, domain="com.microsoft", schema=_SCHEMA, folds=False)
def bias_add(X, bias, skip):
    """Implements com.microsoft BiasAdd: ``X + bias + skip``.

    onnxruntime runs this op on CUDA only; this follows the text of its
    ``docs/ContribOperators.md`` (tests check it against numpy). The sums are in the type of
    ``X``, in the text's order.

    Args:
        X: ``(N, S, C)``.
        bias: ``(C,)``.
        skip: ``(N, S, C)``, the residual.

    Returns:
        ``(N, S, C)``.

    Example:
        >>> jaxonnx.ops.bias_add(jnp.ones((1, 2, 2)), jnp.array([1.0, 2.0]), jnp.zeros((1, 2, 2)))
        Array([[[2., 3.],
                [2., 3.]]], dtype=float32)
    """
    if X.ndim != 3 or tuple(bias.shape) != (X.shape[-1],) or tuple(skip.shape) != tuple(X.shape):
        raise OnnxValidationError(
            f"needs `X` (N, S, C), `bias` (C,) and `skip` of the shape of `X`; got {tuple(X.shape)}, "
            f"{tuple(bias.shape)} and {tuple(skip.shape)}."
        )
    return X + bias.reshape(1, 1, -1) + skip


__all__ = ["bias_add"]
