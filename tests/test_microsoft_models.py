"""Files that onnxruntime's own tools wrote, with their com.microsoft ops, through jaxonnx.

The fixtures in ``tests/fixtures/microsoft`` were made by ``tools/export_microsoft_fixtures.py``
(the ``microsoft-fixtures`` extra): onnxruntime's transformer optimizer on tiny BERT, GPT-2, ViT,
T5 and Llama exports, onnxruntime's graph optimizer, ``MatMulNBitsQuantizer``,
``MatMulBnb4Quantizer``, ``quantize_dynamic``, and onnxruntime-genai's model builder on tiny
Llama, Phi-3 and Qwen2 checkpoints. ``manifest.json`` says which tool and options made each file,
and how to make valid inputs for it. onnxruntime is the oracle; this file needs nothing else.

For every file:

- the ops the tool is known to write are in it (so an unfused graph cannot pass), and its op
  histogram is the manifest's;
- eager outputs agree with onnxruntime's on random valid inputs, and ``jax.jit``'s where the
  eager call runs op by op (elsewhere the eager call is ``jax.jit`` of the whole graph);
- for the decoders onnxruntime-genai built: a greedy decode of a few tokens, step by step with
  the KV cache, gives onnxruntime's tokens and logits;
- for a few files whose ops are differentiable: ``jax.grad`` w.r.t. the float weights agrees with
  central differences of a float64 copy of the file.

A file with an op jaxonnx does not register fails, naming the missing ops.

Tolerance for floats, per array: ``|actual - expected| <= ATOL_SCALE * max|expected| + RTOL *
|expected|`` with ``RTOL = 1e-4``, ``ATOL_SCALE = 1e-5`` (as ``test_real_models.py``): float32
results that onnxruntime's MLAS kernels and XLA sum in different orders, judged against the
array's own magnitude (a few hundred float32 ulps of the largest value: the two-layer models
here accumulate a few ulps per product and normalization). Integer outputs must be equal.
"""

from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, numpy_helper

import jaxonnx

FIXTURES = Path(__file__).parent / "fixtures" / "microsoft"
RTOL, ATOL_SCALE = 1e-4, 1e-5


def _manifest() -> dict:
    with open(FIXTURES / "manifest.json") as f:
        return json.load(f)


MANIFEST = _manifest()
NAMES = sorted(path.stem for path in FIXTURES.glob("*.onnx"))
DECODERS = [name for name in NAMES if "decoder" in MANIFEST["fixtures"][name]]
#: Files whose gradients are checked: BERT's EmbedLayerNormalization and Attention, ViT's BiasGelu
#: and SkipLayerNormalization, GPT-2's FastGelu,
#: T5's (Skip)SimplifiedLayerNormalization, a genai decoder (GroupQueryAttention with its rotary
#: embedding, biases), and a 4-bit MatMulNBits model (gradients w.r.t. its scales, QLoRA-style,
#: and float weights).
GRADIENT_FILES = ["bert_opt2", "vit_opt2", "gpt2_opt2", "t5_opt2", "genai_qwen2_fp32", "llama_nbits4_asym"]


def entry(name: str) -> dict:
    return MANIFEST["fixtures"][name]


@functools.cache
def proto(name: str) -> onnx.ModelProto:
    return onnx.load(FIXTURES / f"{name}.onnx")


def load(name_or_proto, name: str | None = None) -> jaxonnx.Model:
    """The model through jaxonnx; an unregistered op fails the test, naming what is missing."""
    model = proto(name_or_proto) if isinstance(name_or_proto, str) else name_or_proto
    name = name or name_or_proto
    try:
        return jaxonnx.load(model)
    except jaxonnx.UnsupportedOpError as error:
        pytest.fail(f"{name} uses ops jaxonnx does not run:\n{error}")


@pytest.fixture(autouse=True)
def _builder_declared_shapes(request):
    """onnxruntime-genai's builder declares its shared constant ``/model/constants/INT64/[1]``
    a scalar in value_info while its Constant node makes a 1-element vector; jaxonnx warns
    about the mismatch and goes on with the computed shape, as onnxruntime does. That warning
    is expected for those files only; every other warning stays an error."""
    name = getattr(request.node, "callspec", None) and request.node.callspec.params.get("name")
    category = getattr(jaxonnx, "DeclaredShapeWarning", None)
    with warnings.catch_warnings():
        if category is not None and name and name.startswith("genai_"):
            warnings.filterwarnings("ignore", category=category)
        yield


