"""Strict settings for the whole test suite: surprises surface here, not in users' programs.

- 8 virtual CPU devices, so sharding tests run on any machine (must precede jax's start).
- 64-bit types on, so exactness of int64/uint64/float64 is tested; tests of the x64-off
  policy switch it off locally with ``jax.enable_x64(False)``.
- numpy-style rank promotion and implicit dtype promotion are errors.
- pytest turns every warning into an error (pyproject's ``filterwarnings``).
"""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")
jax.config.update("jax_numpy_dtype_promotion", "strict")

settings.register_profile(
    "ci", max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci")


@pytest.fixture
def x64_off():
    """Runs a test with JAX's default 32-bit configuration."""
    with jax.enable_x64(False):
        yield
