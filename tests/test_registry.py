"""The op registry against onnx's schemas: the versions, resolution, type constraints and attributes."""

from __future__ import annotations

import re

import numpy as np
import onnx
import onnx.defs
import pytest
from _spec import ALL_DTYPES, schema_types

import jaxonnx
from jaxonnx import OnnxTypeError, OnnxValidationError, UnsupportedOpError
from jaxonnx._core import registry as _registry
from jaxonnx._core.dtypes import onnx_type_name

#: Versions of the default domain that onnx does not define and onnxruntime does
#: (SimplifiedLayerNormalization-1, its contrib LayerNormalization-1): each declares its schema.
ONNXRUNTIME_VERSIONS = {
    (op, version)
    for op, versions in jaxonnx.supported_ops().items()
    for version in versions
    if jaxonnx.get_op(op, version).own_schema is not None
}
#: Every registered op of the default domain that onnx defines, from the registry.
OUR_OPS = tuple(
    op for op, versions in jaxonnx.supported_ops().items() if any((op, v) not in ONNXRUNTIME_VERSIONS for v in versions)
)
#: The registered ops of the other domains onnx defines (ai.onnx.ml, ai.onnx.preview, ...):
#: (domain, op). Domains onnx does not define (com.microsoft) declare their own schemas.
_ONNX_DOMAINS = {s.domain for s in onnx.defs.get_all_schemas_with_history()} - {""}
OTHER_DOMAIN_OPS = tuple(
    (domain, op)
    for domain in sorted(jaxonnx.REGISTRY.domains() & _ONNX_DOMAINS)
    for op in jaxonnx.supported_ops(domain)
)


def onnx_since_versions(op: str, domain: str = "") -> list[int]:
    return sorted(
        s.since_version for s in onnx.defs.get_all_schemas_with_history() if s.name == op and s.domain == domain
    )


@pytest.mark.parametrize("op", OUR_OPS)
def test_registered_versions_are_exactly_onnxs_since_versions(op):
    # A new onnx release that adds a version (a new type, a changed signature) fails here
    # until the version is registered (and, where its signature changed, adapted).
    onnxs = tuple(v for v in jaxonnx.supported_ops()[op] if (op, v) not in ONNXRUNTIME_VERSIONS)
    assert onnxs == tuple(onnx_since_versions(op))


def test_the_default_domain_versions_onnx_lacks_are_onnxruntimes():
    # onnxruntime declares these in the default domain (and runs models with them there);
    # each is registered with onnxruntime's schema, below onnx's first version of the op.
    import onnxruntime.capi.onnxruntime_pybind11_state as onnxruntime_schemas

    assert ONNXRUNTIME_VERSIONS == {("LayerNormalization", 1), ("SimplifiedLayerNormalization", 1)}
    declared = {(s.name, s.since_version): s for s in onnxruntime_schemas.get_all_operator_schema() if s.domain == ""}
    for op, version in ONNXRUNTIME_VERSIONS:
        ours, theirs = jaxonnx.get_op(op, version).schema, declared[op, version]
        assert ours.domain == "" and ours.since_version == version
        assert [f.name for f in ours.inputs] == [f.name for f in theirs.inputs]
        assert [f.name for f in ours.outputs] == [f.name for f in theirs.outputs]
        assert set(ours.attributes) == set(theirs.attributes)
        assert all(version < v for v in onnx_since_versions(op))


@pytest.mark.parametrize("domain, op", OTHER_DOMAIN_OPS)
def test_other_domains_register_exactly_onnxs_since_versions(domain, op):
    assert jaxonnx.supported_ops(domain)[op] == tuple(onnx_since_versions(op, domain))


def test_the_documented_version_lists():
    supported = jaxonnx.supported_ops()
    assert supported["Compress"] == (9, 11, 28)
    assert supported["Flatten"] == (1, 9, 11, 13, 21, 23, 24, 25)
    assert supported["GatherElements"] == (11, 13)
    assert supported["Where"] == (9, 16)
    assert supported["Slice"] == (1, 10, 11, 13)
    assert set(OUR_OPS) <= set(supported)


