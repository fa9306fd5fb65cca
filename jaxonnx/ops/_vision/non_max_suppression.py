"""NonMaxSuppression: versions 10 and 11 (11 only rewords the text)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.padding import Call, Mark, RealLength, as_tuple, filled
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError, StaticValueError
from jaxonnx.ops._helpers.bounds import refuse_at_run_time_if
from jaxonnx.ops._helpers.common import is_traced

_INPUTS = ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold")


def _on_padding(call: Call):
    """NonMaxSuppression's rule on padding: marked boxes (the box axis of ``boxes`` and
    ``scores``) are never selected: they rank last, so they neither take a real box's place
    nor suppress one, and the rows that name them are dropped (the real rows first, as the
    exact result has them)."""
    scores = call.args[1]
    call.only_inputs((0, 1), "takes it as a parameter")
    if call.has_lengths():
        call.refuse("takes a padded length as boxes or scores")
    marks = [
        *call.axis_marks(0).items(),
        *((a - 1 if a == 2 else -a - 1, m) for a, m in call.axis_marks(1).items()),
    ]
    if any(axis != 1 for axis, _ in marks):  # boxes' axis 1 and scores' axis 2 are the boxes
        call.refuse("pads an axis other than the boxes (a batch, a class or a coordinate)")
    count = marks[0][1].count
    for _, mark in marks[1:]:
        count = jnp.minimum(count, mark.count)
    args = list(call.args)
    # Visited after every real box, a marked box can neither take a real one's place under
    # max_output_boxes_per_class nor suppress one: the real rows are the exact result's.
    args[1] = filled(scores, {2: Mark(count, "", "")}, "lowest")
    results = as_tuple(call.run(args))
    rows = jnp.asarray(results[0])
    real = results[-1] if isinstance(results[-1], RealLength) else None
    keep = rows[:, 2] < count.astype(rows.dtype)
    if real is not None:
        keep = keep & (jnp.arange(rows.shape[0]) < jnp.asarray(real.count))
    if real is None and not isinstance(keep, jax.core.Tracer):  # exact rows: drop those that name a marked box
        selected = rows[np.asarray(keep)]
        return (selected if isinstance(results[0], jax.Array) else np.asarray(selected),), [None]
    # Padded rows: the real ones first, then the op's own padding ([batches, classes, boxes]).
    pads = jnp.asarray(np.array(scores.shape), rows.dtype)
    order = jnp.argsort(~keep, stable=True)
    kept = keep[order]
    selected = jnp.where(kept[:, None], rows[order], pads)
    if real is None:
        return (selected,), [None]
    return (selected, RealLength(jnp.count_nonzero(keep), real.axes)), [None, None]


@register("NonMaxSuppression", 10, 11, concrete=_INPUTS, size_hint=True, padding=_on_padding)
def non_max_suppression(
    boxes,
    scores,
    max_output_boxes_per_class=None,
    iou_threshold=None,
    score_threshold=None,
    *,
    center_point_box=0,
    size: int | None = None,
    fill_value=None,
    real_length: bool = False,
):
    """Implements ONNX NonMaxSuppression: greedy selection of boxes per batch and class.

    For each batch ``b`` and class ``c``, the boxes whose score is above
    ``score_threshold`` (strictly, as onnxruntime; every box when it is omitted) are
    visited by falling score (the lower box index first on equal scores); a box is
    selected unless its IoU with a box already selected for ``(b, c)`` is strictly above
    ``iou_threshold``, until ``max_output_boxes_per_class`` are selected. Boxes of zero
    area, or apart, never suppress each other. The rows ``[b, c, box]`` come by batch,
    then class, then in selection order, as onnx.reference and onnxruntime give them.

    The number of rows depends on the values. Known ``boxes`` and ``scores`` (numpy, or
    JAX arrays outside ``jax.jit``) give the exact result. Traced ones give ``size`` rows
    (for a model: a size hint): the selected rows first, the rest padded. Without
    ``size``, a static ``max_output_boxes_per_class`` bounds the rows at trace time:
    ``min(max_output_boxes_per_class, boxes) * classes * batches`` is then the size.
    Selecting more than ``size`` raises at run time (a host callback) instead of truncating.

    The padding follows :func:`non_zero`'s contract: **out of range on purpose**. Padded
    rows are ``[batches, classes, boxes]`` (each column's dim size), so a traced GatherND
    with them (``scores[b, c, box]``, ``boxes[b, box]``) reads zeros and a ScatterND row is
    dropped, never real data. (A traced Gather clamps its indices instead: a Gather of
    ``boxes`` by the padded box column reads the last box, so mask those rows by their
    out-of-range value.)

    Args:
        boxes: float ``(batches, boxes, 4)``: ``[y1, x1, y2, x2]`` (any diagonal pair of
            corners) or, with ``center_point_box=1``, ``[x_center, y_center, width, height]``.
        scores: float ``(batches, classes, boxes)``.
        max_output_boxes_per_class: optional int64 scalar (default 0: no rows; a negative
            value counts as 0).
        iou_threshold: optional float scalar in ``[0, 1]`` (default 0).
        score_threshold: optional float scalar (default: no score filter).
        center_point_box: the box format, 0 or 1.
        size: the static number of rows (needed for traced boxes or scores, unless
            ``max_output_boxes_per_class`` is static).
        fill_value: the padding index of every column when ``size`` is given; defaults to
            each column's dim size (out of range, see above).
        real_length: with ``size``, also return the number of selected rows (a
            :class:`~jaxonnx._core.padding.RealLength`, for the graph runner's padding marks).

    Returns:
        ``selected_indices``: int64 ``(rows, 3)`` (int32 when JAX's x64 mode is off).

    Example:
        >>> boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]], np.float32)
        >>> scores = np.array([[[0.9, 0.8, 0.7]]], np.float32)
        >>> jaxonnx.ops.non_max_suppression(boxes, scores, np.array([3]), np.array([0.5], np.float32))
        array([[0, 0, 0],
               [0, 0, 2]])
        >>> jax.jit(lambda b: jaxonnx.ops.non_max_suppression(b, scores, np.array([3]), np.array([0.5], np.float32)))(boxes)
        Array([[0, 0, 0],
               [0, 0, 2],
               [1, 1, 3]], dtype=int32)
    """
    if boxes.ndim != 3 or boxes.shape[2] != 4:
        raise OnnxValidationError(f"needs `boxes` of shape (batches, boxes, 4), got {tuple(boxes.shape)}.")
    if scores.ndim != 3 or scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        raise OnnxValidationError(
            f"needs `scores` of shape (batches, classes, boxes) = ({boxes.shape[0]}, classes, {boxes.shape[1]}) "
            f"for `boxes` of shape {tuple(boxes.shape)}, got {tuple(scores.shape)}."
        )
    if real_length and size is not None:
        rows = non_max_suppression(
            boxes,
            scores,
            max_output_boxes_per_class,
            iou_threshold,
            score_threshold,
            center_point_box=center_point_box,
            size=size,
        )
        # The padding rows hold the number of batches, out of range; selected rows a batch index.
        count = (jnp if isinstance(rows, jax.Array) else np).count_nonzero(rows[:, 0] < scores.shape[0])
        return rows, RealLength(count, (0,))
    if center_point_box not in (0, 1):
        raise OnnxValidationError(f"got `center_point_box`={center_point_box}; it must be 0 or 1.")
    if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0):
        raise OnnxValidationError(f"needs a non-negative int `size`, got {size!r}.")
    if fill_value is not None and (isinstance(fill_value, bool) or not isinstance(fill_value, (int, np.integer))):
        raise OnnxValidationError(f"needs an int `fill_value` (an index), got {fill_value!r}.")
    scalars = {}
    for name, value in zip(_INPUTS[2:], (max_output_boxes_per_class, iou_threshold, score_threshold)):
        if value is not None and value.size != 1:
            raise OnnxValidationError(f"needs a scalar or one-element `{name}`, got shape {tuple(value.shape)}.")
        scalars[name] = None if value is None else value.reshape(())
    iou_value = scalars["iou_threshold"]
    if iou_value is not None and not is_traced(iou_value) and not 0 <= float(iou_value) <= 1:
        raise OnnxValidationError(f"needs `iou_threshold` in [0, 1], got {float(iou_value)}.")
    batches, classes, count = scores.shape
    pads = np.array([batches, classes, count] if fill_value is None else [fill_value] * 3, np.int64)
    index_type = jnp.int64 if jax.config.jax_enable_x64 else jnp.int32
    limit = scalars["max_output_boxes_per_class"]
    static_limit = None if limit is None else None if is_traced(limit) else max(int(limit), 0)
    if not any(is_traced(v) for v in (boxes, scores, *scalars.values())):
        found = _select_exactly(
            np.asarray(boxes),
            np.asarray(scores),
            static_limit or 0,
            *(None if v is None else np.asarray(v) for v in (scalars["iou_threshold"], scalars["score_threshold"])),
            center_point_box,
        )
        if size is not None:
            if len(found) > size:
                raise OnnxValidationError(
                    f"selected {len(found)} boxes but `size`={size}; the result would be truncated, "
                    "so it is refused. Give a larger `size`."
                )
            found = np.concatenate([found, np.broadcast_to(pads, (size - len(found), 3))])
        # Eager JAX input gives a JAX output; the indices are exact in 32 bits too.
        return jnp.asarray(found, index_type) if any(isinstance(v, jax.Array) for v in (boxes, scores)) else found
    per_class = count if static_limit is None else min(static_limit, count)
    if size is None:
        if static_limit is None:
            error = StaticValueError(
                "cannot decide its output shape under `jax.jit`: `boxes` or `scores` are traced and "
                "`max_output_boxes_per_class` is traced too, so no bound on the rows is known at trace "
                "time. Make `max_output_boxes_per_class` static (a numpy array), or pass `size=` (the "
                "number of output rows) and optionally `fill_value=`."
            )
            error.argument = "max_output_boxes_per_class"
            raise error
        size = per_class * classes * batches
    limit = jnp.asarray(0 if limit is None else limit).astype(index_type)
    iou = jnp.asarray(0, boxes.dtype) if scalars["iou_threshold"] is None else jnp.asarray(scalars["iou_threshold"])
    corners = _corners(jnp.asarray(boxes), center_point_box)
    scores = jnp.asarray(scores)
    candidate = jnp.ones(scores.shape, bool)
    if scalars["score_threshold"] is not None:
        candidate = scores > jnp.asarray(scalars["score_threshold"])
    per_batch = jax.vmap(_select_traced, in_axes=(None, 0, 0, None, None, None))  # over classes
    chosen, valid = jax.vmap(per_batch, in_axes=(0, 0, 0, None, None, None))(
        corners, scores, candidate, limit, iou, per_class
    )
    rows = jnp.stack(
        jnp.broadcast_arrays(
            jnp.arange(batches, dtype=index_type)[:, None, None],
            jnp.arange(classes, dtype=index_type)[None, :, None],
            chosen.astype(index_type),
        ),
        axis=-1,
    ).reshape(-1, 3)
    valid = valid.reshape(-1)
    # Selected rows first, in their order (a stable sort on "not selected"), then padding.
    order = jnp.argsort(~valid, stable=True)
    padded = jnp.concatenate(
        [rows[order], jnp.broadcast_to(jnp.asarray(pads, index_type), (max(size - rows.shape[0], 0), 3))]
    )[:size]
    keep = jnp.concatenate([valid[order], jnp.zeros((max(size - rows.shape[0], 0),), bool)])[:size]
    if size < rows.shape[0]:  # only a size below the bound can overflow: no host callback otherwise
        refuse_at_run_time_if(
            jnp.count_nonzero(valid) > size,
            lambda count: (
                f"NonMaxSuppression selected {int(count)} boxes at run time but its output was given "
                f"size={size}; the result would be truncated, so it is refused. Give a larger `size` "
                "(for a model, a larger size hint: `size_hints=` of `jaxonnx.load`)."
            ),
            jnp.count_nonzero(valid),
        )
    return jnp.where(keep[:, None], padded, jnp.asarray(pads, index_type))


def _corners(boxes, center_point_box):
    """``(y_min, x_min, y_max, x_max)``, each ``(..., boxes)``, in the boxes' dtype."""
    xp = jnp if isinstance(boxes, jax.Array) else np
    if center_point_box:
        x, y, half_w, half_h = (boxes[..., i] for i in range(4))
        half_w, half_h = half_w / 2, half_h / 2
        return y - half_h, x - half_w, y + half_h, x + half_w
    y1, x1, y2, x2 = (boxes[..., i] for i in range(4))
    return xp.minimum(y1, y2), xp.minimum(x1, x2), xp.maximum(y1, y2), xp.maximum(x1, x2)


