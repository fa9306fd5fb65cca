"""The ``jaxonnx`` command line, through ``jaxonnx._cli.main`` (and once as ``python -m jaxonnx``)."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import jaxonnx
from jaxonnx._cli import main
from jaxonnx._demo import DEMO_PATH, make_demo_model

vi = helper.make_tensor_value_info
DEMO_X = np.arange(24, dtype=np.float32).reshape(4, 6)
DEMO_Y = [[5.0, 3.0, 3.0, 13.0, 17.0, 17.0, 23.0, 21.0, 23.0]]


def _save(tmp_path, nodes, inputs, outputs, name="m.onnx"):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    path = tmp_path / name
    onnx.save(model, path)
    return str(path)


def _compress_model(tmp_path):
    return _save(
        tmp_path,
        [helper.make_node("Compress", ["x", "cond"], ["picked"], name="pick", axis=0)],
        [vi("x", TensorProto.FLOAT, [4, 2]), vi("cond", TensorProto.BOOL, [4])],
        [vi("picked", TensorProto.FLOAT, ["n", 2])],
    )


def test_demo_is_the_default_command(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "Loaded the bundled demo: Model('jaxonnx_demo', opset 21, 10 nodes" in out
    for line in [
        "node slice_odd_columns    Slice           resolved to Slice-13",
        "node permute_rows         GatherElements  resolved to GatherElements-13",
        "node drop_row_1           Compress        resolved to Compress-11",
        "node flatten              Flatten         resolved to Flatten-21",
    ]:
        assert line in out
    assert f"eager:    y = {DEMO_Y}" in out
    assert f"jax.jit:  y = {DEMO_Y} (equal to eager: True)" in out
    assert "gradient of sum(y**2)" in out
    assert "[0.0, 26.0, 0.0, 0.0, 0.0, 68.0]" in out  # d/dx of 13**2 and 17**2 + 17**2 in row 2
    assert main(["demo"]) == 0
    assert capsys.readouterr().out == out


def test_the_bundled_demo_file_is_what_make_demo_model_builds():
    assert onnx.load(DEMO_PATH) == make_demo_model()


def test_run_with_random_inputs(capsys):
    assert main(["run", DEMO_PATH, "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "input x: shape [4, 6], dtype float32 (random)" in out
    assert "ran eagerly in " in out
    match = re.search(r"y: shape \[1, 9\], dtype float32, min (\S+), max (\S+), mean (\S+)", out)
    assert match
    x = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    (y,) = jaxonnx.load(DEMO_PATH)(x)
    y = np.asarray(y, np.float64)
    assert [float(v.rstrip(",")) for v in match.groups()] == pytest.approx([y.min(), y.max(), y.mean()], rel=1e-5)


def test_run_with_an_input_file_under_jit(tmp_path, capsys):
    np.save(tmp_path / "x.npy", DEMO_X)
    assert main(["run", DEMO_PATH, "--input", f"x={tmp_path / 'x.npy'}", "--jit"]) == 0
    out = capsys.readouterr().out
    assert "input x: shape [4, 6], dtype float32 (given)" in out
    assert "ran under jax.jit in " in out
    y = np.array(DEMO_Y)
    assert f"y: shape [1, 9], dtype float32, min {y.min():.6g}, max {y.max():.6g}, mean {y.mean():.6g}" in out


def test_run_a_compress_model_with_a_size_hint_under_jit(tmp_path, capsys):
    path = _compress_model(tmp_path)
    np.save(tmp_path / "cond.npy", np.array([True, False, True, False]))
    args = ["run", path, "--input", f"cond={tmp_path / 'cond.npy'}", "--jit"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("jaxonnx: error: Node 'pick' (Compress-11")
    assert "size_hints={'picked': <length>}" in err
    assert main([*args, "--size-hint", "picked=3"]) == 0
    out = capsys.readouterr().out
    assert "input x: shape [4, 2], dtype float32 (random)" in out
    assert "input cond: shape [4], dtype bool (given)" in out
    assert "picked: shape [3, 2], dtype float32" in out
    np.save(tmp_path / "all.npy", np.ones(4, bool))
    assert main(["run", path, "--input", f"cond={tmp_path / 'all.npy'}", "--jit", "--size-hint", "picked=3"]) == 1
    assert "selected 4 slices at run time but its output was given size=3" in capsys.readouterr().err


def test_run_refuses_bad_arguments_without_a_traceback(tmp_path, capsys):
    path = _compress_model(tmp_path)
    assert main(["run", path, "--input", "cond"]) == 2
    assert "--input needs NAME=FILE.npy, got 'cond'" in capsys.readouterr().err
    assert main(["run", path, "--input", f"cond={tmp_path / 'missing.npy'}"]) == 1
    assert "jaxonnx: error: cannot read --input cond=" in capsys.readouterr().err
    assert main(["run", path, "--size-hint", "picked=many"]) == 1
    assert "--size-hint needs OUTPUT=N with an integer N, got 'picked=many'" in capsys.readouterr().err
    assert main(["run", path, "--size-hint", "x=2"]) == 1
    assert "Size hints were given for ['x'], which no node produces" in capsys.readouterr().err
    np.save(tmp_path / "wrong.npy", np.zeros(4, np.float64))
    assert main(["run", path, "--input", f"cond={tmp_path / 'wrong.npy'}"]) == 1
    assert "The input 'cond' is declared tensor(bool) but got dtype float64" in capsys.readouterr().err


def test_run_refuses_string_inputs_under_jit(tmp_path, capsys):
    path = _save(
        tmp_path,
        [helper.make_node("Flatten", ["words"], ["flat"], name="flatten", axis=0)],
        [vi("words", TensorProto.STRING, [2, 2])],
        [vi("flat", TensorProto.STRING, [1, 4])],
    )
    assert main(["run", path]) == 0
    assert "flat: shape [1, 4], dtype object, values [" in capsys.readouterr().out
    assert main(["run", path, "--jit"]) == 1
    assert "the input 'words' is a string tensor" in capsys.readouterr().err


def test_check_a_supported_model(capsys):
    assert main(["check", DEMO_PATH]) == 0
    out = capsys.readouterr().out
    assert f"{DEMO_PATH}: opset {{'': 21}}, 10 nodes" in out
    assert re.search(r"permute_rows\s+GatherElements\s+GatherElements-13\s+supported", out)
    assert out.rstrip().endswith("all nodes supported")


def test_check_an_unsupported_model(tmp_path, capsys):
    path = _save(
        tmp_path,
        [
            helper.make_node("Flatten", ["x"], ["f"], name="flat"),
            helper.make_node("Relu", ["f"], ["y"], name="activation"),
        ],
        [vi("x", TensorProto.FLOAT, [2, 3])],
        [vi("y", TensorProto.FLOAT, [2, 3])],
    )
    assert main(["check", path]) == 1
    out = capsys.readouterr().out
    assert re.search(r"flat\s+Flatten\s+Flatten-21\s+supported", out)
    assert re.search(r"activation\s+Relu\s+-\s+NOT supported: The op 'Relu' .* is not supported", out)
    assert out.rstrip().endswith("1 node(s) not supported")


def test_check_refuses_unreadable_files(tmp_path, capsys):
    (tmp_path / "junk.onnx").write_bytes(b"\x00\xffjunk")
    assert main(["check", str(tmp_path / "junk.onnx")]) == 1
    assert "jaxonnx: error: '" in (err := capsys.readouterr().err) and "is not a valid ONNX model" in err
    assert main(["check", str(tmp_path / "none.onnx")]) == 1
    assert "cannot read the ONNX model" in capsys.readouterr().err


def test_python_dash_m_jaxonnx_runs_the_demo():
    result = subprocess.run(
        [sys.executable, "-m", "jaxonnx"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert f"jax.jit:  y = {DEMO_Y} (equal to eager: True)" in result.stdout


def test_check_names_a_domain_the_model_does_not_import(tmp_path, capsys):
    graph = helper.make_graph(
        [helper.make_node("Custom", ["x"], ["y"], domain="com.example")],
        "custom",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "custom.onnx"
    path.write_bytes(model.SerializeToString())
    assert main(["check", str(path)]) == 1
    assert "imports no opset for the domain 'com.example'" in capsys.readouterr().out
