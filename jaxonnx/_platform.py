"""Which platform's formulation an op lowers to: XLA's own, or a CPU rewrite.

Some ops compute differently per platform (a convolution as Winograd's transform or as
shifted multiply-adds on CPU, XLA's convolution elsewhere; pooling as slices on CPU,
``reduce_window`` elsewhere; a cumulative sum as an associative scan on CPU). They choose
with :func:`platform_dependent`, which is ``jax.lax.platform_dependent`` unless a branch is
forced: ``JAXONNX_PLATFORM_BRANCH=gpu`` (or ``tpu``, or ``default``) in the environment, or
``with jaxonnx._platform.forced_branch("gpu"):``, makes every such choice take that
platform's branch (the ``default`` one where the op has none of its own) on any machine.
So what a GPU or TPU computes is checked on a CPU: the test suite runs the op table and
the model fixtures through it (``tests/test_op_table.py``, ``tests/test_real_models.py``;
the switch itself is tested in ``tests/test_platform_branches.py``).

The choice is made when a function is traced: an executable compiled before the switch
keeps the branch it was compiled with (``jax.jit`` caches by its arguments, not by this
switch), so load a model, or jit a function, inside the ``with`` block.

Example:
    >>> from jaxonnx._platform import forced_branch, platform_dependent
    >>> with forced_branch("gpu"):
    ...     platform_dependent(jnp.ones(2), cpu=lambda x: x + 1, default=lambda x: x * 3)
    Array([3., 3.], dtype=float32)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

import jax

#: The environment variable that forces a branch for the whole process.
ENVIRONMENT_VARIABLE = "JAXONNX_PLATFORM_BRANCH"
#: The branches a caller may force: a platform's own, or the ``default`` one.
BRANCHES = ("cpu", "gpu", "cuda", "rocm", "tpu", "default")

_forced: list[str] = []  # the innermost forced_branch() last
_calls = 0  # how many choices this process has traced (see calls())
_named: set[str] = set()  # the platforms a choice traced so far had a branch of its own for


def calls() -> int:
    """How many :func:`platform_dependent` choices this process has traced, forced or not:
    a test compares the count before and after running something to learn whether it has a
    platform-dependent formulation, and so whether to run it again with a forced branch."""
    return _calls


def forced() -> str | None:
    """The branch every :func:`platform_dependent` takes now, or None for the platform's own
    (``jax.lax.platform_dependent`` decides at lowering)."""
    if _forced:
        return _forced[-1]
    value = os.environ.get(ENVIRONMENT_VARIABLE, "").strip().lower()
    if not value:
        return None
    if value not in BRANCHES:
        raise ValueError(
            f"{ENVIRONMENT_VARIABLE}={value!r} names no platform branch; use one of {', '.join(BRANCHES)}, "
            "or leave it unset for each platform's own."
        )
    return value


@contextlib.contextmanager
def forced_branch(branch: str) -> Iterator[None]:
    """Within the block, every :func:`platform_dependent` traced takes ``branch``'s formulation.

    Args:
        branch: one of ``cpu``, ``gpu``, ``cuda``, ``rocm``, ``tpu`` or ``default``.

    Raises:
        ValueError: for another name.
    """
    if branch not in BRANCHES:
        raise ValueError(f"No platform branch {branch!r}; use one of {', '.join(BRANCHES)}.")
    _forced.append(branch)
    try:
        yield
    finally:
        _forced.pop()


def named_platforms() -> frozenset[str]:
    """The platforms (``cpu``, ...) that the choices traced so far had a branch of their own
    for; every other platform (today GPU and TPU) computes the ``default`` branch."""
    return frozenset(_named)


def other_branches() -> list[str]:
    """The branches that compute what the CPU does not: each platform a traced choice had a
    branch of its own for, besides ``cpu``, then ``default`` (what every other platform,
    today GPU and TPU, computes). A test forces each in turn."""
    return sorted(named_platforms() - {"cpu"}) + ["default"]


def platform_dependent(*args, default: Callable, **per_platform: Callable):
    """``jax.lax.platform_dependent(*args, default=..., cpu=...)``, or the forced branch's
    function called directly (``gpu`` falls back to ``cuda``, then to ``default``)."""
    global _calls
    _calls += 1
    _named.update(per_platform)
    branch = forced()
    if branch is None:
        return jax.lax.platform_dependent(*args, default=default, **per_platform)
    candidates = {"gpu": ("gpu", "cuda"), "cuda": ("cuda", "gpu"), "rocm": ("rocm", "gpu")}.get(branch, (branch,))
    chosen = next((per_platform[name] for name in candidates if name in per_platform), default)
    return chosen(*args)
