"""LSTM: versions 1, 7, 14 (layout) and 22 (bfloat16); every attribute and input."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers import recurrence


@register("LSTM", 1, 7, 14, 22, folds=False, weights=("W", "R", "B"))
def lstm(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    initial_c=None,
    P=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    input_forget=0,
    layout=0,
    output_sequence=0,
):
    """Implements ONNX LSTM: a long short-term memory layer over a sequence.

    Gates in ONNX's order ``i, o, f, c``; with peepholes ``P`` (``i, o, f``):
    ``i = f(x Wi + h Ri + Pi * c + b)``, ``f = f(x Wf + h Rf + Pf * c + b)`` (``1 - i``
    with ``input_forget``), ``c' = f * c + i * g(x Wc + h Rc + b)``,
    ``o = f(x Wo + h Ro + Po * c' + b)``, ``h' = o * h(c')``. One ``lax.scan`` per
    direction, with the input projection of every step done before it as one matmul.

    Args:
        X: the input, [seq, batch, input] (layout 0) or [batch, seq, input] (layout 1).
        W, R: input and recurrence weights, [directions, 4 * hidden, input / hidden].
        B: the biases ``Wb`` and ``Rb``, [directions, 8 * hidden] (zeros when omitted).
        sequence_lens: per batch element, its length: outputs are zero past it and the final
            states are taken at its last valid step (both directions).
        initial_h, initial_c: initial states, [directions, batch, hidden] (layout 1:
            [batch, directions, hidden]); zeros when omitted.
        P: peephole weights, [directions, 3 * hidden].
        activation_alpha, activation_beta, activations: the ``f, g, h`` activations per
            direction (Sigmoid, Tanh, Tanh by default; every activation the text lists).
        clip: bounds every gate's pre-activation to ``[-clip, clip]``.
        direction: ``forward``, ``reverse`` or ``bidirectional``.
        hidden_size: the hidden size (checked against ``R``).
        input_forget: couples the input and forget gates.
        layout: 0 (sequence first) or 1 (batch first).
        output_sequence: version 1 only; ``Y`` is always computed.

    Returns:
        ``(Y, Y_h, Y_c)``: every step's hidden state [seq, directions, batch, hidden] (layout 1:
        [batch, seq, directions, hidden]), and the final hidden and cell states.

    Example:
        >>> x = jnp.ones((3, 1, 2)); w = jnp.full((1, 8, 2), 0.1); r = jnp.full((1, 8, 2), 0.1)
        >>> [round(h, 3) for h in jaxonnx.ops.lstm(x, w, r, hidden_size=2)[1].ravel().tolist()]  # Y_h
        [0.118, 0.118]
    """
    reverse_flags = recurrence.directions(direction)
    count = len(reverse_flags)
    hidden = recurrence.check_weights(X, W, R, 4, hidden_size, count)
    x = recurrence.time_major(X, layout)
    steps, batch = x.shape[0], x.shape[1]
    lengths = recurrence.sequence_lengths(sequence_lens, steps, batch)
    h0 = recurrence.initial_state(initial_h, count, batch, hidden, layout, X.dtype, "initial_h")
    c0 = recurrence.initial_state(initial_c, count, batch, hidden, layout, X.dtype, "initial_c")
    if B is not None and tuple(B.shape) != (count, 8 * hidden):
        raise OnnxValidationError(f"needs `B` of shape {(count, 8 * hidden)}, got {tuple(B.shape)}.")
    if P is not None and tuple(P.shape) != (count, 3 * hidden):
        raise OnnxValidationError(f"needs `P` of shape {(count, 3 * hidden)}, got {tuple(P.shape)}.")
    functions = recurrence.activation_functions(
        activations, activation_alpha, activation_beta, ["Sigmoid", "Tanh", "Tanh"], count
    )
    clip_fn = recurrence.clipped(clip)
    ys, hs, cs = [], [], []
    for d, reverse in enumerate(reverse_flags):
        projection = jnp.einsum("tbi,gi->tbg", x, W[d])
        if B is not None:
            projection = projection + (B[d, : 4 * hidden] + B[d, 4 * hidden :])[None, None, :]
        recurrent = R[d].T
        peepholes = (
            None if P is None else (P[d, None, :hidden], P[d, None, hidden : 2 * hidden], P[d, None, 2 * hidden :])
        )
        cell = recurrence.lstm_cell(
            lambda x_t, h_prev, previous, recurrent=recurrent: x_t + h_prev @ recurrent,
            hidden,
            functions[d],
            peepholes=peepholes,
            clip_fn=clip_fn,
            input_forget=input_forget,
        )
        y, (h_final, c_final) = recurrence.scan_direction(projection, lengths, (h0[d], c0[d]), cell, reverse=reverse)
        ys.append(y)
        hs.append(h_final)
        cs.append(c_final)
    return recurrence.outputs(ys, [hs, cs], layout)


__all__ = ["lstm"]
