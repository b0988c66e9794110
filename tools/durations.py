"""Where the suite's minutes go: pytest's `--durations=0` lines from one or more logs, summed by
tier (the folder under tests/), by module, and the slowest tests (setup, call and teardown
together).

    PYTEST_ADDOPTS=--durations=0 bash .ci/run > build/ci.log 2>&1
    python3 tools/durations.py build/ci.log build/tier-runtime.log build/tier-runtime-2.log build/tier-runtime-3.log build/tier-engine.log

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


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python3 tools/durations.py LOG [LOG ...]")
    print(report(durations([Path(a) for a in sys.argv[1:]])))
