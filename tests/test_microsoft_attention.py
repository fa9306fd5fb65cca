"""onnxruntime's com.microsoft attention ops (RotaryEmbedding, GroupQueryAttention,
MultiHeadAttention, Attention, QAttention) against onnxruntime's CPU kernels: single nodes
on random shapes, eagerly and under ``jax.jit``, and GroupQueryAttention in a decode loop
over a fixed-size shared cache under one ``jax.jit``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from onnx import helper

import jaxonnx
from tests._eager import eager_and_jitted

_rng = np.random.default_rng(57)
_F = np.float32


def _normal(*shape, dtype=_F):
    return _rng.standard_normal(shape).astype(dtype)


def _node_model(op_type, inputs, attributes, output_count):
    """A one-node com.microsoft model; ``inputs`` are arrays or None (omitted)."""
    names = [f"in{i}" if x is not None else "" for i, x in enumerate(inputs)]
    while names and not names[-1]:
        names.pop()
    feed = {n: np.asarray(x) for n, x in zip(names, inputs) if n}
    outputs = [f"out{i}" for i in range(output_count)]
    node = helper.make_node(op_type, names, outputs, domain="com.microsoft", **attributes)
    graph = helper.make_graph(
        [node],
        "node",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape) for n, x in feed.items()],
        [helper.make_empty_tensor_value_info(o) for o in outputs],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 10
    return model, feed


def _check(
    op_type, inputs, attributes, run_onnxruntime, *, output_count=1, rtol=2e-5, atol=2e-5, compare=None, static=()
):
    """The node through ``jaxonnx.load``, eagerly and under ``jax.jit`` (inputs named in
    ``static`` closed over as numpy; a node whose eager call compiles whole with no such
    input runs once, its eager call being that jit), equals onnxruntime; ``compare(index, actual,
    expected)`` may pick the rows that onnxruntime defines. Returns onnxruntime's outputs."""
    model, feed = _node_model(op_type, inputs, attributes, output_count)
    expected = run_onnxruntime(model, feed)
    loaded = jaxonnx.load(model)
    fixed = {n: v for n, v in feed.items() if int(n[2:]) in static}

    @jax.jit
    def jitted(traced):
        return loaded.run({**traced, **fixed})

    runs = [loaded.run(feed)]
    if fixed or not loaded.eager_mode.startswith("whole graph"):
        # A node compiled whole runs an eager call as jax.jit of its graph already: jitting it
        # again, with every input traced, would compile the same computation twice.
        runs.append(jitted({n: v for n, v in feed.items() if n not in fixed}))
    for results in runs:
        for index, want in enumerate(expected):
            got = np.asarray(results[f"out{index}"])
            assert got.shape == want.shape and got.dtype == want.dtype, (index, got.shape, want.shape, got.dtype)
            if compare is not None:
                got, want = compare(index, got, want)
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"output {index}")
    return expected


# RotaryEmbedding -------------------------------------------------------------------------


def _caches(rows, half):
    angles = np.arange(rows)[:, None] * (1.0 / 10000 ** (np.arange(half) / half))[None, :]
    return np.cos(angles).astype(_F), np.sin(angles).astype(_F)


_ROTARY_CASES = {
    # (input shape, position_ids, cache rows, cache width, attributes)
    "3d": ((2, 5, 32), "2d", 12, 8, {}),
    "3d_heads": ((2, 5, 48), "2d", 12, 8, {"num_heads": 3}),
    "3d_interleaved": ((2, 5, 32), "2d", 12, 8, {"interleaved": 1}),
    "3d_offset": ((2, 5, 32), "offset", 12, 8, {}),
    "4d": ((2, 3, 5, 16), "2d", 12, 8, {}),
    "4d_interleaved_offset": ((1, 2, 4, 16), "offset", 9, 8, {"interleaved": 1}),
    "partial_dim": ((2, 4, 64), "2d", 10, 4, {"num_heads": 4, "rotary_embedding_dim": 8}),
    "partial_dim_interleaved": (
        (2, 2, 4, 16),
        "2d",
        10,
        4,
        {"num_heads": 2, "rotary_embedding_dim": 8, "interleaved": 1},
    ),
    "packed_batching": ((1, 6, 32), "2d", 8, 8, {"is_packed_batching": 1}),
}


@pytest.mark.parametrize("case", sorted(_ROTARY_CASES))
def test_rotary_embedding_equals_onnxruntime(case, run_onnxruntime):
    shape, positions, rows, half, attributes = _ROTARY_CASES[case]
    length = shape[-2] if len(shape) == 4 else shape[1]
    if positions == "offset":
        position_ids = np.array([rows - length], np.int64)
    else:
        position_ids = _rng.integers(0, rows, (shape[0], length)).astype(np.int64)
    cos, sin = _caches(rows, half)
    _check("RotaryEmbedding", [_normal(*shape), position_ids, cos, sin], attributes, run_onnxruntime)


# GroupQueryAttention ---------------------------------------------------------------------

_HEADS = {"num_heads": 4, "kv_num_heads": 2}
_GQA_HEAD = 32


def _i32(*values):
    return np.array(values, np.int32)


def _gqa_inputs(length, seqlens, total, past=None, *, batch=None, packed=False):
    """query, key, value, past_key, past_value, seqlens_k, total_sequence_length."""
    batch = len(seqlens) if batch is None else batch
    heads, kv_heads, size = _HEADS["num_heads"], _HEADS["kv_num_heads"], _GQA_HEAD
    if packed:
        qkv = [_normal(batch, length, (heads + 2 * kv_heads) * size), None, None]
    else:
        qkv = [
            _normal(batch, length, heads * size),
            _normal(batch, length, kv_heads * size),
            _normal(batch, length, kv_heads * size),
        ]
    caches = (
        [None, None] if past is None else [_normal(batch, kv_heads, past, size), _normal(batch, kv_heads, past, size)]
    )
    return qkv + caches + [_i32(*seqlens), np.array(total, np.int32)]


