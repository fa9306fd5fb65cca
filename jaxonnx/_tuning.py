"""glibc's allocator tuned for XLA:CPU's large buffers: ``import jaxonnx`` applies it.

Every XLA CPU output, and each call's temporary buffer (all of a computation's intermediate
values), is a fresh ``malloc`` block. glibc serves blocks above its mmap threshold (which
adapts, but never past 32 MiB) with ``mmap`` and unmaps them on ``free``, so each call
page-faults them in again, which costs more than the copy itself. onnxruntime avoids this
with its own arena. A convolutional network at batch 8 has tens of MiB of intermediates. One
malloc arena that never unmaps or trims lets the freed buffers be reused: a tenth of the page
faults and much less system time per call (measured: ``benchmarks/results.md`` and
``benchmarks/cpu_formulations_results.md``, section 8).

So ``import jaxonnx`` applies :func:`tune_cpu_allocator` (Linux with glibc), unless
``JAXONNX_KEEP_ALLOCATOR`` is set to anything but ``0`` or the empty string. The cost: it is
process-wide, and the process keeps its peak memory instead of returning freed blocks to the
system, as onnxruntime's arena and JAX's GPU allocator (75% of the GPU on start) do.
:data:`TUNED_ON_IMPORT` says whether it applied.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

# From glibc's <malloc.h>.
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
# mallopt takes a C int: a larger threshold would wrap around (2**34 becomes 0).
_MAX_TRIM_THRESHOLD = 2**31 - 1
_KEEP = "JAXONNX_KEEP_ALLOCATOR"


def tune_cpu_allocator() -> bool:
    """Makes glibc reuse freed large buffers instead of unmapping them (Linux/glibc only).

    ``import jaxonnx`` calls it (see the module docstring; ``JAXONNX_KEEP_ALLOCATOR=1`` opts
    out). Called at the start of a program, before JAX allocates, large jitted CPU outputs
    and temporaries are then written into memory that is already mapped, which made large
    copies such as Compress and Flatten much faster (measured: ``benchmarks/results.md``,
    ``benchmarks/cpu_formulations_results.md``). The environment-variable form,
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


def _tune_on_import() -> bool:
    """Applies :func:`tune_cpu_allocator` unless ``JAXONNX_KEEP_ALLOCATOR`` opts out."""
    if os.environ.get(_KEEP, "") not in ("", "0"):
        return False
    return tune_cpu_allocator()


TUNED_ON_IMPORT = _tune_on_import()
