"""jaxonnx.generate on causal LMs that other tools exported, against onnxruntime's KV-cache loop.

The fixtures (``tests/fixtures/generation/``, made by ``tools/export_generation_fixtures.py``)
are tiny random Llama, GPT-2, Qwen2, Phi and Gemma models exported by HF Optimum
(``text-generation-with-past``) and by torch's dynamo exporter, Mistral (a sliding window) and
Qwen3-MoE (experts routed by NonZero, decoded with size hints) by Optimum, and Llama, Qwen2
and Gemma-2 (a sliding-window cache) built by
onnxruntime-genai's model builder (fp32 and int4: GroupQueryAttention, MatMulNBits). The
reference is a plain onnxruntime loop whose cache grows by one token a step, as Optimum's own
``generate`` runs them; the manifest also holds torch's ``generate`` tokens for the same
prompts, and for the builder's files ``og.Generator``'s tokens of each prompt alone.
"""

from __future__ import annotations

import doctest
import functools
import json
import os
import re

import chex
import jax
import jax.numpy as jnp
import numpy as np
import onnx
import onnxruntime
import pytest
import scipy.stats

import jaxonnx
from jaxonnx import generation
from jaxonnx.generation import cache_dims_beside, filtered_logits, find_cache
from jaxonnx.generation.decode import compiled_decode_loop, decode_loop

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "generation")
with open(os.path.join(FIXTURES, "manifest.json")) as _file:
    MANIFEST = json.load(_file)
NAMES = sorted(name for name, entry in MANIFEST.items() if "error" not in entry)
NEW_TOKENS = 8
SIGNIFICANCE = 1e-3  # a chi-square test at this level fails once in a thousand seeds, and would fail a wrong sampler


def _path(name: str) -> str:
    return os.path.join(FIXTURES, name, "model.onnx")


def _needs_ops_of_issue_32(name: str):
    """The builder's files need com.microsoft's GroupQueryAttention and
    SkipSimplifiedLayerNormalization (issue 32); until jaxonnx registers them, say which are missing."""
    missing = jaxonnx.unsupported_nodes(onnx.load(_path(name)))
    return pytest.mark.skipif(bool(missing), reason=f"{name} needs ops jaxonnx does not register yet: {missing[:2]}")


def _prompts(name: str) -> tuple[np.ndarray, np.ndarray]:
    entry = MANIFEST[name]
    return np.array(entry["prompt_ids"]), np.array(entry["prompt_mask"])