def _with(inputs, **extra):
    """The inputs with optional ones set by name (cos_cache=7 ... query_seqlens=16)."""
    slots = {
        "cos_cache": 7,
        "sin_cache": 8,
        "position_ids": 9,
        "attention_bias": 10,
        "head_sink": 11,
        "q_norm_weight": 14,
        "k_norm_weight": 15,
        "query_seqlens": 16,
    }
    inputs = list(inputs) + [None] * (17 - len(inputs))
    for name, value in extra.items():
        inputs[slots[name]] = value
    return inputs


_COS, _SIN = _caches(24, 16)
_COS_PARTIAL, _SIN_PARTIAL = _caches(24, 8)

_GQA_CASES = {
    # name: (inputs, attributes, outputs, the valid query rows per batch entry or None)
    "prompt": (_gqa_inputs(5, (4, 4), 5), {}, 3, None),
    # A right-padded batch: entry 1 holds 3 tokens; its padding rows attend as its last one.
    "prompt_padded": (_gqa_inputs(5, (4, 2), 5), {}, 3, None),
    "prompt_packed": (_gqa_inputs(5, (4, 3), 5, packed=True), {}, 3, None),
    "prompt_past_buffer": (_gqa_inputs(4, (3, 1), 4, past=9), {}, 3, None),
    "token": (_gqa_inputs(1, (4, 3), 5, past=4), {}, 3, None),
    "token_shared_buffer": (_gqa_inputs(1, (4, 2), 5, past=8), {}, 3, None),
    "token_packed_shared": (_gqa_inputs(1, (6, 2), 7, past=8, packed=True), {}, 3, None),
    "chunk_after_prompt": (_gqa_inputs(3, (5,), 6, past=8), {}, 3, None),
    "rotary_prompt": (_with(_gqa_inputs(5, (4, 2), 5), cos_cache=_COS, sin_cache=_SIN), {"do_rotary": 1}, 3, None),
    "rotary_interleaved_token": (
        _with(_gqa_inputs(1, (4, 2), 5, past=8), cos_cache=_COS, sin_cache=_SIN),
        {"do_rotary": 1, "rotary_interleaved": 1},
        3,
        None,
    ),
    "rotary_partial_packed": (
        _with(_gqa_inputs(1, (4, 2), 5, past=8, packed=True), cos_cache=_COS_PARTIAL, sin_cache=_SIN_PARTIAL),
        {"do_rotary": 1},
        3,
        None,
    ),
    "rotary_chunk": (_with(_gqa_inputs(3, (6,), 7, past=8), cos_cache=_COS, sin_cache=_SIN), {"do_rotary": 1}, 3, None),
    "rotary_position_ids": (
        _with(
            _gqa_inputs(1, (4, 2), 5, past=8),
            cos_cache=_COS,
            sin_cache=_SIN,
            position_ids=np.array([[9], [3]], np.int64),
        ),
        {"do_rotary": 1},
        3,
        None,
    ),
    # A first prompt reads only the first position id (the others follow it); a chunk reads all.
    "rotary_position_ids_prompt": (
        _with(
            _gqa_inputs(5, (4, 4), 5),
            cos_cache=_COS,
            sin_cache=_SIN,
            position_ids=np.array([[3, 4, 5, 6, 7], [0, 2, 4, 6, 8]], np.int64),
        ),
        {"do_rotary": 1},
        3,
        None,
    ),
    "rotary_position_ids_chunk": (
        _with(
            _gqa_inputs(3, (5,), 6, past=8),
            cos_cache=_COS,
            sin_cache=_SIN,
            position_ids=np.array([[9, 1, 3]], np.int64),
        ),
        {"do_rotary": 1},
        3,
        None,
    ),
    # A local window (padding rows left out: onnxruntime's depend on its loop bounds).
    "window_prompt": (_gqa_inputs(6, (5, 3), 6), {"local_window_size": 2}, 3, (6, 4)),
    "window_token": (_gqa_inputs(1, (6, 4), 7, past=8), {"local_window_size": 3}, 3, None),
    "softcap": (_gqa_inputs(5, (4, 2), 5), {"softcap": 1.5}, 3, None),
    "smooth_softmax": (_gqa_inputs(1, (4, 2), 5, past=8), {"smooth_softmax": 1}, 3, None),
    "head_sink": (_with(_gqa_inputs(5, (4, 2), 5), head_sink=_normal(4)), {}, 3, None),
    "attention_bias": (_with(_gqa_inputs(5, (4, 2), 5), attention_bias=_normal(2, 1, 5, 5)), {}, 3, None),
    "attention_bias_token": (_with(_gqa_inputs(1, (4, 2), 5, past=8), attention_bias=_normal(1, 4, 1, 5)), {}, 3, None),
    # The scores after scale, soft cap and bias; the probabilities.
    "scores": (
        _with(_gqa_inputs(5, (4, 2), 5), attention_bias=3 * _normal(2, 4, 5, 5)),
        {"softcap": 1.0, "qk_output": 1},
        4,
        None,
    ),
    "probabilities": (_gqa_inputs(1, (4, 2), 5, past=8), {"qk_output": 2, "scale": 0.3}, 4, None),
    "bidirectional": (_gqa_inputs(5, (4, 2), 5), {"causal": 0}, 3, None),
    "bidirectional_token": (_gqa_inputs(1, (4, 2), 5, past=8), {"causal": 0}, 3, None),
    # Right-padded chunks after a prompt: only the valid rows enter the cache.
    "query_seqlens": (_with(_gqa_inputs(3, (6, 4), 8, past=8), query_seqlens=_i32(3, 2)), {}, 3, (3, 2)),
    "query_seqlens_rotary": (
        _with(_gqa_inputs(3, (6, 4), 8, past=8), query_seqlens=_i32(3, 2), cos_cache=_COS, sin_cache=_SIN),
        {"do_rotary": 1, "local_window_size": 4},
        3,
        (3, 2),
    ),
}


