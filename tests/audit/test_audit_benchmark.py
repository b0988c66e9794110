"""The audit benchmark (benchmarks/audit.py) runs at a tiny size on a local Spark."""

from __future__ import annotations

from tests.support.benchmarks import bench, table


def test_audit_benchmark_runs_at_a_tiny_size():
    out = bench("audit.py", "48000")
    (row, *_) = [r for r in table(out, "pairs") if r[0] == "48000"]
    # The audit finds exactly the faults the generator injected, at any size.
    assert "exact" in row, out
