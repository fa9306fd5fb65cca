"""``jaxonnx bench MODEL.onnx``: load, compile and per-call time of the jitted model, beside
onnxruntime's on the same inputs."""

from __future__ import annotations

import statistics
import time

import numpy as np

from jaxonnx.cli.errors import _UsageError
from jaxonnx.cli.hints import _failure, _Hinted, _hinted_outputs, _print_outputs, _real_part
from jaxonnx.cli.inputs import _prepare, _print_inputs
from jaxonnx.cli.run import _ms

#: The default (rtol, atol) of bench's output check, by element type.
_TOLERANCES = {"float16": (1e-2, 1e-3), "bfloat16": (2e-2, 1e-2), "float32": (1e-4, 1e-5), "float64": (1e-7, 1e-9)}


def _bench(args) -> int:
    import jax

    from jaxonnx._errors import JaxOnnxError

    if args.repeat < 1 or args.warmup < 0:
        raise _UsageError(
            f"--repeat needs N >= 1 and --warmup N >= 0, got {args.repeat} and {args.warmup}.", exit_code=2
        )
    prepared = _prepare(args)
    feed = prepared.feed
    _print_inputs(prepared)
    strings = [name for name, value in feed.items() if value.dtype == object]
    if strings:
        raise _UsageError(
            f"The input {strings[0]!r} is a string tensor, which JAX cannot hold under jax.jit; bench times jitted models only."
        )
    device = jax.devices()[0]
    try:
        device_feed = jax.block_until_ready(jax.device_put(feed))
        start = time.perf_counter()
        lowered = jax.jit(prepared.model.run).lower(device_feed)
        traced = time.perf_counter()
        compiled = lowered.compile()
        compile_s = time.perf_counter() - traced
        trace_s = traced - start
        times, outputs = _timed(lambda: jax.block_until_ready(compiled(device_feed)), args.warmup, args.repeat)
    except (JaxOnnxError, jax.errors.JaxRuntimeError) as error:
        raise _failure(error, prepared) from error
    outputs = {name: outputs[name] for name in prepared.model.output_names}  # jit sorts dict keys
    kind = (
        device.platform
        if device.device_kind.lower() == device.platform
        else f"{device.platform} ({device.device_kind})"
    )
    print(f"jaxonnx: load {_ms(prepared.load_s)}, trace and lower {_ms(trace_s)}, compile {_ms(compile_s)}")
    print(f"jaxonnx, jax.jit on {kind}: {_timing(times)}")
    hinted = _hinted_outputs(prepared, jit=True)
    runtime = None if args.no_onnxruntime else _onnxruntime()
    if runtime is None:
        if not args.no_onnxruntime:
            print("onnxruntime: not installed (pip install onnxruntime), so no comparison")
        _print_outputs(outputs, hinted)
        return 0
    start = time.perf_counter()
    try:
        # Azure's provider runs no ops of its own; the others in onnxruntime's order of preference.
        providers = [p for p in runtime.get_available_providers() if p != "AzureExecutionProvider"]
        options = runtime.SessionOptions()
        options.log_severity_level = 3  # errors only: its warnings are about the model, not the timing
        session = runtime.InferenceSession(args.model, options, providers=providers)
    except Exception as error:  # onnxruntime's own errors, e.g. an op it lacks
        print(f"onnxruntime {runtime.__version__}: cannot load the model: {str(error).strip().splitlines()[0]}")
        _print_outputs(outputs, hinted)
        return 0
    session_s = time.perf_counter() - start
    ort_feed = dict(feed)  # initializers given with --input too: onnxruntime takes them by name
    try:
        ort_times, ort_outputs = _timed(lambda: session.run(None, ort_feed), args.warmup, args.repeat)
    except Exception as error:  # onnxruntime's own errors, as at the load
        print(f"onnxruntime {runtime.__version__}: cannot run the model: {str(error).strip().splitlines()[0]}")
        _print_outputs(outputs, hinted)
        return 0
    print(f"onnxruntime {runtime.__version__}: session {_ms(session_s)}")
    print(f"onnxruntime, {', '.join(session.get_providers())}: {_timing(ort_times)}")
    ratio = statistics.median(ort_times) / statistics.median(times)
    print(f"ratio onnxruntime / jaxonnx median time: {ratio:.2f} (above 1: jaxonnx is faster)")
    names = [o.name for o in session.get_outputs()]
    agree = _compare(outputs, dict(zip(names, ort_outputs)), hinted, args)
    return 0 if agree else 1


def _onnxruntime():
    try:
        import onnxruntime
    except ImportError:
        return None
    return onnxruntime


def _timed(call, warmup: int, repeat: int):
    """Per-call times in seconds of ``repeat`` calls after ``warmup`` untimed ones, and the
    last call's result (``call`` waits for its result: ``block_until_ready`` for JAX)."""
    result = None
    for _ in range(warmup):
        result = call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return times, result


def _timing(times) -> str:
    return (
        f"median {_ms(statistics.median(times))} per call over {len(times)} call{'s' if len(times) > 1 else ''} "
        f"(min {_ms(min(times))}, max {_ms(max(times))})"
    )


def _compare(outputs: dict, expected: dict, hinted: dict[str, _Hinted], args) -> bool:
    """Prints, per output, the largest differences from onnxruntime's and whether they are
    within the tolerance; size-hinted outputs compare their real entries only."""
    print("outputs against onnxruntime (pass: |jaxonnx - onnxruntime| <= atol + rtol * |onnxruntime| everywhere):")
    all_pass = True
    for name, value in outputs.items():
        value, note = _real_part(value, hinted.get(name))
        reference = np.asarray(expected[name])
        if value.shape != reference.shape:
            print(f"  {name}: FAIL: shape {list(value.shape)}{note}, onnxruntime's {list(reference.shape)}")
            all_pass = False
            continue
        if value.dtype.kind not in "fc":
            ok = bool(np.array_equal(value, reference.astype(value.dtype) if value.dtype != object else reference))
            mismatches = int(np.sum(value != reference)) if value.dtype != object else int(not ok)
            print(
                f"  {name}: {'pass' if ok else 'FAIL'}: {value.dtype} compared exactly, {mismatches} entries differ{note}"
            )
            all_pass &= ok
            continue
        default_rtol, default_atol = _TOLERANCES.get(str(value.dtype), _TOLERANCES["float32"])
        rtol = default_rtol if args.rtol is None else args.rtol
        atol = default_atol if args.atol is None else args.atol
        a = value.astype(np.complex128 if value.dtype.kind == "c" else np.float64)
        b = reference.astype(a.dtype)
        diff = np.abs(a - b)
        both_nan = np.isnan(a) & np.isnan(b)
        diff = np.where(both_nan, 0.0, diff)
        finite = ~np.isnan(diff)
        max_abs = float(diff.max()) if diff.size else 0.0
        nonzero = np.abs(b) > 0
        max_rel = float((diff[nonzero] / np.abs(b[nonzero])).max()) if nonzero.any() else 0.0
        ok = bool(np.all(finite & (diff <= atol + rtol * np.abs(np.where(np.isnan(b), 0, b)))))
        print(
            f"  {name}: {'pass' if ok else 'FAIL'}: max abs diff {max_abs:.3g}, max rel diff {max_rel:.3g} "
            f"(rtol {rtol:g}, atol {atol:g} for {value.dtype}){note}"
        )
        all_pass &= ok
    print("outputs agree" if all_pass else "outputs DIFFER from onnxruntime's")
    return all_pass