def _suppresses(xp, corners, one, iou_threshold):
    """Whether box ``one`` (a scalar 4-tuple) suppresses each of ``corners`` (IoU > threshold),
    with onnx.reference's and onnxruntime's float steps and their zero-area rules."""
    y_min, x_min, y_max, x_max = corners
    oy_min, ox_min, oy_max, ox_max = one
    inter_w = xp.minimum(x_max, ox_max) - xp.maximum(x_min, ox_min)
    inter_h = xp.minimum(y_max, oy_max) - xp.maximum(y_min, oy_min)
    # Written as the reference's `max <= min` tests, on the same values.
    apart = (xp.minimum(x_max, ox_max) <= xp.maximum(x_min, ox_min)) | (
        xp.minimum(y_max, oy_max) <= xp.maximum(y_min, oy_min)
    )
    inter = inter_w * inter_h
    area = (x_max - x_min) * (y_max - y_min)
    one_area = (ox_max - ox_min) * (oy_max - oy_min)
    union = area + one_area - inter
    degenerate = apart | (inter <= 0) | (area <= 0) | (one_area <= 0) | (union <= 0)
    safe_union = xp.where(degenerate, xp.ones_like(union), union)
    return ~degenerate & (inter / safe_union > iou_threshold)


def _visiting_order(xp, scores):
    # Falling score, the lower index first on ties (a stable sort of the negated scores).
    return xp.argsort(-scores, stable=True)


