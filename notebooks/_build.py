"""Writes the tutorial notebooks in this folder from the cells below, executed, with outputs.

A tutorial is edited here, as plain Python, and reviewed here; the committed ``.ipynb``
files are this script's output: the cells below, executed top to bottom in a fresh
``python3`` kernel whose working directory is this folder, saved with their outputs so
that they read as executed tutorials on a code host. After editing, run

    python notebooks/_build.py                  # every notebook: write, execute, save
    python notebooks/_build.py 02 04_speed      # only the notebooks whose names start so
    python notebooks/_build.py --check          # execute and compare; write nothing

and commit this file and the notebooks. ``tests/test_notebooks.py`` checks that every
notebook in this folder has exactly the cells written here, and that executing it again
reproduces its committed outputs (``stale_outputs``): text exactly, images by presence,
and cells tagged ``timing`` or ``machine-dependent`` by output type only.

Adding a notebook: write its cells as a list of ``md(...)`` and ``code(...)`` below and
add one entry to ``NOTEBOOKS``. Tag a code cell whose output legitimately differs between
runs or machines, ``code(source, TIMING)``; every other output must be reproducible (set
seeds, print no addresses, timings or device lists, and print float results at a
precision above round-off, which varies with the CPU). Figures: draw a matplotlib
``Figure`` and ``show(fig)`` it (see the helper each notebook defines), small; a notebook
that trains something plots its loss curve (as 02 does). Keep the computations small:
CI executes every notebook on two cores.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import os
import sys
import textwrap

import nbformat
from nbformat import v4

HERE = os.path.dirname(os.path.abspath(__file__))
CELL_TIMEOUT_S = 120

# Cell tags whose outputs are compared by type only: they differ between runs or machines.
TIMING = "timing"
MACHINE_DEPENDENT = "machine-dependent"
VOLATILE_TAGS = frozenset({TIMING, MACHINE_DEPENDENT})


def _cells(name: str, cells: list[tuple[str, str, tuple[str, ...]]]) -> nbformat.NotebookNode:
    nb = v4.new_notebook()
    for index, (kind, source, tags) in enumerate(cells):
        source = textwrap.dedent(source).strip("\n")
        cell = v4.new_markdown_cell(source) if kind == "md" else v4.new_code_cell(source)
        cell["id"] = f"{name[:2]}-{index:02d}"  # stable ids: regenerating gives no diff
        if tags:
            cell.metadata["tags"] = list(tags)
        nb.cells.append(cell)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    return nb


def md(source: str) -> tuple[str, str, tuple[str, ...]]:
    return ("md", source, ())


def code(source: str, *tags: str) -> tuple[str, str, tuple[str, ...]]:
    unknown = sorted(set(tags) - VOLATILE_TAGS)
    if unknown:
        raise ValueError(
            f"Unknown cell tags {unknown}; the tags that mark volatile outputs are {sorted(VOLATILE_TAGS)}."
        )
    return ("code", source, tags)


# --------------------------------------------------------------------------- 01 quickstart

QUICKSTART = [
    md(
        """
        # jaxonnx quickstart

        jaxonnx implements ONNX operators (over a hundred, each in every version onnx 1.23
        defines; `jaxonnx.supported_ops()` lists them) as exact, differentiable,
        `jax.jit`-compilable JAX functions, keeps every ONNX version in a registry, and runs
        whole ONNX graphs built from them. This notebook uses five of them: Compress,
        Flatten, GatherElements, Where and Slice.

        It shows the ops, the registry, and an ONNX model built with `onnx.helper`, loaded
        with `jaxonnx.load`, run eagerly and under `jax.jit`, and checked against
        onnxruntime.

        **64-bit types.** jaxonnx never changes JAX's configuration, and runs in JAX's
        default 32-bit mode: a 64-bit ONNX type then computes as its 32-bit counterpart, as
        every JAX function does (an int64 graph input takes the int32 array JAX makes of
        it; a numpy int64 input that does not fit in 32 bits raises when jaxonnx converts
        it), and `jaxonnx.load` says so once with a `jaxonnx.X64Warning`. Initializers,
        Constant nodes and shape arithmetic stay exact numpy int64 either way, so Slice
        bounds and GatherElements indices here are exact. For exact 64-bit inputs and
        outputs, call `jax.config.update("jax_enable_x64", True)` at the top of the
        program. These notebooks use float32 data.
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
        """,
        MACHINE_DEPENDENT,  # the versions installed where it runs
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
        with opset 12 runs Slice-11. `jaxonnx.supported_ops()` maps every registered op to
        its versions (the README's support table is generated from it); here are the five
        ops of these notebooks:
        """
    ),
    code(
        """
        print(jaxonnx.get_op("Slice", 12).name)
        print(jaxonnx.get_op("Slice", 13).name)
        print(jaxonnx.get_op("Flatten", 22).name)
        supported = jaxonnx.supported_ops()
        for op in ["Compress", "Flatten", "GatherElements", "Slice", "Where"]:
            print(f"{op:15} {supported[op]}")
        """
    ),
    md("Asking for something that is not there says what is:"),
    code(
        """
        for op, opset, domain in [("Slice", 0, ""), ("CropAndResize", 1, "com.microsoft")]:
            try:
                jaxonnx.get_op(op, opset, domain=domain)
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


        def show(fig):  # a matplotlib Figure drawn with Agg directly (no pyplot backend), as a PNG
            png = io.BytesIO()
            fig.savefig(png, format="png", metadata={"Software": None})  # no version string in the bytes
            display(Image(png.getvalue()))
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
        ### Where the cotangent lands

        Backpropagation runs the graph backwards, one VJP per node. Below, the same three
        ops are called through `jaxonnx.ops` and each one's VJP (`jax.vjp`) is applied in
        turn to the cotangent of `sum(y)`, a matrix of ones:

        * **Where** passes the cotangent to the branch `mask` picked (zeros elsewhere);
        * **GatherElements** *scatter-adds* it back to the positions its indices read, so a
          position gathered twice receives 2 and one never gathered receives 0;
        * **Slice** places it into the reversed rows and odd columns of `w`; the columns it
          skipped get zeros.

        The last panel is exactly the gradient above.
        """
    ),
    code(
        """
        bounds = dict(starts=[-1, 1], ends=[np.iinfo(np.int64).min, 6], axes=[0, 1], steps=[-1, 2])
        w_sliced, slice_vjp = jax.vjp(lambda w: jaxonnx.ops.slice(w, **bounds), model.params["w"])
        w_gathered, gather_vjp = jax.vjp(lambda s: jaxonnx.ops.gather_elements(s, indices, axis=1), w_sliced)
        y, where_vjp = jax.vjp(lambda g: jaxonnx.ops.where(mask, g, x), w_gathered)

        (at_gathered,) = where_vjp(jnp.ones_like(y))
        (at_sliced,) = gather_vjp(at_gathered)
        (at_w,) = slice_vjp(at_sliced)
        assert (at_w == uses).all()  # the op-by-op chain is the model's gradient

        fig = Figure(figsize=(9, 2.6), dpi=80)
        panels = [
            (at_gathered, "Where: into `w_gathered`\\n(1 where mask is true)"),
            (at_sliced, "GatherElements: scatter-add\\ninto `w_sliced`"),
            (at_w, "Slice: into `w`\\n(rows reversed, odd columns)"),
        ]
        axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [3, 3, 6]})
        for ax, (cotangent, title) in zip(axes, panels):
            counts = np.asarray(cotangent).astype(int)
            ax.imshow(counts, cmap="Blues", vmin=0, vmax=3)
            for (row, col), count in np.ndenumerate(counts):
                ax.text(col, row, count, ha="center", va="center", color="white" if count >= 2 else "black")
            ax.set_xticks(range(counts.shape[1]))
            ax.set_yticks(range(counts.shape[0]))
            ax.set_title(title, fontsize=9)
        fig.suptitle("the cotangent of sum(y), pulled back node by node", fontsize=10)
        fig.tight_layout()
        show(fig)
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
        """,
        MACHINE_DEPENDENT,  # the final loss is float32 round-off, which varies with the CPU's vector width
    ),
    code(
        """
        fig = Figure(figsize=(4, 2.5), dpi=80)
        ax = fig.subplots()
        ax.semilogy(losses)
        ax.set_xlabel("step")
        ax.set_ylabel("loss (log scale)")
        ax.set_title("gradient descent on an ONNX initializer")
        fig.tight_layout()
        show(fig)
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
        print("|w_fit - w_true| < 1e-6 where w reaches y:", bool((np.abs(w_fit - w_true)[reached] < 1e-6).all()))
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
        import io
        import logging
        import re
        import textwrap

        import jax
        import jax.numpy as jnp
        import numpy as np
        from IPython.display import Image, display
        from matplotlib.figure import Figure
        from matplotlib.patches import Rectangle
        from onnx import TensorProto, helper, numpy_helper

        import jaxonnx


        def show(fig):  # a matplotlib Figure drawn with Agg directly (no pyplot backend), as a PNG
            png = io.BytesIO()
            fig.savefig(png, format="png", metadata={"Software": None})  # no version string in the bytes
            display(Image(png.getvalue()))


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
        In a picture: the rows of `x` where `keep` is true, in order, then zero rows up to
        the hinted length.
        """
    ),
    code(
        """
        def draw_rows(ax, values, colors, labels, title, hatched=()):
            for (row, col), value in np.ndenumerate(values):
                ax.add_patch(Rectangle((col - 0.5, row - 0.5), 1, 1, facecolor=colors[row],
                                       edgecolor="gray" if row in hatched else "white", hatch="//" if row in hatched else None))
                ax.text(col, row, f"{value:g}", ha="center", va="center", backgroundcolor=colors[row])
            ax.set_xlim(-0.5, values.shape[1] - 0.5)
            ax.set_ylim(len(x) - 0.5, -0.5)  # both panels at the scale of x: the output is shorter
            ax.set_aspect("equal")
            ax.spines[:].set_visible(False)
            ax.set_xticks([])
            ax.set_yticks(range(values.shape[0]), labels, fontsize=8)
            ax.set_title(title, fontsize=9)


        (kept,) = hinted(x, keep)
        selected = np.flatnonzero(keep)  # the rows of x that Compress keeps, in order
        padding = range(len(selected), kept.shape[0])
        assert (np.asarray(kept)[len(selected):] == 0).all()

        fig = Figure(figsize=(5, 2.6), dpi=80)
        left, right = fig.subplots(1, 2)
        draw_rows(left, x, ["lightskyblue" if k else "lightgray" for k in keep],
                  [f"row {i}: keep={bool(k)}" for i, k in enumerate(keep)], "x, and the condition `keep`")
        draw_rows(right, np.asarray(kept), ["lightskyblue"] * len(selected) + ["white"] * len(padding),
                  [f"row {i} of x" for i in selected] + ["padding (zeros)"] * len(padding),
                  "kept, size hint 3", hatched=padding)
        fig.tight_layout()
        show(fig)
        """
    ),
    md(
        """
        The hint is an upper bound, not a truncation. Selecting more rows than the hint
        raises when the model runs. Under jit the check runs inside the compiled
        computation, so the error reaches Python as a `jax.errors.JaxRuntimeError` whose
        message ends with jaxonnx's. jaxonnx also logs the message (logger `jaxonnx`, on
        stderr) before JAX logs the callback's traceback, so it is the first thing a reader
        of the log sees; we silence JAX's traceback here to keep the output short.
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

        The benchmark suite in `benchmarks/` (`python benchmarks/run.py`) times jaxonnx
        (under `jax.jit`) against onnxruntime and `onnx.reference` on 4096×8192 float32
        models and writes its figures to `benchmarks/results.md`. This notebook charts the
        committed results, the same data as the README's chart, without running the suite
        (it takes minutes and a quiet machine), and then runs a tiny live timing of its own.
        """
    ),
    code(
        """
        import io
        import pathlib
        import time

        import jax
        import numpy as np
        import onnxruntime as ort
        from IPython.display import Image, Markdown, display
        from matplotlib.figure import Figure
        from onnx import TensorProto, helper, numpy_helper

        import jaxonnx

        RESULTS = pathlib.Path("..", "benchmarks", "results.md")


        def show(fig):  # a matplotlib Figure drawn with Agg directly (no pyplot backend), as a PNG
            png = io.BytesIO()
            fig.savefig(png, format="png", metadata={"Software": None})  # no version string in the bytes
            display(Image(png.getvalue()))
        """
    ),
    md(
        """
        ## The benchmark results

        `results.md` has one generated table per pass: *tuned* runs with the glibc malloc
        settings of `jaxonnx.tune_cpu_allocator()` (see the README), *default* without them.
        Its hand-written notes follow a marker line; only the generated part is read.
        """
    ),
    code(
        """
        NOTES_MARKER = "<!-- notes:"


        def generated_tables(text):
            \"\"\"{pass name: [{column: cell}]} for each table under a `## <pass>: ...` heading.\"\"\"
            tables, name, header = {}, None, None
            for line in text.split(NOTES_MARKER)[0].splitlines():
                if line.startswith("## "):
                    name, header = line[3:].split(":")[0], None
                elif line.startswith("|") and name is not None:
                    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
                    if header is None:
                        header = cells
                    elif not set(line.strip()) <= set("|-"):  # skip the |---| row
                        tables.setdefault(name, []).append(dict(zip(header, cells)))
            return tables


        tables = generated_tables(RESULTS.read_text(encoding="utf-8"))
        tuned, default = tables["tuned"], tables["default"]
        assert [row["case"] for row in tuned] == [row["case"] for row in default]
        # The default environment first, as in the README; each pass's times beside its ratio.
        rows = [
            "| case | jaxonnx ms, default | onnxruntime ms, default | ratio, default "
            "| jaxonnx ms, tuned | onnxruntime ms, tuned | ratio, tuned | target |",
            "|---|---|---|---|---|---|---|---|",
        ]
        rows += [
            f"| {d['case']} | {d['jaxonnx ms']} | {d['onnxruntime ms']} | {d['ratio ort/jaxonnx']} "
            f"| {t['jaxonnx ms']} | {t['onnxruntime ms']} | {t['ratio ort/jaxonnx']} | {t['target']} |"
            for t, d in zip(tuned, default)
        ]
        display(Markdown("\\n".join(rows)))
        """
    ),
    md(
        """
        Ratio = onnxruntime time / jaxonnx time: above 1, jaxonnx is faster; the scale is
        logarithmic, so 0.5 and 2 are equally far from parity. The red marks are the
        targets; the compile case is a time (seconds, lower is better), so it has its own
        panel.
        """
    ),
    code(
        """
        def is_compile_case(row):
            return row["target"].startswith("<")


        cases = [row["case"] for row in tuned if not is_compile_case(row)]
        fig = Figure(figsize=(11, 4.4), dpi=72)
        ax, ax_compile = fig.subplots(1, 2, gridspec_kw={"width_ratios": [5, 1.2]})
        width = 0.4
        label_box = dict(boxstyle="square,pad=0.1", facecolor="white", edgecolor="none", alpha=0.85)
        for k, (name, table) in enumerate([("default", default), ("tuned", tuned)]):
            ratios = [float(row["ratio ort/jaxonnx"]) for row in table if not is_compile_case(row)]
            xs = np.arange(len(cases)) + (k - 0.5) * width
            bars = ax.bar(xs, ratios, width, label=name)
            for x, ratio in zip(xs, ratios):
                # Just above its own bar, on a white box over the target and parity lines.
                ax.annotate(f"{ratio:.2f}", (x, ratio), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7, bbox=label_box, zorder=5)
            (compile_row,) = [row for row in table if is_compile_case(row)]
            seconds = float(compile_row["jaxonnx ms"].replace(",", "")) / 1e3
            ax_compile.bar(k, seconds, 0.6, color=bars.patches[0].get_facecolor())
            ax_compile.annotate(f"{seconds:.2f} s", (k, seconds), xytext=(0, 2), textcoords="offset points",
                                ha="center", va="bottom", fontsize=8)
        for i, row in enumerate(row for row in tuned if not is_compile_case(row)):
            target = float(row["target"].lstrip(">= "))
            ax.hlines(target, i - 0.45, i + 0.45, colors="red", linestyles="--", label="target" if i == 0 else None)
        ax.axhline(1.0, color="gray", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_ylim(0.1, 60)
        ax.set_yticks([0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 50], ["0.1", "0.25", "0.5", "1", "2", "5", "10", "20", "50"])
        ax.minorticks_off()  # the log scale's own minor labels would crowd these
        ax.set_xticks(range(len(cases)), [case.replace(" (", "\\n(").replace(", ", ",\\n") for case in cases], fontsize=7)
        ax.set_ylabel("onnxruntime time / jaxonnx time")
        ax.set_title("jaxonnx (jax.jit) vs onnxruntime, CPU (higher is better)", fontsize=10)
        ax.legend(fontsize=8, loc="upper left")
        (compile_row,) = [row for row in tuned if is_compile_case(row)]
        ax_compile.axhline(float(compile_row["target"].lstrip("< ").rstrip(" s")), color="red", linestyle="--")
        ax_compile.set_xticks([0, 1], ["default", "tuned"], fontsize=8)
        ax_compile.set_ylabel("seconds (lower is better)")
        ax_compile.set_title(f"{compile_row['case']}:\\nload + trace +\\ncompile + 1st run", fontsize=8)
        fig.tight_layout()
        show(fig)
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
        """,
        TIMING,
    ),
]


