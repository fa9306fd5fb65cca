"""The ``jaxonnx`` command line: a demo, ``run``, ``check``, ``bench`` and ``generate`` (``_cli_generate.py``).

The command owns its process, so it turns on JAX's 64-bit types (ONNX models use
int64 throughout) and tunes glibc's allocator for large outputs (``tune_cpu_allocator``);
the library itself never changes JAX's configuration or the process's allocator.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import logging
import os
import re
import statistics
import sys
import textwrap
import time

import numpy as np

from jaxonnx import _cli_generate

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

_DIM_ADVICE = "set them with `--dim NAME=N`, or whole shapes with `--shape INPUT=D1,D2,...`"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxonnx", description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="store_true", help="print the versions of jaxonnx, jax, onnx and onnxruntime")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("demo", help="run the bundled demo model (the default)")
    run = commands.add_parser("run", help="run a model and summarize its outputs")
    _add_input_options(run)
    run.add_argument("--jit", action="store_true", help="compile the whole graph with jax.jit (compile and run timed apart)")
    check = commands.add_parser("check", help="op counts, unsupported ops, and per node: op, resolved version, support")
    check.add_argument("model", help="path to an .onnx file")
    bench = commands.add_parser(
        "bench", help="load, compile and per-call time of the jitted model, and onnxruntime's on the same inputs"
    )
    _add_input_options(bench)
    bench.add_argument("--repeat", type=int, default=20, metavar="N", help="timed calls per runtime (default 20)")
    bench.add_argument("--warmup", type=int, default=2, metavar="N", help="untimed calls first (default 2)")
    bench.add_argument("--rtol", type=float, help="relative tolerance of the output check (default by dtype: 1e-4 for float32)")
    bench.add_argument("--atol", type=float, help="absolute tolerance of the output check (default by dtype: 1e-5 for float32)")
    bench.add_argument("--no-onnxruntime", action="store_true", help="time jaxonnx only")
    _cli_generate.add_parser(commands)
    return parser


def _add_input_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("model", help="path to an .onnx file")
    command.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy", help="an input from a .npy file (repeatable)")
    command.add_argument(
        "--dim", action="append", default=[], metavar="NAME=N",
        help="the length of a symbolic dim of the random inputs (repeatable), e.g. --dim batch=1 --dim height=640",
    )
    command.add_argument(
        "--shape", action="append", default=[], metavar="NAME=D1,D2,...",
        help="the whole shape of a random input (repeatable), e.g. --shape images=1,3,640,640",
    )
    command.add_argument(
        "--batch", type=int, metavar="N", help="the first dim of every random input whose first dim is symbolic or unknown"
    )
    command.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    command.add_argument("--size-hint", action="append", default=[], metavar="OUTPUT=N", help="the length to pad an output to whose length only the run decides (repeatable)")


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
            commands = {"run": _run, "check": _check, "bench": _bench, "generate": _cli_generate.run}
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


class _UsageError(Exception):
    """A command-line argument or file that the command cannot use (no traceback).

    Malformed arguments exit with 2, as argparse's own usage errors do; files that cannot
    be read exit with 1.
    """

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


class _RunFailed(Exception):
    """The model failed on the command's inputs: the message, and a note on the inputs."""

    def __init__(self, message: str, note: str | None):
        super().__init__(message)
        self.message = message
        self.note = note


@contextlib.contextmanager
def _quiet_callback_logs():
    """While the command runs, the traceback JAX logs for a failing host callback and the
    message jaxonnx logs from it are not printed: the command prints the message itself."""
    loggers = [logging.getLogger("jax._src.debugging"), logging.getLogger("jaxonnx")]
    saved = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, disabled in zip(loggers, saved):
            logger.disabled = disabled


#: Python spellings in library messages, and what a command-line user writes instead.
_PYTHON_TO_COMMAND_LINE = [
    (re.compile(r"`jaxonnx\.load\(model, size_hints=\{'([^']*)': <length>\}\)`"), r"`--size-hint \1=N`"),
    (re.compile(r"`size_hints=` of `jaxonnx\.load`, or (`--size-hint OUTPUT=N`) of the jaxonnx command"), r"\1"),
    (re.compile(r"`size_hints=` of `jaxonnx\.load`\)"), r"`--size-hint OUTPUT=N`)"),
]


def _for_the_command_line(error: Exception) -> str:
    """The error's message as a command-line user needs it: a failing host callback's
    jaxonnx message rather than JAX's traceback around it, and options instead of Python."""
    from jaxonnx import _errors

    message = str(error)
    if not isinstance(error, _errors.JaxOnnxError):
        # A JaxRuntimeError from a host callback carries the callback's traceback, which
        # ends with the jaxonnx error that the callback raised.
        names = "|".join(
            name for name, value in vars(_errors).items()
            if isinstance(value, type) and issubclass(value, _errors.JaxOnnxError)
        )
        raised = re.findall(rf"^(?:jaxonnx\._errors\.)?(?:{names}): (.*)$", message, flags=re.MULTILINE)
        if raised:
            message = raised[-1]
    for pattern, replacement in _PYTHON_TO_COMMAND_LINE:
        message = pattern.sub(replacement, message)
    return message


