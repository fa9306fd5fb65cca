"""The ``jaxonnx`` command line: a demo, ``run`` and ``check``.

The command owns its process, so it turns on JAX's 64-bit types (ONNX models use
int64 throughout) and tunes glibc's allocator for large outputs (``tune_cpu_allocator``);
the library itself never changes JAX's configuration or the process's allocator.
"""

from __future__ import annotations

import argparse
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
        if args.command == "run":
            return _run(args)
        if args.command == "check":
            return _check(args)
        return _demo()
    except (JaxOnnxError, _UsageError, jax.errors.JaxRuntimeError) as error:
        print(f"jaxonnx: error: {error}", file=sys.stderr)
        return 1


class _UsageError(Exception):
    """A command-line argument or file that the command cannot use (exit code 1, no traceback)."""


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
    shape = tuple(d if isinstance(d, int) else 1 for d in (declared.shape or ()))
    dtype = declared.dtype
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, 4, size=shape).astype(dtype)
    if dtype == object:
        return np.array(rng.choice(["a", "b", "c"], size=shape), dtype=object)
    return rng.standard_normal(shape).astype(dtype)


def _run(args) -> int:
    import jax

    import jaxonnx

    hints = {}
    for item in args.size_hint:
        name, _, n = item.partition("=")
        try:
            hints[name] = int(n)
        except ValueError:
            raise _UsageError(f"--size-hint needs OUTPUT=N with an integer N, got {item!r}.") from None
    model = jaxonnx.load(args.model, size_hints=hints)
    given = {}
    for item in args.input:
        name, sep, path = item.partition("=")
        if not sep:
            print(f"jaxonnx: error: --input needs NAME=FILE.npy, got {item!r}", file=sys.stderr)
            return 2
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
    from jaxonnx._loading import opset_versions, parse_model
    from jaxonnx._registry import canonical_domain

    try:
        with open(args.model, "rb") as f:
            proto = parse_model(f.read(), repr(args.model))
    except OSError as error:
        raise _UsageError(f"cannot read the ONNX model {args.model!r}: {error.strerror}.") from None
    opsets = opset_versions(proto)  # a domain imported twice is a ModelLoadError
    print(f"{args.model}: opset {opsets}, {len(proto.graph.node)} nodes")
    unsupported = 0
    for index, node in enumerate(proto.graph.node):
        domain = canonical_domain(node.domain)
        try:
            if domain not in opsets:
                raise UnsupportedOpError(f"the model imports no opset for the domain {node.domain!r}")
            resolved = jaxonnx.get_op(node.op_type, opsets[domain], domain).name
            status = "supported"
        except UnsupportedOpError as error:
            resolved, status = "-", f"NOT supported: {error}"
            unsupported += 1
        print(f"  {node.name or index!s:<24} {node.op_type:<16} {resolved:<18} {status}")
    print("all nodes supported" if not unsupported else f"{unsupported} node(s) not supported")
    return 0 if not unsupported else 1


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