def make_inputs(spec: list[dict], seed: int = 0) -> dict[str, np.ndarray]:
    """Valid inputs from the manifest's description: token ids below the vocabulary size, an
    attention mask with right padding in the second row (what a mask index assumes), zeros
    for token types, positions counting on from a cache, standard normal floats elsewhere."""
    rng = np.random.default_rng(seed)
    feed = {}
    for item in spec:
        shape, dtype, kind = tuple(item["shape"]), np.dtype(item["dtype"]), item["kind"]
        if kind == "tokens":
            value = rng.integers(0, item["high"], shape)
        elif kind == "mask":
            value = np.ones(shape)
            value[1, -2:] = 0
        elif kind == "ones":
            value = np.ones(shape)
        elif kind == "zeros":
            value = np.zeros(shape)
        elif kind == "positions":
            value = np.broadcast_to(np.arange(item["start"], item["start"] + shape[-1]), shape)
        elif kind == "normal":
            value = rng.standard_normal(shape)
        else:
            raise ValueError(f"manifest.json names an input kind this test does not know: {kind!r}")
        feed[item["name"]] = np.ascontiguousarray(value.astype(dtype))
    return feed


def onnxruntime_session(model: onnx.ModelProto, config: dict[str, str] | None = None) -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    for key, value in (config or {}).items():
        options.add_session_config_entry(key, value)
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def assert_close(
    actual, expected: np.ndarray, what: str, *, rtol: float = RTOL, atol_scale: float = ATOL_SCALE
) -> None:
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, onnxruntime's is {expected.shape}."
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, onnxruntime's is {expected.dtype}."
    if expected.dtype.kind in "iub":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    assert np.all(np.isfinite(expected)), f"{what}: onnxruntime's output is not finite, the fixture is unsound."
    scale = max(float(np.max(np.abs(expected), initial=0.0)), np.finfo(np.float32).tiny)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol_scale * scale, err_msg=what)


# --------------------------------------------------------------------------- int8 activations

#: onnxruntime's MatMulNBits at ``accuracy_level`` 4 quantizes the activations to int8 per block
#: of ``block_size`` (symmetric, scale = max|a| / 127) and multiplies integers; jaxonnx computes
#: in float32, which the attribute allows ("the minimum accuracy"). onnxruntime does the same
#: when it loads a QDQ file (blocked 4-bit DequantizeLinear before MatMul): it fuses the pair into
#: MatMulNBits at the session option ``session.qdq_matmulnbits_accuracy_level``, 4 by default.
#: So these files are checked twice: at the float32 tolerance against onnxruntime at accuracy
#: level 1 (its float32 path: the attribute or the session option set to 1), and against
#: onnxruntime as the file and its defaults say, within the error of the int8 activations. Each
#: activation moves by at most half a step, max|a_block| / 254, so one product's relative error
#: is at most 1/254 of its block's largest term; summed over a block the errors are
#: independent, and through two layers, attention's softmax and the norms the outputs of these
#: models move by up to about 3% of their largest magnitude (measured on these files, the QDQ
#: files most: every MatMul quantizes its activations there, the lm_head's included). The bound,
#: 6% of the array's largest value, leaves room for that and still fails a wrong dequantization
#: (a scale, zero point or nibble order mistake moves outputs by tens of percent).
INT8_ACTIVATIONS_ATOL_SCALE = 6e-2


def accuracy_level_4_nodes(model: onnx.ModelProto) -> int:
    return sum(
        1
        for node in model.graph.node
        if node.domain == "com.microsoft"
        and node.op_type == "MatMulNBits"
        and any(a.name == "accuracy_level" and a.i == 4 for a in node.attribute)
    )


def blocked_dequantize_nodes(model: onnx.ModelProto) -> int:
    return sum(
        1
        for node in model.graph.node
        if node.op_type == "DequantizeLinear" and any(a.name == "block_size" and a.i > 0 for a in node.attribute)
    )


def int8_activations(model: onnx.ModelProto) -> bool:
    """Whether onnxruntime, run as the file and its defaults say, multiplies int8 activations."""
    return bool(accuracy_level_4_nodes(model) or blocked_dequantize_nodes(model))


