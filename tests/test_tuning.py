"""The allocator tuning applies where glibc is, on import unless opted out, and in the CLI."""

import os
import platform
import subprocess
import sys

import pytest

import jaxonnx

ON_GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def test_tune_cpu_allocator_applies_on_glibc():
    assert jaxonnx.tune_cpu_allocator() is ON_GLIBC


def test_cli_applies_the_tuning(monkeypatch, capsys):
    from jaxonnx import _tuning, cli

    calls = []
    monkeypatch.setattr(_tuning, "tune_cpu_allocator", lambda: calls.append(True) or True)
    assert cli.main(["check", jaxonnx.demo_model_path()]) == 0
    assert calls == [True]
    assert "all nodes supported" in capsys.readouterr().out


# A child that allocates 64 MiB, frees it and allocates it again, touching every page, and
# prints whether jaxonnx tuned the allocator and the page faults of the second allocation.
# (malloc itself, as XLA:CPU allocates: numpy would ask for huge pages.)
_REUSE = """
import ctypes, resource, jaxonnx
from jaxonnx._tuning import TUNED_ON_IMPORT
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
size = 64 << 20
block = libc.malloc(size); ctypes.memset(block, 1, size); libc.free(block)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
block = libc.malloc(size); ctypes.memset(block, 1, size)
print(TUNED_ON_IMPORT, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not ON_GLIBC, reason="glibc's mallopt tunes the allocator; other C libraries are left alone")
@pytest.mark.parametrize("keep", ["", "1"], ids=["default", "opted-out"])
def test_import_makes_freed_large_blocks_reused(keep):
    env = {k: v for k, v in os.environ.items() if k != "JAXONNX_KEEP_ALLOCATOR"}
    if keep:
        env["JAXONNX_KEEP_ALLOCATOR"] = keep
    done = subprocess.run([sys.executable, "-c", _REUSE], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    tuned, faults = done.stdout.split()
    assert tuned == str(not keep)
    if keep:  # glibc maps the 64 MiB block afresh: a fault per 4 KiB page
        assert int(faults) > 10_000
    else:  # the freed block is reused, already mapped
        assert int(faults) < 1_000
