"""The ``jaxonnx`` command line, through ``jaxonnx.cli.main`` (and once as ``python -m jaxonnx``)."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import jaxonnx
from jaxonnx._demo import DEMO_PATH, make_demo_model
from jaxonnx.cli import main

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
    # The input and the constants are printed, so that y can be checked by hand.
    assert "x = jnp.arange(24, dtype=jnp.float32).reshape(4, 6):\n   [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]\n" in out
    assert "   [18.0, 19.0, 20.0, 21.0, 22.0, 23.0]\n" in out
    assert "  indices = [[2, 0, 1], [1, 1, 0], [0, 2, 2], [2, 1, 0]]\n" in out
    assert "  rows = [True, False, True, True]\n" in out
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
    # Compilation is timed apart from the run.
    assert re.search(r"jax\.jit: traced and lowered in [\d.]+ ms, compiled in [\d.]+ ms; ran in [\d.]+ ms", out)
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
    # The summary leaves the padding row out, and says how many rows are real.
    assert "picked: shape [3, 2], dtype float32, size hint 3: 2 real rows + 1 padding, min " in out
    x = np.random.default_rng(0).standard_normal((4, 2)).astype(np.float32)[[0, 2]].astype(np.float64)
    assert f"min {x.min():.6g}, max {x.max():.6g}, mean {x.mean():.6g} (of the real entries)" in out
    np.save(tmp_path / "all.npy", np.ones(4, bool))
    assert main(["run", path, "--input", f"cond={tmp_path / 'all.npy'}", "--jit", "--size-hint", "picked=3"]) == 1
    # The host callback's traceback is not shown: the first line is jaxonnx's message.
    err = capsys.readouterr().err
    first_line = err.splitlines()[0]
    # It names the output, and the hint that fits.
    assert first_line.startswith("jaxonnx: error: The size-hinted output 'picked' (node 'pick') overflowed: Compress")
    assert "selected 4 slices at run time but its output was given size=3" in first_line
    assert "`--size-hint picked=4` or more" in first_line and "size_hints" not in err
    assert "Traceback" not in err and len(err.splitlines()) == 2
    assert err.splitlines()[1] == (
        "jaxonnx: note: the model ran on made-up inputs: x [4, 2] was random. Give real inputs with "
        "`--input NAME=FILE.npy`, or set the dims with `--dim NAME=N`, or whole shapes with `--shape INPUT=D1,D2,...`."
    )


def test_run_refuses_bad_arguments_without_a_traceback(tmp_path, capsys):
    path = _compress_model(tmp_path)
    # Malformed options exit with 2, like argparse's own usage errors.
    assert main(["run", path, "--input", "cond"]) == 2
    assert "--input needs NAME=FILE.npy, got 'cond'" in capsys.readouterr().err
    assert main(["run", path, "--size-hint", "picked=many"]) == 2
    assert "--size-hint needs NAME=N with a non-negative integer N, got 'picked=many'" in capsys.readouterr().err
    assert main(["run", path, "--size-hint", "picked"]) == 2
    assert "--size-hint needs NAME=N, got 'picked'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as argparse_exit:
        main(["run", path, "--no-such-option"])
    assert argparse_exit.value.code == 2
    capsys.readouterr()
    assert main(["run", path, "--input", f"cond={tmp_path / 'missing.npy'}"]) == 1
    assert "jaxonnx: error: Cannot read --input cond=" in capsys.readouterr().err
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
    assert "The input 'words' is a string tensor" in capsys.readouterr().err


def test_check_a_supported_model(capsys):
    assert main(["check", DEMO_PATH]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    # The summary comes first: the node and op counts, then what is unsupported.
    assert lines[:4] == [
        f"{DEMO_PATH}: opset ai.onnx 21; 10 nodes, 6 op types",
        "ops: Constant 5, Compress 1, Flatten 1, GatherElements 1, Slice 1, Where 1",
        "all nodes supported",
        "",
    ]
    assert re.match(r"  node\s+op\s+resolved\s+status$", lines[4])
    assert re.search(r"permute_rows\s+GatherElements\s+GatherElements-13\s+supported", out)
    assert len(lines) == 15


def test_check_an_unsupported_model(tmp_path, capsys):
    path = _save(
        tmp_path,
        [
            helper.make_node("Flatten", ["x"], ["f"], name="flat"),
            helper.make_node("Shrink", ["f"], ["s"], name="shrink"),
            helper.make_node("Frobnicate", ["s"], ["y"], name="decode"),
        ],
        [vi("x", TensorProto.FLOAT, [2, 3])],
        [vi("y", TensorProto.FLOAT, [2, 3])],
    )
    assert main(["check", path]) == 1
    out = capsys.readouterr().out
    assert re.search(r"flat\s+Flatten\s+Flatten-21\s+supported", out)
    # An op jaxonnx does not register but onnx defines with a function body runs through it.
    shrink_registered = "Shrink" in jaxonnx.supported_ops()
    assert re.search(
        r"shrink\s+Shrink\s+Shrink-9"
        + ("\\s+supported$" if shrink_registered else " \\(body\\)\\s+supported \\(onnx's function body\\)"),
        out,
        flags=re.MULTILINE,
    )
    assert re.search(r"decode\s+Frobnicate\s+-\s+NOT supported: jaxonnx does not implement this op", out)
    assert out.splitlines()[2] == "NOT supported: 1 of 3 nodes; Frobnicate (1 node)"
    supported = ", ".join(jaxonnx.supported_ops())
    tail = out[out.index("jaxonnx supports in ai.onnx: ") :]
    assert " ".join(tail.split()) == f"jaxonnx supports in ai.onnx: {supported}" and out.count("Compress") == 1


def test_check_refuses_unreadable_files(tmp_path, capsys):
    (tmp_path / "junk.onnx").write_bytes(b"\x00\xffjunk")
    assert main(["check", str(tmp_path / "junk.onnx")]) == 1
    assert "jaxonnx: error: '" in (err := capsys.readouterr().err) and "is not a valid ONNX model" in err
    assert main(["check", str(tmp_path / "none.onnx")]) == 1
    assert "Cannot read the ONNX model" in capsys.readouterr().err


def test_python_dash_m_jaxonnx_runs_the_demo():
    result = subprocess.run([sys.executable, "-m", "jaxonnx"], capture_output=True, text=True, timeout=120, check=False)
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
    assert re.search(r"pick\s+Compress\s+Compress-11\s+supported", out) and "all nodes supported" in out
    # A random input needs a shape: the error names the input and the option that gives one.
    assert main(["run", path]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "The input 'x' is declared without a shape" in captured.err
    assert "`--input x=FILE.npy`, or its shape with `--shape x=D1,D2,...`" in captured.err
    # --shape gives it one; the condition's dim n is then 1 by default, shorter than the axis.
    assert main(["run", path, "--shape", "x=3,2"]) == 0
    assert "input x: shape [3, 2], dtype float32 (random)" in capsys.readouterr().out
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
    assert "symbolic dims: n=1 (not given: 1)" in out and "note: dims not given were set to 1" in out


def test_check_names_unnamed_nodes_like_the_interpreter_and_counts_unsupported_ops(tmp_path, capsys):
    path = _save(
        tmp_path,
        [
            helper.make_node("Frobnicate", ["x"], ["a"]),
            helper.make_node("Flatten", ["a"], ["f"]),
            helper.make_node("Frobnicate", ["f"], ["b"]),
            helper.make_node("Defrobnicate", ["b"], ["y"], name="dense"),
        ],
        [vi("x", TensorProto.FLOAT, [2, 2])],
        [vi("y", TensorProto.FLOAT, [2, 2])],
    )
    assert main(["check", path]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^  Flatten_1\s+Flatten\s+Flatten-21\s+supported$", out, flags=re.MULTILINE)
    assert re.search(r"^  Frobnicate_0\s+Frobnicate\s+-\s+NOT supported", out, flags=re.MULTILINE)
    assert re.search(r"^  dense\s+Defrobnicate\s+-\s+NOT supported", out, flags=re.MULTILINE)
    assert "NOT supported: 3 of 4 nodes; Frobnicate (2 nodes), Defrobnicate (1 node)\n" in out
    # The interpreter names the same nodes the same way.
    with pytest.raises(
        jaxonnx.UnsupportedOpError, match=r"node 'Frobnicate_0' \(Frobnicate\).*node 'Frobnicate_2' \(Frobnicate\)"
    ):
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


# --------------------------------------------------------------------------- symbolic dims


def _detector(tmp_path):
    """images [batch, 3, height, width] and mask [batch, 1, height, width] concatenated, then
    reshaped into triples: with every dim 1 the 4 values do not split into threes."""
    constant = lambda name, values: onnx.numpy_helper.from_array(np.array(values, np.int64), name)  # noqa: E731
    graph = helper.make_graph(
        [
            helper.make_node("Concat", ["images", "mask"], ["cat"], name="cat", axis=1),
            helper.make_node("Reshape", ["cat", "triples"], ["rows"], name="triples"),
            helper.make_node("Concat", ["rows", "prior"], ["y"], name="with_prior", axis=1),
        ],
        "detector",
        [
            vi("images", TensorProto.FLOAT, ["batch", 3, "height", "width"]),
            vi("mask", TensorProto.FLOAT, ["batch", 1, "height", "width"]),
            vi("prior", TensorProto.FLOAT, ["batch", 2, 3]),
        ],
        [vi("y", TensorProto.FLOAT, ["batch", "n", 3])],
        initializer=[constant("triples", [0, -1, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    path = tmp_path / "detector.onnx"
    onnx.save(model, path)
    return str(path)


def test_symbolic_dims_default_to_1_and_say_so_and_a_failure_says_the_inputs_were_made_up(tmp_path, capsys):
    path = _detector(tmp_path)
    assert main(["run", path]) == 1
    captured = capsys.readouterr()
    assert "input images: shape [1, 3, 1, 1], dtype float32 (random)" in captured.out
    assert "symbolic dims: batch=1 (not given: 1), height=1 (not given: 1), width=1 (not given: 1)" in captured.out
    assert "note: dims not given were set to 1; set them with `--dim NAME=N`" in captured.out
    error, note = captured.err.splitlines()
    assert error.startswith("jaxonnx: error: Node 'triples' (Reshape-21") and "cannot reshape" in error
    assert note == (
        "jaxonnx: note: the model ran on made-up inputs: images [1, 3, 1, 1], mask [1, 1, 1, 1], prior [1, 2, 3] "
        "were random; the symbolic dims batch=1, height=1, width=1 were not given and set to 1. Give real inputs "
        "with `--input NAME=FILE.npy`, or set the dims with `--dim NAME=N`, or whole shapes with "
        "`--shape INPUT=D1,D2,...`."
    )


def test_dims_by_name_are_shared_by_every_input_that_has_them(tmp_path, capsys):
    path = _detector(tmp_path)
    assert main(["run", path, "--dim", "batch=2", "--dim", "height=3", "--jit"]) == 0
    out = capsys.readouterr().out
    assert "input images: shape [2, 3, 3, 1], dtype float32 (random)" in out
    assert "input mask: shape [2, 1, 3, 1], dtype float32 (random)" in out
    assert "input prior: shape [2, 2, 3], dtype float32 (random)" in out
    assert "symbolic dims: batch=2 (--dim), height=3 (--dim), width=1 (not given: 1)" in out
    assert "y: shape [2, 6, 3], dtype float32" in out  # 4 * 3 / 3 rows, then the 2 prior rows


def test_a_whole_shape_or_a_given_input_decides_the_dims_it_holds(tmp_path, capsys):
    path = _detector(tmp_path)
    assert main(["run", path, "--shape", "images=1,3,2,3"]) == 0
    out = capsys.readouterr().out
    assert "input mask: shape [1, 1, 2, 3], dtype float32 (random)" in out
    assert "batch=1 (from --shape images), height=2 (from --shape images), width=3 (from --shape images)" in out
    assert "note: dims not given" not in out
    np.save(tmp_path / "mask.npy", np.ones((2, 1, 3, 2), np.float32))
    assert main(["run", path, "--input", f"mask={tmp_path / 'mask.npy'}"]) == 0
    out = capsys.readouterr().out
    assert "input images: shape [2, 3, 3, 2], dtype float32 (random)" in out
    assert "y: shape [2, 10, 3]" in out
    assert main(["run", path, "--input", f"mask={tmp_path / 'mask.npy'}", "--dim", "batch=3"]) == 2
    assert (
        "The symbolic dim 'batch' is 3 from --dim but 2 from --input mask; give it one length."
        in capsys.readouterr().err
    )


def test_batch_sets_the_first_dim_of_inputs_whose_first_dim_is_not_fixed(tmp_path, capsys):
    path = _save(
        tmp_path,
        [helper.make_node("Add", ["a", "b"], ["y"], name="add")],
        [vi("a", TensorProto.FLOAT, ["N", 3]), vi("b", TensorProto.FLOAT, [None, 3])],
        [vi("y", TensorProto.FLOAT, [None, 3])],
    )
    assert main(["run", path, "--batch", "4"]) == 0
    out = capsys.readouterr().out
    assert "input a: shape [4, 3]" in out and "input b: shape [4, 3]" in out
    assert "symbolic dims: N=4 (from --batch)" in out and "note:" not in out
    # Without it, the unknown dim is set to 1 and named.
    assert main(["run", path, "--dim", "N=1"]) == 0
    assert "note: dims not given were set to 1; input 'b' dim 0 (unknown) set to 1;" in capsys.readouterr().out


def test_dim_and_shape_options_are_checked(tmp_path, capsys):
    path = _detector(tmp_path)
    for args, message in [
        (
            ["--dim", "heigth=3"],
            "--dim names 'heigth', which no input of the model has as a symbolic dim; "
            "its symbolic dims are batch, height, width.",
        ),
        (["--dim", "height=-1"], "--dim needs NAME=N with a non-negative integer N, got 'height=-1'."),
        (
            ["--shape", "images=1,3,640"],
            "--shape images=1,3,640 does not fit the input's declared shape [batch, 3, height, width].",
        ),
        (["--shape", "images=1,4,2,2"], "does not fit the input's declared shape"),
        (["--shape", "images=1,x"], "--shape needs NAME=D1,D2,... with non-negative integers"),
        (["--shape", "picture=1"], "--shape names 'picture', which is not an input of the model"),
        (
            ["--dim", "height=2", "--shape", "images=1,3,4,4"],
            "The symbolic dim 'height' is 2 from --dim but 4 from --shape images; give it one length.",
        ),
        (["--dim", "batch=2", "--batch", "3"], "The symbolic dim 'batch' is 2 from --dim but 3 from --batch"),
    ]:
        assert main(["run", path, *args]) == 2, args
        captured = capsys.readouterr()
        assert message in captured.err and captured.out == "", (args, captured.err)


# --------------------------------------------------------------------------- --input files


def test_an_input_file_that_is_not_a_npy_file_says_so(tmp_path, capsys):
    path = _compress_model(tmp_path)
    (tmp_path / "cond.txt").write_text("1 0 1 0\n")
    assert main(["run", path, "--input", f"cond={tmp_path / 'cond.txt'}"]) == 1
    assert capsys.readouterr().err == (
        f"jaxonnx: error: Cannot read --input cond={tmp_path / 'cond.txt'}: it is not a .npy file "
        "(save arrays with `numpy.save`).\n"
    )
    np.savez(tmp_path / "both.npz", cond=np.ones(4, bool))
    assert main(["run", path, "--input", f"cond={tmp_path / 'both.npz'}"]) == 1
    assert "it is an .npz archive; give each array as a .npy file" in capsys.readouterr().err
    np.save(tmp_path / "objects.npy", np.array([True, None], dtype=object), allow_pickle=True)
    assert main(["run", path, "--input", f"cond={tmp_path / 'objects.npy'}"]) == 1
    assert "it holds Python objects (a .npy of dtype object)" in capsys.readouterr().err


# --------------------------------------------------------------------------- size hints


def test_size_hinted_outputs_are_summarized_over_their_real_entries(tmp_path, capsys):
    # Compress pads with zeros, so a selected row of zeros must still count as real:
    # the real length comes from the condition, not from the output.
    path = _save(
        tmp_path,
        [
            helper.make_node("Compress", ["x", "cond"], ["picked"], name="pick", axis=0),
            helper.make_node("NonZero", ["x"], ["where"], name="nz"),
        ],
        [vi("x", TensorProto.FLOAT, [4, 2]), vi("cond", TensorProto.BOOL, [4])],
        [vi("picked", TensorProto.FLOAT, ["n", 2]), vi("where", TensorProto.INT64, [2, "k"])],
    )
    x = np.array([[1, 2], [3, -4], [0, 0], [0, 5]], np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "cond.npy", np.array([True, False, True, False]))
    inputs = ["--input", f"x={tmp_path / 'x.npy'}", "--input", f"cond={tmp_path / 'cond.npy'}"]
    for jit in ([], ["--jit"]):
        assert main(["run", path, *inputs, *jit, "--size-hint", "picked=3", "--size-hint", "where=8"]) == 0
        out = capsys.readouterr().out
        assert (
            "picked: shape [3, 2], dtype float32, size hint 3: 2 real rows + 1 padding, min 0, max 2, mean 0.75 (of the real entries)"
            in out
        )
        columns = np.array(np.nonzero(x)).astype(np.float64)
        assert (
            f"where: shape [2, 8], dtype int64, size hint 8: 5 real columns + 3 padding, min 0, max "
            f"{columns.max():.6g}, mean {columns.mean():.6g} (of the real entries)"
        ) in out


def test_an_overflowing_nonzero_hint_names_its_output(tmp_path, capsys):
    path = _save(
        tmp_path,
        [helper.make_node("NonZero", ["x"], ["where"], name="nz")],
        [vi("x", TensorProto.FLOAT, [6])],
        [vi("where", TensorProto.INT64, [1, "k"])],
    )
    np.save(tmp_path / "x.npy", np.arange(6, dtype=np.float32))
    assert main(["run", path, "--input", f"x={tmp_path / 'x.npy'}", "--jit", "--size-hint", "where=2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("jaxonnx: error: The size-hinted output 'where' (node 'nz') overflowed: NonZero found 5")
    assert "`--size-hint where=5` or more" in err and len(err.splitlines()) == 1  # the input was given
    # Eagerly, the interpreter names the node; the command adds its output and the option.
    assert main(["run", path, "--input", f"x={tmp_path / 'x.npy'}", "--size-hint", "where=2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("jaxonnx: error: Node 'nz' (NonZero-13")
    assert err.endswith("Give its output 'where' a larger size hint: `--size-hint where=5` or more.\n")


# --------------------------------------------------------------------------- check


def _branch(name, nodes, output):
    return helper.make_graph(nodes, name, [], [vi(output, TensorProto.FLOAT, [2])])


def test_check_counts_the_nodes_of_subgraphs_with_their_paths(tmp_path, capsys):
    # A voice detector's shape: one If at the top, its branches hold more If and LSTM nodes.
    inner_then = _branch(
        "inner_then",
        [
            helper.make_node("Frobnicateur", ["x"], ["h"]),
            helper.make_node("Relu", ["h"], ["r1"]),
        ],
        "r1",
    )
    inner_else = _branch("inner_else", [helper.make_node("Neg", ["x"], ["n"])], "n")
    then_branch = _branch(
        "then",
        [
            helper.make_node("Abs", ["x"], ["a"], name="abs"),
            helper.make_node("If", ["c"], ["t"], then_branch=inner_then, else_branch=inner_else),
        ],
        "t",
    )
    else_branch = _branch("else", [helper.make_node("Identity", ["x"], ["e"])], "e")
    path = _save(
        tmp_path,
        [
            helper.make_node("If", ["c"], ["y0"], then_branch=then_branch, else_branch=else_branch),
            helper.make_node("Flatten", ["y0"], ["y"], name="flat", axis=0),
        ],
        [vi("c", TensorProto.BOOL, []), vi("x", TensorProto.FLOAT, [2])],
        [vi("y", TensorProto.FLOAT, [1, 2])],
    )
    assert main(["check", path]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].endswith("m.onnx: opset ai.onnx 21; 2 nodes and 6 more in subgraphs, 7 op types")
    assert lines[1] == "ops: If 2, Abs 1, Flatten 1, Frobnicateur 1, Identity 1, Neg 1, Relu 1"
    assert lines[2] == "NOT supported: 1 of 8 nodes; Frobnicateur (1 node, 1 in subgraphs)"
    rows = [line.split()[:3] for line in lines[5:13]]
    assert rows == [
        ["If_0", "If", "If-21"],
        ["/If_0/else_branch/Identity_0", "Identity", "Identity-21"],
        ["/If_0/then_branch/abs", "Abs", "Abs-13"],
        ["/If_0/then_branch/If_1", "If", "If-21"],
        ["/If_0/then_branch/If_1/else_branch/Neg_0", "Neg", "Neg-13"],
        ["/If_0/then_branch/If_1...n_branch/Frobnicateur_0", "Frobnicateur", "-"],  # the middle elided
        ["/If_0/then_branch/If_1/then_branch/Relu_1", "Relu", "Relu-14"],
        ["flat", "Flatten", "Flatten-21"],
    ]
    assert lines[13].startswith("jaxonnx supports in ai.onnx: ")
    # It did not load the model: the interpreter refuses it.
    with pytest.raises(jaxonnx.UnsupportedOpError, match=r"node '/If_0/then_branch/If_1/then_branch/Frobnicateur_0'"):
        jaxonnx.load(path)


def test_check_keeps_its_columns_for_long_names(tmp_path, capsys):
    long_name = "/model/backbone/stage3/block7/attention/output_projection/" + "x" * 40 + "/Flatten"
    path = _save(
        tmp_path,
        [helper.make_node("Flatten", ["x"], ["f"], name=long_name), helper.make_node("Relu", ["f"], ["y"], name="r")],
        [vi("x", TensorProto.FLOAT, [2, 3])],
        [vi("y", TensorProto.FLOAT, [2, 3])],
    )
    assert main(["check", path]) == 0
    out = capsys.readouterr().out
    # Exporters name top-level nodes with a leading "/": that is no subgraph.
    assert out.splitlines()[0].endswith(": opset ai.onnx 21; 2 nodes, 2 op types")
    table = out.splitlines()[4:]
    # The middle of the long name gives way; both ends stay, and the columns line up.
    assert table[1] == "  /model/backbone/stage3...xxxxxxxxxxxxxxx/Flatten  Flatten  Flatten-21  supported"
    assert len({line.index("supported") for line in table[1:]}) == 1
    assert table[0].index("status") == table[1].index("supported")


# --------------------------------------------------------------------------- --version and bench


def test_version_names_jaxonnx_jax_and_onnx(capsys):
    import jax
    import onnxruntime

    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"jaxonnx {jaxonnx.__version__} (jax {jax.__version__}, jaxlib ")
    assert f"onnx {onnx.__version__}" in out and f"onnxruntime {onnxruntime.__version__}" in out


def test_bench_times_the_jitted_model_beside_onnxruntime_and_checks_the_outputs(tmp_path, capsys):
    path = _detector(tmp_path)
    assert main(["bench", path, "--batch", "2", "--dim", "height=3", "--dim", "width=2", "--repeat", "3"]) == 0
    out = capsys.readouterr().out
    assert "input images: shape [2, 3, 3, 2], dtype float32 (random)" in out
    assert re.search(
        r"^jaxonnx: load [\d.]+ ms, trace and lower [\d.]+ ms, compile [\d.]+ ms$", out, flags=re.MULTILINE
    )
    assert re.search(
        r"^jaxonnx, jax\.jit on cpu: median [\d.]+ ms per call over 3 calls \(min", out, flags=re.MULTILINE
    )
    assert re.search(
        r"^onnxruntime, CPUExecutionProvider: median [\d.]+ ms per call over 3 calls", out, flags=re.MULTILINE
    )
    assert re.search(r"^ratio onnxruntime / jaxonnx median time: [\d.]+ ", out, flags=re.MULTILINE)
    assert re.search(
        r"^  y: pass: max abs diff 0, max rel diff 0 \(rtol 0.0001, atol 1e-05 for float32\)$", out, flags=re.MULTILINE
    )
    assert out.endswith("outputs agree\n")


def test_bench_compares_the_real_rows_of_size_hinted_outputs(tmp_path, capsys):
    path = _compress_model(tmp_path)
    np.save(tmp_path / "cond.npy", np.array([False, True, True, False]))
    args = ["bench", path, "--input", f"cond={tmp_path / 'cond.npy'}", "--size-hint", "picked=4", "--repeat", "1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert (
        "  picked: pass: max abs diff 0, max rel diff 0 (rtol 0.0001, atol 1e-05 for float32), size hint 4: 2 real rows + 2 padding"
        in out
    )


def test_bench_without_onnxruntime_times_jaxonnx_alone(tmp_path, capsys, monkeypatch):
    from jaxonnx.cli import bench

    monkeypatch.setattr(bench, "_onnxruntime", lambda: None)
    assert main(["bench", DEMO_PATH, "--repeat", "2", "--warmup", "0"]) == 0
    out = capsys.readouterr().out
    assert "onnxruntime: not installed (pip install onnxruntime), so no comparison" in out
    assert "y: shape [1, 9], dtype float32" in out
    assert main(["bench", DEMO_PATH, "--repeat", "0"]) == 2
    assert "--repeat needs N >= 1" in capsys.readouterr().err


def test_bench_fails_when_the_outputs_differ(capsys, monkeypatch):
    import types

    from jaxonnx.cli import bench

    class Session:  # an onnxruntime whose demo output is off by 0.01 in one entry
        def __init__(self, path, options, providers):
            self.providers = providers

        def get_providers(self):
            return ["CPUExecutionProvider"]

        def get_outputs(self):
            return [types.SimpleNamespace(name="y")]

        def run(self, names, feed):
            (y,) = jaxonnx.load(DEMO_PATH)(feed["x"])
            y = np.array(y)
            y[0, 4] += 0.01
            return [y]

    fake = types.SimpleNamespace(
        __version__="0.0-test",
        get_available_providers=lambda: ["CPUExecutionProvider"],
        SessionOptions=types.SimpleNamespace,
        InferenceSession=Session,
    )
    monkeypatch.setattr(bench, "_onnxruntime", lambda: fake)
    assert main(["bench", DEMO_PATH, "--repeat", "1"]) == 1
    out = capsys.readouterr().out
    assert re.search(
        r"^  y: FAIL: max abs diff 0\.01\d*, max rel diff [\d.e-]+ \(rtol 0\.0001, atol 1e-05 for float32\)$",
        out,
        flags=re.MULTILINE,
    ), out
    assert out.endswith("outputs DIFFER from onnxruntime's\n")
    # A looser tolerance passes.
    assert main(["bench", DEMO_PATH, "--repeat", "1", "--atol", "0.02"]) == 0
    assert "  y: pass: max abs diff 0.01" in capsys.readouterr().out


def test_run_on_a_paddle_style_model_with_negative_and_placeholder_dims(tmp_path, capsys):
    # paddle2onnx declares `x: [-1, 3, '?', '?']`: every one of them an unknown dim.
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "paddle_like",
        [vi("x", TensorProto.FLOAT, [-1, 3, "?", "?"])],
        [vi("y", TensorProto.FLOAT, [-1, 3, -1, -1])],
    )
    path = str(tmp_path / "neg.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]), path)
    assert main(["run", path, "--shape", "x=1,3,48,192"]) == 0
    out = capsys.readouterr().out
    assert "input x: shape [1, 3, 48, 192]" in out and "y: shape [1, 3, 48, 192]" in out
    assert main(["run", path]) == 0
    assert "x: tensor(float)[?, 3, ?, ?]" in capsys.readouterr().out


@pytest.mark.parametrize("hint", [1, 2])
def test_a_size_hint_too_small_overflows_under_jit_at_every_size(hint, capsys):
    """Issue 41 §8: a hint of 1 (its NonZero output transposed to index rows) was taken for
    padding reaching GatherND's coordinates; every hint below the real count overflows."""
    path = "tests/fixtures/models/indexing_dynamo_dynamic.onnx"
    assert main(["run", path, "--jit", "--size-hint", f"val_75={hint}"]) == 1
    first_line = capsys.readouterr().err.splitlines()[0]
    assert first_line.startswith("jaxonnx: error: The size-hinted output 'val_75' (node 'node_NonZero_75') overflowed")
    assert f"given size={hint}" in first_line and "`--size-hint val_75=5` or more" in first_line
    assert main(["run", path, "--jit", "--size-hint", "val_75=5"]) == 0


def test_check_and_run_name_an_unsupported_contrib_op_alike_and_list_its_domain(tmp_path, capsys):
    """Issue 41 §8: the listing of supported ops is the unsupported op's domain's, near names
    first, and `run` and `check` both name the op domain-qualified."""
    graph = helper.make_graph(
        [helper.make_node("SkipLayerNormalisation", ["x"], ["y"], name="norm", domain="com.microsoft")],
        "g",
        [vi("x", TensorProto.FLOAT, [2])],
        [vi("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 10
    path = str(tmp_path / "contrib.onnx")
    onnx.save(model, path)
    assert main(["check", path]) == 1
    out = capsys.readouterr().out
    assert "com.microsoft.SkipLayerNormalisation (1 node)" in out
    assert re.search(r"near names in com.microsoft: [^\n]*\bSkipLayerNormalization\b", out)
    listing = out.split("jaxonnx supports in com.microsoft: ")[1]
    assert "GroupQueryAttention" in listing and " Conv," not in listing and "Abs," not in out and "ai.onnx:" not in out
    assert main(["run", path]) == 1
    assert "(com.microsoft.SkipLayerNormalisation): not supported" in capsys.readouterr().err
