"""XLA:CPU's convolutions on every core: on import, jaxonnx takes them out of YNNPACK.

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
"""

from __future__ import annotations

import os

import jaxlib

_FLAG = "--xla_cpu_experimental_ynn_fusion_type"
# jaxlib 0.10's default less LIBRARY_FUSION_TYPE_INDIVIDUAL_CONVOLUTION.
_WITHOUT_CONVOLUTIONS = "individual_dot,reduce"
_VERSION_READ = (0, 10)
_KEEP = "JAXONNX_KEEP_XLA_FLAGS"


def _flag_value(flags: str) -> str | None:
    """The value that the XLA_FLAGS string ``flags`` gives the YNNPACK fusion flag (the last
    one wins, as in XLA), or None where it does not set it."""
    value = None
    for token in flags.split():
        name, _, given = token.partition("=")
        if name == _FLAG:
            value = given
    return value


def _jaxlib_version() -> tuple[int, ...]:
    return tuple(int(part) for part in jaxlib.__version__.split(".")[:2] if part.isdigit())


def _backend_started() -> bool:
    from jax._src import xla_bridge

    return xla_bridge.backends_are_initialized()


def _take_convolutions_out_of_ynnpack() -> bool:
    """Appends the flag to ``XLA_FLAGS`` where the module docstring says so; returns whether
    it did."""
    flags = os.environ.get("XLA_FLAGS", "")
    if os.environ.get(_KEEP, "") not in ("", "0") or _flag_value(flags) is not None:
        return False
    if _jaxlib_version() != _VERSION_READ or _backend_started():
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {_FLAG}={_WITHOUT_CONVOLUTIONS}".strip()
    return True


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


TOOK_CONVOLUTIONS_OUT = _take_convolutions_out_of_ynnpack()