# --------------------------------------------------------------------------- 05 fine-tuning

FINETUNE = [
    md(
        """
        # Fine-tuning an exported PyTorch model

        `tests/fixtures/models/mlp_dynamo_dynamic.onnx` is a small PyTorch MLP (Linear, ReLU,
        Linear, Tanh, Linear, Softmax) exported with `torch.onnx.export(dynamo=True)` and a
        symbolic batch dimension. Here it is loaded with `jaxonnx.load`, its weights are
        fine-tuned with [optax](https://optax.readthedocs.io) on a tiny synthetic
        classification task, and the fine-tuned weights are run by the same jitted forward
        at another batch size, then written back into the ONNX file and checked with
        onnxruntime.

        `model.params` holds the float initializers (the weights) by name, and
        `model.apply(params, *inputs)` is the model with those weights swapped in: a pure
        function of the weights, so `jax.grad`, `jax.jit` and any optax optimizer apply.
        """
    ),
    code(
        """
        import io

        import jax
        import jax.numpy as jnp
        import numpy as np
        import onnx
        import onnxruntime as ort
        import optax
        from IPython.display import Image, display
        from matplotlib.figure import Figure
        from onnx import numpy_helper

        import jaxonnx


        def show(fig):  # a matplotlib Figure drawn with Agg directly (no pyplot backend), as a PNG
            png = io.BytesIO()
            fig.savefig(png, format="png", metadata={"Software": None})  # no version string in the bytes
            display(Image(png.getvalue()))
        """
    ),
    md("## The exported model"),
    code(
        """
        MODEL_PATH = "../tests/fixtures/models/mlp_dynamo_dynamic.onnx"
        model = jaxonnx.load(MODEL_PATH)
        print(model)
        for name, op, version in model.describe_nodes():
            print(f"  {name:14} {version}")
        print("params:", {name: tuple(p.shape) for name, p in model.params.items()})
        """
    ),
    md(
        """
        ## A synthetic task

        Four classes of 8-dimensional Gaussian points, labelled by a random linear "teacher"
        (the class is the largest of `x @ teacher`). A fixed seed makes the data, and so
        every printed number below, the same on every run.
        """
    ),
    code(
        """
        rng = np.random.default_rng(0)
        n_features, n_classes = 8, 4
        teacher = rng.normal(size=(n_features, n_classes)).astype(np.float32)


        def make_batch(n):
            x = rng.normal(size=(n, n_features)).astype(np.float32)
            return x, np.argmax(x @ teacher, axis=1)


        x_train, y_train = make_batch(512)
        x_test, y_test = make_batch(200)  # held out, and a different batch size
        print("train:", x_train.shape, "examples per class", np.bincount(y_train, minlength=n_classes))
        print("test: ", x_test.shape, "examples per class", np.bincount(y_test, minlength=n_classes))
        """
    ),
    md(
        """
        ## Fine-tuning with optax

        The exported graph ends in Softmax, so the model returns probabilities and the
        cross-entropy takes their log (clipped away from 0, where the log is undefined).
        One training step (forward, gradient, Adam update) is one jitted function; the
        loop calls it 100 times, and compiles it once.
        """
    ),
    code(
        """
        def loss_fn(params, x, labels):
            (probabilities,) = model.apply(params, x)
            log_p = jnp.log(jnp.clip(probabilities, 1e-7))
            return -jnp.mean(jnp.take_along_axis(log_p, labels[:, None], axis=1))


        optimizer = optax.adam(learning_rate=1e-2)


        @jax.jit
        def train_step(params, opt_state, x, labels):
            loss, grads = jax.value_and_grad(loss_fn)(params, x, labels)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, loss


        params = model.params  # the exported weights: the starting point
        opt_state = optimizer.init(params)
        losses = []
        for step in range(100):
            params, opt_state, loss = train_step(params, opt_state, x_train, y_train)
            losses.append(float(loss))

        # Two decimals: float32 round-off, which varies with the CPU's vector width, stays far below.
        print(f"cross-entropy: start {losses[0]:.2f}, end {losses[-1]:.2f} (log 4 = {np.log(4):.2f} is chance)")
        """
    ),
    code(
        """
        fig = Figure(figsize=(4, 2.5), dpi=80)
        ax = fig.subplots()
        ax.semilogy(losses)
        ax.set_xlabel("step")
        ax.set_ylabel("cross-entropy (log scale)")
        ax.set_title("Adam on the exported MLP's weights")
        fig.tight_layout()
        show(fig)
        """
    ),
    md(
        """
        ## The fine-tuned weights at another batch size

        The export's batch dimension is symbolic, so one jitted forward that takes the
        weights as an argument runs any batch size (each new shape is traced once). Before and after fine-tuning, on the 512 training and the 200 held-out
        examples:
        """
    ),
    code(
        """
        traced_shapes = []


        @jax.jit
        def predict(params, x):
            traced_shapes.append(x.shape)  # Python runs only while tracing: once per new shape
            return model.apply(params, x)


        def correct(params, x, labels):
            (probabilities,) = predict(params, x)
            return int((np.argmax(probabilities, axis=1) == labels).sum())


        for name, weights in [("exported", model.params), ("fine-tuned", params)]:
            print(f"{name:10}  train {correct(weights, x_train, y_train):3}/{len(y_train)}"
                  f"  held out {correct(weights, x_test, y_test):3}/{len(y_test)}")
        print("predict traced for x of shapes:", traced_shapes)
        """
    ),
    md(
        """
        ## Back to ONNX

        The fine-tuned weights are plain arrays named like the initializers, so they go back
        into the ONNX file with `numpy_helper.from_array`; onnxruntime then computes what
        jaxonnx computes.
        """
    ),
    code(
        """
        finetuned = onnx.load(MODEL_PATH)
        for initializer in finetuned.graph.initializer:
            if initializer.name in params:
                initializer.CopyFrom(numpy_helper.from_array(np.asarray(params[initializer.name]), initializer.name))
        session = ort.InferenceSession(finetuned.SerializeToString(), providers=["CPUExecutionProvider"])
        (p_ort,) = session.run(None, {"x": x_test})
        (p_jax,) = predict(params, x_test)
        print("onnxruntime == jaxonnx (to 1e-6):", np.allclose(p_ort, p_jax, rtol=0, atol=1e-6))
        """
    ),
]