@pytest.mark.parametrize("op", OUR_OPS)
def test_resolution_is_the_largest_since_version_not_above_the_opset(op):
    versions = onnx_since_versions(op)
    # (Below onnx's first version, onnxruntime's own version resolves: LayerNormalization-1.)
    for opset in range(versions[0], onnx.defs.onnx_opset_version() + 6):
        expected = max(v for v in versions if v <= opset)
        resolved = jaxonnx.get_op(op, opset)
        assert resolved.since_version == expected, opset
        assert resolved.op_type == op
        assert resolved.name == f"{op}-{expected}"
        assert resolved.schema.since_version == expected
        # The same version object, whichever opset resolved to it.
        assert resolved is jaxonnx.get_op(op, expected)


@pytest.mark.parametrize(
    "op, opset, since",
    [
        ("Slice", 12, 11),
        ("Slice", 10, 10),
        ("Slice", 9, 1),
        ("Flatten", 22, 21),
        ("Flatten", 10, 9),
        ("Flatten", 100, 25),
        ("Compress", 27, 11),
        ("Compress", 28, 28),
        ("Where", 15, 9),
        ("GatherElements", 12, 11),
        ("Slice", 100, 13),
    ],
)
def test_resolution_examples(op, opset, since):
    assert jaxonnx.get_op(op, opset).since_version == since
    assert jaxonnx.get_op(op, opset, domain="ai.onnx").since_version == since


@pytest.mark.parametrize("op, opset", [("Slice", 0), ("Compress", 8), ("GatherElements", 10), ("Where", 1)])
def test_an_opset_below_the_first_version_names_op_opset_and_versions(op, opset):
    versions = ", ".join(map(str, onnx_since_versions(op)))
    with pytest.raises(
        UnsupportedOpError, match=rf"'{op}' does not exist at opset {opset}; its versions are {versions}"
    ):
        jaxonnx.get_op(op, opset)


def test_an_unknown_op_lists_the_supported_ops():
    listing = ", ".join(sorted(jaxonnx.supported_ops()))
    with pytest.raises(UnsupportedOpError, match=r"'NoSuchOp' \(domain 'ai.onnx'\) is not supported") as info:
        jaxonnx.get_op("NoSuchOp", 13)
    assert f"supported ops: {listing}." in str(info.value)
    for op in OUR_OPS:
        assert op in str(info.value)


def test_an_unknown_domain_is_unsupported():
    with pytest.raises(
        UnsupportedOpError, match=r"^The domain 'com.example' is not supported \(op 'Slice'\); jaxonnx has no ops of it"
    ):
        jaxonnx.get_op("Slice", 13, domain="com.example")


@pytest.fixture
def scratch_registry():
    """A registry instance the test may change: a copy of jaxonnx's without Relu, which the
    tests register afresh, as a new op. jaxonnx's own registry is never touched."""
    scratch = _registry.REGISTRY.copy()
    del scratch._versions[("", "Relu")]
    return scratch


def test_registering_a_version_twice_raises_and_changes_nothing(scratch_registry):
    original = scratch_registry.get_op("Slice", 13)
    with pytest.raises(ValueError, match=r"^Slice-13 is already registered"):
        scratch_registry.register("Slice", 13)(lambda *args: None)
    assert scratch_registry.get_op("Slice", 13) is original
    # A refused call registers none of its versions, not even those checked before the refusal.
    scratch_registry.register("Relu", 6)(lambda x: x)
    with pytest.raises(ValueError, match=r"^Relu-6 is already registered"):
        scratch_registry.register("Relu", 13, 6)(lambda x: x)
    assert scratch_registry.supported_ops()["Relu"] == (6,)


def test_supported_ops_follows_registrations_and_gives_each_caller_a_copy(scratch_registry):
    # The listing is kept between calls (model loads ask it per node); a registration must
    # still show at once, and a caller changing its answer must not change the next one.
    own_relu = jaxonnx.supported_ops()["Relu"]
    listing = scratch_registry.supported_ops()
    assert "Relu" not in listing
    listing["Relu"] = (99,)
    assert "Relu" not in scratch_registry.supported_ops()
    scratch_registry.register("Relu", 6, 13)(lambda x: x)
    assert scratch_registry.supported_ops()["Relu"] == (6, 13)
    assert jaxonnx.supported_ops()["Relu"] == own_relu  # a copy's listing is its own


