"""jaxonnx: ONNX operators and models as exact, differentiable, jit-compilable JAX functions."""

# First: XLA reads XLA_FLAGS when a JAX backend starts, so the flags that take XLA:CPU's
# convolutions out of YNNPACK (one core) and widen its vectors are set before anything of
# jaxonnx can start one; and glibc is told to reuse freed large blocks before JAX allocates
# them (jaxonnx/_tuning.py).
from jaxonnx import _xla_cpu  # noqa: F401  (isort: skip)
from jaxonnx import _tuning  # noqa: F401  (isort: skip)
from jaxonnx import ops as ops
from jaxonnx._demo import demo_model_path as demo_model_path
from jaxonnx._examples import example_path as example_path
from jaxonnx._errors import DeclaredShapeWarning as DeclaredShapeWarning
from jaxonnx._errors import JaxOnnxError as JaxOnnxError
from jaxonnx._errors import LeniencyWarning as LeniencyWarning
from jaxonnx._errors import ModelLoadError as ModelLoadError
from jaxonnx._errors import NodeError as NodeError
from jaxonnx._errors import OnnxTypeError as OnnxTypeError
from jaxonnx._errors import OnnxValidationError as OnnxValidationError
from jaxonnx._errors import StaticValueError as StaticValueError
from jaxonnx._errors import UnsupportedOpError as UnsupportedOpError
from jaxonnx._errors import X64Warning as X64Warning
from jaxonnx._core.model import Model as Model
from jaxonnx._core.types import ValueInfo as ValueInfo
from jaxonnx._core.registry import REGISTRY as REGISTRY
from jaxonnx._core.registry import Registry as Registry
from jaxonnx._core.context import OpContext as OpContext
from jaxonnx._core.model import load as load
from jaxonnx.generation import generate as generate
from jaxonnx.finetuning import LoraModel as LoraModel
from jaxonnx.finetuning import causal_lm_loss as causal_lm_loss
from jaxonnx.finetuning import lora as lora
from jaxonnx._core.reports import unsupported_nodes as unsupported_nodes
from jaxonnx._core.registry import OpVersion as OpVersion
from jaxonnx._core.registry import get_op as get_op
from jaxonnx._core.registry import register as register
from jaxonnx._core.registry import supported_ops as supported_ops
from jaxonnx._tuning import tune_cpu_allocator as tune_cpu_allocator
from jaxonnx._xla_cpu import compiler_options as compiler_options

__version__ = "0.1.0"

__all__ = [
    "DeclaredShapeWarning",
    "JaxOnnxError",
    "LeniencyWarning",
    "LoraModel",
    "Model",
    "ModelLoadError",
    "NodeError",
    "OnnxTypeError",
    "OnnxValidationError",
    "OpContext",
    "OpVersion",
    "REGISTRY",
    "Registry",
    "StaticValueError",
    "UnsupportedOpError",
    "ValueInfo",
    "X64Warning",
    "causal_lm_loss",
    "compiler_options",
    "demo_model_path",
    "example_path",
    "generate",
    "get_op",
    "load",
    "lora",
    "ops",
    "register",
    "supported_ops",
    "tune_cpu_allocator",
    "unsupported_nodes",
]