GENERATION = [
    md(
        """
        # Generating text from an ONNX language model, the decode loop under one `jax.jit`

        `tests/fixtures/generation/llama_optimum/` is a tiny random Llama (2 layers, 32 wide,
        a 128-token vocabulary) exported by HF Optimum's `text-generation-with-past`, with the
        `tokenizer.json` beside it. `jaxonnx.generate` finds its KV cache from the graph's
        names, and runs the prompt and every new token in one compiled `lax.while_loop` whose
        cache keeps one shape (a fixed window of cache slots whose padding the attention mask
        hides). Here it generates, is timed, is fine-tuned with optax for a few steps, and
        generates again.
        """
    ),
    code(
        """
        import io
        import time

        import jax
        import jax.numpy as jnp
        import numpy as np
        import onnxruntime as ort
        import optax
        from IPython.display import Image, display
        from matplotlib.figure import Figure
        from tokenizers import Tokenizer

        import jaxonnx
        from jaxonnx.generation import find_cache

        jax.config.update("jax_enable_x64", True)  # the export's token ids are int64


        def show(fig):  # a matplotlib Figure drawn with Agg directly (no pyplot backend), as a PNG
            png = io.BytesIO()
            fig.savefig(png, format="png", metadata={"Software": None})
            display(Image(png.getvalue()))
        """
    ),
    md("## The file and its cache"),
    code(
        """
        FOLDER = "../tests/fixtures/generation/llama_optimum"
        model = jaxonnx.load(f"{FOLDER}/model.onnx")
        tokenizer = Tokenizer.from_file(f"{FOLDER}/tokenizer.json")
        layout = find_cache(model)
        print("inputs: ", [i.name for i in model.inputs])
        print("outputs:", [o.name for o in model.outputs])
        print("cache pairs:", layout.pairs[:2], "...", f"({len(layout.pairs)} in all), mode {layout.mode!r}")
        """
    ),
    md(
        """
        ## Generate

        Two prompts of different lengths make one batch: left-padded, with an attention mask
        that is 0 on the padding, as Hugging Face's `generate` takes them. Greedy without a
        key; the same tokens as onnxruntime running the file step by step with a growing
        cache (the loop below).
        """
    ),
    code(
        """
        def batch(texts):
            encoded = [tokenizer.encode(text).ids for text in texts]
            width = max(map(len, encoded))
            ids = np.array([[0] * (width - len(e)) + e for e in encoded])
            mask = np.array([[0] * (width - len(e)) + [1] * len(e) for e in encoded])
            return ids, mask


        def show_text(ids, out):
            for prompt, row in zip(ids, np.asarray(out)):
                print(repr(tokenizer.decode(list(prompt))), "->", repr(tokenizer.decode(list(row[len(prompt):]))))


        ids, mask = batch(["the quick brown fox", "hello"])
        out = jaxonnx.generate(model, ids, 12, attention_mask=mask)
        show_text(ids, out)


        def onnxruntime_greedy(ids, mask, new_tokens):
            session = ort.InferenceSession(f"{FOLDER}/model.onnx", providers=["CPUExecutionProvider"])
            cache = {past: np.zeros((len(ids), 2, 0, 8), np.float32) for past, _ in layout.pairs}
            positions, tokens = np.where(mask == 1, np.cumsum(mask, -1) - 1, 1), []
            for _ in range(new_tokens):
                logits, *presents = session.run(None, {"input_ids": ids, "attention_mask": mask, "position_ids": positions, **cache})
                tokens.append(logits[:, -1].argmax(-1))
                cache, positions = dict(zip(cache, presents)), mask.sum(-1, keepdims=True)
                ids, mask = tokens[-1][:, None], np.concatenate([mask, np.ones_like(mask[:, :1])], -1)
            return np.stack(tokens, -1)


        print("jaxonnx == onnxruntime:", np.array_equal(np.asarray(out)[:, ids.shape[1]:], onnxruntime_greedy(ids, mask, 12)))
        """
    ),
    md(
        """
        Sampling takes a `jax.random` key (and `temperature`, `top_k`, `top_p`); the same key
        gives the same tokens.
        """
    ),
    code(
        """
        key = jax.random.key(0)
        sampled = jaxonnx.generate(model, ids, 12, attention_mask=mask, rng=key, temperature=1.5, top_p=0.9)
        again = jaxonnx.generate(model, ids, 12, attention_mask=mask, rng=key, temperature=1.5, top_p=0.9)
        show_text(ids, sampled)
        print("same key, same tokens:", np.array_equal(sampled, again))
        """
    ),
    md(
        """
        ## Tokens per second

        `jax.jit(generate)` compiles the prefill and the whole loop once per shape of the prompts;
        then no Python runs between tokens. (Timings vary with the machine; this tiny model mostly
        measures the loop's own cost. `benchmarks/generation.py` compares larger models with
        onnxruntime-genai.)
        """
    ),
    code(
        """
        fast_generate = jax.jit(jaxonnx.generate, static_argnames="max_new_tokens")
        for size in (1, 8):
            prompts = jnp.asarray(np.random.default_rng(size).integers(3, 128, (size, 8)))
            start = time.perf_counter()
            jax.block_until_ready(fast_generate(model, prompts, max_new_tokens=64))
            compiled = time.perf_counter() - start
            start = time.perf_counter()
            jax.block_until_ready(fast_generate(model, prompts, max_new_tokens=64))
            seconds = time.perf_counter() - start
            print(f"batch {size}: {size * 64 / seconds:,.0f} new tokens/s (first call, compiling: {compiled:.1f} s)")
        """,
        TIMING,
    ),
    md(
        """
        ## Fine-tune, then generate again

        A `Model` is a pytree whose leaves are its weights, so `jax.grad` of a loss of the model
        is a model of gradients and optax updates it directly. The loss is next-token
        cross-entropy on one sentence, the whole sequence run through the graph at once with an
        empty cache. A few Adam steps teach the random model to continue its first words.
        """
    ),
    code(
        """
        text = tokenizer.encode("the quick brown fox jumps over the lazy dog").ids
        sequence = jnp.asarray([text])
        empty = {past: jnp.zeros((1, 2, 0, 8), jnp.float32) for past, _ in layout.pairs}


        def loss_fn(model):
            outputs = model.run({"input_ids": sequence, "attention_mask": jnp.ones_like(sequence),
                                 "position_ids": jnp.arange(len(text))[None], **empty})
            log_p = jax.nn.log_softmax(outputs["logits"][0, :-1])
            return -jnp.mean(jnp.take_along_axis(log_p, sequence[0, 1:, None], axis=1))


        optimizer = optax.adam(3e-3)


        @jax.jit
        def train_step(model, opt_state):
            loss, grads = jax.value_and_grad(loss_fn)(model)
            updates, opt_state = optimizer.update(grads, opt_state, model)
            return optax.apply_updates(model, updates), opt_state, loss


        tuned, opt_state, losses = model, optimizer.init(model), []
        for step in range(40):
            tuned, opt_state, loss = train_step(tuned, opt_state)
            losses.append(float(loss))
        print(f"cross-entropy: start {losses[0]:.1f}, end {losses[-1]:.2f}")
        """
    ),
    code(
        """
        fig = Figure(figsize=(4, 2.5), dpi=80)
        ax = fig.subplots()
        ax.semilogy(losses)
        ax.set_xlabel("step")
        ax.set_ylabel("cross-entropy (log scale)")
        ax.set_title("Adam on the Llama's weights")
        fig.tight_layout()
        show(fig)
        """
    ),
    code(
        """
        prompt_ids, prompt_mask = batch(["the quick brown"])
        show_text(prompt_ids, jaxonnx.generate(tuned, prompt_ids, len(text) - len(prompt_ids[0]), attention_mask=prompt_mask))
        tuned.save("/tmp/llama_tuned.onnx")  # the fine-tuned weights written back into the ONNX file
        print("written back and reloaded, same tokens:", np.array_equal(
            jaxonnx.generate("/tmp/llama_tuned.onnx", prompt_ids, 6, attention_mask=prompt_mask),
            jaxonnx.generate(tuned, prompt_ids, 6, attention_mask=prompt_mask)))
        """
    ),
]


