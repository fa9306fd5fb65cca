"""``import jaxonnx`` takes XLA:CPU's convolutions out of YNNPACK (one core), asks for
512-bit vectors on CPUs that run them at full speed and runs CPU computations on the calling
thread, where it can, and leaves each setting alone where the user set it, opted out, or a
backend had already started."""

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import jaxonnx  # noqa: F401  (the import under test)
from jaxonnx import _xla_cpu
from jaxonnx._xla_cpu import _flag_value, wide_vectors_run_fast, ynn_convolutions

_FLAG = "--xla_cpu_experimental_ynn_fusion_type"
_VECTORS = "--xla_cpu_prefer_vector_width"
_READ_VERSION = _xla_cpu._jaxlib_version() == _xla_cpu._VERSION_READ


def _fresh_process(code: str, **env) -> str:
    """Runs ``code`` in a new Python with ``env`` over this environment (XLA_FLAGS removed
    unless given) and returns what it printed."""
    environment = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAXONNX_KEEP_XLA_FLAGS")}
    environment.update(env)
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# What the child prints: XLA_FLAGS after the import, whether jaxonnx set the flag, what it
# reports, and whether a compiled 2-D convolution is a YNNPACK fusion.
_REPORT = """
import os, jax, jax.numpy as jnp
{before}
import jaxonnx
from jaxonnx._xla_cpu import TOOK_CONVOLUTIONS_OUT, ynn_convolutions
conv = lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
text = jax.jit(conv).lower(jnp.ones((1, 8, 8, 32)), jnp.ones((3, 3, 32, 32))).compile().as_text()
print(repr(os.environ.get("XLA_FLAGS")), TOOK_CONVOLUTIONS_OUT, ynn_convolutions(), "__ynn_fusion" in text, sep="|")
"""


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ("", None),
        ("--xla_force_host_platform_device_count=8", None),
        (f"{_FLAG}=", ""),
        (f"--xla_cpu_use_xnnpack=false {_FLAG}=individual_dot {_FLAG}=reduce", "reduce"),
        (f"{_FLAG}_other=dot", None),
    ],
)
def test_flag_value_reads_the_last_setting(flags, expected):
    assert _flag_value(flags) == expected


