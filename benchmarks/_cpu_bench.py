"""What ``conv_models.py`` and ``models.py`` share: the models, warm interleaved timing, the
output check, the machine header, the two core settings, and the CPU profiles (not a test).

Core settings. Each script times its models table twice, each setting in a fresh process
of its own: all cores, and one core (``os.sched_setaffinity(0, {0})`` before jax or
onnxruntime is imported, as ``taskset -c 0`` would; both runtimes keep their defaults). The
parent process imports neither: it exports the torch models, starts the children
(``--child models --cores all|0 --json PATH``, one pair per model so that both settings of a
model run close together in time) and merges their rows.

Profiles. ``profile_child`` runs one model under XLA's CPU profiler (``XLA_FLAGS`` gets
``--xla_cpu_enable_xprof_traceme=true`` in the child's environment, read when the backend
starts) and onnxruntime with ``enable_profiling``, and prints per-call time per thunk and per
thread beside onnxruntime's per-op and per-node time.
"""

from __future__ import annotations

import bisect
import glob
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "tests", "fixtures", "models")
CACHE = os.path.join(tempfile.gettempdir(), "jaxonnx_conv_models")
# Exported from torch at run time (random weights, eval mode, opset 17, dynamic batch).
TORCH_MODELS = (
    "small_cnn",
    "mlp_256",
    "mobilenet_v3_small_224",
    "mobilenet_v3_large",
    "resnet18",
    "efficientnet_b0",
    "ocr_detector",
    "yolov8n",
)
# The input each torch model is exported with (its batch is the one it is timed at where a
# script gives no other).
_INPUT_SHAPES = {
    "small_cnn": (2, 3, 32, 32),
    "mlp_256": (8, 64),
    "ocr_detector": (1, 3, 320, 320),
    "yolov8n": (1, 3, 320, 320),
}
PROFILE_FLAG = "--xla_cpu_enable_xprof_traceme=true"


# Models ---------------------------------------------------------------------------------


def _fixture(name: str) -> str | None:
    for exporter in ("dynamo", "torchscript"):
        path = os.path.join(FIXTURES, f"{name}_{exporter}_dynamic.onnx")
        if os.path.exists(path):
            return path
    return None


def exporter(name: str) -> str:
    """Which exporter made the model: the fixture's, or torch's TorchScript one."""
    path = _fixture(name) if name not in TORCH_MODELS else None
    return "torchscript" if path is None else os.path.basename(path).split("_")[-2]


def model_inputs(name: str) -> tuple[str | None, list[np.ndarray] | None]:
    """The ONNX file and sample inputs of a model: a committed fixture, or a torch model that
    ``export`` put in the cache; (None, None) where neither is there."""
    if name not in TORCH_MODELS:
        path = _fixture(name)
        if path is None:
            return None, None
        data = np.load(path.replace(".onnx", ".npz"))
        return path, [data[f"inputs.{i}"] for i in range(sum(k.startswith("inputs.") for k in data))]
    path = os.path.join(CACHE, f"{name}.onnx")
    if not os.path.exists(path):
        return None, None
    return path, _example_inputs(name)


def export(name: str) -> bool:
    """Exports a torch model into the cache once (nothing is downloaded); whether the model
    is there. Fixtures are always there; torch models need torch (and torchvision for
    torchvision's models), which CI does not install."""
    if name not in TORCH_MODELS:
        return _fixture(name) is not None
    path = os.path.join(CACHE, f"{name}.onnx")
    try:
        import torch
    except ImportError:
        return False
    if os.path.exists(path):
        return True
    module = _torch_module(name, torch)
    if module is None:
        return False
    os.makedirs(CACHE, exist_ok=True)
    torch.manual_seed(0)
    module = module()
    module.eval()
    (example,) = _example_inputs(name)
    input_name = "x" if name == "mlp_256" else "image"
    torch.onnx.export(
        module,
        (torch.from_numpy(example),),
        path,
        input_names=[input_name],
        dynamo=False,
        dynamic_axes={input_name: {0: "batch"}},
        opset_version=17,
    )
    return True


def _example_inputs(name: str) -> list[np.ndarray]:
    """A torch model's sample input, the same in every process (seeded)."""
    shape = _INPUT_SHAPES.get(name, (1, 3, 224, 224))
    return [np.random.default_rng(0).standard_normal(shape).astype(np.float32)]


