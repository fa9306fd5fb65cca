"""``jaxonnx`` with no command: the bundled demo model, loaded, run, jitted and
differentiated."""

from __future__ import annotations

import numpy as np


def _demo() -> int:
    import jax
    import jax.numpy as jnp

    import jaxonnx
    from jaxonnx._demo import DEMO_INDICES, DEMO_KEEP, DEMO_PATH, DEMO_ROWS

    model = jaxonnx.load(DEMO_PATH)
    print(f"Loaded the bundled demo: {model}")
    for name, op, version in model.describe_nodes():
        print(f"  node {name:<20} {op:<15} resolved to {version}")
    print("The graph: odd = x[:, 1::2] (Slice); mixed = Where(keep, GatherElements(odd, indices, axis=1), odd);")
    print("           y = Flatten(Compress(mixed, rows, axis=0), axis=0), with")
    for name, value in (("indices", DEMO_INDICES), ("keep", DEMO_KEEP), ("rows", DEMO_ROWS)):
        print(f"  {name} = {value.tolist()}")
    x = jnp.arange(24, dtype=jnp.float32).reshape(4, 6)
    print("x = jnp.arange(24, dtype=jnp.float32).reshape(4, 6):")
    for row in np.asarray(x).tolist():
        print("  ", row)
    (eager,) = model(x)
    print(f"eager:    y = {np.asarray(eager).tolist()}")
    compiled = jax.jit(model)
    (jitted,) = compiled(x)
    print(f"jax.jit:  y = {np.asarray(jitted).tolist()} (equal to eager: {bool(jnp.array_equal(eager, jitted))})")
    jaxpr = jax.make_jaxpr(model)(x)
    print(
        f"jax.jit traces the whole graph into one jaxpr of {len(jaxpr.jaxpr.eqns)} primitives (Constant values folded in)"
    )
    grad = jax.grad(lambda v: jnp.sum(model(v)[0] ** 2))(x)
    print("gradient of sum(y**2) with respect to x (nonzero where x reaches y):")
    for row in np.asarray(grad).tolist():
        print("  ", row)
    return 0
