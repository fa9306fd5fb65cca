"""XLA:CPU's convolutions on every core, wide vectors where they run at full speed, and CPU
computations on the calling thread: what ``import jaxonnx`` sets.

jaxlib 0.10's XLA:CPU hands each convolution to YNNPACK (the default of
``--xla_cpu_experimental_ynn_fusion_type`` there is ``individual_dot,individual_convolution,
reduce``, read off the HLO it compiles), and YNNPACK runs it on one core: on a 2-core
machine a 64-channel 3x3 convolution on 56x56 took 4.3 ms on both cores and 4.6 pinned to
one. Without YNNPACK's convolutions XLA runs them through Eigen on every core: 2.0 ms (a 7x7
stride-2 stem 5.0 -> 3.4 ms, a strided 3x3 one 1.6 -> 1.05, a chain of four 512-channel 3x3
convolutions on 7x7 29 -> 15 ms). onnxruntime's convolutions use every core too. YNNPACK's
dots use every core and stay.

So ``import jaxonnx`` appends that default less convolutions,
``--xla_cpu_experimental_ynn_fusion_type=individual_dot,reduce``, to ``XLA_FLAGS``, unless
- jaxlib is not 0.10 (the version whose default was read; others are left as they are),
- ``XLA_FLAGS`` already sets that flag (the user's choice stands),
- ``JAXONNX_KEEP_XLA_FLAGS`` is set to anything but ``0`` or the empty string, or
- a JAX backend has already started: XLA reads ``XLA_FLAGS`` once, when the first backend
  starts, so import jaxonnx before running JAX code.

The flag is process-wide (other JAX code's convolutions run through Eigen too) and passes to
child processes with the environment. :func:`ynn_convolutions` says which convolution this
process runs; ``ops/_helpers/conv_cpu.py`` picks its CPU formulations by it.

Second, XLA:CPU compiles its fused loops for 256-bit vectors unless told otherwise
(``--xla_cpu_prefer_vector_width``, default 256: on Intel's first AVX-512 cores, Skylake-SP and
Cascade Lake, 512-bit instructions lower the clock). On cores that run them at full speed
(every AVX-512 core of AMD's, Zen 4 on, and Intel's from Ice Lake, which added ``avx512_vbmi2``)
``import jaxonnx`` appends ``--xla_cpu_prefer_vector_width=512``, under the same conditions as
above. Measured on a 2-core AMD Zen 5 (EPYC), one process, compiled both ways and timed
interleaved in warm blocks, 256 -> 512 at batch 1: EfficientNet-B0 7.3 -> 6.0 ms,
MobileNetV3-large 6.2 -> 5.4, a YOLOv8n-like detector 13.0 -> 11.6, ResNet-18 unchanged
(its time is in Eigen's convolutions); at batch 8 3-11% faster. :data:`PREFERS_WIDE_VECTORS`
says whether it did.

Third, ``import jaxonnx`` has JAX run CPU computations on the calling thread
(``jax_cpu_enable_async_dispatch=False``), under the same conditions as above (less the
jaxlib version: the option means the same in every version that has it) and unless the
environment sets ``JAX_CPU_ENABLE_ASYNC_DISPATCH``. With JAX's default, a call hands its
computation to a worker thread and the caller then sleeps until it is done: two thread
wakes per call. On a VM that halts idle vCPUs (this project's 2-core machine does) a wake
costs tens of microseconds, more than a small model's arithmetic. Measured there, warm,
interleaved with onnxruntime in one process, one process per setting, ``jax.jit(model)`` at
batch 1: the tiny ViT fixture 0.181 -> 0.092 ms, GPT-2 0.195 -> 0.069, BERT 0.20-0.34 ->
0.12-0.16, the small CNN fixture 0.200 -> 0.096, a 3-layer MLP at batch 8 0.130 -> 0.058;
a YOLOv8n-like detector at 320x320 (10-30 ms) within noise. What it costs: a call returns
when its result is ready, so Python no longer runs ahead of the CPU; on CPU that overlap
competes for the same cores the computation uses. The option is read when the CPU backend
starts: set it back (``jax.config.update("jax_cpu_enable_async_dispatch", True)``) after
``import jaxonnx`` and before the first computation to keep JAX's default.
:data:`DISPATCHES_INLINE` says whether jaxonnx set it.
"""

