"""Where the CPU of a run goes, by kind of process: every `--every` seconds (5 by default) each
process's own CPU time (user and system, /proc/<pid>/stat), until the file `--until` exists; then
a line per kind (a Kafka broker, a Connect worker, a Spark driver, kube-apiserver, the Pulumi
CLI...) with how many ran, their CPU minutes and, for kinds with five or more processes, what one
costs to start and per minute alive (a least-squares line of each process's CPU on its lifetime).
What docs/performance.md's CPU table comes from. Linux, standard library only.

A process that lived less than one interval is missed or undercounted: the totals are a floor.
Processes already running at the start count only the CPU they use after it.

    python3 tools/cpu.py --until /tmp/ci.done > build/cpu.txt &
    bash .ci/run; touch /tmp/ci.done
"""

from __future__ import annotations

import argparse
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

HZ = os.sysconf("SC_CLK_TCK")

# The first pattern found in a process's command line names its kind, in this order (a Spark
# driver's command line names Kafka's jars; a broker's names no Connect class).
KINDS = (
    ("Connect worker", r"ConnectDistributed"),
    ("Kafka storage formatting", r"kafka\.tools\.StorageTool|StorageTool"),
    ("Kafka broker", r"kafka\.Kafka\b"),
    ("Spark driver", r"org\.apache\.spark\.deploy\.SparkSubmit"),
    ("clients JVM (rehearsal)", r"\bClients\b"),
    ("other JVM", r"(^|/)java\s"),
    ("kube-apiserver", r"(^|/)kube-apiserver\s"),
    ("etcd", r"(^|/)etcd\s"),
    ("Pulumi provider", r"(^|/)pulumi-resource-"),
    ("Pulumi CLI", r"(^|/)pulumi\s"),
    ("pytest", r"-m pytest\b"),
    ("Python, spawned workers", r"multiprocessing"),
    ("pip", r"\bpip\b"),
    ("Go toolchain", r"(^|/)(go|compile|link|asm|cgo)\s"),
    ("other Python", r"(^|/)python[0-9.]*\s"),
)


@dataclass
class Seen:
    kind: str
    first_cpu: float  # at the first sample that saw it (0 for a process started during the run)
    cpu: float
    first: float
    last: float


def kind_of(cmdline: str) -> str:
    for name, pattern in KINDS:
        if re.search(pattern, cmdline):
            return name
    return "other: " + (cmdline.split(" ", 1)[0].rsplit("/", 1)[-1] or "kernel")


def read(pid: str) -> tuple[str, float] | None:
    """(start time in ticks as the process's identity, CPU seconds); None once gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[19], (int(fields[11]) + int(fields[12])) / HZ


def sample(seen: dict[tuple[str, str], Seen], initial: bool) -> None:
    now = time.monotonic()
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        got = read(pid)
        if got is None:
            continue
        key = (pid, got[0])
        entry = seen.get(key)
        if entry is None:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if not cmdline.strip():
                continue  # a kernel thread
            seen[key] = Seen(kind_of(cmdline), got[1] if initial else 0.0, got[1], now, now)
        else:
            entry.cpu, entry.last = got[1], now


def fit(rows: list[tuple[float, float]]) -> tuple[float, float] | None:
    """Least squares of CPU seconds on lifetime minutes: (seconds to start, seconds a minute)."""
    if len(rows) < 5:
        return None
    mx = sum(x for x, _ in rows) / len(rows)
    my = sum(y for _, y in rows) / len(rows)
    sxx = sum((x - mx) ** 2 for x, _ in rows)
    if sxx == 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in rows) / sxx
    return my - slope * mx, slope


def report(seen: dict[tuple[str, str], Seen], mine: int) -> list[str]:
    kinds: dict[str, list[Seen]] = {}
    for (pid, _), entry in seen.items():
        if int(pid) != mine:
            kinds.setdefault(entry.kind, []).append(entry)
    total = sum(e.cpu - e.first_cpu for es in kinds.values() for e in es)
    lines = [f"{'kind':32} {'processes':>9} {'CPU min':>8} {'share':>6}  start s + s/min alive (fit)"]
    for kind, entries in sorted(kinds.items(), key=lambda kv: -sum(e.cpu - e.first_cpu for e in kv[1])):
        cpu = sum(e.cpu - e.first_cpu for e in entries)
        if cpu < 0.5:
            continue
        line = f"{kind[:32]:32} {len(entries):9d} {cpu / 60:8.2f} {cpu / total if total else 0:6.1%}"
        started = [((e.last - e.first) / 60, e.cpu) for e in entries if e.first_cpu == 0]
        line_fit = fit(started)
        if line_fit:
            line += f"  {line_fit[0]:.1f} + {line_fit[1]:.2f}"
        lines.append(line)
    lines.append(f"{'all':32} {sum(len(es) for es in kinds.values()):9d} {total / 60:8.2f}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(prog="python3 tools/cpu.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=float, default=5.0, help="seconds between samples (default 5)")
    ap.add_argument("--until", type=Path, help="stop once this file exists (default: Ctrl-C)")
    args = ap.parse_args()
    if not args.every > 0:
        ap.error("--every takes a number of seconds over 0")
    seen: dict[tuple[str, str], Seen] = {}
    sample(seen, initial=True)
    try:
        while args.until is None or not args.until.exists():
            time.sleep(args.every)
            sample(seen, initial=False)
    except KeyboardInterrupt:
        pass
    print("\n".join(report(seen, os.getpid())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
