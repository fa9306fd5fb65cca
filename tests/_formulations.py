"""Which versions of an op compute the same: the op tests run an example once per
formulation, at its newest version, instead of once per version.

A formulation is a run of consecutive versions of one op where each newer version has
the same function, contract, attributes (kind, required, default), formal inputs and
outputs as the one before, and type constraints that contain the older ones: it computes
what the older version does on every input the older one takes. The tests that run the
newest version only also check that the older versions take the examples' types
(``tests/test_op_table.py``).
"""

from __future__ import annotations

import jaxonnx


def signature(op: jaxonnx.OpVersion) -> tuple:
    """What decides an op version's results besides its types: its function and contract,
    its attributes (kind, required, default) and its formal inputs and outputs."""
    schema = op.schema
    attributes = sorted(
        (a.name, int(a.type), a.required, a.default_value.SerializeToString()) for a in schema.attributes.values()
    )
    formals = [
        [(f.name, f.type_str, int(f.option), f.is_homogeneous) for f in side]
        for side in (schema.inputs, schema.outputs)
    ]
    return op.fn, op.contract, attributes, formals


def type_constraints(op: jaxonnx.OpVersion) -> dict[str, set[str]]:
    return {c.type_param_str: set(c.allowed_type_strs) for c in op.schema.type_constraints}


def only_widens(older: jaxonnx.OpVersion, newer: jaxonnx.OpVersion) -> bool:
    """Whether ``newer`` computes what ``older`` does on every input ``older`` takes."""
    old_types, new_types = type_constraints(older), type_constraints(newer)
    return (
        signature(older) == signature(newer)
        and old_types.keys() == new_types.keys()
        and all(old_types[t] <= new_types[t] for t in old_types)
    )


def formulations(op_type: str, domain: str = "") -> list[list[jaxonnx.OpVersion]]:
    """The registered versions of an op, grouped into formulations, oldest first."""
    groups: list[list[jaxonnx.OpVersion]] = []
    for since in sorted(jaxonnx.supported_ops(domain)[op_type]):
        op = jaxonnx.get_op(op_type, since, domain)
        if groups and only_widens(groups[-1][-1], op):
            groups[-1].append(op)
        else:
            groups.append([op])
    return groups