# --------------------------------------------------------------------------- the model and its inputs


def _read_model(path: str):
    """The model's protobuf, read once (``run`` and ``bench`` load it from this, and read
    their node details from it)."""
    from jaxonnx._core.loading import parse_model

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as error:
        raise _UsageError(f"Cannot read the ONNX model {path!r}: {error.strerror}.") from None
    return parse_model(data, repr(path))


@dataclasses.dataclass
class _Prepared:
    """A loaded model, the proto it came from, and the feed the command made for it."""

    model: object
    proto: object
    hints: dict[str, int]
    feed: dict[str, np.ndarray]
    random: list[str]  # the inputs that were made up
    dims: dict[str, tuple[int, str]]  # symbolic dim -> (length, where it came from)
    unknown: list[str]  # "input 'x' dim 2" for each unknown dim of a random input set to 1
    model_dir: str  # external data of a copy of the model is read from here
    load_s: float  # seconds to read and load the model

    def defaulted(self) -> list[str]:
        return [name for name, (_, source) in self.dims.items() if source == "default"]

    def random_note(self) -> str | None:
        """What a failing run needs said: which inputs were random and how to give others."""
        if not self.random:
            return None
        made = [f"{name} {list(self.feed[name].shape)}" for name in self.random]
        dims = [f"{name}={self.dims[name][0]}" for name in self.defaulted()]
        defaulted = (
            f"; the symbolic dims {', '.join(dims)} were not given and set to 1" if dims else ""
        ) + (f"; {', '.join(self.unknown)} (unknown) set to 1" if self.unknown else "")
        return (
            f"the model ran on made-up inputs: {', '.join(made)} {'was' if len(made) == 1 else 'were'} random"
            f"{defaulted}. Give real inputs "
            f"with `--input NAME=FILE.npy`, or {_DIM_ADVICE.replace('set them', 'set the dims')}."
        )


def _prepare(args) -> _Prepared:
    """Loads the model and makes its feed from --input, --shape, --dim and --batch."""
    import jaxonnx

    hints = {name: _integer(n, "--size-hint", name) for name, n in _pairs(args.size_hint, "--size-hint", "N")}
    inputs = _pairs(args.input, "--input", "FILE.npy")
    dim_values = {name: _integer(n, "--dim", name) for name, n in _pairs(args.dim, "--dim", "N")}
    shapes = {name: _shape(text, name) for name, text in _pairs(args.shape, "--shape", "D1,D2,...")}
    if args.batch is not None and args.batch < 0:
        raise _UsageError(f"--batch needs a non-negative N, got {args.batch}.", exit_code=2)
    start = time.perf_counter()
    proto = _read_model(args.model)
    model_dir = os.path.dirname(os.path.abspath(args.model))
    model = jaxonnx.load(proto, size_hints=hints, base_dir=model_dir)
    load_s = time.perf_counter() - start
    # Inputs with an initializer may be given too (they replace it); only the others are made up.
    declared_names = [value.name for value in proto.graph.input]
    unknown = [name for name, _ in inputs if name not in declared_names]
    if unknown:
        raise _UsageError(
            f"--input names {', '.join(map(repr, unknown))}, which {'is not an input' if len(unknown) == 1 else 'are not inputs'} "
            f"of the model; its inputs are {', '.join(declared_names) or 'none'}.",
            exit_code=2,
        )
    declared = {info.name: info for info in model.inputs}
    for name in shapes:
        if name not in declared:
            raise _UsageError(
                f"--shape names {name!r}, which is not an input of the model that the command makes up; "
                f"those are {', '.join(declared) or 'none'}.",
                exit_code=2,
            )
        if name in dict(inputs):
            raise _UsageError(f"--shape {name}=... and --input {name}=... both give the input {name!r}; give one.", exit_code=2)
    symbolic = {d for info in declared.values() for d in (info.shape or ()) if isinstance(d, str)}
    unused = sorted(set(dim_values) - symbolic)
    if unused:
        raise _UsageError(
            f"--dim names {', '.join(map(repr, unused))}, which no input of the model has as a symbolic dim; "
            f"its symbolic dims are {', '.join(sorted(symbolic)) or 'none'}.",
            exit_code=2,
        )
    given = {}
    for name, path in inputs:
        given[name] = _load_npy(name, path)

    dims: dict[str, tuple[int, str]] = {name: (n, "--dim") for name, n in dim_values.items()}

    def bind(dim: str, length: int, source: str) -> None:
        if dim in dims and dims[dim][0] != length:
            raise _UsageError(
                f"The symbolic dim {dim!r} is {dims[dim][0]} from {dims[dim][1]} but {length} from {source}; "
                "give it one length.",
                exit_code=2,
            )
        dims.setdefault(dim, (length, source))

    # Given inputs and whole shapes decide the symbolic dims they hold, so the random inputs
    # that share those dims get the same lengths (a Concat or Add of both then fits).
    # Two given inputs that disagree are the model's to judge (it may not care), not ours.
    for name, value in given.items():
        info = declared.get(name)
        if info is not None and info.shape is not None and len(info.shape) == value.ndim:
            for dim, length in zip(info.shape, value.shape):
                if isinstance(dim, str) and not dims.get(dim, (0, ""))[1].startswith("--input"):
                    bind(dim, length, f"--input {name}")
    for name, shape in shapes.items():
        info = declared[name]
        if info.shape is not None:
            fits = len(shape) == len(info.shape) and all(not isinstance(d, int) or d == n for d, n in zip(info.shape, shape))
            if not fits:
                raise _UsageError(
                    f"--shape {name}={','.join(map(str, shape))} does not fit the input's declared shape "
                    f"{_shape_text(info.shape)}.",
                    exit_code=2,
                )
            for dim, length in zip(info.shape, shape):
                if isinstance(dim, str):
                    bind(dim, length, f"--shape {name}")
    random_names = [name for name in model.input_names if name not in given]
    made_shapes: dict[str, list[int | str | None]] = {
        name: list(declared[name].shape) if declared[name].shape is not None else None for name in random_names
    }
    if args.batch is not None:
        for name in random_names:
            shape = made_shapes[name]
            if name in shapes or not shape or isinstance(shape[0], int):
                continue
            if isinstance(shape[0], str):
                bind(shape[0], args.batch, "--batch")
            else:
                shape[0] = args.batch
    unknown_dims = []
    rng = np.random.default_rng(args.seed)
    feed = {}
    for name in model.input_names:
        if name in given:
            feed[name] = given[name]
            continue
        info = declared[name]
        if name in shapes:
            shape = shapes[name]
        else:
            if made_shapes[name] is None:
                _no_random_value(info)
            shape = []
            for axis, dim in enumerate(made_shapes[name]):
                if isinstance(dim, str):
                    dims.setdefault(dim, (1, "default"))
                    shape.append(dims[dim][0])
                elif dim is None:
                    unknown_dims.append(f"input {name!r} dim {axis}")
                    shape.append(1)
                else:
                    shape.append(dim)
        if info.dtype is None:
            _no_random_value(info, shape_known=True)
        feed[name] = _random_value(tuple(shape), info.dtype, rng)
    feed.update({name: value for name, value in given.items() if name not in feed})
    return _Prepared(model, proto, hints, feed, random_names, dims, unknown_dims, model_dir, load_s)


