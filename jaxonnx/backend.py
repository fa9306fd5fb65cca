"""The ONNX backend API (``onnx.backend.base``) on top of :func:`jaxonnx.load`.

Example:
    >>> import jaxonnx.backend
    >>> rep = jaxonnx.backend.prepare(model_proto, device="CPU")
    >>> (y,) = rep.run([x])

The backend takes concrete numpy inputs, so it runs the model op by op on JAX arrays
(the eager path): every value is known, shape-deciding inputs work, and out-of-bounds
GatherElements indices raise. It turns 64-bit types on for its own calls only (ONNX
models use int64 throughout) and returns numpy arrays.
"""

from __future__ import annotations

import contextlib

import jax
import numpy as np
import onnx
import onnx.backend.base as onnx_backend

from jaxonnx._core.dtypes import as_jax, is_string_array
from jaxonnx._core.graph import Environment, prepare_node
from jaxonnx._core.graph import run_node as run_prepared_node
from jaxonnx._core.loading import canonical_domain
from jaxonnx._core.model import Model, load
from jaxonnx._core.reports import unsupported_message
from jaxonnx._errors import OnnxValidationError, UnsupportedOpError

_PLATFORMS = {"CPU": ("cpu",), "CUDA": ("gpu", "cuda"), "GPU": ("gpu", "cuda", "rocm"), "TPU": ("tpu",)}


def _jax_device(device: str):
    """The JAX device for an ONNX device string such as ``"CPU"`` or ``"CUDA:1"``; None if
    there is none here or the string does not parse."""
    kind, colon, digits = str(device).partition(":")
    if colon and not (digits.isascii() and digits.isdecimal()):
        return None
    index = int(digits) if colon else 0
    for platform in _PLATFORMS.get(kind.upper(), ()):
        try:
            devices = jax.devices(platform)
        except RuntimeError:
            continue
        if index < len(devices):
            return devices[index]
    return None


@contextlib.contextmanager
def _on(device: str):
    target = _jax_device(device)
    if target is None:
        raise OnnxValidationError(f"The device {device!r} is not available to JAX here; devices: {jax.devices()}.")
    with jax.enable_x64(True), jax.default_device(target):
        yield


def _to_jax(value, name):
    if value is None:  # an omitted optional input, or an empty optional
        return None
    if isinstance(value, (list, tuple)):  # a sequence: a list of tensors
        return [_to_jax(item, f"{name}[{i}]") for i, item in enumerate(value)]
    value = np.asarray(value) if not isinstance(value, jax.Array) else value
    if is_string_array(value):
        return value.astype(object)
    return as_jax(value, what=f"input {name!r}")


def _to_numpy(value):
    if value is None or isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        return [_to_numpy(item) for item in value]
    return np.asarray(value)


class JaxOnnxRep(onnx_backend.BackendRep):
    """A prepared model: ``run`` takes a list (graph order) or a dict (by name) of inputs."""

    def __init__(self, model: Model, device: str):
        self.model = model
        self.device = device

    def run(self, inputs, **kwargs):
        with _on(self.device):
            if isinstance(inputs, dict):
                feed = {name: _to_jax(v, name) for name, v in inputs.items()}
            else:
                inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
                names = self.model.input_names
                if len(inputs) != len(names):
                    raise OnnxValidationError(
                        f"The model takes {len(names)} inputs ({', '.join(names)}), got {len(inputs)}."
                    )
                feed = {name: _to_jax(v, name) for name, v in zip(names, inputs)}
            outputs = self.model.run(feed)
            return onnx_backend.namedtupledict("Outputs", list(outputs))(*map(_to_numpy, outputs.values()))


def _node_arguments(node, op, inputs) -> list:
    """The op's positional inputs for ``run_node``: ``inputs`` (a list in the order of the
    node's non-empty input names, or a dict by name) with None for each omitted ("") input."""
    given = [name for name in node.input if name]
    where = f"Node {node.name!r} ({op.name})"
    if isinstance(inputs, dict):
        missing = [name for name in dict.fromkeys(given) if name not in inputs]
        extra = [name for name in inputs if name not in given]
        if missing or extra:
            problems = []
            if missing:
                problems.append(f"no value for {', '.join(map(repr, missing))}")
            if extra:
                problems.append(f"values for {', '.join(map(repr, extra))}, which it does not take")
            raise OnnxValidationError(
                f"{where} takes the inputs {', '.join(map(repr, given)) or 'none'}; got {' and '.join(problems)}."
            )
        values = [inputs[name] for name in given]
    else:
        values = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(values) != len(given):
            omitted = len(node.input) - len(given)
            note = ""
            if omitted:
                note = (
                    ' (the omitted input "" takes no value)'
                    if omitted == 1
                    else (f' (the {omitted} omitted inputs "" take no value)')
                )
            raise OnnxValidationError(
                f"{where} names {len(given)} inputs ({', '.join(given) or 'none'}){note}, got {len(values)} values."
            )
    remaining = iter(values)
    return [_to_jax(next(remaining), name) if name else None for name in node.input]


class JaxOnnxBackend(onnx_backend.Backend):
    """jaxonnx as an ``onnx.backend.base.Backend``."""

    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        return cls.supports_device(device)

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        # Not `super().prepare`: it only runs onnx's checker on the raw proto, which would look
        # external data up relative to the working directory; `load` checks the model safely.
        with _on(device):
            model = load(model, size_hints=kwargs.get("size_hints"), base_dir=kwargs.get("base_dir"))
            return JaxOnnxRep(model, device)

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
        super().run_node(node, inputs, device=device, outputs_info=outputs_info, **kwargs)
        opset = kwargs.get("opset_version", onnx.defs.onnx_opset_version())
        env = Environment({canonical_domain(node.domain): opset})
        prepared = prepare_node(node, 0, env, "", set(node.input))
        if prepared is None:
            raise UnsupportedOpError(unsupported_message(env.problems, env.opsets))
        with _on(device):
            args = _node_arguments(node, prepared.op, inputs)
            values = dict(zip(node.input, args))
            run_prepared_node(prepared, values)
        return tuple(_to_numpy(values[name]) if name else None for name in node.output)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return _jax_device(device) is not None


prepare = JaxOnnxBackend.prepare
run_model = JaxOnnxBackend.run_model
run_node = JaxOnnxBackend.run_node
supports_device = JaxOnnxBackend.supports_device
is_compatible = JaxOnnxBackend.is_compatible