LORA = [
    md(
        """
        # LoRA and QLoRA on an ONNX file: fine-tune a 4-bit Llama and hand it back to onnxruntime-genai

        `tests/fixtures/generation/llama_genai_int4/` is a tiny random Llama (2 layers, 64 wide, a
        128-token vocabulary) written by onnxruntime-genai's model builder: int4 `MatMulNBits`
        products, `GroupQueryAttention`, a `genai_config.json` and a tokenizer beside it.
        `jaxonnx.lora` adds LoRA adapters beside its products (the 4-bit weights stay packed:
        QLoRA), `jaxonnx.causal_lm_loss` trains them with optax on a short text, and the tuned
        model goes back into a folder that onnxruntime-genai runs as it is.
        """
    ),
    code(
        """
        import io

        import jax
        import jax.numpy as jnp
        import numpy as np
        import onnxruntime_genai as og
        import optax
        from IPython.display import Image, display
        from matplotlib.figure import Figure
        from tokenizers import Tokenizer

        import jaxonnx

        jax.config.update("jax_enable_x64", True)  # the builder's token ids are int64


        def show(fig):  # a matplotlib Figure drawn with Agg directly (no pyplot backend), as a PNG
            png = io.BytesIO()
            fig.savefig(png, format="png", metadata={"Software": None})
            display(Image(png.getvalue()))
        """
    ),
    md(
        """
        ## Adapters beside the 4-bit products

        Every product but the LM head gets `A` (K x 8) and `B` (8 x N); `B` starts at zero, so
        the tuned model computes exactly what the file does. Its params, what `jax.grad` and
        optax see, are the adapters alone.
        """
    ),
    code(
        """
        FOLDER = "../tests/fixtures/generation/llama_genai_int4"
        tokenizer = Tokenizer.from_file(f"{FOLDER}/tokenizer.json")
        tuned = jaxonnx.lora(FOLDER, rank=8, alpha=16, targets="all-linear")
        print(len(tuned.adapters), "adapters, e.g.", tuned.adapters[0].node, "->", tuned.adapters[0].a, tuned.adapters[0].b)
        print("trainable values:", sum(v.size for v in jax.tree.leaves(tuned)))
        packed = tuned.initializers["model.layers.0.mlp.down_proj.MatMul.weight_Q4"]
        print("a frozen weight, as the file packs it:", packed.dtype, packed.shape)
        """
    ),
    md("## A short text, and what the random model makes of it"),
    code(
        """
        text = "the quick brown fox jumps over the lazy dog. " * 2
        ids = np.array([tokenizer.encode(text.strip()).ids])
        print(ids.shape[1], "tokens")
        prompt = np.array([tokenizer.encode("the quick brown").ids])


        def continuation(model):
            tokens = jaxonnx.generate(model, prompt, 16)
            return tokenizer.decode(np.asarray(tokens[0, prompt.shape[1]:]).tolist())


        print("before:", repr(continuation(tuned)))
        """
    ),
    md(
        """
        ## Training the adapters

        `causal_lm_loss` is Hugging Face's next-token cross-entropy through the file's own graph,
        with an empty KV cache; one `jax.jit` holds the forward pass, the backward pass (each
        4-bit weight is dequantized again there, inside `jax.checkpoint`) and the adam update.
        """
    ),
    code(
        """
        optimizer = optax.adam(1e-2)


        @jax.jit
        def train_step(model, opt_state):
            loss, grads = jax.value_and_grad(jaxonnx.causal_lm_loss)(model, ids)
            updates, opt_state = optimizer.update(grads, opt_state, model)
            return optax.apply_updates(model, updates), opt_state, loss


        opt_state, losses = optimizer.init(tuned), []
        for step in range(60):
            tuned, opt_state, loss = train_step(tuned, opt_state)
            losses.append(float(loss))
        print(f"cross-entropy: start {losses[0]:.2f}, end {losses[-1]:.2f}")
        """
    ),
    code(
        """
        fig = Figure(figsize=(4, 2.5), dpi=80)
        ax = fig.subplots()
        ax.semilogy(losses)
        ax.set_xlabel("step")
        ax.set_ylabel("cross-entropy (log scale)")
        ax.set_title("Adam on the adapters of a 4-bit Llama")
        fig.tight_layout()
        show(fig)
        """
    ),
    code(
        """
        print("after: ", repr(continuation(tuned)))
        """
    ),
    md(
        """
        ## Back to onnxruntime-genai

        `save(folder)` writes the adapters as ordinary ONNX nodes beside the untouched 4-bit
        weights, and copies `genai_config.json` and the tokenizer beside it: onnxruntime-genai's
        `Generator` runs it as it is, and its greedy tokens are jaxonnx's.
        `save(folder, merge=True)` instead folds the adapters into the weights, re-quantized to 4
        bits as onnxruntime's quantizer does: the graph is then the builder's own.
        """
    ),
    code(
        """
        import os
        import tempfile

        out = tempfile.mkdtemp()
        tuned.save(f"{out}/tuned")
        print(sorted(os.listdir(f"{out}/tuned")))

        model = og.Model(f"{out}/tuned")
        params = og.GeneratorParams(model)
        params.set_search_options(do_sample=False, max_length=prompt.shape[1] + 16)
        generator = og.Generator(model, params)
        generator.append_tokens(prompt.astype(np.int32))
        while not generator.is_done():
            generator.generate_next_token()
        theirs = np.asarray(generator.get_sequence(0))
        ours = np.asarray(jaxonnx.generate(tuned, prompt, 16)[0])
        print("onnxruntime-genai:", repr(tokenizer.decode(theirs[prompt.shape[1]:].tolist())))
        print("same tokens as jaxonnx:", np.array_equal(theirs, ours))
        """
    ),
    code(
        """
        tuned.save(f"{out}/merged", merge=True)
        merged = jaxonnx.load(f"{out}/merged/model.onnx")
        merged_loss = float(jaxonnx.causal_lm_loss(merged, ids))
        # Rounding to 4 bits is a step function: the last bits of training move the merged loss.
        print(f"merged: the builder's {len(merged.nodes)} nodes, loss {merged_loss:.2f} (tuned {losses[-1]:.2f}: "
              "the merged weights rounded to 4 bits again)")
        """,
        MACHINE_DEPENDENT,
    ),
]