def test_registering_where_onnx_has_no_version_raises(scratch_registry):
    before = scratch_registry.supported_ops()
    with pytest.raises(ValueError, match=r"onnx defines no Relu version 7; the nearest is 6"):
        scratch_registry.register("Relu", 6, 7)(lambda x: x)
    with pytest.raises(ValueError, match=r"onnx defines no op 'NoSuchOp' in domain 'ai.onnx' at version 1"):
        scratch_registry.register("NoSuchOp", 1)(lambda x: x)
    with pytest.raises(ValueError, match=r"got a version twice"):
        scratch_registry.register("Relu", 6, 6)(lambda x: x)
    assert scratch_registry.supported_ops() == before


def test_a_newly_registered_op_resolves(scratch_registry):
    def relu(x):
        return np.maximum(x, 0)

    assert scratch_registry.register("Relu", 6, 13, 14)(relu) is relu
    assert scratch_registry.supported_ops()["Relu"] == (6, 13, 14)
    assert scratch_registry.get_op("Relu", 15).since_version == 14
    np.testing.assert_array_equal(scratch_registry.get_op("Relu", 13)(np.array([-1.0, 2.0])), [0.0, 2.0])


# ------------------------------------------------------------------------------ type constraints


def _all_versions():
    return [
        (op, v) for op in ("Compress", "Flatten", "GatherElements", "Slice", "Where") for v in onnx_since_versions(op)
    ]


@pytest.mark.parametrize("op, version", _all_versions())
def test_input_types_are_onnxs_type_constraints(op, version):
    ov = jaxonnx.get_op(op, version)
    schema = onnx.defs.get_schema(op, version, "")
    for formal, spec in enumerate(schema.inputs):
        allowed = schema_types(op, version, formal)
        for dtype in (*ALL_DTYPES, np.dtype(object)):
            inputs = [None] * formal + [np.zeros((0,), dtype=dtype)]
            name = onnx_type_name(dtype)
            if name in allowed:
                ov.check_inputs(inputs)
            else:
                message = (
                    f"{op}-{version} does not accept tensor({name}) for input `{spec.name}`; "
                    f"it accepts {', '.join(sorted(allowed))}."
                )
                with pytest.raises(OnnxTypeError, match=re.escape(message)):
                    ov.check_inputs(inputs)


@pytest.mark.parametrize(
    "op, version, inputs, attrs",
    [
        ("Flatten", 1, [np.zeros((2, 3), np.int32)], {}),
        ("Flatten", 1, [np.array([["a"]], dtype=object)], {}),
        ("Flatten", 11, [np.zeros((2, 3), "bfloat16")], {}),
        ("Flatten", 13, [np.zeros((2, 3), "float8_e4m3fn")], {}),
        ("Flatten", 21, [np.zeros((2, 3), "float4_e2m1fn")], {}),
        ("Compress", 11, [np.zeros((2,), "bfloat16"), np.array([True])], {}),
        ("Compress", 9, [np.zeros((2,), np.float32), np.array([1], np.int64)], {}),
        ("Where", 9, [np.array([True]), np.zeros((1,), "bfloat16"), np.zeros((1,), "bfloat16")], {}),
        ("Where", 16, [np.array([1], np.uint8), np.zeros((1,)), np.zeros((1,))], {}),
        ("GatherElements", 11, [np.zeros((2,), "bfloat16"), np.array([0])], {}),
        ("GatherElements", 13, [np.zeros((2,)), np.array([0], np.int16)], {}),
        ("GatherElements", 13, [np.zeros((2,)), np.array([0], np.uint32)], {}),
        ("Slice", 11, [np.zeros((2,), "bfloat16"), np.array([0]), np.array([1])], {}),
        ("Slice", 13, [np.zeros((2,)), np.array([0.0]), np.array([1])], {}),
        ("Slice", 13, [np.zeros((2,)), np.array([0]), np.array([1], np.uint64)], {}),
    ],
)
def test_refused_types_raise_onnx_type_error_naming_the_version(op, version, inputs, attrs):
    with pytest.raises(OnnxTypeError, match=rf"^{op}-{version} does not accept tensor\("):
        jaxonnx.get_op(op, version)(*inputs, **attrs)


