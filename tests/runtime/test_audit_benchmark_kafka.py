"""The audit benchmark's Kafka mode (benchmarks/audit.py --kafka) runs at a tiny size: two real
brokers, the audit through Spark's Kafka source warm and in fresh processes, and the raw scan."""

from __future__ import annotations

import re

from tests.support.benchmarks import bench, table


def test_audit_benchmark_on_kafka_runs_at_a_tiny_size():
    out = bench("audit.py", "--kafka", "16000", timeout=1200)
    (row,) = [r for r in table(out, "pairs") if r[0] == "16000"]
    # pairs, raw rec/s, audit rec/s, audit/raw, cold raw s, cold audit s, cold a/r, found: the
    # warm and the cold audit found exactly the injected faults, and every figure is a number.
    assert len(row) == 8 and row[-1] == "exact", out
    assert all(float(x.replace(",", "")) > 0 for x in row[1:7]), out
    # The raw scans read every record of both topics, warm and cold: 16,000 source records and the
    # replica's 16,000 - 100 lost + 50 replayed.
    assert "31,950 records read (31,950 cold)" in out, out
    # Warm figures are medians of three alternating rounds of each contender.
    (rounds,) = [line for line in out.splitlines() if "alternating rounds, medians" in line]
    assert re.fullmatch(r" +3 alternating rounds, medians: raw [0-9.]+ s \([0-9.]+, [0-9.]+, [0-9.]+\), "
                        r"audit [0-9.]+ s \([0-9.]+, [0-9.]+, [0-9.]+\)", rounds), rounds
