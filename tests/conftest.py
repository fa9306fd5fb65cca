"""Strict settings for the whole test suite: surprises surface here, not in users' programs.

- 8 virtual CPU devices, so sharding tests run on any machine (must precede jax's start),
  and XLA:CPU's backend optimizations off (the suite checks values, not speed).
- programs lowered in a shared MLIR context, a new one every 256 lowerings, where JAX makes
  one per lowering (``_share_mlir_contexts``; measured in benchmarks/suite_time.md, session 4);
- a program compiled again in the same process (the same text, compile options and devices,
  reached through a new function object) gets the executable compiled the first time
  (``_share_compiled_programs``), and an xdist worker that has sent its reports exits without
  JAX's exit handler (``pytest_sessionfinish``);
- Python's garbage collector leaves the objects made during collection alone and runs less
  often (``pytest_collection_finish``);
- 64-bit types on, so exactness of int64/uint64/float64 is tested; tests of the x64-off
  policy switch it off locally with ``jax.enable_x64(False)``.
- numpy-style rank promotion and implicit dtype promotion are errors.
- pytest turns every warning into an error (pyproject's ``filterwarnings``), except
  DeprecationWarnings raised inside onnx's own modules (numpy 2.5 deprecates what onnx's
  test-case modules do at import): jaxonnx's code stays strict, third-party imports do not
  stop the suite.
- ``run_onnxruntime`` compares with the onnxruntime that is installed: what that version
  does not implement (its NOT_IMPLEMENTED error, e.g. a kernel for a type) skips the test,
  naming the version and the missing kernel, instead of failing or being pinned.
"""

import atexit
import gc
import os
import sys

# The suite checks values, not speed, and most of its time is XLA:CPU compiling. So XLA:CPU
# compiles without LLVM's optimizations (`--xla_backend_optimization_level=0`) and emits
# fusions with its classic LLVM IR emitters instead of the MLIR fusion emitters
# (`--xla_cpu_use_fusion_emitters=false`); both compile faster (measured:
# benchmarks/suite_settings_results.md).
# XLA uses no fast math at any level; a transcendental's last bit may differ (gelu's erf at
# -1 by one float32 ulp), within every test's tolerance. benchmarks/ and users keep XLA's
# defaults. One program is known to compile wrongly with both flags and right with either
# alone: a stem convolution's input tangent written as a dot (a batch normalization's
# gradient off by 0.5; see conv_cpu._stem_sum_jvp, which keeps that tangent a sum). Where a
# test fails and the same computation is right with XLA's defaults, suspect these flags first.
# Both speed flags were measured with jaxlib 0.10; XLA aborts at backend start on a flag it
# does not know, and on the device machine (jaxlib 0.11, a GPU) every pytest worker died at
# its first computation with them set, so other jaxlib versions get the device count only.
from importlib.metadata import version as _version  # noqa: E402

_SPEED_FLAGS = " --xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
os.environ.setdefault(
    "XLA_FLAGS",
    "--xla_force_host_platform_device_count=8" + (_SPEED_FLAGS if _version("jaxlib").startswith("0.10.") else ""),
)

import jax  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402


def _share_mlir_contexts(lowerings_per_context: int = 256) -> None:
    """Lowers up to ``lowerings_per_context`` programs in one MLIR context, then starts another.

    JAX makes a fresh MLIR context for every lowering (``mlir.make_ir_context``), which loads
    and registers its dialects, and each compiled program JAX caches keeps its own context
    alive. The suite compiles tens of thousands of small programs (a test costs the programs
    it compiles), so in jaxlib 0.10 sharing a context saves much of a test file's time and
    most of its memory (measured: benchmarks/suite_time.md, session 4). A context only gains
    the types and attributes of the programs lowered in it; starting a new one every few
    hundred lowerings bounds that growth, and a program lowered in a shared context is the
    program a fresh one gives
    (test_xla_cpu.py::test_the_suites_shared_mlir_context_lowers_as_a_fresh_one). The
    lowering is JAX's private API, so only the jaxlib measured gets this, and
    ``JAXONNX_TEST_FRESH_MLIR_CONTEXTS=1`` runs the suite with JAX's own contexts."""
    from jax._src.interpreters import mlir

    fresh_context = mlir.make_ir_context
    shared = {"context": None, "lowerings": 0}

    def shared_context():
        if shared["context"] is None or shared["lowerings"] >= lowerings_per_context:
            shared["context"], shared["lowerings"] = fresh_context(), 0
        shared["lowerings"] += 1
        return shared["context"]

    shared_context.fresh_context = fresh_context  # type: ignore[attr-defined]  # for the test above
    mlir.make_ir_context = shared_context


