"""One example call of an op: its inputs, attributes and the versions it is valid for."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Container

import numpy as np


@dataclasses.dataclass
class Example:
    """Inputs (``None`` for an omitted optional input) and attributes of one op call.

    ``versions``: the since_versions the example is valid for (None: every registered
    version whose schema has all its attributes and accepts its input count).
    ``outputs``: how many outputs the example's node declares.
    ``grad``: whether to check gradients (False where the op is not differentiable at the
    example's values, e.g. ties); ``vmap``: whether to check vmap.
    """

    inputs: list[np.ndarray | None]
    attributes: dict = dataclasses.field(default_factory=dict)
    versions: Container[int] | None = None
    grad: bool = True
    vmap: bool = True
    rtol: float = 1e-5
    atol: float = 1e-6
    #: How many outputs the node declares (None: every output of the schema); some ops'
    #: semantics depend on it (BatchNormalization before 14, MaxPool without Indices).
    outputs: int | None = None
    #: A numpy oracle ``reference(*inputs, **attributes) -> list of outputs``, used instead
    #: of onnx.reference where onnx.reference has no implementation of the op (GlobalLpPool)
    #: or computes only part of it (its GlobalMaxPool reduces the wrong axes below rank 4).
    reference: Callable | None = None
