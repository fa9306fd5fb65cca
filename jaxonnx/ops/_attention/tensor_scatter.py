"""TensorScatter: version 24."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import is_traced, namespace, normalize_axis


@register("TensorScatter", 24, concrete=("write_indices",))
def tensor_scatter(past_cache, update, write_indices=None, *, axis: int = -2, mode: str = "linear", checks=None):
    """Implements ONNX TensorScatter: ``update`` written into ``past_cache`` along ``axis`` (a KV-cache update).

    For each batch ``b``, ``update``'s positions ``s`` along ``axis`` go to positions
    ``write_indices[b] + s`` of the cache (modulo the cache length when ``mode`` is
    "circular"); the rest of the cache is kept.

    Args:
        past_cache: the cache, of rank >= 2; dim 0 is the batch.
        update: the shape of ``past_cache`` except along ``axis``, where it is at most as long.
        write_indices: optional int64 ``(batch,)``, zeros when omitted. In "linear" mode each
            is >= 0 and leaves room for the update; traced, positions past the cache are dropped.
        axis: the sequence dim, in ``[-rank, rank - 1]`` and not the batch dim.
        mode: "linear" or "circular".
        checks: where the check of traced ``write_indices`` goes, to be made after the
            computation (an eager call's compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        ``present_cache``: the shape and dtype of ``past_cache``.

    Example:
        >>> cache = jnp.zeros((2, 4))
        >>> jaxonnx.ops.tensor_scatter(cache, jnp.ones((2, 2)), jnp.array([1, 3]), axis=1, mode="circular")
        Array([[0., 1., 1., 0.],
               [1., 0., 0., 1.]], dtype=float32)
    """
    if mode not in ("linear", "circular"):
        raise OnnxValidationError(f"got `mode`={mode!r}; it is 'linear' or 'circular'.")
    if past_cache.ndim < 2:
        raise OnnxValidationError(f"needs `past_cache` of rank >= 2, got shape {tuple(past_cache.shape)}.")
    axis = normalize_axis(axis, past_cache.ndim)
    if axis == 0:
        raise OnnxValidationError("got `axis` naming dim 0, the batch dim; the sequence dim is another.")
    cache_shape, update_shape = tuple(past_cache.shape), tuple(update.shape)
    if (
        len(update_shape) != len(cache_shape)
        or update_shape[axis] > cache_shape[axis]
        or any(u != c for i, (u, c) in enumerate(zip(update_shape, cache_shape)) if i != axis)
    ):
        raise OnnxValidationError(
            f"needs `update` of the shape of `past_cache` {cache_shape} except along axis {axis}, where it is "
            f"at most {cache_shape[axis]} long; got {update_shape}."
        )
    batch, capacity, length = cache_shape[0], cache_shape[axis], update_shape[axis]
    xp = namespace(past_cache, update, write_indices)
    if write_indices is None:
        starts = np.zeros(batch, np.int64)
    else:
        if tuple(write_indices.shape) != (batch,):
            raise OnnxValidationError(f"needs `write_indices` of shape ({batch},), got {tuple(write_indices.shape)}.")
        starts = write_indices
        message = (
            f"got `write_indices`={{values}} for an update of length {length} along axis {axis}; "
            f"in 'linear' mode each is in [0, {capacity - length}], so the update fits the cache."
        )
        if mode == "linear" and not is_traced(write_indices):
            values = np.asarray(write_indices)
            if values.size and (values.min() < 0 or values.max() + length > capacity):
                raise OnnxValidationError(message.format(values=values.tolist()))
        elif mode == "linear" and checks is not None:
            checks.fail_where(
                (write_indices < 0) | (write_indices > capacity - length), write_indices, message, values=write_indices
            )
    # Positions (batch, length) along the sequence dim, moved next to the batch dim.
    positions = xp.asarray(starts).reshape(batch, 1) + xp.arange(length).reshape(1, length)
    if mode == "circular":
        positions = positions % capacity
    rows = xp.arange(batch).reshape(batch, 1)
    cache = xp.moveaxis(past_cache, axis, 1)
    values = xp.moveaxis(update, axis, 1)
    if xp is np:
        present = cache.copy()
        present[rows, positions] = values
    else:
        # Traced linear writes past either end are dropped (no numpy-style wrap of negatives).
        positions = jnp.where((positions >= 0) & (positions < capacity), positions, capacity)
        present = cache.at[rows, positions].set(values, mode="drop")
    return xp.moveaxis(present, 1, axis)


__all__ = ["tensor_scatter"]