def float32_oracle(model: onnx.ModelProto) -> onnxruntime.InferenceSession:
    """onnxruntime computing the file's MatMulNBits (written, or fused from QDQ) in float32."""
    copy = onnx.ModelProto.FromString(model.SerializeToString())
    for node in copy.graph.node:
        if node.domain == "com.microsoft" and node.op_type == "MatMulNBits":
            for attribute in node.attribute:
                if attribute.name == "accuracy_level":
                    attribute.i = 1
    return onnxruntime_session(copy, {"session.qdq_matmulnbits_accuracy_level": "1"})


# --------------------------------------------------------------------------- the files themselves


def test_manifest_and_folder_agree():
    """Every file has its manifest entry and every entry its file; a variant the tools could
    not make says why."""
    made = {name for name, item in MANIFEST["fixtures"].items() if "export_error" not in item}
    assert made, "manifest.json lists no fixture."
    assert set(NAMES) == made
    for name, item in MANIFEST["fixtures"].items():
        if "export_error" in item:
            assert item["export_error"].strip(), f"{name}: a failed variant without a reason."
    # Every tool the issue names made at least one file.
    tools = " ".join(entry(name)["tool"] for name in NAMES)
    for tool in (
        "optimize_model",
        "optimized_model_filepath",
        "MatMulNBitsQuantizer",
        "MatMulBnb4Quantizer",
        "quantize_dynamic",
        "onnxruntime_genai.models.builder",
    ):
        assert tool in tools, f"no fixture made by {tool}"


@pytest.mark.parametrize("name", NAMES)
def test_fixture_holds_the_tools_ops(name):
    """The ops the tool writes are there (the test cannot pass on an unfused or unquantized
    graph), the histogram is the manifest's, and onnxruntime runs the file."""
    model, item = proto(name), entry(name)
    histogram = {}
    for node in model.graph.node:
        key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"
        histogram[key] = histogram.get(key, 0) + 1
    assert histogram == item["op_histogram"]
    missing = sorted(set(item["required_ops"]) - set(histogram))
    assert not missing, f"{name}: the tool's ops {missing} are not in the file."
    if item["options"].get("quant_format") == "QDQ":
        # MatMulNBitsQuantizer's QDQ format is standard ONNX: blocked 4-bit DequantizeLinear
        # (opset 21) before a MatMul, what onnxruntime fuses into MatMulNBits when it loads it.
        blocked = [
            n
            for n in model.graph.node
            if n.op_type == "DequantizeLinear" and any(a.name == "block_size" and a.i > 0 for a in n.attribute)
        ]
        assert blocked, f"{name}: no blocked DequantizeLinear."
    else:
        assert item["nonstandard_ops"], f"{name}: no com.microsoft op; the fixture tests nothing of this file."
    assert (FIXTURES / f"{name}.onnx").stat().st_size < 600_000
    onnxruntime_session(model)


# --------------------------------------------------------------------------- through jaxonnx


@pytest.mark.parametrize("name", NAMES)
def test_outputs_equal_onnxruntime(name):
    """Eager and jitted outputs, every graph output (logits, hidden states, KV caches), against
    onnxruntime on the same random valid inputs (for the decoders: a decoding step at batch 2,
    and a chunk of new tokens after a cache at batch 1, through one jitted function; the
    decoding step under jax.jit is the greedy decode test's)."""
    model_proto, item = proto(name), entry(name)
    int8 = int8_activations(model_proto)
    oracle = float32_oracle(model_proto)
    model = load(name)
    jitted = jax.jit(model)
    for role in ("inputs", "second_inputs"):
        if role not in item:
            continue
        feed = make_inputs(item[role])
        expected = oracle.run(None, feed)
        eager = model(feed)
        runs = [("eager", eager)]
        if not model.eager_mode.startswith("whole graph") and not (role == "inputs" and name in DECODERS):
            # A graph compiled whole runs an eager call as jax.jit of its graph already
            # (Model._plan_eager_calls): jitting the model would compile the same computation twice.
            # A decoder's first inputs (one token at batch 2 after a cache) are what every
            # cached step of test_greedy_decode_with_kv_cache_equals_onnxruntime runs under
            # jax.jit against onnxruntime; only its chunk at batch 1 is jitted here.
            runs.append(("jit", jitted(feed)))
        for how, outputs in runs:
            assert len(outputs) == len(expected)
            for output_name, actual, want in zip(model.output_names, outputs, expected):
                assert_close(actual, want, f"{name} ({how}, {role}), output {output_name!r}")
        if int8:
            # The eager outputs above, not a second call of the model for the same values.
            as_written = onnxruntime_session(model_proto).run(None, feed)
            for output_name, actual, want in zip(model.output_names, eager, as_written):
                assert_close(
                    actual,
                    want,
                    f"{name} (eager, {role}, against onnxruntime's int8 activations), output {output_name!r}",
                    rtol=0,
                    atol_scale=INT8_ACTIVATIONS_ATOL_SCALE,
                )


