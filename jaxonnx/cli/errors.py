"""The command line's own errors: a usage error, a run that failed on its inputs, and the
library's messages put in the command's terms (``--size-hint`` for ``size_hints=``)."""

from __future__ import annotations

import contextlib
import logging
import re


class _UsageError(Exception):
    """A command-line argument or file that the command cannot use (no traceback).

    Malformed arguments exit with 2, as argparse's own usage errors do; files that cannot
    be read exit with 1.
    """

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


class _RunFailed(Exception):
    """The model failed on the command's inputs: the message, and a note on the inputs."""

    def __init__(self, message: str, note: str | None):
        super().__init__(message)
        self.message = message
        self.note = note


@contextlib.contextmanager
def _quiet_callback_logs():
    """While the command runs, the traceback JAX logs for a failing host callback and the
    message jaxonnx logs from it are not printed: the command prints the message itself."""
    loggers = [logging.getLogger("jax._src.debugging"), logging.getLogger("jaxonnx")]
    saved = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, disabled in zip(loggers, saved):
            logger.disabled = disabled


#: Python spellings in library messages, and what a command-line user writes instead.
_PYTHON_TO_COMMAND_LINE = [
    (re.compile(r"`jaxonnx\.load\(model, size_hints=\{'([^']*)': <length>\}\)`"), r"`--size-hint \1=N`"),
    (re.compile(r"`size_hints=` of `jaxonnx\.load`, or (`--size-hint OUTPUT=N`) of the jaxonnx command"), r"\1"),
    (re.compile(r"`size_hints=` of `jaxonnx\.load`\)"), r"`--size-hint OUTPUT=N`)"),
]


def _for_the_command_line(error: Exception) -> str:
    """The error's message as a command-line user needs it: a failing host callback's
    jaxonnx message rather than JAX's traceback around it, and options instead of Python."""
    from jaxonnx import _errors

    message = str(error)
    if not isinstance(error, _errors.JaxOnnxError):
        # A JaxRuntimeError from a host callback carries the callback's traceback, which
        # ends with the jaxonnx error that the callback raised.
        names = "|".join(
            name
            for name, value in vars(_errors).items()
            if isinstance(value, type) and issubclass(value, _errors.JaxOnnxError)
        )
        raised = re.findall(rf"^(?:jaxonnx\._errors\.)?(?:{names}): (.*)$", message, flags=re.MULTILINE)
        if raised:
            message = raised[-1]
    for pattern, replacement in _PYTHON_TO_COMMAND_LINE:
        message = pattern.sub(replacement, message)
    return message
