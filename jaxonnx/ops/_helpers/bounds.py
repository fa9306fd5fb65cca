"""The run-time bound check of size-hinted outputs: one function for every op whose output
length a size hint bounds (a value known only at run time must not exceed its hint)."""

from __future__ import annotations

import logging

import jax

from jaxonnx._errors import OnnxValidationError


def refuse_at_run_time_if(exceeded, message: str) -> None:
    """Raises ``OnnxValidationError(message)`` when the traced bool ``exceeded`` is true at
    run time (a host callback), or now when it is concrete.

    Under ``jax.jit`` the error reaches the caller as a ``JaxRuntimeError`` wrapping it; the
    message is logged first so that it is the first line the user sees.
    """
    if not isinstance(exceeded, jax.core.Tracer):
        if bool(exceeded):
            raise OnnxValidationError(message)
        return

    def check(flag):
        if bool(flag):
            error = OnnxValidationError(message)
            logging.getLogger("jaxonnx").error("jaxonnx: %s", error)
            raise error

    jax.debug.callback(check, exceeded)
