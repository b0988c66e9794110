"""Benchmarks that cannot rot: each one runs here at a tiny size, as its own command, and must
complete and print its table. Nothing is timed: figures come from full runs on a quiet machine
(docs/performance.md), never from a test."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, unavailable


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


def test_guardrails_benchmark_runs_every_case():
    rows = table(bench("guardrails.py"), "case")
    cases = {row[0]: row for row in rows}
    assert {"baseline", "automata", "alternation", "exploding", "backtracking", "dense-loops"} <= set(cases)
    assert cases["baseline"][3:] == ["accepted"]
    for row in rows:
        float(row[1]), float(row[2])  # seconds and the ratio to the baseline, as numbers


def test_program_benchmark_runs_at_a_tiny_size():
    out = bench("program.py", "--sizes", "2", "--repeat", "1")
    (row,) = [line.split() for line in out.splitlines() if line.split()[:1] == ["2"]]
    assert row[2] == "|" and row[8] == "|", out  # flows, resources | times and ratios | per flow...
    float(row[5]), float(row[7])  # program / bare and program / objects, as numbers


def test_audit_benchmark_runs_at_a_tiny_size():
    out = bench("audit.py", "48000")
    (row, *_) = [r for r in table(out, "pairs") if r[0] == "48000"]
    # The audit finds exactly the faults the generator injected, at any size.
    assert "exact" in row, out


@pytest.mark.runtime
def test_replication_benchmark_runs_at_a_tiny_size():
    from infra.tools.rehearsal.apiserver import apiserver_binary
    if apiserver_binary() is None:
        unavailable("no kube-apiserver binary: run tools/engine/build.sh or `make engine` (docs/apiserver.md)")
    out = bench("replication.py", "--records", "200", "--rounds", "1", timeout=1200)
    ratios = [line.split() for line in out.splitlines() if line.strip().startswith("ours /")]
    assert len(ratios) == 2 and all(len(r) == 7 for r in ratios), out


def test_diff_benchmark_runs_at_a_tiny_size():
    out = bench("diff.py", "--sizes", "2", "--repeat", "1")
    (row,) = [r for r in table(out, "flows") if r[0] == "2"]
    # flows, objects, changed, effects | compare s, plain s, compare / plain
    assert row[4] == "|" and int(row[2]) == 3, out
    float(row[5]), float(row[6]), float(row[7])
