"""The op contract: what an op states once, at its ``register`` call.

An op declares what decides its shapes (``static``), what it reads while known
(``concrete``), whether its output length depends on values (``size_hint``), whether it
computes on numpy (``folds``) and what it means on padded entries (``padding``). Those are
:class:`OpContract`'s declared fields, the keywords of :func:`jaxonnx.register`; a new
declared property of ops is one field here and nothing else.

What an op needs at run time reaches it by its signature: a parameter named after a field of
:class:`~jaxonnx._core.context.OpContext` (``rng``, ``node``, ``output_count``, ``size``...)
or after a load-time option (:data:`~jaxonnx._core.context.OP_OPTIONS`) receives it from the
call's context. :func:`run_time_needs` reads them off the function at registration, so a new
run-time need is one ``OpContext`` field, which the ops that want it name as a parameter.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jaxonnx._core.context import CONTEXT_FIELDS, OP_OPTIONS, OpContext

#: Needs that the interpreter hands an op but a ``jaxonnx.ops`` caller never gives: the
#: op returns its real length after its outputs for the padding rules to follow.
_INTERPRETER_ONLY = ("real_length",)

#: The ``layout`` kinds an op may declare (see :class:`OpContract`); "" for none.
LAYOUT_KINDS = ("", "elementwise", "along_axis", "reduces")


@dataclasses.dataclass(frozen=True)
class OpContract:
    """What an op states once at registration; the registry enforces it on every call.

    Attributes:
        static: the inputs (by their onnx formal names) that decide the output shape, so
            their values must be known at trace time. They reach the op as exact numpy
            arrays; a traced one raises :class:`~jaxonnx.StaticValueError` naming it.
        concrete: inputs the op reads when their values are known (bounds checks, exact
            selection) but that may also be traced: numpy stays numpy, JAX stays JAX.
        checked: of ``concrete``, the inputs an op that takes ``checks`` reads while known
            only to check them, and checks through ``checks`` after the computation where
            they are traced (:mod:`jaxonnx._core.checks`): a model that computes them from
            its inputs still compiles whole for an eager call. None (the default): all of
            ``concrete`` for an op that takes ``checks``, none for another. An op that also
            reads a concrete input to decide something (GroupQueryAttention's
            ``total_sequence_length``, its present cache's length) leaves it out, so that
            such a model runs op by op on the known value.
        size_hint: the output length depends on input values, so the op takes ``size`` and
            ``fill_value`` parameters (and the interpreter's ``size_hints``). True: the
            padding is out-of-range indices (NonZero); ``"zeros"``: zero rows (Compress);
            ``"bound"``: the hint bounds a loop and its outputs are not tracked as padded
            (Loop); ``"own_length"``: padded to its input's own length (Slice between traced
            bounds); a tuple: one of ``"indices"``, ``"zeros"`` or ``""`` (not padded) per
            output (Unique).
        folds: the op computes on numpy when all its array inputs are numpy, so values known
            at trace time (initializers, Constant, Shape and everything computed from them)
            stay exact numpy. Ops written with ``jax.lax`` only set ``folds=False``: their
            inputs always arrive as JAX arrays.
        padding: the rule the graph runner follows when a size hint's padding reaches the
            op (:mod:`jaxonnx._core.padding`): a rule shared by many ops, by name
            (``"elementwise"``, ``"moves"``, or a reduction: ``"sum"``, ``"prod"``,
            ``"max"``, ``"min"``, ``"mean"``), or a function of the op's own, written beside
            it, that takes a :class:`~jaxonnx._core.padding.Call` and returns the outputs and
            their marks (Gather's, TopK's); ``""``: a padded input is refused with an error
            naming the node.
        weights: the inputs (by their onnx formal names) that hold a layer's learned weights
            (Gemm's ``B`` and ``C``, Conv's ``W`` and ``B``): a one-element tensor read there is
            a trainable param, where elsewhere it is an exporter's constant (0.5, an exponent).
        linear: the output is a linear map of an input (MatMul, Gemm, Conv): an operand
            added to it is a bias, so a one-element one is a trainable param.
        adds: the output is the sum of the op's two inputs (Add).
        identity: the output is input 0 itself (Identity): a weight read through it is that
            input's.
        shape_only: the outputs depend only on the inputs' shapes and types, never on their
            values (Shape, Size, EyeLike, the random ``*Like`` ops): a value read only by
            such ops never decides a shape through them.
        outputs_attribute: the output is this attribute's tensor (Constant's ``value``): a
            float one is a weight, which a param replaces (paddle2onnx stores weights so).
        makes_strings: the op may turn numbers into strings, though its schema allows other
            output types too: True, or a function of the node's attributes (a dict) that
            says whether this node does (Cast with ``to`` = STRING). Ops whose schema allows
            only string outputs are found from the schema.
        branches: the subgraph attributes of which the op runs one, chosen by its first input,
            and whose outputs are its own (If's ``then_branch`` and ``else_branch``).
        keeps_non_zeros: the output holds exactly input 0's entries, moved, so as many of
            them are non-zero (True: Identity, Reshape, Transpose...), or does where the
            input or the output is bool (``"bool"``: Cast, CastLike).
        sums: the output is the plain sum of input 0's entries over the reduced axes
            (ReduceSum): summed over every axis, a 0/1 mask gives its count of non-zeros.
        counts_non_zeros_of: for a size-hinted op, the input (by its formal name) whose
            non-zero entries are the real length (Compress's ``condition``, NonZero's ``X``).
        padded_axis: for a size-hinted op, the output axis along which it pads: a number
            (NonZero: 1), or the attribute that holds it (Compress: ``"axis"``, 0 when the
            node has none).
        layout: how the op's result follows its inputs' axes, which lets the graph runner
            hand it channels-last values (:mod:`jaxonnx._core.layout`): ``"elementwise"``,
            each output entry is computed from the inputs' entries at its position after
            numpy-style broadcasting (Relu, Add from version 7; not Add-6, which broadcasts
            along an axis); ``"along_axis"``, the op joins or cuts the inputs of its output's
            type along its ``axis`` attribute and is elementwise along the others (Concat,
            Split); ``"reduces"``, input 0 reduced over ``axes``, an attribute or an input as
            the version's schema says (ReduceSum); or a function of the op's own, for an op
            with per-axis inputs (Resize's ``roi``, ``scales``, ``sizes``), that takes the
            inputs after input 0, the node's attributes and the order of input 0's axes
            channels-last, and returns those inputs in that order, or None. Declared only on
            the versions where it holds.
        prefers_channels_last: the op computes channels-last itself (Conv: XLA:CPU's
            convolutions and jaxonnx's CPU formulations), so it takes a channels-first input
            moved and keeps its output channels-last: a run of channels-last values starts
            at it. Read with the ``channels_last`` parameter the op takes.
        ignores_unknown_attributes: onnxruntime runs the op with attributes its schema does
            not know (its former contrib LayerNormalization and SimplifiedLayerNormalization,
            whose fusion files carry ``epsion``): a load drops them, with a warning.
        needs: not declared but read off the op's signature (:func:`run_time_needs`): the
            :class:`~jaxonnx._core.context.OpContext` fields and load-time options the op
            takes as parameters, which the registry passes from each call's context.

    Example:
        >>> jaxonnx.get_op("NonZero", 13).contract.needs
        ('size', 'real_length')
    """

    static: tuple[str, ...] = ()
    concrete: tuple[str, ...] = ()
    checked: tuple[str, ...] | None = None
    size_hint: bool | str | tuple[str, ...] = False
    folds: bool = True
    padding: str | Callable[[Any], tuple[tuple, list]] = ""
    weights: tuple[str, ...] = ()
    linear: bool = False
    adds: bool = False
    identity: bool = False
    shape_only: bool = False
    outputs_attribute: str = ""
    makes_strings: bool | Callable[[Mapping[str, Any]], bool] = False
    branches: tuple[str, ...] = ()
    keeps_non_zeros: bool | str = False
    sums: bool = False
    counts_non_zeros_of: str = ""
    padded_axis: int | str = 0
    layout: str | Callable[..., Any] = ""
    prefers_channels_last: bool = False
    ignores_unknown_attributes: bool = False
    needs: tuple[str, ...] = ()

    def __post_init__(self):
        # Declared as lists or tuples alike; held as tuples so contracts compare and hash.
        for name in ("static", "concrete", "weights", "branches"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.checked is not None:
            object.__setattr__(self, "checked", tuple(self.checked))
            if not set(self.checked) <= set(self.concrete):
                raise ValueError(
                    f"`checked` names inputs of `concrete`; {sorted(set(self.checked) - set(self.concrete))} are not."
                )
        if isinstance(self.layout, str) and self.layout not in LAYOUT_KINDS:
            raise ValueError(
                f"`layout` is one of {', '.join(map(repr, LAYOUT_KINDS))} or a function, got {self.layout!r}."
            )

    def named_inputs(self) -> tuple[str, ...]:
        """The formal inputs the contract names (``static``, ``concrete``, ``weights``,
        ``counts_non_zeros_of``): each must be an input of the op's schema."""
        counted = (self.counts_non_zeros_of,) if self.counts_non_zeros_of else ()
        return self.static + self.concrete + self.weights + counted

    def checked_inputs(self) -> tuple[str, ...]:
        """The ``concrete`` inputs read only to check them, checked after the computation
        where traced (``checked``, or its default)."""
        if self.checked is not None:
            return self.checked
        return self.concrete if self.takes("checks") else ()

    def takes(self, need: str) -> bool:
        """Whether the op takes the run-time need ``need`` (``"rng"``, ``"checks"``...)."""
        return need in self.needs

    def keywords(self, ctx: OpContext | None) -> dict[str, Any]:
        """The keywords the op takes from ``ctx``: each of its ``needs``."""
        ctx = ctx or OpContext()
        keywords: dict[str, Any] = {}
        for name in self.needs:
            if name in OP_OPTIONS:
                if name in ctx.options:
                    keywords[name] = ctx.options[name]
            elif name != "fill_value":  # a `jaxonnx.ops` caller's own choice, never the context's
                keywords[name] = getattr(ctx, name)
        return keywords

    def public_keywords(self) -> tuple[str, ...]:
        """The run-time needs ``jaxonnx.ops`` functions take directly, as keywords."""
        return tuple(name for name in self.needs if name not in _INTERPRETER_ONLY)


def run_time_needs(fn: Callable, declared: Iterable[str], op_name: str) -> tuple[str, ...]:
    """The context fields and load-time options that ``fn`` takes as parameters.

    Args:
        fn: the op's function.
        declared: the names the op's schemas give its inputs and attributes: a parameter of
            one of those names is the input or attribute (LRN's ``size``), never a need.
        op_name: the op, for errors.

    Returns:
        The needs in ``fn``'s parameter order (``fill_value`` with ``size``).

    Example:
        >>> def sample(logits, *, seed=0.0, rng=None, node=""): ...
        >>> run_time_needs(sample, {"logits", "seed"}, "Sample")
        ('rng', 'node')
    """
    declared = set(declared)
    parameters = inspect.signature(fn).parameters
    needs = tuple(
        name
        for name in parameters
        if name not in declared and (name in CONTEXT_FIELDS or name in OP_OPTIONS or name == "fill_value")
    )
    if "fill_value" in needs and "size" not in needs:
        raise ValueError(f"{op_name} takes `fill_value` but not `size`; a size-hinted op takes both.")
    return needs


__all__ = ["OpContract", "run_time_needs"]
