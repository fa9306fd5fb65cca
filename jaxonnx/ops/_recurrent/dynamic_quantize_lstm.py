"""DynamicQuantizeLSTM (com.microsoft, version 1): the LSTM with 8-bit weights that
onnxruntime's ``quantize_dynamic`` writes for ``LSTM`` nodes."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import onnx.defs
import onnx.helper

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers import recurrence
from jaxonnx.ops._helpers.broadcasting import true_divide
from jaxonnx.ops._helpers.quantization import (
    quantize,
    quantized_matmul,
    round_half_to_even,
    zero_points_apart,
)
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema

_Kind = onnx.defs.OpSchema.AttrType
_SCHEMA = contrib_schema(
    "DynamicQuantizeLSTM",
    "LSTM with W and R quantized to 8 bits (per direction, per tensor or per output column); X and each step's "
    "hidden state are quantized to uint8 from their own range, as DynamicQuantizeLinear does, and the products "
    "are exact in int32.",
    inputs=[
        ("X", "T"),
        ("W", "T2"),
        ("R", "T2"),
        ("B", "T", "optional"),
        ("sequence_lens", "T1", "optional"),
        ("initial_h", "T", "optional"),
        ("initial_c", "T", "optional"),
        ("P", "T", "optional"),
        ("W_scale", "T"),
        ("W_zero_point", "T2"),
        ("R_scale", "T"),
        ("R_zero_point", "T2"),
    ],
    outputs=[("Y", "T", "optional"), ("Y_h", "T", "optional"), ("Y_c", "T", "optional")],
    type_constraints=[("T", ["tensor(float)"]), ("T1", ["tensor(int32)"]), ("T2", ["tensor(uint8)", "tensor(int8)"])],
    attributes=[
        attribute_without_default("activation_alpha", _Kind.FLOATS, "Alpha values of the activations."),
        attribute_without_default("activation_beta", _Kind.FLOATS, "Beta values of the activations."),
        attribute_without_default("activations", _Kind.STRINGS, "The f, g, h activations per direction."),
        attribute_without_default("clip", _Kind.FLOAT, "Cell clip threshold."),
        attribute("direction", "forward", "forward, reverse or bidirectional."),
        attribute_without_default("hidden_size", _Kind.INT, "Number of neurons in the hidden layer."),
        attribute("input_forget", 0, "Couple the input and forget gates."),
    ],
    differentiable=("B", "initial_c", "P", "W_scale", "R_scale"),
)


@register("DynamicQuantizeLSTM", 1, domain="com.microsoft", schema=_SCHEMA, folds=False)
def dynamic_quantize_lstm(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    initial_c=None,
    P=None,
    W_scale=None,
    W_zero_point=None,
    R_scale=None,
    R_zero_point=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    input_forget=0,
):
    """Implements com.microsoft DynamicQuantizeLSTM: ONNX LSTM (see :func:`jaxonnx.ops.lstm`)
    with quantized weights, computed as onnxruntime's CPU kernel computes it.

    ``W`` is ``[directions, input, 4 * hidden]`` and ``R`` ``[directions, hidden, 4 *
    hidden]`` (transposed from LSTM's), int8 or uint8, gates in LSTM's order ``i, o, f, c``;
    their scales and zero points are ``[directions]`` (per tensor) or ``[directions, 4 *
    hidden]`` (per output column). Per direction:

    - ``X``'s first ``max(sequence_lens)`` steps (all of them without ``sequence_lens``) are
      quantized together to uint8 as DynamicQuantizeLinear does, as onnxruntime's
      DynamicQuantizeMatMul computes it: range widened to 0, ``scale = (max - min) / 255``
      (1 for an all-zero range), ``zero_point = round(clip(-min / scale, 0, 255))``, ``q =
      saturate(round(x / scale) + zero_point)``, half to even, true divisions. The input
      projection is ``(q - zero_point) @ (W - W_zero_point)`` exactly in int32, times
      ``scale * W_scale`` in float32.
    - At each step the previous hidden state of the whole batch (zeros for sequences that
      have ended, as onnxruntime's outputs are there) is quantized the same way and
      multiplied by ``R`` exactly; the gates are ``x part + h part``, then ``+ (Wb + Rb)``,
      clip, peepholes and activations as LSTM's.

    The integer products are exact; the floats agree with onnxruntime's within float32
    rounding (its sigmoid and tanh are polynomial approximations). onnxruntime quantizes the
    hidden state of the batch in one piece when it runs on one thread; on several threads it
    quantizes slices of the batch separately (by its thread count), which can move a few
    codes by one. It also accepts only zero points that are constant (uint8) or zero
    (int8); any zero points are computed exactly here. On x86 CPUs without VNNI,
    onnxruntime's uint8 x int8 product (MLAS's AVX2 kernel) adds pairs of products in
    saturating 16 bits, so int8 weights beyond 7 bits (``quantize_dynamic`` without
    ``reduce_range``) can give it other sums there; the products here are exact, as
    onnxruntime's on VNNI or ARM CPUs and its uint8 x uint8 products are. The final states
    of a sequence of length 0 are zeros, as onnxruntime gives them.

    Gradients: the rounding of ``X`` and of the hidden states is flat, so ``X`` and
    ``initial_h`` get the gradient of the scales (functions of their extremes) only, and the
    hidden state's path from one step to the next carries none; ``B``, ``P``,
    ``initial_c``, ``W_scale`` and ``R_scale`` enter smoothly between roundings, and their
    gradients are exact there (as for DynamicQuantizeMatMul's ``b_scale``).

    Args:
        X: float32 ``[seq, batch, input]``.
        W, R: the quantized weights (see above).
        B: ``[directions, 8 * hidden]`` float32, ``Wb`` then ``Rb``.
        sequence_lens: int32 ``[batch]``.
        initial_h, initial_c: ``[directions, batch, hidden]``.
        P: peepholes ``[directions, 3 * hidden]`` (``i, o, f``).
        W_scale, W_zero_point, R_scale, R_zero_point: the weights' quantization.
        activation_alpha, activation_beta, activations, clip: as LSTM's.
        direction, hidden_size, input_forget: as LSTM's.

    Returns:
        ``(Y, Y_h, Y_c)`` as LSTM's (layout 0).

    Example:
        >>> x = jnp.ones((2, 1, 2), jnp.float32); w = jnp.full((1, 2, 4), 64, jnp.int8); r = jnp.full((1, 1, 4), 64, jnp.int8)
        >>> scale, zero = jnp.full((1,), 1 / 256, jnp.float32), jnp.zeros((1,), jnp.int8)
        >>> y, y_h, y_c = jaxonnx.ops.dynamic_quantize_lstm(x, w, r, None, None, None, None, None, scale, zero, scale, zero)
        >>> round(float(y_h.ravel()[0]), 3)
        0.29
    """
    reverse_flags = recurrence.directions(direction)
    count = len(reverse_flags)
    hidden = _check_weights(X, W, R, count, hidden_size)
    steps, batch = X.shape[0], X.shape[1]
    lengths = recurrence.sequence_lengths(sequence_lens, steps, batch)
    h0 = recurrence.initial_state(initial_h, count, batch, hidden, 0, X.dtype, "initial_h")
    c0 = recurrence.initial_state(initial_c, count, batch, hidden, 0, X.dtype, "initial_c")
    if B is not None and tuple(B.shape) != (count, 8 * hidden):
        raise OnnxValidationError(f"needs `B` of shape {(count, 8 * hidden)}, got {tuple(B.shape)}.")
    if P is not None and tuple(P.shape) != (count, 3 * hidden):
        raise OnnxValidationError(f"needs `P` of shape {(count, 3 * hidden)}, got {tuple(P.shape)}.")
    weights = {}
    for name, value in (
        ("W_scale", W_scale),
        ("W_zero_point", W_zero_point),
        ("R_scale", R_scale),
        ("R_zero_point", R_zero_point),
    ):
        weights[name] = _per_direction(value, name, count, 4 * hidden)
    functions = recurrence.activation_functions(
        activations, activation_alpha, activation_beta, ["Sigmoid", "Tanh", "Tanh"], count
    )
    clip_fn = recurrence.clipped(clip)

    # X's steps up to the longest sequence are quantized as one matrix (onnxruntime's one
    # product for every step); later steps are left out of the range, and run nowhere.
    counted = (
        X
        if lengths is None
        else jnp.where(
            (jnp.arange(steps, dtype=jnp.int32) < jnp.max(jnp.asarray(lengths).astype(jnp.int32), initial=0))[
                :, None, None
            ],
            X,
            0,
        )
    )
    x_codes, x_scale, x_zero = _quantized(X, counted)
    ys, hs, cs = [], [], []
    for d, reverse in enumerate(reverse_flags):
        w_zero, r_zero = weights["W_zero_point"][d], weights["R_zero_point"][d]
        x_product = quantized_matmul(zero_points_apart(x_codes, x_zero), zero_points_apart(W[d], w_zero, _row(w_zero)))
        projection = x_product.astype(jnp.float32) * (x_scale * weights["W_scale"][d]).reshape(1, 1, -1)
        bias = None if B is None else (B[d, : 4 * hidden] + B[d, 4 * hidden :])[None, :]
        peepholes = (
            None if P is None else (P[d, None, :hidden], P[d, None, hidden : 2 * hidden], P[d, None, 2 * hidden :])
        )

        def gates_of(x_t, h_prev, previous, d=d, r_zero=r_zero, bias=bias):
            # onnxruntime quantizes the previous step's outputs, which are zero for sequences that have ended.
            state = h_prev if previous is None else jnp.where(previous[:, None], h_prev, 0)
            h_codes, h_scale, h_zero = _quantized(state, state)
            h_product = quantized_matmul(
                zero_points_apart(h_codes, h_zero), zero_points_apart(R[d], r_zero, _row(r_zero))
            )
            gates = x_t + h_product.astype(jnp.float32) * (h_scale * weights["R_scale"][d]).reshape(1, -1)
            return gates if bias is None else gates + bias

        cell = recurrence.lstm_cell(
            gates_of, hidden, functions[d], peepholes=peepholes, clip_fn=clip_fn, input_forget=input_forget
        )
        y, (h_final, c_final) = recurrence.scan_direction(
            projection, lengths, (h0[d], c0[d]), cell, reverse=reverse, with_validity=True
        )
        if lengths is not None:  # onnxruntime's final states of an empty sequence are zeros, not the initial ones
            empty = (jnp.asarray(lengths) == 0)[:, None]
            h_final, c_final = jnp.where(empty, 0, h_final), jnp.where(empty, 0, c_final)
        ys.append(y)
        hs.append(h_final)
        cs.append(c_final)
    return recurrence.outputs(ys, [hs, cs], 0)


def _check_weights(X, W, R, count: int, hidden_size):
    if X.ndim != 3:
        raise OnnxValidationError(f"needs a 3-D `X`, got shape {tuple(X.shape)}.")
    hidden = R.shape[1] if R.ndim == 3 else -1
    if hidden_size is not None and hidden_size != hidden:
        raise OnnxValidationError(f"got `hidden_size`={hidden_size} but `R` of shape {tuple(R.shape)}.")
    expected_w, expected_r = (count, X.shape[-1], 4 * hidden), (count, hidden, 4 * hidden)
    if tuple(W.shape) != expected_w or tuple(R.shape) != expected_r:
        raise OnnxValidationError(
            f"needs `W` of shape {expected_w} and `R` of shape {expected_r} ([directions, input or hidden, 4 * "
            f"hidden]), got {tuple(W.shape)} and {tuple(R.shape)}."
        )
    return hidden


def _row(zero_point):
    """The shape a weight's zero point takes against its ``[rows, 4 * hidden]`` codes."""
    return (1, -1) if zero_point.ndim else ()


def _per_direction(value, name: str, count: int, columns: int):
    """A scale or zero point as one value per direction: a scalar or a [4 * hidden] row."""
    if value is None:
        raise OnnxValidationError(f"needs `{name}`.")
    if value.shape == (count,):
        return [value[d] for d in range(count)]
    if value.shape == (count, columns):
        return [value[d] for d in range(count)]
    raise OnnxValidationError(
        f"needs `{name}` of shape ({count},) (per tensor) or ({count}, {columns}) (per output column), "
        f"got {tuple(value.shape)}."
    )


@np.errstate(all="ignore")
def _quantized(x, counted):
    """``x`` quantized to uint8 with the scale and zero point of the values ``counted``:
    onnxruntime's dynamic quantization (DynamicQuantizeLinear's text, scale 1 for an
    all-zero range, true divisions)."""
    high = jnp.max(counted, initial=0.0).astype(jnp.float32)
    low = jnp.min(counted, initial=0.0).astype(jnp.float32)
    scale = jnp.where(high == low, jnp.float32(1), true_divide(high - low, jnp.float32(255)))
    zero = round_half_to_even(jnp.clip(-true_divide(low, scale), 0, 255)).astype(jnp.uint8)
    return quantize(x, scale, zero, "uint8", ("tensor", None)), scale, zero


__all__ = ["dynamic_quantize_lstm"]
