"""Exports the data-dependent Loop fixture that ``tests/test_loop_bounds.py`` runs.

A small module whose ``torch._higher_order_ops.while_loop`` stops when a value computed in
the loop passes a limit given as an input, so the number of iterations depends on data.
torch's dynamo exporter (``torch.onnx.export(..., dynamo=True)``) writes it as a Loop with no
trip count and a traced condition. The TorchScript exporter cannot export ``while_loop``.

It writes, under ``tests/fixtures/loops/``:

- ``while_loop_dynamo.onnx`` (float32) and ``while_loop_dynamo_f64.onnx`` (the same module in
  float64, for finite differences that float32 rounding does not swamp);
- ``while_loop_dynamo.npz``: per input set ``k`` (``x_k``, ``limit_k``), torch's outputs
  (``iterations_k``, ``h_k``, ``total_k``), fixed cotangents ``ct_h_k``/``ct_total_k`` and
  torch autograd's gradients of ``sum(h * ct_h) + sum(total * ct_total)`` with respect to
  ``x`` and to the Linear's bias (``grad_x_k``, ``grad_bias_k``, float32 module); the
  input sets run a different number of iterations.

The gradients are autograd's through the same computation written as a Python ``while``
(:meth:`WhileLoopModule.python_loop`, whose outputs equal ``while_loop``'s): torch 2.14's
autograd through ``while_loop`` itself disagrees with both that and central differences of
the export in onnxruntime (e.g. -15.59 for -27.45 at one entry; this script prints the
largest difference), so it is not the reference.

Run (needs the ``export`` extra): ``python tools/export_loop_fixtures.py``.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import torch
from torch import nn
from torch._higher_order_ops import while_loop

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "fixtures", "loops")
SEED = 20261126


class WhileLoopModule(nn.Module):
    """``h <- 1.5 tanh(W h + b) + h`` while ``sum|h| < limit``, counting the iterations and
    summing ``|h|^2`` per row on the way."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, limit):
        def cond(i, h, total):
            return h.abs().sum() < limit

        def body(i, h, total):
            new_h = torch.tanh(self.lin(h)) * 1.5 + h
            return i + 1, new_h, total + (new_h * new_h).sum(-1)

        start = torch.zeros((), dtype=torch.int64)
        return while_loop(cond, body, (start, x, torch.zeros(x.shape[0], dtype=x.dtype)))

    def python_loop(self, x, limit):
        """The same computation as a Python loop, which autograd differentiates step by step."""
        i, h, total = 0, x, torch.zeros(x.shape[0], dtype=x.dtype)
        while h.abs().sum() < limit:
            h = torch.tanh(self.lin(h)) * 1.5 + h
            i, total = i + 1, total + (h * h).sum(-1)
        return torch.tensor(i), h, total


def _export(module, args, path):
    program = torch.onnx.export(module, args, dynamo=True, verbose=False)
    program.save(path)
    proto = onnx.load(path)
    for node in proto.graph.node:
        node.doc_string = ""
        del node.metadata_props[:]
    onnx.save(proto, path)


def main():
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    module = WhileLoopModule().eval()
    os.makedirs(OUT_DIR, exist_ok=True)
    inputs = [
        (rng.normal(0, 0.1, (2, 4)).astype(np.float32), np.float32(8.0)),
        (rng.normal(0, 0.1, (2, 4)).astype(np.float32), np.float32(30.0)),
    ]
    arrays = {}
    for k, (x, limit) in enumerate(inputs):
        xt = torch.tensor(x, requires_grad=True)
        iterations, h, total = module(xt, torch.tensor(limit))
        ct_h = rng.normal(size=h.shape).astype(np.float32)
        ct_total = rng.normal(size=total.shape).astype(np.float32)

        def loss(h, total):
            return (h * torch.tensor(ct_h)).sum() + (total * torch.tensor(ct_total)).sum()

        (while_grad_x,) = torch.autograd.grad(loss(h, total), [xt])
        python_iterations, python_h, python_total = module.python_loop(xt, torch.tensor(limit))
        assert int(python_iterations) == int(iterations)
        torch.testing.assert_close(python_h, h, rtol=0, atol=0)
        torch.testing.assert_close(python_total, total, rtol=0, atol=0)
        grad_x, grad_bias = torch.autograd.grad(loss(python_h, python_total), [xt, module.lin.bias])
        print(
            f"while_loop's autograd differs from the Python loop's by up to "
            f"{float((while_grad_x - grad_x).abs().max()):.3g}"
        )
        arrays |= {
            f"x_{k}": x,
            f"limit_{k}": np.asarray(limit),
            f"iterations_{k}": iterations.numpy(),
            f"h_{k}": h.detach().numpy(),
            f"total_{k}": total.detach().numpy(),
            f"ct_h_{k}": ct_h,
            f"ct_total_{k}": ct_total,
            f"grad_x_{k}": grad_x.numpy(),
            f"grad_bias_{k}": grad_bias.numpy(),
        }
        print(f"input set {k}: {int(iterations)} iterations")
    assert len({int(arrays[f"iterations_{k}"]) for k in range(len(inputs))}) == len(inputs)
    x0, limit0 = (torch.tensor(v) for v in inputs[0])
    _export(module, (x0, limit0), os.path.join(OUT_DIR, "while_loop_dynamo.onnx"))
    _export(module.double(), (x0.double(), limit0.double()), os.path.join(OUT_DIR, "while_loop_dynamo_f64.onnx"))
    np.savez(os.path.join(OUT_DIR, "while_loop_dynamo.npz"), **arrays)


if __name__ == "__main__":
    main()
