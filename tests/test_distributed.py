"""The docs' scaling-out example runs as written: two local processes with jax.distributed
(gloo on CPU) fine-tune the GPT-2 export with the params replicated and FSDP-sharded, and
their losses and the file process 0 saves equal those of one process on two devices."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "guide" / "scaling-out.md"
TIME_LIMIT_S = 300  # both runs together, started at once; on a quiet 2-core machine about 40 s


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(script: pathlib.Path, process_id: int, num_processes: int, out: pathlib.Path, port: int, devices: int):
    # The suite's XLA flags (tests/conftest.py: XLA:CPU compiles without LLVM's optimizations)
    # less its device count, which each run sets for itself.
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith("--xla_force_host_platform")]
    if devices > 1:
        flags.append(f"--xla_force_host_platform_device_count={devices}")
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(JAX_PLATFORMS="cpu", COORDINATOR=f"127.0.0.1:{port}")
    if flags:
        env["XLA_FLAGS"] = " ".join(flags)
    return subprocess.Popen(
        [sys.executable, str(script), str(process_id), str(num_processes), str(out)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _weights(path: pathlib.Path) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}


def test_two_processes_train_as_one(tmp_path):
    code = PAGE.read_text(encoding="utf-8").split("```python", 1)[1].split("```", 1)[0]
    script = tmp_path / "train.py"
    script.write_text(code, encoding="utf-8")
    two_port, one_port = _free_port(), _free_port()
    runs = {
        "two processes": [_start(script, i, 2, tmp_path / "two.onnx", two_port, devices=1) for i in range(2)],
        "one process, two devices": [_start(script, 0, 1, tmp_path / "one.onnx", one_port, devices=2)],
    }
    deadline = time.monotonic() + TIME_LIMIT_S
    outputs = {}
    try:
        for name, processes in runs.items():
            results = [p.communicate(timeout=max(1.0, deadline - time.monotonic())) for p in processes]
            for p, (_, err) in zip(processes, results):
                assert p.returncode == 0, f"{name}: process exited with {p.returncode}:\n{err[-3000:]}"
            outputs[name] = json.loads(results[0][0].strip().splitlines()[-1])
    finally:
        for processes in runs.values():
            for p in processes:
                if p.poll() is None:
                    p.kill()
                    p.wait()

    two, one = outputs["two processes"], outputs["one process, two devices"]
    assert len(two["replicated"]) == 3 and two["replicated"][-1] < two["replicated"][0]  # it trains
    assert two["replicated"] == one["replicated"]
    assert two["fsdp"] == one["fsdp"] == one["replicated"]
    saved, reference = _weights(tmp_path / "two.onnx"), _weights(tmp_path / "one.onnx")
    original = _weights(ROOT / "tests/fixtures/models/gpt2_dynamo_dynamic.onnx")
    assert saved.keys() == reference.keys() == original.keys()
    for name in saved:
        np.testing.assert_array_equal(saved[name], reference[name], err_msg=name)
    assert not np.array_equal(saved["model.transformer.wte.weight"], original["model.transformer.wte.weight"])