from __future__ import annotations

import os

import jaxlib

_FLAG = "--xla_cpu_experimental_ynn_fusion_type"
# jaxlib 0.10's default less LIBRARY_FUSION_TYPE_INDIVIDUAL_CONVOLUTION.
_WITHOUT_CONVOLUTIONS = "individual_dot,reduce"
_VERSION_READ = (0, 10)
_VECTOR_FLAG = "--xla_cpu_prefer_vector_width"
_KEEP = "JAXONNX_KEEP_XLA_FLAGS"
_DISPATCH_OPTION = "jax_cpu_enable_async_dispatch"


def _flag_value(flags: str, flag: str = _FLAG) -> str | None:
    """The value that the XLA_FLAGS string ``flags`` gives ``flag`` (the YNNPACK fusion flag
    unless said; the last one wins, as in XLA), or None where it does not set it."""
    value = None
    for token in flags.split():
        name, _, given = token.partition("=")
        if name == flag:
            value = given
    return value


def _jaxlib_version() -> tuple[int, ...]:
    return tuple(int(part) for part in jaxlib.__version__.split(".")[:2] if part.isdigit())


def _backend_started() -> bool:
    from jax._src import xla_bridge

    return xla_bridge.backends_are_initialized()


def _append_flag(flag: str, value: str) -> bool:
    """Appends ``flag=value`` to ``XLA_FLAGS`` unless the user set ``flag``, opted out, the
    jaxlib is not the one read, or a backend has started (see the module docstring); returns
    whether it did."""
    flags = os.environ.get("XLA_FLAGS", "")
    if os.environ.get(_KEEP, "") not in ("", "0") or _flag_value(flags, flag) is not None:
        return False
    if _jaxlib_version() != _VERSION_READ or _backend_started():
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {flag}={value}".strip()
    return True


def _take_convolutions_out_of_ynnpack() -> bool:
    """Appends the YNNPACK flag to ``XLA_FLAGS`` where the module docstring says so; returns
    whether it did."""
    return _append_flag(_FLAG, _WITHOUT_CONVOLUTIONS)


def wide_vectors_run_fast(cpuinfo: str | None = None) -> bool:
    """Whether this CPU runs 512-bit vectors at full speed: AVX-512 on an AMD core (Zen 4 on)
    or on an Intel one from Ice Lake on (``avx512_vbmi2``), read from ``/proc/cpuinfo`` (or
    the text ``cpuinfo``); False where that cannot be read (not Linux, not x86).

    Example:
        >>> from jaxonnx._xla_cpu import wide_vectors_run_fast
        >>> wide_vectors_run_fast("vendor_id : AuthenticAMD\\nflags : fpu sse2 avx2 avx512f\\n")
        True
        >>> wide_vectors_run_fast("vendor_id : GenuineIntel\\nflags : fpu sse2 avx2 avx512f\\n")  # Skylake-SP
        False
    """
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as file:
                cpuinfo = file.read(1 << 16)
        except OSError:
            return False
    fields = {}
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        fields.setdefault(name.strip(), value.strip())  # the first core's
    flags = set(fields.get("flags", "").split())
    if "avx512f" not in flags:
        return False
    return fields.get("vendor_id") == "AuthenticAMD" or "avx512_vbmi2" in flags


def _prefer_wide_vectors() -> bool:
    """Appends ``--xla_cpu_prefer_vector_width=512`` where the module docstring says so;
    returns whether it did."""
    return wide_vectors_run_fast() and _append_flag(_VECTOR_FLAG, "512")


def ynn_convolutions() -> bool:
    """Whether XLA:CPU runs this process's convolutions through YNNPACK (on one core), as
    ``XLA_FLAGS`` says now; where it does not set the flag, XLA's default (YNNPACK in
    jaxlib 0.10, and assumed so for other versions).

    Example:
        >>> import jaxonnx  # on jaxlib 0.10, before any JAX backend starts
        >>> from jaxonnx._xla_cpu import ynn_convolutions
        >>> ynn_convolutions()
        False
    """
    value = _flag_value(os.environ.get("XLA_FLAGS", ""))
    if value is None:
        return True
    return "individual_convolution" in value.split(",")


