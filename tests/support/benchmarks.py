"""Running a benchmark script at a tiny size, as its own command, and reading its table."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.stacks import ROOT


def bench(script: str, *args: str, timeout: float = 900) -> str:
    proc = subprocess.run([sys.executable, f"benchmarks/{script}", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def table(out: str, header: str) -> list[list[str]]:
    """The rows under the table header that starts with `header`."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [header])
    return [line.split() for line in lines[start + 1:] if line.strip()]
