"""Running a benchmark script at a tiny size, as its own command, and reading its table."""

from __future__ import annotations

import os
import sys

from tests.support.processes import run_kept
from tests.support.stacks import ROOT


def bench(script: str, *args: str, timeout: float = 900) -> str:
    # In a session the keeper guards (processes.run_kept): a benchmark starts brokers and workers,
    # and a test run stopped from outside must not leave it running them.
    proc = run_kept([sys.executable, f"benchmarks/{script}", *args], cwd=ROOT, timeout=timeout,
                    env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def table(out: str, header: str) -> list[list[str]]:
    """The rows under the table header that starts with `header`."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [header])
    return [line.split() for line in lines[start + 1:] if line.strip()]
