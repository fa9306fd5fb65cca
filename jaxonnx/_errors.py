"""Exceptions raised by jaxonnx.

Every error is a sentence that names the op (and, from the interpreter, the node,
the resolved version and the input shapes) and shows the offending value.
"""

from __future__ import annotations


class JaxOnnxError(Exception):
    """Base class of every error jaxonnx raises on purpose."""


class OnnxValidationError(JaxOnnxError, ValueError):
    """An attribute or input value that the op's specification does not allow."""


class OnnxTypeError(JaxOnnxError, TypeError):
    """An input whose element type the op version (or the graph) does not accept."""


class StaticValueError(JaxOnnxError, ValueError):
    """A value that decides an output shape is traced, so its value is unknown at trace time."""

    #: The name of the op argument that is traced, where the op knows it (e.g. ``"starts"``).
    argument: str | None = None


class UnsupportedOpError(JaxOnnxError, NotImplementedError):
    """An op, domain or opset that jaxonnx does not implement."""


class ModelLoadError(JaxOnnxError, ValueError):
    """A model file or protobuf that cannot be loaded safely."""


class X64Warning(UserWarning):
    """A model's 64-bit graph inputs or outputs will compute in 32 bits because
    ``jax_enable_x64`` is off (filter it with ``warnings.filterwarnings``)."""


class DeclaredShapeWarning(UserWarning):
    """A value's computed shape is not the shape the model declares for it (a graph output,
    or an entry of ``value_info``): jaxonnx goes on with the computed value, as onnxruntime
    does, and warns once per value (filter it with ``warnings.filterwarnings``). A declared
    graph input's shape, and every declared element type, are still enforced."""


class LeniencyWarning(UserWarning):
    """A file breaks the ONNX text in a way onnxruntime runs anyway (an attribute its schema
    does not know on LayerNormalization, the default domain written ``"ai.onnx"``): jaxonnx
    runs it as onnxruntime does and warns once per load, naming each node, op and what was
    ignored or renamed (filter it with ``warnings.filterwarnings``)."""


class NodeError(JaxOnnxError):
    """A failure inside a graph node whose cause is not a jaxonnx error (re-raised with context)."""


def with_context(error: BaseException, context: str) -> BaseException:
    """Returns an exception of the same jaxonnx type with ``context`` prepended.

    Errors that jaxonnx did not raise on purpose become a :class:`NodeError`, so the
    caller always learns which node failed; the original stays chained as ``__cause__``.
    Attributes the error carries (e.g. :attr:`StaticValueError.argument`) are kept.
    """
    message = f"{context}: {error}"
    if isinstance(error, JaxOnnxError):
        wrapped = type(error)(message)
        wrapped.__dict__.update(error.__dict__)
        return wrapped
    return NodeError(f"{message} ({type(error).__name__})")
