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
    # A command-line user is told the option, not the Python keyword.
    assert "`--size-hint picked=N`" in err and "size_hints" not in err
    assert main([*args, "--size-hint", "picked=3"]) == 0
    out = capsys.readouterr().out
    assert "input x: shape [4, 2], dtype float32 (random)" in out
    assert "input cond: shape [4], dtype bool (given)" in out
    assert "picked: shape [3, 2], dtype float32" in out
    np.save(tmp_path / "all.npy", np.ones(4, bool))
    assert main(["run", path, "--input", f"cond={tmp_path / 'all.npy'}", "--jit", "--size-hint", "picked=3"]) == 1
    # The host callback's traceback is not shown: the first line is jaxonnx's message.
    err = capsys.readouterr().err
    first_line = err.splitlines()[0]
    assert first_line.startswith("jaxonnx: error: Compress")
    assert "selected 4 slices at run time but its output was given size=3" in first_line
    assert "--size-hint" in first_line and "size_hints" not in err
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_run_refuses_bad_arguments_without_a_traceback(tmp_path, capsys):
    path = _compress_model(tmp_path)
    # Malformed options exit with 2, like argparse's own usage errors.
    assert main(["run", path, "--input", "cond"]) == 2
    assert "--input needs NAME=FILE.npy, got 'cond'" in capsys.readouterr().err
    assert main(["run", path, "--size-hint", "picked=many"]) == 2
    assert "--size-hint needs NAME=N with an integer N, got 'picked=many'" in capsys.readouterr().err
    assert main(["run", path, "--size-hint", "picked"]) == 2
    assert "--size-hint needs NAME=N, got 'picked'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as argparse_exit:
        main(["run", path, "--no-such-option"])
    assert argparse_exit.value.code == 2
    capsys.readouterr()
    assert main(["run", path, "--input", f"cond={tmp_path / 'missing.npy'}"]) == 1
    assert "jaxonnx: error: cannot read --input cond=" in capsys.readouterr().err
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
            helper.make_node("Shrink", ["f"], ["y"], name="activation"),
        ],
        [vi("x", TensorProto.FLOAT, [2, 3])],
        [vi("y", TensorProto.FLOAT, [2, 3])],
    )
    assert main(["check", path]) == 1
    out = capsys.readouterr().out
    assert re.search(r"flat\s+Flatten\s+Flatten-21\s+supported", out)
    assert re.search(r"activation\s+Shrink\s+-\s+NOT supported: jaxonnx does not implement this op", out)
    assert "1 node(s) not supported; unsupported: Shrink (1 node)\n" in out
    supported = ", ".join(jaxonnx.supported_ops())
    assert out.endswith(f"jaxonnx supports: {supported}\n") and out.count("Compress") == 1


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


def test_an_unknown_input_name_is_reported_before_random_inputs_are_made(tmp_path, capsys):
    path = _compress_model(tmp_path)
    np.save(tmp_path / "c.npy", np.ones(4, bool))
    assert main(["run", path, "--input", f"kond={tmp_path / 'c.npy'}"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing was made or printed first
    assert captured.err == (
        "jaxonnx: error: --input names 'kond', which is not an input of the model; its inputs are x, cond.\n"
    )


def _shapeless_compress_model(tmp_path):
    return _save(
        tmp_path,
        [helper.make_node("Compress", ["x", "cond"], ["picked"], name="pick", axis=0)],
        [vi("x", TensorProto.FLOAT, None), vi("cond", TensorProto.BOOL, ["n"])],
        [vi("picked", TensorProto.FLOAT, None)],
        name="shapeless.onnx",
    )


def test_run_and_check_work_on_a_shapeless_model(tmp_path, capsys):
    path = _shapeless_compress_model(tmp_path)
    assert main(["check", path]) == 0
    out = capsys.readouterr().out
    assert re.search(r"pick\s+Compress\s+Compress-11\s+supported", out) and out.rstrip().endswith("all nodes supported")
    # A random input needs a shape: the error names the input and the option that gives one.
    assert main(["run", path]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "the input 'x' is declared without a shape" in captured.err
    assert "`--input x=FILE.npy`" in captured.err
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "cond.npy", np.array([True, False, True]))
    assert main(["run", path, "--input", f"x={tmp_path / 'x.npy'}", "--input", f"cond={tmp_path / 'cond.npy'}"]) == 0
    out = capsys.readouterr().out
    picked = x[[0, 2]]
    assert f"picked: shape [2, 2], dtype float32, min {picked.min():.6g}, max {picked.max():.6g}" in out
    # A symbolic dim of a declared rank gets length 1 in a random input.
    assert main(["run", path, "--input", f"x={tmp_path / 'x.npy'}", "--jit", "--size-hint", "picked=3"]) == 0
    out = capsys.readouterr().out
    assert "input cond: shape [1], dtype bool (random)" in out and "picked: shape [3, 2], dtype float32" in out


def test_check_names_unnamed_nodes_like_the_interpreter_and_counts_unsupported_ops(tmp_path, capsys):
    path = _save(
        tmp_path,
        [
            helper.make_node("Shrink", ["x"], ["a"]),
            helper.make_node("Flatten", ["a"], ["f"]),
            helper.make_node("Shrink", ["f"], ["b"]),
            helper.make_node("Celu", ["b"], ["y"], name="dense"),
        ],
        [vi("x", TensorProto.FLOAT, [2, 2])],
        [vi("y", TensorProto.FLOAT, [2, 2])],
    )
    assert main(["check", path]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^  Flatten_1\s+Flatten\s+Flatten-21\s+supported$", out, flags=re.MULTILINE)
    assert re.search(r"^  Shrink_0\s+Shrink\s+-\s+NOT supported", out, flags=re.MULTILINE)
    assert re.search(r"^  dense\s+Celu\s+-\s+NOT supported", out, flags=re.MULTILINE)
    assert "3 node(s) not supported; unsupported: Shrink (2 nodes), Celu (1 node)\n" in out
    # The interpreter names the same nodes the same way.
    with pytest.raises(jaxonnx.UnsupportedOpError, match=r"node 'Shrink_0' \(Shrink\).*node 'Shrink_2' \(Shrink\)"):
        jaxonnx.load(path)


def test_a_closed_pipe_ends_the_command_without_a_traceback():
    with subprocess.Popen(
        [sys.executable, "-m", "jaxonnx"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        first_line = process.stdout.readline()
        process.stdout.close()  # like `python -m jaxonnx | head -1`
        stderr = process.stderr.read()
        process.wait(timeout=120)
    assert first_line.startswith("Loaded the bundled demo")
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
