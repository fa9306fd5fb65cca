"""Loading a causal LM's file for :func:`~jaxonnx.generation.generate`: a folder or a file, the
size hints of a Mixture-of-Experts graph's NonZero outputs, the last few models kept by path."""

from __future__ import annotations

import functools
import json
import os

import onnx

from jaxonnx._core.model import Model, load
from jaxonnx._errors import OnnxValidationError


def load_causal_lm(path: str | os.PathLike, *, routed_tokens: int | None = None) -> Model:
    """Loads ``path`` (an ``.onnx`` file, or a folder with ``model.onnx`` or one ``.onnx``
    file) as a :class:`Model`, remembering the last few by path and modification time.

    Args:
        path: the model's ``.onnx`` file, or its folder.
        routed_tokens: for a Mixture-of-Experts export whose graph routes tokens with
            NonZero (Optimum's Qwen3-MoE, DeepSeek-V3), the size hint of each NonZero
            output: the most tokens a step routes to one expert, ``batch x prompt`` for
            :func:`generate` (an expert takes a token at most once). A graph without NonZero
            ignores it. A hint too short is refused at run time: NonZero's error says how
            many entries it found for how many places.

    Returns:
        The :class:`Model`, shared with earlier calls for the same file, modification time
        and hints.

    Example:
        >>> model = load_causal_lm("tests/fixtures/generation/qwen3_moe_optimum", routed_tokens=2 * 5)
        >>> generate(model, jnp.ones((2, 5), jnp.int32), 2).shape
        (2, 7)
    """
    path = model_file(os.fspath(path))
    mtime = os.path.getmtime(path) if os.path.exists(path) else None
    routing = _nonzero_outputs(path, mtime) if routed_tokens is not None and mtime is not None else ()
    return _load_cached(path, mtime, tuple((name, routed_tokens) for name in routing) or None)


@functools.lru_cache(maxsize=4)
def _nonzero_outputs(path: str, mtime) -> tuple[str, ...]:
    """The outputs of the main graph's NonZero nodes; none where onnx cannot read the file,
    so that the load itself says why in jaxonnx's words."""
    del mtime  # part of the cache key: an edited file is read again
    try:
        nodes = onnx.load(path, load_external_data=False).graph.node
    except Exception:  # any reading error is the load's to report, in its own words
        return ()
    return tuple(node.output[0] for node in nodes if node.op_type == "NonZero")


@functools.lru_cache(maxsize=4)
def _load_cached(path: str, mtime, size_hints: tuple[tuple[str, int], ...] | None) -> Model:
    del mtime  # part of the cache key: an edited file loads again
    return load(path, size_hints=dict(size_hints) if size_hints else None)


def model_file(path: str) -> str:
    """The absolute path of the model's ``.onnx`` file: ``path`` itself, or in a folder the
    decoder file its ``genai_config.json`` names (onnxruntime-genai's builder), else
    ``model.onnx``, else its one ``.onnx`` file.

    Example:
        >>> os.path.basename(model_file("tests/fixtures/generation/qwen3_moe_optimum"))
        'model.onnx'
    """
    if os.path.isdir(path):
        filename = genai_filename(path)
        candidates = [filename] if filename else sorted(n for n in os.listdir(path) if n.endswith(".onnx"))
        if "model.onnx" in candidates:
            candidates = ["model.onnx"]
        if len(candidates) != 1:
            raise OnnxValidationError(
                f"The folder {path!r} holds {candidates or 'no .onnx files'}; pass the model's file itself."
            )
        path = os.path.join(path, candidates[0])
    return os.path.abspath(path)


def genai_filename(folder: str) -> str | None:
    """The decoder's file name that the folder's ``genai_config.json`` gives, or None."""
    config = os.path.join(folder, "genai_config.json")
    if not os.path.exists(config):
        return None
    with open(config) as f:
        return json.load(f).get("model", {}).get("decoder", {}).get("filename")
