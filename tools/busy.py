"""How busy the machine's cores are while something runs: every `--every` seconds (10 by default)
the share of all cores' time that was not idle or waiting on I/O since the line before, from
/proc/stat (Linux), until stopped (Ctrl-C) or until the file `--until` exists; then the average
over the run and over its last `--tail` seconds. What docs/performance.md's "busy" figures come
from: a suite that leaves the cores idle can run more at once; one that keeps them busy must do
less. Standard library only.

    python3 tools/busy.py --until /tmp/ci.done > build/busy.log &
    bash .ci/run; touch /tmp/ci.done
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path


def sample() -> tuple[int, int]:
    """(busy, total) jiffies of all cores since boot: idle and iowait are not busy."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    return sum(fields) - fields[3] - fields[4], sum(fields)


def main() -> int:
    ap = argparse.ArgumentParser(prog="python3 tools/busy.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=float, default=10.0, help="seconds between lines (default 10)")
    ap.add_argument("--until", type=Path, help="stop once this file exists")
    ap.add_argument("--tail", type=float, default=900.0, help="the last seconds averaged apart (default 900)")
    args = ap.parse_args()
    if args.every <= 0 or args.tail <= 0:
        ap.error("--every and --tail take a number of seconds over 0")
    shares: list[tuple[float, float]] = []  # (monotonic time, busy share) per interval
    before = sample()
    try:
        while args.until is None or not args.until.exists():
            time.sleep(args.every)
            now = sample()
            busy, total = now[0] - before[0], now[1] - before[1]
            before = now
            share = 100.0 * busy / total if total else 0.0
            shares.append((time.monotonic(), share))
            print(f"{time.strftime('%H:%M:%S')} busy {share:.0f}% of {os.cpu_count()} cores", flush=True)
    except KeyboardInterrupt:
        pass
    if shares:
        end = shares[-1][0]
        tail = [s for t, s in shares if t > end - args.tail]
        print(f"average busy {sum(s for _, s in shares) / len(shares):.1f}% over {len(shares)} intervals; "
              f"{sum(tail) / len(tail):.1f}% over the last {args.tail:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