def test_ynn_convolutions_follows_xla_flags(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", f"{_FLAG}=individual_dot,reduce")
    assert ynn_convolutions() is False
    monkeypatch.setenv("XLA_FLAGS", f"{_FLAG}=individual_dot,individual_convolution,reduce")
    assert ynn_convolutions() is True
    monkeypatch.delenv("XLA_FLAGS")
    assert ynn_convolutions() is True  # XLA's default (jaxlib 0.10's; assumed for others)


def test_import_takes_convolutions_out_of_ynnpack():
    flags, took, ynn, fused = _fresh_process(_REPORT.format(before="")).split("|")
    if _READ_VERSION:
        vectors = f" {_VECTORS}=512" if wide_vectors_run_fast() else ""
        assert flags == repr(f"{_FLAG}=individual_dot,reduce{vectors}") and took == "True"
        assert ynn == "False" and fused == "False"
    else:  # a jaxlib whose default was not read is left as it is
        assert flags == "None" and took == "False" and ynn == "True"


@pytest.mark.parametrize(
    ("before", "env"),
    [
        # the user's flags stand
        ("", {"XLA_FLAGS": f"{_FLAG}=individual_dot,individual_convolution,reduce {_VECTORS}=256"}),
        ("", {"JAXONNX_KEEP_XLA_FLAGS": "1"}),  # opted out
        ("jax.devices()", {}),  # a backend started first: XLA has read its flags
    ],
    ids=["user-set", "opted-out", "backend-started"],
)
def test_import_leaves_the_flag_alone(before, env):
    flags, took, ynn, fused = _fresh_process(_REPORT.format(before=before), **env).split("|")
    assert flags == repr(env.get("XLA_FLAGS")) and took == "False"
    # What jaxonnx reports is what XLA compiled: YNNPACK's convolution.
    assert ynn == "True" and (fused == "True" or not _READ_VERSION)


def test_this_process_compiles_what_it_reports():
    """The suite imports jaxonnx before any backend starts: its convolutions are Eigen's
    exactly when jaxonnx says so, and give the same values as YNNPACK's."""
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((1, 9, 9, 24)).astype(np.float32), rng.standard_normal((3, 3, 24, 32)).astype(np.float32)
    conv = jax.jit(
        lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    )
    compiled = conv.lower(x, w).compile()
    assert ("__ynn_fusion" in compiled.as_text()) == ynn_convolutions()
    got = np.asarray(compiled(x, w), np.float64)
    patches = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    reference = sum(patches[:, i : i + 9, j : j + 9] @ w[i, j].astype(np.float64) for i in range(3) for j in range(3))
    np.testing.assert_allclose(got, reference, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("cpuinfo", "fast"),
    [
        ("vendor_id\t: AuthenticAMD\nflags\t\t: fpu avx2 avx512f avx512_vbmi2\n", True),  # Zen 4, Zen 5
        ("vendor_id\t: AuthenticAMD\nflags\t\t: fpu avx2\n", False),  # Zen 3: no AVX-512
        ("vendor_id\t: GenuineIntel\nflags\t\t: fpu avx2 avx512f avx512bw\n", False),  # Skylake-SP: downclocks
        ("vendor_id\t: GenuineIntel\nflags\t\t: fpu avx2 avx512f avx512_vbmi2\n", True),  # Ice Lake on
        ("", False),
    ],
)
def test_wide_vectors_only_where_they_run_at_full_speed(cpuinfo, fast):
    assert wide_vectors_run_fast(cpuinfo) is fast


def test_import_sets_the_vector_width_only_where_it_pays():
    code = "import os, jaxonnx; from jaxonnx._xla_cpu import PREFERS_WIDE_VECTORS as p; print(os.environ['XLA_FLAGS'], p, sep='|')"
    flags, prefers = _fresh_process(code).split("|")
    expected = _READ_VERSION and wide_vectors_run_fast()
    assert prefers == str(expected)
    assert _flag_value(flags, _VECTORS) == ("512" if expected else None)
    # The user's width stands, and the YNNPACK flag is still set beside it.
    flags, prefers = _fresh_process(code, XLA_FLAGS=f"{_VECTORS}=256").split("|")
    assert prefers == "False" and _flag_value(flags, _VECTORS) == "256"
    assert _flag_value(flags) == ("individual_dot,reduce" if _READ_VERSION else None)


# What the child prints: whether jaxonnx set inline dispatch, JAX's option after the import,
# and whether a jitted call returned an array whose value was already computed. The child
# runs on the CPU (the option is the CPU client's), also where a GPU is the default.
_DISPATCH_REPORT = """
import time, jax, jax.numpy as jnp
{before}
import jaxonnx
from jaxonnx._xla_cpu import DISPATCHES_INLINE
slow = jax.jit(lambda x: jnp.linalg.matrix_power(x, 64) @ x)
x = jnp.full((512, 512), 1e-3)
slow(x).block_until_ready()
y = slow(x)
print(DISPATCHES_INLINE, jax.config.values["jax_cpu_enable_async_dispatch"], y.is_ready(), sep="|")
"""


def test_import_runs_cpu_computations_on_the_calling_thread():
    # With async dispatch a call returns before a 30 ms computation is done; inline, after.
    assert _fresh_process(_DISPATCH_REPORT.format(before=""), JAX_PLATFORMS="cpu") == "True|False|True"


@pytest.mark.parametrize(
    ("before", "env"),
    [
        ("jnp.ones(1).block_until_ready()", {}),  # a backend started first: too late
        ("", {"JAX_CPU_ENABLE_ASYNC_DISPATCH": "true"}),  # the user's choice stands
        ("", {"JAXONNX_KEEP_XLA_FLAGS": "1"}),  # opted out
    ],
)
def test_dispatch_is_left_alone_where_it_must_be(before, env):
    assert _fresh_process(_DISPATCH_REPORT.format(before=before), JAX_PLATFORMS="cpu", **env) == "False|True|False"


def test_setting_dispatch_back_after_the_import_keeps_jaxs_default():
    code = _DISPATCH_REPORT.format(before="").replace(
        "from jaxonnx._xla_cpu import DISPATCHES_INLINE",
        "from jaxonnx._xla_cpu import DISPATCHES_INLINE\njax.config.update('jax_cpu_enable_async_dispatch', True)",
    )
    assert _fresh_process(code, JAX_PLATFORMS="cpu") == "True|True|False"