def test_int8_activation_files_exist():
    """The int8-activation comparison above runs on files written by each tool: the builder's
    and the quantizer's accuracy level 4, and the quantizer's QDQ format."""
    with_level_4 = [name for name in NAMES if accuracy_level_4_nodes(proto(name))]
    assert any(name.startswith("genai_") for name in with_level_4), with_level_4
    assert any(name.startswith("llama_nbits") for name in with_level_4), with_level_4
    assert any(blocked_dequantize_nodes(proto(name)) for name in NAMES)


# --------------------------------------------------------------------------- greedy decoding


def _empty_caches(model_proto: onnx.ModelProto, decoder: dict, batch: int) -> dict[str, np.ndarray]:
    """Caches of no position, (batch, kv heads, 0, head size); the builder declares the last axis
    symbolic, so the sizes come from genai_config.json (in the manifest)."""
    caches = {}
    for value in model_proto.graph.input:
        if value.name.startswith("past_key_values."):
            dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
            caches[value.name] = np.zeros((batch, decoder["num_kv_heads"], 0, decoder["head_size"]), dtype)
    return caches


def greedy_decode(run, model_proto: onnx.ModelProto, decoder: dict, prompt: np.ndarray, steps: int):
    """Greedy decoding as onnxruntime-genai drives these files: the prompt with empty caches,
    then one token at a time with the caches the last step returned (``present.*`` fed back
    as ``past_key_values.*``) and an attention mask over every position so far. Returns the
    tokens and each step's last-position logits."""
    input_names = {value.name for value in model_proto.graph.input}
    output_names = [value.name for value in model_proto.graph.output]
    batch = prompt.shape[0]
    caches = _empty_caches(model_proto, decoder, batch)
    ids, total = prompt, prompt.shape[1]
    tokens, logits_per_step = [], []
    for _ in range(steps):
        feed = {"input_ids": ids, "attention_mask": np.ones((batch, total), np.int64), **caches}
        if "position_ids" in input_names:
            feed["position_ids"] = np.broadcast_to(np.arange(total - ids.shape[1], total), ids.shape).astype(np.int64)
        outputs = dict(zip(output_names, run(feed)))
        last = np.asarray(outputs["logits"])[:, -1]
        logits_per_step.append(last)
        ids = np.argmax(last, axis=-1).astype(np.int64)[:, None]
        tokens.append(ids[:, 0])
        caches = {name: np.asarray(outputs[name.replace("past_key_values", "present")]) for name in caches}
        total += 1
    return np.stack(tokens, axis=1), logits_per_step


@pytest.mark.parametrize("name", DECODERS)
def test_greedy_decode_with_kv_cache_equals_onnxruntime(name):
    """Three tokens from a five-token prompt, step by step through the KV cache (the prompt with
    empty caches, then a token after the prompt's cache, then one after a decoded token's): the
    same tokens as onnxruntime, and each step's logits within the float32 tolerance. The file
    runs under ``jax.jit`` (one trace per cache length, as a decoding loop would)."""
    model_proto = proto(name)
    session = float32_oracle(model_proto)
    decoder = entry(name)["decoder"]
    prompt = np.random.default_rng(1).integers(3, decoder["vocab_size"], (2, 5)).astype(np.int64)
    want_tokens, want_logits = greedy_decode(
        lambda feed: session.run(None, feed), model_proto, decoder, prompt, steps=3
    )
    jitted = jax.jit(load(name))
    tokens, logits = greedy_decode(jitted, model_proto, decoder, prompt, steps=3)
    for step, (got, want) in enumerate(zip(logits, want_logits)):
        assert_close(got, want, f"{name}: logits at decoding step {step}")
    np.testing.assert_array_equal(tokens, want_tokens, err_msg=f"{name}: greedy tokens")


# --------------------------------------------------------------------------- gradients


