"""StringNormalizer: version 10."""

from __future__ import annotations

import functools

import numpy as np

from jaxonnx._core.dtypes import as_str_array
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError

_ACTIONS = ("LOWER", "UPPER", "NONE")
#: Locales whose case mapping differs from Unicode's default one character at a time:
#: Turkish and Azerbaijani pair dotted and dotless i (i <-> İ, ı <-> I).
_DOTTED_I_LANGUAGES = ("tr", "az")
_DOTTED_I = frozenset("iIİı")


@register("StringNormalizer", 10)
def string_normalizer(X, *, case_change_action="NONE", is_case_sensitive=0, locale=None, stopwords=None):
    """Implements ONNX StringNormalizer: drops the stop words of ``X``, then changes case.

    An element is dropped when it equals a stop word (ignoring case unless
    ``is_case_sensitive``). Case changes one character at a time, by Unicode's simple case
    mapping as C++ locales (and onnxruntime) do, so lengths never change: ``"ß"`` stays
    ``"ß"`` in upper case and ``"Σ"`` is always ``"σ"`` in lower case. ``locale`` matters
    only for Turkish and Azerbaijani (``tr*``, ``az*``), whose i and I pair with İ and ı;
    any other locale maps case as Unicode's default. Strings run eagerly only.

    Args:
        X: a string array of shape ``[C]`` or ``[1, C]``.
        case_change_action: "LOWER", "UPPER" or "NONE".
        is_case_sensitive: 1 to match stop words exactly.
        locale: e.g. "en_US" (default) or "tr_TR".
        stopwords: the strings to drop.

    Returns:
        The remaining strings, shape ``[C']`` or ``[1, C']``; ``[""]`` (shape ``[1]``, or
        ``[1, 1]`` for a ``[1, C]`` input) when every string was dropped.

    Example:
        >>> jaxonnx.ops.string_normalizer(np.array(["Monday", "tuesday"], object),
        ...                               case_change_action="UPPER", stopwords=["monday"])
        array(['TUESDAY'], dtype=object)
    """
    if case_change_action not in _ACTIONS:
        raise OnnxValidationError(
            f"got `case_change_action`={case_change_action!r}; it must be one of {', '.join(_ACTIONS)}."
        )
    X = as_str_array(X)
    if not (X.ndim == 1 or (X.ndim == 2 and X.shape[0] == 1)):
        raise OnnxValidationError(f"takes `X` of shape [C] or [1, C], got shape {X.shape}.")
    dotted_i = (locale or "").lower().startswith(_DOTTED_I_LANGUAGES)
    # Stop words are compared in the case the output takes (lower case when it keeps its case).
    compare_upper = case_change_action == "UPPER"

    def key(word):
        return word if is_case_sensitive else _change_case(word, upper=compare_upper, dotted_i=dotted_i)

    stops = {key(word) for word in stopwords or ()}
    kept = [word for word in X.reshape(-1) if key(word) not in stops]
    if case_change_action != "NONE":
        kept = [_change_case(word, upper=case_change_action == "UPPER", dotted_i=dotted_i) for word in kept]
    out = np.array(kept or [""], dtype=object)
    return out if X.ndim == 1 else out.reshape(1, -1)


def _change_case(word: str, *, upper: bool, dotted_i: bool) -> str:
    changed = word.upper() if upper else word.lower()
    # Python's full mapping is the simple one wherever every character maps to one (no
    # character maps to none), except for the final sigma, which looks at its neighbours.
    if len(changed) == len(word) and (upper or "Σ" not in word) and not (dotted_i and _DOTTED_I & set(word)):
        return changed
    return "".join(_simple_case(character, upper, dotted_i) for character in word)


@functools.lru_cache(maxsize=4096)
def _simple_case(character: str, upper: bool, dotted_i: bool) -> str:
    """One character's simple case mapping (UnicodeData.txt), which Python's full mapping
    (``str.upper``) contains wherever that gives one character."""
    if dotted_i and character in _DOTTED_I:
        return (
            {"i": "İ", "ı": "I"}.get(character, character) if upper else {"I": "ı", "İ": "i"}.get(character, character)
        )
    full = character.upper() if upper else character.lower()
    if len(full) == 1:
        return full
    if not upper:
        return "i" if character == "İ" else character  # the one character with a longer lower case
    # Greek letters with iota subscript: the simple upper case is the title case ("ᾳ" -> "ᾼ");
    # the others (ß, ligatures, ŉ, ...) have none.
    title = character.title()
    return title if len(title) == 1 else character


__all__ = ["string_normalizer"]
