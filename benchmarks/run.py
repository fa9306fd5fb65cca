"""Benchmarks jaxonnx against onnxruntime and onnx.reference on CPU (not a test).

    python benchmarks/run.py            # full run, writes benchmarks/results.md and chart.png
    python benchmarks/run.py --quick    # small smoke run (small tensors, few repetitions)

Every case is one ONNX model, built here, that all three runtimes run: ``jax.jit`` of
``jaxonnx.load(model)`` with inputs already on the device (``jax.device_put``, timed up to
``block_until_ready``), an onnxruntime CPU ``InferenceSession`` (default options: its
thread pool, its memory arena; outputs are returned as new numpy arrays, so both sides
allocate their outputs), and ``onnx.reference.ReferenceEvaluator``. The three are timed
alternately in one process and the medians are reported; the outputs are checked equal.

Environment. Fresh output buffers page-fault on CPU: XLA allocates every output with
``malloc``, which for large sizes maps new pages from the kernel on every call, while
onnxruntime serves its outputs from its own arena. The setting in ``TUNED_ENV`` makes
glibc's malloc reuse freed memory the same way (and lowers memcpy's non-temporal store
threshold). glibc reads it at process start, so the script measures in child processes:
once with the setting and once without (the environment it was started with, minus that
variable, and with ``JAXONNX_KEEP_ALLOCATOR=1``: ``import jaxonnx`` applies the malloc part
itself, see ``jaxonnx/_tuning.py``), and reports both (``--env tuned`` or ``--env default``
runs one only).

Machine noise: the runtimes alternate in blocks (an untimed call, then timed calls back to
back), so that neither is timed while the other's thread pool still spins; the script
reports how many cores other processes kept busy during each case (``/proc/stat``), and
``--wait-quiet S`` waits up to S seconds before each case for the machine to be idle. On a shared machine the figures
move by tens of percent with other people's work; alternating run by run keeps the
ratios fairer than the absolute times.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# glibc, read once at process start (hence the re-execution):
# - malloc: one arena (XLA's worker threads allocate the outputs; a second arena cannot hold
#   a 128 MiB block and falls back to mmap), no mmap for large blocks and no trimming, so a
#   freed output buffer is reused by the next call instead of being unmapped and faulted in
#   again; 4 KiB page faults on a fresh 128 MiB output cost 2-5x the copy itself here.
# - memcpy: non-temporal (cache-bypassing) stores from 4 MiB instead of glibc's default
#   (3/4 of the L3 size reported, 99 MiB in this VM). XLA copies (a Flatten that must return
#   a new buffer) run as 8 parallel memcpy blocks of 16 MiB, which otherwise use ordinary
#   stores that first read every destination line; onnxruntime's single 128 MiB memcpy is
#   above either threshold.
TUNED_ENV = {
    "GLIBC_TUNABLES": ":".join(
        [
            "glibc.malloc.arena_max=1",
            "glibc.malloc.mmap_max=0",
            "glibc.malloc.trim_threshold=17179869184",
            "glibc.cpu.x86_non_temporal_threshold=4194304",
        ]
    ),
}

# Targets: onnxruntime time / jaxonnx time, except compile (seconds, lower is better).
TARGETS = {
    "Slice (step 2, last axis)": 1.5,
    "Where": 1.5,
    "GatherElements (last axis)": 1.0,
    "Compress (axis 0, constant condition)": 1.0,
    "Flatten (4-D)": 1.0,
    "5-node chain": 2.5,
    "8x8 model latency": 1.0,
}
COMPILE_CASE = "100-node graph compile"
COMPILE_TARGET_S = 2.0


# --------------------------------------------------------------------------- models


def _models(quick: bool):
    """Each case: (name, ModelProto, inputs dict, bytes moved per run or None, reference runs)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rows, cols = (256, 512) if quick else (4096, 8192)
    rng = np.random.default_rng(0)

    def model(nodes, inputs, outputs, initializers=()):
        graph = helper.make_graph(
            nodes,
            "bench",
            [helper.make_tensor_value_info(n, dt, shape) for n, dt, shape in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None, None]) for n in outputs],  # all 2-D
            [numpy_helper.from_array(v, n) for n, v in initializers],
        )
        proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], producer_name="jaxonnx-bench")
        proto.ir_version = 10  # onnxruntime 1.31 reads IR <= 10 (onnx 1.23 writes 11 by default)
        return proto

    F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64

    def ints(*v):
        return np.array(v, dtype=np.int64)

    def floats(*shape):
        return rng.standard_normal(shape, dtype=np.float32)

    cases = []
    x = floats(rows, cols)
    mib = rows * cols * 4

    # Slice: every second column.
    cases.append(
        (
            "Slice (step 2, last axis)",
            model(
                [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])],
                [("x", F, [rows, cols])],
                ["y"],
                [("starts", ints(0)), ("ends", ints(cols)), ("axes", ints(1)), ("steps", ints(2))],
            ),
            {"x": x},
            mib + mib // 2,  # every cache line of x is read; half of it is written
            3,
        )
    )
    condition = rng.random((rows, cols)) < 0.5
    y = floats(rows, cols)
    cases.append(
        (
            "Where",
            model(
                [helper.make_node("Where", ["c", "x", "y"], ["z"])],
                [("c", B, [rows, cols]), ("x", F, [rows, cols]), ("y", F, [rows, cols])],
                ["z"],
            ),
            {"c": condition, "x": x, "y": y},
            rows * cols * (1 + 4 + 4 + 4),
            3,
        )
    )
    indices = rng.integers(0, cols, (rows, cols), dtype=np.int64)
    cases.append(
        (
            "GatherElements (last axis)",
            model(
                [helper.make_node("GatherElements", ["x", "i"], ["z"], axis=1)],
                [("x", F, [rows, cols]), ("i", I64, [rows, cols])],
                ["z"],
            ),
            {"x": x, "i": indices},
            rows * cols * (4 + 8 + 4),
            2,
        )
    )
    keep = rng.random(rows) < 0.5
    cases.append(
        (
            "Compress (axis 0, constant condition)",
            model(
                [helper.make_node("Compress", ["x", "keep"], ["z"], axis=0)],
                [("x", F, [rows, cols])],
                ["z"],
                [("keep", keep)],
            ),
            {"x": x},
            2 * int(keep.sum()) * cols * 4,  # the selected rows are read and written
            3,
        )
    )
    x4 = x.reshape(rows // 64, 64, cols // 128, 128)
    cases.append(
        (
            "Flatten (4-D)",
            model(
                [helper.make_node("Flatten", ["x"], ["z"], axis=2)],
                [("x", F, list(x4.shape))],
                ["z"],
            ),
            {"x": x4},
            2 * mib,
            3,
        )
    )
    # Five nodes that onnxruntime runs one by one and XLA fuses into one loop.
    half = cols // 2
    chain_keep = rng.random(rows) < 0.5
    cases.append(
        (
            "5-node chain",
            model(
                [
                    helper.make_node("Slice", ["x", "z0", "end1", "one", "two"], ["a"]),
                    helper.make_node("Where", ["c", "a", "y"], ["b"]),
                    helper.make_node("Compress", ["b", "keep"], ["d"], axis=0),
                    helper.make_node("Slice", ["d", "minus1", "int64min", "zero", "minus1"], ["e"]),
                    helper.make_node("Flatten", ["e"], ["z"], axis=0),
                ],
                [("x", F, [rows, cols]), ("c", B, [rows, half]), ("y", F, [rows, half])],
                ["z"],
                [
                    ("z0", ints(0)),
                    ("end1", ints(cols)),
                    ("one", ints(1)),
                    ("two", ints(2)),
                    ("keep", chain_keep),
                    ("minus1", ints(-1)),
                    ("int64min", ints(-(2**63))),
                    ("zero", ints(0)),
                ],
            ),
            {"x": x, "c": condition[:, :half].copy(), "y": y[:, :half].copy()},
            # x is read whole (stride 2), c and y where kept, the output written.
            mib + int(chain_keep.sum()) * half * (1 + 4 + 4),
            2,
        )
    )
    # All five ops on 8x8 tensors: per-call overhead.
    small_keep = np.array([True, False, True, True, False, True, True, False])
    cases.append(
        (
            "8x8 model latency",
            model(
                [
                    helper.make_node("Slice", ["x", "minus1", "int64min", "one", "minus1"], ["a"]),
                    helper.make_node("Where", ["c", "a", "y"], ["b"]),
                    helper.make_node("GatherElements", ["b", "i"], ["g"], axis=1),
                    helper.make_node("Compress", ["g", "keep"], ["d"], axis=0),
                    helper.make_node("Flatten", ["d"], ["z"], axis=1),
                ],
                [("x", F, [8, 8]), ("c", B, [8, 8]), ("y", F, [8, 8]), ("i", I64, [8, 8])],
                ["z"],
                [("minus1", ints(-1)), ("int64min", ints(-(2**63))), ("one", ints(1)), ("keep", small_keep)],
            ),
            {
                "x": floats(8, 8),
                "c": rng.random((8, 8)) < 0.5,
                "y": floats(8, 8),
                "i": rng.integers(-8, 8, (8, 8), dtype=np.int64),
            },
            None,
            None,
        )
    )
    return cases


def _compile_model(n_nodes: int):
    """A graph of ``n_nodes`` nodes cycling through the five ops on 48x48 tensors

    (onnx.reference's GatherElements uses ``np.choose``, limited to < 64 along the axis)."""
    N = 48
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64
    nodes, previous = [], "x"
    initializers = {
        "minus1": np.array([-1], np.int64),
        "int64min": np.array([-(2**63)], np.int64),
        "one": np.array([1], np.int64),
        "all": np.ones(N, bool),
    }
    for k in range(n_nodes):
        out = f"t{k}"
        kind = k % 5
        if kind == 0:
            nodes.append(helper.make_node("Where", ["c", previous, "y"], [out]))
        elif kind == 1:
            nodes.append(helper.make_node("Slice", [previous, "minus1", "int64min", "one", "minus1"], [out]))
        elif kind == 2:
            nodes.append(helper.make_node("GatherElements", [previous, "i"], [out], axis=1))
        elif kind == 3:
            nodes.append(helper.make_node("Compress", [previous, "all"], [out], axis=0))
        else:
            nodes.append(helper.make_node("Flatten", [previous], [out], axis=1))
        previous = out
    graph = helper.make_graph(
        nodes,
        "compile",
        [
            helper.make_tensor_value_info("x", F, [N, N]),
            helper.make_tensor_value_info("c", B, [N, N]),
            helper.make_tensor_value_info("y", F, [N, N]),
            helper.make_tensor_value_info("i", I64, [N, N]),
        ],
        [helper.make_tensor_value_info(previous, F, [N, N])],
        [numpy_helper.from_array(v, n) for n, v in initializers.items()],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    proto.ir_version = 10
    inputs = {
        "x": rng.standard_normal((N, N), dtype=np.float32),
        "c": rng.random((N, N)) < 0.5,
        "y": rng.standard_normal((N, N), dtype=np.float32),
        "i": rng.integers(-N, N, (N, N), dtype=np.int64),
    }
    return proto, inputs


# --------------------------------------------------------------------------- measuring


def _cpu_snapshot():
    """(busy jiffies of the whole machine, CPU seconds of this process, wall time)."""
    import resource

    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return sum(fields[:8]) - idle, usage.ru_utime + usage.ru_stime, time.perf_counter()


def _others_cores(before, after) -> float:
    """Average number of cores that other processes kept busy between two snapshots."""
    hz = os.sysconf("SC_CLK_TCK")
    busy = (after[0] - before[0]) / hz
    return max(0.0, busy - (after[1] - before[1])) / max(1e-9, after[2] - before[2])


def _wait_quiet(max_wait: float, threshold: float = 0.3) -> float:
    """Waits (up to ``max_wait`` s) until other processes use < ``threshold`` cores; returns their use."""
    deadline = time.perf_counter() + max_wait
    while True:
        before = _cpu_snapshot()
        time.sleep(1.0)
        others = _others_cores(before, _cpu_snapshot())
        if others < threshold or time.perf_counter() > deadline:
            return others


def _median(values):
    import numpy as np

    return float(np.median(values)) if values else None


def _copy_bandwidth(quick: bool) -> float:
    """GB/s of a numpy copy between two preallocated large arrays (bytes read + written)."""
    import numpy as np

    n = (16 if quick else 64) * 2**20 // 4 * 4  # 256 MiB of float32 in the full run
    src = np.ones(n, np.float32)
    dst = np.empty_like(src)
    times = []
    for _ in range(3 if quick else 9):
        start = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - start)
    return 2 * src.nbytes / _median(times) / 1e9


def _time_case(name, proto, inputs, nbytes, ref_runs, runs, quick):
    import jax
    import numpy as np
    import onnxruntime
    from onnx.reference import ReferenceEvaluator

    import jaxonnx

    model = jaxonnx.load(proto)
    fn = jax.jit(model)
    device_inputs = [jax.device_put(inputs[n]) for n in model.input_names]
    session = onnxruntime.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    reference = ReferenceEvaluator(proto)

    def run_jax():
        return jax.block_until_ready(fn(*device_inputs))

    def run_ort():
        return session.run(None, inputs)

    def run_ref():
        return reference.run(None, inputs)

    # Exactness first (and the compilation, outside the timings).
    (out_jax,) = run_jax()
    (out_ort,) = run_ort()
    equal = bool(np.array_equal(np.asarray(out_jax), out_ort))
    ref_error = None
    try:
        (out_ref,) = run_ref()
        equal = equal and bool(np.array_equal(out_ort, out_ref))
    except Exception as error:  # onnx.reference's GatherElements fails above 64 along the axis
        ref_error = f"{type(error).__name__}: {str(error).splitlines()[0][:80]}"
        ref_runs, out_ref = 0, None
    temp_bytes = fn.lower(*device_inputs).compile().memory_analysis().temp_size_in_bytes
    del out_jax, out_ort, out_ref

    latency = nbytes is None
    # Latency: each sample is the mean of a batch of calls.
    batch = (20 if quick else 500) if latency else 1
    # Warm up until the allocators reuse freed buffers: onnxruntime's arena takes two calls;
    # glibc's heap (with the setting) grows and fragments for several calls, interleaved with
    # onnxruntime's and Python's allocations, before it holds holes big enough for every output.
    for _ in range(2 if latency else 10):
        run_jax(), run_ort()
    # The runtimes alternate in blocks: one untimed call, then `block` timed calls back to
    # back. The untimed call absorbs what the other runtime left behind: onnxruntime's worker
    # threads spin for ~25 ms after a parallel section (30 ms of CPU measured after one
    # GatherElements run), taking the cores XLA has just started on, and after an idle pause
    # this VM's vCPUs are slow to get going again (a 50 ms sleep made a 6 ms XLA run 11 ms).
    block = 1 if latency else 2
    t_jax, t_ort, t_ref = [], [], []
    for r in range(-(-runs // block)):
        for fn_, times in ((run_jax, t_jax), (run_ort, t_ort)):
            fn_()
            for _ in range(block):
                start = time.perf_counter()
                for _ in range(batch):
                    fn_()
                times.append((time.perf_counter() - start) / batch)
        if ref_error is None and (ref_runs is None or r < ref_runs):
            start = time.perf_counter()
            for _ in range(max(1, batch // 10)):
                run_ref()
            t_ref.append((time.perf_counter() - start) / max(1, batch // 10))
    donated = None
    if name.startswith("Flatten") and not quick:
        donated = _time_donated(model, inputs, runs)
    return {
        "case": name,
        "paired_ratio": _median([o / j for o, j in zip(t_ort, t_jax)]),
        "donated_s": donated,
        "jax_s": _median(t_jax),
        "ort_s": _median(t_ort),
        "ref_s": _median(t_ref),
        "jax_min_s": min(t_jax),
        "ort_min_s": min(t_ort),
        "jax_all_s": t_jax,
        "ort_all_s": t_ort,
        "bytes": nbytes,
        "equal": equal,
        "xla_temp_bytes": int(temp_bytes),
        "output_bytes": int(np.asarray(run_ort()[0]).nbytes),
        "runs": runs,
        "ref_runs": len(t_ref),
        "ref_error": ref_error,
    }


def _time_donated(model, inputs, runs):
    """jax.jit(model, donate_argnums=0): the output may reuse the input's buffer (not a target)."""
    import jax

    fn = jax.jit(model, donate_argnums=0)
    # A buffer XLA owns: device_put shares a numpy array's memory when it is 64-byte aligned
    # (depends on where malloc put it), and shared memory cannot be donated (XLA copies then).
    owned_copy = jax.jit(lambda a: a.copy())
    times, aliased = [], 0
    for r in range(runs + 3):
        (x,) = [owned_copy(jax.device_put(inputs[n])) for n in model.input_names]
        x.block_until_ready()
        pointer = x.unsafe_buffer_pointer()
        start = time.perf_counter()
        (out,) = jax.block_until_ready(fn(x))
        if r >= 3:
            times.append(time.perf_counter() - start)
            aliased += out.unsafe_buffer_pointer() == pointer
        del out, x
    return _median(times), aliased / runs


def _time_compile(n_nodes, repeats):
    import jax
    import numpy as np
    import onnxruntime
    from onnx.reference import ReferenceEvaluator

    import jaxonnx

    proto, inputs = _compile_model(n_nodes)
    device_inputs = {n: jax.device_put(v) for n, v in inputs.items()}
    t_jax, t_trace, t_ort, t_ref, outs = [], [], [], [], {}
    for _ in range(repeats):
        start = time.perf_counter()
        model = jaxonnx.load(proto)  # a new Model: a new trace and a new XLA compilation
        fn = jax.jit(model)
        lowered = fn.lower(*(device_inputs[n] for n in model.input_names))
        traced = time.perf_counter()
        compiled = lowered.compile()
        (out,) = jax.block_until_ready(compiled(*(device_inputs[n] for n in model.input_names)))
        t_jax.append(time.perf_counter() - start)
        t_trace.append(traced - start)
        outs["jax"] = np.asarray(out)

        start = time.perf_counter()
        session = onnxruntime.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
        (outs["ort"],) = session.run(None, inputs)
        t_ort.append(time.perf_counter() - start)

        start = time.perf_counter()
        (outs["ref"],) = ReferenceEvaluator(proto).run(None, inputs)
        t_ref.append(time.perf_counter() - start)
    return {
        "case": COMPILE_CASE,
        "jax_s": _median(t_jax),
        "jax_trace_s": _median(t_trace),
        "ort_s": _median(t_ort),
        "ref_s": _median(t_ref),
        "jax_min_s": min(t_jax),
        "ort_min_s": min(t_ort),
        "bytes": None,
        "equal": bool(np.array_equal(outs["jax"], outs["ort"]) and np.array_equal(outs["ort"], outs["ref"])),
        "nodes": n_nodes,
        "runs": repeats,
        "ref_runs": repeats,
    }


def measure(args) -> dict:
    """Runs every case in this process; returns the figures."""
    import jax

    jax.config.update("jax_enable_x64", True)  # ONNX indices and Slice bounds are int64
    import numpy as np
    import onnx
    import onnxruntime

    quick = args.quick
    runs = args.runs or (3 if quick else 11)
    load_before = os.getloadavg()
    started = time.perf_counter()
    bandwidth = _copy_bandwidth(quick)
    results = []
    for name, proto, inputs, nbytes, ref_runs in _models(quick):
        if args.cases and not any(c.lower() in name.lower() for c in args.cases):
            continue
        case_runs = runs if nbytes is not None else max(runs, 15 if not quick else 3)
        if args.wait_quiet:
            _wait_quiet(args.wait_quiet)
        before = _cpu_snapshot()
        results.append(_time_case(name, proto, inputs, nbytes, ref_runs, case_runs, quick))
        results[-1]["others_cores"] = _others_cores(before, _cpu_snapshot())
        _print_row(results[-1], bandwidth)
    if not args.cases or any(c.lower() in COMPILE_CASE.lower() for c in args.cases):
        before = _cpu_snapshot()
        results.append(_time_compile(20 if quick else 100, 2 if quick else 3))
        results[-1]["others_cores"] = _others_cores(before, _cpu_snapshot())
        _print_row(results[-1], bandwidth)
    return {
        "results": results,
        "copy_gbps": bandwidth,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "seconds": time.perf_counter() - started,
        "quick": quick,
        "env": {k: os.environ.get(k) for k in ("GLIBC_TUNABLES", "XLA_FLAGS", "OMP_NUM_THREADS") if os.environ.get(k)},
        "versions": {
            "python": platform.python_version(),
            "jax": jax.__version__,
            "jaxlib": __import__("jaxlib").__version__,
            "onnxruntime": onnxruntime.__version__,
            "onnx": onnx.__version__,
            "numpy": np.__version__,
        },
        "ort_threads": onnxruntime.SessionOptions().intra_op_num_threads,
    }


# --------------------------------------------------------------------------- reporting


def _ratio(r):
    return r["ort_s"] / r["jax_s"]


def _met(r):
    if r["case"] == COMPILE_CASE:
        return r["jax_s"] < COMPILE_TARGET_S
    return _ratio(r) >= TARGETS[r["case"]]


def _ms(seconds):
    if seconds is None:
        return "-"
    ms = seconds * 1e3
    return f"{ms:.3f}" if ms < 1 else f"{ms:.1f}" if ms < 1000 else f"{ms:,.0f}"


def _row_cells(r, bandwidth):
    compile_case = r["case"] == COMPILE_CASE
    gbps = "-" if not r["bytes"] else f"{r['bytes'] / r['jax_s'] / 1e9:.1f} / {bandwidth:.1f}"
    target = f"< {COMPILE_TARGET_S:g} s" if compile_case else f">= {TARGETS[r['case']]:g}"
    name = r["case"] + ("" if r["equal"] else " (OUTPUTS DIFFER)")
    ref = _ms(r["ref_s"]) if not r.get("ref_error") else "fails (see notes)"
    return [
        name,
        _ms(r["jax_s"]),
        _ms(r["ort_s"]),
        ref,
        f"{_ratio(r):.2f}",
        gbps,
        target,
        "yes" if _met(r) else "**no**",
    ]


HEADER = [
    "case",
    "jaxonnx ms",
    "onnxruntime ms",
    "onnx.reference ms",
    "ratio ort/jaxonnx",
    "GB/s jaxonnx / numpy copy",
    "target",
    "met?",
]


def _table(results, bandwidth) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(_row_cells(r, bandwidth)) + " |" for r in results]
    return "\n".join(lines)


def _print_row(r, bandwidth):
    print(
        "  " + " | ".join(_row_cells(r, bandwidth)) + f"   (other processes: {r['others_cores']:.2f} cores)", flush=True
    )


def _machine() -> dict:
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    thp = "?"
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            thp = f.read().strip()
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory": mem,
        "thp": thp,
        "kernel": platform.release(),
        "libc": " ".join(platform.libc_ver()),
    }


def _chart(passes: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(TARGETS)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [5, 1.3]})
    width = 0.8 / max(1, len(passes))
    for k, (label, data) in enumerate(passes.items()):
        by_case = {r["case"]: r for r in data["results"]}
        ratios = [_ratio(by_case[n]) if n in by_case else np.nan for n in names]
        xs = np.arange(len(names)) + (k - (len(passes) - 1) / 2) * width
        bars = ax.bar(xs, ratios, width, label=label)
        for x, v in zip(xs, ratios):
            if np.isfinite(v):
                ax.annotate(f"{v:.2f}", (x, v), ha="center", va="bottom", fontsize=7)
        comp = by_case.get(COMPILE_CASE)
        if comp:
            ax2.bar(k, comp["jax_s"], 0.6, color=bars.patches[0].get_facecolor(), label=label)
            ax2.annotate(f"{comp['jax_s']:.2f} s", (k, comp["jax_s"]), ha="center", va="bottom", fontsize=8)
    for i, n in enumerate(names):
        ax.hlines(
            TARGETS[n],
            i - 0.45,
            i + 0.45,
            colors="red",
            linestyles="--",
            linewidth=1.5,
            label="target" if i == 0 else None,
        )
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_xticks(np.arange(len(names)))
    ax.set_xticklabels([n.replace(" (", "\n(") for n in names], fontsize=8)
    ax.set_ylabel("onnxruntime time / jaxonnx time (higher is better)")
    ax.set_title("jaxonnx (jax.jit) vs onnxruntime, CPU")
    ax.legend(fontsize=8)
    ax2.axhline(COMPILE_TARGET_S, color="red", linestyle="--", linewidth=1.5)
    ax2.set_xticks(range(len(passes)))
    ax2.set_xticklabels([label.split(":")[0] for label in passes], fontsize=8)
    ax2.set_ylabel("seconds (lower is better)")
    ax2.set_title(f"{COMPILE_CASE}\n(load+trace+compile+1st run)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


NOTES_MARKER = "<!-- notes: everything below is kept when run.py rewrites this file -->"


def _write_report(passes: dict, machine: dict, path: str) -> None:
    first = next(iter(passes.values()))
    lines = ["# jaxonnx vs onnxruntime vs onnx.reference on CPU", ""]
    lines.append(
        "Generated by `python benchmarks/run.py`" + (" --quick" if first["quick"] else "") + ". Do not edit the"
    )
    lines.append("generated part by hand; notes and the history of what was tried are below it.")
    lines.append("")
    lines.append("Ratio = onnxruntime time / jaxonnx time (higher is better); times are medians of runs that")
    lines.append("alternate between the runtimes in one process. GB/s = bytes read + written per run / jaxonnx time,")
    lines.append("next to numpy's (single-threaded) copy bandwidth measured in the same process; XLA uses both cores,")
    lines.append("so it can exceed it. All outputs are checked equal.")
    lines.append("")
    for label, data in passes.items():
        env = ", ".join(f"`{k}={v}`" for k, v in data["env"].items()) or "none"
        lines.append(f"## {label}")
        lines.append("")
        lines.append(
            f"Environment: {env}. Load average before/after: "
            f"{data['load_before'][0]:.2f} / {data['load_after'][0]:.2f}. Took {data['seconds']:.0f} s."
        )
        lines.append("")
        lines.append(_table(data["results"], data["copy_gbps"]))
        lines.append("")
        extra = []
        for r in data["results"]:
            if r["case"] == COMPILE_CASE:
                extra.append(
                    f"- {COMPILE_CASE}: {r['nodes']} nodes; jaxonnx = load + trace + XLA compile + first run "
                    f"(trace/lower alone {r['jax_trace_s']:.2f} s); onnxruntime = InferenceSession creation + "
                    f"first run; onnx.reference = ReferenceEvaluator creation + first run."
                )
            elif r["bytes"] is None:
                extra.append(
                    f"- {r['case']}: per call, inputs on the device (jaxonnx) or numpy (onnxruntime); "
                    f"min jaxonnx {_ms(r['jax_min_s'])} ms, min onnxruntime {_ms(r['ort_min_s'])} ms."
                )
            if r.get("donated_s") is not None:
                seconds, aliased = r["donated_s"]
                extra.append(
                    f"- Flatten with the input donated (`jax.jit(model, donate_argnums=0)`; XLA compiles it to a "
                    f"bitcast, the output reusing the input's buffer in {aliased:.0%} of the runs): "
                    f"{_ms(seconds)} ms (not the target row: the caller loses its input)."
                )
            if r.get("ref_error"):
                extra.append(f"- {r['case']}: onnx.reference fails on this model: `{r['ref_error']}`.")
            if r["case"].startswith("GatherElements"):
                extra.append(
                    f"- GatherElements: XLA temporary buffers {r['xla_temp_bytes'] / 2**20:.1f} MiB for an output of "
                    f"{r['output_bytes'] / 2**20:.0f} MiB (memory O(output): no one-hot, no index copies)."
                )
        others = ", ".join(f"{r['case'].split(' (')[0]} {r['others_cores']:.2f}" for r in data["results"])
        extra.append(f"- Cores kept busy by other processes during each case (from /proc/stat): {others}.")
        mins = ", ".join(
            f"{r['case'].split(' (')[0]} {_ms(r['jax_min_s'])}/{_ms(r['ort_min_s'])}" for r in data["results"]
        )
        extra.append(f"- Fastest single runs, jaxonnx/onnxruntime ms: {mins}.")
        paired = ", ".join(
            f"{r['case'].split(' (')[0]} {r['paired_ratio']:.2f}" for r in data["results"] if r.get("paired_ratio")
        )
        extra.append(
            f"- Median of per-run ratios (each onnxruntime run over the jaxonnx run of the same round): {paired}."
        )
        lines += extra + [""]
    if len(passes) > 1:
        labels = list(passes)
        a, b = (passes[k]["results"] for k in labels)
        changed = [
            f"{ra['case']} ({_ratio(rb):.2f} -> {_ratio(ra):.2f})"
            for ra, rb in zip(a, b)
            if ra["case"] == rb["case"] and _met(ra) != _met(rb)
        ]
        lines.append("### Which figures depend on the environment setting")
        lines.append("")
        lines.append("Targets met in one pass and not the other: " + ("; ".join(changed) if changed else "none") + ".")
        lines.append("")
    lines.append("## Machine")
    lines.append("")
    lines.append(
        f"- CPU: {machine['cpu']}, {machine['cores']} cores, {machine['memory']} memory; kernel {machine['kernel']}, {machine['libc']}"
    )
    lines.append(f"- Transparent huge pages: `{machine['thp']}`")
    v = first["versions"]
    lines.append(
        f"- Python {v['python']}, jax {v['jax']} (jaxlib {v['jaxlib']}), onnxruntime {v['onnxruntime']} "
        f"(default session options: intra-op threads = all cores, memory arena on), onnx {v['onnx']}, numpy {v['numpy']}"
    )
    lines.append("- `jax_enable_x64` on (the models' indices are int64); models at opset 21, IR version 10")
    lines.append("")
    # The hand-written part (what was tried, with figures) is kept from the existing file.
    notes = NOTES_MARKER + "\n"
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        if NOTES_MARKER in old:
            notes = old[old.index(NOTES_MARKER) :]
    lines.append(notes.rstrip())
    lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


# --------------------------------------------------------------------------- orchestration


def _child(args, env_name: str) -> dict:
    env = dict(os.environ)
    for k in TUNED_ENV:
        env.pop(k, None)
    if env_name == "tuned":
        env.update(TUNED_ENV)
    else:  # glibc's defaults: import jaxonnx would tune malloc (jaxonnx/_tuning.py)
        env["JAXONNX_KEEP_ALLOCATOR"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "figures.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", out] + (["--quick"] if args.quick else [])
        if args.runs:
            cmd += ["--runs", str(args.runs)]
        for c in args.cases or ():
            cmd += ["--case", c]
        if args.wait_quiet:
            cmd += ["--wait-quiet", str(args.wait_quiet)]
        print(
            f"== {env_name}: "
            + (" ".join(f"{k}={v}" for k, v in TUNED_ENV.items()) if env_name == "tuned" else "environment as started")
            + " (child process)",
            flush=True,
        )
        print("  " + " | ".join(HEADER), flush=True)
        subprocess.run(cmd, env=env, check=True)
        with open(out) as f:
            return json.load(f)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small tensors, few runs: a smoke test")
    parser.add_argument("--runs", type=int, default=0, help="timed runs per case (default 9, quick 3)")
    parser.add_argument(
        "--case", dest="cases", action="append", help="only cases whose name contains this (repeatable)"
    )
    parser.add_argument(
        "--env", choices=["both", "tuned", "default"], default="both", help="which environment passes to run"
    )
    parser.add_argument("--no-write", action="store_true", help="print only; do not rewrite results.md / chart.png")
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0,
        metavar="S",
        help="before each case, wait up to S seconds for other processes to use < 0.3 cores",
    )
    parser.add_argument("--child", metavar="JSON", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        figures = measure(args)
        with open(args.child, "w") as f:
            json.dump(figures, f)
        return 0

    passes = {}
    names = {"tuned": "tuned: with GLIBC_TUNABLES", "default": "default: without it"}
    for env_name in ["tuned", "default"] if args.env == "both" else [args.env]:
        passes[names[env_name]] = _child(args, env_name)
    machine = _machine()
    for label, data in passes.items():
        print(
            f"\n### {label}  (env: {data['env'] or 'none'}; load {data['load_before'][0]:.2f} -> {data['load_after'][0]:.2f})\n"
        )
        print(_table(data["results"], data["copy_gbps"]))
    if len(passes) == 2:
        a, b = passes.values()
        print(f"\nratio ort/jaxonnx with / without {', '.join(TUNED_ENV)} (compile: seconds):")
        for ra, rb in zip(a["results"], b["results"]):
            fa, fb = (f"{r['jax_s']:.2f} s" if r["case"] == COMPILE_CASE else f"{_ratio(r):.2f}" for r in (ra, rb))
            flag = "   <- target met only " + ("with it" if _met(ra) else "without it") if _met(ra) != _met(rb) else ""
            print(f"  {ra['case']:40s} {fa:>8s} / {fb:<8s}{flag}")
    if not args.no_write and not args.quick and not args.cases:
        _write_report(passes, machine, os.path.join(HERE, "results.md"))
        _chart(passes, os.path.join(HERE, "chart.png"))
        print(f"\nwrote {os.path.join(HERE, 'results.md')} and {os.path.join(HERE, 'chart.png')}")
    differ = [r["case"] for data in passes.values() for r in data["results"] if not r["equal"]]
    if differ:
        print(f"\nOUTPUTS DIFFER: {', '.join(differ)}")
        return 1
    if not args.no_write and args.quick:
        out = os.path.join(tempfile.gettempdir(), "jaxonnx-bench-quick.png")
        _chart(passes, out)
        print(f"\nquick mode: results.md not rewritten; chart at {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