#: com.microsoft ops that compute in float32 whatever their inputs' type (float32 is the widest
#: type of their schemas): MatMulNBits and its kin by design, and the attention ops, whose float
#: constants (masks, scales) are float32. A float64 copy keeps them in float32 between casts.
_FLOAT32_INSIDE = {
    "MatMulNBits",
    "MatMulBnb4",
    "GatherBlockQuantized",
    "Attention",
    "MultiHeadAttention",
    "GroupQueryAttention",
}


def value_types(model: onnx.ModelProto) -> dict[str, int]:
    """The element type of every value, as onnxruntime infers it (onnx's shape inference does
    not know the com.microsoft ops)."""
    copy = onnx.ModelProto.FromString(model.SerializeToString())
    declared = {o.name for o in copy.graph.output}
    for node in copy.graph.node:
        copy.graph.output.extend(
            onnx.helper.make_empty_tensor_value_info(name) for name in node.output if name and name not in declared
        )
        declared.update(node.output)
    types = {t.name: t.data_type for t in copy.graph.initializer}
    names = {"tensor(float)": TensorProto.FLOAT, "tensor(double)": TensorProto.DOUBLE}
    session = onnxruntime_session(copy)
    for value in [*session.get_inputs(), *session.get_outputs()]:
        types[value.name] = names.get(value.type, TensorProto.UNDEFINED)
    return types


