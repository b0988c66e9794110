"""Where the suite's minutes go: pytest's `--durations=0` lines from one or more logs, summed by
tier (the folder under tests/), by module, and the slowest tests (setup, call and teardown
together).

    PYTEST_ADDOPTS=--durations=0 bash .ci/run > build/ci.log 2>&1
    python3 tools/durations.py build/ci.log build/tier-runtime.log build/tier-runtime-2.log build/tier-runtime-3.log build/tier-engine.log

    python3 tools/durations.py --cpu build/cpu

The second form sums the CPU ledger `make test` keeps (tests/support/cputime.py): each test's CPU
time, its process's own and its children's (brokers, workers, Spark, the Pulumi CLI), which on two
busy cores says what a test costs where its wall time says mostly what ran beside it.

`make test` prints the runtime tier's phases of a second or more (`--durations-min=1`), so its
sums leave out the shorter phases. Each test's time is its own process's: the tiers run side by side (Makefile `test`), so the sums
are test-process minutes, more than the wall time they take together. Standard library only.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(tests/(\w+)/(\w+)\.py::.+?)\s*$")  # ids may hold spaces


def durations(paths: list[Path]) -> dict[str, float]:
    """test id -> seconds, summed over its phases (a test appears in one log only)."""
    found: dict[str, float] = defaultdict(float)
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            m = LINE.match(line)
            if m:
                found[m[3]] += float(m[1])
    return dict(found)


def report(found: dict[str, float], top: int = 25) -> str:
    tiers: dict[str, float] = defaultdict(float)
    modules: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for test, seconds in found.items():
        tier, module = test.split("/")[1], test.split("::")[0]
        tiers[tier] += seconds
        modules[module] += seconds
        counts[tier] += 1
    out = ["| tier | tests | minutes (its processes') |", "| --- | ---: | ---: |"]
    out += [f"| {t} | {counts[t]} | {s / 60:.1f} |" for t, s in sorted(tiers.items(), key=lambda x: -x[1])]
    out += ["", "| module | minutes |", "| --- | ---: |"]
    out += [f"| {m} | {s / 60:.1f} |" for m, s in sorted(modules.items(), key=lambda x: -x[1])[:top]]
    out += ["", "| test | seconds |", "| --- | ---: |"]
    out += [f"| {t} | {s:.0f} |" for t, s in sorted(found.items(), key=lambda x: -x[1])[:top]]
    return "\n".join(out)


def ledger(folder: Path) -> dict[str, tuple[float, float, float]]:
    """test id -> (wall s, own CPU s, children's CPU s), from every process's ledger file."""
    found: dict[str, tuple[float, float, float]] = {}
    for path in sorted(folder.glob("*.tsv")):
        for line in path.read_text(errors="replace").splitlines():
            fields = line.split("\t")
            if len(fields) == 4:
                try:
                    found[fields[0]] = (float(fields[1]), float(fields[2]), float(fields[3]))
                except ValueError:
                    continue  # a line cut short by a stopped run
    return found


def cpu_report(found: dict[str, tuple[float, float, float]], top: int = 15) -> str:
    tiers: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for test, (wall, own, children) in found.items():
        row = tiers[test.split("/")[1] if test.startswith("tests/") else "?"]
        row[0] += 1
        row[1] += wall
        row[2] += own
        row[3] += children
    total = sum(own + children for _, own, children in found.values())
    out = [f"CPU: {total / 60:.1f} CPU-minutes in {len(found)} tests (on 2 cores, at least {total / 120:.1f} minutes of wall time)",
           "| tier | tests | wall min (its processes') | CPU min | of which children's |", "| --- | ---: | ---: | ---: | ---: |"]
    out += [f"| {t} | {n:.0f} | {w / 60:.1f} | {(o + c) / 60:.1f} | {c / 60:.1f} |"
            for t, (n, w, o, c) in sorted(tiers.items(), key=lambda x: -(x[1][2] + x[1][3]))]
    out += ["", "| test | CPU s | wall s |", "| --- | ---: | ---: |"]
    out += [f"| {t} | {o + c:.0f} | {w:.0f} |" for t, (w, o, c) in sorted(found.items(), key=lambda x: -(x[1][1] + x[1][2]))[:top]]
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--cpu":
        print(cpu_report(ledger(Path(sys.argv[2]))))
    elif len(sys.argv) >= 2 and not sys.argv[1].startswith("-"):
        print(report(durations([Path(a) for a in sys.argv[1:]])))
    else:
        sys.exit("usage: python3 tools/durations.py LOG [LOG ...] | --cpu FOLDER")
