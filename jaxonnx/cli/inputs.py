"""The model and its inputs: reading the file, and the inputs ``run`` and ``bench`` make up
from declared shapes (``--dim``, ``--shape``, ``--batch``) or read (``--input NAME=FILE.npy``)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from typing import TYPE_CHECKING, NoReturn

import numpy as np

from jaxonnx.cli.errors import _UsageError

if TYPE_CHECKING:  # the CLI imports jaxonnx and onnx only when a command runs
    import onnx

    from jaxonnx._core.model import Model

_DIM_ADVICE = "set them with `--dim NAME=N`, or whole shapes with `--shape INPUT=D1,D2,...`"


def _add_input_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("model", help="path to an .onnx file")
    command.add_argument(
        "--input", action="append", default=[], metavar="NAME=FILE.npy", help="an input from a .npy file (repeatable)"
    )
    command.add_argument(
        "--dim",
        action="append",
        default=[],
        metavar="NAME=N",
        help="the length of a symbolic dim of the random inputs (repeatable), e.g. --dim batch=1 --dim height=640",
    )
    command.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="NAME=D1,D2,...",
        help="the whole shape of a random input (repeatable), e.g. --shape images=1,3,640,640",
    )
    command.add_argument(
        "--batch",
        type=int,
        metavar="N",
        help="the first dim of every random input whose first dim is symbolic or unknown",
    )
    command.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    command.add_argument(
        "--size-hint",
        action="append",
        default=[],
        metavar="OUTPUT=N",
        help="the length to pad an output to whose length only the run decides (repeatable)",
    )


# --------------------------------------------------------------------------- the model and its inputs


def _read_model(path: str) -> onnx.ModelProto:
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

    model: Model
    proto: onnx.ModelProto
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
        defaulted = (f"; the symbolic dims {', '.join(dims)} were not given and set to 1" if dims else "") + (
            f"; {', '.join(self.unknown)} (unknown) set to 1" if self.unknown else ""
        )
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
            raise _UsageError(
                f"--shape {name}=... and --input {name}=... both give the input {name!r}; give one.", exit_code=2
            )
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
            fits = len(shape) == len(info.shape) and all(
                not isinstance(d, int) or d == n for d, n in zip(info.shape, shape)
            )
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
    made_shapes: dict[str, list[int | str | None] | None] = {}
    for name in random_names:
        declared_shape = declared[name].shape
        made_shapes[name] = list(declared_shape) if declared_shape is not None else None
    if args.batch is not None:
        for name in random_names:
            made = made_shapes[name]
            if name in shapes or not made or isinstance(made[0], int):
                continue
            if isinstance(made[0], str):
                bind(made[0], args.batch, "--batch")
            else:
                made[0] = args.batch
    unknown_dims = []
    rng = np.random.default_rng(args.seed)
    feed = {}
    for name in model.input_names:
        if name in given:
            feed[name] = given[name]
            continue
        info = declared[name]
        lengths: tuple[int, ...] | list[int]
        if name in shapes:
            lengths = shapes[name]
        else:
            made = made_shapes[name]
            if made is None:
                _no_random_value(info)
            lengths = []
            for axis, dim in enumerate(made):
                if isinstance(dim, str):
                    dims.setdefault(dim, (1, "default"))
                    lengths.append(dims[dim][0])
                elif dim is None:
                    unknown_dims.append(f"input {name!r} dim {axis}")
                    lengths.append(1)
                else:
                    lengths.append(dim)
        if info.dtype is None:
            _no_random_value(info, shape_known=True)
        feed[name] = _random_value(tuple(lengths), info.dtype, rng)
    feed.update({name: value for name, value in given.items() if name not in feed})
    return _Prepared(model, proto, hints, feed, random_names, dims, unknown_dims, model_dir, load_s)


def _no_random_value(info, shape_known: bool = False) -> NoReturn:
    """A usage error: the input's declaration lacks what a random value needs."""
    missing = [
        what for what, known in (("a shape", shape_known), ("an element type", info.dtype is not None)) if not known
    ]
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
    if dtype.kind == "O":
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
            f"Cannot read --input {name}={path}: it is an .npz archive; give each array as a .npy file (`numpy.save`)."
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
        print(
            "  symbolic dims: "
            + ", ".join(
                f"{name}={length} ({where.get(source, 'from ' + source)})"
                for name, (length, source) in prepared.dims.items()
            )
        )
    if prepared.defaulted() or prepared.unknown:
        unknown = f"; {', '.join(prepared.unknown)} (unknown) set to 1" if prepared.unknown else ""
        print(f"  note: dims not given were set to 1{unknown}; {_DIM_ADVICE}.")
