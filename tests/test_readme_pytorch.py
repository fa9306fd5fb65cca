"""The docs' "Coming from PyTorch" example (once the README's) runs as written, on a committed export."""

import os
import pathlib

import jax
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "guide" / "from-pytorch.md").read_text(encoding="utf-8")


def test_loading_a_pytorch_model_example_runs(monkeypatch):
    code = PAGE.split("```python", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    with jax.enable_x64(False):  # as a user runs it: JAX's default 32-bit mode
        exec(compile(code, "docs/guide/from-pytorch.md", "exec"), namespace)
    assert namespace["probs"].shape[0] == 4
    assert namespace["probs_32"].shape[0] == 32
    np.testing.assert_allclose(np.asarray(namespace["probs"]).sum(-1), 1.0, rtol=1e-5)
    # The SGD step changed every weight that has a gradient.
    before = namespace["model"].params
    changed = [not np.allclose(before[k], namespace["params"][k]) for k in before]
    assert any(changed)
    assert os.path.exists(ROOT / "tests/fixtures/models/mlp_dynamo_dynamic.onnx")
