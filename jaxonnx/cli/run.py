"""``jaxonnx run MODEL.onnx``: run a model (eagerly, or whole under ``--jit``) and summarize
its outputs."""

from __future__ import annotations

import time

from jaxonnx.cli.errors import _UsageError
from jaxonnx.cli.hints import _failure, _hinted_outputs, _print_outputs
from jaxonnx.cli.inputs import _prepare, _print_inputs


def _run(args) -> int:
    import jax

    from jaxonnx._errors import JaxOnnxError

    prepared = _prepare(args)
    feed = prepared.feed
    _print_inputs(prepared)
    try:
        if args.jit:
            strings = [name for name, value in feed.items() if value.dtype == object]
            if strings:
                raise _UsageError(
                    f"The input {strings[0]!r} is a string tensor, which JAX cannot hold under jax.jit; "
                    "run without --jit (string tensors run on the eager path)."
                )
            device_feed = jax.device_put(feed)
            start = time.perf_counter()
            lowered = jax.jit(prepared.model.run).lower(device_feed)
            traced = time.perf_counter()
            compiled = lowered.compile()
            ready = time.perf_counter()
            outputs = jax.block_until_ready(compiled(device_feed))
            done = time.perf_counter()
            outputs = {name: outputs[name] for name in prepared.model.output_names}  # jit sorts dict keys
            print(
                f"jax.jit: traced and lowered in {_ms(traced - start)}, compiled in {_ms(ready - traced)}; "
                f"ran in {_ms(done - ready)} (the first call of the compiled function):"
            )
        else:
            start = time.perf_counter()
            outputs = prepared.model.run(feed)
            jax.block_until_ready([v for v in outputs.values() if isinstance(v, jax.Array)])
            print(
                f"ran eagerly in {_ms(time.perf_counter() - start)} ({prepared.model.eager_mode}; the first call compiles):"
            )
    except (JaxOnnxError, jax.errors.JaxRuntimeError) as error:
        raise _failure(error, prepared) from error
    _print_outputs(outputs, _hinted_outputs(prepared, jit=args.jit))
    return 0


def _ms(seconds: float) -> str:
    ms = 1e3 * seconds
    return f"{ms:.1f} ms" if ms >= 1 else f"{ms:.3f} ms"
