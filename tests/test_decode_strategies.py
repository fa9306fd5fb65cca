"""The decode strategies of ``jaxonnx/generation/decode.py`` on one model: the growing cache
feeds the positions a fixed window does (a graph with ``position_ids`` decoded with a growing
cache gives the window's tokens); a layout of an unknown mode, and positions the shared buffer does
not compute, are refused by name."""

import dataclasses
import os

import numpy as np
import pytest

import jaxonnx
from jaxonnx.generation import find_cache

LLAMA = os.path.join(os.path.dirname(__file__), "fixtures", "generation", "llama_optimum", "model.onnx")


@pytest.fixture(scope="module")
def llama():
    return jaxonnx.load(LLAMA)


def test_a_growing_cache_gives_the_fixed_windows_tokens(llama):
    ids = np.array([[5, 6, 7, 8], [0, 0, 9, 10]])
    mask = np.array([[1, 1, 1, 1], [0, 0, 1, 1]])
    window = find_cache(llama)
    assert window.mode == "window"
    growing = dataclasses.replace(window, mode="grow")
    expected = jaxonnx.generate(llama, ids, 4, attention_mask=mask, cache=window)
    tokens = jaxonnx.generate(llama, ids, 4, attention_mask=mask, cache=growing)
    np.testing.assert_array_equal(tokens, expected)


def test_a_layout_of_an_unknown_mode_is_refused(llama):
    layout = dataclasses.replace(find_cache(llama), mode="ring")
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"mode is 'ring'; .* one of \['buffer', 'grow', 'window'\]"):
        jaxonnx.generate(llama, np.array([[5, 6, 7]]), 2, cache=layout)


def test_the_shared_buffer_refuses_a_graph_that_takes_positions(llama):
    layout = dataclasses.replace(find_cache(llama), mode="buffer")
    with pytest.raises(
        jaxonnx.OnnxValidationError, match=r"takes 'position_ids', which the 'buffer' strategy does not"
    ):
        jaxonnx.generate(llama, np.array([[5, 6, 7]]), 2, cache=layout)