class OnnxruntimeLM:
    """onnxruntime's decode loop with a growing cache: the reference."""

    def __init__(self, name: str):
        self.session = onnxruntime.InferenceSession(_path(name), providers=["CPUExecutionProvider"])
        self.layout = find_cache(jaxonnx.load(_path(name)), dims=cache_dims_beside(_path(name)))
        self.names = {i.name for i in self.session.get_inputs()}
        self.windows = _sliding_window_caches(onnx.load(_path(name)))

    def logits(self, ids, mask, positions, cache, *, last=None):
        feed = {"input_ids": ids, "attention_mask": mask, "position_ids": positions, **cache}
        outputs = dict(
            zip(
                [o.name for o in self.session.get_outputs()],
                self.session.run(None, {k: v for k, v in feed.items() if k in self.names}),
            )
        )
        logits = outputs[self.layout.logits]
        logits = logits[:, -1] if last is None else logits[np.arange(len(logits)), last]
        return logits, {past: outputs[present] for past, present in self.layout.pairs}

    def empty_cache(self, batch):
        return {
            past: np.zeros([batch if d == -1 else d for d in shape], dtype)
            for (past, _), shape, dtype in zip(self.layout.pairs, self.layout.empty_shape, self.layout.dtypes)
        }

    def generate(self, ids, mask, new_tokens, *, eos=(), pad=0):
        """Greedy tokens as Hugging Face's generate gives them: finished rows pad; stops when all ended."""
        cache = self.empty_cache(len(ids))
        positions = np.where(mask == 1, np.cumsum(mask, -1) - 1, 1)
        step_ids, finished, tokens = ids, np.zeros(len(ids), bool), []
        for _ in range(new_tokens):
            logits, cache = self.logits(step_ids, mask, positions, cache)
            token = np.where(finished, pad, logits.argmax(-1))
            finished |= np.isin(token, eos)
            tokens.append(token)
            if finished.all():
                break
            positions = mask.sum(-1, keepdims=True)
            step_ids, mask = token[:, None], np.concatenate([mask, np.ones_like(mask[:, :1])], -1)
        tokens += [np.full(len(ids), pad)] * (new_tokens - len(tokens))
        return np.stack(tokens, -1)

    def generate_right_padded(self, ids, mask, new_tokens):
        """Greedy tokens as GroupQueryAttention takes a batch: the prompts right-padded (each row's
        tokens first), the mask 1 on each row's tokens so far, the cache growing a step at a time.

        A layer whose cache slides (``sliding_window_cache``) needs its past a window long from
        the first step, as onnxruntime-genai allocates it; onnxruntime then reads no step as a
        first prompt and refuses a batch of uneven prompts, so each prompt runs alone."""
        if self.windows and len(ids) > 1:
            return np.concatenate(
                [
                    self.generate_right_padded(row[m == 1][None], m[m == 1][None], new_tokens)
                    for row, m in zip(ids, mask)
                ]
            )
        lengths, width = mask.sum(-1), ids.shape[1]
        ids = np.stack([np.roll(row, length - width) for row, length in zip(ids, lengths)])
        cache, tokens = self.empty_cache(len(ids)), []
        for past, window in self.windows.items():
            cache[past] = np.zeros((*cache[past].shape[:2], window, *cache[past].shape[3:]), cache[past].dtype)
        step_ids, last = ids, lengths - 1
        for step in range(new_tokens):
            step_mask = (np.arange(width + step)[None] < (lengths + step)[:, None]).astype(np.int64)
            logits, cache = self.logits(step_ids, step_mask, None, cache, last=last)
            tokens.append(logits.argmax(-1))
            step_ids, last = tokens[-1][:, None], None
        return np.stack(tokens, -1)


def _sliding_window_caches(model: onnx.ModelProto) -> dict[str, int]:
    """The past inputs of GroupQueryAttention nodes that keep their cache as a sliding window
    (onnxruntime-genai's builder files of Gemma-2...), and the window of each."""
    windows = {}
    for node in model.graph.node:
        attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "GroupQueryAttention" and attributes.get("sliding_window_cache"):
            windows.update(dict.fromkeys(node.input[3:5], attributes["local_window_size"]))
    return windows


@functools.cache
def _loaded(name: str) -> jaxonnx.Model:
    """The fixture's model, loaded once for the module with its routing hints (if any): jit's
    caches key on the model object, so the tests that generate the same thing share a compile."""
    return jaxonnx.load(_path(name), size_hints=_routing_hints(name))


@functools.cache
def _greedy(name: str) -> tuple[np.ndarray, int]:
    """generate's greedy tokens of the fixture's prompts (and how many it added), shared by the
    tests that check them."""
    ids, mask = _prompts(name)
    new_tokens = 4 if not find_cache(_loaded(name)).fixed_window else NEW_TOKENS
    # A Mixture of Experts by its file: generate loads it with the routing hints itself (the
    # hints `_loaded` gives it; test_experts_routed_by_nonzero_need_size_hints).
    model = _path(name) if _routing_hints(name) else _loaded(name)
    return np.asarray(jaxonnx.generate(model, ids, new_tokens, attention_mask=mask)), new_tokens


@functools.cache
def _builder_greedy(name: str) -> tuple[jaxonnx.Model, np.ndarray]:
    """`generate(folder)`'s greedy tokens of an onnxruntime-genai builder fixture's prompts, and
    the model it loaded (load_causal_lm's, by path), shared by the tests that check them."""
    ids, mask = _prompts(name)
    folder = os.path.dirname(_path(name))
    model = generation.load_causal_lm(folder)  # what generate(folder) loads (it remembers the last few)
    return model, np.asarray(jaxonnx.generate(folder, ids, NEW_TOKENS, attention_mask=mask))


@pytest.fixture(scope="module")
def llama():
    return _loaded("llama_optimum")