# A computation of fewer flops than this runs its products single-threaded through Eigen
# (see `compiler_options`).
SMALL_COMPUTATION_FLOPS = 1e6
# Dots through Eigen: the process's YNNPACK fusions (`_WITHOUT_CONVOLUTIONS`) less its dots,
# as a per-compilation option (`compiler_options`; generation's `decode_compiler_options`).
EIGEN_DOTS = {"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_REDUCE"}
_SMALL_COMPUTATION_OPTIONS = {**EIGEN_DOTS, "xla_cpu_multi_thread_eigen": False}


def compiler_options(lowered) -> dict:
    """The XLA options for compiling ``lowered`` (a ``jax.stages.Lowered``) that its size
    calls for: on CPU, for a computation of under a million flops, its products (dots,
    convolutions) on one thread through Eigen; otherwise, and on other platforms, none.
    :meth:`jaxonnx.Model.compile` and an eager ``model(x)`` use them; under your own
    ``jax.jit``, pass them as its ``compiler_options``.

    Why: such a model's products take a few microseconds each, less than handing them to
    another core costs on a VM that halts idle vCPUs, and YNNPACK's products of a few rows
    ran slower than Eigen's. Measured on this project's 2-core AMD EPYC (jaxlib 0.10, warm,
    interleaved with onnxruntime in one process, batch 1): the tiny GPT-2 fixture 0.107 ->
    0.069 ms (onnxruntime 0.179), BERT 0.086 -> 0.060, ViT 0.079 -> 0.064, the small
    MobileNetV3 fixture 0.28 -> 0.16-0.20, the MLP fixture 0.031 -> 0.015 (onnxruntime
    0.019). Past a million flops it stopped paying: a 64-256-256-10 MLP at batch 8 (1.4
    million) ran 0.046 ms with the defaults against 0.049, and the transformer fixtures at
    batch 8 (2-3 million) 5-20% slower. Only where ``import jaxonnx`` set XLA:CPU's library
    flags (:data:`TOOK_CONVOLUTIONS_OUT`): the YNNPACK option names jaxlib 0.10's fusions.

    Example:
        >>> import jaxonnx
        >>> model = jaxonnx.load("tests/fixtures/models/mlp_dynamo_dynamic.onnx")
        >>> lowered = jax.jit(model).lower(jnp.ones((1, 8)))
        >>> fast = lowered.compile(jaxonnx.compiler_options(lowered))
    """
    if not TOOK_CONVOLUTIONS_OUT or tuple(_platforms(lowered)) != ("cpu",):
        return {}
    cost = lowered.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    flops = (cost or {}).get("flops")
    return dict(_SMALL_COMPUTATION_OPTIONS) if flops is not None and flops < SMALL_COMPUTATION_FLOPS else {}


def _platforms(lowered) -> tuple[str, ...]:
    """The platforms ``lowered`` is for (jax 0.10 keeps them on its private lowering; the
    default backend where that is not there)."""
    import jax

    return tuple(getattr(getattr(lowered, "_lowering", None), "_platforms", None) or (jax.default_backend(),))


def _dispatch_inline() -> bool:
    """Has JAX run CPU computations on the calling thread where the module docstring says so;
    returns whether it did."""
    if os.environ.get(_KEEP, "") not in ("", "0") or _DISPATCH_OPTION.upper() in os.environ:
        return False
    import jax

    if _backend_started() or not jax.config.values.get(_DISPATCH_OPTION, False):
        return False  # too late, a jax without the option, or already inline
    jax.config.update(_DISPATCH_OPTION, False)
    return True


TOOK_CONVOLUTIONS_OUT = _take_convolutions_out_of_ynnpack()
PREFERS_WIDE_VECTORS = _prefer_wide_vectors()
DISPATCHES_INLINE = _dispatch_inline()
