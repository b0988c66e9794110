"""The audit benchmark (benchmarks/audit.py) runs at a tiny size on a local Spark."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.benchmarks import ROOT, bench, table


def test_audit_benchmark_runs_at_a_tiny_size():
    out = bench("audit.py", "48000")
    (row, *_) = [r for r in table(out, "pairs") if r[0] == "48000"]
    # The audit finds exactly the faults the generator injected, at any size.
    assert "exact" in row, out


@pytest.mark.parametrize(("argv", "said"), [
    (["--help"], "usage: audit.py [-h] [--kafka] [PAIRS ...]"),
    (["many"], "audit.py: error: argument PAIRS: invalid int value: 'many'"),
    (["--", "-5"], "audit.py: error: sizes are positive numbers of record pairs"),
])
def test_its_arguments_are_checked_without_a_traceback(argv, said):
    done = subprocess.run([sys.executable, "benchmarks/audit.py", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == (0 if argv == ["--help"] else 2)
    assert said in done.stdout + done.stderr and "Traceback" not in done.stderr
