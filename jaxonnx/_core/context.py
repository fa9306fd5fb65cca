"""What an op needs from its node or its call, beyond its inputs and attributes.

The graph runner builds one :class:`OpContext` per node call; the registry reads from it
what each op names in its signature (see :func:`jaxonnx._core.contract.run_time_needs`) and
passes it on as plain keywords, so op functions stay pure functions of arrays and Python
values (``non_zero(X, size=8)``, as ``jnp.nonzero(x, size=8)``). A new run-time need is one
more field here, which the ops that want it take as a parameter of the same name; nothing
else changes.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class OpContext:
    """The run-time needs of one node call.

    Attributes:
        node: the node's path, for errors: ``"Add_3"`` in the main graph,
            ``"/If_0/then_branch/Add_3"`` inside a subgraph.
        output_count: how many outputs the node declares (Split before 18 cuts its input
            into that many equal parts). Reaches ops that take ``output_count``.
        size: the size hint of the node's data-dependent output length (``size_hints=`` of
            :func:`jaxonnx.load`), or None. Reaches ops that take ``size`` (and declare a
            ``size_hint``).
        rng: a ``jax.random`` key for this node (the caller's key folded with the node's
            position, see :mod:`jaxonnx._core.graph`), or None when the caller passed none.
            Reaches ops that take ``rng``.
        real_length: the graph runner follows the padding of the node's size-hinted outputs
            (see :mod:`jaxonnx._core.padding`), so the op returns its real length after its
            outputs. Reaches ops that take ``real_length``.
        options: load-time choices that change an op's behaviour by name, e.g.
            ``{"straight_through": True}`` for quantization-aware training. Each reaches
            the ops that take a parameter of its name (the names are :data:`OP_OPTIONS`).
        computation: for an op that differentiates part of its graph (Gradient), the
            function from the values its ``xs`` and ``zs`` attributes name to the value its
            ``y`` attribute names, closed over the graph's other values. Reaches ops that
            take ``computation``.
        channels_last: the node's main input is given channels-last (``(N, D..., C)``) and
            its output is wanted so (see :mod:`jaxonnx._core.layout`). Reaches ops that take
            ``channels_last``.
        checks: where the checks go that the op cannot make on a traced value, made after
            the computation (a :class:`~jaxonnx._core.checks.NodeChecks`; an eager call of a
            compiled graph passes one), or None. Reaches ops that take ``checks``.
    """

    node: str = ""
    output_count: int | None = None
    size: int | None = None
    rng: Any = None
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: The op returns its real length after its outputs (see :mod:`jaxonnx._core.padding`).
    real_length: bool = False
    #: Gradient's differentiated computation, a function of its ``xs`` and ``zs`` values.
    computation: Any = None
    #: The main input is channels-last and the output is wanted so.
    channels_last: bool = False
    #: The checks of traced values, made after the computation (jaxonnx/_core/checks.py).
    checks: Any = None


#: The fields an op receives by naming them as parameters (``options`` reaches ops by its
#: entries' names instead).
CONTEXT_FIELDS = frozenset(field.name for field in dataclasses.fields(OpContext)) - {"options"}

#: Load-time options that reach ops (``jaxonnx.load(..., straight_through=True)``): an op
#: that takes a parameter of one of these names receives the option when the caller set it.
OP_OPTIONS = frozenset({"straight_through"})
