"""The audit's results: report.json, the Parquet detail table, Pushgateway metrics, exit code.

Statuses, per partition and rolled up to topic, flow and run:
  ok           compared, nothing over the thresholds
  findings     missing/unexpected/duplicate records, lag, retention loss or stale heartbeats over
               the thresholds — or a partition that could not be verified (`unverifiable`, with
               the reason: its window aged out, its target topic is missing)
  deferred     replication has not yet reached the end of the window: compared next run (lag
               itself is judged by the offsets audit)
  error        the audit could not read what it needs (Connect REST API, Kafka): never ok
Exit code: 0 ok, 1 findings, 2 error.
"""

from __future__ import annotations

import json
from pathlib import Path

from contract import audit as audit_contract

EXIT = {"ok": 0, "findings": 1, "error": 2}
COUNTS = ("sourceRecords", "targetRecords", "missing", "duplicate", "unexpected", "lag")


def judge_partition(row: dict, thresholds: dict, aggregation: bool) -> list[str]:
    """The threshold findings of one partition row (empty: ok)."""
    found = []
    if row.get("unverifiable"):
        found.append(f"unverifiable: {row['unverifiable']}")
    if row["missing"] > thresholds["maxMissing"]:
        found.append(f"{row['missing']} missing record(s)")
    if row["unexpected"] > thresholds["maxUnexpected"] and not aggregation:
        found.append(f"{row['unexpected']} unexpected record(s)")
    if thresholds.get("maxDuplicates") is not None and row["duplicate"] > thresholds["maxDuplicates"]:
        found.append(f"{row['duplicate']} duplicate record(s)")
    if row["lag"] is not None and row["lag"] > thresholds["maxLag"]:
        found.append(f"lag of {row['lag']} record(s)")
    if row.get("lost"):
        found.append(f"{row['lost']} offset(s) aged out of the source before replication")
    return found


def roll_up(statuses) -> str:
    statuses = set(statuses)
    for status in ("error", "findings", "deferred"):
        if status in statuses:
            return status
    return "ok"


def run_status(flows: list[dict]) -> str:
    # A deferred partition is not a failure of the run: the run itself is ok.
    status = roll_up(f["status"] for f in flows)
    return "ok" if status == "deferred" else status


def totals(flows: list[dict]) -> dict:
    out = {c: 0 for c in COUNTS}
    out.update({"partitions": 0, "partitionsWithFindings": 0, "partitionsDeferred": 0, "errors": 0})
    for flow in flows:
        out["errors"] += len(flow["errors"])
        for topic in flow["topics"]:
            for p in topic["partitions"]:
                out["partitions"] += 1
                out["partitionsWithFindings"] += p["status"] == "findings"
                out["partitionsDeferred"] += p["status"] == "deferred"
                for c in COUNTS:
                    out[c] += p[c] or 0
    return out


def detail_rows(report: dict) -> list[dict]:
    """One flat row per partition, for the Parquet detail table."""
    rows = []
    for flow in report["flows"]:
        for topic in flow["topics"]:
            for p in topic["partitions"]:
                rows.append({"run": report["startedAt"], "flow": flow["name"], "sourceTopic": topic["source"],
                             "targetTopic": topic["target"], "compacted": topic["compacted"],
                             **{k: v for k, v in p.items() if k not in ("missingRanges", "findings")},
                             "findings": "; ".join(p["findings"]),
                             "missingRanges": json.dumps(p["missingRanges"])})
    return rows


def write(report: dict, out: Path, spark=None) -> Path:
    """report.json and, with a Spark session, detail.parquet under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.json"
    path.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    rows = detail_rows(report)
    if spark is not None and rows:
        schema = ("run string, flow string, sourceTopic string, targetTopic string, compacted boolean, "
                  "partition int, status string, sourceRecords long, targetRecords long, missing long, "
                  "duplicate long, unexpected long, lag long, lost long, committed long, "
                  "unverifiable string, findings string, missingRanges string")
        columns = [c.split()[0] for c in schema.split(", ")]
        spark.createDataFrame([tuple(r.get(c) for c in columns) for r in rows], schema) \
            .coalesce(1).write.mode("overwrite").parquet(str(out / "detail.parquet"))
    return path


def push_metrics(report: dict, gateway: str, job: str = audit_contract.JOB) -> None:
    """Per flow and topic gauges (partition-level detail stays in the report: label cardinality)."""
    from prometheus_client import CollectorRegistry, Gauge, push_to_gateway
    registry = CollectorRegistry()
    status = Gauge("kafka_replication_audit_status", "0 ok, 1 findings, 2 error", registry=registry)
    status.set(EXIT[report["status"]])
    finished = Gauge("kafka_replication_audit_last_run_timestamp_seconds", "end of the last run", registry=registry)
    finished.set(report["finishedAt"] / 1000)
    gauges = {c: Gauge(f"kafka_replication_audit_{name}", f"{c} in the audited window", ["flow", "topic"],
                       registry=registry)
              for c, name in (("sourceRecords", "source_records"), ("targetRecords", "target_records"),
                              ("missing", "missing_records"), ("duplicate", "duplicate_records"),
                              ("unexpected", "unexpected_records"), ("lag", "lag_records"))}
    age = Gauge("kafka_replication_audit_heartbeat_age_seconds", "age of the newest replicated heartbeat",
                ["flow"], registry=registry)
    checkpoint_age = Gauge("kafka_replication_audit_checkpoint_age_seconds", "age of the group's newest checkpoint",
                           ["flow", "group"], registry=registry)
    behind = Gauge("kafka_replication_audit_checkpoint_behind_records",
                   "records the group committed on the source past its checkpoints", ["flow", "group"],
                   registry=registry)
    stale = Gauge("kafka_replication_audit_checkpoint_stale", "1: the group's checkpoints are stale (a finding)",
                  ["flow", "group"], registry=registry)
    expiry = Gauge("kafka_replication_audit_certificate_expiry_timestamp_seconds",
                   "when the stack's copy of a cluster's CA or client certificate expires", ["cluster", "item"],
                   registry=registry)
    for certificate in report.get("certificates") or []:
        expiry.labels(certificate["cluster"], certificate["item"]).set(certificate["notAfter"] / 1000)
    for flow in report["flows"]:
        for group in flow.get("checkpoints") or []:
            checkpoint_age.labels(flow["name"], group["group"]).set(group["ageSeconds"])
            behind.labels(flow["name"], group["group"]).set(group["behindRecords"])
            stale.labels(flow["name"], group["group"]).set(1 if group["findings"] else 0)
        for topic in flow["topics"]:
            for c, gauge in gauges.items():
                gauge.labels(flow["name"], topic["source"]).set(sum(p[c] or 0 for p in topic["partitions"]))
        fresh = flow.get("freshness") or {}
        if fresh.get("ageSeconds") is not None:
            age.labels(flow["name"]).set(fresh["ageSeconds"])
    push_to_gateway(gateway, job=job, registry=registry, timeout=10)