@pytest.mark.parametrize(
    "op, version, inputs",
    [
        ("Compress", 28, [np.array([1, 2], "bfloat16"), np.array([False, True])]),
        ("Where", 16, [np.array([True, False]), np.array([1, 2], "bfloat16"), np.array([3, 4], "bfloat16")]),
        ("GatherElements", 13, [np.array([1, 2], "bfloat16"), np.array([1])]),
        ("Slice", 13, [np.array([1, 2], "bfloat16"), np.array([1]), np.array([2])]),
        ("Flatten", 13, [np.array([1, 2], "bfloat16")]),
        ("Flatten", 21, [np.array([1, 2], "float8_e4m3fn")]),
        ("Flatten", 24, [np.array([1, 2], "float8_e8m0fnu")]),
        ("Flatten", 25, [np.array([1, -2], "int2")]),
    ],
)
def test_the_version_that_adds_a_type_accepts_it(op, version, inputs):
    dtype = inputs[1 if op == "Where" else 0].dtype
    out = jaxonnx.get_op(op, version)(*inputs)
    assert isinstance(out, np.ndarray) and out.dtype == dtype
    # ...and so does every later opset.
    assert jaxonnx.get_op(op, 100)(*inputs).dtype == dtype


def test_too_many_inputs():
    with pytest.raises(OnnxValidationError, match=r"^Slice-1 takes at most 1 inputs, got 3\.$"):
        jaxonnx.get_op("Slice", 1)(np.zeros(3), np.array([0]), np.array([1]))
    with pytest.raises(OnnxValidationError, match=r"^Where-16 takes at most 3 inputs, got 4\.$"):
        jaxonnx.get_op("Where", 16)(np.array([True]), np.zeros(1), np.zeros(1), np.zeros(1))


@pytest.mark.parametrize(
    "op, version, inputs, attrs, known",
    [
        ("Slice", 10, [np.zeros(3), np.array([0]), np.array([1])], {"starts": [0]}, "none"),
        ("Slice", 1, [np.zeros(3)], {"starts": [0], "ends": [1], "steps": [1]}, "axes, ends, starts"),
        ("Flatten", 13, [np.zeros((2, 2))], {"axes": 1}, "axis"),
        ("Compress", 11, [np.zeros(2), np.array([True])], {"axiz": 0}, "axis"),
        ("Where", 16, [np.array([True]), np.zeros(1), np.zeros(1)], {"axis": 0}, "none"),
    ],
)
def test_unknown_attributes_are_refused_listing_the_known_ones(op, version, inputs, attrs, known):
    (name,) = [k for k in attrs if k not in onnx.defs.get_schema(op, version, "").attributes]
    with pytest.raises(
        OnnxValidationError, match=rf"^{op}-{version} has no attribute '{name}'; its attributes are: {known}\.$"
    ):
        jaxonnx.get_op(op, version)(*inputs, **attrs)


# ------------------------------------------------------------------------------ calling a version


