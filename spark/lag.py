"""Live replication lag of a stack's flows: `python -m spark.audit lag --config audit.json
[--flow NAME ...] [--credentials DIR] [--out DIR] [--json]` (docs/status.md#live-lag).

Read now, with the audit's clients and the same decoding as its offsets audit and the failover
readiness check, per flow:
- each source partition's lag: the source connectors' committed offsets (Connect REST API)
  against the source's end offsets (spark/offsets.py), and the age of the oldest record not yet
  replicated (the first record past the committed offset, its timestamp read on the source);
- each consumer group's newest checkpoints on the target (`<source>.checkpoints.internal`,
  committed records only) and their age: how old the offsets are that a group failing over would
  resume from.

Nothing is judged but the audit's own offsets threshold: a partition past `maxLag`, never
replicated or with records lost to retention is a finding (exit 1). The source and the target are
read apart, so a source that cannot be read still leaves the checkpoints on the target shown;
anything not read is said (exit 2) and never shown as caught up.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from contract import audit as audit_contract
from spark.failover import java_filters, live_cluster
from spark.job import Clusters, CouldNotAudit, read_config, report_command
from spark.live import flow_checkpoints
from spark.offsets import Status, Unverifiable, audit_flow, connect_get

REPORT_FILE = "lag.json"
EXIT = {"ok": 0, "findings": 1, "error": 2}
AGE_SECONDS = 10.0  # the bound on reading the oldest unreplicated record of every lagging partition of a flow


def next_offsets(rows) -> dict[tuple[str, int], int]:
    """Where the oldest record not yet replicated is, for each lagging partition: past the
    committed offset (the last one replicated), or the earliest when nothing was or it aged out."""
    return {(r.topic, r.partition): max(r.earliest, -1 if r.committed is None else r.committed + 1)
            for r in rows if r.lag > 0}


def flow_lag(flow: dict, source, target, get, filters, max_lag: int, now_ms: int) -> dict:
    """One flow's live figures. `source`, `target`: callables giving the LiveCluster (each may
    raise Unverifiable, said in `errors` and leaving only its own half unread)."""
    out: dict = {"flow": flow["name"], "sourceAlias": flow["sourceAlias"], "targetAlias": flow["targetAlias"],
                 "maxLag": max_lag, "replication": None, "groups": None, "errors": []}
    try:
        cluster = source()
        rows = audit_flow(flow, lambda url, name: get(url, f"/connectors/{name}/offsets"),
                          lambda: cluster.watermarks(cluster.partitions()), filters, max_lag)
        stamps = cluster.first_timestamps(next_offsets(rows), AGE_SECONDS)
        out["replication"] = [
            {**r.row(), "oldestUnreplicatedAgeSeconds": None if stamps.get((r.topic, r.partition)) is None
             else round(max(0, now_ms - stamps[(r.topic, r.partition)]) / 1000, 3)} for r in rows]
    except Unverifiable as exc:
        out["errors"].append(f"replication: {exc}")
    try:
        groups: dict[str, list[dict]] = {}
        prefix = flow["topicPrefix"]
        for (group, topic, partition), stamped in sorted(flow_checkpoints(flow, target(), filters).items()):
            c = stamped.checkpoint
            groups.setdefault(group, []).append({
                "topic": topic[len(prefix):], "targetTopic": topic, "partition": partition, "upstream": c.upstream,
                "translated": c.downstream, "ageSeconds": round(max(0, now_ms - stamped.timestamp_ms) / 1000, 3)})
        out["groups"] = [{"group": g, "newestAgeSeconds": min(p["ageSeconds"] for p in parts), "partitions": parts}
                         for g, parts in sorted(groups.items())]
    except Unverifiable as exc:
        out["errors"].append(f"checkpoints: {exc}")
    rows = out["replication"] or []
    out["findings"] = [f"{r['topic']}[{r['partition']}]: {r['status']}, lag {r['lag']}" for r in rows
                       if r["status"] != Status.ok.value]
    return out


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m spark.audit lag", description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, required=True, help="the audit configuration (audit.json)")
    ap.add_argument("--flow", action="append", default=[], help="a flow (repeatable; default: every flow)")
    ap.add_argument("--credentials", type=Path, default=Path(audit_contract.CREDENTIALS_DIR),
                    help="directory of <alias>/<file> credentials (mounted Secrets)")
    ap.add_argument("--out", type=Path, help=f"also write the report to <out>/{REPORT_FILE}")
    ap.add_argument("--json", action="store_true", help="print the JSON report")
    ap.add_argument("--now-ms", type=int, help="the time ages are measured at; default: now")
    return ap.parse_args(argv)


def report(config: dict, names: list[str], credentials: Path, now_ms: int) -> dict:
    flows = {f["name"]: f for f in config["flows"]}
    unknown = [n for n in names if n not in flows]
    if unknown:
        raise CouldNotAudit(f"no flow named {', '.join(unknown)} in the configuration ({', '.join(sorted(flows))})")
    max_lag = config["settings"]["thresholds"]["maxLag"]
    filters, gateway = java_filters()
    try:
        chosen = [flows[n] for n in names] if names else [flows[n] for n in sorted(flows)]
        results = []
        for flow in chosen:
            # Clients per flow and role: one cluster is the source of a flow and the target of another.
            clusters = Clusters(lambda alias, flow=flow: live_cluster(config, flow, alias, credentials))
            results.append(flow_lag(flow, lambda: clusters[flow["sourceAlias"]],
                                    lambda: clusters[flow["targetAlias"]], connect_get, filters, max_lag, now_ms))
    finally:
        gateway.shutdown()
    verdict = "error" if any(f["errors"] for f in results) else "findings" if any(
        f["findings"] for f in results) else "ok"
    return {"version": 1, "checkedAt": now_ms, "verdict": verdict, "flows": results}


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    # A crash is "could not read", never "caught up".
    return report_command(
        args.out, lambda: report(read_config(args.config), args.flow, args.credentials,
                                 args.now_ms or int(time.time() * 1000)),
        "lag error: could not read", REPORT_FILE,
        lambda r: json.dumps(r, indent=2, sort_keys=True) if args.json else "", EXIT)