def as_float64(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` computing in float64: float initializers, Constant and
    ConstantOfShape values, Cast targets and the declared types of inputs, outputs and
    intermediate values. The ops of ``_FLOAT32_INSIDE`` get their float inputs cast to float32
    and their outputs cast back, as they would compute in float32 anyway."""
    types = value_types(model)
    copy = onnx.ModelProto.FromString(model.SerializeToString())
    graph = copy.graph

    def widen(tensor: onnx.TensorProto) -> None:
        if tensor.data_type == TensorProto.FLOAT:
            tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float64), tensor.name))

    for tensor in graph.initializer:
        widen(tensor)
    for value in [*graph.input, *graph.output, *graph.value_info]:
        if value.type.tensor_type.elem_type == TensorProto.FLOAT:
            value.type.tensor_type.elem_type = TensorProto.DOUBLE
    nodes, narrowed = [], set()
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.TENSOR:
                widen(attribute.t)
            elif node.op_type == "Cast" and attribute.name == "to" and attribute.i == TensorProto.FLOAT:
                attribute.i = TensorProto.DOUBLE
        if node.domain != "com.microsoft" or node.op_type not in _FLOAT32_INSIDE:
            nodes.append(node)
            continue
        for index, name in enumerate(node.input):
            if name and types.get(name) == TensorProto.FLOAT:
                if name not in narrowed:  # one Cast per value, however many nodes read it
                    nodes.append(onnx.helper.make_node("Cast", [name], [f"{name}__as_float32"], to=TensorProto.FLOAT))
                    narrowed.add(name)
                node.input[index] = f"{name}__as_float32"
        after = []
        for index, name in enumerate(node.output):
            if name and types.get(name) == TensorProto.FLOAT:
                node.output[index] = f"{name}__float32"
                after.append(onnx.helper.make_node("Cast", [f"{name}__float32"], [name], to=TensorProto.DOUBLE))
        nodes += [node, *after]
    del graph.node[:]
    graph.node.extend(nodes)
    return copy


@pytest.fixture
def float64_through_float_schemas(monkeypatch):
    """Lets float64 values through the type check of ops whose schemas list float32 but not
    float64 (most com.microsoft ops: onnxruntime's schemas, which jaxonnx declares as they are).
    The ops' JAX functions compute in their inputs' dtype, so the float64 copy of a file then
    computes in float64 throughout; an op that computed in float32 inside would make the
    differences below as coarse as float32, and the check fail. Only this test does this."""
    check = jaxonnx.OpVersion.check_inputs

    def check_as_float32(self, inputs, **kwargs):
        as_float32 = [
            jax.ShapeDtypeStruct(np.shape(value), np.float32)
            if getattr(value, "dtype", None) is not None and np.dtype(value.dtype) == np.float64
            else value
            for value in inputs
        ]
        try:
            return check(self, inputs, **kwargs)
        except jaxonnx.OnnxTypeError:
            return check(self, as_float32, **kwargs)

    monkeypatch.setattr(jaxonnx.OpVersion, "check_inputs", check_as_float32)


@pytest.mark.parametrize("name", GRADIENT_FILES)
def test_gradients_equal_finite_differences_of_a_float64_copy(name, float64_through_float_schemas):
    """``jax.grad`` of ``sum(output * cotangent)`` over every float output, w.r.t. every
    trainable float weight, in float32, against finite differences of the same loss computed
    from a float64 copy of the file, one random direction per weight.

    The differences are central, at steps ``h`` and ``h/2`` combined by Richardson
    extrapolation (``(4 D(h/2) - D(h)) / 3``, truncation error of order ``h**4``), ``h`` relative
    to the weight's size. Where the float64 copy is float64 throughout, ``h = 1e-5``: small
    enough for the sharp nonlinearities of these random models (T5's unscaled embeddings), and
    the loss's float64 rounding divided by ``h`` stays near 1e-11. MatMulNBits, MatMulBnb4 and
    GatherBlockQuantized compute in float32 by design (float32 is the widest type of their
    schemas), so their files' float64 copies (``as_float64``) still round those to float32, about
    ``eps32 * sum|output * cotangent|`` in the loss; there ``h = 1e-2`` keeps that rounding small
    after dividing by ``h`` (these quantized Llamas are smooth at that scale). The attention ops
    compute in float32 too, so files with them take the same step. The check:
    ``|<grad, v> - fd| <= RTOL * sum|grad * v| + 4 * eps * sum|output * cotangent| / h``, the
    float32 gradient within the outputs' relative tolerance of the terms it sums, plus the
    loss's rounding (``eps`` of float64, or of float32 for those files)."""
    model_proto = proto(name)
    model = load(name)
    wide = load(as_float64(model_proto), f"{name} (float64 copy)")
    feed = make_inputs(entry(name)["inputs"])
    wide_feed = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in feed.items()}
    # The outputs' shapes and types from onnxruntime (test_outputs_equal_onnxruntime checks that
    # jaxonnx's are the same; tracing the graph for them costs seconds); their values come from
    # the jitted gradient's program.
    shapes = onnxruntime_session(model_proto).run(None, feed)
    rng = np.random.default_rng(3)
    float_outputs = [i for i, value in enumerate(shapes) if value.dtype == np.float32]
    assert float_outputs, f"{name}: no float output to differentiate."
    cotangents = {i: rng.standard_normal(shapes[i].shape) for i in float_outputs}
    params = model.params
    assert params, f"{name}: no trainable float weight."

    def loss(params, model, feed, dtype, with_outputs=False):
        outs = model.apply(params, feed)
        total = sum(jnp.sum(outs[i] * jnp.asarray(c, dtype)) for i, c in cotangents.items())
        return (total, outs) if with_outputs else total

    grads, outputs = jax.jit(jax.grad(lambda p: loss(p, model, feed, jnp.float32, with_outputs=True), has_aux=True))(
        params
    )
    magnitude = sum(float(np.sum(np.abs(np.asarray(outputs[i], np.float64) * c))) for i, c in cotangents.items())
    loss64 = jax.jit(lambda p: loss(p, wide, wide_feed, jnp.float64))
    base64 = {k: np.asarray(v, np.float64) for k, v in params.items()}
    on_device = {k: jax.device_put(v) for k, v in base64.items()}  # copied once, not per call
    float32_inside = any(
        node.domain == "com.microsoft" and node.op_type in _FLOAT32_INSIDE for node in model_proto.graph.node
    )
    step, eps = (1e-2, np.finfo(np.float32).eps) if float32_inside else (1e-5, np.finfo(np.float64).eps)

    def central(param_name, direction, h):
        value = base64[param_name]
        plus = float(loss64({**on_device, param_name: value + h * direction}))
        minus = float(loss64({**on_device, param_name: value - h * direction}))
        return (plus - minus) / (2 * h)

    for param_name, value in base64.items():
        direction = rng.standard_normal(value.shape) * (np.sqrt(np.mean(value**2)) + 1e-3)
        finite_difference = (4 * central(param_name, direction, step / 2) - central(param_name, direction, step)) / 3
        grad = np.asarray(grads[param_name], np.float64)
        analytic = float(np.sum(grad * direction))
        tolerance = RTOL * float(np.sum(np.abs(grad * direction))) + 4 * eps * magnitude / step
        assert abs(analytic - finite_difference) <= tolerance, (
            f"{name}: gradient w.r.t. {param_name!r} along a random direction is {analytic:.8g}; "
            f"float64 finite differences give {finite_difference:.8g} (tolerance {tolerance:.3g})."
        )
