"""The decode strategies of ``jaxonnx/generation/decode.py`` on one model: the growing cache
feeds the positions a fixed window does (a graph with ``position_ids`` decoded with a growing
cache gives the window's tokens); a layout of an unknown mode, and positions the shared buffer does
not compute, are refused by name."""

import dataclasses
import json
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
    # The fixture's uneven prompts, whose tokens by the fixed window are torch's own, recorded at
    # export (test_generation's test_greedy_tokens_equal_onnxruntime_on_uneven_prompts checks
    # the window's against them and onnxruntime's): no second decode loop to compile here.
    with open(os.path.join(os.path.dirname(LLAMA), os.pardir, "manifest.json")) as file:
        entry = json.load(file)["llama_optimum"]
    ids, mask = np.array(entry["prompt_ids"]), np.array(entry["prompt_mask"])
    window = find_cache(llama)
    assert window.mode == "window"
    growing = dataclasses.replace(window, mode="grow")
    tokens = np.asarray(jaxonnx.generate(llama, ids, 4, attention_mask=mask, cache=growing))
    np.testing.assert_array_equal(tokens[:, : ids.shape[1]], ids)
    np.testing.assert_array_equal(tokens[:, ids.shape[1] :], np.array(entry["torch_greedy"])[:, :4])


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
