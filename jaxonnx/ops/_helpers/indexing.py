"""What the gather and scatter ops share: index bounds (concrete indices checked, traced ones
wrapped, clamped or sent out of range), and the scatter with its reductions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.padding import Call, Marks, as_tuple, real_mask
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.bounds import refuse_at_run_time_if
from jaxonnx.ops._helpers.common import is_traced, namespace, normalize_axis


def check_indices_fit(indices, data, axis: int, *, kind: str) -> None:
    """GatherElements and ScatterElements: off the ``kind`` axis, ``indices`` may be shorter
    than ``data`` (only that corner is used), never longer."""
    for d, (n_index, n_data) in enumerate(zip(indices.shape, data.shape)):
        if d != axis and n_index > n_data:
            raise OnnxValidationError(
                f"got `indices` of shape {tuple(indices.shape)} larger than `data` "
                f"{tuple(data.shape)} on dim {d}, which is not the {kind} axis ({axis})."
            )


def in_bounds_indices(indices, dim: int, *, axis: int, shape, name: str = "indices", checks=None):
    """``indices`` along an axis of size ``dim`` wrapped into ``[0, dim)``, in the narrowest
    exact integer type. Concrete indices outside ``[-dim, dim)`` raise with the value and its
    position; traced ones are clamped (their values are unknown at trace time), and their
    check goes to ``checks`` (a :class:`~jaxonnx._core.checks.NodeChecks`) where one is given,
    to be made after the computation."""
    index_type = np.int32 if dim < 2**31 else np.int64
    if not is_traced(indices):
        concrete = np.asarray(indices)
        bad = (concrete < -dim) | (concrete >= dim)
        if bad.any():
            where = tuple(int(i[0]) for i in np.nonzero(bad))
            raise OnnxValidationError(
                f"got index {concrete[where]} at position {where} of `{name}`, outside "
                f"[{-dim}, {dim - 1}] for axis {axis} of `data` with shape {tuple(shape)}."
            )
        return np.where(concrete < 0, concrete + dim, concrete).astype(index_type)  # exact: in [0, dim)
    if dim == 0:
        if indices.size:
            raise OnnxValidationError(
                f"gathers along axis {axis} of size 0 with {indices.size} indices; every index is out of bounds."
            )
        return indices.astype(index_type)
    # In a type that holds `dim` (uint8 indices + 300 would wrap); clamped as XLA would.
    wide = indices.astype(np.promote_types(indices.dtype, index_type)) if indices.dtype.kind == "i" else indices
    if checks is not None:
        checks.fail_where(
            (wide < -dim) | (wide >= dim),
            indices,
            f"got index {{value}} at position {{position}} of `{name}`, outside "
            f"[{-dim}, {dim - 1}] for axis {axis} of `data` with shape {tuple(shape)}.",
        )
    wrapped = jnp.where(wide < 0, wide + dim, wide) if wide.dtype.kind == "i" else wide
    return jnp.clip(wrapped, 0, dim - 1).astype(index_type)


def nd_indices(indices, shape, *, first_dim: int = 0, name: str = "indices", column: bool = True, checks=None) -> tuple:
    """The columns of ``indices`` (its last axis indexes the dims of ``shape`` from
    ``first_dim`` on), each wrapped into ``[0, dim)``. Concrete indices outside
    ``[-dim, dim)`` raise with the value and position; traced ones become ``dim``, out of
    range, so that a gather in "fill" mode reads zeros and a scatter drops them, and their
    check goes to ``checks`` (a :class:`~jaxonnx._core.checks.NodeChecks`) where one is
    given, to be made after the computation. Errors show the position in ``indices``
    without its last axis where ``column`` is false."""
    dims = shape[first_dim : first_dim + indices.shape[-1]]
    index_type = np.int32 if max(dims, default=0) < 2**31 - 1 else np.int64
    columns = []
    for j, dim in enumerate(dims):
        values = indices[..., j]
        if not is_traced(values):
            concrete = np.asarray(values)
            bad = (concrete < -dim) | (concrete >= dim)
            if bad.any():
                where = tuple(int(i[0]) for i in np.nonzero(bad))
                raise OnnxValidationError(
                    f"got index {concrete[where]} at position {(*where, j) if column else where} of `{name}`, outside "
                    f"[{-dim}, {dim - 1}] for dim {first_dim + j} of `data` with shape {tuple(shape)}."
                )
            columns.append(np.where(concrete < 0, concrete + dim, concrete).astype(index_type))
            continue
        wide = values.astype(np.promote_types(values.dtype, index_type))
        inside = (wide >= -dim) & (wide < dim)
        if checks is not None:
            message = (
                f"got index {{value}} at position {{position}} of `{name}`, outside "
                f"[{-dim}, {dim - 1}] for dim {first_dim + j} of `data` with shape {tuple(shape)}."
            )
            if column:  # the position in `indices`, its last axis included: column j's only
                checks.fail_where(jnp.zeros(indices.shape, bool).at[..., j].set(~inside), indices, message)
            else:
                checks.fail_where(~inside, values, message)
        columns.append(jnp.where(inside, jnp.where(wide < 0, wide + dim, wide), dim).astype(index_type))
    return tuple(columns)


REDUCTIONS = ("none", "add", "mul", "max", "min")


def scatter_elements_along(data, indices, updates, axis: int, reduction: str, checks=None):
    """ScatterElements (and the deprecated Scatter): ``data`` with each element of
    ``updates`` written at (or combined with) the element that the same position of
    ``indices`` names along ``axis``; the other dims take the position itself. Checks the
    ranks and shapes, ``axis`` and concrete indices; traced out-of-range indices write
    nothing, and their check goes to ``checks`` where one is given (:func:`nd_indices`)."""
    rank = data.ndim
    if rank == 0:
        raise OnnxValidationError("needs `data` of rank >= 1, got a scalar.")
    if indices.ndim != rank or updates.shape != indices.shape:
        raise OnnxValidationError(
            f"needs `indices` of the rank of `data` {tuple(data.shape)} and `updates` of the shape of "
            f"`indices`, got `indices` {tuple(indices.shape)} and `updates` {tuple(updates.shape)}."
        )
    axis = normalize_axis(axis, rank)
    check_indices_fit(indices, data, axis, kind="scatter")
    (along,) = nd_indices(indices[..., None], data.shape, first_dim=axis, column=False, checks=checks)
    grid = np.indices(indices.shape, sparse=True)
    # The other dims' positions, in the index type of `along` (strict promotion in a stack).
    index = tuple(
        along if d == axis else np.broadcast_to(grid[d].astype(along.dtype), indices.shape) for d in range(rank)
    )
    return scatter(data, index, updates, reduction)


def checked_reduction(reduction, accepted) -> str:
    if reduction not in accepted:
        raise OnnxValidationError(
            f"got `reduction`={reduction!r}; this version accepts {', '.join(accepted)} "
            "(max and min came with version 18)."
        )
    return reduction


def scatter(data, index: tuple, updates, reduction: str):
    """``data`` with ``updates`` written at ``data[index]`` (``index``: one in-range array per
    leading dim of ``data``, all of one shape ``R``; ``updates``: ``R + data.shape[len(index):]``).
    Traced out-of-range indices (``dim``, from :func:`nd_indices`) are dropped."""
    if namespace(data, updates) is np:
        out = data.copy()
        if reduction == "none":
            out[index] = updates
        else:
            _NUMPY_UFUNCS[reduction].at(out, index, updates)
        return out
    if data.dtype == np.bool_:  # numpy's bool sum and product are `or` and `and`; JAX has neither
        reduction = {"add": "max", "mul": "min"}.get(reduction, reduction)
    if reduction == "mul":
        return _scatter_mul(data, index, updates)
    method = {"none": "set", "add": "add", "max": "max", "min": "min"}[reduction]
    return getattr(data.at[index], method)(updates, mode="drop")


_NUMPY_UFUNCS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _scatter_mul(data, index, updates):
    # JAX differentiates scatter_mul only with `unique_indices=True`, so the products are
    # applied in rounds of unique targets: the r-th update of each target in round r.
    rows = index[0].shape
    flat_index = [i.reshape(-1) for i in index]
    flat_updates = updates.reshape((-1, *updates.shape[len(rows) :]))
    if any(is_traced(i) for i in index):

        def step(out, row):
            where, update = row
            return out.at[tuple(where)].multiply(update, mode="drop", unique_indices=True), None

        return jax.lax.scan(step, data, (jnp.stack(flat_index, axis=-1), flat_updates))[0]
    flat_index = [np.asarray(i) for i in flat_index]
    target = np.ravel_multi_index(flat_index, data.shape[: len(index)]) if flat_index[0].size else flat_index[0]
    order = np.argsort(target, kind="stable")
    sorted_target = target[order]
    first = np.searchsorted(sorted_target, sorted_target, side="left")
    occurrence = np.empty_like(order)
    occurrence[order] = np.arange(len(order)) - first
    out = data
    for r in range(int(occurrence.max(initial=-1)) + 1):
        chosen = np.flatnonzero(occurrence == r)
        where = tuple(i[chosen] for i in flat_index)
        out = out.at[where].multiply(flat_updates[chosen], unique_indices=True)
    return out


def scattered_on_padding(call: Call, nd: bool = False):
    """The scatters' rule on padding: marked indices or updates write nothing (a row of
    indices per update where ``nd``, ScatterND's, a single index otherwise); the output
    keeps the data's marks."""
    data, indices, updates = call.args[:3]
    call.no_lengths()
    rows = indices.shape[:-1] if nd else indices.shape
    keep = jnp.ones(rows, bool)
    for i in (1, 2):
        for a, mark in call.axis_marks(i).items():
            if a >= len(rows):
                call.refuse("marks a part of each update as padding, not whole updates")
            keep = keep & real_mask(rows, {a: mark})
    indices = jnp.asarray(indices)
    if nd and updates.ndim and 0 < len(rows) == 1 and updates.shape[0] < rows[0] and 0 in call.axis_marks(1):
        # `x.masked_scatter(mask, src)`: the updates are `src` cut to the padded length of the
        # selection (Slice(src, 0, n)), so no longer than `src`; the rows past them are marked
        # (there are never more real rows than `src` has entries, which torch requires).
        count = call.axis_marks(1)[0].count
        refuse_at_run_time_if(
            count > updates.shape[0],
            lambda found: (
                f"Node {call.node.path!r} ({call.node.op.name}) scatters {int(found)} selected positions but has "
                f"only {updates.shape[0]} updates."
            ),
            count,
        )
        updates = jnp.pad(jnp.asarray(updates), [(0, rows[0] - updates.shape[0])] + [(0, 0)] * (updates.ndim - 1))
    if nd:
        beyond = jnp.asarray(np.array(data.shape[: indices.shape[-1]]), indices.dtype)
        dropped = jnp.where(keep[..., None], indices, beyond)
    else:
        dropped = jnp.where(keep, indices, data.shape[call.attributes.get("axis", 0)])
    # Traced, out-of-range indices write nothing (the op's rule); eagerly too, run under jit.
    results = as_tuple(jax.jit(lambda d, i, u: call.run([d, i, u, *call.args[3:]]))(data, dropped, updates))
    axes = call.axis_marks(0)
    return results, [Marks(dict(axes)) if axes else None for _ in results]
