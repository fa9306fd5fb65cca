"""Opt-in process tuning for large arrays on Linux CPUs.

Every XLA CPU output is a fresh ``malloc`` block. glibc serves large blocks with ``mmap``
and unmaps them on ``free``, so each call page-faults its output in again (32,768 faults
for a 128 MiB output), which costs 2-5x the copy itself; onnxruntime avoids this with its
own arena. One malloc arena that never unmaps or trims lets freed outputs be reused.
The cost: process-wide, and memory stays at its peak (as with onnxruntime's arena), so
jaxonnx never does this on import; the ``jaxonnx`` command applies it to its own runs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

# From glibc's <malloc.h>.
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
# mallopt takes a C int: a larger threshold would wrap around (2**34 becomes 0).
_MAX_TRIM_THRESHOLD = 2**31 - 1


def tune_cpu_allocator() -> bool:
    """Makes glibc reuse freed large buffers instead of unmapping them (Linux/glibc only).

    Call it at the start of a program, before JAX allocates: large jitted CPU outputs are
    then written into memory that is already mapped. Measured on a 2-core VM (see
    ``benchmarks/results.md``): Compress of a 4096x8192 float32 array went from 0.5x to
    1.8x onnxruntime's speed, Flatten from 0.25x to 1.1x. The environment-variable form,
    ``GLIBC_TUNABLES=glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184``,
    does the same from the start of the process.

    Returns:
        Whether the settings were applied (False where glibc's ``mallopt`` is not available).

    Example:
        >>> applied = jaxonnx.tune_cpu_allocator()   # True on Linux with glibc
    """
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return all(
        mallopt(option, value) == 1
        for option, value in (
            (_M_ARENA_MAX, 1),
            (_M_MMAP_MAX, 0),
            (_M_TRIM_THRESHOLD, _MAX_TRIM_THRESHOLD),
        )
    )