def _no_random_value(info, shape_known: bool = False):
    """A usage error: the input's declaration lacks what a random value needs."""
    missing = [what for what, known in (("a shape", shape_known), ("an element type", info.dtype is not None)) if not known]
    advice = f"`--input {info.name}=FILE.npy`"
    if not shape_known and info.dtype is not None:
        advice += f", or its shape with `--shape {info.name}=D1,D2,...`"
    raise _UsageError(
        f"The input {info.name!r} is declared without {' or '.join(missing)} ({info.type}), so no random value "
        f"can be made for it; give one with {advice}.",
        exit_code=2,
    )


def _random_value(shape, dtype, rng: np.random.Generator):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, 4, size=shape).astype(dtype)
    if dtype == object:
        return np.array(rng.choice(["a", "b", "c"], size=shape), dtype=object)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _load_npy(name: str, path: str) -> np.ndarray:
    """An --input file: a .npy array, and for anything else a message that says what it is."""
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except OSError as error:
        raise _UsageError(f"Cannot read --input {name}={path}: {error.strerror}.") from None
    if magic[:4] == b"PK\x03\x04":
        raise _UsageError(
            f"Cannot read --input {name}={path}: it is an .npz archive; give each array as a .npy file "
            "(`numpy.save`)."
        )
    if magic != b"\x93NUMPY":
        raise _UsageError(f"Cannot read --input {name}={path}: it is not a .npy file (save arrays with `numpy.save`).")
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as error:
        if "Object arrays" in str(error) or "pickled" in str(error):
            raise _UsageError(
                f"Cannot read --input {name}={path}: it holds Python objects (a .npy of dtype object), "
                "which the command does not unpickle; save strings as a numpy str array."
            ) from None
        raise _UsageError(f"Cannot read --input {name}={path}: {error}") from None
    except OSError as error:
        raise _UsageError(f"Cannot read --input {name}={path}: {error}") from None


def _pairs(items, option: str, value_name: str) -> list[tuple[str, str]]:
    """``NAME=VALUE`` arguments of ``option`` as pairs; a malformed one is a usage error (exit 2)."""
    pairs = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise _UsageError(f"{option} needs NAME={value_name}, got {item!r}.", exit_code=2)
        pairs.append((name, value))
    return pairs


