"""The prompts of :func:`~jaxonnx.generation.generate`, made a batch with its mask and checked
before the loop: left padding, and token ids inside the model's vocabulary (both the caller's
promise under a trace)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.model import Model
from jaxonnx._errors import OnnxValidationError
from jaxonnx.generation.cache import CacheLayout


def batched_prompts(input_ids, attention_mask):
    """``(input_ids, attention_mask, one_prompt)``: the prompts as a ``(batch, prompt)`` batch
    (one 1-D prompt as a batch of one) and their mask, all ones by default."""
    input_ids = jnp.asarray(input_ids)
    one_prompt = input_ids.ndim == 1
    if one_prompt:
        input_ids = input_ids[None]
        attention_mask = None if attention_mask is None else jnp.asarray(attention_mask)[None]
    if input_ids.ndim != 2 or not jnp.issubdtype(input_ids.dtype, jnp.integer) or input_ids.shape[1] == 0:
        raise OnnxValidationError(
            f"`input_ids` must be non-empty integer prompts of shape (batch, prompt), got {input_ids.dtype}{list(input_ids.shape)}."
        )
    if attention_mask is None:
        attention_mask = jnp.ones(input_ids.shape, jnp.int32)
    attention_mask = jnp.asarray(attention_mask)
    if attention_mask.shape != input_ids.shape:
        raise OnnxValidationError(
            f"`attention_mask` has shape {list(attention_mask.shape)}, `input_ids` {list(input_ids.shape)}; they must agree."
        )
    return input_ids, attention_mask, one_prompt


def vocabulary_size(model: Model, layout: CacheLayout) -> int | None:
    """The number of token ids the model knows: its logits' declared last dim, else the rows of
    the embedding table that ``input_ids`` gathers from; None when neither is declared."""
    logits = next((info for info in model.outputs if info.name == layout.logits), None)
    if logits is not None and logits.shape and isinstance(logits.shape[-1], int):
        return logits.shape[-1]
    graph = model._proto.graph
    tables = {i.name: list(i.dims) for i in graph.initializer}
    for node in graph.node:
        if (
            node.op_type == "Gather"
            and len(node.input) > 1
            and node.input[1] == layout.input_ids
            and node.input[0] in tables
        ):
            return tables[node.input[0]][0]
    return None


def check_in_vocabulary(input_ids, mask, vocabulary: int | None) -> None:
    """Refuses a prompt token outside ``range(vocabulary)``, naming the first such id and where it is."""
    if vocabulary is None or isinstance(input_ids, jax.core.Tracer):
        return  # under a trace the ids are not known; the caller's promise, as left padding is
    ids = np.asarray(input_ids)
    # left padding may hold any id: only the tokens the mask keeps are looked up
    kept = np.asarray(mask) != 0 if not isinstance(mask, jax.core.Tracer) else np.ones(ids.shape, bool)
    outside = np.argwhere(kept & ((ids < 0) | (ids >= vocabulary)))
    if len(outside):
        row, column = (int(i) for i in outside[0])
        raise OnnxValidationError(
            f"The prompt token {int(ids[row, column])} at row {row}, position {column} of `input_ids` is outside "
            f"the model's vocabulary of {vocabulary} ids (0 to {vocabulary - 1}); "
            f"{len(outside)} prompt token{'s are' if len(outside) > 1 else ' is'} out of range."
        )


def check_left_padded(mask, layout: CacheLayout) -> None:
    """Refuses a mask that pads on the right or leaves a row empty, and padding for a model without a mask."""
    if isinstance(mask, jax.core.Tracer):
        return  # documented: left padding is the caller's promise under a trace
    mask = np.asarray(mask)
    ones = mask != 0
    right_padded = np.any(ones[:, :-1] & ~ones[:, 1:])
    if right_padded or not np.all(ones.any(axis=1)):
        raise OnnxValidationError(
            "`attention_mask` must pad prompts on the left (each row's zeros before its ones) and give every row a "
            f"token; got {mask.tolist() if mask.size <= 64 else 'a mask that does not'}."
        )
    if layout.attention_mask is None and not ones.all():
        raise OnnxValidationError("The model takes no attention_mask, so it cannot decode padded prompts.")
