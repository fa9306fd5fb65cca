"""GRU: versions 1, 3 (linear_before_reset), 7, 14 (layout) and 22 (bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers import recurrence


@register("GRU", 1, 3, 7, 14, 22, folds=False, weights=("W", "R", "B"))
def gru(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    layout=0,
    linear_before_reset=0,
    output_sequence=0,
):
    """Implements ONNX GRU: a gated recurrent unit layer over a sequence.

    Gates in ONNX's order ``z, r, h``: ``z = f(x Wz + h Rz + b)``, ``r = f(x Wr + h Rr + b)``,
    ``h~ = g(x Wh + (r * h) Rh + b)`` (``g(x Wh + r * (h Rh + Rbh) + Wbh)`` with
    ``linear_before_reset``), ``h' = (1 - z) * h~ + z * h``. One ``lax.scan`` per direction,
    with the input projection of every step done before it as one matmul.

    Args:
        X: the input, [seq, batch, input] (layout 0) or [batch, seq, input] (layout 1).
        W, R: input and recurrence weights, [directions, 3 * hidden, input / hidden].
        B: the biases ``Wb`` and ``Rb``, [directions, 6 * hidden].
        sequence_lens: per batch element, its length (outputs zero past it; the final state
            at its last valid step).
        initial_h: the initial state, [directions, batch, hidden] (layout 1: batch first).
        activation_alpha, activation_beta, activations: ``f, g`` per direction (Sigmoid, Tanh).
        clip: bounds every gate's pre-activation to ``[-clip, clip]``.
        direction: ``forward``, ``reverse`` or ``bidirectional``.
        hidden_size: the hidden size (checked against ``R``).
        layout: 0 (sequence first) or 1 (batch first).
        linear_before_reset: apply the recurrence weights before the reset gate.
        output_sequence: versions 1 and 3 only; ``Y`` is always computed.

    Returns:
        ``(Y, Y_h)``: every step's hidden state and the final one.

    Example:
        >>> x = jnp.ones((3, 1, 2)); w = jnp.full((1, 6, 2), 0.1); r = jnp.full((1, 6, 2), 0.1)
        >>> [round(h, 3) for h in jaxonnx.ops.gru(x, w, r, hidden_size=2)[1].ravel().tolist()]  # Y_h
        [0.173, 0.173]
    """
    reverse_flags = recurrence.directions(direction)
    count = len(reverse_flags)
    hidden = recurrence.check_weights(X, W, R, 3, hidden_size, count)
    x = recurrence.time_major(X, layout)
    steps, batch = x.shape[0], x.shape[1]
    lengths = recurrence.sequence_lengths(sequence_lens, steps, batch)
    h0 = recurrence.initial_state(initial_h, count, batch, hidden, layout, X.dtype, "initial_h")
    if B is not None and tuple(B.shape) != (count, 6 * hidden):
        raise OnnxValidationError(f"needs `B` of shape {(count, 6 * hidden)}, got {tuple(B.shape)}.")
    functions = recurrence.activation_functions(
        activations, activation_alpha, activation_beta, ["Sigmoid", "Tanh"], count
    )
    clip_fn = recurrence.clipped(clip)
    ys, hs = [], []
    for d, reverse in enumerate(reverse_flags):
        f, g = functions[d]
        projection = jnp.einsum("tbi,gi->tbg", x, W[d])
        zero = jnp.zeros((hidden,), X.dtype)
        wb = B[d, : 3 * hidden] if B is not None else jnp.zeros((3 * hidden,), X.dtype)
        rb = B[d, 3 * hidden :] if B is not None else jnp.zeros((3 * hidden,), X.dtype)
        # Every bias but the candidate's recurrence bias (Rbh) adds to the projection.
        projection = projection + (wb + jnp.concatenate([rb[: 2 * hidden], zero]))[None, None, :]
        rzr, rh, rbh = R[d, : 2 * hidden].T, R[d, 2 * hidden :].T, rb[None, 2 * hidden :]

        def cell(x_t, h_prev, rzr=rzr, rh=rh, rbh=rbh, f=f, g=g):
            xz, xr, xh = jnp.split(x_t, 3, axis=-1)
            hz, hr = jnp.split(h_prev @ rzr, 2, axis=-1)
            z = f(clip_fn(xz + hz))
            r = f(clip_fn(xr + hr))
            if linear_before_reset:
                candidate = g(clip_fn(xh + r * (h_prev @ rh + rbh)))
            else:
                candidate = g(clip_fn(xh + (r * h_prev) @ rh + rbh))
            h_new = (1 - z) * candidate + z * h_prev
            return h_new, h_new

        y, h_final = recurrence.scan_direction(projection, lengths, h0[d], cell, reverse=reverse)
        ys.append(y)
        hs.append(h_final)
    return recurrence.outputs(ys, [hs], layout)


__all__ = ["gru"]