def _integer(text: str, option: str, name: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise _UsageError(f"{option} needs NAME=N with a non-negative integer N, got '{name}={text}'.", exit_code=2)
    return value


def _shape(text: str, name: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.split(",")] if text.strip() else []
    if not all(p.isdigit() for p in parts):
        raise _UsageError(
            f"--shape needs NAME=D1,D2,... with non-negative integers (NAME= for a scalar), got '{name}={text}'.",
            exit_code=2,
        )
    return tuple(int(p) for p in parts)


def _shape_text(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _print_inputs(prepared: _Prepared) -> None:
    print(f"{prepared.model}")
    for name, value in prepared.feed.items():
        source = "random" if name in prepared.random else "given"
        print(f"  input {name}: shape {list(value.shape)}, dtype {value.dtype} ({source})")
    if prepared.dims:
        where = {"--dim": "--dim", "default": "not given: 1"}
        print("  symbolic dims: " + ", ".join(
            f"{name}={length} ({where.get(source, 'from ' + source)})" for name, (length, source) in prepared.dims.items()
        ))
    if prepared.defaulted() or prepared.unknown:
        unknown = f"; {', '.join(prepared.unknown)} (unknown) set to 1" if prepared.unknown else ""
        print(f"  note: dims not given were set to 1{unknown}; {_DIM_ADVICE}.")


# --------------------------------------------------------------------------- size-hinted outputs


@dataclasses.dataclass(frozen=True)
class _Hinted:
    """A graph output of a size-hinted node: its padded length, and how much of it is real."""

    node: str
    op_type: str
    size: int
    axis: int  # the axis along which the output has `size` entries
    source: str  # the value whose non-zero count is the real length (Compress: the condition; NonZero: its input)
    count: int | None = None  # the real length, if it could be computed


def _hinted_outputs(prepared: _Prepared, *, jit: bool) -> dict[str, _Hinted]:
    """The size-hinted graph outputs, with their real lengths. Compress selects as many
    slices as its condition has true entries, NonZero finds as many columns as its input has
    non-zeros; the rest of the hinted length is padding (Compress pads zeros, which real
    slices can be too, so the count is taken from the condition, not from the output)."""
    from onnx import helper

    outputs = {o.name for o in prepared.proto.graph.output}
    found = {}
    for index, node in enumerate(prepared.proto.graph.node):
        for name in node.output:
            if name not in prepared.hints or name not in outputs:
                continue
            label = node.name or f"{node.op_type}_{index}"
            if node.op_type == "Compress":
                axis = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "axis"), None)
                found[name] = _Hinted(label, "Compress", prepared.hints[name], axis or 0, node.input[1])
            elif node.op_type == "NonZero":
                found[name] = _Hinted(label, "NonZero", prepared.hints[name], 1, node.input[0])
    if not found:
        return found
    counts = _non_zero_counts(prepared, sorted({h.source for h in found.values()}), jit=jit)
    return {name: dataclasses.replace(h, count=counts.get(h.source)) for name, h in found.items()}


def _non_zero_counts(prepared: _Prepared, names: list[str], *, jit: bool) -> dict[str, int]:
    """The number of non-zeros of each named value of the graph on the command's feed: a copy
    of the model with those values as its outputs runs once more ({} if it cannot)."""
    import jax
    import onnx

    import jaxonnx

    extra = onnx.ModelProto()
    extra.CopyFrom(prepared.proto)
    del extra.graph.output[:]
    extra.graph.output.extend(onnx.ValueInfoProto(name=name) for name in names)  # no type: any
    try:
        model = jaxonnx.load(extra, size_hints=prepared.hints, base_dir=prepared.model_dir)
        values = (jax.jit(model.run) if jit else model.run)(prepared.feed)
        return {name: int(np.count_nonzero(np.asarray(values[name]))) for name in names}
    except Exception:  # noqa: BLE001  (the summary then shows the padded length only)
        return {}


def _real_part(value, hinted: _Hinted | None):
    """The entries of a size-hinted output before its padding (the whole value otherwise),
    and the text that says how many of the padded length are real."""
    value = np.asarray(value)
    if hinted is None or value.ndim <= hinted.axis:
        return value, ""
    length = value.shape[hinted.axis]
    unit = "column" if hinted.op_type == "NonZero" else "row" if hinted.axis == 0 else f"slice along axis {hinted.axis}"
    if hinted.count is None or hinted.count > length:
        return value, f", size hint {hinted.size} (how many {unit}s are real is unknown)"
    plural = "s" if hinted.count != 1 else ""
    return (
        np.take(value, np.arange(hinted.count), axis=hinted.axis),
        f", size hint {hinted.size}: {hinted.count} real {unit}{plural} + {length - hinted.count} padding",
    )


def _summary(value) -> str:
    value = np.asarray(value)
    if value.dtype == object or value.size == 0:
        return f"values {value.reshape(-1)[:4].tolist()}"
    if value.dtype.kind in "biuf":
        as_float = value.astype(np.float64)
        return f"min {as_float.min():.6g}, max {as_float.max():.6g}, mean {as_float.mean():.6g}"
    return f"first {value.reshape(-1)[:3].tolist()}"


def _print_outputs(outputs: dict, hinted: dict[str, _Hinted]) -> None:
    for name, value in outputs.items():
        real, note = _real_part(value, hinted.get(name))
        of_real = " (of the real entries)" if note and real.size != np.size(value) else ""
        print(f"  {name}: shape {list(np.shape(value))}, dtype {value.dtype}{note}, {_summary(real)}{of_real}")