def _torch_module(name: str, torch):
    """A function that builds the module, or None where torchvision is needed and missing."""
    nn = torch.nn
    if name == "small_cnn":
        # Two 3x3 convolutions (3 -> 8 -> 16 channels), each with ReLU and a 2x2 max pool,
        # then a Linear: arithmetic of microseconds, where the per-call costs show.
        return lambda: nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(1),
            nn.Linear(16 * 8 * 8, 10),
        )
    if name == "mlp_256":
        return lambda: nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    if name == "yolov8n":
        sys.path.insert(0, HERE)
        from yolo_like import yolov8n_like

        return lambda: yolov8n_like(torch)
    try:
        import torchvision
    except ImportError:
        return None
    if name == "ocr_detector":
        return lambda: _ocr_detector(torch, torchvision)
    if name == "mobilenet_v3_small_224":  # torchvision's, at 224x224 (the fixture is smaller)
        return lambda: torchvision.models.mobilenet_v3_small(weights=None)
    return lambda: getattr(torchvision.models, name)(weights=None)


def _ocr_detector(torch, torchvision):
    """A PaddleOCR-DB-like detector: MobileNetV3-large features at strides 4..32, a
    top-down FPN of 1x1 and 3x3 convolutions, nearest upsampling, and a probability map."""
    nn = torch.nn

    class Detector(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = torchvision.models.mobilenet_v3_large(weights=None).features
            self.taps = (3, 6, 12, 16)  # strides 4, 8, 16, 32
            widths = (24, 40, 112, 960)
            self.lateral = nn.ModuleList(nn.Conv2d(c, 96, 1) for c in widths)
            self.smooth = nn.ModuleList(nn.Conv2d(96, 24, 3, padding=1) for _ in widths)
            self.head = nn.Sequential(
                nn.Conv2d(96, 24, 3, padding=1), nn.BatchNorm2d(24), nn.ReLU(), nn.Conv2d(24, 1, 1), nn.Sigmoid()
            )

        def forward(self, x):
            maps = []
            for i, layer in enumerate(self.features):
                x = layer(x)
                if i in self.taps:
                    maps.append(x)
            lat = [conv(m) for conv, m in zip(self.lateral, maps)]
            for i in range(len(lat) - 1, 0, -1):
                lat[i - 1] = lat[i - 1] + nn.functional.interpolate(lat[i], scale_factor=2.0, mode="nearest")
            outs = [
                nn.functional.interpolate(s(m), scale_factor=2.0**i, mode="nearest")
                for i, (s, m) in enumerate(zip(self.smooth, lat))
            ]
            return self.head(torch.cat(outs, 1))

    return Detector()


def tile(inputs, batch):
    """The inputs repeated along the batch axis to ``batch`` rows."""
    return [np.concatenate([x] * -(-batch // x.shape[0]), axis=0)[:batch] for x in inputs]


def for_jax(arrays):
    """The arrays on the JAX device, int64 as int32 (JAX's default 32-bit mode)."""
    import jax

    return [jax.device_put(x.astype(np.int32) if x.dtype == np.int64 else x) for x in arrays]


def check_close(expected, got) -> None:
    """Asserts that jaxonnx's outputs match onnxruntime's, relative to each output's scale."""
    for e, g in zip(expected, got):
        np.testing.assert_allclose(np.asarray(g), e, rtol=2e-3, atol=2e-4 * max(1.0, float(np.abs(e).max())))


# Timing ---------------------------------------------------------------------------------


def interleaved(fns: dict, runs: int, blocks: int, warm_s: float = 0.2) -> dict:
    """Median seconds per call of each function, alternating in blocks of ``runs`` calls.

    Each block starts with untimed calls for ``warm_s`` seconds (at least one), so that every
    runtime is timed warm, as a server calling it back to back sees it. XLA's worker threads
    sleep when idle, and the first calls after that run slow: on the 2-core VM the YOLOv8n-like
    detector took 14-17 ms for its first three calls after 0.2 s without work, against 9.5 ms
    warm (onnxruntime, whose threads spin, 7.2 against 6.3 for its first). With one untimed
    call per block, whatever ran right after onnxruntime's block ran up to 1.5x slower than
    the same executable later in the rotation.
    """
    times = {name: [] for name in fns}
    for _ in range(blocks):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            while time.perf_counter() - start < warm_s:
                fn()
            for _ in range(runs):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    return {name: float(np.median(t)) for name, t in times.items()}


# Machine and versions ---------------------------------------------------------------------


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as file:
            for line in file:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions() -> str:
    """jax, jaxlib, onnxruntime and torch versions, read without importing them."""
    found = []
    for package in ("jax", "jaxlib", "onnxruntime", "torch"):
        try:
            found.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{package} not installed")
    return ", ".join(found)


def machine_line(load_start: float, load_end: float | None = None) -> str:
    end = "" if load_end is None else f", {load_end:.2f} at the end"
    return (
        f"Machine: {cpu_model()}, {os.cpu_count()} cores (this process may use {len(os.sched_getaffinity(0))}); "
        f"{versions()}; Python {platform.python_version()}. Load average (1 min) {load_start:.2f} at the start{end}."
    )


# Core settings ----------------------------------------------------------------------------

SETTINGS = ("all", "0")  # every core; core 0 alone


def pin(cores: str) -> None:
    """Restricts this process to ``cores`` ("all" leaves it; "0" or "0,1" a set). Call it in
    a fresh process before jax or onnxruntime is imported: their thread pools are sized and
    their threads inherit the affinity when they start."""
    if cores != "all":
        os.sched_setaffinity(0, {int(c) for c in cores.split(",")})


def run_child(script: str, child: str, cores: str, args: list[str], env: dict | None = None) -> object:
    """Runs ``script --child child --cores cores *args`` in a fresh process and returns what
    it wrote with ``write_json`` (None where it failed; its stderr passes through)."""
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "rows.json")
        command = [sys.executable, script, "--child", child, "--cores", cores, "--json", out, *args]
        done = subprocess.run(command, env=env)
        if done.returncode != 0 or not os.path.exists(out):
            print(f"{' '.join(command)} failed with {done.returncode}", file=sys.stderr)
            return None
        with open(out) as file:
            return json.load(file)


def write_rows(path: str, rows: list[dict]) -> None:
    """What a ``--child models`` process hands back: its rows and the cores it ran on."""
    write_json(path, {"affinity": sorted(os.sched_getaffinity(0)), "rows": rows})


def write_json(path: str, value) -> None:
    with open(path, "w") as file:
        json.dump(value, file)


def side_by_side(script: str, names, args: list[str]) -> list[dict]:
    """Each model's rows on all cores with the one-core setting's ``jaxonnx_ms``, ``ort_ms``,
    ``ratio``, ``eager_ms`` and ``eager_ratio`` (where the script measures them) added as
    ``pinned_...``; one process per model and setting."""
    rows = []
    for name in names:
        settings = {cores: run_child(script, "models", cores, ["--only", name, *args]) for cores in SETTINGS}
        if not settings["all"]:
            continue
        pinned = settings["0"] or {"affinity": None, "rows": []}
        by_batch = {(r["model"], r["batch"]): r for r in pinned["rows"]}
        for row in settings["all"]["rows"]:
            one = by_batch.get((row["model"], row["batch"]), {})
            for key in ("jaxonnx_ms", "ort_ms", "ratio", "eager_ms", "eager_ratio"):
                row[f"pinned_{key}"] = one.get(key, float("nan"))
            row["affinity"], row["pinned_affinity"] = settings["all"]["affinity"], pinned["affinity"]
            rows.append(row)
    return rows


def settings_line(rows: list[dict]) -> str:
    """Which cores the two settings' processes reported they could run on."""
    seen = lambda key: sorted({tuple(r[key]) for r in rows if r.get(key)})
    return f"Cores the processes ran on: all cores {seen('affinity')}, one core {seen('pinned_affinity')}."


# Profiles ---------------------------------------------------------------------------------


def profile_env() -> dict:
    """The environment for a profiling child: XLA_FLAGS with XLA:CPU's TraceMe per thunk."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {PROFILE_FLAG}".strip()
    return env


def _thread(line_name: str) -> str:
    if line_name == "python":
        return "caller (python)"
    if line_name.startswith("tf_XLAEigen"):
        return "XLA Eigen workers"
    return line_name.split("/")[0]


def _per_call(windows: list[tuple[float, float]], events) -> dict:
    """Sums of ``(start, duration, key)`` events per call: key -> one sum per window, an
    event in the window it starts in (windows are (start, end), sorted; others are left out)."""
    starts = [w[0] for w in windows]
    sums = {}
    for start, duration, key in events:
        i = bisect.bisect_right(starts, start) - 1
        if i >= 0 and start < windows[i][1]:
            sums.setdefault(key, np.zeros(len(windows)))[i] += duration
    return sums


def _outermost(events):
    """The ``(start, duration, name)`` events less those inside one of the same name (a jit
    call's span wraps another), and the union of all of them as ``(start, duration)``
    intervals: the time the thread was busy."""
    kept, ends, union = [], {}, []
    for start, duration, name in sorted(events):
        if start >= ends.get(name, -1.0):
            ends[name] = start + duration
            kept.append((start, duration, name))
        if union and start < union[-1][1]:
            union[-1][1] = max(union[-1][1], start + duration)
        else:
            union.append([start, start + duration])
    return kept, [(begin, end - begin) for begin, end in union]


def xla_profile(fn, calls: int, warm: int) -> tuple[dict, dict, dict, np.ndarray]:
    """Runs ``fn`` ``warm + calls`` times under ``jax.profiler.trace``, each call inside a
    ``call`` span, and reads the last ``calls`` (the first ones after the profiler starts
    run slow). Per call, as arrays of one value per call: ns per (event name, thread group),
    busy ns and events per thread group, and the calls' durations in ns. Python frames (names
    starting with ``$``) and XLA's zero-length ``end: <thunk>`` markers are left out."""
    import jax

    with tempfile.TemporaryDirectory() as folder:
        with jax.profiler.trace(folder):
            for _ in range(warm + calls):
                with jax.profiler.TraceAnnotation("call"):
                    fn()
        (path,) = glob.glob(os.path.join(folder, "**", "*.xplane.pb"), recursive=True)
        lines = [
            (
                line.name,
                [(e.start_ns, e.duration_ns, e.name) for e in line.events if not e.name.startswith(("$", "end: "))],
            )
            for plane in jax.profiler.ProfileData.from_file(path).planes
            for line in plane.lines
        ]
    spans = sorted((s, d) for name, events in lines if name == "python" for s, d, e in events if e == "call")[-calls:]
    # A call owns what starts before the next call does (work handed to other threads too).
    windows = [(s, nxt) for (s, _), (nxt, _) in zip(spans, spans[1:] + [(float("inf"), 0)])]
    per_name, busy, count, threads = {}, {}, {}, {}
    for name, events in lines:
        group = _thread(name)
        kept, union = _outermost(events)
        for key, sums in _per_call(windows, [(s, d, (e, group)) for s, d, e in kept]).items():
            per_name[key] = per_name.get(key, 0) + sums
        for key, sums in _per_call(windows, [(s, d, group) for s, d in union]).items():
            busy[key] = busy.get(key, 0) + sums
            threads[key] = threads.get(key, 0) + 1
        for key, sums in _per_call(windows, [(s, 1, group) for s, _, _ in kept]).items():
            count[key] = count.get(key, 0) + sums
    per_thread = {g: {"threads": threads[g], "busy_ns": busy[g], "events": count[g]} for g in busy}
    return per_name, per_thread, np.array([d for _, d in spans], dtype=float)


def ort_profile(path: str, feed: dict, calls: int, warm: int) -> tuple[dict, dict, np.ndarray, float]:
    """Runs a default onnxruntime session with ``enable_profiling`` ``warm + calls`` times and
    reads the last ``calls`` runs of its profile: per call, as arrays of one value per call,
    µs per op type and per (node, op) (``*_kernel_time`` events) and the ``model_run`` µs;
    and the mean wall seconds of a profiled call."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as folder:
        options.profile_file_prefix = os.path.join(folder, "ort")
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        for _ in range(warm):
            session.run(None, feed)
        start = time.perf_counter()
        for _ in range(calls):
            session.run(None, feed)
        wall = (time.perf_counter() - start) / calls
        with open(session.end_profiling()) as file:
            events = json.load(file)
    runs = sorted((e["ts"], e["dur"]) for e in events if e.get("cat") == "Session" and e.get("name") == "model_run")[
        -calls:
    ]
    windows = [(ts, ts + dur) for ts, dur in runs]
    kernels = [
        (e["ts"], e["dur"], (e["name"][: -len("_kernel_time")], e.get("args", {}).get("op_name", "?")))
        for e in events
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")
    ]
    per_node = _per_call(windows, kernels)
    per_op = {}
    for (_node, op), sums in per_node.items():
        per_op[op] = per_op.get(op, 0) + sums
    return per_op, per_node, np.array([d for _, d in runs], dtype=float), wall


# Spans of XLA's and PjRt's runtime around the thunks (they nest the thunks' time).
_RUNTIME_SPANS = (
    "PjitFunction",
    "PjRt",
    "ThunkExecutor",
    "Execute",
    "Allocate",
    "Handle input",
    "ParseArguments",
    "PythonRefManager",
    "ThreadpoolListener",
)


def _table(header: list[str], rows) -> None:
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def profile_child(name: str, batch: int | None, cores: str, calls: int) -> None:
    """Prints where one call of ``name`` spends its time in jaxonnx and in onnxruntime, in
    this process's core setting (the caller started it with ``profile_env``). Per-call values
    are medians over the profiled calls (a busy machine's preemptions skew means); the last
    column gives the mean."""
    import jax
    import onnxruntime as ort

    import jaxonnx

    path, inputs = model_inputs(name)
    arrays = tile(inputs, batch or inputs[0].shape[0])
    on_device = for_jax(arrays)
    compiled = jax.jit(jaxonnx.load(path)).lower(*on_device).compile()
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = dict(zip([i.name for i in session.get_inputs()], arrays))
    check_close(session.run(None, feed), compiled(*on_device))
    run_jax = lambda: jax.block_until_ready(compiled(*on_device))
    plain = interleaved({"jax": run_jax, "ort": lambda: session.run(None, feed)}, max(3, calls // 4), 3)
    per_name, per_thread, call_ns = xla_profile(run_jax, calls, warm=max(5, calls // 5))
    per_op, per_node, model_run, ort_wall = ort_profile(path, feed, calls, warm=max(5, calls // 5))

    med = lambda values, scale=1.0: f"{float(np.median(values)) / scale:.1f}"
    mean = lambda values, scale=1.0: f"{float(np.mean(values)) / scale:.1f}"
    where = "all cores" if cores == "all" else f"pinned to core {cores}"
    print(
        f"\n## {name}, batch {arrays[0].shape[0]}, {where} (affinity {sorted(os.sched_getaffinity(0))}), {calls} calls each\n"
    )
    print(
        f"Unprofiled, warm, interleaved: jaxonnx {1e3 * plain['jax']:.3f} ms, onnxruntime {1e3 * plain['ort']:.3f} ms "
        f"(ratio {plain['ort'] / plain['jax']:.2f}). Profiled, median per call: jaxonnx {np.median(call_ns) / 1e6:.3f} ms "
        f"under jax.profiler.trace; onnxruntime {np.median(model_run) / 1e3:.3f} ms (model_run; {1e3 * ort_wall:.3f} ms "
        "mean wall) with enable_profiling. onnxruntime's profiling itself slows onnxruntime down (it times and "
        "records every node): compare its split, not its total. Below, µs per call: median over the calls "
        "(mean in the last column).\n"
    )
    print("### jaxonnx: XLA:CPU spans by thread (the caller runs the thunks; Eigen's workers run their shards)\n")
    groups = sorted(per_thread, key=lambda g: -np.median(per_thread[g]["busy_ns"]))
    _table(
        ["thread", "threads", "busy µs", "events", "busy µs (mean)"],
        (
            [
                g,
                str(per_thread[g]["threads"]),
                med(per_thread[g]["busy_ns"], 1e3),
                med(per_thread[g]["events"]),
                mean(per_thread[g]["busy_ns"], 1e3),
            ]
            for g in groups
        ),
    )
    totals = {}
    for (event, _group), sums in per_name.items():
        totals[event] = totals.get(event, 0) + sums
    print(
        "\nTop 15 spans: thunks, and the runtime's spans around them (`call` is the whole call; nested spans count in both):\n"
    )
    top = sorted(totals, key=lambda e: -np.median(totals[e]))[:15]
    _table(
        ["span"] + [f"{g} µs" for g in groups] + ["all threads µs (mean)"],
        (
            [f"`{event}`"]
            + [med(per_name.get((event, g), np.zeros(1)), 1e3) for g in groups]
            + [mean(totals[event], 1e3)]
            for event in top
        ),
    )
    kinds = {}
    for (event, _group), sums in per_name.items():
        if event != "call" and not any(marker in event for marker in _RUNTIME_SPANS):
            kind = re.sub(r"\.\d+$", "", event)
            kinds[kind] = kinds.get(kind, 0) + sums
    print("\nThunks by kind (the name less its `.N`; the runtime's own spans left out), all threads:\n")
    _table(
        ["thunk kind", "µs", "µs (mean)"],
        (
            [f"`{kind}`", med(kinds[kind], 1e3), mean(kinds[kind], 1e3)]
            for kind in sorted(kinds, key=lambda k: -np.median(kinds[k]))[:15]
        ),
    )
    print("\n### onnxruntime: kernel time per op type and per node\n")
    kernels = sum(per_op.values())
    print(f"Kernels {med(kernels)} µs of model_run {med(model_run)} µs (medians).\n")
    _table(
        ["op", "µs", "µs (mean)"],
        ([op, med(per_op[op]), mean(per_op[op])] for op in sorted(per_op, key=lambda o: -np.median(per_op[o]))[:15]),
    )
    print()
    _table(
        ["node (op)", "µs", "µs (mean)"],
        (
            [f"{node} ({op})", med(per_node[(node, op)]), mean(per_node[(node, op)])]
            for node, op in sorted(per_node, key=lambda k: -np.median(per_node[k]))[:15]
        ),
    )
    sys.stdout.flush()
