"""Diff benchmark: `kafka-replication diff`'s comparison of two renders, against a plain
property diff of the same objects, measured in the same run.

    .venv/bin/python benchmarks/diff.py [--sizes 10 100 500] [--repeat 3]

For each size, the mixed topology of benchmarks/program.py is rendered twice: as generated, and
with every fifth flow's topic filter narrowed (`t<i>\\..*` → `t<i>\\.orders`). Then:
  compare  - infra/tools/diff/ `compare`: objects matched, property changes, replacements, and what
             each does (connector effective configs through the ConfigMaps, topic languages on the
             automata with examples)
  plain    - the same objects matched and their property changes only (`changes` per object):
             what any YAML diff does
The renders themselves are not timed (the offline render has its own benchmark: program.py).
It prints seconds per run and the ratio compare / plain; the domain reading's cost is the rest.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.program import topology  # noqa: E402


def narrowed(topo: dict) -> dict:
    flows = []
    for i, flow in enumerate(topo["flows"]):
        flow = dict(flow)
        if i % 5 == 0 and "topics" in flow and not flow.get("bidirectional"):
            flow["topics"] = [re.sub(r"\\\.\.\*$", r"\\.orders", t) for t in flow["topics"]]
        flows.append(flow)
    return {**topo, "flows": flows}


def snapshot(path: Path):
    from infra.tools import diff, render
    result = render.run("bench", {"topology": str(path)}, {}, placeholder_secrets=True)
    render.close_event_loop()
    return diff.snapshot(result.placed_objects(), result.outputs)


def plain(before, after) -> int:
    from infra.tools import diff
    found = 0
    for key in before.objects.keys() | after.objects.keys():
        found += len(diff.changes(before.objects.get(key), after.objects.get(key))) > 0
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 500])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from infra.tools import diff
    print(f"{'flows':>6} {'objects':>8} {'changed':>8} {'effects':>8} | {'compare s':>10} {'plain s':>9} "
          f"{'compare/plain':>14}")
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as work:
            a, b = Path(work) / "a.yaml", Path(work) / "b.yaml"
            topo = topology(size)
            a.write_text(yaml.safe_dump(topo))
            b.write_text(yaml.safe_dump(narrowed(topo)))
            before, after = snapshot(a), snapshot(b)
        times_c, times_p = [], []
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = diff.compare("bench", before, after)
            times_c.append(time.perf_counter() - start)
            start = time.perf_counter()
            count = plain(before, after)
            times_p.append(time.perf_counter() - start)
        c, p = min(times_c), min(times_p)
        assert count == len(result.objects), (count, len(result.objects))
        print(f"{size:>6} {len(after.objects):>8} {len(result.objects):>8} {len(result.effects):>8} | {c:>10.3f} "
              f"{p:>9.3f} {c / p:>14.2f}")


if __name__ == "__main__":
    main()
