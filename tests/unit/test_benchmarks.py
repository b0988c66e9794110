"""Benchmarks that cannot rot: each one runs here at a tiny size, as its own command, and must
complete and print its table. Nothing is timed: figures come from full runs on a quiet machine
(docs/performance.md), never from a test."""

from __future__ import annotations

from tests.support.benchmarks import bench, table


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
    float(row[-2]), float(row[-1])  # the CPU ratios: against the flat objects, and on the same collector
    assert out.splitlines()[0].split()[-4:] == ["cpu", "ratio", "cpu", "+gc"], out


def test_program_benchmark_prints_the_programs_own_phases():
    out = bench("program.py", "--phases", "--sizes", "2", "--repeat", "1")
    assert out.splitlines()[0].split() == ["flows", "|", "validate", "s", "plan", "s", "policy", "s"], out
    (row,) = [line.split() for line in out.splitlines() if line.split()[:1] == ["2"]]
    assert row[1] == "|" and len(row) == 5, out
    float(row[2]), float(row[3]), float(row[4])


def test_diff_benchmark_runs_at_a_tiny_size():
    out = bench("diff.py", "--sizes", "2", "--repeat", "1")
    (row,) = [r for r in table(out, "flows") if r[0] == "2"]
    # flows, objects, changed, effects | compare s, plain s, compare / plain
    assert row[4] == "|" and int(row[2]) == 3, out
    float(row[5]), float(row[6]), float(row[7])