def _routing_hints(name: str) -> dict[str, int]:
    """Size hints for the NonZero outputs that route a Mixture of Experts' rows (Optimum's
    Qwen3-MoE): an expert takes each of a step's tokens at most once, and the prompt step has
    the most tokens, batch x prompt."""
    ids, _ = _prompts(name)
    return {node.output[0]: ids.size for node in onnx.load(_path(name)).graph.node if node.op_type == "NonZero"}


@pytest.mark.parametrize("name", [n for n in NAMES if "genai" not in n])
def test_greedy_tokens_equal_onnxruntime_on_uneven_prompts(name):
    ids, mask = _prompts(name)
    out, new_tokens = _greedy(name)
    np.testing.assert_array_equal(out[:, : ids.shape[1]], ids)
    expected = OnnxruntimeLM(name).generate(ids, mask, new_tokens)
    np.testing.assert_array_equal(out[:, ids.shape[1] :], expected)
    # ... which are torch's own generate tokens for these prompts (recorded at export).
    np.testing.assert_array_equal(out[:, ids.shape[1] :], np.array(MANIFEST[name]["torch_greedy"])[:, :new_tokens])


@pytest.mark.parametrize("name", [pytest.param(n, marks=_needs_ops_of_issue_32(n)) for n in NAMES if "genai" in n])
def test_greedy_tokens_of_builder_files_equal_onnxruntime_genai(name):
    """The shared buffer of GroupQueryAttention: one cache of the final length, past and present."""
    ids, mask = _prompts(name)
    folder = os.path.dirname(_path(name))
    out = _builder_greedy(name)[1][:, ids.shape[1] :]  # generate(folder, ids, NEW_TOKENS, attention_mask=mask)
    assert find_cache(jaxonnx.load(_path(name)), dims=cache_dims_beside(folder)).mode == "buffer"
    np.testing.assert_array_equal(out, OnnxruntimeLM(name).generate_right_padded(ids, mask, NEW_TOKENS))
    # og.Generator's tokens of each prompt alone (recorded at export; CI has no onnxruntime-genai),
    # up to the prompt's eos, where og stopped (-1 from there on).
    og = np.array(MANIFEST[name]["og_greedy"])[:, :NEW_TOKENS]
    generated = og != -1
    assert generated[:, 0].all()
    np.testing.assert_array_equal(out[generated], og[generated])
    stopped = ~generated & (np.cumsum(~generated, axis=1) == 1)
    assert (out[stopped] == 2).all()  # the eos of config.json


def test_cache_found_by_each_exporters_names():
    optimum = find_cache(jaxonnx.load(_path("gpt2_optimum")))
    assert optimum.pairs[1] == ("past_key_values.0.value", "present.0.value") and optimum.fixed_window
    dynamo = find_cache(jaxonnx.load(_path("phi_dynamo")))
    assert dynamo.pairs[0] == ("past_key_values_0_0", MANIFEST["phi_dynamo"]["outputs"][1])
    assert dynamo.logits == MANIFEST["phi_dynamo"]["outputs"][0] and dynamo.axis == 2
    assert not find_cache(jaxonnx.load(_path("gemma_optimum"))).fixed_window  # no position_ids input


def test_experts_routed_by_nonzero_need_size_hints():
    ids, mask = _prompts("qwen3_moe_optimum")
    assert len(_routing_hints("qwen3_moe_optimum")) == 8  # 4 experts in each of 2 layers
    with pytest.raises(jaxonnx.StaticValueError, match=r"NonZero-13 cannot decide its output shape under `jax.jit`"):
        jaxonnx.generate(jaxonnx.load(_path("qwen3_moe_optimum")), ids, 2, attention_mask=mask)
    # Given the file, generate loads it with those hints itself (batch x prompt tokens): `_greedy`
    # generates from the file (test_greedy_tokens_equal_onnxruntime_on_uneven_prompts checks its
    # tokens against onnxruntime's too), and gets torch's tokens.
    out, new_tokens = _greedy("qwen3_moe_optimum")
    np.testing.assert_array_equal(
        out[:, ids.shape[1] :], np.array(MANIFEST["qwen3_moe_optimum"]["torch_greedy"])[:, :new_tokens]
    )