_OVERFLOW = re.compile(r"(Compress|NonZero) (?:selected|found) (\d+) .*? at run time but its output was given size=(\d+)")


#: The same overflow found by the eager path, which knows the node (the interpreter names it).
_EAGER_OVERFLOW = re.compile(r"^Node '([^']*)' \((?:Compress|NonZero)-\d+, .*?(?:selected|found) (\d+) .*?but `size`=\d+")


def _failure(error: Exception, prepared: _Prepared) -> _RunFailed:
    """The command's message for a model that failed on its inputs: a size-hint overflow
    names the output (and the hint that fits), and made-up inputs are said to be made up."""
    message = _for_the_command_line(error)
    overflow = _OVERFLOW.search(message)
    if overflow:
        op_type, count, size = overflow.group(1), int(overflow.group(2)), int(overflow.group(3))
        candidates = [
            (name, node) for index, node in enumerate(prepared.proto.graph.node)
            if node.op_type == op_type for name in node.output if prepared.hints.get(name) == size
        ]
        if candidates:
            names = " or ".join(repr(name) for name, _ in candidates)
            nodes = ", ".join(repr(node.name or node.op_type) for _, node in candidates)
            option = f"`--size-hint {candidates[0][0]}={count}`" if len(candidates) == 1 else f"`--size-hint OUTPUT={count}`"
            message = (
                f"The size-hinted output {names} (node {nodes}) overflowed: "
                + message.replace("`--size-hint OUTPUT=N`", f"{option} or more")
            )
    eager = _EAGER_OVERFLOW.search(message)
    if eager:
        label, count = eager.group(1), int(eager.group(2))
        outputs = [
            node.output[0] for index, node in enumerate(prepared.proto.graph.node)
            if (node.name or f"{node.op_type}_{index}") == label
        ]
        if outputs:
            message = message.replace(
                "Give a larger `size`.",
                f"Give its output {outputs[0]!r} a larger size hint: `--size-hint {outputs[0]}={count}` or more.",
            )
    return _RunFailed(message, prepared.random_note())


# --------------------------------------------------------------------------- run


def _run(args) -> int:
    import jax

    from jaxonnx._errors import JaxOnnxError

    prepared = _prepare(args)
    feed = prepared.feed
    _print_inputs(prepared)
    try:
        if args.jit:
            strings = [name for name, value in feed.items() if value.dtype == object]
            if strings:
                raise _UsageError(
                    f"The input {strings[0]!r} is a string tensor, which JAX cannot hold under jax.jit; "
                    "run without --jit (string tensors run on the eager path)."
                )
            device_feed = jax.device_put(feed)
            start = time.perf_counter()
            lowered = jax.jit(prepared.model.run).lower(device_feed)
            traced = time.perf_counter()
            compiled = lowered.compile()
            ready = time.perf_counter()
            outputs = jax.block_until_ready(compiled(device_feed))
            done = time.perf_counter()
            outputs = {name: outputs[name] for name in prepared.model.output_names}  # jit sorts dict keys
            print(
                f"jax.jit: traced and lowered in {_ms(traced - start)}, compiled in {_ms(ready - traced)}; "
                f"ran in {_ms(done - ready)} (the first call of the compiled function):"
            )
        else:
            start = time.perf_counter()
            outputs = prepared.model.run(feed)
            jax.block_until_ready([v for v in outputs.values() if isinstance(v, jax.Array)])
            print(f"ran eagerly in {_ms(time.perf_counter() - start)} ({prepared.model.eager_mode}; the first call compiles):")
    except (JaxOnnxError, jax.errors.JaxRuntimeError) as error:
        raise _failure(error, prepared) from error
    _print_outputs(outputs, _hinted_outputs(prepared, jit=args.jit))
    return 0


def _ms(seconds: float) -> str:
    ms = 1e3 * seconds
    return f"{ms:.1f} ms" if ms >= 1 else f"{ms:.3f} ms"


# --------------------------------------------------------------------------- bench


#: The default (rtol, atol) of bench's output check, by element type.
_TOLERANCES = {"float16": (1e-2, 1e-3), "bfloat16": (2e-2, 1e-2), "float32": (1e-4, 1e-5), "float64": (1e-7, 1e-9)}


