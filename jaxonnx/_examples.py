"""Small example models bundled with jaxonnx, so that the docs and notebooks run anywhere.

Each is a tiny, randomly initialized model written by the tool that users meet in practice;
the test suite holds the same files among its fixtures (``tests/fixtures``), where the
scripts under ``tools/`` that made them are named.
"""

from __future__ import annotations

import os

_DATA = os.path.join(os.path.dirname(__file__), "data")

#: name -> (path under ``jaxonnx/data``, what it is).
EXAMPLES: dict[str, tuple[str, str]] = {
    "demo": ("demo.onnx", "the five seed ops (Slice, GatherElements, Where, Compress, Flatten) in one graph"),
    "mlp": ("examples/mlp.onnx", "a 3-layer MLP with a softmax, torch's dynamo exporter, batch dim symbolic"),
    "gpt2": (
        "examples/gpt2.onnx",
        "a 2-layer GPT-2 (hidden 32) without KV cache, torch's dynamo exporter: int64 input_ids and "
        "attention_mask, batch and sequence symbolic",
    ),
    "llama": (
        "examples/llama",
        "a 2-layer Llama (hidden 32, vocab 128) exported by Optimum, with its KV cache, config and tokenizer",
    ),
    "llama-int4": (
        "examples/llama-int4",
        "the same Llama through onnxruntime-genai's model builder, int4 (MatMulNBits, GroupQueryAttention), "
        "with genai_config.json and its tokenizer",
    ),
}


def example_path(name: str) -> str:
    """The path of a small example model bundled with jaxonnx.

    A folder for the language models (``model.onnx`` with its ``config.json`` and
    ``tokenizer.json``, as the exporters write them), a file for the others.

    Args:
        name: one of ``"demo"``, ``"mlp"``, ``"gpt2"``, ``"llama"`` (Optimum, with its KV
            cache) and ``"llama-int4"`` (onnxruntime-genai's builder, int4).

    Returns:
        The absolute path of the file or folder, inside the installed package.

    Raises:
        ValueError: for a name not bundled; the message lists those that are.

    Example:
        >>> model = jaxonnx.load(jaxonnx.example_path("mlp"))
        >>> [(i.name, i.shape) for i in model.inputs]
        [('x', ['batch', 8])]
    """
    if name not in EXAMPLES:
        listing = ", ".join(f"{n!r} ({what})" for n, (_, what) in EXAMPLES.items())
        raise ValueError(f"jaxonnx bundles no example model named {name!r}; it bundles {listing}.")
    return os.path.join(_DATA, EXAMPLES[name][0])


__all__ = ["EXAMPLES", "example_path"]