def test_fixtures_of_sliding_windows_slide():
    """Mistral's window (and Gemma-2's) is shorter than the prompts and their tokens; the
    builder keeps Gemma-2's windowed layer's cache as a window, which generate's buffer holds whole."""
    for name in ("mistral_optimum", "gemma2_genai_int4"):
        with open(os.path.join(FIXTURES, name, "config.json")) as f:
            assert json.load(f)["sliding_window"] < np.array(MANIFEST[name]["prompt_mask"]).sum(-1).max() + NEW_TOKENS
    assert set(_sliding_window_caches(onnx.load(_path("gemma2_genai_int4")))) == {
        "past_key_values.0.key",
        "past_key_values.0.value",
    }


@_needs_ops_of_issue_32("llama_genai_fp32")
def test_cache_of_builder_files_needs_the_head_size():
    builder = find_cache(jaxonnx.load(_path("llama_genai_fp32")), dims={"kv_cache_dim": 16})
    assert builder.pairs[0] == ("past_key_values.0.key", "present.0.key") and builder.empty_shape[0] == (-1, 2, 0, 16)
    # A symbolic head size no graph op declares (here an Optimum file's, made symbolic) is refused,
    # and the advice it gives works.
    proto = onnx.load(_path("llama_optimum"))
    for value in proto.graph.input:
        if value.name.startswith("past_key_values"):
            value.type.tensor_type.shape.dim[3].dim_param = "head"
    with pytest.raises(
        jaxonnx.OnnxValidationError, match=r"`jaxonnx\.generation\.find_cache\(model, dims=\{name: length\}\)`"
    ):
        find_cache(jaxonnx.load(proto))
    ids, _ = _prompts("llama_optimum")
    head = onnx.load(_path("llama_optimum")).graph.input[3].type.tensor_type.shape.dim[3].dim_value
    layout = find_cache(jaxonnx.load(proto), dims={"head": head})
    # (5 new tokens by the module's model, as test_one_prompt_and_right_padding_refused: one compiled loop.)
    np.testing.assert_array_equal(
        jaxonnx.generate(jaxonnx.load(proto), ids[2:], 5, cache=layout),
        jaxonnx.generate(_loaded("llama_optimum"), ids[2:], 5),
    )


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(os.path.join(FIXTURES, name, "model.onnx"), marks=_needs_ops_of_issue_32(name))
        for name in ("llama_genai_fp32", "qwen2_genai_int4", "gemma2_genai_int4")
    ],
)
def test_generate_of_a_loaded_builder_file_reads_the_head_size_off_the_graph(path):
    """Issue 41 §7: `generate(jaxonnx.load(path))` of a builder file, whose cache declares its
    head size symbolic (kv_cache_dim), equals `generate(path)`, which reads genai_config.json."""
    config = os.path.join(os.path.dirname(path), "genai_config.json")
    layout = find_cache(jaxonnx.load(path))
    if os.path.exists(config):
        assert layout == find_cache(jaxonnx.load(path), dims=cache_dims_beside(path))
    assert layout.empty_shape[0][3] == 16  # the fixtures' head size: 64 hidden / 4 heads
    # generate(folder) (which reads genai_config.json, as generate(path) does) of the fixture's
    # prompts, and the model it loaded (load_causal_lm's, by path): the same layout compiles the
    # same loop, once.
    name = os.path.basename(os.path.dirname(path))
    loaded, expected = _builder_greedy(name)
    ids, mask = _prompts(name)
    np.testing.assert_array_equal(jaxonnx.generate(loaded, ids, NEW_TOKENS, attention_mask=mask), expected)


def test_prompt_ids_outside_the_vocabulary_are_refused(llama, capsys):
    """Issue 41 §8: the ids are known before the loop; the logits' last dim is the vocabulary."""
    for ids, bad, position in (([[1, 128]], 128, 1), ([[-1, 5]], -1, 0)):
        with pytest.raises(
            jaxonnx.OnnxValidationError,
            match=rf"prompt token {bad} at row 0, position {position} .* vocabulary of 128 ids",
        ):
            jaxonnx.generate(llama, np.array(ids), 2)
    # left padding is not looked up, whatever it holds
    jaxonnx.generate(llama, np.array([[999, 5]]), 1, attention_mask=np.array([[0, 1]]))
    from jaxonnx.cli import main

    assert main(["generate", os.path.join(FIXTURES, "llama_optimum"), "--prompt-ids", "1,99999"]) == 1
    assert "The prompt token 99999 at row 0, position 1" in capsys.readouterr().err


