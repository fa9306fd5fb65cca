"""Validation errors (checked for their message), static-value errors under jit, the x64
policy, string tensors, and GatherElements' documented clamping under jit."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _spec import (
    INT64_MAX,
    INT64_MIN,
    assert_exact,
    compress_spec,
    flatten_spec,
    gather_elements_spec,
    random_array,
    slice_spec,
    where_spec,
)

import jaxonnx
from jaxonnx import OnnxTypeError, OnnxValidationError, StaticValueError, ops

X = jnp.arange(24, dtype=jnp.int32).reshape(2, 3, 4)


# ------------------------------------------------------------------------------ Slice


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: ops.slice(X, [0], [1], [0], [0]), r"^Slice-13 got `steps`=\[0\]; a step may not be 0\.$"),
        (
            lambda: jaxonnx.get_op("Slice", 10)(X, np.array([0, 0]), np.array([1, 1]), None, np.array([1, 0])),
            r"^Slice-10 got `steps`=\[1, 0\]; a step may not be 0\.$",
        ),
        (
            lambda: ops.slice(X, [0], [1], [3]),
            r"^Slice-13 got `axes`=3 for an input of rank 3; the accepted range is \[-3, 2\]\.$",
        ),
        (
            lambda: ops.slice(X, [0], [1], [-4]),
            r"^Slice-13 got `axes`=-4 for an input of rank 3; the accepted range is \[-3, 2\]\.$",
        ),
        (
            lambda: ops.slice(X, [0, 0], [1, 1], [1, -2]),
            r"^Slice-13 got repeated `axes` \[1, 1\]; each axis may appear once\.$",
        ),
        (
            lambda: ops.slice(X, [0, 0], [1], [0, 1]),
            r"^Slice-13 needs `starts`, `ends`, `axes` and `steps` of one length, got lengths 2, 1, 2 and 2\.$",
        ),
        (
            lambda: ops.slice(X, [0], [1], None, [1, 1]),
            r"^Slice-13 needs `starts`, `ends`, `axes` and `steps` of one length, got lengths 1, 1, 1 and 2\.$",
        ),
        (
            lambda: jaxonnx.get_op("Slice", 10)(X, np.array([0]), np.array([1]), np.array([-1])),
            r"^Slice-10 got `axes`=-1 for an input of rank 3; the accepted range is \[0, 2\]\.$",
        ),
        (
            lambda: jaxonnx.get_op("Slice", 1)(X, starts=[0], ends=[1], axes=[-3]),
            r"^Slice-1 got `axes`=-3 for an input of rank 3; the accepted range is \[0, 2\]\.$",
        ),
        (
            # Slice-1 has no `steps`, so its message does not mention them.
            lambda: jaxonnx.get_op("Slice", 1)(X, starts=[0, 0], ends=[1]),
            r"^Slice-1 needs `starts`, `ends` and `axes` of one length, got lengths 2, 1 and 2\.$",
        ),
        (
            lambda: jaxonnx.get_op("Slice", 1)(X, starts=[0], ends=[1], axes=[0, 1]),
            r"^Slice-1 needs `starts`, `ends` and `axes` of one length, got lengths 1, 1 and 2\.$",
        ),
        # Bounds given as arrays must be 1-D (ONNX's 1-D tensors), also 0-d ones.
        (
            lambda: jaxonnx.get_op("Slice", 13)(X, np.array(0), np.array(1)),
            r"^Slice-13 needs a 1-D `starts`, got shape \(\)\.$",
        ),
        (
            lambda: jaxonnx.get_op("Slice", 13)(X, np.array([0]), np.array(1)),
            r"^Slice-13 needs a 1-D `ends`, got shape \(\)\.$",
        ),
        (
            lambda: jaxonnx.get_op("Slice", 10)(X, np.array([0]), np.array([1]), np.array(0)),
            r"^Slice-10 needs a 1-D `axes`, got shape \(\)\.$",
        ),
        (
            lambda: ops.slice(X, [[0]], [[1]]),
            r"^Slice-13 needs a 1-D `starts`, got shape \(1, 1\)\.$",
        ),
        (
            lambda: ops.slice(X, [0.5], [1]),
            r"^Slice-13 needs integer `starts`, got dtype float64\.$",
        ),
    ],
)
def test_slice_validation_messages(call, message):
    with pytest.raises(OnnxValidationError, match=message):
        call()


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: jaxonnx.get_op("Slice", 13)(X, np.array([0], np.int32), np.array([1], np.int64)),
            r"^Slice-13 needs `starts` and `ends` of one element type \(Tind\), got int32 and int64\.$",
        ),
        (
            lambda: jaxonnx.get_op("Slice", 10)(
                X, np.array([0]), np.array([1]), np.array([0]), np.array([1], np.int32)
            ),
            r"^Slice-10 needs `starts` and `steps` of one element type \(Tind\), got int64 and int32\.$",
        ),
        (
            lambda: jaxonnx.get_op("Slice", 13)(X, jnp.array([0], jnp.int32), np.array([1], np.int64)),
            r"^Slice-13 needs `starts` and `ends` of one element type \(Tind\), got int32 and int64\.$",
        ),
    ],
)
def test_slice_index_inputs_share_one_dtype(call, message):
    # ONNX gives `starts`, `ends`, `axes` and `steps` one type parameter, Tind.
    with pytest.raises(OnnxTypeError, match=message):
        call()


def test_slice_public_bounds_may_mix_python_values_and_arrays():
    # Only arguments given as arrays are compared; Python ints and lists are read as they are.
    expected = np.asarray(X)[:1]
    assert_exact(ops.slice(X, np.array([0], np.int32), [1]), expected, kind="jax")
    assert_exact(ops.slice(X, 0, np.array([1], np.int64)), expected, kind="jax")
    assert_exact(ops.slice(X, 0, 1), expected, kind="jax")


def test_slice_negative_axes_are_accepted_from_version_11():
    for version in (11, 13):
        out = jaxonnx.get_op("Slice", version)(X, np.array([1]), np.array([INT64_MAX]), np.array([-1]))
        assert_exact(out, np.asarray(X)[:, :, 1:], kind="jax")


@pytest.mark.parametrize("name", ["starts", "ends", "axes", "steps"])
def test_slice_traced_bounds_raise_static_value_error_naming_the_input(name):
    bounds = {"starts": np.array([0]), "ends": np.array([2]), "axes": np.array([1]), "steps": np.array([1])}

    def f(traced):
        return ops.slice(X, **(bounds | {name: traced}))

    message = rf"^Slice-13 needs the value of `{name}` to decide its output shape, but `{name}` is traced \(shape \(1,\), dtype int64\)"
    with pytest.raises(StaticValueError, match=message) as info:
        jax.jit(f)(jnp.asarray(bounds[name]))
    assert info.value.argument == name
    # Closed over, the same bounds are fine under jit.
    assert_exact(jax.jit(lambda x: ops.slice(x, **bounds))(X), np.asarray(X)[:, 0:2], kind="jax")


def test_slice_bounds_given_as_concrete_jax_arrays_are_read_eagerly():
    out = ops.slice(X, jnp.array([2]), jnp.array([INT64_MIN]), jnp.array([-1]), jnp.array([-2]))
    assert_exact(out, np.asarray(X)[:, :, 2::-2], kind="jax")
    # A registry version given JAX bounds and numpy data answers with JAX (any JAX input does).
    data = np.asarray(X)
    out = jaxonnx.get_op("Slice", 13)(data, jnp.array([1]), jnp.array([3]))
    assert_exact(out, data[1:3], kind="jax")


# ------------------------------------------------------------------------------ Where


def test_where_needs_a_bool_condition():
    with pytest.raises(
        OnnxTypeError, match=r"^Where-16 does not accept tensor\(int32\) for input `condition`; it accepts bool\.$"
    ):
        ops.where(jnp.array([1, 0], jnp.int32), jnp.array([1, 2]), jnp.array([3, 4]))
    # The registry refuses it by the schema's type constraint first.
    with pytest.raises(
        OnnxTypeError, match=r"^Where-9 does not accept tensor\(uint8\) for input `condition`; it accepts bool\.$"
    ):
        jaxonnx.get_op("Where", 9)(np.array([1], np.uint8), np.zeros(1), np.zeros(1))


def test_where_needs_one_dtype_for_x_and_y():
    with pytest.raises(
        OnnxTypeError, match=r"^Where-16 needs `X` and `Y` of one element type \(T\), got int32 and int64\.$"
    ):
        ops.where(jnp.array([True]), jnp.array([1], jnp.int32), jnp.array([1], jnp.int64))
    with pytest.raises(
        OnnxTypeError, match=r"^Where-16 needs `X` and `Y` of one element type \(T\), got float32 and bfloat16\.$"
    ):
        jaxonnx.get_op("Where", 16)(np.array([True]), np.zeros(1, np.float32), np.zeros(1, "bfloat16"))


def test_where_unbroadcastable_shapes():
    message = r"^Where-16 cannot broadcast `condition` \(2,\), `X` \(3,\) and `Y` \(1,\) to one shape\.$"
    with pytest.raises(OnnxValidationError, match=message):
        ops.where(jnp.array([True, False]), jnp.arange(3), jnp.arange(1))
    message = r"^Where-16 cannot broadcast `condition` \(0,\), `X` \(2, 1\) and `Y` \(3, 1\) to one shape\.$"
    with pytest.raises(OnnxValidationError, match=message):
        jaxonnx.get_op("Where", 16)(np.zeros((0,), bool), np.zeros((2, 1)), np.zeros((3, 1)))


# ------------------------------------------------------------------------------ Compress


def test_compress_needs_a_bool_condition():
    with pytest.raises(
        OnnxTypeError, match=r"^Compress-28 does not accept tensor\(int32\) for input `condition`; it accepts bool\.$"
    ):
        ops.compress(X, jnp.array([0, 1], jnp.int32), axis=0)


def test_compress_condition_longer_than_the_axis():
    message = r"^Compress-28 got a `condition` of length 3, longer than axis 0 of `input` \(size 2, input shape \(2, 3, 4\)\)\.$"
    with pytest.raises(OnnxValidationError, match=message):
        ops.compress(X, [True, False, True], axis=0)
    message = r"^Compress-28 got a `condition` of length 25, longer than axis 0 of `input` \(size 24, input shape \(24,\)\)\.$"
    with pytest.raises(OnnxValidationError, match=message):
        ops.compress(X, np.ones(25, bool))


def test_compress_needs_a_1d_condition():
    with pytest.raises(OnnxValidationError, match=r"^Compress-28 needs a 1-D `condition`, got shape \(1, 2\)\.$"):
        ops.compress(X, np.array([[True, False]]), axis=0)
    with pytest.raises(OnnxValidationError, match=r"^Compress-11 needs a 1-D `condition`, got shape \(\)\.$"):
        jaxonnx.get_op("Compress", 11)(np.zeros(3), np.array(True))


def test_compress_axis_out_of_range_and_compress_9_negative_axis():
    with pytest.raises(
        OnnxValidationError,
        match=r"^Compress-28 got `axis`=3 for an input of rank 3; the accepted range is \[-3, 2\]\.$",
    ):
        ops.compress(X, [True], axis=3)
    with pytest.raises(
        OnnxValidationError,
        match=r"^Compress-9 got `axis`=-1 for an input of rank 3; the accepted range is \[0, 2\]\.$",
    ):
        jaxonnx.get_op("Compress", 9)(np.asarray(X), np.array([True]), axis=-1)
    assert_exact(jaxonnx.get_op("Compress", 11)(np.asarray(X), np.array([True]), axis=-1), np.asarray(X)[:, :, :1])


def test_compress_traced_condition_without_size_names_size():
    with pytest.raises(
        StaticValueError, match=r"^Compress-28 cannot decide its output shape under `jax.jit`: `condition` is traced"
    ) as info:
        jax.jit(lambda c: ops.compress(X, c, axis=1))(jnp.array([True, False]))
    assert "`size=`" in str(info.value) and "`fill_value=`" in str(info.value)
    assert info.value.argument == "condition"
    with pytest.raises(StaticValueError, match=re.escape("pass `size=`")):
        jax.jit(lambda c: jaxonnx.get_op("Compress", 9)(np.asarray(X), c))(jnp.array([True, False]))


def test_compress_size_too_small_raises_eagerly():
    message = r"^Compress-28 selected 2 slices but `size`=1; the result would be truncated, so it is refused\. Give a larger `size`\.$"
    with pytest.raises(OnnxValidationError, match=message):
        ops.compress(X, [True, True], axis=0, size=1)
    with pytest.raises(OnnxValidationError, match=r"^Compress-28 needs a non-negative int `size`, got -1\.$"):
        ops.compress(X, [True], axis=0, size=-1)


def test_compress_size_too_small_raises_at_run_time_under_jit():
    run = jax.jit(lambda c: ops.compress(X, c, axis=2, size=2))
    assert_exact(run(jnp.array([False, True, False, True])), np.asarray(X)[:, :, [1, 3]], kind="jax")
    assert_exact(
        run(jnp.array([False, True])), np.concatenate([np.asarray(X)[:, :, [1]], np.zeros((2, 3, 1), np.int32)], axis=2)
    )
    with pytest.raises(
        jax.errors.JaxRuntimeError,
        match=r"Compress selected 3 slices at run time but its output was given size=2; the result would be truncated",
    ):
        np.asarray(run(jnp.array([True, True, False, True])))


def test_compress_size_must_be_an_int_not_a_bool():
    with pytest.raises(OnnxValidationError, match=r"^Compress-28 needs a non-negative int `size`, got True\.$"):
        ops.compress(X, [True], axis=0, size=True)
    with pytest.raises(OnnxValidationError, match=r"^Compress-9 needs a non-negative int `size`, got False\.$"):
        jaxonnx.get_op("Compress", 9)(np.zeros(2), np.array([True]), size=False)


@pytest.mark.parametrize(
    "data, fill_value",
    [
        (jnp.arange(3, dtype=jnp.int8), 1000),  # would wrap to -24
        (jnp.arange(3, dtype=jnp.int8), np.uint8(232)),  # also -24
        (jnp.arange(3, dtype=jnp.uint8), -1),
        (jnp.arange(3, dtype=jnp.int32), 0.7),  # would truncate to 0
        (jnp.arange(3, dtype=jnp.int32), float("nan")),
        (jnp.arange(3, dtype=jnp.float32), 1e300),  # would overflow to inf
        (jnp.arange(3, dtype=jnp.int64), 2**70),
        (jnp.arange(3, dtype=jnp.float32), 1 + 2j),
        (jnp.array([True, False, True]), 2),
    ],
)
def test_compress_fill_value_must_be_exact_in_the_dtype_of_data(data, fill_value):
    message = (
        rf"^Compress-28 got `fill_value`={re.escape(repr(fill_value))}, which dtype {data.dtype} of `input` "
        rf"cannot hold exactly; the padding would not be {re.escape(repr(fill_value))}, so it is refused\.$"
    )
    with pytest.raises(OnnxValidationError, match=message):
        ops.compress(data, np.array([False, True]), size=3, fill_value=fill_value)
    # (no `$` under jit: JAX appends a note on its traceback filtering to the message)
    with pytest.raises(OnnxValidationError, match=message[:-1]):
        jax.jit(lambda c: ops.compress(data, c, size=3, fill_value=fill_value))(jnp.array([False, True]))


@pytest.mark.parametrize(
    "data, fill_value, padding",
    [
        (jnp.arange(3, dtype=jnp.int8), -128, -128),
        (jnp.arange(3, dtype=jnp.int32), 3.0, 3),
        (jnp.arange(3, dtype=jnp.float32), np.float32(0.1), np.float32(0.1)),
        (jnp.arange(3, dtype=jnp.float32), 0.1, np.float32(0.1)),  # a float rounds, as in JAX
        (jnp.arange(3, dtype=jnp.float32), 16777217, np.float32(16777216)),  # so does an int
        (jnp.arange(3, dtype=jnp.float64), 2**70, np.float64(2**70)),
        (jnp.arange(3, dtype=jnp.complex64), 1 + 2j, np.complex64(1 + 2j)),
        (jnp.arange(3, dtype=jnp.float32), 0.5, 0.5),
        (jnp.arange(3, dtype=jnp.float32), float("nan"), np.nan),
        (jnp.arange(3, dtype=jnp.bfloat16), float("-inf"), -np.inf),
        (jnp.arange(3, dtype=jnp.uint64), 2**64 - 1, 2**64 - 1),
        (jnp.array([True, False, True]), 1, True),
    ],
)
def test_compress_exact_fill_values_pad_eagerly_and_under_jit(data, fill_value, padding):
    expected = np.array([np.asarray(data)[1], padding, padding], dtype=data.dtype)
    assert_exact(ops.compress(data, np.array([False, True]), size=3, fill_value=fill_value), expected, kind="jax")
    run = jax.jit(lambda c: ops.compress(data, c, size=3, fill_value=fill_value))
    assert_exact(run(jnp.array([False, True])), expected, kind="jax")


def test_compress_pads_strings_with_strings():
    strings = np.array(["a", "b", "c"], dtype=object)
    # The default padding of string data is "", not the int 0.
    out = ops.compress(strings, np.array([False, True]), size=3)
    assert_exact(out, np.array(["b", "", ""], dtype=object), kind="numpy")
    assert all(isinstance(v, str) for v in out)
    out = jaxonnx.get_op("Compress", 11)(strings, np.array([True]), size=2, fill_value="pad")
    assert_exact(out, np.array(["a", "pad"], dtype=object), kind="numpy")
    for fill_value in (0, b"x"):
        message = rf"^Compress-28 pads string data \(dtype object\) with `fill_value`, which must be a string that the dtype holds, got {re.escape(repr(fill_value))}\.$"
        with pytest.raises(OnnxTypeError, match=message):
            ops.compress(strings, np.array([True]), size=2, fill_value=fill_value)
    # A fixed-width str array cannot hold a longer string.
    with pytest.raises(
        OnnxTypeError,
        match=r"^Compress-28 pads string data \(dtype <U1\) with `fill_value`, which must be a string that the dtype holds, got 'xy'\.$",
    ):
        ops.compress(np.array(["a", "b"]), np.array([True]), size=2, fill_value="xy")


def test_compress_fill_value_must_be_a_scalar_number():
    with pytest.raises(
        OnnxTypeError, match=r"^Compress-28 needs a scalar number `fill_value` for dtype int32, got \[1\]\.$"
    ):
        ops.compress(X, np.array([True]), axis=0, size=2, fill_value=[1])
    with pytest.raises(
        OnnxTypeError, match=r"^Compress-28 needs a scalar number `fill_value` for dtype int32, got 'a'\.$"
    ):
        ops.compress(X, np.array([True]), axis=0, size=2, fill_value="a")


def test_compress_traced_condition_with_size_cannot_be_exported():
    # Documented limitation: the run-time overflow check is a host callback, which
    # jax.export cannot serialize. This fails if jax starts to allow it (then document that).
    f = jax.jit(lambda c: ops.compress(X, c, axis=0, size=2))
    np.testing.assert_array_equal(f(jnp.array([True, False])), np.asarray(X)[[0, 0]] * np.array([1, 0])[:, None, None])
    with pytest.raises(NotImplementedError, match=r"^serialization of host_callbacks is not yet implemented$"):
        jax.export.export(f)(jax.ShapeDtypeStruct((2,), jnp.bool_)).serialize()
    # A static condition embeds no callback, so it exports and round trips.
    g = jax.jit(lambda x: ops.compress(x, np.array([False, True]), axis=0, size=2))
    restored = jax.export.deserialize(jax.export.export(g)(jax.ShapeDtypeStruct(X.shape, X.dtype)).serialize())
    assert_exact(restored.call(X), g(X), kind="jax")


# ------------------------------------------------------------------------------ GatherElements


def test_gather_elements_rank_mismatch():
    message = r"^GatherElements-13 needs `indices` of the rank of `data` \(3\), got shape \(2, 3\) for `data` of shape \(2, 3, 4\)\.$"
    with pytest.raises(OnnxValidationError, match=message):
        ops.gather_elements(X, jnp.zeros((2, 3), jnp.int32))


def test_gather_elements_out_of_bounds_concrete_index_shows_value_and_position():
    indices = np.zeros((2, 3, 4), np.int64)
    indices[1, 2, 3] = 4
    indices[1, 2, 0] = -5  # the first bad one in row-major order
    # (no `$`: under jit, JAX appends a note on its traceback filtering to the message)
    message = r"^GatherElements-13 got index -5 at position \(1, 2, 0\) of `indices`, outside \[-4, 3\] for axis 2 of `data` with shape \(2, 3, 4\)\."
    with pytest.raises(OnnxValidationError, match=message):
        ops.gather_elements(X, jnp.asarray(indices), axis=-1)
    with pytest.raises(OnnxValidationError, match=message.replace("-13", "-11")):
        jaxonnx.get_op("GatherElements", 11)(np.asarray(X), indices, axis=2)
    # Closed over under jit, numpy indices are concrete and checked the same way.
    with pytest.raises(OnnxValidationError, match=message):
        jax.jit(lambda x: jaxonnx.get_op("GatherElements", 13)(x, indices, axis=2))(X)


def test_gather_elements_indices_larger_than_data_on_another_dim():
    message = r"^GatherElements-13 got `indices` of shape \(3, 1\) larger than `data` \(2, 2\) on dim 0, which is not the gather axis \(1\)\.$"
    with pytest.raises(OnnxValidationError, match=message):
        ops.gather_elements(jnp.zeros((2, 2)), jnp.zeros((3, 1), jnp.int32), axis=1)
    # Smaller is fine: only that corner of `data` is read.
    data = np.arange(12).reshape(3, 4)
    indices = np.array([[3, 0], [-1, 1]])
    assert_exact(
        ops.gather_elements(jnp.asarray(data), indices, axis=1), gather_elements_spec(data, indices, 1), kind="jax"
    )


def test_gather_elements_axis_out_of_range_and_scalar_data():
    with pytest.raises(
        OnnxValidationError,
        match=r"^GatherElements-13 got `axis`=-4 for an input of rank 3; the accepted range is \[-3, 2\]\.$",
    ):
        ops.gather_elements(X, jnp.zeros((1, 1, 1), jnp.int32), axis=-4)
    with pytest.raises(OnnxValidationError, match=r"^GatherElements-13 needs `data` of rank >= 1, got a scalar\.$"):
        ops.gather_elements(jnp.array(1.0), jnp.array(0))


def test_gather_elements_needs_integer_indices():
    with pytest.raises(
        OnnxTypeError,
        match=r"^GatherElements-13 does not accept tensor\(float\) for input `indices`; it accepts int32, int64\.$",
    ):
        ops.gather_elements(X, jnp.zeros((1, 1, 1), jnp.float32))


def test_gather_elements_under_jit_clamps_out_of_bounds_indices():
    # Documented: traced indices cannot be checked, so after negative ones are wrapped
    # (i + dim), an index is clamped into [0, dim - 1]; nothing outside `data` is read.
    data = jnp.array([10, 11, 12, 13], jnp.int64)
    indices = jnp.array([-9, -5, -4, -1, 0, 3, 4, 7, 2**40])
    out = jax.jit(ops.gather_elements)(data, indices)
    assert_exact(out, np.array([10, 10, 10, 13, 10, 13, 13, 13, 13]), kind="jax")
    # In 2-D, along axis 1, through the registry.
    data2 = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
    out = jax.jit(lambda d, i: jaxonnx.get_op("GatherElements", 13)(d, i, axis=1))(data2, jnp.array([[5, -7], [-2, 1]]))
    assert_exact(out, np.array([[2, 0], [4, 4]], np.float32), kind="jax")


def test_gather_elements_empty_axis_under_jit():
    data = jnp.zeros((2, 0), jnp.float32)
    assert_exact(
        jax.jit(lambda d, i: ops.gather_elements(d, i, 1))(data, jnp.zeros((2, 0), jnp.int32)),
        np.zeros((2, 0), np.float32),
    )
    with pytest.raises(
        OnnxValidationError,
        match=r"^GatherElements-13 gathers along axis 1 of size 0 with 2 indices; every index is out of bounds\.",
    ):
        jax.jit(lambda d, i: ops.gather_elements(d, i, 1))(data, jnp.zeros((2, 1), jnp.int32))


# ------------------------------------------------------------------------------ Flatten


@pytest.mark.parametrize(
    "version, axis, accepted",
    [
        (1, -1, "[0, 3]"),
        (9, -1, "[0, 3]"),
        (9, 4, "[0, 3]"),
        (11, 4, "[-3, 3]"),
        (13, -4, "[-3, 3]"),
        (25, 5, "[-3, 3]"),
    ],
)
def test_flatten_axis_out_of_range(version, axis, accepted):
    # Every version names itself.
    name = f"Flatten-{version}"
    message = rf"^{name} got `axis`={axis} for an input of rank 3; the accepted range is {re.escape(accepted)}\.$"
    with pytest.raises(OnnxValidationError, match=message):
        jaxonnx.get_op("Flatten", version)(np.zeros((2, 3, 4), np.float32), axis=axis)
    with pytest.raises(OnnxValidationError, match=message):
        jaxonnx.get_op("Flatten", version)(jnp.zeros((2, 3, 4), jnp.float32), axis=axis)


def test_flatten_scalar():
    assert_exact(ops.flatten(jnp.float32(3.5), 0), np.array([[3.5]], np.float32), kind="jax")
    assert_exact(ops.flatten(jnp.float32(3.5), -0), np.array([[3.5]], np.float32), kind="jax")
    with pytest.raises(
        OnnxValidationError, match=r"^Flatten-25 got `axis`=1 for an input of rank 0; the accepted range is \[0, 0\]\.$"
    ):
        ops.flatten(jnp.float32(3.5))


# ------------------------------------------------------------------------------ string tensors


STRINGS = random_array(np.random.default_rng(7), (2, 3, 4), np.dtype(object))


@pytest.mark.parametrize("version", [9, 11, 13, 21, 25])
def test_strings_through_flatten(version):
    for axis in range(4):
        out = jaxonnx.get_op("Flatten", version)(STRINGS, axis=axis)
        assert_exact(out, flatten_spec(STRINGS, axis), kind="numpy")
    assert_exact(ops.flatten(STRINGS, -1), flatten_spec(STRINGS, -1), kind="numpy")


@pytest.mark.parametrize("version", [1, 10, 11, 13])
def test_strings_through_slice(version):
    starts, ends, axes, steps = [INT64_MAX, 0], [INT64_MIN, 2], [2, 0], [-2, 1]
    expected = slice_spec(STRINGS, starts, ends, axes, steps if version > 1 else None)
    op = jaxonnx.get_op("Slice", version)
    if version == 1:
        out = op(STRINGS, starts=starts, ends=ends, axes=axes)
    else:
        out = op(STRINGS, *(np.array(v) for v in (starts, ends, axes, steps)))
    assert_exact(out, expected, kind="numpy")
    newest = slice_spec(STRINGS, starts, ends, axes, steps)
    assert_exact(ops.slice(STRINGS, starts, ends, axes, steps), newest, kind="numpy")
    # Static strings inside jit are evaluated at trace time, exactly.
    shape = jax.jit(lambda: jnp.array(ops.slice(STRINGS, starts, ends, axes, steps).shape))()
    assert_exact(shape, np.array(newest.shape, dtype=np.int64))


@pytest.mark.parametrize("version", [11, 13])
def test_strings_through_gather_elements(version):
    indices = np.random.default_rng(1).integers(-3, 3, size=(2, 3, 4))
    expected = gather_elements_spec(STRINGS, indices, 1)
    assert_exact(jaxonnx.get_op("GatherElements", version)(STRINGS, indices, axis=1), expected, kind="numpy")
    # A concrete JAX `indices` beside strings runs eagerly, too.
    assert_exact(ops.gather_elements(STRINGS, jnp.asarray(indices), 1), expected, kind="numpy")


@pytest.mark.parametrize("version", [9, 16])
def test_strings_through_where(version):
    condition = np.array([True, False, False, True])
    y = np.array([["ü"], ["v"], ["w"]], dtype=object)
    expected = where_spec(condition, STRINGS, y)
    assert_exact(jaxonnx.get_op("Where", version)(condition, STRINGS, y), expected, kind="numpy")
    assert_exact(ops.where(jnp.asarray(condition), STRINGS, y), expected, kind="numpy")
    # numpy's fixed-width str arrays are string tensors too, whatever their width.
    assert_exact(
        ops.where(condition[:2], np.array(["a", "b"]), np.array(["ccc", "dd"])), np.array(["a", "dd"]), kind="numpy"
    )


@pytest.mark.parametrize("version", [9, 11, 28])
def test_strings_through_compress(version):
    condition = np.array([True, False, True])
    expected = compress_spec(STRINGS, condition, 1)
    assert_exact(jaxonnx.get_op("Compress", version)(STRINGS, condition, axis=1), expected, kind="numpy")
    assert_exact(ops.compress(STRINGS, jnp.asarray(condition), 1), expected, kind="numpy")
    assert_exact(ops.compress(STRINGS, condition[:2]), compress_spec(STRINGS, condition[:2]), kind="numpy")


@pytest.mark.parametrize(
    "call, traced",
    [
        (lambda c: ops.where(c[:1], STRINGS, STRINGS), "condition"),
        (lambda c: jaxonnx.get_op("Where", 16)(c, STRINGS[:, :, :2], STRINGS[:, :, 1:3]), "condition"),
        (lambda c: ops.compress(STRINGS, c, 0, size=2), "condition"),
        (lambda c: jaxonnx.get_op("Compress", 9)(STRINGS, c, size=2), "condition"),
        (lambda i: ops.gather_elements(STRINGS, jnp.zeros((1, 1, 1), jnp.int32) + i, 0), "indices"),
    ],
)
def test_strings_beside_traced_values_raise_a_clear_error_under_jit(call, traced):
    with pytest.raises(
        OnnxTypeError,
        match=rf"got the string tensor `\w+` with the traced `{traced}`; JAX cannot hold strings, so string tensors run only on the eager path",
    ):
        jax.jit(call)(jnp.array([True, False]) if traced == "condition" else jnp.array(0, jnp.int32))


def test_strings_cannot_become_jax_arrays():
    with pytest.raises(OnnxTypeError, match=r"string tensor, which JAX cannot hold"):
        jaxonnx._core.dtypes.as_jax(STRINGS)


# ------------------------------------------------------------------------------ the x64 policy


I64 = np.array([2**40, -3, 7], np.int64)


@pytest.mark.usefixtures("x64_off")
@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: ops.flatten(I64), "`input` of Flatten-25"),
        (lambda: ops.slice(I64, [0], [2]), "`data` of Slice-13"),
        (lambda: ops.gather_elements(I64, np.array([0], np.int32)), "`data` of GatherElements-13"),
        (lambda: ops.where(np.array([True, False, True]), I64, I64), "`X` of Where-16"),
        (lambda: ops.compress(I64, [True]), "`input` of Compress-28"),
        (lambda: ops.flatten(I64.astype(np.uint64)), "`input` of Flatten-25"),
        # Mixed numpy/JAX inputs of the registry: the numpy one has to become JAX.
        (lambda: jaxonnx.get_op("Where", 16)(jnp.array([True, False, True]), I64, I64), "`X` of Where-16"),
        (lambda: jaxonnx.get_op("GatherElements", 13)(I64, jnp.array([0, 1])), "`data` of GatherElements-13"),
        (lambda: jaxonnx.get_op("Compress", 11)(I64, jnp.array([True, False])), "`input` of Compress-11"),
        (lambda: jaxonnx.get_op("Slice", 13)(I64, jnp.array([0]), jnp.array([2])), "`data` of Slice-13"),
        (
            lambda: jax.jit(lambda c: jaxonnx.get_op("Compress", 11)(I64, c, size=1))(jnp.array([True])),
            "`input` of Compress-11",
        ),
    ],
)
def test_x64_off_a_64_bit_value_that_does_not_fit_32_bits_raises(call, name):
    # x64 off: 64-bit types compute as their 32-bit JAX counterparts; 2**40 cannot, so it
    # raises naming the input and the value instead of wrapping.
    with pytest.raises(OnnxTypeError, match=rf"{re.escape(name)} holds the u?int64 value 1099511627776 .*does not fit"):
        call()


@pytest.mark.usefixtures("x64_off")
def test_x64_off_64_bit_values_compute_in_32_bits_exactly_where_they_fit():
    small = np.array([[2**31 - 1, -(2**31)], [0, 5]], np.int64)
    for dtype, expected in (
        (np.int64, np.int32),
        (np.uint64, np.uint32),
        (np.float64, np.float32),
        (np.complex128, np.complex64),
    ):
        x = np.abs(small).astype(dtype) if dtype == np.uint64 else small.astype(dtype)
        want = x.astype(expected)
        for call in (
            lambda x: ops.flatten(x),
            lambda x: ops.slice(x, [0], [2]),
            lambda x: ops.where(np.array([True, True]), x, x),
            lambda x: jaxonnx.get_op("Where", 16)(jnp.array([True, True]), x, x),
        ):
            out = call(x)
            assert isinstance(out, jax.Array) and out.dtype == expected
            np.testing.assert_array_equal(np.asarray(out), want.reshape(out.shape))


@pytest.mark.usefixtures("x64_off")
def test_x64_off_static_64_bit_values_stay_exact():
    x = jnp.arange(10, dtype=jnp.int32)
    # Slice bounds are static: int64 bounds (INT64 extremes included) are exact without x64.
    out = ops.slice(x, np.array([INT64_MAX], np.int64), np.array([INT64_MIN], np.int64), None, np.array([-3], np.int64))
    assert_exact(out, np.array([9, 6, 3, 0], np.int32), kind="jax")
    out = jaxonnx.get_op("Slice", 13)(
        x,
        np.array([2**40], np.int64),
        np.array([-(2**40)], np.int64),
        np.array([0], np.int64),
        np.array([-4], np.int64),
    )
    assert_exact(out, np.array([9, 5, 1], np.int32), kind="jax")
    # numpy inputs stay numpy through the registry: exact 64-bit results, no JAX involved.
    assert_exact(
        jaxonnx.get_op("Where", 16)(np.array([True, False, True]), I64, I64[::-1].copy()),
        np.array([2**40, -3, 7]),
        kind="numpy",
    )
    assert_exact(
        jaxonnx.get_op("Flatten", 13)(I64.astype(np.uint64) + np.uint64(2**63)),
        (I64.astype(np.uint64) + np.uint64(2**63)).reshape(3, 1),
        kind="numpy",
    )
    # int64 indices that are concrete and in range are used as int32 for JAX data.
    assert_exact(
        jaxonnx.get_op("GatherElements", 13)(x, np.array([9, -1, 0], np.int64)),
        np.array([9, 9, 0], np.int32),
        kind="jax",
    )
    # 32-bit data is unaffected.
    assert_exact(ops.compress(x, np.array([False, True])), np.array([1], np.int32), kind="jax")
    assert jnp.arange(2).dtype == jnp.int32  # the fixture really turned x64 off


def test_public_ops_keep_a_closed_over_numpy_condition_and_indices_static_under_jit():
    x = jnp.arange(6.0).reshape(3, 2)
    kept = jax.jit(lambda v: ops.compress(v, np.array([True, False, True]), axis=0))(x)
    np.testing.assert_array_equal(kept, [[0.0, 1.0], [4.0, 5.0]])
    # numpy indices are concrete at trace time, so they are bounds-checked there too.
    with pytest.raises(OnnxValidationError, match=r"index 5 at position \(0, 0\)"):
        jax.jit(lambda v: ops.gather_elements(v, np.array([[5, 0]]), axis=0))(x)


def test_public_slice_reads_any_integer_bounds():
    # ONNX's Tind rule (one 1-D dtype for all bounds) binds the registered versions, not
    # the JAX function: with x64 off, jnp.array([1]) is int32 beside numpy's int64.
    x = jnp.arange(10)
    expected = np.asarray(x)[1:3]
    np.testing.assert_array_equal(ops.slice(x, starts=jnp.array([1], jnp.int32), ends=np.array([3])), expected)
    np.testing.assert_array_equal(ops.slice(x, starts=1, ends=3), expected)
