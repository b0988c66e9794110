"""Benchmark of validation on hostile filters (prints figures; not a test).

    .venv/bin/python benchmarks/guardrails.py

Each case is a topology run through validation.parse (schema, field rules, every guardrail), timed
in the same run as the baseline: the same number of flows with literal-prefix filters, which the
guardrails decide without automata. Cases:
  automata      12 flows into one target whose filters share no literal prefix (automata needed)
  alternation   one flow whose filter lists 490 literal names, beside an overlapping one
  exploding     an identity loop through `(a|b)*a(a|b){15}` (2^16 deterministic states): the
                check stops at its budget and the topology is refused
  many-explode  8 such loops: all share one total budget
  backtracking  `(a+)+b`-style filters that make backtracking engines exponential
  dense-loops   18 clusters, identity flows from each to every later one and one way back: the
                paths to follow double per cluster; the loop rule stops at its path budget
  allow-list    two identity flows into one target, each listing 10,000 plain names as a YAML list,
                sharing exactly one (refused, naming it), and a third flow back (a loop to search)
  allow-alt     the same names, each list written as one alternation `a|b|c|...`
  allow-dots    allow-list with the names' dots unescaped as users write them (`team0.orders-00000`,
                where each '.' matches any character): the same verdict, naming the shared name
  dots-alt      allow-dots with each list written as one alternation
  dots-varied   dotted names whose heads all differ (`svc0.events` ... `svc9999.events`) in two
                identity flows into one target, sharing none, and a third flow back: every rule
                decided (the heartbeat look-alike rule reads each name through its automaton)
It prints seconds per case and the ratio to the baseline; docs/performance.md records them.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from infra.checks import validation
from infra.core.errors import TopologyError  # noqa: E402
from infra.topology import schema  # noqa: E402

CLUSTER = {"bootstrapServers": "{}.kafka:9092", "security": {"protocol": "PLAINTEXT"}}


def topology(flows: list[dict], aliases: int = 10) -> dict:
    clusters = {f"c{i}": {**CLUSTER, "bootstrapServers": f"c{i}.kafka:9092"} for i in range(aliases)}
    return {"clusters": clusters, "flows": flows}


def identity(source: str, target: str, topics, **more) -> dict:
    return {"source": source, "target": target, "topics": topics, "replicationPolicy": "identity",
            "topicsExclude": ".*heartbeats", **more}


def cases() -> dict[str, dict]:
    baseline = [identity(f"c{i}", "c9", f"team{i}\\..*") for i in range(9)]
    automata = [identity(f"c{i}", "c9", [f"(x|y)*{i}[a-z]+", f"[a-z]*-{i}"]) for i in range(9)]
    names = [f"orders{i:03d}" for i in range(490)]
    alternation = [identity("c0", "c1", names), identity("c2", "c1", "orders4.*")]
    exploding = [identity("c0", "c1", "(a|b)*a(a|b){15}"), identity("c1", "c0", "b.*")]
    many = [flow for i in range(0, 8) for flow in (identity(f"c{i}", f"c{i + 1}", "(a|b)*a(a|b){15}", name=f"f{i}"),
                                                  identity(f"c{i + 1}", f"c{i}", f"b{i}.*", name=f"g{i}"))]
    backtracking = [identity("c0", "c1", "(a+)+b"), identity("c1", "c0", "(a|aa)*c")]
    n = 18
    dense = [identity(f"d{i:02d}", f"d{j:02d}", "x.*", aggregation=True, name=f"f{i}-{j}")
             for i in range(n) for j in range(i + 1, n)] + [identity(f"d{n - 1:02d}", "d00", "y.*", name="back")]
    dense_clusters = {f"d{i:02d}": {**CLUSTER, "bootstrapServers": f"d{i}.kafka:9092"} for i in range(n)}
    listed = [f"team{i % 7}\\.orders-{i:05d}" for i in range(10_000)]
    other = [f"team{i % 7}\\.payments-{i:05d}" for i in range(10_000)]
    other[5000] = listed[1234]
    back = [f"team{i % 7}\\.refunds-{i:05d}" for i in range(10_000)]
    allow = [identity("c0", "c2", listed), identity("c1", "c2", other), identity("c2", "c0", back)]
    allow_alt = [{**flow, "topics": "|".join(flow["topics"])} for flow in allow]
    allow_dots = [{**flow, "topics": [n.replace("\\.", ".") for n in flow["topics"]]} for flow in allow]
    dots_alt = [{**flow, "topics": "|".join(flow["topics"])} for flow in allow_dots]
    varied = [identity("c0", "c2", [f"svc{i}.events" for i in range(10_000)]),
              identity("c1", "c2", [f"app{i}.events" for i in range(10_000)]),
              identity("c2", "c0", [f"svc{i}.refunds" for i in range(10_000)])]
    return {"baseline": topology(baseline), "automata": topology(automata), "alternation": topology(alternation),
            "exploding": topology(exploding), "many-explode": topology(many), "backtracking": topology(backtracking),
            "dense-loops": {"clusters": dense_clusters, "flows": dense},
            "allow-list": topology(allow), "allow-alt": topology(allow_alt),
            "allow-dots": topology(allow_dots), "dots-alt": topology(dots_alt),
            "dots-varied": topology(varied)}


def timed(data: dict, repeat: int = 3) -> tuple[float, str]:
    best, verdict = float("inf"), ""
    for _ in range(repeat):
        start = time.perf_counter()
        try:
            validation.parse(data)
            verdict = "accepted"
        except TopologyError as exc:
            verdict = f"refused ({len(exc.problems)} problem(s))"
        best = min(best, time.perf_counter() - start)
    return best, verdict


def main() -> None:
    # The schema's bound on items per list is its own rule; the topic checks are measured here.
    schema.MAX_FILTERS = max(schema.MAX_FILTERS, 10_000)
    results = {name: timed(data) for name, data in cases().items()}
    base = results["baseline"][0]
    print(f"{'case':<14} {'seconds':>8} {'x baseline':>11}  verdict")
    for name, (seconds, verdict) in results.items():
        print(f"{name:<14} {seconds:8.3f} {seconds / base:11.1f}  {verdict}")


if __name__ == "__main__":
    main()