def test_cache_given_explicitly(llama):
    pairs = {f"past_key_values.{i}.{kind}": f"present.{i}.{kind}" for i in range(2) for kind in ("value", "key")}
    layout = find_cache(llama, pairs)
    assert dict(layout.pairs) == pairs
    ids, mask = _prompts("llama_optimum")
    greedy, new_tokens = _greedy("llama_optimum")  # generate(llama, ids, new_tokens, attention_mask=mask)
    np.testing.assert_array_equal(jaxonnx.generate(llama, ids, new_tokens, attention_mask=mask, cache=pairs), greedy)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"`cache` names \['present.9.key'\]"):
        find_cache(llama, {"past_key_values.0.key": "present.9.key"})


def test_eos_ends_rows_and_the_loop(llama):
    ids, mask = _prompts("llama_optimum")
    free, new_tokens = _greedy("llama_optimum")  # generate(llama, ids, NEW_TOKENS, attention_mask=mask)
    assert new_tokens == NEW_TOKENS
    free = free[:, ids.shape[1] :]
    eos = int(free[0, 2])  # row 0 ends at its third token, the others where (if) they meet it
    reference = OnnxruntimeLM("llama_optimum")
    out = np.asarray(jaxonnx.generate(llama, ids, NEW_TOKENS, attention_mask=mask, eos_token_id=eos, pad_token_id=0))
    np.testing.assert_array_equal(out[:, ids.shape[1] :], reference.generate(ids, mask, NEW_TOKENS, eos=[eos], pad=0))
    assert out[0, ids.shape[1] + 2] == eos and not out[0, ids.shape[1] + 3 :].any()
    # Every row's first token ends it: the loop runs no decode step after the prompt.
    firsts = [int(t) for t in free[:, 0]]
    layout = find_cache(llama)

    @jax.jit  # both loops in one compiled program
    def loops(model, ids, mask, eos):
        ended = decode_loop(model, layout, ids, mask, None, 1.0, None, None, eos, jnp.asarray(7), NEW_TOKENS)
        unended = decode_loop(model, layout, ids, mask, None, 1.0, None, None, None, jnp.asarray(0), NEW_TOKENS)
        return ended, unended[1]

    (tokens, steps), all_steps = loops(llama, ids, mask, np.asarray(firsts))
    assert int(steps) == 1
    np.testing.assert_array_equal(np.asarray(tokens)[:, ids.shape[1] :], [[t] + [7] * (NEW_TOKENS - 1) for t in firsts])
    # Without it, all steps run.
    assert int(all_steps) == NEW_TOKENS


def test_one_prompt_and_right_padding_refused(llama):
    ids, mask = _prompts("llama_optimum")
    row = ids[2]  # the longest prompt, unpadded
    np.testing.assert_array_equal(jaxonnx.generate(llama, row, 5), jaxonnx.generate(llama, row[None], 5)[0])
    with pytest.raises(jaxonnx.OnnxValidationError, match="pad prompts on the left"):
        jaxonnx.generate(llama, ids, 2, attention_mask=mask[:, ::-1])
    with pytest.raises(jaxonnx.OnnxValidationError, match="`max_new_tokens` must be a positive int"):
        jaxonnx.generate(llama, ids, 0, attention_mask=mask)