def _int8_cache(inputs, per_channel, bits=8):
    """The inputs with an int8 past (or 4-bit codes packed in uint8) and its scales."""
    inputs = list(inputs)
    batch, heads, length, size = inputs[3].shape
    if bits == 8:
        inputs[3], inputs[4] = (
            _rng.integers(-100, 101, (batch, heads, length, size)).astype(np.int8) for _ in range(2)
        )
    else:
        inputs[3], inputs[4] = (
            _rng.integers(0, 256, (batch, heads, length, size // 2)).astype(np.uint8) for _ in range(2)
        )
    shape = (1, heads, 1, size) if per_channel else (1,)
    scales = [(_rng.random(shape) * 0.03 + 0.01).astype(_F) for _ in range(2)]
    return _with(inputs)[:12] + scales


_INT8 = {"kv_cache_bit_width": 8}
_GQA_CASES.update(
    {
        "int8_cache_per_tensor": (
            _int8_cache(_gqa_inputs(1, (4, 2), 5, past=8), False),
            {**_INT8, "k_quant_type": "PER_TENSOR", "v_quant_type": "PER_TENSOR"},
            3,
            None,
        ),
        "int8_cache_per_channel_prompt": (
            _int8_cache(_gqa_inputs(5, (4, 4), 5, past=8), True),
            {**_INT8, "k_quant_type": "PER_CHANNEL", "v_quant_type": "PER_CHANNEL"},
            3,
            None,
        ),
        # 4-bit codes two a byte (the rows past the held positions stay zero bytes).
        "int4_cache_per_tensor": (
            _int8_cache(_gqa_inputs(1, (4, 2), 5, past=8), False, bits=4),
            {"kv_cache_bit_width": 4, "k_quant_type": "PER_TENSOR", "v_quant_type": "PER_TENSOR"},
            3,
            None,
        ),
        "int4_cache_per_channel_prompt": (
            _int8_cache(_gqa_inputs(5, (4, 4), 5, past=8), True, bits=4),
            {"kv_cache_bit_width": 4, "k_quant_type": "PER_CHANNEL", "v_quant_type": "PER_CHANNEL"},
            3,
            None,
        ),
    }
)


def _rows(valid):
    """A ``compare`` that keeps the outputs' valid query rows (output 0 only)."""

    def compare(index, got, want):
        if index:
            return got, want
        return (
            np.concatenate([got[b, :n] for b, n in enumerate(valid)]),
            np.concatenate([want[b, :n] for b, n in enumerate(valid)]),
        )

    return compare


def _resident(held, capacity, window):
    """The positions a window cache keeps, as the operator's text defines them."""
    evict = capacity - window + 1
    return held if held <= capacity else held - evict * -(-(held - capacity) // evict)


def _window_rows(seqlens, capacity, window, valid=None):
    """A ``compare`` for a window cache: the valid query rows of the output, and the rows
    ``[0, L)`` of the present caches (the others are unspecified)."""

    def compare(index, got, want):
        if index == 0:
            rows = valid or [got.shape[1]] * got.shape[0]
            return (
                np.concatenate([got[b, :n] for b, n in enumerate(rows)]),
                np.concatenate([want[b, :n] for b, n in enumerate(rows)]),
            )
        kept = [_resident(int(t) + 1, capacity, window) for t in seqlens]
        return (
            np.concatenate([got[b, :, :n].ravel() for b, n in enumerate(kept)]),
            np.concatenate([want[b, :, :n].ravel() for b, n in enumerate(kept)]),
        )

    return compare


_WINDOW = {"local_window_size": 4, "sliding_window_cache": 1}
_WINDOW_CASES = {
    # name: (inputs, attributes, valid query rows or None); caches of 8 rows, a window of 4.
    "fits": (_gqa_inputs(1, (5, 3), 6, past=8), {}, None),
    "evicts": (_gqa_inputs(1, (8, 12), 13, past=8), {}, None),
    "capacity_is_window": (_gqa_inputs(1, (8, 5), 9, past=4), {}, None),
    "prompt": (_gqa_inputs(5, (4, 4), 5, past=8), {}, None),
    "prompt_past_capacity": (_gqa_inputs(10, (9, 9), 10, past=8), {}, None),
    "chunk": (_gqa_inputs(3, (11,), 12, past=8), {}, None),
    "query_seqlens": (_with(_gqa_inputs(3, (11, 9), 12, past=8), query_seqlens=_i32(3, 2)), {}, [3, 2]),
    "rotary": (_with(_gqa_inputs(1, (8, 12), 13, past=8), cos_cache=_COS, sin_cache=_SIN), {"do_rotary": 1}, None),
    "attention_bias": (_with(_gqa_inputs(1, (8, 12), 13, past=8), attention_bias=_normal(2, 1, 1, 13)), {}, None),
    "int8_cache": (
        _int8_cache(_gqa_inputs(1, (8, 10), 11, past=6), True),
        {"kv_cache_bit_width": 8, "k_quant_type": "PER_CHANNEL", "v_quant_type": "PER_CHANNEL"},
        None,
    ),
}


@pytest.mark.parametrize("case", sorted(_WINDOW_CASES))
def test_group_query_attention_window_cache_equals_onnxruntime(case, run_onnxruntime):
    inputs, attributes, valid = _WINDOW_CASES[case]
    compare = _window_rows(inputs[5], inputs[3].shape[2], _WINDOW["local_window_size"], valid)
    _check(
        "GroupQueryAttention",
        inputs,
        {**_HEADS, **_WINDOW, **attributes},
        run_onnxruntime,
        output_count=3,
        compare=compare,
    )


@pytest.mark.parametrize("case", sorted(_GQA_CASES))
def test_group_query_attention_equals_onnxruntime(case, run_onnxruntime):
    inputs, attributes, outputs, valid = _GQA_CASES[case]
    compare = None if valid is None else _rows(valid)
    # Under jit `total_sequence_length` is traced where the shapes tell it (a cache at least
    # as long as it: the shared buffer; a prompt with no past) and a static value elsewhere.
    past, total = inputs[3], int(inputs[6])
    known = (past is not None and past.shape[2] < total) or attributes.get("qk_output")
    _check(
        "GroupQueryAttention",
        inputs,
        {**_HEADS, **attributes},
        run_onnxruntime,
        output_count=outputs,
        compare=compare,
        static=(6,) if known else (),
    )


def _qk_norm_model(epsilon, rotary):
    """onnxruntime's CPU kernel has no Q/K norms: the same attention with each norm as the
    Reshape -> SimplifiedLayerNormalization -> Reshape stack the fusion replaces."""
    size, heads, kv_heads = _GQA_HEAD, _HEADS["num_heads"], _HEADS["kv_num_heads"]
    nodes, inits = (
        [],
        [
            helper.make_tensor("heads_shape", 7, [4], [0, 0, -1, size]),
            helper.make_tensor("hidden_shape", 7, [3], [0, 0, -1]),
        ],
    )
    for name in ("q", "k"):
        nodes += [
            helper.make_node("Reshape", [name, "heads_shape"], [f"{name}_heads"]),
            helper.make_node(
                "SimplifiedLayerNormalization",
                [f"{name}_heads", f"{name}_weight"],
                [f"{name}_normed"],
                axis=-1,
                epsilon=epsilon,
            ),
            helper.make_node("Reshape", [f"{name}_normed", "hidden_shape"], [f"{name}_n"]),
        ]
    rotary = ["cos", "sin"] if rotary else []
    nodes.append(
        helper.make_node(
            "GroupQueryAttention",
            ["q_n", "k_n", "v", "", "", "seqlens", "total"] + rotary,
            ["y", "present_key", "present_value"],
            domain="com.microsoft",
            **_HEADS,
            do_rotary=int(bool(rotary)),
        )
    )
    f = 1
    inputs = [
        helper.make_tensor_value_info("q", f, [2, 5, heads * size]),
        helper.make_tensor_value_info("k", f, [2, 5, kv_heads * size]),
        helper.make_tensor_value_info("v", f, [2, 5, kv_heads * size]),
        helper.make_tensor_value_info("seqlens", 6, [2]),
        helper.make_tensor_value_info("total", 6, []),
        helper.make_tensor_value_info("q_weight", f, [size]),
        helper.make_tensor_value_info("k_weight", f, [size]),
    ]
    inputs += [helper.make_tensor_value_info(name, f, [24, 16]) for name in rotary]
    graph = helper.make_graph(
        nodes,
        "qk_norm",
        inputs,
        [helper.make_empty_tensor_value_info(o) for o in ("y", "present_key", "present_value")],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 10
    return model


@pytest.mark.parametrize("epsilon, rotary", [(1e-6, False), (0.25, True)])
def test_group_query_attention_qk_norms_equal_the_unfused_graph(epsilon, rotary, run_onnxruntime):
    q, k, v, _, _, seqlens, total = _gqa_inputs(5, (4, 2), 5)
    weights = [_normal(_GQA_HEAD), _normal(_GQA_HEAD)]
    feed = {"q": q, "k": k, "v": v, "seqlens": seqlens, "total": total, "q_weight": weights[0], "k_weight": weights[1]}
    if rotary:
        feed.update(cos=_COS, sin=_SIN)
    expected = run_onnxruntime(_qk_norm_model(epsilon, rotary), feed)
    op = jaxonnx.get_op("GroupQueryAttention", 1, "com.microsoft")
    inputs = _with(
        [q, k, v, None, None, seqlens, total],
        q_norm_weight=weights[0],
        k_norm_weight=weights[1],
        **({"cos_cache": _COS, "sin_cache": _SIN} if rotary else {}),
    )
    got = op(*inputs, **_HEADS, qk_norm_epsilon=epsilon, do_rotary=int(rotary))
    for actual, want in zip(got, expected):
        np.testing.assert_allclose(np.asarray(actual), want, rtol=2e-5, atol=2e-5)


def _decode_model(batch, capacity, positions, window_cache):
    """One GroupQueryAttention node over a fixed-size cache, with rotary embedding and a
    local window, as onnxruntime-genai's builder writes it: the shared buffer, or (with
    ``window_cache``) the window-sized cache that evicts."""
    size, heads, kv_heads = _GQA_HEAD, _HEADS["num_heads"], _HEADS["kv_num_heads"]
    f = 1
    inputs = [
        helper.make_tensor_value_info("q", f, [batch, "s", heads * size]),
        helper.make_tensor_value_info("k", f, [batch, "s", kv_heads * size]),
        helper.make_tensor_value_info("v", f, [batch, "s", kv_heads * size]),
        helper.make_tensor_value_info("past_key", f, [batch, kv_heads, capacity, size]),
        helper.make_tensor_value_info("past_value", f, [batch, kv_heads, capacity, size]),
        helper.make_tensor_value_info("seqlens", 6, [batch]),
        helper.make_tensor_value_info("total", 6, []),
        helper.make_tensor_value_info("cos", f, [positions, 16]),
        helper.make_tensor_value_info("sin", f, [positions, 16]),
    ]
    node = helper.make_node(
        "GroupQueryAttention",
        ["q", "k", "v", "past_key", "past_value", "seqlens", "total", "cos", "sin"],
        ["y", "present_key", "present_value"],
        domain="com.microsoft",
        **_HEADS,
        do_rotary=1,
        local_window_size=6,
        softcap=4.0,
        sliding_window_cache=int(window_cache),
    )
    graph = helper.make_graph(
        [node],
        "decode",
        inputs,
        [helper.make_empty_tensor_value_info(o) for o in ("y", "present_key", "present_value")],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 10
    return model


@pytest.mark.parametrize("window_cache", [False, True], ids=["shared_buffer", "window_cache"])
def test_group_query_attention_decode_loop_under_one_jit(window_cache, run_onnxruntime):
    batch, prompt, steps = 2, 5, 8
    capacity = 8 if window_cache else 16  # the window cache evicts from the fourth step on
    size, heads, kv_heads = _GQA_HEAD, _HEADS["num_heads"], _HEADS["kv_num_heads"]
    model = _decode_model(batch, capacity, 16, window_cache)
    cos, sin = _caches(16, 16)
    # Entry 1's prompt is right-padded (onnxruntime's window cache takes no padded prompt).
    lengths = np.array([prompt, prompt if window_cache else 3])
    zeros = np.zeros((batch, kv_heads, capacity, size), _F)
    prefill = {
        "q": _normal(batch, prompt, heads * size),
        "k": _normal(batch, prompt, kv_heads * size),
        "v": _normal(batch, prompt, kv_heads * size),
        "past_key": zeros,
        "past_value": zeros,
        "seqlens": (lengths - 1).astype(np.int32),
        "total": _i32(prompt).reshape(()),
        "cos": cos,
        "sin": sin,
    }
    tokens = [
        {
            "q": _normal(batch, 1, heads * size),
            "k": _normal(batch, 1, kv_heads * size),
            "v": _normal(batch, 1, kv_heads * size),
        }
        for _ in range(steps)
    ]

    # onnxruntime, step by step, each present fed back as the next past.
    expected = [run_onnxruntime(model, prefill)]
    for step, token in enumerate(tokens):
        held = lengths + step + 1
        feed = {
            **token,
            "past_key": expected[-1][1],
            "past_value": expected[-1][2],
            "seqlens": (held - 1).astype(np.int32),
            "total": _i32(held.max()).reshape(()),
            "cos": cos,
            "sin": sin,
        }
        expected.append(run_onnxruntime(model, feed))

    def kept(cache, held):  # a window cache's rows past L are unspecified
        if not window_cache:
            return np.asarray(cache)
        return np.concatenate(
            [np.asarray(cache)[b, :, : _resident(int(t), capacity, 6)].ravel() for b, t in enumerate(held)]
        )

    loaded = jaxonnx.load(model)
    y, key_cache, value_cache = (loaded.run(prefill)[name] for name in ("y", "present_key", "present_value"))
    np.testing.assert_allclose(np.asarray(y), expected[0][0], rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(kept(key_cache, lengths), kept(expected[0][1], lengths), rtol=2e-5, atol=2e-5)

    @jax.jit
    def decode(key_cache, value_cache, seqlens, tokens):
        # Every step in one compiled loop: the cache keeps its size and the positions come
        # from the traced `seqlens_k` (and a traced `total_sequence_length`).
        def step(carry, token):
            key_cache, value_cache, seqlens = carry
            seqlens = seqlens + 1
            out = loaded.run(
                {
                    **token,
                    "past_key": key_cache,
                    "past_value": value_cache,
                    "seqlens": seqlens,
                    "total": jnp.max(seqlens) + 1,
                    "cos": cos,
                    "sin": sin,
                }
            )
            return (out["present_key"], out["present_value"], seqlens), (out["y"], out["present_key"])

        return jax.lax.scan(step, (key_cache, value_cache, seqlens), tokens)

    stacked = {name: np.stack([t[name] for t in tokens]) for name in ("q", "k", "v")}
    (_, _, final_seqlens), (ys, keys) = decode(key_cache, value_cache, jnp.asarray(prefill["seqlens"]), stacked)
    np.testing.assert_array_equal(np.asarray(final_seqlens), lengths - 1 + steps)
    for step in range(steps):
        held = lengths + step + 1
        np.testing.assert_allclose(
            np.asarray(ys[step]), expected[step + 1][0], rtol=2e-5, atol=2e-5, err_msg=f"step {step}"
        )
        np.testing.assert_allclose(
            kept(keys[step], held), kept(expected[step + 1][1], held), rtol=2e-5, atol=2e-5, err_msg=f"step {step}"
        )


# Attention, QAttention, MultiHeadAttention -----------------------------------------------

_B, _S, _D, _N, _H = 2, 3, 16, 2, 8


def _bits(*shape):
    return (_rng.random(shape) < 0.6).astype(np.int32)


_ATTENTION_CASES = {
    # name: (inputs, attributes, outputs)
    "plain": ([_normal(_B, _S, _D), _normal(_D, 3 * _N * _H), _normal(3 * _N * _H)], {}, 1),
    "no_bias_unidirectional": ([_normal(_B, _S, _D), _normal(_D, 3 * _N * _H)], {"unidirectional": 1}, 1),
    "mask_ends": ([_normal(_B, _S, _D), _normal(_D, 3 * _N * _H), _normal(3 * _N * _H), _i32(3, 2)], {}, 1),
    "mask_ends_starts": (
        [_normal(_B, _S, _D), _normal(_D, 3 * _N * _H), _normal(3 * _N * _H), _i32(3, 2, 1, 0)],
        {},
        1,
    ),
    "mask_3b_plus_2": (
        [_normal(_B, _S, _D), _normal(_D, 3 * _N * _H), _normal(3 * _N * _H), _i32(3, 2, 0, 0, 3, 2, 0, 0)],
        {},
        1,
    ),
    "mask_2d": ([_normal(_B, _S, _D), _normal(_D, 3 * _N * _H), _normal(3 * _N * _H), _bits(_B, _S)], {}, 1),
    "mask_3d": ([_normal(_B, _S, _D), _normal(_D, 3 * _N * _H), _normal(3 * _N * _H), _bits(_B, _S, _S)], {}, 1),
    # A row whose only causal key is padding still attends it (padding adds -10000, the
    # causal frontier leaves keys out).
    "mask_row_all_padding": (
        [
            _normal(_B, _S, _D),
            _normal(_D, 3 * _N * _H),
            _normal(3 * _N * _H),
            np.array([[0, 0, 1], [1, 0, 0]], np.int32),
        ],
        {"unidirectional": 1},
        1,
    ),
    "past": (
        [_normal(_B, _S, _D), _normal(_D, 3 * _N * _H), _normal(3 * _N * _H), None, _normal(2, _B, _N, 4, _H)],
        {},
        2,
    ),
    "past_mask_unidirectional": (
        [
            _normal(_B, _S, _D),
            _normal(_D, 3 * _N * _H),
            _normal(3 * _N * _H),
            _bits(_B, _S + 4),
            _normal(2, _B, _N, 4, _H),
        ],
        {"unidirectional": 1},
        2,
    ),
    "past_mask_ends": (
        [_normal(_B, _S, _D), _normal(_D, 3 * _N * _H), _normal(3 * _N * _H), _i32(6, 5), _normal(2, _B, _N, 4, _H)],
        {"unidirectional": 1},
        2,
    ),
    "qkv_hidden_sizes": ([_normal(_B, _S, _D), _normal(_D, 28), _normal(28)], {"qkv_hidden_sizes": [8, 8, 12]}, 1),
    "attention_bias": (
        [_normal(_B, _S, _D), _normal(_D, 3 * _N * _H), _normal(3 * _N * _H), None, None, _normal(1, _N, _S, _S)],
        {},
        1,
    ),
    "scale_filter_value": (
        [_normal(_B, _S, _D), _normal(_D, 3 * _N * _H), _normal(3 * _N * _H), _i32(2, 1)],
        {"scale": 0.3, "mask_filter_value": -5.0},
        1,
    ),
}


@pytest.mark.parametrize("case", sorted(_ATTENTION_CASES))
def test_attention_equals_onnxruntime(case, run_onnxruntime):
    inputs, attributes, outputs = _ATTENTION_CASES[case]
    _check("Attention", inputs, {"num_heads": _N, **attributes}, run_onnxruntime, output_count=outputs, atol=1e-5)


def test_attention_shared_buffer_equals_the_growing_cache():
    # onnxruntime's CPU kernel does not run the shared buffer; it is the growing cache
    # written into a longer buffer at `past_sequence_length` (traced under jit).
    op = jaxonnx.get_op("Attention", 1, "com.microsoft")
    x, w, b = _normal(_B, _S, _D), _normal(_D, 3 * _N * _H), _normal(3 * _N * _H)
    past = _normal(2, _B, _N, 4, _H)
    buffer = np.concatenate([past, _normal(2, _B, _N, 5, _H)], axis=3)
    mask = _bits(_B, 4 + _S)

    @jax.jit  # the growing cache and the shared buffer in one compiled program
    def shared(buffer, past_length):
        growing = op(x, w, b, mask, past, num_heads=_N, unidirectional=1)
        return growing, op(
            x, w, b, mask, buffer, None, past_length, num_heads=_N, unidirectional=1, past_present_share_buffer=1
        )

    (want_y, want_present), (y, present) = shared(buffer, np.array(4, np.int32))
    np.testing.assert_allclose(np.asarray(y), np.asarray(want_y), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(present)[:, :, :, : 4 + _S], np.asarray(want_present), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(present)[:, :, :, 4 + _S :], buffer[:, :, :, 4 + _S :])


def _codes(dtype, *shape):
    # int8 weights in 7 bits: onnxruntime's AVX2 u8s8 kernel saturates pairs of products in
    # int16 beyond that (why its quantizer offers reduce_range).
    info = np.iinfo(dtype)
    low, high = (info.min // 2, info.max // 2) if dtype == np.int8 else (info.min, info.max)
    return _rng.integers(low, high + 1, shape).astype(dtype)


@pytest.mark.parametrize("weight_type", [np.int8, np.uint8])
@pytest.mark.parametrize("form", ["plain", "zero_points_mask", "per_column_past"])
def test_qattention_equals_onnxruntime(weight_type, form, run_onnxruntime):
    x, w, b = _codes(np.uint8, _B, _S, _D), _codes(weight_type, _D, 3 * _N * _H), _normal(3 * _N * _H)
    inputs = [x, w, b, _F(0.02), _F(0.01)]
    attributes = {"num_heads": _N}
    if form == "zero_points_mask":
        inputs += [_i32(3, 2), _codes(np.uint8), _codes(weight_type)]
    elif form == "per_column_past":
        inputs = inputs[:4] + [
            (_rng.random(3 * _N * _H) * 0.02).astype(_F),
            None,
            _codes(np.uint8),
            _codes(weight_type, 3 * _N * _H),
            _normal(2, _B, _N, 4, _H),
        ]
        attributes["unidirectional"] = 1
    # Without past, onnxruntime computes `present` too (this call's keys and values): the
    # zero-point form declares it, the plain form does not.
    _check("QAttention", inputs, attributes, run_onnxruntime, output_count=1 if form == "plain" else 2, atol=1e-5)


_MHA_CASES = {
    "cross": ([_normal(_B, _S, _N * _H), _normal(_B, 4, _N * _H), _normal(_B, 4, _N * _H)], {}, 1),
    "value_head_size": ([_normal(_B, _S, _N * _H), _normal(_B, 4, _N * _H), _normal(_B, 4, _N * 12)], {}, 1),
    "bias": ([_normal(_B, _S, _N * _H), _normal(_B, 4, _N * _H), _normal(_B, 4, _N * _H), _normal(3 * _N * _H)], {}, 1),
    # A cross attention's cache, BNSH, used as is (no bias on it).
    "cache_bnsh_bias": (
        [_normal(_B, _S, _N * _H), _normal(_B, _N, 4, _H), _normal(_B, _N, 4, _H), _normal(3 * _N * _H)],
        {},
        3,
    ),
    "past_unidirectional_bias": (
        [
            _normal(_B, _S, _N * _H),
            _normal(_B, _S, _N * _H),
            _normal(_B, _S, _N * _H),
            _normal(3 * _N * _H),
            None,
            None,
            _normal(_B, _N, 4, _H),
            _normal(_B, _N, 4, _H),
        ],
        {"unidirectional": 1},
        3,
    ),
    "mask_lengths": (
        [_normal(_B, _S, _N * _H), _normal(_B, 4, _N * _H), _normal(_B, 4, _N * _H), None, _i32(3, 2)],
        {},
        1,
    ),
    "mask_3b_plus_2": (
        [
            _normal(_B, _S, _N * _H),
            _normal(_B, 4, _N * _H),
            _normal(_B, 4, _N * _H),
            None,
            _i32(3, 2, 0, 0, 3, 2, 0, 0),
        ],
        {},
        1,
    ),
    "mask_2d": (
        [_normal(_B, _S, _N * _H), _normal(_B, 4, _N * _H), _normal(_B, 4, _N * _H), None, _bits(_B, 4)],
        {},
        1,
    ),
    "mask_2d_total": (
        [
            _normal(_B, _S, _N * _H),
            _normal(_B, _S, _N * _H),
            _normal(_B, _S, _N * _H),
            None,
            _bits(_B, 7),
            None,
            _normal(_B, _N, 4, _H),
            _normal(_B, _N, 4, _H),
        ],
        {},
        3,
    ),
    "mask_3d": (
        [_normal(_B, _S, _N * _H), _normal(_B, 4, _N * _H), _normal(_B, 4, _N * _H), None, _bits(_B, _S, 4)],
        {},
        1,
    ),
    "attention_bias": (
        [_normal(_B, _S, _N * _H), _normal(_B, 4, _N * _H), _normal(_B, 4, _N * _H), None, None, _normal(_B, 1, _S, 4)],
        {},
        1,
    ),
    "shared_buffer": (
        [
            _normal(_B, _S, _N * _H),
            _normal(_B, _S, _N * _H),
            _normal(_B, _S, _N * _H),
            None,
            None,
            None,
            _normal(_B, _N, 8, _H),
            _normal(_B, _N, 8, _H),
            _i32(4),
        ],
        {},
        3,
    ),
    "shared_buffer_unidirectional": (
        [
            _normal(_B, _S, _N * _H),
            _normal(_B, _S, _N * _H),
            _normal(_B, _S, _N * _H),
            None,
            None,
            None,
            _normal(_B, _N, 8, _H),
            _normal(_B, _N, 8, _H),
            _i32(2),
        ],
        {"unidirectional": 1},
        3,
    ),
    # Beam search: 2 batch entries of 2 beams, each past row read from the beam named.
    "cache_indirection": (
        [
            _normal(4, 1, _N * _H),
            _normal(4, 1, _N * _H),
            _normal(4, 1, _N * _H),
            None,
            None,
            None,
            _normal(4, _N, 8, _H),
            _normal(4, _N, 8, _H),
            _i32(4),
            _rng.integers(0, 2, (2, 2, 8)).astype(np.int32),
        ],
        {},
        3,
    ),
    "scale_filter_unidirectional": (
        [_normal(_B, _S, _N * _H), _normal(_B, _S, _N * _H), _normal(_B, _S, _N * _H), None, _i32(2, 1)],
        {"scale": 0.4, "mask_filter_value": -3.0, "unidirectional": 1},
        1,
    ),
}


@pytest.mark.parametrize("case", sorted(_MHA_CASES))
def test_multi_head_attention_equals_onnxruntime(case, run_onnxruntime):
    inputs, attributes, outputs = _MHA_CASES[case]
    _check("MultiHeadAttention", inputs, {"num_heads": _N, **attributes}, run_onnxruntime, output_count=outputs)


def test_multi_head_attention_scores_equal_onnxruntime(run_onnxruntime):
    inputs = [
        _normal(_B, _S, _N * _H),
        _normal(_B, _S, _N * _H),
        _normal(_B, _S, _N * _H),
        None,
        _i32(3, 2),
        _normal(1, _N, _S, 7),
        _normal(_B, _N, 4, _H),
        _normal(_B, _N, 4, _H),
    ]
    model, feed = _node_model("MultiHeadAttention", inputs, {"num_heads": _N, "unidirectional": 1}, 4)
    del model.graph.output[:]  # onnxruntime infers no type for `qk` unless declared
    model.graph.output.extend([helper.make_tensor_value_info(f"out{i}", 1, None) for i in range(4)])
    expected = run_onnxruntime(model, feed)
    got = jax.jit(jaxonnx.load(model).run)(feed)
    for index, want in enumerate(expected):  # the scores hold -10000s and the lowest float
        np.testing.assert_allclose(np.asarray(got[f"out{index}"]), want, rtol=2e-6, atol=2e-5)


@pytest.mark.parametrize("packed", ["qkv", "kv"])
def test_multi_head_attention_packed_equals_onnxruntime_unpacked(packed, run_onnxruntime):
    # onnxruntime's CPU kernel takes no packed forms; they are the separate Q, K and V.
    q, k, v = _normal(_B, _S, _N * _H), _normal(_B, _S, _N * _H), _normal(_B, _S, _N * _H)
    heads = [x.reshape(_B, _S, _N, 1, _H) for x in (q, k, v)]
    (expected,) = _check("MultiHeadAttention", [q, k, v, _normal(3 * _N * _H)][:3], {"num_heads": _N}, run_onnxruntime)
    op = jaxonnx.get_op("MultiHeadAttention", 1, "com.microsoft")
    if packed == "qkv":
        got = op(np.concatenate(heads, axis=3), num_heads=_N, output_count=1)
    else:
        got = op(q, np.concatenate(heads[1:], axis=3), num_heads=_N, output_count=1)
    np.testing.assert_allclose(np.asarray(got[0]), expected, rtol=2e-5, atol=2e-5)


def test_group_query_attention_refusals_name_the_input():
    op = jaxonnx.get_op("GroupQueryAttention", 1, "com.microsoft")
    inputs = _gqa_inputs(1, (4, 2), 5, past=8)
    with pytest.raises(jaxonnx.OnnxValidationError, match="window cache of at least"):
        op(*inputs, **_HEADS, sliding_window_cache=1, local_window_size=9)
    with pytest.raises(jaxonnx.OnnxValidationError, match="k_quant_type"):
        op(*inputs, **_HEADS, k_quant_type="PER_TENSOR")  # no scale, a float cache
    with pytest.raises(jaxonnx.OnnxValidationError, match="seqlens_k"):
        op(*inputs[:5], _i32(8, 2), inputs[6], **_HEADS)  # 9 positions for a cache of 8
    # The scores' last dim is total_sequence_length: a traced one is refused there.
    with pytest.raises(jaxonnx.OnnxValidationError, match="qk_output"):
        jax.jit(lambda total: op(*inputs[:6], total, **_HEADS, qk_output=1))(inputs[6])


def _whisper_decoder_attention_without_past():
    """A Whisper decoder layer's attention as onnxruntime's Whisper export writes it for the
    first step (no cache inputs): self-attention (Attention, causal) declaring ``present_self``,
    then cross-attention (MultiHeadAttention over the encoder's states) declaring
    ``present_key_cross`` and ``present_value_cross``."""
    from onnx import TensorProto, numpy_helper

    batch, length, encoded, hidden, heads = 2, 3, 5, 8, 2
    weights = [
        numpy_helper.from_array(_normal(hidden, 3 * hidden) * 0.3, "qkv_weight"),
        numpy_helper.from_array(_normal(3 * hidden) * 0.1, "qkv_bias"),
        numpy_helper.from_array(_normal(hidden, hidden) * 0.3, "cross_q_weight"),
    ]
    nodes = [
        helper.make_node(
            "Attention",
            ["hidden", "qkv_weight", "qkv_bias"],
            ["self_out", "present_self"],
            name="Attention_self",
            domain="com.microsoft",
            num_heads=heads,
            unidirectional=1,
        ),
        helper.make_node("MatMul", ["self_out", "cross_q_weight"], ["cross_q"], name="cross_q_proj"),
        helper.make_node(
            "MultiHeadAttention",
            ["cross_q", "encoder_key", "encoder_value"],
            ["cross_out", "present_key_cross", "present_value_cross"],
            name="Attention_cross",
            domain="com.microsoft",
            num_heads=heads,
        ),
    ]
    value = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes,
        "whisper_decoder_attention",
        [
            value("hidden", TensorProto.FLOAT, [batch, length, hidden]),
            value("encoder_key", TensorProto.FLOAT, [batch, encoded, hidden]),
            value("encoder_value", TensorProto.FLOAT, [batch, encoded, hidden]),
        ],
        [
            value(name, TensorProto.FLOAT, None)
            for name in ("cross_out", "present_self", "present_key_cross", "present_value_cross")
        ],
        initializer=weights,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 8
    feed = {
        "hidden": _normal(batch, length, hidden),
        "encoder_key": _normal(batch, encoded, hidden),
        "encoder_value": _normal(batch, encoded, hidden),
    }
    return model, feed


def test_attention_without_past_computes_present_as_onnxruntime(run_onnxruntime):
    # Issue 41 §3: such files ended in a bare `KeyError: 'present_self'`.
    model, feed = _whisper_decoder_attention_without_past()
    expected = run_onnxruntime(model, feed)
    assert [e.shape for e in expected[1:]] == [(2, 2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4)]
    loaded = jaxonnx.load(model)
    runs = eager_and_jitted(loaded)
    for run in runs:
        for got, want in zip(run(**feed), expected, strict=True):
            np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-5)


def test_an_output_the_op_does_not_compute_is_named_not_a_key_error():
    # Keys and values of other widths stack into no present without past: the node declaring
    # one gets jaxonnx's error naming the node, the op and the output.
    model, feed = _node_model(
        "Attention",
        [_normal(2, 3, 8), _normal(8, 20), _normal(20)],
        {"num_heads": 2, "qkv_hidden_sizes": [4, 4, 12]},
        output_count=2,
    )
    with pytest.raises(
        jaxonnx.UnsupportedOpError,
        match=r"Node 'Attention_0' \(Attention-1\) declares 2 outputs, but jaxonnx's Attention-1 returned 1 .* "
        r"the output 'out1' here",
    ):
        jaxonnx.load(model)(**feed)
