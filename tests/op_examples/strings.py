"""Examples of the string ops (RegexFullMatch, StringConcat, StringNormalizer, StringSplit,
TfIdfVectorizer) and ImageDecoder.

String inputs are not vmapped: JAX cannot hold strings (they run on the eager path only).
"""

import struct
import zlib

import numpy as np

from tests.op_examples._example import Example


def _strings(*values, shape=None):
    return np.array(values, dtype=object).reshape(shape if shape is not None else (len(values),))


def _png(pixels: np.ndarray) -> np.ndarray:
    """An 8-bit RGB PNG of ``pixels`` ([height, width, 3] uint8), encoded here with zlib so
    that importing the examples needs no Pillow (decoding them does)."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    height, width, _ = pixels.shape
    rows = b"".join(b"\x00" + row.tobytes() for row in pixels)  # filter type 0 on every row
    stream = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
    return np.frombuffer(stream, np.uint8).copy()


_PIXELS = np.random.default_rng(7).integers(0, 256, (3, 4, 3), dtype=np.uint8)


def _normalized(X, case_change_action="NONE", is_case_sensitive=0, stopwords=(), locale=None):
    # onnx.reference's StringNormalizer returns numpy `<U` strings (and strips accents and
    # stop words inside elements, which the text does not ask for): the text's rule here.
    def key(word):
        return word if is_case_sensitive else word.upper() if case_change_action == "UPPER" else word.lower()

    stops = {key(w) for w in stopwords}
    kept = [w for w in X.reshape(-1) if key(w) not in stops]
    kept = [
        w.upper() if case_change_action == "UPPER" else w.lower() if case_change_action == "LOWER" else w for w in kept
    ]
    out = np.array(kept or [""], dtype=object)
    return [out if X.ndim == 1 else out.reshape(1, -1)]


_TOKENS = np.array([[4, 7, 4, 7, 9, 4, 7, 3], [9, 9, 4, 3, 7, 4, 7, 7]], np.int64)
#: 1-grams 4, 7, 9; 2-grams (4, 7), (7, 4), (9, 4); 3-grams (4, 7, 4), (4, 3, 7).
_POOL = dict(ngram_counts=[0, 3, 9], pool_int64s=[4, 7, 9, 4, 7, 7, 4, 9, 4, 4, 7, 4, 4, 3, 7])
_INDEXES = list(range(8))

EXAMPLES = {
    "RegexFullMatch": [
        Example([_strings("abc", "ab1", "", "a.b", shape=(2, 2))], {"pattern": r"[a-z]+(\.[a-z]+)?"}, vmap=False),
    ],
    "StringConcat": [
        Example([_strings("ab", "", "的", shape=(3, 1)), _strings("x", "yz")], vmap=False),
    ],
    "StringNormalizer": [
        Example(
            [_strings("Monday", "tuesday", "MONDAY", "Wed", shape=(1, 4))],
            {"case_change_action": "UPPER", "stopwords": ["monday"]},
            vmap=False,
            reference=_normalized,
        ),
        Example(
            [_strings("Monday", "monday")],
            {"case_change_action": "LOWER", "is_case_sensitive": 1, "stopwords": ["monday"]},
            vmap=False,
            reference=_normalized,
        ),
    ],
    "StringSplit": [
        Example([_strings("a-b--c", "", "d-e-f-g", "h", shape=(2, 2))], {"delimiter": "-", "maxsplit": 2}, vmap=False),
        Example([_strings(" a  b ", "c", "  ")], vmap=False),
    ],
    "TfIdfVectorizer": [
        Example(
            [_TOKENS],
            {
                "mode": "TF",
                "min_gram_length": 1,
                "max_gram_length": 3,
                "max_skip_count": 2,
                "ngram_indexes": _INDEXES,
                **_POOL,
            },
        ),
        Example(
            [_TOKENS[1].astype(np.int32)],
            {
                "mode": "IDF",
                "min_gram_length": 2,
                "max_gram_length": 3,
                "max_skip_count": 1,
                "ngram_indexes": _INDEXES,
                "weights": [0.5 * (i + 1) for i in range(8)],
                **_POOL,
            },
        ),
        Example(
            [_TOKENS],
            {
                "mode": "TFIDF",
                "min_gram_length": 1,
                "max_gram_length": 2,
                "max_skip_count": 0,
                "ngram_indexes": _INDEXES,
                "weights": [0.5 * (i + 1) for i in range(8)],
                **_POOL,
            },
        ),
        Example(
            [_strings("to", "be", "or", "not", "to", "be", shape=(1, 6))],
            {
                "mode": "TF",
                "min_gram_length": 1,
                "max_gram_length": 2,
                "max_skip_count": 1,
                "ngram_counts": [0, 2],
                "ngram_indexes": [0, 1, 2, 3],
                "pool_strings": ["be", "to", "to", "be", "be", "to"],
            },
            vmap=False,
        ),
    ],
    "ImageDecoder": [
        Example([_png(_PIXELS)], {"pixel_format": pixel_format}) for pixel_format in ("RGB", "BGR", "Grayscale")
    ],
}