NOTEBOOKS = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_gradients.ipynb": GRADIENTS,
    "03_data_dependent_shapes.ipynb": SHAPES,
    "04_speed.ipynb": SPEED,
    "05_finetune_exported_model.ipynb": FINETUNE,
    "06_generation.ipynb": GENERATION,
    "07_lora_finetuning.ipynb": LORA,
}


# --------------------------------------------------------------------------- building


def build() -> dict[str, nbformat.NotebookNode]:
    """The notebooks, by file name, without outputs."""
    return {name: _cells(name, cells) for name, cells in NOTEBOOKS.items()}


def without_outputs(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` as ``build`` writes it: no outputs, no execution counts."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def _coalesced(outputs: list) -> list:
    # A kernel flushes a cell's prints in as many chunks as timing makes it; one output per
    # run of same-stream text is what a reader sees, and it does not depend on the timing.
    merged = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            output.output_type == "stream"
            and previous is not None
            and previous.output_type == "stream"
            and previous.name == output.name
        ):
            previous.text += output.text
        else:
            merged.append(copy.deepcopy(output))
    return merged


def execute(nb: nbformat.NotebookNode, *, timeout: int = CELL_TIMEOUT_S) -> nbformat.NotebookNode:
    """A copy of ``nb`` executed top to bottom in a fresh ``python3`` kernel, in this folder.

    Raises ``nbclient.exceptions.CellExecutionError``, with the cell and its traceback, when
    a cell raises. The kernel inherits this process's environment (``XLA_FLAGS`` included).
    """
    # Import here: building the notebooks' sources needs only nbformat.
    import matplotlib.font_manager  # noqa: F401  (builds matplotlib's font cache now, not in a cell's output)
    from nbclient import NotebookClient

    nb = without_outputs(nb)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=timeout,
        record_timing=False,  # no per-cell timestamps in the committed files
        resources={"metadata": {"path": HERE}},  # the kernel's working directory
    )
    client.execute()
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = _coalesced(cell.outputs)
    nb.metadata["language_info"] = {"name": "python"}  # the kernel's Python version is not the notebook's
    return nb


# --------------------------------------------------------------------------- freshness


def _is_exact(mime: str) -> bool:
    # Images are compared by presence: PNG bytes differ between matplotlib and libpng versions.
    return not mime.startswith("image/")


def _summaries(outputs: list, exact: bool) -> list[tuple]:
    """What of a cell's outputs must be reproduced: all text, or (``exact=False``) the types.

    A run of stream outputs between two displays is one item, each stream's text whole:
    the kernel flushes stdout and stderr on separate timers, so how they interleave (a
    warning printed from another thread, say) is not the cell's result; what each says is.
    A display flushes both streams first, so the order of displays and text is kept.
    """
    summaries = []
    for output in _coalesced(outputs):
        kind = output.output_type
        if kind == "stream":
            if not (summaries and summaries[-1][0] == "streams"):
                summaries.append(("streams", {}))
            texts = summaries[-1][1]
            texts[output.name] = texts.get(output.name, "") + (output.text if exact else "")
        elif kind in ("display_data", "execute_result"):
            data = {mime: value if exact and _is_exact(mime) else None for mime, value in output.data.items()}
            summaries.append((kind, data))
        elif kind == "error":
            summaries.append((kind, {"ename": output.ename, "evalue": output.evalue if exact else None}))
        else:
            summaries.append((kind, {}))
    return summaries


def _describe_difference(committed: tuple, fresh: tuple) -> str:
    if committed[0] != fresh[0] or set(committed[1]) != set(fresh[1]):
        return f"committed {committed[0]} {sorted(committed[1])}, fresh {fresh[0]} {sorted(fresh[1])}"
    lines = []
    for key in committed[1]:
        old, new = committed[1][key], fresh[1][key]
        if old != new:
            diff = difflib.unified_diff(str(old).splitlines(), str(new).splitlines(), lineterm="", n=0)
            changed = [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]
            shown = [textwrap.shorten(line, 240, placeholder=" ...") for line in changed[:8]]
            more = [f"... {len(changed) - 8} more changed lines"] if len(changed) > 8 else []
            lines.append(f"{key} (- committed, + fresh):\n      " + "\n      ".join(shown + more))
    return "; ".join(lines)


def stale_outputs(committed: nbformat.NotebookNode, fresh: nbformat.NotebookNode) -> list[str]:
    """Where ``committed`` differs from ``fresh``, the same notebook executed now; ``[]`` if nowhere.

    Text outputs must be equal, images present with the same type, and the outputs of
    cells tagged ``timing`` or ``machine-dependent`` of the same types in the same order.
    Execution counts must be equal too: a committed notebook was run top to bottom once.
    """
    committed_cells = [c for c in committed.cells if c.cell_type == "code"]
    fresh_cells = [c for c in fresh.cells if c.cell_type == "code"]
    if [c.get("id") for c in committed_cells] != [c.get("id") for c in fresh_cells]:
        return [
            f"the code cells differ: committed ids {[c.get('id') for c in committed_cells]}, "
            f"fresh ids {[c.get('id') for c in fresh_cells]}"
        ]
    problems = []
    for old, new in zip(committed_cells, fresh_cells):
        where = f"cell {old.get('id')}"
        if old.source != new.source:
            problems.append(f"{where}: the source differs")
            continue
        if old.execution_count != new.execution_count:
            problems.append(f"{where}: execution count {old.execution_count}, fresh {new.execution_count}")
        exact = not VOLATILE_TAGS & set(old.metadata.get("tags", ()))
        old_summaries, new_summaries = _summaries(old.outputs, exact), _summaries(new.outputs, exact)
        if old_summaries == new_summaries:
            continue
        if [kind for kind, _ in old_summaries] != [kind for kind, _ in new_summaries]:
            problems.append(
                f"{where}: committed outputs {[kind for kind, _ in old_summaries]}, "
                f"fresh {[kind for kind, _ in new_summaries]}"
            )
            continue
        for index, (a, b) in enumerate(zip(old_summaries, new_summaries)):
            if a != b:
                problems.append(f"{where}, output {index}: {_describe_difference(a, b)}")
    return problems


# --------------------------------------------------------------------------- command line


def _select(names: list[str]) -> dict[str, nbformat.NotebookNode]:
    notebooks = build()
    if not names:
        return notebooks
    selected = {}
    for prefix in names:
        matches = [name for name in notebooks if name.startswith(prefix)]
        if not matches:
            raise SystemExit(f"No notebook's name starts with {prefix!r}; the notebooks are {', '.join(notebooks)}.")
        selected.update((name, notebooks[name]) for name in matches)
    return selected


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write (and execute) the tutorial notebooks in notebooks/.")
    parser.add_argument("names", nargs="*", help="only the notebooks whose file names start with these")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--check", action="store_true", help="execute and compare with the committed notebooks; write nothing"
    )
    mode.add_argument(
        "--no-execute", action="store_true", help="write the notebooks without outputs (quick, for drafting)"
    )
    args = parser.parse_args(argv)

    from nbclient.exceptions import CellExecutionError

    failed = 0
    for name, nb in _select(args.names).items():
        path = os.path.join(HERE, name)
        if args.no_execute:
            nbformat.validate(nb)
            nbformat.write(nb, path)
            print(f"wrote {os.path.relpath(path)} (not executed)")
            continue
        try:
            fresh = execute(nb)
        except CellExecutionError as error:  # the cell and its traceback; the other notebooks still run
            failed += 1
            print(f"{name}: a cell raised, nothing written for it:\n{error}", file=sys.stderr)
            continue
        nbformat.validate(fresh)
        if args.check:
            problems = (
                stale_outputs(nbformat.read(path, as_version=4), fresh) if os.path.exists(path) else ["not written yet"]
            )
            failed += bool(problems)
            print(f"{name}: " + ("current" if not problems else "STALE\n  " + "\n  ".join(problems)))
            continue
        nbformat.write(fresh, path)
        print(f"wrote {os.path.relpath(path)} (executed)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