def test_jit_of_generate_traces_once_per_shape_signature(llama):
    traces = []

    def counted(model, ids, mask, new_tokens):
        traces.append(ids.shape)
        return jaxonnx.generate(model, ids, new_tokens, attention_mask=mask)

    compiled = jax.jit(counted, static_argnames="new_tokens")
    ids, mask = _prompts("llama_optimum")
    # NEW_TOKENS, as _greedy generates: generate's own call below is its compiled loop.
    first = compiled(llama, ids, mask, NEW_TOKENS)
    again = compiled(llama, (ids + 1) % 128 * mask, mask, NEW_TOKENS)  # other values, same shapes
    assert len(traces) == 1 and not np.array_equal(first, again)
    np.testing.assert_array_equal(
        again, jaxonnx.generate(llama, (ids + 1) % 128 * mask, NEW_TOKENS, attention_mask=mask)
    )
    # New params (a fine-tuned model) are leaves of the model's pytree: no retrace either.
    tuned = jax.jit(lambda m: jax.tree.map(lambda w: w * 1.5, m))(llama)
    compiled(tuned, ids, mask, NEW_TOKENS)
    assert len(traces) == 1
    compiled(llama, ids[:, 1:], mask[:, 1:], NEW_TOKENS)  # a new prompt length is a new shape signature
    assert len(traces) == 2
    # One compiled loop: the prefill, then one while loop whose body runs the graph once.
    jaxpr = jax.make_jaxpr(lambda m, i, a: jaxonnx.generate(m, i, 6, attention_mask=a))(llama, ids, mask)
    assert [eqn.primitive.name for eqn in _all_eqns(jaxpr.jaxpr)].count("while") == 1


def _all_eqns(jaxpr):
    """Every equation of a jaxpr, those of the jaxprs in its equations' params included."""
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else [value]:
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from _all_eqns(inner)


def test_sampling_is_reproducible_by_key(llama):
    ids, mask = _prompts("llama_optimum")
    key = jax.random.key(3)
    one = jaxonnx.generate(llama, ids, 6, attention_mask=mask, rng=key, temperature=2.0)
    two = jaxonnx.generate(llama, ids, 6, attention_mask=mask, rng=key, temperature=2.0)
    other = jaxonnx.generate(llama, ids, 6, attention_mask=mask, rng=jax.random.key(4), temperature=2.0)
    np.testing.assert_array_equal(one, two)
    assert not np.array_equal(one, other)
    # jax.vmap over keys is a loop over keys (of the loop compiled above).
    keys = jax.random.split(key, 3)
    mapped = jax.vmap(lambda k: jaxonnx.generate(llama, ids, 6, attention_mask=mask, rng=k, temperature=2.0))(keys)
    for k, row in zip(keys, mapped):
        np.testing.assert_array_equal(row, jaxonnx.generate(llama, ids, 6, attention_mask=mask, rng=k, temperature=2.0))


