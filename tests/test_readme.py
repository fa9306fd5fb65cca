"""The README's generated parts and commands match the code."""

import pathlib

from jaxonnx._docs import support_table

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_support_table_matches_the_registry():
    assert support_table() in README, "README's op table is stale: run `python -m jaxonnx._docs`."


def test_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = "pip install -q -e '.[test]' && python -m pytest -q -n 2"
    assert command in ci
    assert command in README


def _python_block_after(heading: str) -> str:
    section = README.split(heading, 1)[1]
    return section.split("```python", 1)[1].split("```", 1)[0]


def test_readme_gradients_and_transformations_example_runs():
    namespace: dict = {}
    exec(compile(_python_block_after("## Gradients and transformations"), "README.md", "exec"), namespace)
    # The fine-tuning step changed the weights, and vmap/sharding/export agree with eager.
    assert namespace["gx"].shape == (8, 3)
    assert namespace["ys"].shape == (2, 8, 3)
    (eager,) = namespace["model"](namespace["x"], namespace["keep"])
    (eager_tiled,) = namespace["model"](namespace["xs"], namespace["keeps"])
    import jax
    import numpy as np

    # The sharding part uses every device there is (8 virtual CPU devices here), not a fixed count.
    assert namespace["n_devices"] == len(jax.devices()) and namespace["xs"].shape == (8 * len(jax.devices()), 3)
    np.testing.assert_array_equal(np.asarray(namespace["y_sharded"]), np.asarray(eager_tiled))
    np.testing.assert_array_equal(np.asarray(namespace["y"]), np.asarray(eager))  # the exported model


def test_readme_gradients_example_runs_on_a_single_device():
    import subprocess
    import sys

    # A laptop or a one-GPU machine: one device, no XLA_FLAGS.
    code = (
        "import pathlib, jax; jax.config.update('jax_enable_x64', True); assert len(jax.devices()) == 1\n"
        f"readme = pathlib.Path({str(ROOT / 'README.md')!r}).read_text(encoding='utf-8')\n"
        "block = readme.split('## Gradients and transformations', 1)[1].split('```python', 1)[1].split('```', 1)[0]\n"
        "exec(compile(block, 'README.md', 'exec'), {})\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "XLA_FLAGS"}
    env["JAX_PLATFORMS"] = "cpu"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert result.returncode == 0, result.stderr


def test_readme_quickstart_runs():
    namespace: dict = {}
    exec(compile(_python_block_after("## Quickstart"), "README.md", "exec"), namespace)
    assert namespace["y"].shape == (1, 9)
    assert namespace["g"].shape == (4, 6)
