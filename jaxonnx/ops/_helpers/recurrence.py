"""What LSTM, GRU and RNN share: the activation functions of their `activations` attribute,
their layouts and directions, and the one ``lax.scan`` over time that runs a cell.

A direction runs as one ``lax.scan`` over the time steps of the input projection, which is
computed for every step at once (one matmul) before the scan. ``sequence_lens`` masks the
scan: past a sequence's length its state stops changing and its outputs are zero, so the
final state is the state at its last valid step. The reverse direction reads each sequence
backwards within its own length (the padding stays at the end).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._errors import OnnxValidationError

#: Steps per scan iteration. Unrolling 2 to 16 steps measured no faster on XLA:CPU (LSTM,
#: hidden 128, 512 steps, benchmarks/recurrent.py: each step's kernels stay as many), so the
#: loop stays plain.
UNROLL = 1

#: name -> (function of (x, alpha, beta), default alpha, default beta), as the ONNX text lists them.
ACTIVATIONS = {
    "relu": (lambda x, a, b: jnp.maximum(x, 0), None, None),
    "tanh": (lambda x, a, b: jnp.tanh(x), None, None),
    "sigmoid": (lambda x, a, b: jax.nn.sigmoid(x), None, None),
    "affine": (lambda x, a, b: a * x + b, 1.0, 0.0),
    "leakyrelu": (lambda x, a, b: jnp.where(x >= 0, x, a * x), 0.01, None),
    "thresholdedrelu": (lambda x, a, b: jnp.where(x > a, x, 0), 1.0, None),
    "scaledtanh": (lambda x, a, b: a * jnp.tanh(b * x), 1.0, 1.0),
    "hardsigmoid": (lambda x, a, b: jnp.clip(a * x + b, 0, 1), 0.2, 0.5),
    "elu": (lambda x, a, b: jnp.where(x >= 0, x, a * jnp.expm1(jnp.minimum(x, 0))), 1.0, None),
    "softsign": (lambda x, a, b: x / (1 + jnp.abs(x)), None, None),
    "softplus": (lambda x, a, b: jax.nn.softplus(x), None, None),
}


def activation_functions(activations, alphas, betas, defaults: list[str], directions: int):
    """The cell's activation functions, ``len(defaults)`` per direction, from the node's
    ``activations`` (case-insensitive names) with ``activation_alpha``/``activation_beta``
    consumed in the same order (an activation's own default where the lists stop)."""
    names = list(activations) if activations else defaults * directions
    if len(names) == len(defaults) and directions == 2 and activations:
        names = names * 2  # one list given for a bidirectional node: both directions use it
    if len(names) == 2 * len(defaults) and directions == 1:
        names = names[: len(defaults)]  # RNN's schema default lists Tanh for two directions
    if len(names) != len(defaults) * directions:
        raise OnnxValidationError(
            f"got {len(names)} `activations` ({', '.join(names)}); a {'bidirectional' if directions == 2 else 'one-way'} "
            f"node takes {len(defaults) * directions} ({len(defaults)} per direction)."
        )
    # The lists are consumed in order by the activations that take the value (as onnxruntime
    # reads them): Sigmoid takes none, so [Sigmoid, LeakyRelu] with alphas [0.1] is LeakyRelu(0.1).
    alphas, betas = list(alphas or []), list(betas or [])
    functions = []
    for name in names:
        key = str(name).lower()
        if key not in ACTIVATIONS:
            raise OnnxValidationError(
                f"got the activation {name!r}; the text lists {', '.join(sorted(ACTIVATIONS))} (any case)."
            )
        fn, alpha, beta = ACTIVATIONS[key]
        if alpha is not None and alphas:
            alpha = alphas.pop(0)
        if beta is not None and betas:
            beta = betas.pop(0)
        functions.append(lambda x, fn=fn, a=alpha, b=beta: fn(x, a, b))
    return [functions[d * len(defaults) : (d + 1) * len(defaults)] for d in range(directions)]


def directions(direction: str) -> list[bool]:
    """Per direction, whether it reads the sequence backwards."""
    # GRU-1's schema spells its default "foward": the same direction.
    choices = {"forward": [False], "foward": [False], "reverse": [True], "bidirectional": [False, True]}
    if direction not in choices:
        raise OnnxValidationError(f"got `direction`={direction!r}; it must be forward, reverse or bidirectional.")
    return choices[direction]


def clipped(clip):
    """The pre-activation clip (``clip`` bounds every gate's input to ``[-clip, clip]``)."""
    if clip is None:
        return lambda x: x
    if clip <= 0:
        raise OnnxValidationError(f"got `clip`={clip}; it must be positive.")
    return lambda x: jnp.clip(x, -clip, clip)


def check_weights(X, W, R, gates: int, hidden_size, directions_count: int):
    """The hidden size, after checking W and R against X, the gate count and the directions."""
    if X.ndim != 3:
        raise OnnxValidationError(f"needs a 3-D `X`, got shape {tuple(X.shape)}.")
    hidden = R.shape[-1]
    if hidden_size is not None and hidden_size != hidden:
        raise OnnxValidationError(f"got `hidden_size`={hidden_size} but `R` of shape {tuple(R.shape)}.")
    expected_w = (directions_count, gates * hidden, X.shape[-1])
    if tuple(W.shape) != expected_w or tuple(R.shape) != (directions_count, gates * hidden, hidden):
        raise OnnxValidationError(
            f"needs `W` of shape {expected_w} and `R` of shape {(directions_count, gates * hidden, hidden)}, got "
            f"{tuple(W.shape)} and {tuple(R.shape)}."
        )
    return hidden


def time_major(X, layout: int):
    """``X`` as [time, batch, features] (layout 1 is [batch, time, features])."""
    if layout not in (0, 1):
        raise OnnxValidationError(f"got `layout`={layout}; it must be 0 or 1.")
    return jnp.swapaxes(X, 0, 1) if layout else X


def initial_state(value, directions_count: int, batch: int, hidden: int, layout: int, dtype, name: str):
    """An initial state as [directions, batch, hidden] (zeros when omitted)."""
    if value is None:
        return jnp.zeros((directions_count, batch, hidden), dtype)
    value = jnp.swapaxes(value, 0, 1) if layout else value
    if tuple(value.shape) != (directions_count, batch, hidden):
        raise OnnxValidationError(
            f"needs `{name}` of shape {(directions_count, batch, hidden)}, got {tuple(value.shape)}."
        )
    return value


def scan_direction(projection, lengths, state, cell, *, reverse: bool, with_validity: bool = False):
    """Runs ``cell(projection_t, state) -> (new state, output)`` over time as one
    ``lax.scan``, masked by ``lengths`` (a [batch] int array, or None for full length).
    With ``with_validity``, the cell is called as ``cell(projection_t, state, previous)``,
    where ``previous`` ([batch] bool, or None without ``lengths``) says whose previous step
    was within its length (true at the first step): a finished sequence's output is zero.

    Returns the outputs [time, batch, hidden] (zero past each length) and the final state
    (each sequence's state at its last valid step)."""
    steps, batch = projection.shape[0], projection.shape[1]
    time = jnp.arange(steps, dtype=jnp.int32)
    previous = None
    if lengths is None:
        projection = jnp.flip(projection, 0) if reverse else projection
        valid = None
    else:
        lengths = jnp.asarray(lengths).astype(jnp.int32)
        valid = time[:, None] < lengths[None, :]  # [time, batch]
        if reverse:
            # Backwards within each sequence's own length; the padding stays where it is.
            order = jnp.where(valid, lengths[None, :] - 1 - time[:, None], time[:, None])
            projection = jnp.take_along_axis(projection, order[:, :, None], axis=0)
        if with_validity:
            previous = jnp.concatenate([jnp.ones((1, batch), bool), valid[:-1]], axis=0)

    def step(carry, inputs):
        x_t, valid_t, previous_t = inputs
        new, output = cell(x_t, carry, previous_t) if with_validity else cell(x_t, carry)
        if valid_t is not None:
            new = jax.tree.map(lambda n, o: jnp.where(valid_t[:, None], n, o), new, carry)
            output = jnp.where(valid_t[:, None], output, jnp.zeros((), output.dtype))
        return new, output

    final, outputs = jax.lax.scan(step, state, (projection, valid, previous), unroll=UNROLL)
    if reverse:
        if lengths is None:
            outputs = jnp.flip(outputs, 0)
        else:
            outputs = jnp.take_along_axis(outputs, order[:, :, None], axis=0)
    return outputs, final


def sequence_lengths(sequence_lens, steps: int, batch: int):
    """``sequence_lens`` checked (concrete values must lie in [0, steps]); None when omitted."""
    if sequence_lens is None:
        return None
    if tuple(sequence_lens.shape) != (batch,):
        raise OnnxValidationError(f"needs `sequence_lens` of shape ({batch},), got {tuple(sequence_lens.shape)}.")
    if not isinstance(sequence_lens, jax.core.Tracer):
        concrete = np.asarray(sequence_lens)
        if concrete.size and (concrete.min() < 0 or concrete.max() > steps):
            raise OnnxValidationError(
                f"got `sequence_lens` {concrete.tolist()}, outside [0, {steps}] (the sequence length of `X`)."
            )
    return sequence_lens


def outputs(ys, finals, layout: int):
    """``Y`` ([time, directions, batch, hidden], or [batch, time, directions, hidden] for
    layout 1) and the final states ([directions, batch, hidden], or [batch, directions,
    hidden])."""
    y = jnp.stack(ys, axis=1)
    finals = [jnp.stack(f, axis=0) for f in finals]
    if layout:
        y = jnp.transpose(y, (2, 0, 1, 3))
        finals = [jnp.swapaxes(f, 0, 1) for f in finals]
    return (y, *finals)


def lstm_cell(gates_of, hidden: int, activations, *, peepholes=None, clip_fn, input_forget):
    """The LSTM cell for :func:`scan_direction` (``with_validity=True``): ``gates_of(x_t,
    h_prev, previous)`` gives the pre-activations of the gates ``i, o, f, c`` ([batch, 4 *
    hidden]); ``activations`` are ``f, g, h``; ``peepholes`` ``(Pi, Po, Pf)`` or None.
    LSTM's gates are ``x_t + h_prev @ R``; DynamicQuantizeLSTM's quantize ``h_prev`` first."""
    f, g, h = activations

    def cell(x_t, state, previous=None):
        h_prev, c_prev = state
        gates = gates_of(x_t, h_prev, previous)  # one product for the four gates
        if peepholes is None:
            # `f` of the i, o and f gates as one array, apart from the update of `c`:
            # XLA:CPU then computes the activations in a vectorized loop of their own.
            # Fused into the update of `c` they compiled to a scalar loop, and the LSTM
            # of benchmarks/recurrent.py ran slower (measured: benchmarks/recurrent_results.md).
            i, o, forget = jnp.split(f(clip_fn(gates[:, : 3 * hidden])), 3, axis=-1)
            forget = 1 - i if input_forget else forget
            c = forget * c_prev + i * g(clip_fn(gates[:, 3 * hidden :]))
        else:
            gi, go, gf, gc = jnp.split(gates, 4, axis=-1)
            pi, po, pf = peepholes
            i = f(clip_fn(gi + pi * c_prev))
            forget = 1 - i if input_forget else f(clip_fn(gf + pf * c_prev))
            c = forget * c_prev + i * g(clip_fn(gc))
            o = f(clip_fn(go + po * c))
        h_new = o * h(c)
        return (h_new, c), h_new

    return cell
