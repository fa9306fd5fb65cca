"""XLA:CPU's convolutions on every core, wide vectors where they run at full speed, and CPU
computations on the calling thread: what ``import jaxonnx`` sets.

- ``--xla_cpu_experimental_ynn_fusion_type=individual_dot,reduce`` is appended to
  ``XLA_FLAGS``: jaxlib 0.10's default less ``individual_convolution``, so that XLA:CPU runs
  convolutions through Eigen on every core instead of YNNPACK on one
  (:data:`TOOK_CONVOLUTIONS_OUT`; :func:`ynn_convolutions` says which one this process runs,
  and ``ops/_helpers/conv_cpu.py`` picks its CPU formulations by it);
- ``--xla_cpu_prefer_vector_width=512`` on cores that run 512-bit vectors at full speed
  (:func:`wide_vectors_run_fast`, :data:`PREFERS_WIDE_VECTORS`);
- ``jax_cpu_enable_async_dispatch=False``, unless the environment sets
  ``JAX_CPU_ENABLE_ASYNC_DISPATCH`` (:data:`DISPATCHES_INLINE`).

A flag is appended only where jaxlib is 0.10 (the version whose default was read) and
``XLA_FLAGS`` does not set it already (the user's choice stands); all three only where
``JAXONNX_KEEP_XLA_FLAGS`` is unset, ``0`` or empty, and no JAX backend has started: XLA reads
``XLA_FLAGS`` once, when the first backend starts, so import jaxonnx before running JAX code.
All three are process-wide, and the flags pass to child processes with the environment.

Why each, in full: the docs page ``docs/design/cpu-formulations.md``; the measurements:
``benchmarks/cpu_formulations_results.md`` (sections 1-4).
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
    fields: dict[str, str] = {}
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
    ran slower than Eigen's; past a million flops it stopped paying (measured on the tiny
    transformer, MobileNetV3 and MLP fixtures: ``benchmarks/cpu_formulations_results.md``,
    section 4). Only where ``import jaxonnx`` set XLA:CPU's library
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
