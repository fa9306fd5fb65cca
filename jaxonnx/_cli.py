"""The ``jaxonnx`` command line: a demo, ``run`` and ``check``.

The command owns its process, so it turns on JAX's 64-bit types (ONNX models use
int64 throughout) and tunes glibc's allocator for large outputs (``tune_cpu_allocator``);
the library itself never changes JAX's configuration or the process's allocator.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import sys
import time

import numpy as np

_DESCRIPTION = """Run ONNX models as JAX functions.

  jaxonnx                      run the bundled demo model (load, run, jit, a gradient)
  jaxonnx run MODEL.onnx       run a model on random or given inputs
  jaxonnx check MODEL.onnx     show each node's op, resolved version and support
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxonnx", description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("demo", help="run the bundled demo model (the default)")
    run = commands.add_parser("run", help="run a model and summarize its outputs")
    run.add_argument("model", help="path to an .onnx file")
    run.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy", help="an input from a .npy file (repeatable)")
    run.add_argument("--jit", action="store_true", help="compile the whole graph with jax.jit")
    run.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    run.add_argument("--size-hint", action="append", default=[], metavar="OUTPUT=N", help="Compress output length (repeatable)")
    check = commands.add_parser("check", help="per node: op, resolved version, supported")
    check.add_argument("model", help="path to an .onnx file")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from jaxonnx._tuning import tune_cpu_allocator

    # The command owns its process: reuse freed large buffers (see jaxonnx._tuning).
    tune_cpu_allocator()
    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxonnx._errors import JaxOnnxError

    try:
        with _quiet_callback_logs():
            commands = {"run": _run, "check": _check}
            code = commands[args.command](args) if args.command in commands else _demo()
            sys.stdout.flush()  # a closed pipe raises here, inside the `except` below
            return code
    except _UsageError as error:
        print(f"jaxonnx: error: {error}", file=sys.stderr)
        return error.exit_code
    except (JaxOnnxError, jax.errors.JaxRuntimeError) as error:
        print(f"jaxonnx: error: {_for_the_command_line(error)}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`jaxonnx | head`): stop quietly, and keep Python's final
        # flush of stdout from raising again (the recipe of Python's `signal` docs).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


class _UsageError(Exception):
    """A command-line argument or file that the command cannot use (no traceback).

    Malformed arguments exit with 2, as argparse's own usage errors do; files that cannot
    be read exit with 1.
    """

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


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


def _summary(value) -> str:
    value = np.asarray(value)
    if value.dtype == object or value.size == 0:
        return f"values {value.reshape(-1)[:4].tolist()}"
    if value.dtype.kind in "biuf":
        as_float = value.astype(np.float64)
        return f"min {as_float.min():.6g}, max {as_float.max():.6g}, mean {as_float.mean():.6g}"
    return f"first {value.reshape(-1)[:3].tolist()}"


def _print_outputs(names, outputs) -> None:
    for name, value in zip(names, outputs):
        print(f"  {name}: shape {list(np.shape(value))}, dtype {value.dtype}, {_summary(value)}")


def _random_input(declared, rng: np.random.Generator):
    """A random value of a declared input; symbolic and unknown dims get length 1."""
    missing = [what for what, known in (("a shape", declared.shape is not None), ("an element type", declared.dtype is not None)) if not known]
    if missing:
        raise _UsageError(
            f"the input {declared.name!r} is declared without {' or '.join(missing)} ({declared.type_text()}), "
            f"so no random value can be made for it; give one with `--input {declared.name}=FILE.npy`.",
            exit_code=2,
        )
    shape = tuple(d if isinstance(d, int) else 1 for d in declared.shape)
    dtype = declared.dtype
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, 4, size=shape).astype(dtype)
    if dtype == object:
        return np.array(rng.choice(["a", "b", "c"], size=shape), dtype=object)
    return rng.standard_normal(shape).astype(dtype)


def _pairs(items, option: str, value_name: str) -> list[tuple[str, str]]:
    """``NAME=VALUE`` arguments of ``option`` as pairs; a malformed one is a usage error (exit 2)."""
    pairs = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise _UsageError(f"{option} needs NAME={value_name}, got {item!r}.", exit_code=2)
        pairs.append((name, value))
    return pairs