def _bench(args) -> int:
    import jax

    from jaxonnx._errors import JaxOnnxError

    if args.repeat < 1 or args.warmup < 0:
        raise _UsageError(f"--repeat needs N >= 1 and --warmup N >= 0, got {args.repeat} and {args.warmup}.", exit_code=2)
    prepared = _prepare(args)
    feed = prepared.feed
    _print_inputs(prepared)
    strings = [name for name, value in feed.items() if value.dtype == object]
    if strings:
        raise _UsageError(f"The input {strings[0]!r} is a string tensor, which JAX cannot hold under jax.jit; bench times jitted models only.")
    device = jax.devices()[0]
    try:
        device_feed = jax.block_until_ready(jax.device_put(feed))
        start = time.perf_counter()
        lowered = jax.jit(prepared.model.run).lower(device_feed)
        traced = time.perf_counter()
        compiled = lowered.compile()
        compile_s = time.perf_counter() - traced
        trace_s = traced - start
        times, outputs = _timed(lambda: jax.block_until_ready(compiled(device_feed)), args.warmup, args.repeat)
    except (JaxOnnxError, jax.errors.JaxRuntimeError) as error:
        raise _failure(error, prepared) from error
    outputs = {name: outputs[name] for name in prepared.model.output_names}  # jit sorts dict keys
    kind = device.platform if device.device_kind.lower() == device.platform else f"{device.platform} ({device.device_kind})"
    print(f"jaxonnx: load {_ms(prepared.load_s)}, trace and lower {_ms(trace_s)}, compile {_ms(compile_s)}")
    print(f"jaxonnx, jax.jit on {kind}: {_timing(times)}")
    hinted = _hinted_outputs(prepared, jit=True)
    runtime = None if args.no_onnxruntime else _onnxruntime()
    if runtime is None:
        if not args.no_onnxruntime:
            print("onnxruntime: not installed (pip install onnxruntime), so no comparison")
        _print_outputs(outputs, hinted)
        return 0
    start = time.perf_counter()
    try:
        # Azure's provider runs no ops of its own; the others in onnxruntime's order of preference.
        providers = [p for p in runtime.get_available_providers() if p != "AzureExecutionProvider"]
        options = runtime.SessionOptions()
        options.log_severity_level = 3  # errors only: its warnings are about the model, not the timing
        session = runtime.InferenceSession(args.model, options, providers=providers)
    except Exception as error:  # noqa: BLE001  (onnxruntime's own errors, e.g. an op it lacks)
        print(f"onnxruntime {runtime.__version__}: cannot load the model: {str(error).strip().splitlines()[0]}")
        _print_outputs(outputs, hinted)
        return 0
    session_s = time.perf_counter() - start
    ort_feed = dict(feed)  # initializers given with --input too: onnxruntime takes them by name
    try:
        ort_times, ort_outputs = _timed(lambda: session.run(None, ort_feed), args.warmup, args.repeat)
    except Exception as error:  # noqa: BLE001
        print(f"onnxruntime {runtime.__version__}: cannot run the model: {str(error).strip().splitlines()[0]}")
        _print_outputs(outputs, hinted)
        return 0
    print(f"onnxruntime {runtime.__version__}: session {_ms(session_s)}")
    print(f"onnxruntime, {', '.join(session.get_providers())}: {_timing(ort_times)}")
    ratio = statistics.median(ort_times) / statistics.median(times)
    print(f"ratio onnxruntime / jaxonnx median time: {ratio:.2f} (above 1: jaxonnx is faster)")
    names = [o.name for o in session.get_outputs()]
    agree = _compare(outputs, dict(zip(names, ort_outputs)), hinted, args)
    return 0 if agree else 1


def _onnxruntime():
    try:
        import onnxruntime
    except ImportError:
        return None
    return onnxruntime


def _timed(call, warmup: int, repeat: int):
    """Per-call times in seconds of ``repeat`` calls after ``warmup`` untimed ones, and the
    last call's result (``call`` waits for its result: ``block_until_ready`` for JAX)."""
    result = None
    for _ in range(warmup):
        result = call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return times, result


def _timing(times) -> str:
    return (
        f"median {_ms(statistics.median(times))} per call over {len(times)} call{'s' if len(times) > 1 else ''} "
        f"(min {_ms(min(times))}, max {_ms(max(times))})"
    )


def _compare(outputs: dict, expected: dict, hinted: dict[str, _Hinted], args) -> bool:
    """Prints, per output, the largest differences from onnxruntime's and whether they are
    within the tolerance; size-hinted outputs compare their real entries only."""
    print("outputs against onnxruntime (pass: |jaxonnx - onnxruntime| <= atol + rtol * |onnxruntime| everywhere):")
    all_pass = True
    for name, value in outputs.items():
        value, note = _real_part(value, hinted.get(name))
        reference = np.asarray(expected[name])
        if value.shape != reference.shape:
            print(f"  {name}: FAIL: shape {list(value.shape)}{note}, onnxruntime's {list(reference.shape)}")
            all_pass = False
            continue
        if value.dtype.kind not in "fc":
            ok = bool(np.array_equal(value, reference.astype(value.dtype) if value.dtype != object else reference))
            mismatches = int(np.sum(value != reference)) if value.dtype != object else int(not ok)
            print(f"  {name}: {'pass' if ok else 'FAIL'}: {value.dtype} compared exactly, {mismatches} entries differ{note}")
            all_pass &= ok
            continue
        default_rtol, default_atol = _TOLERANCES.get(str(value.dtype), _TOLERANCES["float32"])
        rtol = default_rtol if args.rtol is None else args.rtol
        atol = default_atol if args.atol is None else args.atol
        a = value.astype(np.complex128 if value.dtype.kind == "c" else np.float64)
        b = reference.astype(a.dtype)
        diff = np.abs(a - b)
        both_nan = np.isnan(a) & np.isnan(b)
        diff = np.where(both_nan, 0.0, diff)
        finite = ~np.isnan(diff)
        max_abs = float(diff.max()) if diff.size else 0.0
        nonzero = np.abs(b) > 0
        max_rel = float((diff[nonzero] / np.abs(b[nonzero])).max()) if nonzero.any() else 0.0
        ok = bool(np.all(finite & (diff <= atol + rtol * np.abs(np.where(np.isnan(b), 0, b)))))
        print(
            f"  {name}: {'pass' if ok else 'FAIL'}: max abs diff {max_abs:.3g}, max rel diff {max_rel:.3g} "
            f"(rtol {rtol:g}, atol {atol:g} for {value.dtype}){note}"
        )
        all_pass &= ok
    print("outputs agree" if all_pass else "outputs DIFFER from onnxruntime's")
    return all_pass


