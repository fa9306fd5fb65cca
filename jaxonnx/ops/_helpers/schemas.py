"""Schemas of ops that onnx does not define: onnxruntime's contrib ops, declared beside each op
the way onnxruntime declares them (``onnxruntime/core/graph/contrib_ops/*_defs.cc``). Most
are in the ``com.microsoft`` domain; a few (SimplifiedLayerNormalization, the first
LayerNormalization) onnxruntime registers in the default domain although onnx defines
no such version. Registers no op.

Every contrib schema jaxonnx declares is built here (the quantized ops, the attention ops,
the generation searches alike).
"""

from __future__ import annotations

import onnx.defs
import onnx.helper

_Schema = onnx.defs.OpSchema
_OPTIONS = {
    "": _Schema.FormalParameterOption.Single,
    "optional": _Schema.FormalParameterOption.Optional,
    "variadic": _Schema.FormalParameterOption.Variadic,
}
#: The float element types onnxruntime's contrib schemas list most often.
FLOATS = ("tensor(float16)", "tensor(float)", "tensor(double)", "tensor(bfloat16)")


def contrib_schema(
    name: str,
    doc: str,
    inputs,
    outputs,
    type_constraints,
    attributes=(),
    *,
    domain: str = "com.microsoft",
    since_version: int = 1,
    differentiable: tuple[str, ...] | None = None,
) -> onnx.defs.OpSchema:
    """The ``onnx.defs.OpSchema`` of onnxruntime's contrib op ``name``.

    Args:
        name: the op type.
        doc: one line saying what the op computes.
        inputs, outputs: ``(name, type)`` or ``(name, type, "optional" | "variadic")``.
        type_constraints: ``(parameter, [types])``.
        attributes: ``onnx.defs.OpSchema.Attribute`` values (see :func:`attribute`).
        domain: ``"com.microsoft"``, or ``""`` for the ops onnxruntime puts in the default domain.
        since_version: the version onnxruntime declares (1 for all of them so far).
        differentiable: the formal parameters marked differentiable (the registry's
            gradient checks take those), the others left unknown; by default every float
            tensor is differentiable and the rest (ids, masks, quantized codes) is not. The
            quantized ops name theirs: a float scale may or may not carry a gradient.

    Example:
        >>> schema = contrib_schema("QuickGelu", "x * sigmoid(alpha * x)", [("X", "T")], [("Y", "T")],
        ...                         [("T", ["tensor(float)"])], [attribute("alpha", 1.702)])
        >>> schema.domain, schema.since_version, schema.attributes["alpha"].required
        ('com.microsoft', 1, False)
    """

    allowed = {param: types for param, types in type_constraints}

    def formal(spec):
        formal_name, type_str, *option = spec
        option = option[0] if option else ""
        categories = _Schema.DifferentiationCategory
        if differentiable is not None:
            category = categories.Differentiable if formal_name in differentiable else categories.Unknown
        else:
            # Float tensors are differentiable (tests/test_op_table.py checks their gradients);
            # ids, masks and quantized codes are not.
            floats = any("float" in t or "double" in t for t in allowed.get(type_str, [type_str]))
            category = categories.Differentiable if floats else categories.NonDifferentiable
        return _Schema.FormalParameter(
            formal_name,
            type_str,
            param_option=_OPTIONS[option],
            is_homogeneous=option != "variadic",
            differentiation_category=category,
        )

    return _Schema(
        name,
        domain,
        since_version,
        doc,
        inputs=[formal(spec) for spec in inputs],
        outputs=[formal(spec) for spec in outputs],
        type_constraints=[(param, list(types), "") for param, types in type_constraints],
        attributes=list(attributes),
    )


def attribute(name: str, default, doc: str = "") -> onnx.defs.OpSchema.Attribute:
    """An optional attribute with a ``default`` (an int, float, string or list of them)."""
    return _Schema.Attribute(name, onnx.helper.make_attribute(name, default), doc)


def attribute_without_default(
    name: str, kind: onnx.defs.OpSchema.AttrType, doc: str = "", *, required: bool = False
) -> onnx.defs.OpSchema.Attribute:
    """An attribute with no default: optional (the op gets None when the node leaves it out)
    or ``required``."""
    return _Schema.Attribute(name, kind, doc, required=required)
