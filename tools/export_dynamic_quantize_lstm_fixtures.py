"""Exports the DynamicQuantizeLSTM fixtures that ``tests/test_dynamic_quantize_lstm.py`` runs.

Small ``torch.nn.LSTM`` models with random weights (fixed seed), exported by torch's
TorchScript exporter (``dynamo=False``, which writes ONNX LSTM nodes), then quantized by
onnxruntime's own ``onnxruntime.quantization.quantize_dynamic``, which rewrites every LSTM
as com.microsoft DynamicQuantizeLSTM. Under ``tests/fixtures/microsoft_lstm/``:

- ``lstm_{uni,bi}_s8.onnx``: a 2-layer unidirectional LSTM and a 1-layer bidirectional
  one with a Linear head, quantized with ``quantize_dynamic``'s defaults: int8 weights
  (its LSTM quantizer writes int8 whatever ``weight_type`` says), symmetric, per tensor;
- ``lstm_{uni,bi}_s8_reduced.onnx``: the same with ``reduce_range`` (7-bit weights, which
  onnxruntime's AVX2 kernels multiply without saturating their 16-bit pair sums);
  ``lstm_bi_s8_channel.onnx``: ``reduce_range`` and ``per_channel`` (a scale per column);
- ``lstm_lengths_s8.onnx``: the bidirectional export with a ``lengths`` graph input wired to
  the LSTM's ``sequence_lens`` before quantizing (torch's exporters do not write it), so
  the quantized node takes sequence lengths.

Run (needs the ``export`` extra): ``python tools/export_dynamic_quantize_lstm_fixtures.py``.
"""

from __future__ import annotations

import os
import tempfile

import onnx
import torch
from onnx import helper
from onnxruntime.quantization import QuantType, quantize_dynamic
from torch import nn

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "fixtures", "microsoft_lstm")
SEED = 20261126
INPUT, HIDDEN = 8, 12


class Tagger(nn.Module):
    """An LSTM over ``[seq, batch, INPUT]`` features and a Linear head per step."""

    def __init__(self, layers: int, bidirectional: bool):
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN, num_layers=layers, bidirectional=bidirectional)
        self.head = nn.Linear(HIDDEN * (2 if bidirectional else 1), 5)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y)


def _export(module, path):
    x = torch.randn(7, 3, INPUT)
    torch.onnx.export(
        module,
        (x,),
        path,
        dynamo=False,
        input_names=["x"],
        output_names=["y"],
        dynamic_axes={"x": {0: "seq", 1: "batch"}, "y": {0: "seq", 1: "batch"}},
        opset_version=17,
    )
    proto = onnx.load(path)
    for node in proto.graph.node:
        node.doc_string = ""
    onnx.save(proto, path)


def _with_lengths(path):
    """The export with a ``lengths`` input (int32 [batch]) as the LSTM's sequence_lens."""
    proto = onnx.load(path)
    (lstm,) = [node for node in proto.graph.node if node.op_type == "LSTM"]
    inputs = list(lstm.input) + [""] * (8 - len(lstm.input))
    inputs[4] = "lengths"
    del lstm.input[:]
    lstm.input.extend(inputs)
    proto.graph.input.append(helper.make_tensor_value_info("lengths", onnx.TensorProto.INT32, ["batch"]))
    onnx.save(proto, path)


def _quantize(source, name, **options):
    target = os.path.join(OUT_DIR, name)
    quantize_dynamic(source, target, **options)
    proto = onnx.load(target)
    ops = [node.op_type for node in proto.graph.node]
    assert "DynamicQuantizeLSTM" in ops and "LSTM" not in ops, ops
    print(f"{name}: {os.path.getsize(target)} bytes, ops {sorted(set(ops))}")


def main():
    torch.manual_seed(SEED)
    os.makedirs(OUT_DIR, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        uni, bi = os.path.join(scratch, "uni.onnx"), os.path.join(scratch, "bi.onnx")
        _export(Tagger(2, False).eval(), uni)
        _export(Tagger(1, True).eval(), bi)
        for source, kind in ((uni, "uni"), (bi, "bi")):
            _quantize(source, f"lstm_{kind}_s8.onnx")
            _quantize(source, f"lstm_{kind}_s8_reduced.onnx", weight_type=QuantType.QInt8, reduce_range=True)
        _quantize(bi, "lstm_bi_s8_channel.onnx", weight_type=QuantType.QInt8, reduce_range=True, per_channel=True)
        lengths = os.path.join(scratch, "lengths.onnx")
        onnx.save(onnx.load(bi), lengths)
        _with_lengths(lengths)
        _quantize(lengths, "lstm_lengths_s8.onnx")


if __name__ == "__main__":
    main()
