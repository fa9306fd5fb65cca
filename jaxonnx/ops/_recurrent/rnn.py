"""RNN: versions 1, 7, 14 (layout) and 22 (bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers import recurrence


@register("RNN", 1, 7, 14, 22, folds=False, weights=("W", "R", "B"))
def rnn(
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
    output_sequence=0,
):
    """Implements ONNX RNN: a simple recurrent layer, ``h' = f(x W + h R + Wb + Rb)``.

    Args:
        X: the input, [seq, batch, input] (layout 0) or [batch, seq, input] (layout 1).
        W, R: input and recurrence weights, [directions, hidden, input / hidden].
        B: the biases ``Wb`` and ``Rb``, [directions, 2 * hidden].
        sequence_lens: per batch element, its length (outputs zero past it).
        initial_h: the initial state, [directions, batch, hidden] (layout 1: batch first).
        activation_alpha, activation_beta, activations: ``f`` per direction (Tanh).
        clip: bounds the pre-activation to ``[-clip, clip]``.
        direction: ``forward``, ``reverse`` or ``bidirectional``.
        hidden_size: the hidden size (checked against ``R``).
        layout: 0 (sequence first) or 1 (batch first).
        output_sequence: version 1 only; ``Y`` is always computed.

    Returns:
        ``(Y, Y_h)``: every step's hidden state and the final one.

    Example:
        >>> x = jnp.ones((3, 1, 2)); w = jnp.full((1, 2, 2), 0.1); r = jnp.full((1, 2, 2), 0.1)
        >>> [round(h, 3) for h in jaxonnx.ops.rnn(x, w, r, hidden_size=2)[1].ravel().tolist()]  # Y_h
        [0.242, 0.242]
    """
    reverse_flags = recurrence.directions(direction)
    count = len(reverse_flags)
    hidden = recurrence.check_weights(X, W, R, 1, hidden_size, count)
    x = recurrence.time_major(X, layout)
    steps, batch = x.shape[0], x.shape[1]
    lengths = recurrence.sequence_lengths(sequence_lens, steps, batch)
    h0 = recurrence.initial_state(initial_h, count, batch, hidden, layout, X.dtype, "initial_h")
    if B is not None and tuple(B.shape) != (count, 2 * hidden):
        raise OnnxValidationError(f"needs `B` of shape {(count, 2 * hidden)}, got {tuple(B.shape)}.")
    functions = recurrence.activation_functions(activations, activation_alpha, activation_beta, ["Tanh"], count)
    clip_fn = recurrence.clipped(clip)
    ys, hs = [], []
    for d, reverse in enumerate(reverse_flags):
        (f,) = functions[d]
        projection = jnp.einsum("tbi,gi->tbg", x, W[d])
        if B is not None:
            projection = projection + (B[d, :hidden] + B[d, hidden:])[None, None, :]
        recurrent = R[d].T

        def cell(x_t, h_prev, recurrent=recurrent, f=f):
            h_new = f(clip_fn(x_t + h_prev @ recurrent))
            return h_new, h_new

        y, h_final = recurrence.scan_direction(projection, lengths, h0[d], cell, reverse=reverse)
        ys.append(y)
        hs.append(h_final)
    return recurrence.outputs(ys, [hs], layout)


__all__ = ["rnn"]