def _select_exactly(boxes, scores, limit, iou_threshold, score_threshold, center_point_box):
    """The exact rows for known inputs, in numpy (no size needed)."""
    iou_threshold = np.zeros((), boxes.dtype) if iou_threshold is None else iou_threshold
    corners = _corners(boxes, center_point_box)
    rows = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            class_scores = scores[b, c]
            picked = []
            for box in _visiting_order(np, class_scores):
                if len(picked) >= limit:
                    break
                if score_threshold is not None and not class_scores[box] > score_threshold:
                    continue
                one = tuple(side[b, box] for side in corners)
                if picked and np.any(_suppresses(np, tuple(side[b, picked] for side in corners), one, iou_threshold)):
                    continue
                picked.append(box)
                rows.append((b, c, box))
    return np.array(rows, np.int64).reshape(-1, 3)


def _select_traced(corners, scores, candidate, limit, iou_threshold, slots):
    """One (batch, class): the first ``slots`` selected box indices in selection order, and
    which slots hold one. Greedy over the boxes by falling score, with fixed shapes."""
    order = _visiting_order(jnp, scores)
    count = scores.shape[0]

    def visit(k, state):
        selected, taken = state
        box = order[k]
        one = tuple(side[box] for side in corners)
        suppressed = jnp.any(selected & _suppresses(jnp, corners, one, iou_threshold))
        take = candidate[box] & ~suppressed & (taken < limit)
        return selected.at[box].set(take), taken + take.astype(taken.dtype)

    selected, _ = jax.lax.fori_loop(0, count, visit, (jnp.zeros((count,), bool), jnp.zeros((), limit.dtype)))
    # The selected boxes in visiting order (= selection order), first `slots` of them.
    in_order = selected[order]
    positions = jnp.argsort(~in_order, stable=True)[:slots]
    return order[positions], in_order[positions]


__all__ = ["non_max_suppression"]
