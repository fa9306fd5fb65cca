"""Writes the tutorial notebooks in this folder from the cells below.

The notebooks are generated so that a change to a tutorial is reviewed here, as plain
Python, and the committed ``.ipynb`` files never carry outputs. After editing, run

    python notebooks/_build.py

and commit both this file and the notebooks. ``tests/test_notebooks.py`` checks that the
committed notebooks are exactly what this script writes, and executes each of them.
"""

from __future__ import annotations

import os
import sys
import textwrap

import nbformat
from nbformat import v4

HERE = os.path.dirname(os.path.abspath(__file__))


def _cells(stem: str, cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = v4.new_notebook()
    for index, (kind, source) in enumerate(cells):
        source = textwrap.dedent(source).strip("\n")
        cell = v4.new_markdown_cell(source) if kind == "md" else v4.new_code_cell(source)
        cell["id"] = f"{stem[:2]}-{index:02d}"  # stable ids: regenerating gives no diff
        nb.cells.append(cell)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    return nb


def md(source: str) -> tuple[str, str]:
    return ("md", source)


def code(source: str) -> tuple[str, str]:
    return ("code", source)


# --------------------------------------------------------------------------- 01 quickstart

QUICKSTART = [
    md(
        """
        # jaxonnx quickstart

        jaxonnx implements the ONNX operators Compress, Flatten, GatherElements, Where and
        Slice as exact, differentiable, `jax.jit`-compilable JAX functions, keeps every
        ONNX version of them in a registry, and runs whole ONNX graphs built from them.

        This notebook shows the ops, the registry, and an ONNX model built with
        `onnx.helper`, loaded with `jaxonnx.load`, run eagerly and under `jax.jit`, and
        checked against onnxruntime.

        **64-bit types.** jaxonnx never changes JAX's configuration. JAX starts with 32-bit
        types, and jaxonnx refuses (rather than silently narrows) a 64-bit value that would
        have to become a JAX array. These notebooks therefore use float32 data; the int64
        tensors ONNX requires (Slice bounds, GatherElements indices) are Constant nodes or
        initializers, which stay exact numpy values. A model with an int64 *graph input*
        needs `jax.config.update("jax_enable_x64", True)` at the top of the program.
        """
    ),
    code(
        """
        import jax
        import jax.numpy as jnp
        import numpy as np
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper

        import jaxonnx

        print("jaxonnx", jaxonnx.__version__, "| jax", jax.__version__, "| onnx", onnx.__version__,
              "| onnxruntime", ort.__version__, "| x64:", jax.config.jax_enable_x64)
        """
    ),
    md(
        """
        ## The ops

        `jaxonnx.ops` has one function per op, with the semantics of the op's newest ONNX
        version. Inputs are JAX or numpy arrays; attributes are keyword arguments.
        """
    ),
    code(
        """
        x = jnp.arange(12.0).reshape(3, 4)
        print("flatten(axis=0):", jaxonnx.ops.flatten(x, axis=0).shape)
        print("gather_elements(axis=1):")
        print(jaxonnx.ops.gather_elements(x, jnp.array([[3, 0], [1, 1], [-1, 2]]), axis=1))
        print("where:")
        print(jaxonnx.ops.where(x % 2 == 0, x, -x))
        """
    ),
    md(
        """
        ### Slice follows the ONNX text, not numpy

        ONNX Slice-13 clamps bounds differently from Python slicing. With a negative step,
        a start below `-dim` is clamped to `0` (the first element), while numpy treats it
        as "before the beginning" and selects nothing:
        """
    ),
    code(
        """
        v = np.arange(5, dtype=np.float32)
        print("ONNX Slice starts=-10, ends=-20, steps=-1:", jaxonnx.ops.slice(v, starts=[-10], ends=[-20], steps=[-1]))
        print("numpy v[-10:-20:-1]:                     ", v[-10:-20:-1])
        # The Python slice that selects what ONNX selects, for an axis of size 5:
        print("slice_bounds:", jaxonnx.ops.slice_bounds(5, -10, -20, -1))
        """
    ),
    md(
        """
        Ends beyond the int64 range are clamped too, so the ONNX idiom "to the beginning"
        (`ends=INT64_MIN` with a negative step) works:
        """
    ),
    code(
        """
        print(jaxonnx.ops.slice(jnp.arange(10), starts=[8], ends=[-2**63], steps=[-3]))
        """
    ),
    md(
        """
        ## The registry

        Every ONNX version (`since_version`) of each op is registered. `get_op(op, opset)`
        resolves the way ONNX does: a model with opset *N* runs the newest version whose
        `since_version` is at most *N*. Slice has versions 1, 10, 11 and 13, so a model
        with opset 12 runs Slice-11:
        """
    ),
    code(
        """
        print(jaxonnx.get_op("Slice", 12).name)
        print(jaxonnx.get_op("Slice", 13).name)
        print(jaxonnx.get_op("Flatten", 22).name)
        for op, versions in jaxonnx.supported_ops().items():
            print(f"{op:15} {versions}")
        """
    ),
    md("Asking for something that is not there lists what is:"),
    code(
        """
        for op, opset in [("Conv", 13), ("Slice", 0)]:
            try:
                jaxonnx.get_op(op, opset)
            except jaxonnx.UnsupportedOpError as e:
                print(f"{type(e).__name__}: {e}")
        """
    ),
    md(
        """
        ## An ONNX model

        A graph that uses all five ops: `x[4, 6]` → Slice (rows reversed, every other
        column; bounds from Constant nodes) → GatherElements (indices from an int64
        initializer) → Where (a bool initializer picks the gathered or the sliced value)
        → Compress (drops one row; the condition is a Constant) → Flatten.
        """
    ),
    code(
        """
        INT64_MIN = np.iinfo(np.int64).min


        def constant(name, array):
            return helper.make_node("Constant", [], [name], name=f"const_{name}",
                                    value=numpy_helper.from_array(array, name))


        nodes = [
            constant("starts", np.array([-1, 1], np.int64)),
            constant("ends", np.array([INT64_MIN, 6], np.int64)),
            constant("axes", np.array([0, 1], np.int64)),
            constant("steps", np.array([-1, 2], np.int64)),
            helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["sliced"],
                             name="reverse_rows_odd_columns"),
            helper.make_node("GatherElements", ["sliced", "indices"], ["gathered"], name="permute", axis=1),
            helper.make_node("Where", ["keep", "gathered", "sliced"], ["mixed"], name="mix"),
            constant("rows", np.array([True, True, False, True])),
            helper.make_node("Compress", ["mixed", "rows"], ["compressed"], name="drop_row_2", axis=0),
            helper.make_node("Flatten", ["compressed"], ["y"], name="flatten", axis=1),
        ]
        initializers = [
            numpy_helper.from_array(np.array([[2, 0, 1], [1, 1, 0], [0, 2, 2], [2, 1, 0]], np.int64), "indices"),
            numpy_helper.from_array(np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0], [1, 0, 0]], bool), "keep"),
        ]
        graph = helper.make_graph(
            nodes, "quickstart",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 3])],
            initializer=initializers,
        )
        # opset 13; an IR version that the installed onnxruntime reads (onnx's newest may be too new for it).
        onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
        onnx.checker.check_model(onnx_model, full_check=True)
        """
    ),
    code(
        """
        model = jaxonnx.load(onnx_model)  # also takes a path or the serialized bytes
        print(model)
        for name, op, version in model.describe_nodes():
            print(f"  {name:26} {version}")
        """
    ),
    md(
        """
        `model(*inputs)` returns a tuple with one array per graph output; `model.run(feed)`
        takes and returns dicts by name. `jax.jit(model)` traces the whole graph into one
        XLA computation: the Slice bounds, indices and conditions are known at trace time,
        so every shape is static.
        """
    ),
    code(
        """
        x = np.arange(24, dtype=np.float32).reshape(4, 6)
        (y_eager,) = model(x)
        (y_jit,) = jax.jit(model)(x)
        print(y_jit)
        print("eager == jit:", bool((y_eager == y_jit).all()))
        print("run():", {k: v.shape for k, v in model.run({"x": x}).items()})
        """
    ),
    md("### Against onnxruntime\n\nThe results are exactly equal, not just close:"),
    code(
        """
        session = ort.InferenceSession(onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])
        (y_ort,) = session.run(None, {"x": x})
        np.testing.assert_array_equal(np.asarray(y_jit), y_ort)
        print("jaxonnx == onnxruntime:", y_ort.shape, y_ort.dtype)
        """
    ),
    md("The Slice clamping case from above, as a one-node model, agrees with onnxruntime too:"),
    code(
        """
        slice_graph = helper.make_graph(
            [
                constant("s", np.array([-10], np.int64)),
                constant("e", np.array([-20], np.int64)),
                constant("a", np.array([0], np.int64)),
                constant("st", np.array([-1], np.int64)),
                helper.make_node("Slice", ["v", "s", "e", "a", "st"], ["out"]),
            ],
            "clamp",
            [helper.make_tensor_value_info("v", TensorProto.FLOAT, [5])],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1])],
        )
        slice_model = helper.make_model(slice_graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
        slice_session = ort.InferenceSession(slice_model.SerializeToString(), providers=["CPUExecutionProvider"])
        print("onnxruntime:  ", slice_session.run(None, {"v": v})[0])
        print("jaxonnx (jit):", jax.jit(jaxonnx.load(slice_model))(v)[0])
        print("numpy:        ", v[-10:-20:-1])
        """
    ),
]


# --------------------------------------------------------------------------- 02 gradients

GRADIENTS = [
    md(
        """
        # Gradients through Slice, GatherElements and Where

        Every jaxonnx op is differentiable, and so is a loaded model. Here an ONNX model's
        weight `w[4, 6]` (an initializer) reaches the output only through a Slice, a
        GatherElements and a Where. We fit `w` by plain gradient descent so that the model
        reproduces a target, using `model.params` (the float initializers) and
        `model.apply(params, *inputs)` (the model with those params swapped in).

        The data is float32 and the int64 Slice bounds and indices are Constants and
        initializers, which stay static numpy values, so JAX's default 32-bit mode is
        enough (see the quickstart).
        """
    ),
    code(
        """
        import io

        import jax
        import jax.numpy as jnp
        import numpy as np
        from IPython.display import Image, display
        from matplotlib.figure import Figure
        from onnx import TensorProto, helper, numpy_helper

        import jaxonnx
        """
    ),
    md(
        """
        ## The model

        `y = Where(mask, GatherElements(Slice(w), indices, axis=1), x)`: the Slice reverses
        the rows of `w` and keeps its odd columns, the gather permutes (and repeats) entries
        within each row, and where `mask` is false the output is the graph input `x`
        instead. Many entries of `w` never reach `y`.
        """
    ),
    code(
        """
        def constant(name, array):
            return helper.make_node("Constant", [], [name], name=f"const_{name}",
                                    value=numpy_helper.from_array(array, name))


        indices = np.array([[2, 0, 1], [1, 1, 0], [0, 2, 2], [2, 1, 0]], np.int64)
        mask = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1], [1, 0, 1]], bool)
        graph = helper.make_graph(
            [
                constant("starts", np.array([-1, 1], np.int64)),
                constant("ends", np.array([np.iinfo(np.int64).min, 6], np.int64)),
                constant("axes", np.array([0, 1], np.int64)),
                constant("steps", np.array([-1, 2], np.int64)),
                helper.make_node("Slice", ["w", "starts", "ends", "axes", "steps"], ["w_sliced"], name="slice_w"),
                helper.make_node("GatherElements", ["w_sliced", "indices"], ["w_gathered"], name="gather_w", axis=1),
                helper.make_node("Where", ["mask", "w_gathered", "x"], ["y"], name="mix"),
            ],
            "fit_through_gather",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])],
            initializer=[
                numpy_helper.from_array(np.zeros((4, 6), np.float32), "w"),  # the weights to fit, start at 0
                numpy_helper.from_array(indices, "indices"),
                numpy_helper.from_array(mask, "mask"),
            ],
        )
        model = jaxonnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
        print(model)
        print("params:", {k: v.shape for k, v in model.params.items()}, "(indices and mask are int/bool: not params)")
        """
    ),
    md(
        """
        Which entries of `w` reach the output, and how often? The gradient of `sum(y)` with
        respect to `w` counts it exactly: 0 where an entry is sliced away, gathered by no
        index or masked out by Where, 2 where it is gathered twice.
        """
    ),
    code(
        """
        rng = np.random.default_rng(0)
        x = rng.normal(size=(4, 3)).astype(np.float32)
        uses = jax.grad(lambda w: model.apply({"w": w}, x)[0].sum())(model.params["w"])
        print(np.asarray(uses).astype(int))
        """
    ),
    md(
        """
        ## Fitting

        The target is what the model gives for some "true" weights. The loss is the mean
        squared error; `jax.jit(jax.value_and_grad(loss))` compiles the model, its gradient
        and the loss into one function.
        """
    ),
    code(
        """
        w_true = rng.normal(size=(4, 6)).astype(np.float32)
        (target,) = model.apply({"w": w_true}, x)


        def loss(params, x, target):
            (y,) = model.apply(params, x)
            return jnp.mean((y - target) ** 2)


        loss_and_grad = jax.jit(jax.value_and_grad(loss))
        params = model.params
        learning_rate = 1.0
        losses = []
        for step in range(100):
            value, grads = loss_and_grad(params, x, target)
            losses.append(float(value))
            params = jax.tree.map(lambda p, g: p - learning_rate * g, params, grads)

        print(f"initial loss {losses[0]:.3e}")
        print(f"final loss {losses[-1]:.3e}")
        """
    ),
    code(
        """
        fig = Figure(figsize=(4, 2.5), dpi=80)  # drawn with Agg directly: no pyplot backend needed
        ax = fig.subplots()
        ax.semilogy(losses)
        ax.set_xlabel("step")
        ax.set_ylabel("loss (log scale)")
        ax.set_title("gradient descent on an ONNX initializer")
        fig.tight_layout()
        png = io.BytesIO()
        fig.savefig(png, format="png")
        display(Image(png.getvalue()))
        """
    ),
    md(
        """
        The fitted weights match the true ones exactly where `w` reaches the output, and
        keep their initial value (0) elsewhere: their gradient is exactly zero, not just
        small.
        """
    ),
    code(
        """
        w_fit = np.asarray(params["w"])
        reached = np.asarray(uses) > 0
        print("max |w_fit - w_true| where w reaches y:", float(np.abs(w_fit - w_true)[reached].max()))
        print("w_fit where w does not reach y is still 0:", bool((w_fit[~reached] == 0).all()))
        """
    ),
]


# --------------------------------------------------------------------------- 03 data-dependent shapes

SHAPES = [
    md(
        """
        # Compress and data-dependent shapes under `jax.jit`

        Compress keeps the slices of its input where a bool `condition` is true, so its
        output length depends on the *values* of `condition`. `jax.jit` needs every shape
        at trace time. jaxonnx handles this in three ways:

        1. a condition known at trace time (an initializer or a Constant) is exact under jit;
        2. a condition known only at run time (it depends on a graph input) raises
           `jaxonnx.StaticValueError` with a message that says what to do;
        3. a *size hint* fixes the output length: the selected slices first, then zeros.
        """
    ),
    code(
        """
        import logging
        import re
        import textwrap

        import jax
        import jax.numpy as jnp
        import numpy as np
        from onnx import TensorProto, helper, numpy_helper

        import jaxonnx

        x = np.arange(10, dtype=np.float32).reshape(5, 2)


        def compress_model(condition_from):
            \"\"\"A one-node model `kept = Compress(x, keep, axis=0)`; `keep` is an initializer or a graph input.\"\"\"
            inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 2])]
            initializers = []
            if condition_from == "initializer":
                initializers.append(numpy_helper.from_array(np.array([True, False, True, False, True]), "keep"))
            else:
                inputs.append(helper.make_tensor_value_info("keep", TensorProto.BOOL, [5]))
            graph = helper.make_graph(
                [helper.make_node("Compress", ["x", "keep"], ["kept"], name="keep_rows", axis=0)],
                "compress", inputs,
                [helper.make_tensor_value_info("kept", TensorProto.FLOAT, ["n", 2])],
                initializer=initializers,
            )
            return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        """
    ),
    md(
        """
        ## 1. A static condition is exact under jit

        The condition is an initializer: jaxonnx keeps it a numpy value while tracing, so
        the output has exactly as many rows as there are `True`s.
        """
    ),
    code(
        """
        static_model = jaxonnx.load(compress_model("initializer"))
        (kept,) = jax.jit(static_model)(x)
        print(kept)
        """
    ),
    md(
        """
        ## 2. A runtime condition raises `StaticValueError`

        Now `keep` is a graph input. Eagerly that is fine, because every value is concrete:
        """
    ),
    code(
        """
        runtime_model = jaxonnx.load(compress_model("graph input"))
        keep = np.array([True, False, True, False, False])
        print(runtime_model(x, keep)[0])
        """
    ),
    md("Under `jax.jit`, `keep` is a tracer and the output length cannot be known:"),
    code(
        """
        try:
            jax.jit(runtime_model)(x, keep)
        except jaxonnx.StaticValueError as e:
            print(type(e).__name__ + ":")
            for sentence in re.split(r"(?<=\\.) (?=[A-Z])", str(e)):  # one sentence a line
                print(textwrap.fill(sentence, 100, initial_indent="  ", subsequent_indent="    "))
        """
    ),
    md(
        """
        How to read it:

        * **Where**: `Node 'keep_rows' (Compress-11, inputs ...)` names the node, the op version
          the model's opset resolved to, and each input's type and shape; `traced` marks the
          inputs that are only known at run time.
        * **What**: the op cannot decide its output shape because `condition` is traced.
        * **Why, in the graph**: the graph value (`'keep'`) that feeds `condition` depends on
          graph inputs.
        * **Fixes**: make the condition an initializer or Constant (section 1), or give a size
          hint for the node's output (section 3).
        """
    ),
    md(
        """
        ## 3. Size hints

        `jaxonnx.load(model, size_hints={output name: length})` fixes the length of a
        Compress output along its axis. The selected rows come first; the rest are zeros.
        """
    ),
    code(
        """
        hinted = jax.jit(jaxonnx.load(compress_model("graph input"), size_hints={"kept": 3}))
        print(hinted(x, keep)[0])
        """
    ),
    md(
        """
        The hint is an upper bound, not a truncation. Selecting more rows than the hint
        raises when the model runs. Under jit the check runs inside the compiled
        computation, so the error reaches Python as a `jax.errors.JaxRuntimeError` whose
        message ends with jaxonnx's. (JAX also logs the callback's traceback; we silence
        that logger here to keep the output short.)
        """
    ),
    code(
        """
        logging.getLogger("jax._src.debugging").setLevel(logging.CRITICAL)
        too_many = np.array([True, True, True, True, False])
        try:
            hinted(x, too_many)
        except jax.errors.JaxRuntimeError as e:
            print(type(e).__name__, "... ->", str(e).strip().splitlines()[-1])
        """
    ),
    md("Eagerly, the same model raises jaxonnx's own error:"),
    code(
        """
        try:
            jaxonnx.load(compress_model("graph input"), size_hints={"kept": 3})(x, too_many)
        except jaxonnx.OnnxValidationError as e:
            print(type(e).__name__, "->", e)
        """
    ),
    md(
        """
        ## `jaxonnx.ops.compress(size=, fill_value=)`

        The op itself takes the same two arguments as `jnp.compress`/`jnp.nonzero`: `size`
        is the static output length and `fill_value` the value of the padding. A condition
        computed from the data inside a jitted function is traced, so it needs `size`:
        """
    ),
    code(
        """
        @jax.jit
        def positives(v):
            return jaxonnx.ops.compress(v, v > 0, size=v.shape[0], fill_value=jnp.nan)


        v = jnp.array([3.0, -1.0, 4.0, -1.0, 5.0])
        print(positives(v))
        """
    ),
    md("Without `size`, the error says which argument to give:"),
    code(
        """
        try:
            jax.jit(lambda v: jaxonnx.ops.compress(v, v > 0))(v)
        except jaxonnx.StaticValueError as e:
            print(e)
        """
    ),
    md(
        """
        Outside `jax.jit` the condition is concrete, so no `size` is needed and the result
        has exactly the selected length:
        """
    ),
    code(
        """
        print(jaxonnx.ops.compress(v, v > 0))
        """
    ),
]


# --------------------------------------------------------------------------- 04 speed

SPEED = [
    md(
        """
        # Speed against onnxruntime

        The benchmark suite in `benchmarks/` times jaxonnx (under `jax.jit`) against
        onnxruntime and writes a chart and a table. This notebook shows them if they have
        been produced, and then runs a tiny live timing of its own.
        """
    ),
    code(
        """
        import pathlib
        import time

        import jax
        import numpy as np
        import onnxruntime as ort
        from IPython.display import Image, Markdown, display
        from onnx import TensorProto, helper, numpy_helper

        import jaxonnx

        BENCHMARKS = pathlib.Path("..", "benchmarks")
        """
    ),
    md("## The benchmark results"),
    code(
        """
        chart = BENCHMARKS / "chart.png"
        results = BENCHMARKS / "results.md"
        if chart.is_file():
            display(Image(filename=str(chart), width=640))
        else:
            print(f"No chart yet: {chart} does not exist (the benchmark suite in benchmarks/ writes it).")
        if results.is_file():
            text = results.read_text()
            table = "\\n".join(line for line in text.splitlines() if line.lstrip().startswith("|"))
            display(Markdown(table or text))
        else:
            print(f"No results table yet: {results} does not exist.")
        """
    ),
    md(
        """
        ## A tiny live timing (indicative only)

        One small model, 150 calls each (a few milliseconds in all), on whatever machine
        runs this notebook. Per-call times this small are dominated by dispatch overhead
        (Python → XLA, or Python → onnxruntime), vary from run to run, and say little about
        large models: treat them as indicative, and use the benchmark suite for real numbers.
        """
    ),
    code(
        """
        def constant(name, array):
            return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(array, name))


        rows, cols = 64, 128
        rng = np.random.default_rng(0)
        graph = helper.make_graph(
            [
                constant("starts", np.array([0, 1], np.int64)),
                constant("ends", np.array([rows, cols], np.int64)),
                constant("axes", np.array([0, 1], np.int64)),
                constant("steps", np.array([1, 2], np.int64)),
                helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["half"]),
                helper.make_node("GatherElements", ["half", "indices"], ["permuted"], axis=1),
                helper.make_node("Where", ["keep", "permuted", "half"], ["mixed"]),
                helper.make_node("Flatten", ["mixed"], ["y"], axis=1),
            ],
            "speed",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, cols])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, cols // 2])],
            initializer=[
                numpy_helper.from_array(rng.integers(0, cols // 2, (rows, cols // 2)).astype(np.int64), "indices"),
                numpy_helper.from_array(rng.random((rows, cols // 2)) < 0.5, "keep"),
            ],
        )
        onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
        x = rng.normal(size=(rows, cols)).astype(np.float32)

        jitted = jax.jit(jaxonnx.load(onnx_model))
        session = ort.InferenceSession(onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])

        start = time.perf_counter()
        (y_jax,) = jax.block_until_ready(jitted(x))  # the first call traces and compiles
        compile_ms = (time.perf_counter() - start) * 1e3
        (y_ort,) = session.run(None, {"x": x})
        np.testing.assert_array_equal(np.asarray(y_jax), y_ort)


        def per_call_us(fn, calls=50, repeats=3):
            best = float("inf")
            for _ in range(repeats):
                start = time.perf_counter()
                for _ in range(calls):
                    fn()
                best = min(best, (time.perf_counter() - start) / calls)
            return best * 1e6


        jax_us = per_call_us(lambda: jax.block_until_ready(jitted(x)))
        ort_us = per_call_us(lambda: session.run(None, {"x": x}))
        print(f"model: x[{rows}, {cols}] -> Slice -> GatherElements -> Where -> Flatten (outputs equal)")
        print(f"jax.jit first call (trace + compile): {compile_ms:8.1f} ms")
        print(f"jax.jit(model), per call:             {jax_us:8.1f} us   (indicative)")
        print(f"onnxruntime, per call:                {ort_us:8.1f} us   (indicative)")
        """
    ),
]


NOTEBOOKS = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_gradients.ipynb": GRADIENTS,
    "03_data_dependent_shapes.ipynb": SHAPES,
    "04_speed.ipynb": SPEED,
}


def build() -> dict[str, nbformat.NotebookNode]:
    """The notebooks, by file name, without outputs."""
    return {name: _cells(name, cells) for name, cells in NOTEBOOKS.items()}


def main() -> int:
    for name, nb in build().items():
        nbformat.validate(nb)
        path = os.path.join(HERE, name)
        nbformat.write(nb, path)
        print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
