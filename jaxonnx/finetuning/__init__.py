"""Parameter-efficient fine-tuning of ONNX language models, ONNX in and ONNX out.

- :func:`lora` adds LoRA adapters beside a model's constant-weight products (MatMul, Gemm,
  FusedMatMul, and the 4-bit MatMulNBits and MatMulBnb4 whose packed weights stay packed:
  QLoRA) and returns a :class:`LoraModel` whose params are only the adapters;
- :func:`causal_lm_loss` is the next-token cross-entropy of a decoder file through its own
  graph, as Hugging Face computes it;
- :meth:`LoraModel.save` writes the adapters as ONNX nodes beside the untouched weights, or
  folds them into the weights (``merge=True``), re-quantizing 4-bit weights as
  onnxruntime's quantizers do (:mod:`jaxonnx.finetuning.requantize`).

The guide page ``docs/guide/finetuning-lora.md`` walks through it.
"""

from jaxonnx.finetuning.adapters import LoraModel as LoraModel
from jaxonnx.finetuning.adapters import Product as Product
from jaxonnx.finetuning.adapters import lora as lora
from jaxonnx.finetuning.loss import causal_lm_loss as causal_lm_loss

__all__ = ["LoraModel", "Product", "causal_lm_loss", "lora"]
