"""Exports the fixtures of ``tests/test_size_hints.py``: boolean and integer indexing as
PyTorch's two ONNX exporters write it, for the padding marks of size hints.

Each module below is exported with ``torch.onnx.export(..., dynamo=False)`` (TorchScript)
and ``dynamo=True``. For every export it writes, under ``tests/fixtures/size_hints/``:

- ``NAME_EXPORTER.onnx``: the exported model (doc strings stripped);
- ``NAME_EXPORTER.npz``: two input sets (``in0_*``, ``in1_*``) with different numbers of
  selected entries, and torch's outputs for each (``out0_*``, ``out1_*``);
- ``manifest.json``: per fixture, its input and output names, the size hint for every
  NonZero output, and an export that failed with its error.

Run (needs the ``export`` extra): ``python tools/export_size_hint_fixtures.py``.
"""

from __future__ import annotations

import io
import json
import os
import warnings

import numpy as np
import onnx
import torch
from torch import nn

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "fixtures", "size_hints")
HINT = 8  # every NonZero output's size hint: more than the selections below ever find


def select(x, mask):
    return x[mask]


def index_pairs(x, mask):
    rows, columns = mask.nonzero(as_tuple=True)
    return x[rows, columns]


def selected_sum(x, mask):
    return x[mask].sum()


def selected_max(x, mask):
    return x[mask].max()


def selected_mean(x, mask):
    return x[mask].mean()


def put_scalar(x, mask):
    y = x.clone()
    y[mask] = 7.0
    return y


def put_selected(x, mask):
    y = x.clone()
    y[mask] = x[mask] * 2 - 1
    return y


def put_rows(x, mask):
    y = x.clone()
    y[mask.nonzero()[:, 0]] = -1.0
    return y


def score_filter(boxes, scores):
    """A detector's post-processing: the boxes above a score threshold, their top 3 by
    score (fewer when fewer pass), and the best score."""
    keep = scores > 0.5
    kept_scores, kept_boxes = scores[keep], boxes[keep]
    top = kept_scores.topk(min(3, kept_scores.shape[0]))
    return kept_boxes[top.indices], top.values, kept_scores.max()


def _masked_inputs(seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 4, generator=generator)
    mask = torch.rand(3, 4, generator=generator) > (0.5 if seed else 0.7)
    return x, mask


def _detections(seed):
    generator = torch.Generator().manual_seed(seed)
    boxes = torch.rand(10, 4, generator=generator) * 100
    scores = torch.rand(10, generator=generator) * (0.7 if seed else 1.0)  # the second set keeps few
    return boxes, scores


MODULES = {
    "select": (select, _masked_inputs, ("x", "mask")),
    "index_pairs": (index_pairs, _masked_inputs, ("x", "mask")),
    "selected_sum": (selected_sum, _masked_inputs, ("x", "mask")),
    "selected_max": (selected_max, _masked_inputs, ("x", "mask")),
    "selected_mean": (selected_mean, _masked_inputs, ("x", "mask")),
    "put_scalar": (put_scalar, _masked_inputs, ("x", "mask")),
    "put_selected": (put_selected, _masked_inputs, ("x", "mask")),
    "put_rows": (put_rows, _masked_inputs, ("x", "mask")),
    "score_filter": (score_filter, _detections, ("boxes", "scores")),
}


class _Module(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _export(fn, args, names, dynamo: bool) -> onnx.ModelProto:
    module = _Module(fn).eval()
    if dynamo:
        return torch.onnx.export(module, args, dynamo=True, input_names=list(names), verbose=False).model_proto
    buffer = io.BytesIO()
    torch.onnx.export(module, args, buffer, dynamo=False, opset_version=17, input_names=list(names))
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
            for index, args in enumerate(sets):
                with torch.no_grad():
                    outputs = fn(*args)
                outputs = outputs if isinstance(outputs, tuple) else (outputs,)
                arrays.update({f"in{index}_{n}": a.numpy() for n, a in zip(names, args)})
                arrays.update({f"out{index}_{o.name}": t.numpy() for o, t in zip(proto.graph.output, outputs)})
            np.savez(os.path.join(OUT_DIR, f"{key}.npz"), **arrays)
            hints = {out: HINT for node in proto.graph.node if node.op_type == "NonZero" for out in node.output}
            manifest[key] = {
                "inputs": [i.name for i in proto.graph.input],
                "outputs": [o.name for o in proto.graph.output],
                "size_hints": hints,
                "ops": sorted({n.op_type for n in proto.graph.node}),
            }
    with open(os.path.join(OUT_DIR, "manifest.json"), "w") as file:
        json.dump(manifest, file, indent=1, sort_keys=True)
        file.write("\n")


if __name__ == "__main__":
    main()
