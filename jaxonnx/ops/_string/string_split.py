"""StringSplit: version 20."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.dtypes import as_str_array
from jaxonnx._core.registry import register


@register("StringSplit", 20)
def string_split(X, *, delimiter=None, maxsplit=None):
    """Implements ONNX StringSplit: each string of ``X`` split at ``delimiter``.

    With a ``delimiter``, consecutive delimiters delimit empty strings (``"a--b"`` on ``"-"``
    gives ``"a", "", "b"``) and an empty string is one empty substring. Without one (or with
    ``""``), runs of whitespace separate and leading and trailing whitespace is dropped, as
    Python's ``str.split()`` does (so ``" "`` gives no substrings). After ``maxsplit`` splits
    the rest of the string is the last substring; a negative ``maxsplit`` does not limit,
    as in onnxruntime. Strings run eagerly only.

    Args:
        X: a string array.
        delimiter: the separator (unset or ``""``: whitespace).
        maxsplit: the most splits per string (unset: as many as there are).

    Returns:
        ``(Y, Z)``: ``Y`` of shape ``X.shape + (n,)`` holds each string's substrings padded
        with ``""`` to the largest count ``n``; ``Z`` (int64, the shape of ``X``) the counts.

    Example:
        >>> y, z = jaxonnx.ops.string_split(np.array(["a.b.c", "d"], object), delimiter=".")
        >>> y, z
        (array([['a', 'b', 'c'],
               ['d', '', '']], dtype=object), array([3, 1]))
    """
    X = as_str_array(X)
    separator = delimiter or None
    limit = -1 if maxsplit is None or maxsplit < 0 else maxsplit
    # Without a delimiter, whitespace at both ends goes first: Python's split would keep it
    # at the end of the unsplit rest when `maxsplit` stops it.
    parts = [(x if separator else x.strip()).split(separator, limit) for x in X.reshape(-1)]
    counts = np.array([len(p) for p in parts], dtype=np.int64).reshape(X.shape)
    width = max((len(p) for p in parts), default=0)
    padded = np.full((len(parts), width), "", dtype=object)
    for row, substrings in zip(padded, parts):
        row[: len(substrings)] = substrings
    return padded.reshape(*X.shape, width), counts


__all__ = ["string_split"]