def _chi_square_p_value(counts: np.ndarray, probabilities: np.ndarray) -> float:
    """Pearson's test of counts against probabilities, bins expecting fewer than 5 pooled."""
    expected = probabilities * counts.sum()
    small = expected < 5
    observed = np.append(counts[~small], counts[small].sum())
    expected = np.append(expected[~small], expected[small].sum())
    keep = expected > 0
    statistic = float(((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum())
    return float(scipy.stats.chi2.sf(statistic, keep.sum() - 1))


def _numpy_filtered(logits, temperature, top_k=None, top_p=None):
    """Hugging Face's TemperatureLogitsWarper, TopKLogitsWarper and TopPLogitsWarper, in numpy."""
    logits = logits / temperature
    if top_k is not None:
        logits = np.where(logits < np.sort(logits)[-top_k], -np.inf, logits)
    if top_p is not None:
        order = np.argsort(logits, kind="stable")  # ascending, as HF sorts
        probabilities = np.exp(logits[order] - logits.max())
        probabilities /= probabilities.sum()
        removed = np.cumsum(probabilities) <= 1 - top_p
        removed[-1] = False
        logits = logits.copy()
        logits[order[removed]] = -np.inf
    return logits


def _softmax(logits):
    e = np.exp(logits - logits.max())
    return e / e.sum()


@pytest.mark.parametrize("options", [{}, {"top_k": 5}, {"top_p": 0.6}, {"top_k": 8, "top_p": 0.8}], ids=str)
def test_sampled_tokens_follow_the_distribution(llama, options):
    """Frequencies of the first and (given the first) second sampled token against onnxruntime's logits."""
    ids, mask = _prompts("llama_optimum")
    temperature, rows = 2.0, 3000
    prompt = np.repeat(ids[2:], rows, axis=0)
    out = np.asarray(
        jaxonnx.generate(
            llama,
            prompt,
            2,
            attention_mask=np.ones_like(prompt),
            rng=jax.random.key(11),
            temperature=temperature,
            **options,
        )
    )
    reference = OnnxruntimeLM("llama_optimum")
    logits, _ = reference.logits(ids[2:], mask[2:], np.arange(ids.shape[1])[None], reference.empty_cache(1))
    probabilities = _softmax(_numpy_filtered(logits[0].astype(np.float64), temperature, **options))
    first = out[:, ids.shape[1]]
    counts = np.bincount(first, minlength=probabilities.size)
    assert not counts[probabilities == 0].any(), "a token outside top_k / top_p was drawn"
    assert _chi_square_p_value(counts, probabilities) > SIGNIFICANCE
    # The second token, in the rows whose first token was the commonest: the decode loop samples too.
    common = np.argmax(counts)
    logits, _ = reference.logits(
        np.append(ids[2:], [[common]], 1),
        np.ones((1, ids.shape[1] + 1), np.int64),
        np.arange(ids.shape[1] + 1)[None],
        reference.empty_cache(1),
    )
    probabilities = _softmax(_numpy_filtered(logits[0].astype(np.float64), temperature, **options))
    counts = np.bincount(out[first == common, ids.shape[1] + 1], minlength=probabilities.size)
    assert counts.sum() > 300 and not counts[probabilities == 0].any()
    assert _chi_square_p_value(counts, probabilities) > SIGNIFICANCE


def test_a_wrong_distribution_fails_the_chi_square_test():
    """The test above can fail: draws at temperature 2 against the probabilities at 1."""
    logits = np.random.default_rng(0).normal(0, 2, 64)
    draws = np.asarray(jax.random.categorical(jax.random.key(0), jnp.asarray(logits / 2), shape=(3000,)))
    counts = np.bincount(draws, minlength=64)
    assert _chi_square_p_value(counts, _softmax(logits / 2)) > SIGNIFICANCE
    assert _chi_square_p_value(counts, _softmax(logits)) < 1e-12


@pytest.mark.parametrize(
    "options", [{"top_k": 1}, {"top_k": 7}, {"top_p": 0.3}, {"top_p": 0.95}, {"top_k": 10, "top_p": 0.5}], ids=str
)
def test_filtered_logits_are_huggingfaces_warpers(options):
    logits = np.random.default_rng(1).normal(0, 3, (4, 50))
    logits[1, :5] = logits[1, 5]  # ties at the threshold are kept, as HF keeps them
    got = np.asarray(filtered_logits(jnp.asarray(logits), temperature=1.5, **options))
    expected = np.stack([_numpy_filtered(row, 1.5, **options) for row in logits])
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    np.testing.assert_allclose(got[~np.isinf(got)], expected[~np.isinf(expected)], rtol=1e-15)


def test_traced_sampling_options(llama):
    """temperature, top_k and top_p are traced: one compilation for several values."""
    traces = []

    @jax.jit
    def sample(model, top_k, top_p, temperature):
        traces.append(1)
        return jaxonnx.generate(
            model, jnp.asarray([[5, 6, 7]]), 3, rng=jax.random.key(0), top_k=top_k, top_p=top_p, temperature=temperature
        )

    greedy = np.asarray(jaxonnx.generate(llama, jnp.asarray([[5, 6, 7]]), 3))
    np.testing.assert_array_equal(sample(llama, 1, 1.0, 1.0), greedy)  # top_k=1 is greedy
    sample(llama, 5, 0.9, 0.7)
    assert len(traces) == 1
    chex.assert_trees_all_equal(sample(llama, 128, 1e-9, 3.0), greedy)  # a tiny top_p keeps the argmax only


# --------------------------------------------------------------------------- the command line


def test_command_line_with_token_ids(capsys):
    from jaxonnx.cli import main

    folder = os.path.join(FIXTURES, "llama_optimum")
    assert (
        main(
            [
                "generate",
                folder,
                "--prompt-ids",
                "5,6,7",
                "--prompt-ids",
                "9",
                "--max-new-tokens",
                "4",
                "--eos-token-id",
                "-1",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    expected = OnnxruntimeLM("llama_optimum").generate(
        np.array([[5, 6, 7], [0, 0, 9]]), np.array([[1, 1, 1], [0, 0, 1]]), 4
    )
    assert lines == ["5,6,7," + ",".join(map(str, expected[0])), "9," + ",".join(map(str, expected[1]))]
    assert main(["generate", folder, "--prompt-ids", "5,x"]) == 2
    assert "--prompt-ids takes comma-separated integers" in capsys.readouterr().err


def test_command_line_with_text(capsys):
    tokenizers = pytest.importorskip("tokenizers", reason="the `generate` extra's tokenizers package")
    from jaxonnx.cli import main

    folder = os.path.join(FIXTURES, "llama_optimum")
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    prompt = "the quick brown fox"
    assert main(["generate", folder, "--prompt", prompt, "--max-new-tokens", "6"]) == 0
    ids = tokenizer.encode(prompt).ids
    tokens = OnnxruntimeLM("llama_optimum").generate(np.array([ids]), np.ones((1, len(ids)), np.int64), 6, eos=[2])[0]
    new = list(tokens[: list(tokens).index(2) + 1]) if 2 in tokens else list(tokens)  # config.json's eos is 2
    assert capsys.readouterr().out == tokenizer.decode(ids + new, skip_special_tokens=True) + "\n"


def test_generate_compiles_its_loop_with_the_decode_options(llama):
    """Called directly, generate's own jit carries decode_compiler_options: on CPU where
    jaxonnx chose XLA's flags, no dot of the compiled loop is left to YNNPACK."""
    options = generation.decode_compiler_options()
    ids = jnp.asarray(_prompts("llama_optimum")[0])
    # (NEW_TOKENS: the call below is `_greedy`'s generate(llama, ids, NEW_TOKENS, ...) compiled loop.)
    arguments = (
        llama,
        find_cache(llama),
        ids,
        jnp.ones_like(ids),
        None,
        1.0,
        None,
        None,
        None,
        jnp.asarray(0),
        NEW_TOKENS,
    )
    compiled = compiled_decode_loop(tuple(sorted(options.items())))
    text = compiled.lower(*arguments).compile().as_text()
    bodies = {block.split(" ", 1)[0].lstrip("%"): block for block in text.split("\n\n")}
    ynn_called = re.findall(r"calls=%([\w.\-]+)[^\n]*__ynn_fusion", text)
    ynn_dots = [name for name in ynn_called if " dot(" in bodies.get(name, "")]
    if options:  # (elsewhere the process's flags decide: only the tokens are checked)
        assert not ynn_dots and " dot(" in text
    plain = compiled_decode_loop(())  # the process's flags
    np.testing.assert_array_equal(compiled(*arguments), plain(*arguments))


@pytest.mark.parametrize(
    "function",
    [
        generation.generate,
        generation.find_cache,
        generation.choose_tokens,
        generation.decode_compiler_options,
        generation.load_causal_lm,
    ],
    ids=lambda f: f.__name__,
)
def test_docstring_examples_run(function, monkeypatch):
    monkeypatch.chdir(
        os.path.join(os.path.dirname(__file__), os.pardir)
    )  # the examples name files from the repo's root
    globs = {
        "jax": jax,
        "jnp": jnp,
        "np": np,
        "jaxonnx": jaxonnx,
        **{n: getattr(generation, n) for n in generation.__all__},
    }
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder(recurse=False).find(function, globs=globs):
        runner.run(test)
    results = runner.summarize(verbose=False)
    assert results.attempted > 0 and results.failed == 0


def test_x64_warning_is_one_line_once_per_process(x64_off, monkeypatch):
    """Issue 41 §8: an LLM session loads several models; under Python's default filters the
    X64Warning is said once, in one line."""
    import warnings

    from jaxonnx._core import reports

    monkeypatch.setattr(reports, "_X64_WARNED", [])
    with warnings.catch_warnings(record=True) as record:
        warnings.resetwarnings()  # Python's defaults, not the suite's "error"
        jaxonnx.load(_path("llama_optimum"))
        jaxonnx.load(_path("qwen2_optimum"))
    shown = [r for r in record if issubclass(r.category, jaxonnx.X64Warning)]
    assert (
        len(shown) == 1
        and "\n" not in str(shown[0].message)
        and "input 'input_ids' (int64 as int32)" in str(shown[0].message)
    )
