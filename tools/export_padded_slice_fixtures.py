"""Exports the fixtures of ``tests/test_padded_slices.py``: ``torch.nn.EmbeddingBag`` with
offsets (a Loop whose body slices each bag between offsets read from the data) and
``x.masked_scatter(mask, src)`` (a ScatterND whose number of updates depends on the mask),
as PyTorch's two ONNX exporters write them, for the padded slices and scatters of size hints.

Each module below is exported with ``torch.onnx.export(..., dynamo=False)`` (TorchScript,
opset 17) and ``dynamo=True``. For every export it writes, under ``tests/fixtures/size_hints/``:

- ``NAME_EXPORTER.onnx``: the exported model (doc strings and metadata stripped);
- ``NAME_EXPORTER.npz``: two input sets (``in0_*``, ``in1_*``) of different shapes and
  different bags or masks, torch's outputs for each (``out0_*``, ``out1_*``) and torch's
  gradients of ``sum(output * cotangent)`` (``cot0_*``, then ``grad0_<input>`` for each float
  input);
- ``padded_slices.json``: per fixture, its input and output names, the float inputs with
  gradients, the size hint for every NonZero output, and an export that failed with its error.

Run (needs torch and onnxscript): ``python tools/export_padded_slice_fixtures.py``.
Made with torch 2.13.0 and onnxscript 0.7.2.
"""

from __future__ import annotations

import io
import json
import os
import warnings

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from torch import nn

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "fixtures", "size_hints")
HINT = 20  # every NonZero output's size hint: the most entries a mask below has (4 x 5)


def bag_sum(weight, indices, offsets):
    return F.embedding_bag(indices, weight, offsets, mode="sum")


def bag_mean(weight, indices, offsets):
    return F.embedding_bag(indices, weight, offsets, mode="mean")


def bag_max(weight, indices, offsets):
    return F.embedding_bag(indices, weight, offsets, mode="max")


def masked_scatter(x, mask, src):
    return x.masked_scatter(mask, src)


def masked_scatter_rows(x, mask, src):
    """A mask broadcast over the columns: whole rows are taken from ``src`` in order."""
    return x.masked_scatter(mask[:, None], src)


def _bags(seed):
    generator = torch.Generator().manual_seed(seed)
    rows, bags = (10, 4) if seed == 0 else (7, 5)
    weight = torch.randn(rows, 3, generator=generator)
    count = 9 if seed == 0 else 6
    indices = torch.randint(0, rows, (count,), generator=generator)
    # Bags of different lengths; the second set has an empty bag (sum/mean give 0 there).
    offsets = torch.tensor([0, 2, 3, 7]) if seed == 0 else torch.tensor([0, 1, 3, 3, 5])
    assert len(offsets) == bags
    return weight, indices, offsets


def _full_bags(seed):
    """As ``_bags``, without an empty bag: torch's max and mean of an empty bag are 0, the
    exported ReduceMax's and ReduceMean's -inf and NaN (onnxruntime's too)."""
    weight, indices, offsets = _bags(seed)
    return weight, indices, torch.tensor([0, 1, 3, 4, 5]) if seed else offsets


def _masks(seed):
    generator = torch.Generator().manual_seed(seed)
    shape = (3, 4) if seed == 0 else (4, 5)
    x = torch.randn(*shape, generator=generator)
    mask = torch.rand(*shape, generator=generator) > (0.5 if seed == 0 else 0.3)
    src = torch.randn(*shape, generator=generator)
    return x, mask, src


def _row_masks(seed):
    x, mask, src = _masks(seed)
    return x, mask[:, 0], src


MODULES = {
    "bag_sum": (bag_sum, _bags, ("weight", "indices", "offsets")),
    "bag_mean": (bag_mean, _full_bags, ("weight", "indices", "offsets")),
    "bag_max": (bag_max, _full_bags, ("weight", "indices", "offsets")),
    "masked_scatter": (masked_scatter, _masks, ("x", "mask", "src")),
    "masked_scatter_rows": (masked_scatter_rows, _row_masks, ("x", "mask", "src")),
}


class _Module(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _dynamic_axes(names, args):
    return {n: {d: f"{n}_{d}" for d in range(a.dim())} for n, a in zip(names, args)}


def _export(fn, args, names, dynamo: bool) -> onnx.ModelProto:
    module = _Module(fn).eval()
    if dynamo:
        shapes = tuple({d: torch.export.Dim.DYNAMIC for d in range(a.dim())} for a in args)
        return torch.onnx.export(
            module, args, dynamo=True, input_names=list(names), dynamic_shapes=(shapes,), verbose=False
        ).model_proto
    buffer = io.BytesIO()
    torch.onnx.export(
        module,
        args,
        buffer,
        dynamo=False,
        opset_version=17,
        input_names=list(names),
        dynamic_axes=_dynamic_axes(names, args),
    )
    return onnx.load_from_string(buffer.getvalue())


def main() -> None:
    os.makedirs(OUT_DIR, exist_ok=True)
    warnings.filterwarnings("ignore")
    manifest = {}
    for name, (fn, inputs, names) in MODULES.items():
        sets = [inputs(0), inputs(1)]
        for exporter, dynamo in (("torchscript", False), ("dynamo", True)):
            key = f"{name}_{exporter}"
            try:
                proto = _export(fn, sets[0], names, dynamo)
            except Exception as error:  # noqa: BLE001  (recorded, not fatal)
                manifest[key] = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
                continue
            proto.doc_string = ""
            for node in proto.graph.node:
                node.doc_string = ""
                del node.metadata_props[:]
            onnx.save(proto, os.path.join(OUT_DIR, f"{key}.onnx"))
            arrays = {}
            floats = [n for n, a in zip(names, sets[0]) if a.is_floating_point()]
            for index, args in enumerate(sets):
                args = [a.clone().requires_grad_(a.is_floating_point()) for a in args]
                output = fn(*args)
                cotangent = torch.randn(output.shape, generator=torch.Generator().manual_seed(10 + index))
                grads = torch.autograd.grad((output * cotangent).sum(), [a for a in args if a.requires_grad])
                arrays.update({f"in{index}_{n}": a.detach().numpy() for n, a in zip(names, args)})
                arrays[f"out{index}_{proto.graph.output[0].name}"] = output.detach().numpy()
                arrays[f"cot{index}"] = cotangent.numpy()
                arrays.update({f"grad{index}_{n}": g.numpy() for n, g in zip(floats, grads)})
            np.savez(os.path.join(OUT_DIR, f"{key}.npz"), **arrays)
            hints = {out: HINT for node in proto.graph.node if node.op_type == "NonZero" for out in node.output}
            manifest[key] = {
                "inputs": [i.name for i in proto.graph.input],
                "outputs": [o.name for o in proto.graph.output],
                "differentiable": floats,
                "size_hints": hints,
                "ops": sorted({n.op_type for n in proto.graph.node}),
            }
    with open(os.path.join(OUT_DIR, "padded_slices.json"), "w") as file:
        json.dump(manifest, file, indent=1, sort_keys=True)
        file.write("\n")


if __name__ == "__main__":
    main()
