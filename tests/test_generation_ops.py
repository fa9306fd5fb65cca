"""onnxruntime's generation ops (com.microsoft BeamSearch, GreedySearch, Sampling) against
onnxruntime itself, on files its ``convert_generation`` tool wrote from tiny random GPT-2 and
T5 models (tests/fixtures/generation_ops/, made by tools/export_generation_op_fixtures.py),
and the decode-step DecoderMaskedMultiHeadAttention against onnxruntime's CPU kernel.

Sequences must be equal token for token, scores equal at float32 tolerance; under
``jax.jit`` a whole search is one ``while`` loop with no host callback.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import onnxruntime as ort
import pytest

import jaxonnx
from jaxonnx._errors import StaticValueError

FIXTURES = Path(__file__).parent / "fixtures" / "generation_ops"
VOCAB = 96
GPT2_PAD = 95  # convert_generation makes GPT-2's pad token its end token


def _prompts(batch: int, length: int, *, seed: int = 0, left_padding: int = 0) -> tuple[np.ndarray, np.ndarray]:
    ids = np.random.default_rng(seed).integers(2, 90, (batch, length)).astype(np.int32)
    mask = np.ones_like(ids)
    if left_padding:
        ids[-1, :left_padding], mask[-1, :left_padding] = GPT2_PAD, 0
    return ids, mask


def _beam_feeds(
    ids,
    mask,
    *,
    max_length=12,
    beams=4,
    returned=2,
    length_penalty=1.0,
    repetition_penalty=1.0,
    vocab_mask=None,
    prefix_vocab_mask=None,
    min_length=0,
):
    batch = ids.shape[0]
    return {
        "input_ids": ids,
        "max_length": np.array([max_length], np.int32),
        "min_length": np.array([min_length], np.int32),
        "num_beams": np.array([beams], np.int32),
        "num_return_sequences": np.array([returned], np.int32),
        "length_penalty": np.array([length_penalty], np.float32),
        "repetition_penalty": np.array([repetition_penalty], np.float32),
        "vocab_mask": np.ones(VOCAB, np.int32) if vocab_mask is None else vocab_mask,
        "prefix_vocab_mask": np.ones((batch, VOCAB), np.int32) if prefix_vocab_mask is None else prefix_vocab_mask,
        "attention_mask": mask,
    }


@functools.cache
def _session(name: str) -> ort.InferenceSession:
    return ort.InferenceSession(str(FIXTURES / name), providers=["CPUExecutionProvider"])


@functools.cache
def _model(name: str) -> jaxonnx.Model:
    return jaxonnx.load(FIXTURES / name)


# The inputs a search reads at trace time (`search.static_int`): the shapes of its loop.
_STATIC = ("max_length", "num_beams", "num_return_sequences")


@functools.cache
def _jitted_search(name: str, static: tuple[tuple[str, int], ...]):
    """The file's search under ``jax.jit``, its static inputs fixed: the cases that differ only
    in traced inputs (penalties, masks, min_length) run one compiled program."""
    model, fixed = _model(name), {k: np.array([v], np.int32) for k, v in static}
    return jax.jit(lambda feeds: model(**feeds, **fixed))


def _run_both(name: str, feeds: dict, *, eager: bool = False):
    """onnxruntime's outputs and jaxonnx's, under jax.jit (the file's eager call where ``eager``;
    test_a_search_under_jit_is_one_while_loop_without_callbacks checks that the two agree)."""
    session = _session(name)
    wanted = {i.name for i in session.get_inputs()}
    feeds = {k: v for k, v in feeds.items() if k in wanted}
    expected = session.run(None, feeds)
    if eager:
        actual = _model(name)(**feeds)
    else:
        static = tuple((k, int(feeds[k][0])) for k in _STATIC if k in feeds)
        actual = _jitted_search(name, static)({k: v for k, v in feeds.items() if k not in _STATIC})
    actual = list(actual.values()) if isinstance(actual, dict) else list(actual)
    return expected, [np.asarray(a) for a in actual]


def _assert_equal_to_onnxruntime(expected, actual):
    assert len(actual) == len(expected)
    if len(expected) == 3:
        # BeamSearch's per-step scores: onnxruntime leaves the steps after the search ended
        # unwritten (whatever its buffer held: 0, NaN, ...), and jaxonnx writes 0 there.
        ran = np.array([np.any(step != 0) for step in actual[2]])
        steps = int(np.argmin(ran)) if not ran.all() else len(ran)
        assert ran[:steps].all() and not ran[steps:].any()
        expected, actual = [*expected[:2], expected[2][:steps]], [*actual[:2], actual[2][:steps]]
    for e, a in zip(expected, actual):
        assert a.shape == e.shape and a.dtype == e.dtype, (a.shape, e.shape, a.dtype, e.dtype)
        if e.dtype.kind == "i":
            np.testing.assert_array_equal(a, e)
        else:
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=2e-5)


_MASK = np.ones(VOCAB, np.int32)
_MASK[[7, 19, 24, 46, 57]] = 0
_PREFIX = np.ones((2, VOCAB), np.int32)
_PREFIX[0, 40:] = 0
_PREFIX[1, :50] = 0

BEAM_CASES = {
    "four_beams": dict(),
    "one_beam": dict(beams=1, returned=1),
    "length_penalty": dict(length_penalty=0.6),
    "repetition_penalty": dict(repetition_penalty=1.7),
    "vocab_masks": dict(vocab_mask=_MASK, prefix_vocab_mask=_PREFIX),
    "min_length": dict(min_length=10, length_penalty=1.4),
    # Few tokens allowed, the end token among them: hypotheses close, entries finish early.
    "early_end": dict(vocab_mask=np.isin(np.arange(VOCAB), [GPT2_PAD, 20, 21, 22, 23]).astype(np.int32), max_length=16),
}


@pytest.mark.parametrize("case", BEAM_CASES)
def test_gpt2_beam_search_equals_onnxruntime(case):
    # Batch 2 with the second prompt left-padded: positions and the mask follow the pad tokens.
    ids, mask = _prompts(2, 5, left_padding=2)
    expected, actual = _run_both("gpt2_beam_search.onnx", _beam_feeds(ids, mask, **BEAM_CASES[case]))
    _assert_equal_to_onnxruntime(expected, actual)
    if case == "early_end":  # the case is what it says: hypotheses shorter than max_length
        assert np.any(expected[0][..., -1] == GPT2_PAD)
        assert not np.any(actual[2][-1])  # and the search ended before max_length


def test_gpt2_beam_search_no_repeat_ngram_early_stopping_equals_onnxruntime():
    ids, mask = _prompts(2, 4, seed=3)
    feeds = _beam_feeds(ids, mask, max_length=14, repetition_penalty=0.5)  # a penalty < 1 favours repeats
    expected, actual = _run_both("gpt2_beam_search_no_repeat_ngram.onnx", feeds, eager=True)
    _assert_equal_to_onnxruntime(expected, actual)
    for sequence in expected[0].reshape(-1, feeds["max_length"][0]):
        bigrams = [tuple(sequence[i : i + 2]) for i in range(len(sequence) - 1) if sequence[i + 1] != GPT2_PAD]
        assert len(bigrams) == len(set(bigrams))  # the property the processor keeps


T5_EOS, T5_PAD = 1, 0
T5_CASES = {
    **{case: BEAM_CASES[case] for case in ("four_beams", "length_penalty", "vocab_masks")},
    "early_end": dict(vocab_mask=np.isin(np.arange(VOCAB), [T5_EOS, 20]).astype(np.int32), max_length=16),
}


@pytest.mark.parametrize("case", T5_CASES)
def test_t5_beam_search_equals_onnxruntime(case):
    ids, mask = _prompts(2, 6, seed=1)
    mask[1, :2] = 0  # the encoder's padding mask
    # The first case eagerly (T5's encoder and decoder, op by op on concrete values), the others under jax.jit.
    feeds = _beam_feeds(ids, mask, **T5_CASES[case])
    expected, actual = _run_both("t5_beam_search.onnx", feeds, eager=case == "four_beams")
    _assert_equal_to_onnxruntime(expected, actual)
    np.testing.assert_array_equal(expected[0][..., 0], 0)  # every sequence starts with decoder_start_token_id
    if case == "early_end":
        assert np.any(expected[0][..., -1] == T5_PAD)  # hypotheses closed before max_length


def _greedy_feeds(ids, mask, *, max_length=12, repetition_penalty=1.0, vocab_mask=None, prefix_vocab_mask=None):
    feeds = _beam_feeds(
        ids,
        mask,
        max_length=max_length,
        repetition_penalty=repetition_penalty,
        vocab_mask=vocab_mask,
        prefix_vocab_mask=prefix_vocab_mask,
    )
    for beam_only in ("num_beams", "num_return_sequences", "length_penalty"):
        del feeds[beam_only]
    return feeds


_FEW_TOKENS = np.isin(np.arange(VOCAB), [GPT2_PAD, 20]).astype(np.int32)  # the end token likely


@pytest.mark.parametrize(
    "options",
    [
        dict(),
        dict(repetition_penalty=1.8, vocab_mask=_MASK, prefix_vocab_mask=_PREFIX),
        dict(vocab_mask=_FEW_TOKENS),
        dict(vocab_mask=_FEW_TOKENS, min_length=9),
    ],
    ids=["plain", "processors", "early_end", "min_length"],
)
def test_gpt2_greedy_search_equals_onnxruntime(options):
    ids, mask = _prompts(2, 5, seed=2, left_padding=1)
    options = dict(options)
    min_length = options.pop("min_length", 0)
    feeds = {**_greedy_feeds(ids, mask, max_length=14, **options), "min_length": np.array([min_length], np.int32)}
    expected, actual = _run_both("gpt2_greedy_search.onnx", feeds, eager=not options)  # "plain" eagerly
    # Once every row has ended, onnxruntime stops and leaves the rest of its output unwritten
    # (what its buffer held before); jaxonnx writes the pad token there.
    ended = np.cumsum(expected[0][:, 5:] == GPT2_PAD, axis=1) > 0
    done_at = 5 + int(np.argmax(ended.all(axis=0))) + 1 if ended.all(axis=0).any() else feeds["max_length"][0]
    _assert_equal_to_onnxruntime([expected[0][:, :done_at]], [actual[0][:, :done_at]])
    assert np.all(actual[0][:, done_at:] == GPT2_PAD)
    if options.get("vocab_mask") is _FEW_TOKENS:  # the cases are what they say
        assert (done_at < feeds["max_length"][0]) == (min_length == 0)
        assert not np.any(expected[0][:, 5:min_length] == GPT2_PAD)


def test_a_search_under_jit_is_one_while_loop_without_callbacks():
    ids, mask = _prompts(2, 5)
    feeds = _beam_feeds(ids, mask)
    traced = {k: v for k, v in feeds.items() if k not in _STATIC}
    # The compiled search of test_gpt2_beam_search_equals_onnxruntime's cases (the same shapes).
    search = _jitted_search("gpt2_beam_search.onnx", tuple((k, int(feeds[k][0])) for k in _STATIC))
    text = str(jax.make_jaxpr(search)(traced))
    assert text.count("while[") == 1
    assert "callback" not in text
    jitted = [np.asarray(a) for a in jax.tree.leaves(search(traced))]
    eager = [np.asarray(a) for a in jax.tree.leaves(_model("gpt2_beam_search.onnx")(**feeds))]
    for j, e in zip(jitted, eager):
        np.testing.assert_allclose(j, e, rtol=1e-6, atol=1e-6)


def test_a_traced_max_length_is_refused_by_name():
    ids, mask = _prompts(1, 4)
    feeds = _greedy_feeds(ids, mask)
    model = jaxonnx.load(FIXTURES / "gpt2_greedy_search.onnx")
    others = {k: v for k, v in feeds.items() if k != "max_length"}
    with pytest.raises(StaticValueError, match="max_length"):
        jax.jit(lambda max_length: model(max_length=max_length, **others))(feeds["max_length"])


def _sampling_file(top_p: float):
    """The convert_generation Sampling file (top_p 0.6) with another ``top_p``."""
    import onnx

    model = onnx.load(FIXTURES / "gpt2_sampling.onnx")
    for attribute in model.graph.node[0].attribute:
        if attribute.name == "top_p":
            attribute.f = top_p
    return model


@pytest.mark.parametrize("top_p", [1e-6, 0.0])
def test_sampling_with_a_tiny_top_p_equals_onnxruntime_and_greedy(top_p):
    # Only the most likely token survives (top_p 0 included, as onnxruntime filters):
    # onnxruntime's draw and ours both pick it.
    ids, mask = _prompts(2, 5, seed=4, left_padding=1)
    feeds = _greedy_feeds(ids, mask, repetition_penalty=1.3, vocab_mask=_MASK)
    model_proto = _sampling_file(top_p)
    session = ort.InferenceSession(model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)[0]
    greedy = ort.InferenceSession(str(FIXTURES / "gpt2_greedy_search.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(expected, greedy.run(None, feeds)[0])
    model = jaxonnx.load(model_proto)
    actual = model(**feeds, rng=jax.random.key(0))
    actual = np.asarray(jax.tree.leaves(actual)[0])
    np.testing.assert_array_equal(actual, expected)


def test_sampling_draws_from_the_key_within_top_p():
    ids, mask = _prompts(2, 5, seed=5)
    feeds = _greedy_feeds(ids, mask, max_length=16, vocab_mask=_MASK)
    model = jaxonnx.load(FIXTURES / "gpt2_sampling.onnx")
    static = {k: v for k, v in feeds.items() if k != "input_ids"}

    def draw(input_ids, key):
        return jax.tree.leaves(model(input_ids=input_ids, **static, rng=key))[0]

    assert str(jax.make_jaxpr(draw)(ids, jax.random.key(0))).count("while[") == 1
    jitted = jax.jit(draw)
    draws = [np.asarray(jitted(jnp.asarray(ids), jax.random.key(k))) for k in range(6)]
    np.testing.assert_array_equal(
        draws[0], np.asarray(jitted(jnp.asarray(ids), jax.random.key(0)))
    )  # one key, one draw
    assert len({d.tobytes() for d in draws}) > 1  # the key decides the draw
    for d in draws:
        np.testing.assert_array_equal(d[:, :5], ids)
        assert np.all(_MASK[d[:, 5:]] == 1)  # no masked token is ever drawn
        assert np.all(d < VOCAB)


# DecoderMaskedMultiHeadAttention against onnxruntime's CPU kernel, node by node.
_DMMHA_INPUTS = [
    "query",
    "key",
    "value",
    "mask_index",
    "attention_bias",
    "past_key",
    "past_value",
    "past_sequence_length",
    "beam_width",
    "cache_indirection",
    "bias",
]


def _dmmha_session(feeds: dict, outputs: int, **attributes):
    from onnx import TensorProto, helper

    names = [n if n in feeds else "" for n in _DMMHA_INPUTS]
    while names[-1] == "":
        names.pop()
    integer = {"mask_index", "past_sequence_length", "beam_width", "cache_indirection"}
    output_names = ["output", "present_key", "present_value"][:outputs]
    node = helper.make_node(
        "DecoderMaskedMultiHeadAttention", names, output_names, domain="com.microsoft", **attributes
    )
    graph = helper.make_graph(
        [node],
        "dmmha",
        [
            helper.make_tensor_value_info(n, TensorProto.INT32 if n in integer else TensorProto.FLOAT, None)
            for n in names
            if n
        ],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in output_names],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _dmmha_feeds(seed: int = 0, batch: int = 4, heads: int = 2, head: int = 8, max_length: int = 7, past: int = 3):
    rng = np.random.default_rng(seed)
    normal = lambda *shape: rng.normal(size=shape).astype(np.float32)  # noqa: E731
    hidden = heads * head
    return {
        "query": normal(batch, 1, hidden),
        "key": normal(batch, 1, hidden),
        "value": normal(batch, 1, hidden),
        "past_key": normal(batch, heads, max_length, head),
        "past_value": normal(batch, heads, max_length, head),
        "past_sequence_length": np.array([past], np.int32),
    }


_PAD_MASK = np.ones((4, 4), np.int32)
_PAD_MASK[1, 0] = _PAD_MASK[2, 1] = 0
_INDIRECTION = np.random.default_rng(9).integers(0, 2, (2, 2, 7)).astype(np.int32)
DMMHA_CASES = {
    "plain": ({}, {}),
    "padding_mask": ({"mask_index": _PAD_MASK}, {}),
    "beams": ({"beam_width": np.array([2], np.int32), "cache_indirection": _INDIRECTION}, {}),
    "beams_and_mask": (
        {"beam_width": np.array([2], np.int32), "cache_indirection": _INDIRECTION, "mask_index": _PAD_MASK},
        {},
    ),
    "scale_and_attention_bias": (
        {"attention_bias": np.random.default_rng(2).normal(size=(4, 2, 1, 4)).astype(np.float32)},
        {"scale": 0.3},
    ),
    "projection_bias": ({"bias": np.random.default_rng(3).normal(size=(48,)).astype(np.float32)}, {}),
}


@pytest.mark.parametrize("case", DMMHA_CASES)
def test_decoder_masked_multihead_attention_equals_onnxruntime(case):
    extra, attributes = DMMHA_CASES[case]
    feeds = {**_dmmha_feeds(), **extra}
    attributes = {"num_heads": 2, "past_present_share_buffer": 1, **attributes}
    session = _dmmha_session(feeds, 3, **attributes)
    expected = session.run(None, feeds)
    op = jaxonnx.get_op("DecoderMaskedMultiHeadAttention", 1, "com.microsoft")

    def step(past_sequence_length):  # the position may be traced: a decode loop keeps one shape
        args = [({**feeds, "past_sequence_length": past_sequence_length}).get(n) for n in _DMMHA_INPUTS]
        return op(*args, **attributes)

    for actual in (step(feeds["past_sequence_length"]), jax.jit(step)(jnp.asarray(feeds["past_sequence_length"]))):
        for e, a in zip(expected, actual):
            np.testing.assert_allclose(np.asarray(a), e, rtol=1e-5, atol=1e-5)


def test_decoder_masked_multihead_attention_cross_attention_equals_onnxruntime():
    rng = np.random.default_rng(4)
    feeds = {
        "query": rng.normal(size=(3, 1, 16)).astype(np.float32),
        "key": rng.normal(size=(3, 2, 5, 8)).astype(np.float32),
        "value": rng.normal(size=(3, 2, 5, 8)).astype(np.float32),
        "mask_index": np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [0, 1, 1, 1, 1]], np.int32),
    }
    session = _dmmha_session(feeds, 1, num_heads=2)
    expected = session.run(None, feeds)[0]
    op = jaxonnx.get_op("DecoderMaskedMultiHeadAttention", 1, "com.microsoft")
    actual = op(*[feeds.get(n) for n in _DMMHA_INPUTS[:4]], num_heads=2)
    np.testing.assert_allclose(np.asarray(jax.tree.leaves(actual)[0]), expected, rtol=1e-5, atol=1e-5)


def test_decoder_masked_multihead_attention_refuses_a_bias_read_through_beams():
    feeds = {**_dmmha_feeds(), "cache_indirection": _INDIRECTION, "attention_bias": np.zeros((4, 2, 1, 4), np.float32)}
    op = jaxonnx.get_op("DecoderMaskedMultiHeadAttention", 1, "com.microsoft")
    with pytest.raises(jaxonnx.OnnxValidationError, match="cache_indirection"):
        op(*[feeds.get(n) for n in _DMMHA_INPUTS], num_heads=2, past_present_share_buffer=1)


def test_gpt2_beam_search_with_an_init_decoder_equals_onnxruntime():
    # convert_generation adds an `init_decoder` for the prompt's call where its pattern matching
    # succeeds (it fails on these tiny exports). Here it is the decoder with its logits halved,
    # so that the first step tells whether it ran.
    import onnx
    from onnx import helper

    model = onnx.load(FIXTURES / "gpt2_beam_search.onnx")
    node = model.graph.node[0]
    init_decoder = onnx.GraphProto()
    init_decoder.CopyFrom(next(a.g for a in node.attribute if a.name == "decoder"))
    init_decoder.name = "gpt2 init decoder"
    for inner in init_decoder.node:
        inner.output[:] = ["unhalved_logits" if name == "logits" else name for name in inner.output]
    init_decoder.initializer.append(helper.make_tensor("half", onnx.TensorProto.FLOAT, [], [0.5]))
    init_decoder.node.append(helper.make_node("Mul", ["unhalved_logits", "half"], ["logits"]))
    node.attribute.append(helper.make_attribute("init_decoder", init_decoder))
    ids, mask = _prompts(2, 5, seed=6, left_padding=1)
    feeds = _beam_feeds(ids, mask, length_penalty=0.8)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    plain = ort.InferenceSession(str(FIXTURES / "gpt2_beam_search.onnx"), providers=["CPUExecutionProvider"])
    assert not np.allclose(expected[2][0], plain.run(None, feeds)[2][0])  # the init decoder made the first step
    actual = [np.asarray(a) for a in jax.tree.leaves(jaxonnx.load(model)(**feeds))]
    _assert_equal_to_onnxruntime(expected, actual)


@pytest.mark.parametrize("name", ["t5_beam_search.onnx", "gpt2_beam_search.onnx"])
def test_check_reports_the_generation_files_supported(name, capsys):
    # convert_generation's T5 file has a com.microsoft node without importing the domain:
    # `check` resolves it as `load` (and onnxruntime) do.
    from jaxonnx import cli

    assert cli.main(["check", str(FIXTURES / name)]) == 0
    out = capsys.readouterr().out
    assert "NOT supported" not in out and re.search(r"com\.microsoft\.BeamSearch +BeamSearch-1 +supported", out)


@functools.cache
def _jitted_top_p_filter():
    """top_p_filter under jax.jit, ``top_p`` traced (as in a search): one compile per ``keep``
    instead of its primitives compiled one by one."""
    from jaxonnx.ops._helpers.search import top_p_filter

    return jax.jit(top_p_filter, static_argnums=(2, 3))


@pytest.mark.parametrize("top_p, keep", [(0.6, 1), (0.9, 1), (0.3, 4), (0.0, 1), (1.0, 1)])
def test_top_p_filter_keeps_what_onnxruntime_keeps(top_p, keep):
    scores = np.random.default_rng(7).normal(size=(3, 20)).astype(np.float32) * 2
    actual = np.asarray(_jitted_top_p_filter()(scores, top_p, -np.inf, keep))
    for row, filtered in zip(scores, actual):  # onnxruntime's cumulate_and_filter, in a loop
        order = np.argsort(row, kind="stable")
        probabilities = np.exp(row[order] - row.max())
        cumulative = np.cumsum((probabilities / probabilities.sum()).astype(np.float32))
        removed = {int(order[j]) for j in range(len(row) - keep) if cumulative[j] <= np.float32(1) - np.float32(top_p)}
        assert {int(i) for i in np.flatnonzero(np.isinf(filtered))} == removed
        assert len(removed) <= len(row) - keep


def test_sampling_draws_follow_the_filtered_distribution():
    # A bigram decoder as a Python function; the first drawn token's frequencies over 4000 keys
    # against softmax(temperature-scaled logits) restricted by top-p (a chi-square test).
    table = np.random.default_rng(8).normal(size=(6, 6)).astype(np.float32)

    def decoder(ids, positions, mask):
        return (jnp.asarray(table)[ids],)

    decoder.input_names, decoder.inputs = ("input_ids", "position_ids", "attention_mask"), ()
    temperature, top_p = 0.8, 0.85
    draw = jax.jit(
        jax.vmap(
            lambda key: jaxonnx.ops.sampling(
                np.array([[2]], np.int32),
                np.array([2], np.int32),
                eos_token_id=5,
                pad_token_id=5,
                decoder=decoder,
                temperature=temperature,
                top_p=top_p,
                rng=key,
            )[0, 1]
        )
    )
    counts = np.bincount(np.asarray(draw(jax.random.split(jax.random.key(3), 4000))), minlength=6)
    logits = table[2] / temperature
    order = np.argsort(logits)
    probabilities = np.exp(logits - logits.max())
    probabilities /= probabilities.sum()
    kept = np.ones(6, bool)
    kept[order[np.cumsum(probabilities[order]) <= 1 - top_p]] = False
    expected = np.where(kept, probabilities, 0) / probabilities[kept].sum() * counts.sum()
    assert np.all(counts[~kept] == 0) and (~kept).any()
    chi_square = np.sum((counts[kept] - expected[kept]) ** 2 / expected[kept])
    assert chi_square < 20.5  # the 0.999 quantile for 5 degrees of freedom at most


def _bigram_decoder():
    table = jnp.log(jnp.array([[0.1, 0.6, 0.3], [0.2, 0.1, 0.7], [0.3, 0.3, 0.4]]))

    def decoder(ids, positions, mask):
        return (table[ids],)

    decoder.input_names, decoder.inputs = ("input_ids", "position_ids", "attention_mask"), ()
    return decoder


@pytest.mark.parametrize(
    "input_ids, beams, returned, attributes, message",
    [
        (np.array([[0.0]], np.float32), 2, 2, {}, "needs int32 `input_ids`"),
        (np.array([[0]], np.int32), 2, 3, {}, "`num_return_sequences` <= `num_beams`, got 3 and 2"),
        (np.array([[0]], np.int32), 0, 1, {}, "`num_beams` >= 1, got 0"),
        (np.array([[0]], np.int32), 2, 1, {"model_type": 2}, "`model_type` 0 \\(GPT-2\\) and 1 \\(T5\\), got 2"),
        (np.array([[0]], np.int32), 2, 1, {"model_type": 1}, "needs the `encoder` subgraph"),
    ],
)
def test_beam_search_errors_name_the_argument(input_ids, beams, returned, attributes, message):
    one = lambda n: np.array([n], np.int32)  # noqa: E731
    with pytest.raises(jaxonnx.OnnxValidationError, match=message):
        jaxonnx.ops.beam_search(
            input_ids,
            one(4),
            None,
            one(beams),
            one(returned),
            eos_token_id=2,
            pad_token_id=0,
            decoder=_bigram_decoder(),
            **attributes,
        )
