"""Exports the ``torch.stft`` fixtures that ``tests/test_stft_exports.py`` runs.

A log-magnitude spectrogram as audio models compute it (``torch.stft`` with a Hann window,
``center=True``'s reflect padding, ``return_complex=False``), exported by both of torch's
ONNX exporters. The TorchScript exporter (``dynamo=False``) writes STFT-17 with the real
signal as ``[batch, length]``, without the trailing 1 that the operator text asks for;
onnxruntime runs it. The dynamo exporter inserts an Unsqueeze first.

It writes, under ``tests/fixtures/signal/``: ``stft_torchscript.onnx``, ``stft_dynamo.onnx``
and ``stft.npz`` (``signal``, a ``[2, 232]`` float32 input, and torch's ``spectrum``
``[2, 59, 9, 2]`` and ``log_magnitude`` ``[2, 59, 9]`` for it).

Run (needs the ``export`` extra): ``python tools/export_signal_fixtures.py``.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import onnx
import onnxruntime
import torch
from torch import nn

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "fixtures", "signal")
SEED = 20261126
N_FFT, HOP = 16, 4


class Spectrogram(nn.Module):
    """The STFT of a batch of signals (real and imaginary parts) and its log magnitude."""

    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(N_FFT))

    def forward(self, signal):
        spectrum = torch.stft(
            signal,
            n_fft=N_FFT,
            hop_length=HOP,
            window=self.window,
            center=True,
            pad_mode="reflect",
            return_complex=False,
        )
        spectrum = spectrum.transpose(1, 2)  # [batch, frames, bins, 2], as ONNX's STFT gives it
        return spectrum, torch.log(spectrum.pow(2).sum(-1) + 1e-6)


def _strip(path):
    proto = onnx.load(path)
    proto.graph.doc_string = ""
    for node in proto.graph.node:
        node.doc_string = ""
        del node.metadata_props[:]
    onnx.save(proto, path)
    return proto


def main():
    torch.manual_seed(SEED)
    module = Spectrogram().eval()
    signal = torch.randn(2, 232)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # return_complex=False is deprecated; exporters warn a lot
        spectrum, log_magnitude = module(signal)
        os.makedirs(OUT_DIR, exist_ok=True)
        paths = {name: os.path.join(OUT_DIR, f"stft_{name}.onnx") for name in ("torchscript", "dynamo")}
        torch.onnx.export(
            module,
            (signal,),
            paths["torchscript"],
            dynamo=False,
            opset_version=17,
            input_names=["signal"],
            output_names=["spectrum", "log_magnitude"],
            dynamic_axes={"signal": {0: "batch", 1: "length"}},
        )
        torch.onnx.export(
            module, (signal,), dynamo=True, input_names=["signal"], output_names=["spectrum", "log_magnitude"]
        ).save(paths["dynamo"])
    for name, path in paths.items():
        proto = _strip(path)
        stft = next(n for n in proto.graph.node if n.op_type == "STFT")
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        ort_spectrum, ort_log = session.run(None, {"signal": signal.numpy()})
        print(
            f"{name}: STFT reads {stft.input[0]!r}; onnxruntime - torch: "
            f"{np.abs(ort_spectrum - spectrum.numpy()).max():.2e}, {np.abs(ort_log - log_magnitude.numpy()).max():.2e}"
        )
    np.savez(
        os.path.join(OUT_DIR, "stft.npz"),
        signal=signal.numpy(),
        spectrum=spectrum.numpy(),
        log_magnitude=log_magnitude.numpy(),
    )


if __name__ == "__main__":
    main()