# --------------------------------------------------------------------------- check


def _walk(graph, prefix: str = ""):
    """``(path, node, in a subgraph?)`` of every node, subgraph bodies (GRAPH and GRAPHS attributes) right
    after the node that holds them. Paths name unnamed nodes as the interpreter does
    (``<op>_<index in its graph>``); a subgraph node's path starts with the holding node's,
    e.g. ``/If_0/then_branch/Add_2``."""
    from onnx import AttributeProto

    for index, node in enumerate(graph.node):
        name = node.name or f"{node.op_type}_{index}"
        path = f"{prefix}/{name}" if prefix else name
        yield path, node, bool(prefix)
        here = f"{prefix}/{name}"
        for attribute in node.attribute:
            if attribute.type == AttributeProto.GRAPH:
                yield from _walk(attribute.g, f"{here}/{attribute.name}")
            elif attribute.type == AttributeProto.GRAPHS:
                for i, body in enumerate(attribute.graphs):
                    yield from _walk(body, f"{here}/{attribute.name}[{i}]")


def _wrapped(lead: str, items: list[str], width: int = 100) -> str:
    """``lead`` and the comma-separated ``items`` in lines of at most ``width`` characters,
    never breaking inside an item (``Conv 12`` stays on one line)."""
    glued = [item.replace(" ", "\xa0") for item in items]  # textwrap breaks at ASCII spaces only
    text = textwrap.fill(lead + ", ".join(glued), width=width, subsequent_indent="  ", break_on_hyphens=False)
    return text.replace("\xa0", " ")


