"""RegexFullMatch: version 20, with RE2 itself (google-re2, the optional extra ``regex``)."""

from __future__ import annotations

import functools

import numpy as np

from jaxonnx._core.dtypes import as_str_array
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.optional import import_optional


@register("RegexFullMatch", 20)
def regex_full_match(X, *, pattern=None):
    """Implements ONNX RegexFullMatch: whether each string of ``X`` matches ``pattern`` whole.

    The pattern is RE2 syntax, matched by RE2 itself (the ``google-re2`` package, installed
    by ``pip install 'jaxonnx[regex]'``), as onnxruntime does: Python's ``re`` reads some
    patterns differently (RE2's ``\\w``, ``\\d``, ``\\s`` and ``\\b`` are ASCII, it has POSIX
    classes such as ``[[:alpha:]]``, and it has no lookarounds or backreferences). Strings
    run eagerly only.

    Args:
        X: a string array.
        pattern: the RE2 pattern.

    Returns:
        A bool array of the shape of ``X``.

    Example:
        >>> jaxonnx.ops.regex_full_match(np.array(["www.a.com", "a.com"], object), pattern=r"www\\.\\w+\\.com")
        array([ True, False])
    """
    if pattern is None:
        raise OnnxValidationError("needs the attribute `pattern` (an RE2 pattern), which was not given.")
    regex = _compiled(pattern)
    X = as_str_array(X)
    matches = [regex.fullmatch(x) is not None for x in X.reshape(-1)]
    return np.array(matches, dtype=bool).reshape(X.shape)


@functools.lru_cache(maxsize=64)
def _compiled(pattern: str):
    re2 = import_optional("re2", package="google-re2", extra="regex", needed_for="to match RE2 patterns")
    options = re2.Options()
    options.log_errors = False  # the error is raised below; RE2 would also print it to stderr
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        message = error.args[0].decode(errors="replace") if error.args and isinstance(error.args[0], bytes) else error
        raise OnnxValidationError(f"got `pattern`={pattern!r}, which is not valid RE2 syntax: {message}.") from None


__all__ = ["regex_full_match"]
