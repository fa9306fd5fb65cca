"""The opt-in allocator tuning applies where glibc is, and the CLI applies it."""

import platform
import sys

import jaxonnx


def test_tune_cpu_allocator_applies_on_glibc():
    on_glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert jaxonnx.tune_cpu_allocator() is on_glibc


def test_cli_applies_the_tuning(monkeypatch, capsys):
    from jaxonnx import _cli, _tuning

    calls = []
    monkeypatch.setattr(_tuning, "tune_cpu_allocator", lambda: calls.append(True) or True)
    assert _cli.main(["check", jaxonnx.demo_model_path()]) == 0
    assert calls == [True]
    assert "all nodes supported" in capsys.readouterr().out
