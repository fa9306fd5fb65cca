"""What the benchmarks that run each case in a fresh process share (not a benchmark).

Each such benchmark runs a child script per case, which prints one JSON line, and writes a
Markdown table headed by the machine and the versions it ran with."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run_child(script: str, *args: str, env: dict[str, str] | None = None) -> dict:
    """The JSON object that ``python -c script args...`` prints last, from a fresh process."""
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_table(file_name: str, title: str, how: str, header: list[str], rows: list[str]) -> None:
    """``benchmarks/<file_name>``: ``title``, the machine and versions followed by ``how``,
    then a table of ``header`` (column names; the first left-aligned, the rest right) and ``rows``."""
    import jax
    import onnx

    machine = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; jax {jax.__version__}, "
        f"onnx {onnx.__version__}, Python {platform.python_version()}; {how}"
    )
    lines = [f"# {title}", "", machine, "", "| " + " | ".join(header) + " |"]
    lines += ["|---|" + "---:|" * (len(header) - 1), *rows, ""]
    with open(os.path.join(HERE, file_name), "w") as f:
        f.write("\n".join(lines))
