"""The string ops and ImageDecoder beyond onnx's node cases: against onnxruntime where it
implements the op (RE2's own syntax, broadcasting, whitespace splits, Unicode case
mapping, TfIdfVectorizer's skips and modes on random pools, under `jax.jit` too), ImageDecoder
on a PNG and a JPEG made here against onnx.reference, and the errors: missing optional
dependencies, traced inputs, attributes outside the text."""

from __future__ import annotations

import io
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import jaxonnx
from jaxonnx import OnnxTypeError, OnnxValidationError, StaticValueError, UnsupportedOpError


def _model(op_type, input_types, output_types, opset=21, **attributes):
    inputs = [f"x{i}" for i in range(len(input_types))]
    outputs = [f"y{i}" for i in range(len(output_types))]
    node = helper.make_node(op_type, inputs, outputs, **attributes)
    graph = helper.make_graph(
        [node],
        op_type,
        [helper.make_tensor_value_info(n, t, None) for n, t in zip(inputs, input_types)],
        [helper.make_tensor_value_info(n, t, None) for n, t in zip(outputs, output_types)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model


def _strings(*values, shape=None):
    return np.array(values, dtype=object).reshape(shape if shape is not None else (len(values),))


def _assert_same(ours, theirs):
    for a, b in zip(ours, theirs):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, (a.shape, b.shape)
        if b.dtype == object:
            assert a.dtype == object and a.tolist() == b.tolist()
        else:
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def _against_onnxruntime(run_onnxruntime, op_type, inputs, input_types, output_types, **attributes):
    model = _model(op_type, input_types, output_types, **attributes)
    expected = run_onnxruntime(model, {f"x{i}": x for i, x in enumerate(inputs)})
    got = jaxonnx.load(model)(*inputs)
    _assert_same(got, expected)
    return got


# RE2's syntax where Python's `re` reads it otherwise: ASCII \w, \d, \b; POSIX classes;
# Unicode classes; case folding; the node suite's e-mail pattern.
_TEXTS = _strings("héllo", "hello", "abc123", "ABC", "x@gmail.com", "", "١٢٣", "a b", shape=(2, 4))


@pytest.mark.parametrize(
    "pattern",
    [r"\w+", r"[[:alpha:]]+", r"\pL+", r"(?i)abc", r"\d*", r"a\b.\bb", r"(\W|^)[\w.\-]{0,25}@(yahoo|gmail)\.com(\W|$)"],
)
def test_regex_full_match_is_re2(run_onnxruntime, pattern):
    _against_onnxruntime(
        run_onnxruntime, "RegexFullMatch", [_TEXTS], [TensorProto.STRING], [TensorProto.BOOL], pattern=pattern
    )


def test_regex_full_match_refuses_what_re2_lacks_and_names_the_missing_package(monkeypatch):
    with pytest.raises(
        OnnxValidationError, match=r"RegexFullMatch-20 got `pattern`='\(\?=a\)a', which is not valid RE2"
    ):
        jaxonnx.ops.regex_full_match(_strings("a"), pattern="(?=a)a")  # a lookahead: Python's re, not RE2
    from jaxonnx.ops._string import regex_full_match as module

    module._compiled.cache_clear()
    monkeypatch.setitem(sys.modules, "re2", None)  # as if google-re2 were not installed
    with pytest.raises(UnsupportedOpError, match=r"google-re2 .*pip install 'jaxonnx\[regex\]'"):
        jaxonnx.ops.regex_full_match(_strings("a"), pattern="a+")
    module._compiled.cache_clear()


@pytest.mark.parametrize("shapes", [((2, 3), (3,)), ((), ()), ((2, 1), (1, 3)), ((0, 2), (2,))])
def test_string_concat_broadcasts_as_onnxruntime(run_onnxruntime, shapes):
    rng = np.random.default_rng(0)
    words = ["", "a", "bc", "的", "é ", "xyz"]
    x, y = (np.array(rng.choice(words, shape), dtype=object) for shape in shapes)
    _against_onnxruntime(run_onnxruntime, "StringConcat", [x, y], [TensorProto.STRING] * 2, [TensorProto.STRING])


_SPLIT_TEXTS = _strings("a-b--c-", "-", "d e  f g ", " ", "\u00e9-\u4e2d-x", "no", shape=(3, 2))


@pytest.mark.parametrize(
    "attributes",
    [
        {"delimiter": "-"},
        {"delimiter": "-", "maxsplit": 1},
        {"delimiter": "--"},
        {},
        {"maxsplit": 1},
        {"delimiter": "", "maxsplit": -1},
    ],
)
def test_string_split_matches_onnxruntime(run_onnxruntime, attributes):
    _against_onnxruntime(
        run_onnxruntime,
        "StringSplit",
        [_SPLIT_TEXTS],
        [TensorProto.STRING],
        [TensorProto.STRING, TensorProto.INT64],
        **attributes,
    )


def test_string_split_where_onnxruntime_departs_from_the_text():
    # An empty string is one empty substring, as Python and onnx.reference split it
    # (onnxruntime 1.32 counts none): the text makes no exception for it.
    y, z = jaxonnx.ops.string_split(_strings("", "a"), delimiter=",")
    assert y.tolist() == [[""], ["a"]] and z.tolist() == [1, 1]
    y, z = jaxonnx.ops.string_split(_strings("", " "))  # whitespace splits drop it all
    assert y.shape == (2, 0) and z.tolist() == [0, 0]
    # Whitespace is every whitespace character, as the text says (onnxruntime 1.32 splits
    # at spaces only).
    y, z = jaxonnx.ops.string_split(_strings("a\tb\nc", "d\u00a0e"))
    assert y.tolist() == [["a", "b", "c"], ["d", "e", ""]] and z.tolist() == [3, 2]


_NORMALIZER_CASES = [
    (
        _strings("Monday", "monday", "MONDAY x", "Straße", "ǅ", "ß", "ΣΑΣ", "ᾳ"),
        {"case_change_action": "UPPER", "stopwords": ["monday"]},
    ),
    (
        _strings("Monday", "monday", "MONDAY x", "Straße", "ǅ", "Ǆ", "ΣΑΣ", "İ"),
        {"case_change_action": "LOWER", "stopwords": ["MONDAY"]},
    ),
    (_strings("Monday", "Straße", "STRASSE", shape=(1, 3)), {"stopwords": ["strasse", "MONDAY"]}),
    (
        _strings("Monday", "monday", shape=(1, 2)),
        {"stopwords": ["monday"], "is_case_sensitive": 1, "case_change_action": "UPPER"},
    ),
    (_strings("a", "A"), {"stopwords": ["a"], "case_change_action": "LOWER"}),
    (_strings("a", "A", shape=(1, 2)), {"stopwords": ["A"]}),
]


@pytest.mark.parametrize("X, attributes", _NORMALIZER_CASES)
def test_string_normalizer_matches_onnxruntime(run_onnxruntime, X, attributes):
    # onnxruntime builds a C++ locale: C.UTF-8 is there without language packs.
    try:
        _against_onnxruntime(
            run_onnxruntime,
            "StringNormalizer",
            [X],
            [TensorProto.STRING],
            [TensorProto.STRING],
            opset=10,
            locale="C.UTF-8",
            **attributes,
        )
    except Exception as error:  # noqa: BLE001 - only onnxruntime's missing locale is skipped
        if "Failed to construct locale" not in str(error):
            raise
        pytest.skip("onnxruntime cannot construct the C.UTF-8 locale on this machine")


def test_string_normalizer_turkish_i_and_shape_rules():
    words = _strings("iI", "ıİ")
    assert jaxonnx.ops.string_normalizer(words, case_change_action="UPPER", locale="tr_TR").tolist() == ["İI", "Iİ"]
    assert jaxonnx.ops.string_normalizer(words, case_change_action="LOWER", locale="az").tolist() == ["iı", "ıi"]
    assert jaxonnx.ops.string_normalizer(words, case_change_action="UPPER").tolist() == ["II", "Iİ"]
    with pytest.raises(
        OnnxValidationError, match=r"StringNormalizer-10 takes `X` of shape \[C\] or \[1, C\], got shape \(2, 2\)"
    ):
        jaxonnx.ops.string_normalizer(_strings("a", "b", "c", "d", shape=(2, 2)))
    with pytest.raises(OnnxValidationError, match="`case_change_action`='lower'"):
        jaxonnx.ops.string_normalizer(words, case_change_action="lower")


def _random_pool(rng, vocabulary, lengths):
    """A pool of distinct n-grams: ``lengths[n - 1]`` of each length ``n``."""
    pool, counts = [], []
    for n, count in enumerate(lengths, start=1):
        counts.append(len(pool))
        grams = {tuple(rng.choice(vocabulary, n)) for _ in range(4 * count)}
        pool += [t for gram in sorted(grams)[:count] for t in gram]
    return pool, counts


_TF_IDF = jaxonnx.get_op("TfIdfVectorizer", 9)


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
def test_tf_idf_vectorizer_matches_onnxruntime_on_random_pools_eager_and_jitted(run_onnxruntime, mode):
    rng = np.random.default_rng({"TF": 0, "IDF": 1, "TFIDF": 2}[mode])
    X = rng.integers(0, 6, (3, 17)).astype(np.int64)
    pool, counts = _random_pool(rng, np.arange(7), (4, 6, 5))
    size = 15
    for low, high, skips in [(1, 3, 3), (2, 3, 0), (2, 2, 5), (3, 3, 2), (1, 1, 2)]:
        attributes = dict(
            mode=mode,
            min_gram_length=low,
            max_gram_length=high,
            max_skip_count=skips,
            ngram_counts=counts,
            ngram_indexes=list(range(size)),
            pool_int64s=[int(t) for t in pool],
            # Quarters: onnxruntime adds a weight once per occurrence where the
            # text multiplies; with these both are exact.
            weights=(rng.integers(1, 16, size) / 4).tolist(),
        )
        model = _model("TfIdfVectorizer", [TensorProto.INT64], [TensorProto.FLOAT], **attributes)
        (expected,) = run_onnxruntime(model, {"x0": X})
        # numpy inputs compute in numpy (as values known at trace time do): the same walk.
        np.testing.assert_array_equal(_TF_IDF(X, **attributes), expected)
        np.testing.assert_array_equal(_TF_IDF(X[1], **attributes), expected[1])
    # One compiled program per pool (about a second to compile): the last attributes only.
    jitted = jax.jit(lambda x: jaxonnx.ops.tf_idf_vectorizer(x, **attributes))
    np.testing.assert_array_equal(jitted(jnp.asarray(X)), expected)


def test_tf_idf_vectorizer_strings_match_onnxruntime(run_onnxruntime):
    X = _strings("to", "be", "or", "not", "to", "be", "x", "", "be", "to", "be", "to", shape=(2, 6))
    attributes = dict(
        mode="TFIDF",
        min_gram_length=1,
        max_gram_length=3,
        max_skip_count=1,
        ngram_counts=[0, 2, 6],
        ngram_indexes=list(range(7)),
        weights=[1.0, 2.0, 0.5, 0.25, 3.0, 4.0, 1.5],
        pool_strings=["be", "to", "to", "be", "be", "to", "to", "be", "or", "be", "to", "be", "or", "not", "to"],
    )
    _against_onnxruntime(
        run_onnxruntime, "TfIdfVectorizer", [X], [TensorProto.STRING], [TensorProto.FLOAT], **attributes
    )


def test_tf_idf_vectorizer_weights_follow_the_pool_and_ints_outside_the_input_type_never_match():
    # The text: `weights[i]` scales the pool's i-th n-gram, whose coordinate is ngram_indexes[i].
    y = _TF_IDF(
        np.array([5, 6, 5], np.int64),
        mode="TFIDF",
        min_gram_length=1,
        max_gram_length=1,
        max_skip_count=0,
        ngram_counts=[0],
        ngram_indexes=[2, 0, 1],
        pool_int64s=[5, 6, 7],
        weights=[10.0, 20.0, 30.0],
    )
    np.testing.assert_array_equal(y, np.array([20.0, 0.0, 20.0], np.float32))
    y = _TF_IDF(
        np.array([-1, 7], np.int32),
        mode="TF",
        min_gram_length=1,
        max_gram_length=1,
        max_skip_count=0,
        ngram_counts=[0],
        ngram_indexes=[0, 1],
        pool_int64s=[2**32 - 1, 7],
    )
    np.testing.assert_array_equal(y, np.array([0.0, 1.0], np.float32))


def test_tf_idf_vectorizer_refuses_attributes_outside_the_text():
    base = dict(
        mode="TF",
        min_gram_length=1,
        max_gram_length=2,
        max_skip_count=0,
        ngram_counts=[0, 2],
        ngram_indexes=[0, 1, 2],
        pool_int64s=[1, 2, 1, 2],
    )
    X = np.array([1, 2], np.int64)
    assert _TF_IDF(X, **base).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(OnnxValidationError, match="got 3 pool items for the 2-grams .* not a multiple of 2"):
        jaxonnx.ops.tf_idf_vectorizer(X, **{**base, "ngram_counts": [0, 1], "ngram_indexes": [0, 1]})
    with pytest.raises(OnnxValidationError, match=r"one of `weights` per n-gram of the pool \(3\), got 2"):
        jaxonnx.ops.tf_idf_vectorizer(X, **base, weights=[1.0, 2.0])
    with pytest.raises(OnnxTypeError, match="needs string `X` for the given `pool_strings`"):
        jaxonnx.ops.tf_idf_vectorizer(X, **{**base, "pool_int64s": None, "pool_strings": ["a", "b", "a", "b"]})
    with pytest.raises(OnnxValidationError, match="`mode`='BM25'"):
        jaxonnx.ops.tf_idf_vectorizer(X, **{**base, "mode": "BM25"})


def test_strings_never_enter_jax_jit():
    # A string graph input stops at jit's boundary (JAX refuses object arrays); a string
    # made inside the graph from a traced value stops at the node that would make it, with
    # the reason.
    concat = jaxonnx.load(_model("StringConcat", [TensorProto.STRING] * 2, [TensorProto.STRING]))
    assert concat(_strings("a"), _strings("b"))[0].tolist() == ["ab"]
    with pytest.raises(TypeError):
        jax.jit(concat)(_strings("a"), _strings("b"))
    cast = helper.make_node("Cast", ["x0"], ["s"], to=TensorProto.STRING)
    split = helper.make_node("StringSplit", ["s"], ["y0", "y1"])
    graph = helper.make_graph(
        [cast, split],
        "g",
        [helper.make_tensor_value_info("x0", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y1", TensorProto.INT64, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 9
    loaded = jaxonnx.load(model)
    with pytest.raises(OnnxTypeError, match="JAX cannot hold strings"):
        jax.jit(loaded)(jnp.array([1, 2]))
    # Called eagerly, the same model runs op by op (no string at its boundary, but one made
    # inside), as onnxruntime runs it.
    assert "Cast_0" in loaded.eager_mode and loaded.eager_mode.startswith("op by op")
    assert loaded(np.array([12, 3]))[0].tolist() == [1, 1]


@pytest.mark.parametrize("encoder", ["LabelEncoder", "CategoryMapper"])
def test_numbers_encoded_as_strings_inside_the_graph_run_eagerly(encoder):
    # skl2onnx-like: int64 labels become strings inside, the graph's output is a match.
    attributes = (
        {"keys_int64s": [1, 2], "values_strings": ["cat", "dog"], "default_string": "?"}
        if encoder == "LabelEncoder"
        else {"cats_int64s": [1, 2], "cats_strings": ["cat", "dog"]}
    )
    nodes = [
        helper.make_node(encoder, ["x0"], ["s"], domain="ai.onnx.ml", **attributes),
        helper.make_node("RegexFullMatch", ["s"], ["y0"], pattern="c.*"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x0", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y0", TensorProto.BOOL, [3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("ai.onnx.ml", 3)])
    model.ir_version = 9
    loaded = jaxonnx.load(model)
    assert loaded.eager_mode.startswith("op by op")
    assert loaded(np.array([1, 2, 1]))[0].tolist() == [True, False, True]


def _encoded(image, format, **options):
    stream = io.BytesIO()
    image.save(stream, format=format, **options)
    return np.frombuffer(stream.getvalue(), np.uint8).copy()


def _photo():
    from PIL import Image  # the `test` extra installs Pillow; only these tests need it

    # Smooth colours with an edge, 4:2:0 JPEG chroma subsampling in play.
    y, x = np.mgrid[0:19, 0:26]
    pixels = np.stack([x * 9, y * 13, (x * y) % 256], axis=2).astype(np.uint8)
    pixels[5:9, 3:20] = [250, 10, 40]
    return Image.fromarray(pixels, "RGB")


@pytest.mark.parametrize(
    "format, options",
    [("PNG", {}), ("JPEG", {"quality": 80}), ("PNG", {"mode": "RGBA"})],
    ids=["png", "jpeg", "png-rgba"],
)
@pytest.mark.parametrize("pixel_format", ["RGB", "BGR", "Grayscale"])
def test_image_decoder_matches_onnx_reference(format, options, pixel_format):
    image = _photo()
    if options.get("mode"):
        image = image.convert(options.pop("mode"))
        image.putalpha(128)
    stream = _encoded(image, format, **options)
    got = jaxonnx.ops.image_decoder(stream, pixel_format=pixel_format)
    assert got.dtype == np.uint8 and got.shape == (19, 26, 1 if pixel_format == "Grayscale" else 3)
    if image.mode == "RGBA":  # onnx.reference keeps the alpha channel; the text has 3 channels
        rgb = np.asarray(image)[:, :, :3]
        expected = {"RGB": rgb, "BGR": rgb[:, :, ::-1]}.get(pixel_format, np.asarray(image.convert("L"))[:, :, None])
    else:
        model = _model("ImageDecoder", [TensorProto.UINT8], [TensorProto.UINT8], opset=20, pixel_format=pixel_format)
        (expected,) = ReferenceEvaluator(model).run(None, {"x0": stream})
    np.testing.assert_array_equal(got, expected)
    if format == "PNG":  # lossless: the very pixels
        np.testing.assert_array_equal(
            got[:, :, :3] if pixel_format != "Grayscale" else got,
            {"RGB": np.asarray(_photo()), "BGR": np.asarray(_photo())[:, :, ::-1]}.get(
                pixel_format, np.asarray(_photo().convert("L"))[:, :, None]
            ),
        )


def test_image_decoder_in_a_model_runs_op_by_op_and_refuses_a_traced_stream():
    stream = _encoded(_photo(), "PNG")
    model = jaxonnx.load(_model("ImageDecoder", [TensorProto.UINT8], [TensorProto.UINT8], opset=20))
    assert model.eager_mode.startswith("op by op")
    np.testing.assert_array_equal(model(stream)[0], np.asarray(_photo()))
    with pytest.raises(StaticValueError, match="`encoded_stream`"):
        jax.jit(model)(jnp.asarray(stream))


def test_image_decoder_gives_an_empty_image_for_a_corrupt_stream_and_names_pillow_when_missing(monkeypatch):
    truncated = _encoded(_photo(), "PNG")[:40]
    assert jaxonnx.ops.image_decoder(truncated).shape == (0, 0, 3)
    assert jaxonnx.ops.image_decoder(np.array([1, 2, 3], np.uint8), pixel_format="Grayscale").shape == (0, 0, 1)
    with pytest.raises(OnnxValidationError, match="`pixel_format`='RGBA'"):
        jaxonnx.ops.image_decoder(truncated, pixel_format="RGBA")
    monkeypatch.setitem(sys.modules, "PIL.Image", None)  # as if Pillow were not installed
    with pytest.raises(UnsupportedOpError, match=r"ImageDecoder-20 needs Pillow .*pip install 'jaxonnx\[image\]'"):
        jaxonnx.ops.image_decoder(truncated)