def _share_compiled_programs(programs: int = 1024) -> None:
    """Compiles a program once per process: a program lowered again, to the same text with
    the same compile options for the same devices, gets the executable compiled the first time.

    JAX caches an executable by the function and the arguments' types, so the same program
    reached through a new function object is compiled again: a model file loaded by several
    tests (each load a new ``Model``), a ``jax.jit`` of a fresh lambda, the same op under
    another test's wrapper (measured in benchmarks/suite_time.md, session 6). The key is the
    whole program as MLIR text without source locations (its constants, types, attributes and
    the functions it calls), its module name left out, the serialized ``CompileOptions`` (replicas, partitions,
    the device assignment, XLA's debug options) and the devices; a program with host
    callbacks is compiled anew, as their addresses belong to one lowering. The most recent
    ``programs`` executables are kept. Only the jaxlib measured gets this, and
    ``JAXONNX_TEST_FRESH_COMPILES=1`` compiles every program as JAX does
    (test_suite_settings.py checks that the executable shared is the one compiled)."""
    import collections
    import hashlib
    import re

    from jax._src import compiler

    compile_and_load = compiler.backend_compile_and_load
    executables: collections.OrderedDict = collections.OrderedDict()

    def shared_compile_and_load(backend, module, executable_devices, options, host_callbacks):
        if host_callbacks:
            return compile_and_load(backend, module, executable_devices, options, host_callbacks)
        text = re.sub(r"^module @\S+", "module", module.operation.get_asm(enable_debug_info=False), count=1)
        key = (
            id(backend),
            hashlib.sha256(text.encode()).digest(),
            options.SerializeAsString(),
            tuple(device.id for device in executable_devices),
        )
        if key in executables:
            executables.move_to_end(key)
            return executables[key]
        executable = compile_and_load(backend, module, executable_devices, options, host_callbacks)
        executables[key] = executable
        if len(executables) > programs:
            executables.popitem(last=False)
        return executable

    shared_compile_and_load.compile_and_load = compile_and_load  # type: ignore[attr-defined]  # for the test
    compiler.backend_compile_and_load = shared_compile_and_load


if _version("jaxlib").startswith("0.10.") and not os.environ.get("JAXONNX_TEST_FRESH_MLIR_CONTEXTS"):
    _share_mlir_contexts()
if _version("jaxlib").startswith("0.10.") and not os.environ.get("JAXONNX_TEST_FRESH_COMPILES"):
    _share_compiled_programs()

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")
jax.config.update("jax_numpy_dtype_promotion", "strict")

settings.register_profile(
    "ci", max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci")


def pytest_configure(config):
    """onnx's node cases are built once and shared through pytest's cache folder (see
    tests/_node_cases.py); xdist's workers inherit the variable or set the same folder.

    Under xdist (``-n 2``), tests are handed out by work stealing instead of xdist's default
    fixed shares (``--dist load``): test durations range over four orders of magnitude
    (benchmarks/suite_time.md), and with fixed shares one worker could be left with a queue
    of slow tests while the other idles. The option cannot go into pyproject's addopts,
    which ``-p no:xdist`` runs would refuse."""
    cache = getattr(config, "cache", None)  # None under `-p no:cacheprovider`: the temporary folder
    if cache is not None:
        os.environ.setdefault("JAXONNX_TEST_CACHE_DIR", str(cache.mkdir("jaxonnx")))
    if getattr(config.option, "dist", "no") == "load":  # xdist's default for `-n N`
        config.option.dist = "worksteal"


#: Python's collector thresholds during the tests (CPython's default is (700, 10, 10)).
GC_THRESHOLDS = (20_000, 50, 100)


def pytest_collection_finish(session):
    """Python's cyclic garbage collector leaves the collected suite alone, and runs less often.

    After collection a process holds a few hundred thousand long-lived objects (onnx's
    schemas, the registry, every test's parameters), and each test allocates heavily (JAX's
    tracers and jaxprs), so CPython's default thresholds run thousands of collections that
    traverse them again and again. The collected objects are frozen (``gc.freeze``) and the
    thresholds raised to :data:`GC_THRESHOLDS` (measured in benchmarks/suite_time.md,
    session 7). ``JAXONNX_TEST_DEFAULT_GC=1`` keeps Python's own."""
    if os.environ.get("JAXONNX_TEST_DEFAULT_GC"):
        return
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def pytest_sessionfinish(session, exitstatus):
    """An xdist worker that ran its tests leaves at once when its Python exits.

    By then the worker has sent its reports and closed its channel; what is left is JAX's exit
    handler, which frees every cached executable and backend one by one (measured after a
    full run's 10,000 compilations: benchmarks/suite_time.md, session 6), then the
    interpreter's own teardown, while the main process waits for it. A worker stopped by an
    internal error exits as Python does."""
    if os.environ.get("PYTEST_XDIST_WORKER") and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        atexit.register(_exit_now)  # atexit runs the last registered first: before JAX's


def _exit_now() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # a worker's exit status is 0 either way: its results travel in its reports


def _run_onnxruntime(model, feed: dict) -> list:
    """The outputs of ``model`` (a ModelProto or its bytes) in onnxruntime's CPU provider."""
    import onnxruntime
    from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as OnnxruntimeNotImplemented

    data = model if isinstance(model, bytes) else model.SerializeToString()
    try:
        session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
        return session.run(None, feed)
    except OnnxruntimeNotImplemented as error:
        missing = str(error).split("NOT_IMPLEMENTED : ", 1)[-1].splitlines()[0]
        pytest.skip(f"onnxruntime {onnxruntime.__version__} does not implement this: {missing}")


@pytest.fixture
def run_onnxruntime():
    """``run_onnxruntime(model, feed) -> outputs``; skips the test where the installed
    onnxruntime reports NOT_IMPLEMENTED (a missing kernel), so no version is hard-coded."""
    return _run_onnxruntime


@pytest.fixture
def x64_off():
    """Runs a test with JAX's default 32-bit configuration."""
    with jax.enable_x64(False):
        yield