def test_python_values_become_numpy_inputs():
    # Lists and Python scalars are converted with np.asarray (numpy in, numpy out).
    out = jaxonnx.get_op("Slice", 13)([1, 2, 3], [0], [1])
    assert isinstance(out, np.ndarray) and out.tolist() == [1]
    out = jaxonnx.get_op("Where", 16)(True, 1.0, 2.0)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == () and out == 1.0
    assert jaxonnx.get_op("Flatten", 13)([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    # The type constraints still apply to the converted values.
    with pytest.raises(OnnxTypeError, match=r"^Slice-13 does not accept tensor\(double\) for input `starts`"):
        jaxonnx.get_op("Slice", 13)([1, 2, 3], [0.0], [1])


@pytest.mark.parametrize(
    "op, version, inputs, message",
    [
        ("Slice", 13, [np.zeros(3)], r"^Slice-13 needs at least 3 inputs \(data, starts, ends\), got 1\.$"),
        (
            "Slice",
            10,
            [np.zeros(3), np.array([0])],
            r"^Slice-10 needs at least 3 inputs \(data, starts, ends\), got 2\.$",
        ),
        (
            "Where",
            16,
            [np.array([True]), np.zeros(1)],
            r"^Where-16 needs at least 3 inputs \(condition, X, Y\), got 2\.$",
        ),
        ("Compress", 11, [np.zeros(2)], r"^Compress-11 needs at least 2 inputs \(input, condition\), got 1\.$"),
        ("Flatten", 13, [], r"^Flatten-13 needs at least 1 inputs \(input\), got 0\.$"),
        (
            "GatherElements",
            13,
            [np.zeros(2)],
            r"^GatherElements-13 needs at least 2 inputs \(data, indices\), got 1\.$",
        ),
        (
            "Slice",
            13,
            [np.zeros(3), None, np.array([1])],
            r"^Slice-13 needs its input `starts` \(input 1\), got None; only optional inputs may be omitted\.$",
        ),
    ],
)
def test_missing_required_inputs_are_refused(op, version, inputs, message):
    with pytest.raises(OnnxValidationError, match=message):
        jaxonnx.get_op(op, version)(*inputs)


def test_omitted_optional_inputs_are_fine():
    x = np.arange(6)
    assert jaxonnx.get_op("Slice", 13)(x, np.array([4]), np.array([0]), None, np.array([-2])).tolist() == [4, 2]
    assert jaxonnx.get_op("Slice", 13)(x, np.array([1]), np.array([3]), None, None).tolist() == [1, 2]


@pytest.mark.parametrize(
    "op, version, inputs, attrs, message",
    [
        (
            "Flatten",
            13,
            [np.zeros((2, 2))],
            {"axis": 1.0},
            r"^Flatten-13 needs an int for the attribute `axis` \(INT\), got 1\.0 \(float\)\.$",
        ),
        (
            "Flatten",
            13,
            [np.zeros((2, 2))],
            {"axis": True},
            r"^Flatten-13 needs an int for the attribute `axis` \(INT\), got True \(bool\)\.$",
        ),
        (
            "Flatten",
            13,
            [np.zeros((2, 2))],
            {"axis": "1"},
            r"^Flatten-13 needs an int for the attribute `axis` \(INT\), got '1' \(str\)\.$",
        ),
        (
            "Compress",
            11,
            [np.zeros(2), np.array([True])],
            {"axis": [0]},
            r"^Compress-11 needs an int for the attribute `axis` \(INT\), got \[0\] \(list\)\.$",
        ),
        (
            "GatherElements",
            13,
            [np.zeros(2), np.array([0])],
            {"axis": np.float32(0)},
            r"^GatherElements-13 needs an int for the attribute `axis` \(INT\), got np\.float32\(0\.0\) \(float32\)\.$",
        ),
        (
            "Slice",
            1,
            [np.zeros(3)],
            {"starts": 0, "ends": [1]},
            r"^Slice-1 needs a sequence of ints for the attribute `starts` \(INTS\), got 0 \(int\)\.$",
        ),
        (
            "Slice",
            1,
            [np.zeros(3)],
            {"starts": [0.0], "ends": [1]},
            r"^Slice-1 needs a sequence of ints for the attribute `starts` \(INTS\), got \[0\.0\] \(list\)\.$",
        ),
        (
            "Slice",
            1,
            [np.zeros(3)],
            {"starts": [0], "ends": [True]},
            r"^Slice-1 needs a sequence of ints for the attribute `ends` \(INTS\), got \[True\] \(list\)\.$",
        ),
        (
            "Slice",
            1,
            [np.zeros(3)],
            {"starts": [0], "ends": "1"},
            r"^Slice-1 needs a sequence of ints for the attribute `ends` \(INTS\), got '1' \(str\)\.$",
        ),
        (
            "Constant",
            13,
            [],
            {"value": np.zeros(2)},
            r"^Constant-13 needs an onnx\.TensorProto for the attribute `value` \(TENSOR\), got array\(\[0\., 0\.\]\) \(ndarray\)\.$",
        ),
        (
            "Constant",
            13,
            [],
            {"value_float": "1"},
            r"^Constant-13 needs a float for the attribute `value_float` \(FLOAT\), got '1' \(str\)\.$",
        ),
        (
            "Constant",
            13,
            [],
            {"value_string": 1},
            r"^Constant-13 needs a string for the attribute `value_string` \(STRING\), got 1 \(int\)\.$",
        ),
        (
            "Constant",
            13,
            [],
            {"value_strings": "ab"},
            r"^Constant-13 needs a sequence of strings for the attribute `value_strings` \(STRINGS\), got 'ab' \(str\)\.$",
        ),
        (
            "Constant",
            13,
            [],
            {"value_floats": [1.0, None]},
            r"^Constant-13 needs a sequence of floats for the attribute `value_floats` \(FLOATS\), got \[1\.0, None\] \(list\)\.$",
        ),
    ],
)
def test_attribute_values_of_the_wrong_kind_are_refused(op, version, inputs, attrs, message):
    with pytest.raises(OnnxTypeError, match=message):
        jaxonnx.get_op(op, version)(*inputs, **attrs)


def test_attribute_values_of_the_right_kind_are_accepted():
    x = np.arange(6).reshape(2, 3)
    assert jaxonnx.get_op("Flatten", 13)(x, axis=np.int64(0)).shape == (1, 6)
    assert jaxonnx.get_op("Slice", 1)(x, starts=(0,), ends=np.array([1])).tolist() == [[0, 1, 2]]
    assert jaxonnx.get_op("Constant", 13)(value_float=1).dtype == np.float32
    assert jaxonnx.get_op("Constant", 13)(value_string=b"ab").tolist() == "ab"
    assert jaxonnx.get_op("Constant", 13)(value_strings=["a", b"b"]).tolist() == ["a", "b"]
    tensor = onnx.numpy_helper.from_array(np.array([1, 2], np.int64))
    assert jaxonnx.get_op("Constant", 13)(value=tensor).tolist() == [1, 2]


def test_a_none_attribute_is_not_given():
    x = np.arange(6).reshape(2, 3, 1)
    # Flatten's `axis` defaults to 1; Compress without `axis` flattens.
    assert jaxonnx.get_op("Flatten", 13)(x, axis=None).shape == (2, 3)
    assert jaxonnx.get_op("Compress", 11)(x, np.array([False, True]), axis=None).tolist() == [1]
    # ...so a required attribute given as None is missing.
    with pytest.raises(OnnxValidationError, match=r"^Slice-1 needs the attribute `ends`, which was not given\.$"):
        jaxonnx.get_op("Slice", 1)(x, starts=[0], ends=None)


def test_missing_required_attributes_are_refused():
    with pytest.raises(
        OnnxValidationError, match=r"^Slice-1 needs the attributes `ends`, `starts`, which were not given\.$"
    ):
        jaxonnx.get_op("Slice", 1)(np.zeros(3))
    with pytest.raises(OnnxValidationError, match=r"^Slice-1 needs the attribute `starts`, which was not given\.$"):
        jaxonnx.get_op("Slice", 1)(np.zeros(3), ends=[1])


def test_only_ops_with_a_size_hint_take_size_keywords():
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"^Relu-14 has no attribute 'size'"):
        jaxonnx.get_op("Relu", 14)(x, size=2)
    # Slice takes one since issue 41 (a slice between traced bounds is padded to it).
    np.testing.assert_array_equal(jaxonnx.get_op("Slice", 13)(x, [0], [1], size=2), [0.0, 0.0])
    padded = jaxonnx.get_op("Compress", 11)(x, np.array([True]), size=2)
    np.testing.assert_array_equal(padded, [0.0, 0.0])


def test_a_padding_rule_once_named_points_to_the_op_that_declares_it():
    """Padding rules of one op live beside it (``padding=`` takes its function); a name that
    was once a rule of the core (``"gather"``) is refused with the expression that hands
    the op's rule on, and that expression registers."""
    with pytest.raises(ValueError, match=r"got 'gather'\. That rule is Gather's own now") as refused:
        jaxonnx.register("ScratchGather", 1, padding="gather")(lambda data, indices: data)
    assert "ScratchGather" not in {op_type for _, op_type in _registry.REGISTRY._versions}
    suggested = re.search(r"`padding=(.+?)`", str(refused.value)).group(1)
    rule = eval(suggested, {"jaxonnx": jaxonnx})  # noqa: S307  (the message's own expression)
    scratch = _registry.Registry()
    scratch.register("Gather", 13, padding=rule)(lambda data, indices, *, axis=0: data)
    assert scratch._versions["", "Gather"][13].contract.padding is rule
    with pytest.raises(ValueError, match=r"got 'bogus'\.$"):
        jaxonnx.register("ScratchOp", 1, padding="bogus")(lambda x: x)