def _run(args) -> int:
    import jax

    import jaxonnx

    hints = {}
    for name, n in _pairs(args.size_hint, "--size-hint", "N"):
        try:
            hints[name] = int(n)
        except ValueError:
            raise _UsageError(f"--size-hint needs NAME=N with an integer N, got '{name}={n}'.", exit_code=2) from None
    inputs = _pairs(args.input, "--input", "FILE.npy")
    model = jaxonnx.load(args.model, size_hints=hints)
    unknown = [name for name, _ in inputs if name not in model._declared]
    if unknown:
        raise _UsageError(
            f"--input names {', '.join(map(repr, unknown))}, which {'is not an input' if len(unknown) == 1 else 'are not inputs'} "
            f"of the model; its inputs are {', '.join(model._declared) or 'none'}.",
            exit_code=2,
        )
    given = {}
    for name, path in inputs:
        try:
            given[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as error:
            raise _UsageError(f"cannot read --input {name}={path}: {error}") from None
    rng = np.random.default_rng(args.seed)
    feed = {
        name: given[name] if name in given else _random_input(model._declared[name], rng)
        for name in model.input_names
    }
    feed.update({k: v for k, v in given.items() if k not in feed})
    print(f"{model}")
    for name, value in feed.items():
        source = "given" if name in given else "random"
        print(f"  input {name}: shape {list(value.shape)}, dtype {value.dtype} ({source})")
    fn = model.run
    if args.jit:
        strings = [name for name, value in feed.items() if value.dtype == object]
        if strings:
            raise _UsageError(
                f"the input {strings[0]!r} is a string tensor, which JAX cannot hold under jax.jit; "
                "run without --jit (string tensors run on the eager path)."
            )
        fn = jax.jit(model.run)
        feed = {k: (v if v.dtype == object else jax.numpy.asarray(v)) for k, v in feed.items()}
    start = time.perf_counter()
    outputs = fn(feed)
    jax.block_until_ready([v for v in outputs.values() if isinstance(v, jax.Array)])
    print(f"ran {'under jax.jit' if args.jit else 'eagerly'} in {1e3 * (time.perf_counter() - start):.1f} ms:")
    _print_outputs(list(outputs), list(outputs.values()))
    return 0


def _check(args) -> int:
    import jaxonnx
    from jaxonnx._errors import UnsupportedOpError
    from jaxonnx._core.loading import canonical_domain, opset_versions, parse_model

    try:
        with open(args.model, "rb") as f:
            proto = parse_model(f.read(), repr(args.model))
    except OSError as error:
        raise _UsageError(f"cannot read the ONNX model {args.model!r}: {error.strerror}.") from None
    opsets = opset_versions(proto)  # a domain imported twice is a ModelLoadError
    print(f"{args.model}: opset {opsets}, {len(proto.graph.node)} nodes")
    unsupported: dict[str, int] = {}  # op (with its domain, if not ai.onnx) -> node count
    for index, node in enumerate(proto.graph.node):
        domain = canonical_domain(node.domain)
        try:
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
            op = node.op_type if not domain else f"{node.domain}.{node.op_type}"
            unsupported[op] = unsupported.get(op, 0) + 1
        # Unnamed nodes get the name the interpreter gives them in its errors.
        print(f"  {node.name or f'{node.op_type}_{index}':<24} {node.op_type:<16} {resolved:<18} {status}")
    if not unsupported:
        print("all nodes supported")
        return 0
    count = sum(unsupported.values())
    ops = ", ".join(f"{op} ({n} node{'s' if n > 1 else ''})" for op, n in sorted(unsupported.items(), key=lambda item: (-item[1], item[0])))
    print(f"{count} node(s) not supported; unsupported: {ops}")
    print(f"jaxonnx supports: {', '.join(jaxonnx.supported_ops())}")
    return 1


def _demo() -> int:
    import jax
    import jax.numpy as jnp

    import jaxonnx
    from jaxonnx._demo import DEMO_PATH

    model = jaxonnx.load(DEMO_PATH)
    print(f"Loaded the bundled demo: {model}")
    for name, op, version in model.describe_nodes():
        print(f"  node {name:<20} {op:<15} resolved to {version}")
    x = jnp.arange(24, dtype=jnp.float32).reshape(4, 6)
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
