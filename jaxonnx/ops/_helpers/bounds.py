"""The run-time bound check of size-hinted outputs: one function for every op whose output
length a size hint bounds (a length known only at run time must not exceed its hint)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import jax

from jaxonnx._errors import OnnxValidationError


def refuse_at_run_time_if(exceeded, message: str | Callable[..., str], *values) -> None:
    """Raises ``OnnxValidationError`` when the bool ``exceeded`` is true: now when it is
    concrete, else at run time (a host callback, which works under ``jax.jit`` and ``vmap``).

    Args:
        exceeded: a bool scalar, traced or concrete.
        message: the error's text, or a function of the concrete ``values`` (e.g. the count
            found at run time) that returns it.
        *values: arrays the message is made from, passed to the callback.

    Under ``jax.jit`` the error reaches the caller as a ``JaxRuntimeError`` wrapping it, after
    JAX logs the callback's traceback; the message is logged first, so that it is the first
    line the user sees (the CLI prints only the message).
    """

    def check(flag, *concrete):
        if bool(flag):
            error = OnnxValidationError(message(*concrete) if callable(message) else message)
            logging.getLogger("jaxonnx").error("jaxonnx: %s", error)
            raise error

    if not isinstance(exceeded, jax.core.Tracer) and not any(isinstance(v, jax.core.Tracer) for v in values):
        if bool(exceeded):
            raise OnnxValidationError(message(*values) if callable(message) else message)
        return
    jax.debug.callback(check, exceeded, *values)
