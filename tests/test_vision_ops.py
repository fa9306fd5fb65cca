"""The vision ops beyond onnx.reference's reach: NonMaxSuppression traced (size, padding,
overflow), and the semantics where onnx.reference computes only part of an op (MaxUnpool
with `output_shape`, Upsample's linear mode, GlobalMaxPool at ranks 3 and 5) checked
against onnxruntime."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _node_cases import as_backend_input, node_cases
from onnx import TensorProto, helper

import jaxonnx
from jaxonnx import OnnxValidationError, StaticValueError

_NMS_CASES = [c for c in node_cases() if c.name.startswith("test_nonmaxsuppression")]


def _nms_case_arrays(case):
    inputs = [as_backend_input(x) for x in case.data_sets[0][0]]
    node = case.model.graph.node[0]
    attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return inputs, attributes, as_backend_input(case.data_sets[0][1][0])


@pytest.mark.parametrize("case", _NMS_CASES, ids=lambda c: c.name)
def test_nms_traced_gives_the_node_case_rows_first_then_out_of_range_padding(case):
    inputs, attributes, expected = _nms_case_arrays(case)
    boxes, scores, limit, *thresholds = inputs
    run = jax.jit(lambda b, s, *t: jaxonnx.ops.non_max_suppression(b, s, limit, *t, **attributes))
    got = np.asarray(run(boxes, scores, *thresholds))
    batches, classes, count = scores.shape
    assert got.shape == (min(int(limit[0]), count) * classes * batches, 3)
    np.testing.assert_array_equal(got[: len(expected)], expected)
    np.testing.assert_array_equal(
        got[len(expected) :], np.broadcast_to([batches, classes, count], (len(got) - len(expected), 3))
    )


def test_nms_traced_equals_exact_on_random_boxes_with_ties_and_degenerate_boxes():
    rng = np.random.default_rng(0)
    for trial in range(20):
        batches, classes, count = rng.integers(1, 4), rng.integers(1, 4), rng.integers(1, 12)
        corners = rng.uniform(0, 4, (batches, count, 4)).astype(np.float32)
        corners[:, ::4, 2] = corners[:, ::4, 0]  # zero-area boxes
        scores = rng.choice(np.array([0.1, 0.3, 0.5, 0.9], np.float32), (batches, classes, count))  # ties
        limit = np.array([rng.integers(0, 6)], np.int64)
        iou = np.array([rng.uniform(0, 0.8)], np.float32)
        score_threshold = np.array([0.2], np.float32)
        center = int(trial % 2)
        exact = jaxonnx.ops.non_max_suppression(corners, scores, limit, iou, score_threshold, center_point_box=center)
        traced = jax.jit(
            lambda b, s, i, t: jaxonnx.ops.non_max_suppression(b, s, limit, i, t, center_point_box=center)
        )(corners, scores, iou, score_threshold)
        traced = np.asarray(traced)
        np.testing.assert_array_equal(traced[: len(exact)], exact)
        assert (traced[len(exact) :] == [batches, classes, count]).all()


def test_nms_matches_onnxruntime_on_random_boxes(run_onnxruntime):
    rng = np.random.default_rng(1)
    boxes = rng.uniform(0, 3, (2, 10, 4)).astype(np.float32)
    scores = rng.uniform(0, 1, (2, 3, 10)).astype(np.float32)
    feed = {
        "b": boxes,
        "s": scores,
        "m": np.array([4], np.int64),
        "i": np.array([0.3], np.float32),
        "t": np.array([0.2], np.float32),
    }
    node = helper.make_node("NonMaxSuppression", list(feed), ["y"])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in feed.items()],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
    )
    expected = run_onnxruntime(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]), feed)[0]
    np.testing.assert_array_equal(jaxonnx.ops.non_max_suppression(*feed.values()), expected)


def test_nms_size_hint_pads_with_fill_value_and_refuses_truncation():
    inputs, attributes, expected = _nms_case_arrays(_NMS_CASES[0])
    boxes, scores, limit, *thresholds = inputs
    run = jax.jit(
        lambda b, size, fill=None: jaxonnx.ops.non_max_suppression(
            b, scores, limit, *thresholds, size=size, fill_value=fill, **attributes
        ),
        static_argnums=(1, 2),
    )
    got = np.asarray(run(boxes, len(expected) + 2, -1))
    np.testing.assert_array_equal(got[: len(expected)], expected)
    assert (got[len(expected) :] == -1).all()
    with pytest.raises(Exception, match="selected 3 boxes at run time but its output was given size=2"):
        np.asarray(run(boxes, 2))
    with pytest.raises(OnnxValidationError, match="selected 3 boxes but `size`=2"):
        jaxonnx.ops.non_max_suppression(*inputs, size=2, **attributes)


def test_nms_traced_limit_needs_a_size():
    inputs, attributes, expected = _nms_case_arrays(_NMS_CASES[0])
    boxes, scores, limit, *thresholds = inputs
    with pytest.raises(StaticValueError, match="max_output_boxes_per_class"):
        jax.jit(lambda b, m: jaxonnx.ops.non_max_suppression(b, scores, m, *thresholds))(boxes, limit)
    got = jax.jit(lambda b, m: jaxonnx.ops.non_max_suppression(b, scores, m, *thresholds, size=8))(boxes, limit)
    np.testing.assert_array_equal(np.asarray(got)[: len(expected)], expected)


def test_nms_in_32_bit_mode(x64_off):
    inputs, attributes, expected = _nms_case_arrays(_NMS_CASES[0])
    boxes, scores, limit, *thresholds = inputs
    got = jax.jit(lambda b: jaxonnx.ops.non_max_suppression(b, scores, limit, *thresholds, **attributes))(boxes)
    assert got.dtype == jnp.int32
    np.testing.assert_array_equal(np.asarray(got)[: len(expected)], expected)


def _single_node_model(op, inputs, opset, output_type=TensorProto.FLOAT, **attributes):
    node = helper.make_node(op, list(inputs), ["y"], **attributes)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
            for k, v in inputs.items()
        ],
        [helper.make_tensor_value_info("y", output_type, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_max_unpool_output_shape_reads_indices_in_the_output_shape_as_onnxruntime(run_onnxruntime):
    x = np.random.default_rng(3).permutation(25).astype(np.float32).reshape(1, 1, 5, 5)
    pooled, indices = jaxonnx.ops.max_pool(x, kernel_shape=[2, 2], strides=[2, 2])
    feed = {"x": np.asarray(pooled), "i": np.asarray(indices, np.int64), "s": np.array([1, 1, 5, 5], np.int64)}
    expected = run_onnxruntime(_single_node_model("MaxUnpool", feed, 22, kernel_shape=[2, 2], strides=[2, 2]), feed)[0]
    got = jaxonnx.ops.max_unpool(*feed.values(), kernel_shape=[2, 2], strides=[2, 2])
    np.testing.assert_array_equal(got, expected)
    # Pooling the unpooled array gives the pooled values back.
    np.testing.assert_array_equal(jaxonnx.ops.max_pool(got, kernel_shape=[2, 2], strides=[2, 2])[0], pooled)


@pytest.mark.parametrize("scales", [[1.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.5, 2.5]])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_matches_onnxruntime(run_onnxruntime, mode, scales):
    feed = {
        "x": np.random.default_rng(4).standard_normal((1, 2, 3, 4)).astype(np.float32),
        "s": np.array(scales, np.float32),
    }
    expected = run_onnxruntime(_single_node_model("Upsample", feed, 9, mode=mode), feed)[0]
    np.testing.assert_allclose(jaxonnx.ops.upsample(*feed.values(), mode=mode), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [(2, 3, 7), (2, 3, 4, 5), (1, 2, 3, 4, 5)])
def test_global_max_pool_at_every_rank_matches_onnxruntime(run_onnxruntime, shape):
    feed = {"x": np.random.default_rng(5).standard_normal(shape).astype(np.float32)}
    expected = run_onnxruntime(_single_node_model("GlobalMaxPool", feed, 22), feed)[0]
    got = jax.jit(jaxonnx.ops.global_max_pool)(feed["x"])
    assert got.shape == shape[:2] + (1,) * (len(shape) - 2)
    np.testing.assert_array_equal(got, expected)


_FEATURES = np.random.default_rng(6).standard_normal((2, 3, 6, 7)).astype(np.float32)
# Inside, partly outside, larger than the map, tiny and reversed RoIs.
_ROIS = np.array(
    [[0.5, 1.0, 5.5, 4.0], [-2.0, 3.0, 4.0, 9.0], [-8.0, -6.0, 15.0, 13.0], [2.0, 2.0, 2.4, 2.3], [4.0, 4.0, 1.0, 2.0]],
    np.float32,
)
_ROI_BATCHES = np.array([0, 1, 1, 0, 1], np.int64)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("opset, transform", [(10, None), (16, "half_pixel"), (16, "output_half_pixel")])
def test_roi_align_matches_onnxruntime_and_traced_rois_match_known_ones(run_onnxruntime, mode, transform, opset):
    attributes = {"output_height": 3, "output_width": 2, "mode": mode, "spatial_scale": 0.8}
    if opset == 16:
        attributes["coordinate_transformation_mode"] = transform
    feed = {"x": _FEATURES, "r": _ROIS, "b": _ROI_BATCHES}
    expected = run_onnxruntime(_single_node_model("RoiAlign", feed, opset, **attributes), feed)[0]
    op = jaxonnx.get_op("RoiAlign", opset)
    np.testing.assert_allclose(op(*feed.values(), **attributes), expected, rtol=1e-5, atol=1e-6)
    traced = jax.jit(lambda x, r, b: op(x, r, b, **attributes))(*feed.values())
    np.testing.assert_allclose(traced, expected, rtol=1e-5, atol=1e-6)


def test_roi_align_gradient_with_respect_to_x():
    from jax.test_util import check_grads

    x = jnp.asarray(_FEATURES, jnp.float64)
    for mode, rois in (("avg", _ROIS), ("max", _ROIS[:1])):
        f = lambda x: jaxonnx.ops.roi_align(
            x,
            _ROIS.astype(np.float64) if mode == "avg" else rois.astype(np.float64),
            _ROI_BATCHES if mode == "avg" else _ROI_BATCHES[:1],
            output_height=2,
            output_width=2,
            mode=mode,
            sampling_ratio=2,
        )
        check_grads(jax.jit(f), (x,), order=1, modes=("rev", "fwd"))


_IMAGE = np.random.default_rng(7).standard_normal((2, 2, 4, 5)).astype(np.float32)
_GRID = np.random.default_rng(8).uniform(-1.6, 1.6, (2, 3, 4, 2)).astype(np.float32)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
@pytest.mark.parametrize("opset", [16, 20])
def test_grid_sample_matches_onnxruntime(run_onnxruntime, mode, padding_mode, align_corners, opset):
    feed = {"x": _IMAGE, "g": _GRID}
    if opset >= 20:
        mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    attributes = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    expected = run_onnxruntime(_single_node_model("GridSample", feed, opset, **attributes), feed)[0]
    got = jax.jit(lambda x, g: jaxonnx.get_op("GridSample", opset)(x, g, **attributes))(*feed.values())
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def _check_grads_of_eager_autodiff(f, args, **tolerances):
    """``check_grads(f, args, order=1, modes=("fwd", "rev"))``: f's eager JVP and VJP against
    finite differences, which evaluate f through one jitted program. Eagerly, each of
    check_grads' four evaluations of grid_sample's cubic taps dispatches for 0.4 s (cubic 3-D
    cases 8 -> 4 s); jit of the JVP and VJP would compile slower still."""
    import functools

    from jax.test_util import check_jvp, check_vjp

    primal = jax.jit(f)
    check_jvp(primal, functools.partial(jax.jvp, f), args, **tolerances)
    check_vjp(primal, functools.partial(jax.vjp, f), args, **tolerances)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("rank", [2, 3])
def test_grid_sample_gradient_with_respect_to_the_grid(mode, padding_mode, rank):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 2) + (4, 5, 3)[:rank])
    # Pixel coordinates away from pixel centres and half-pixel borders (the kinks), some
    # outside the input: integer + a fraction in [0.1, 0.4].
    shape = (1, 2, 3) + (2,) * (rank - 2) + (rank,)
    sizes = np.array((4, 5, 3)[:rank][::-1], np.float64)  # the grid's last axis is x first
    pixel = rng.integers(-2, sizes.astype(int) + 2, shape) + rng.uniform(0.1, 0.4, shape)
    grid = (2 * pixel + 1) / sizes - 1  # align_corners=0
    f = lambda g: jaxonnx.ops.grid_sample(x, g, mode=mode, padding_mode=padding_mode)
    _check_grads_of_eager_autodiff(f, (jax.device_put(grid),), atol=1e-4, rtol=1e-4)
    g = lambda x: jaxonnx.ops.grid_sample(x, grid, mode=mode, padding_mode=padding_mode)
    _check_grads_of_eager_autodiff(g, (jax.device_put(x),))


def test_affine_grid_gradient_with_respect_to_theta_and_identity_warp():
    from jax.test_util import check_grads

    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 2, 5, 6))
    theta = np.array([[[0.9, 0.1, 0.05], [-0.2, 1.1, 0.1]], [[1.2, -0.3, -0.1], [0.25, 0.8, 0.05]]])

    def warp(theta):
        grid = jaxonnx.ops.affine_grid(theta, np.array(x.shape))
        return jaxonnx.ops.grid_sample(x, grid, padding_mode="border")

    for size in (x.shape, (2, 2, 3, 4, 5)):
        theta_3d = rng.standard_normal((2, 3, 4))
        start = theta if len(size) == 4 else theta_3d
        for corners in (0, 1):
            check_grads(
                lambda t: jaxonnx.ops.affine_grid(t, np.array(size), align_corners=corners),
                (jnp.asarray(start),),
                order=1,
                modes=("rev", "fwd"),
            )
    # The identity map samples every pixel centre: the image comes back.
    identity = np.array([[[1.0, 0, 0], [0, 1, 0]]] * 2)
    np.testing.assert_allclose(warp(identity), x, atol=1e-12)


@pytest.mark.parametrize("spatial", [1, 2, 3])
def test_deform_conv_with_zero_offsets_is_conv(spatial):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 4) + (5, 6, 4)[:spatial])
    w = rng.standard_normal((6, 2) + (2, 3, 2)[:spatial])
    b = rng.standard_normal(6)
    attributes = {
        "group": 2,
        "strides": [2, 1, 1][:spatial],
        "pads": [1, 0, 1][:spatial] + [0, 1, 1][:spatial],
        "dilations": [1, 2, 1][:spatial],
    }
    expected = jaxonnx.ops.conv(x, w, b, **attributes)
    offsets = np.zeros((2, 2 * int(np.prod(w.shape[2:])) * spatial, *expected.shape[2:]))
    got = jax.jit(lambda x, o: jaxonnx.ops.deform_conv(x, w, o, b, offset_group=2, **attributes))(x, offsets)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_deform_conv_gradients_with_respect_to_every_input():
    from jax.test_util import check_grads

    rng = np.random.default_rng(12)
    x, w, b = rng.standard_normal((1, 4, 5, 5)), rng.standard_normal((2, 2, 2, 2)), rng.standard_normal(2)
    shape = (1, 16, 4, 4)
    offsets = rng.integers(-2, 3, shape) + rng.uniform(0.1, 0.4, shape) * rng.choice([-1, 1], shape)
    mask = rng.uniform(0.2, 1.0, (1, 8, 4, 4))
    inputs = [x, w, offsets, b, mask]
    for i in range(5):

        def f(value, i=i):
            args = list(inputs)
            args[i] = value
            return jaxonnx.ops.deform_conv(*args, group=2, offset_group=2)

        check_grads(jax.jit(f), (jnp.asarray(inputs[i]),), order=1, modes=("rev", "fwd"))


@pytest.mark.parametrize("scale", [1.0, 0.5, 0.25])
def test_max_roi_pool_matches_onnxruntime_and_traced_rois_match_known_ones(run_onnxruntime, scale):
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 3, 8, 9)).astype(np.float32)
    boxes = rng.uniform(-3, 14, (12, 4)).astype(np.float32)
    boxes[:3] = [[1.0, 1.0, 5.0, 5.0], [2.5, 3.5, 6.5, 4.5], [-1.5, 0.5, 1.5, 30.0]]  # halves, outside
    rois = np.concatenate([rng.integers(0, 2, (12, 1)).astype(np.float32), boxes], axis=1)
    feed = {"x": x, "r": rois}
    attributes = {"pooled_shape": [3, 2], "spatial_scale": scale}
    expected = run_onnxruntime(_single_node_model("MaxRoiPool", feed, 21, **attributes), feed)[0]
    np.testing.assert_array_equal(jaxonnx.ops.max_roi_pool(x, rois, **attributes), expected)
    traced = jax.jit(lambda x, r: jaxonnx.ops.max_roi_pool(x, r, **attributes))(x, rois)
    np.testing.assert_array_equal(traced, expected)


def _vision_examples():
    from tests.op_examples.vision import EXAMPLES

    cases = []
    for op_type, examples in EXAMPLES.items():
        op = jaxonnx.get_op(op_type, max(jaxonnx.supported_ops()[op_type]))
        for index, example in enumerate(examples):
            if example.versions is None or op.since_version in example.versions:
                cases.append(pytest.param(op, example, id=f"{op.name}-{index}"))
    return cases


@pytest.mark.parametrize("op, example", _vision_examples())
def test_jit_with_x64_off_matches_x64_on(op, example):
    expected = op(*example.inputs, **example.attributes)
    expected = expected if isinstance(expected, tuple) else (expected,)
    names = op.formal_names(len(example.inputs))
    traced = [
        i
        for i, (name, x) in enumerate(zip(names, example.inputs))
        if x is not None and name not in op.contract.static and name != "max_output_boxes_per_class"
    ]

    def run(*values):
        args = list(example.inputs)
        for i, value in zip(traced, values):
            args[i] = value
        # MaxUnpool's schema ties `output_shape` (static int64) to `I`, which JAX narrows to
        # int32 with x64 off; the registry's tie check refuses that pair on the graph path
        # (a core matter), the public function reads static bounds as they are.
        if op.op_type == "MaxUnpool":
            return jaxonnx.ops.max_unpool(*args, **example.attributes)
        return op(*args, **example.attributes)

    with jax.enable_x64(False):
        got = jax.jit(run)(*(jnp.asarray(example.inputs[i]) for i in traced))
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expected):
        e = np.asarray(e)
        if op.op_type == "NonMaxSuppression":  # traced: the rows first, then padding
            g = np.asarray(g)[: len(e)]
        assert np.asarray(g).dtype.itemsize <= 4 or e.dtype.itemsize <= 4
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-5, atol=1e-5)


def _detection_model():
    """boxes, scores -> NonMaxSuppression (limit and thresholds as initializers) -> the
    selected boxes' scores by GatherND, as a detector's post-processing reads them."""
    from onnx import numpy_helper

    nodes = [
        helper.make_node("NonMaxSuppression", ["boxes", "scores", "limit", "iou", "score_min"], ["selected"]),
        # [batch, class, box] -> the score of each selected box: GatherND on scores.
        helper.make_node("GatherND", ["scores", "selected"], ["picked"]),
    ]
    initializers = [
        numpy_helper.from_array(np.array([2], np.int64), "limit"),
        numpy_helper.from_array(np.array([0.4], np.float32), "iou"),
        numpy_helper.from_array(np.array([0.7], np.float32), "score_min"),
    ]
    graph = helper.make_graph(
        nodes,
        "detect",
        [
            helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [2, 6, 4]),
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [2, 3, 6]),
        ],
        [
            helper.make_tensor_value_info("selected", TensorProto.INT64, None),
            helper.make_tensor_value_info("picked", TensorProto.FLOAT, None),
        ],
        initializer=initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_nms_in_a_model_under_jit_pads_rows_that_gather_zeros(run_onnxruntime):
    rng = np.random.default_rng(14)
    boxes = rng.uniform(0, 3, (2, 6, 4)).astype(np.float32)
    scores = rng.uniform(0, 1, (2, 3, 6)).astype(np.float32)
    proto = _detection_model()
    expected_rows, expected_scores = run_onnxruntime(proto, {"boxes": boxes, "scores": scores})
    selected, picked = jax.jit(jaxonnx.load(proto))(boxes, scores)
    count = len(expected_rows)
    assert selected.shape == (2 * 3 * 2, 3) and count < selected.shape[0]
    np.testing.assert_array_equal(np.asarray(selected)[:count], expected_rows)
    np.testing.assert_array_equal(np.asarray(picked)[:count], expected_scores)
    # The padding rows are out of range on purpose: GatherND reads zeros there.
    assert (np.asarray(picked)[count:] == 0).all()
    # A size hint sets the length instead.
    hinted = jax.jit(jaxonnx.load(proto, size_hints={"selected": 20}))(boxes, scores)
    assert hinted[0].shape == (20, 3)
    np.testing.assert_array_equal(np.asarray(hinted[1])[:count], expected_scores)


def test_upsample_linear_gradient():
    from jax.test_util import check_grads

    x = np.random.default_rng(15).standard_normal((1, 2, 3, 4))
    check_grads(
        lambda x: jaxonnx.ops.upsample(x, np.array([1.0, 1.0, 1.5, 2.5], np.float32), mode="linear"),
        (jnp.asarray(x),),
        order=1,
        modes=("rev", "fwd"),
    )


_F = np.zeros((1, 2, 4, 4), np.float32)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: jaxonnx.ops.global_max_pool(np.zeros((2, 3), np.float32)),
            r"needs `X` of rank >= 3 .* got shape \(2, 3\)",
        ),
        (lambda: jaxonnx.ops.lrn(_F, size=0), r"needs a positive `size`.* got 0"),
        (lambda: jaxonnx.ops.lp_pool(_F, kernel_shape=[2, 2], p=0), r"needs a positive `p`, got 0"),
        (lambda: jaxonnx.ops.lp_pool(_F, kernel_shape=[2]), r"got `kernel_shape`=\[2\]"),
        (
            lambda: jaxonnx.ops.max_unpool(
                np.zeros((1, 1, 2), np.float32), np.array([[[0, 9]]]), kernel_shape=[2], strides=[2]
            ),
            r"got `I` with indices in \[0, 9\] for an output of shape \[1, 1, 4\]",
        ),
        (lambda: jaxonnx.ops.upsample(_F, np.array([1.0, 1.0, 0.5, 2.0], np.float32)), r"needs `scales` of at least 1"),
        (lambda: jaxonnx.ops.upsample(_F, np.array([1.0, 2.0], np.float32)), r"needs float `scales`, one per axis"),
        (
            lambda: jaxonnx.ops.non_max_suppression(np.zeros((1, 3, 4), np.float32), np.zeros((1, 2, 4), np.float32)),
            r"needs `scores` of shape \(batches, classes, boxes\) = \(1, classes, 3\)",
        ),
        (
            lambda: jaxonnx.ops.non_max_suppression(
                np.zeros((1, 3, 4), np.float32), np.zeros((1, 2, 3), np.float32), center_point_box=2
            ),
            r"got `center_point_box`=2",
        ),
        (
            lambda: jaxonnx.ops.non_max_suppression(
                np.zeros((1, 3, 4), np.float32),
                np.zeros((1, 2, 3), np.float32),
                np.array([1]),
                np.array([1.5], np.float32),
            ),
            r"needs `iou_threshold` in \[0, 1\], got 1.5",
        ),
        (
            lambda: jaxonnx.ops.roi_align(_F, np.zeros((1, 4), np.float32), np.array([3])),
            r"got `batch_indices` \[3\] for `X` of 1 images",
        ),
        (
            lambda: jaxonnx.ops.roi_align(_F, np.zeros((1, 4), np.float32), np.array([0]), mode="sum"),
            r"got `mode`='sum'",
        ),
        (
            lambda: jaxonnx.ops.max_roi_pool(_F, np.zeros((1, 5), np.float32), pooled_shape=[2, 0]),
            r"needs `pooled_shape` of two positive sizes",
        ),
        (
            lambda: jaxonnx.ops.grid_sample(_F, np.zeros((1, 2, 2, 3), np.float32)),
            r"needs `X` of shape \(N, C, D1, ..., Dr\) and `grid`",
        ),
        (
            lambda: jaxonnx.ops.grid_sample(_F, np.zeros((1, 2, 2, 2), np.float32), mode="bilinear"),
            r"got `mode`='bilinear'",
        ),
        (
            lambda: jaxonnx.ops.grid_sample(_F.astype(np.int32), np.zeros((1, 2, 2, 2), np.float32)),
            r"needs a float `X` in linear mode",
        ),
        (
            lambda: jaxonnx.ops.affine_grid(np.zeros((1, 2, 3), np.float32), np.array([2, 1, 4, 4])),
            r"needs `theta` of shape \(2, 2, 3\)",
        ),
        (
            lambda: jaxonnx.ops.col2im(np.zeros((1, 4, 5), np.float32), np.array([3, 3]), np.array([2, 2])),
            r"needs `input` of shape \(N, C \* 4, 4\)",
        ),
        (lambda: jaxonnx.ops.center_crop_pad(_F, np.array([2, 2]), axes=[1, 1]), r"got repeated `axes` \[1, 1\]"),
        (
            lambda: jaxonnx.ops.deform_conv(_F, np.zeros((1, 2, 2, 2), np.float32), np.zeros((1, 8, 2, 2), np.float32)),
            r"needs `offset` of shape \(1, 8, 3, 3\)",
        ),
    ],
)
def test_bad_inputs_raise_sentences_naming_the_argument(call, message):
    with pytest.raises(OnnxValidationError, match=message):
        call()
