"""The ``jaxonnx`` command line: a demo, ``run``, ``check``, ``bench`` and ``generate``, one
module each; ``inputs`` makes up or reads their inputs, ``hints`` explains size-hinted
outputs, ``errors`` holds the command's own errors.

The command owns its process, so it turns on JAX's 64-bit types (ONNX models use
int64 throughout) and tunes glibc's allocator for large outputs (``tune_cpu_allocator``);
the library itself never changes JAX's configuration or the process's allocator.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from jaxonnx.cli import generate
from jaxonnx.cli.bench import _bench
from jaxonnx.cli.check import _check
from jaxonnx.cli.demo import _demo
from jaxonnx.cli.errors import _for_the_command_line, _quiet_callback_logs, _RunFailed, _UsageError
from jaxonnx.cli.inputs import _add_input_options
from jaxonnx.cli.run import _run

_DESCRIPTION = """Run ONNX models as JAX functions.

  jaxonnx                      run the bundled demo model (load, run, jit, a gradient)
  jaxonnx run MODEL.onnx       run a model on random or given inputs
  jaxonnx check MODEL.onnx     op counts, unsupported ops, each node's resolved version
  jaxonnx bench MODEL.onnx     compile and per-call time of the jitted model, beside onnxruntime
  jaxonnx generate MODEL_DIR   text from a causal LM: --prompt "..." (or --prompt-ids 1,2,3)

run and bench make a random value for every input not given with --input NAME=FILE.npy,
from its declared shape: set symbolic dims with --dim NAME=N (they default to 1), whole
shapes with --shape NAME=D1,D2,..., or the first dim of every input whose first dim is not
fixed with --batch N.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxonnx", description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--version", action="store_true", help="print the versions of jaxonnx, jax, onnx and onnxruntime"
    )
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("demo", help="run the bundled demo model (the default)")
    run = commands.add_parser("run", help="run a model and summarize its outputs")
    _add_input_options(run)
    run.add_argument(
        "--jit", action="store_true", help="compile the whole graph with jax.jit (compile and run timed apart)"
    )
    check = commands.add_parser("check", help="op counts, unsupported ops, and per node: op, resolved version, support")
    check.add_argument("model", help="path to an .onnx file")
    bench = commands.add_parser(
        "bench", help="load, compile and per-call time of the jitted model, and onnxruntime's on the same inputs"
    )
    _add_input_options(bench)
    bench.add_argument("--repeat", type=int, default=20, metavar="N", help="timed calls per runtime (default 20)")
    bench.add_argument("--warmup", type=int, default=2, metavar="N", help="untimed calls first (default 2)")
    bench.add_argument(
        "--rtol", type=float, help="relative tolerance of the output check (default by dtype: 1e-4 for float32)"
    )
    bench.add_argument(
        "--atol", type=float, help="absolute tolerance of the output check (default by dtype: 1e-5 for float32)"
    )
    bench.add_argument("--no-onnxruntime", action="store_true", help="time jaxonnx only")
    generate.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.version:
        print(_versions())
        return 0
    from jaxonnx._tuning import tune_cpu_allocator

    # Also done on import unless JAXONNX_KEEP_ALLOCATOR opts out; the command owns its
    # process, so it reuses freed large buffers either way (see jaxonnx._tuning).
    tune_cpu_allocator()
    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxonnx._errors import JaxOnnxError

    try:
        with _quiet_callback_logs():
            commands = {"run": _run, "check": _check, "bench": _bench, "generate": generate.run}
            code = commands[args.command](args) if args.command in commands else _demo()
            sys.stdout.flush()  # a closed pipe raises here, inside the `except` below
            return code
    except _UsageError as error:
        print(f"jaxonnx: error: {error}", file=sys.stderr)
        return error.exit_code
    except _RunFailed as failure:
        print(f"jaxonnx: error: {failure.message}", file=sys.stderr)
        if failure.note:
            print(f"jaxonnx: note: {failure.note}", file=sys.stderr)
        return 1
    except (JaxOnnxError, jax.errors.JaxRuntimeError) as error:
        print(f"jaxonnx: error: {_for_the_command_line(error)}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`jaxonnx | head`): stop quietly, and keep Python's final
        # flush of stdout from raising again (the recipe of Python's `signal` docs).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _versions() -> str:
    """One line: jaxonnx's version and those of what it runs on (onnxruntime if installed)."""
    import importlib.metadata
    import platform

    import jax
    import onnx

    import jaxonnx

    try:
        onnxruntime = importlib.metadata.version("onnxruntime")
    except importlib.metadata.PackageNotFoundError:
        onnxruntime = "not installed"
    return (
        f"jaxonnx {jaxonnx.__version__} (jax {jax.__version__}, jaxlib {importlib.metadata.version('jaxlib')}, "
        f"onnx {onnx.__version__}, numpy {np.__version__}, onnxruntime {onnxruntime}, "
        f"Python {platform.python_version()})"
    )