def _elide(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: the middle gives way to "...", since node
    names differ most at their ends (``/model/backbone/.../Conv_12``)."""
    if len(text) <= width:
        return text
    head = (width - 3) // 2
    return f"{text[:head]}...{text[len(text) - (width - 3 - head):]}"


def _function_body(op_type: str, opset, domain: str):
    """``"Op-N (body)"`` when onnx defines ``op_type`` with a function body at ``opset``,
    which jaxonnx runs when it does not register the op; else None."""
    import onnx

    if opset is None:
        return None
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None
    if schema.has_function or schema.has_context_dependent_function:
        return f"{op_type}-{schema.since_version} (body)"
    return None


def _check(args) -> int:
    import jaxonnx
    from jaxonnx._core.loading import canonical_domain, opset_versions
    from jaxonnx._errors import UnsupportedOpError

    proto = _read_model(args.model)
    opsets = opset_versions(proto)  # a domain imported twice is a ModelLoadError
    # As `load` does (and onnxruntime): a top-level node's domain the file imports no version of
    # runs at the newest registered one (convert_generation's T5 BeamSearch files, for one).
    for domain in sorted({canonical_domain(n.domain) for n in proto.graph.node} - set(opsets) - {""}):
        known = [v for versions in jaxonnx.supported_ops(domain).values() for v in versions]
        if known:
            opsets[domain] = max(known)
    rows = []  # (path, op, resolved, status)
    in_subgraphs = 0
    op_counts: dict[str, int] = {}
    unsupported: dict[str, list[int]] = {}  # op -> [top-level nodes, subgraph nodes]
    local_functions = {(f.domain, f.name) for f in proto.functions}
    for path, node, nested in _walk(proto.graph):
        domain = canonical_domain(node.domain)
        op = node.op_type if not domain else f"{node.domain}.{node.op_type}"
        op_counts[op] = op_counts.get(op, 0) + 1
        try:
            if (node.domain, node.op_type) in local_functions:
                rows.append((path, op, "local function", "supported (the model's own function)"))
                in_subgraphs += nested
                continue
            body = _function_body(node.op_type, opsets.get(domain), domain)
            if body and node.op_type not in jaxonnx.supported_ops(domain):
                rows.append((path, op, body, "supported (onnx's function body)"))
                in_subgraphs += nested
                continue
            if domain not in opsets:
                raise UnsupportedOpError(f"the model imports no opset for the domain {node.domain!r}")
            if not jaxonnx.supported_ops(domain):
                raise UnsupportedOpError(f"jaxonnx knows no ops of the domain {node.domain!r}")
            if node.op_type not in jaxonnx.supported_ops(domain):
                raise UnsupportedOpError("jaxonnx does not implement this op")
            resolved = jaxonnx.get_op(node.op_type, opsets[domain], domain).name
            status = "supported"
        except UnsupportedOpError as error:
            resolved, status = "-", f"NOT supported: {error}"
            counts = unsupported.setdefault(op, [0, 0])
            counts[nested] += 1
        rows.append((path, op, resolved, status))
        in_subgraphs += nested

    top_level = len(rows) - in_subgraphs
    opset_text = ", ".join(f"{domain or 'ai.onnx'} {version}" for domain, version in opsets.items())
    print(
        f"{args.model}: opset {opset_text}; {top_level} node{'' if top_level == 1 else 's'}"
        + (f" and {in_subgraphs} more in subgraphs" if in_subgraphs else "")
        + f", {len(op_counts)} op types"
    )
    print(_wrapped("ops: ", [f"{op} {n}" for op, n in sorted(op_counts.items(), key=lambda item: (-item[1], item[0]))]))
    if unsupported:
        total = sum(sum(c) for c in unsupported.values())

        def where(top: int, sub: int) -> str:
            nodes = f"{top + sub} node{'s' if top + sub > 1 else ''}"
            return nodes if not sub else f"{nodes}, {sub} in subgraphs"

        ops = [f"{op} ({where(*c)})" for op, c in sorted(unsupported.items(), key=lambda item: (-sum(item[1]), item[0]))]
        print(_wrapped(f"NOT supported: {total} of {len(rows)} nodes; ", ops))
    else:
        print("all nodes supported")
    print()
    widths = [
        min(max(len(header), *(len(row[i]) for row in rows)) if rows else len(header), limit)
        for i, (header, limit) in enumerate([("node", 48), ("op", 24), ("resolved", 24)])
    ]
    print(f"  {'node':<{widths[0]}}  {'op':<{widths[1]}}  {'resolved':<{widths[2]}}  status")
    for row in rows:
        cells = [_elide(cell, width).ljust(width) for cell, width in zip(row, widths)]
        print(f"  {'  '.join(cells)}  {row[3]}")
    if not unsupported:
        return 0
    for domain in sorted({op.rsplit(".", 1)[0] if "." in op else "" for op in unsupported}):
        # the ops of the unsupported ops' own domain, the near names first: the default
        # domain's 200 say nothing about a com.microsoft op
        known = list(jaxonnx.supported_ops(domain))
        missing = [op.rsplit(".", 1)[-1] for op in unsupported if (op.rsplit(".", 1)[0] if "." in op else "") == domain]
        near = list(dict.fromkeys(n for op in missing for n in difflib.get_close_matches(op, known, n=3, cutoff=0.6)))
        if near:
            print(f"near names in {domain or 'ai.onnx'}: {', '.join(near)}")
        print(_wrapped(f"jaxonnx supports in {domain or 'ai.onnx'}: ", known) if known
              else f"jaxonnx knows no ops of the domain {domain!r}")
    return 1


# --------------------------------------------------------------------------- the demo


def _demo() -> int:
    import jax
    import jax.numpy as jnp

    import jaxonnx
    from jaxonnx._demo import DEMO_INDICES, DEMO_KEEP, DEMO_PATH, DEMO_ROWS

    model = jaxonnx.load(DEMO_PATH)
    print(f"Loaded the bundled demo: {model}")
    for name, op, version in model.describe_nodes():
        print(f"  node {name:<20} {op:<15} resolved to {version}")
    print("The graph: odd = x[:, 1::2] (Slice); mixed = Where(keep, GatherElements(odd, indices, axis=1), odd);")
    print("           y = Flatten(Compress(mixed, rows, axis=0), axis=0), with")
    for name, value in (("indices", DEMO_INDICES), ("keep", DEMO_KEEP), ("rows", DEMO_ROWS)):
        print(f"  {name} = {value.tolist()}")
    x = jnp.arange(24, dtype=jnp.float32).reshape(4, 6)
    print("x = jnp.arange(24, dtype=jnp.float32).reshape(4, 6):")
    for row in np.asarray(x).tolist():
        print("  ", row)
    (eager,) = model(x)
    print(f"eager:    y = {np.asarray(eager).tolist()}")
    compiled = jax.jit(model)
    (jitted,) = compiled(x)
    print(f"jax.jit:  y = {np.asarray(jitted).tolist()} (equal to eager: {bool(jnp.array_equal(eager, jitted))})")
    jaxpr = jax.make_jaxpr(model)(x)
    print(f"jax.jit traces the whole graph into one jaxpr of {len(jaxpr.jaxpr.eqns)} primitives (Constant values folded in)")
    grad = jax.grad(lambda v: jnp.sum(model(v)[0] ** 2))(x)
    print("gradient of sum(y**2) with respect to x (nonzero where x reaches y):")
    for row in np.asarray(grad).tolist():
        print("  ", row)
    return 0
