"""The replication audit job: `python -m spark.audit --config audit.json --out DIR` (also runs
under spark-submit). See docs/audit.md. `python -m spark.audit failover ...` checks whether a flow
is ready to fail over (spark/failover.py, docs/operations.md); `python -m spark.audit lag ...` reads
the flows' lag now (spark/lag.py, docs/status.md).

For every flow of the audit configuration (infra/plan/audit.py, rendered into the audit ConfigMap):
  1. offsets audit: each MirrorSourceConnector's committed offsets (Connect REST API) against
     the source partitions' earliest/end offsets (spark/offsets.py);
  2. data audit of the window [until - lookback, until): the source records against the target
     records (spark/data.py), per partition;
  3. freshness: the newest heartbeat replicated to the target for the flow's source alias;
  4. checkpoints: per consumer group, the age of its newest checkpoint and how far its commits on
     the source are past it (the failover readiness check's view, on the audit's schedule).
Anything it cannot read makes the flow `error`, never `ok`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from contract import audit as audit_contract, lastrun
from contract.audit import OFFSET_LAG_MAX_DEFAULT
from spark import data, report
from spark.job import Clusters, CouldNotAudit, check_out, read_config, spark_session
from spark.offsets import PAST_END, Status, Unverifiable, audit_flow as offsets_audit, fetch_connect_offsets
from spark.topicfilter import TopicFilters

HEARTBEAT_TAIL = 1000  # records read from the end of each heartbeats partition


@dataclass(frozen=True)
class Window:
    start_ms: int
    until_ms: int
    bucket_ms: int


def _topic_pairs(flow: dict, source_topics: dict, target_topics: dict, filters: TopicFilters) -> list[dict]:
    """Each replicated source topic with its target name and the connector that selects it."""
    pairs = []
    for topic, info in sorted(source_topics.items()):
        connector = selecting(flow, topic, filters)
        if connector is not None:
            target = flow["topicPrefix"] + topic
            pairs.append({"source": topic, "target": target, "info": info, "connector": connector,
                          "targetInfo": target_topics.get(target)})
    return pairs


def selecting(flow: dict, topic: str, filters: TopicFilters) -> dict | None:
    """The flow's source connector that replicates `topic` (the first whose filters select it)."""
    return next((c for c in flow["connectors"] if filters.selects(c, flow["excludeTopics"]["source"], topic)), None)


def _sides(flow: dict, pairs: list[dict]) -> tuple[data.Side, data.Side]:
    loop = flow["loopHeaders"] or {}
    strip = sorted({h for c in flow["connectors"] for h in c["stripHeaders"]} | ({loop["added"]} if loop else set()))
    valueless = tuple(sorted(p["source"] for p in pairs if not p["connector"]["compareValue"]))
    names = {p["target"]: p["source"] for p in pairs} if flow["topicPrefix"] else None
    return (data.Side(drop_header=loop.get("dropped"), strip_headers=tuple(strip), valueless_topics=valueless),
            data.Side(topic_names=names, require_header=loop.get("added"), strip_headers=tuple(strip),
                      valueless_topics=valueless))


def _blank(partition: int) -> dict:
    return {"partition": partition, "status": "ok", "sourceRecords": 0, "targetRecords": 0, "missing": 0,
            "duplicate": 0, "unexpected": 0, "missingRanges": [], "lag": None, "lost": 0, "committed": None,
            "unverifiable": None, "deferred": None, "findings": []}


def audit_one_flow(flow: dict, source, target, fetch, settings: dict, window: Window, now_ms: int,
                   filters: TopicFilters) -> dict:
    out = {"name": flow["name"], "sourceAlias": flow["sourceAlias"], "targetAlias": flow["targetAlias"],
           "replicationPolicy": flow["replicationPolicy"], "status": "ok", "errors": [], "topics": [],
           "freshness": None, "checkpoints": None, "window": {"from": window.start_ms, "until": window.until_ms}}
    try:
        source_topics, target_topics = source.topics(), target.topics()
        pairs = _topic_pairs(flow, source_topics, target_topics, filters)
        offsets = offsets_audit(flow, fetch, lambda: source.watermarks(source_topics), filters,
                                settings["thresholds"]["maxLag"])
        marks = {(r.topic, r.partition): r for r in offsets}
        target_marks = target.watermarks({p["target"]: p["targetInfo"] for p in pairs if p["targetInfo"]})
        out["topics"] = _data_audit(flow, pairs, source, target, marks, target_marks, window)
        out["freshness"] = _freshness(flow, target, target_topics, now_ms, settings["thresholds"])
        out["checkpoints"] = _checkpoints(flow, source, target, filters, now_ms, settings["thresholds"])
    except Unverifiable as exc:
        out["errors"].append(str(exc))
    except Exception as exc:  # a Spark or client failure is an audit error, reported, never ok
        out["errors"].append(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    aggregation = flow.get("aggregation", False)
    for topic in out["topics"]:
        for p in topic["partitions"]:
            p["findings"] = report.judge_partition(p, settings["thresholds"], aggregation)
            p["status"] = ("findings" if p["findings"] else "deferred" if p["deferred"] else "ok")
        topic["status"] = report.roll_up(p["status"] for p in topic["partitions"])
    statuses = [t["status"] for t in out["topics"]]
    if out["freshness"] and out["freshness"]["findings"]:
        statuses.append("findings")
    if any(g["findings"] for g in out["checkpoints"] or []):
        statuses.append("findings")
    out["status"] = "error" if out["errors"] else report.roll_up(statuses)
    return out


def _data_audit(flow, pairs, source, target, marks, target_marks, window: Window) -> list[dict]:
    topics, windowed, compacted = [], {}, {}
    s_ranges, t_ranges, s_full, t_full, until = {}, {}, {}, {}, {}
    for pair in pairs:
        s_name, t_name, n = pair["source"], pair["target"], pair["info"].partitions
        rows = {}
        ends = {p: marks[(s_name, p)].end for p in range(n)}
        times = [window.start_ms, window.until_ms]
        starts, stops = source.offsets_for_times(s_name, n, times, ends) if not pair["info"].compacted else (None, None)
        t_info = pair["targetInfo"]
        if t_info and not pair["info"].compacted:
            t_ends = {p: target_marks[(t_name, p)][1] for p in range(t_info.partitions)}
            t_starts, t_stops = target.offsets_for_times(t_name, t_info.partitions, times, t_ends)
        for p in range(n):
            m = marks[(s_name, p)]
            row = rows[p] = _blank(p)
            row.update(lag=m.lag, lost=m.lost, committed=m.committed)
            replicated = -1 if m.committed is None else m.committed + 1  # first offset not yet replicated
            if m.status is Status.offset_past_end:
                # The records on either side are not each other's: nothing to compare.
                row["unverifiable"] = PAST_END.format(committed=m.committed, end=m.end)
                continue
            if t_info is None or p >= t_info.partitions:
                if m.end > m.earliest:
                    row["unverifiable"] = (f"target topic {t_name} is missing" if t_info is None
                                           else f"target topic {t_name} has no partition {p}")
                continue
            t_earliest = target_marks[(t_name, p)][0]
            if pair["info"].compacted:
                s_full[(s_name, p)] = (m.earliest, m.end)
                t_full[(t_name, p)] = target_marks[(t_name, p)]
                until[(s_name, p)] = max(replicated, 0)
                continue
            s0, s1, t0, t1 = starts[p], stops[p], t_starts[p], t_stops[p]
            if s1 > s0 and replicated < s1:
                row["deferred"] = f"replicated up to offset {replicated}, the window ends at {s1}"
            elif (s1 > s0 and s0 == m.earliest > 0) or (t1 > t0 and t0 == t_earliest > 0):
                # The first records of the window may be gone: an incomplete range is never compared.
                side = "source" if s0 == m.earliest > 0 else "target"
                row["unverifiable"] = f"the window starts before the {side}'s retained records"
            else:
                s_ranges[(s_name, p)], t_ranges[(t_name, p)] = (s0, s1), (t0, t1)
        (compacted if pair["info"].compacted else windowed)[s_name] = rows
        topics.append({"source": s_name, "target": t_name, "compacted": pair["info"].compacted,
                       "connector": pair["connector"]["name"], "partitions": list(rows.values())})
    s_side, t_side = _sides(flow, pairs)
    if s_ranges:
        _windowed(source, target, s_side, t_side, s_ranges, t_ranges, window, windowed, flow["topicPrefix"])
        _promised(s_ranges, t_ranges, windowed)
    if s_full:
        diffs = data.diff_compacted(data.prepare(source.read(s_full), s_side, window.bucket_ms),
                                    data.prepare(target.read(t_full), t_side, window.bucket_ms), until)
        for (topic, p), d in diffs.items():
            row = compacted[topic][p]
            row.update(sourceRecords=d["sourceRecords"], targetRecords=d["targetRecords"], missing=d["missing"],
                       unexpected=d["unexpected"], missingRanges=d["missingRanges"][:data.MAX_RANGES])
    return topics


def _windowed(source, target, s_side, t_side, s_ranges, t_ranges, window, rows, prefix) -> None:
    s = data.prepare(source.read(s_ranges), s_side, window.bucket_ms)
    t = data.prepare(target.read(t_ranges), t_side, window.bucket_ms)
    tier1 = data.compare_buckets(s, t)
    for (topic, p), tot in tier1.totals.items():
        if topic in rows and p in rows[topic]:
            rows[topic][p].update(sourceRecords=tot["sourceRecords"], targetRecords=tot["targetRecords"],
                                  buckets=tot["buckets"], bucketsDiffering=tot["bucketsDiffering"])
    if not tier1.differing:
        return
    # Tier 2: only the differing buckets' offset spans are read again.
    s2 = source.read(data.tier2_ranges(tier1.differing, "s"))
    t2 = target.read({(prefix + t, p): r for (t, p), r in data.tier2_ranges(tier1.differing, "t").items()})
    diffs = data.diff_records(data.prepare(s2, s_side, window.bucket_ms), data.prepare(t2, t_side, window.bucket_ms),
                              tier1.differing)
    for (topic, p), d in diffs.items():
        if topic in rows and p in rows[topic]:
            rows[topic][p].update(missing=d.missing, duplicate=d.duplicate, unexpected=d.unexpected,
                                  missingRanges=d.missing_ranges[:data.MAX_RANGES])


def _promised(s_ranges: dict, t_ranges: dict, rows: dict) -> None:
    """Offsets in the window with no record read: the data is not where the metadata says (a
    missing file, an unreadable segment). Zero against zero would otherwise look like ok."""
    for ((topic, p), (s0, s1)), (_t, (t0, t1)) in zip(s_ranges.items(), t_ranges.items()):
        row = rows[topic][p]
        for side, start, stop, read in (("source", s0, s1, row["sourceRecords"]),
                                        ("target", t0, t1, row["targetRecords"])):
            if stop > start and not read:
                row["unverifiable"] = (f"the {side}'s offsets {start}-{stop} lie in the window but no record "
                                       "could be read there")
                break


def _freshness(flow, target, target_topics, now_ms, thresholds) -> dict | None:
    topic = flow["heartbeats"]["target"]
    if not topic:
        return None  # the flow runs no heartbeat connector
    result = {"topic": topic, "newest": None, "ageSeconds": None, "findings": []}
    info = target_topics.get(topic)
    if info is None:
        result["findings"].append(f"no heartbeats topic {topic} on the target")
        return result
    marks = target.watermarks({topic: info})
    ranges = {tp: (max(lo, hi - HEARTBEAT_TAIL), hi) for tp, (lo, hi) in marks.items()}
    newest = data.heartbeat_times(target.read(ranges)).get(flow["sourceAlias"])
    if newest is None:
        result["findings"].append(f"no heartbeat from {flow['sourceAlias']} in {topic}")
        return result
    result["newest"], result["ageSeconds"] = newest, round((now_ms - newest) / 1000, 3)
    if result["ageSeconds"] > thresholds["maxHeartbeatAgeSeconds"]:
        result["findings"].append(f"newest heartbeat is {result['ageSeconds']:.0f} s old "
                                  f"(threshold {thresholds['maxHeartbeatAgeSeconds']} s)")
    return result


def _checkpoints(flow, source, target, filters, now_ms, thresholds) -> list[dict] | None:
    """The failover readiness check's view of checkpoints, on the audit's schedule: per group of
    the flow's checkpoints, their age and how far its commits on the source are past them
    (spark/checkpoints.py checkpoint_staleness). None where nothing is read: the flow runs no
    checkpoints, or the clusters are a sample's Parquet dumps (no groups there)."""
    from spark import checkpoints as ckpt, live
    if not ckpt.checkpoints_topic(flow) or getattr(target, "client_config", None) is None \
            or getattr(source, "client_config", None) is None:
        return None
    on_target = live.LiveCluster(target, target.client_config, flow["targetAlias"], "target")
    on_source = live.LiveCluster(source, source.client_config, flow["sourceAlias"], "source")
    checkpoints = live.flow_checkpoints(flow, on_target, filters)
    committed = {g: on_source.group_offsets(g) for g in sorted({g for g, _, _ in checkpoints})}

    def offset_lag_max(topic: str) -> int:
        connector = selecting(flow, topic, filters) or {}
        return int(connector.get("offsetLagMax", OFFSET_LAG_MAX_DEFAULT))
    return ckpt.checkpoint_staleness(flow, checkpoints, committed, now_ms,
                                         thresholds.get("maxCheckpointAgeSeconds"), offset_lag_max)


def run(config: dict, clusters: dict, fetch, window: Window, now_ms: int, filters: TopicFilters,
        flows: list[str] | None = None) -> dict:
    """The report for every flow (or the named ones). `clusters`: alias -> cluster reader;
    `filters` answers which topics each connector replicates (Java's regexes, the driver's JVM)."""
    started = int(time.time() * 1000)
    settings = config["settings"]
    chosen = [f for f in config["flows"] if not flows or f["name"] in flows]
    if not chosen:
        raise CouldNotAudit("nothing to audit: " + (f"no flow named {', '.join(sorted(flows))} in the configuration"
                                                    if flows else "the configuration has no flows"))
    results = []
    for flow in chosen:
        try:
            source, target = clusters[flow["sourceAlias"]], clusters[flow["targetAlias"]]
        except Unverifiable as exc:
            results.append({"name": flow["name"], "status": "error", "errors": [str(exc)], "topics": [],
                            "freshness": None, "checkpoints": None})
            continue
        results.append(audit_one_flow(flow, source, target, fetch, settings, window, now_ms, filters))
    return {"version": 1, "status": report.run_status(results), "startedAt": started,
            "finishedAt": int(time.time() * 1000), "window": {"from": window.start_ms, "until": window.until_ms},
            "thresholds": settings["thresholds"], "totals": report.totals(results), "flows": results}


# ----------------------------------------------------------------- command line


def local_clusters(spark, root: Path) -> dict:
    """The Parquet dumps of a sample (infra/tools/sample.py): <root>/kafka/<alias>/."""
    from spark.clusters import ParquetCluster
    return Clusters(lambda alias: ParquetCluster(spark, root / "kafka" / alias))


def local_fetch(root: Path):
    """Connect REST offsets payloads recorded as <root>/connect/<connector>.json."""
    def fetch(rest_url: str, connector: str) -> dict:
        path = root / "connect" / f"{connector}.json"
        if not path.exists():
            raise Unverifiable(f"{rest_url}/connectors/{connector}/offsets: no recorded payload {path}")
        return json.loads(path.read_text())
    return fetch


# Where the kubelet reads the container's termination message (contract/lastrun.py), and where
# `kafka-replication status` finds the last run on the pod's status.
TERMINATION_LOG = Path(lastrun.TERMINATION_LOG)


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m spark.audit", description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, help="the audit configuration (JSON); default: <local>/audit.json")
    ap.add_argument("--out", type=Path, required=True, help="directory for report.json and detail.parquet")
    ap.add_argument("--local", type=Path, help="read Parquet dumps instead of Kafka (a sample from infra.tools.sample): "
                                               "<local>/kafka/<alias>/, Connect offsets from <local>/connect/")
    ap.add_argument("--credentials", type=Path, default=Path(audit_contract.CREDENTIALS_DIR),
                    help="directory of <alias>/<file> credentials (mounted Secrets)")
    ap.add_argument("--until-ms", type=int, help="window end (epoch ms); default: now - graceMinutes")
    ap.add_argument("--from-ms", type=int, help="window start (epoch ms); default: until - lookbackMinutes")
    ap.add_argument("--now-ms", type=int, help="the time heartbeat ages are measured at; default: now")
    ap.add_argument("--flow", action="append", help="audit only this flow (repeatable)")
    ap.add_argument("--master", help="Spark master; default: spark-submit's, else local[*]")
    ap.add_argument("--push", action="store_true", help="push metrics to settings.pushgateway when set")
    ap.add_argument("--runs", action="store_true",
                    help="keep every run: write to <out>/runs/<UTC time>/ and copy the report to <out>/latest/")
    ap.add_argument("--termination-log", type=Path, default=TERMINATION_LOG,
                    help="where to write the run's summary (contract/lastrun.py) when the file exists: the "
                         f"container's termination message, {TERMINATION_LOG} in a pod (the kubelet creates it)")
    return ap.parse_args(argv)


def termination_message(result: dict, path: Path) -> None:
    """The run's summary into the container's termination message; only a file the kubelet made
    (outside a pod there is none, and /dev is no place to create one). Best effort: the report
    is the record."""
    if not path.is_file():
        return
    try:
        path.write_text(lastrun.encode(result))
    except OSError as exc:
        print(f"warning: could not write the termination message {path}: {exc}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["failover"]:
        # The failover readiness of a flow: the same configuration, clients and offsets audit.
        from spark import failover
        return failover.main(argv[1:])
    if argv[:1] == ["lag"]:
        # Live lag of the flows (kafka-replication lag): the offsets audit and the checkpoints, now.
        from spark import lag
        return lag.main(argv[1:])
    args = parse_args(argv)
    try:
        return _main(args)
    except CouldNotAudit as exc:
        reason = str(exc)
    except Exception as exc:  # a crash is "could not audit", never "findings" (1)
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    print(f"audit error: could not audit: {reason}", file=sys.stderr)
    _error_report(args.out, reason, args.termination_log)
    return report.EXIT["error"]


def _error_report(out: Path, reason: str, termination_log: Path) -> None:
    """The reason in report.json too, when the folder can be written: dashboards read that; and
    in the termination message."""
    now = int(time.time() * 1000)
    result = {"version": 1, "status": "error", "error": reason, "startedAt": now, "finishedAt": now,
              "flows": [], "totals": report.totals([])}
    termination_message(result, termination_log)
    try:
        report.write(result, out)
    except OSError:
        pass


def _main(args) -> int:
    config_path = args.config or (args.local / audit_contract.CONFIG_FILE if args.local else None)
    if config_path is None:
        raise CouldNotAudit("--config (or --local) is required")
    check_out(args.out)
    config = read_config(config_path)
    if args.flow:
        unknown = sorted(set(args.flow) - {f["name"] for f in config["flows"]})
        if unknown:
            raise CouldNotAudit(f"no flow named {', '.join(unknown)} in the configuration")
    w = config["settings"]["window"]
    # A sample pins its window and clock (window.json); the command line wins over both.
    pinned = {}
    if args.local and (args.local / "window.json").exists():
        try:
            pinned = json.loads((args.local / "window.json").read_text())
        except (OSError, ValueError) as exc:
            raise CouldNotAudit(f"cannot read {args.local / 'window.json'}: {exc}") from None
    now = args.now_ms or pinned.get("now") or int(time.time() * 1000)
    until = args.until_ms or pinned.get("until") or now - w["graceMinutes"] * 60_000
    start = args.from_ms or pinned.get("from") or until - w["lookbackMinutes"] * 60_000
    if start >= until:
        raise CouldNotAudit(f"an empty window: from {start} is not before until {until}")
    window = Window(start, until, w["bucketSeconds"] * 1000)
    from pyspark.sql import SparkSession
    owned = SparkSession.getActiveSession() is None  # an embedding caller keeps its session
    spark = spark_session(args.master or (None if _under_spark_submit() else "local[*]"))
    try:
        if args.local:
            clusters, fetch = local_clusters(spark, args.local), local_fetch(args.local)
        else:
            from spark.clusters import KafkaCluster, librdkafka_config, spark_kafka_options

            def make(alias):
                cluster = config["clusters"][alias]
                creds = args.credentials / alias
                return KafkaCluster(spark, librdkafka_config(cluster, creds), spark_kafka_options(cluster, creds))
            clusters, fetch = Clusters(make), fetch_connect_offsets
        result = run(config, clusters, fetch, window, now, java_filters(spark), args.flow)
        if not args.local:
            result["certificates"] = certificates(config, args.credentials)
        out = args.out / "runs" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(result["startedAt"] / 1000)) \
            if args.runs else args.out
        path = report.write(result, out, spark)
        if args.runs:
            report.write(result, args.out / "latest")
    finally:
        if owned:
            spark.stop()
    if args.push and config["settings"].get("pushgateway"):
        try:
            report.push_metrics(result, config["settings"]["pushgateway"])
        except OSError as exc:  # metrics are best effort; the report is the record
            print(f"warning: could not push metrics: {exc}", file=sys.stderr)
    termination_message(result, args.termination_log)
    print(summary(result, path))
    return report.EXIT[result["status"]]


def certificates(config: dict, credentials: Path) -> list[dict]:
    """When each cluster's certificate items expire (spark/clusters.py certificate_expiries), for
    the report and the pushed metrics. One that cannot be read is said on stderr and left out: the
    audit's own connections to that cluster say what is wrong with it."""
    from spark.clusters import certificate_expiries
    out = []
    for alias, cluster in sorted(config["clusters"].items()):
        try:
            found = certificate_expiries(cluster, credentials / alias)
        except Unverifiable as exc:
            print(f"warning: cluster {alias}: {exc}", file=sys.stderr)
            continue
        out += [{"cluster": alias, "item": item, "notAfter": seconds * 1000} for item, seconds in sorted(found.items())]
    return out


def java_filters(spark) -> TopicFilters:
    """Topic filters answered by the Spark driver's JVM: Kafka's own regex engine."""
    return TopicFilters(spark.sparkContext._jvm)


def _under_spark_submit() -> bool:
    return "SPARK_SUBMIT" in os.environ or any(k.startswith("PYSPARK_GATEWAY") for k in os.environ)


def summary(result: dict, path: Path) -> str:
    t = result["totals"]
    lines = [f"audit {result['status']}: {len(result['flows'])} flow(s), {t['partitions']} partition(s), "
             f"{t['sourceRecords']} source / {t['targetRecords']} target records; missing {t['missing']}, "
             f"duplicate {t['duplicate']}, unexpected {t['unexpected']}, lag {t['lag']}; "
             f"{t['partitionsDeferred']} deferred, {t['errors']} error(s)"]
    for flow in result["flows"]:
        lines.append(f"  {flow['name']}: {flow['status']}")
        lines += [f"    error: {e}" for e in flow["errors"]]
        for topic in flow["topics"]:
            for p in topic["partitions"]:
                for finding in p["findings"]:
                    lines.append(f"    {topic['source']}[{p['partition']}] -> {topic['target']}: {finding}")
        for finding in (flow.get("freshness") or {}).get("findings", []):
            lines.append(f"    heartbeats: {finding}")
        for group in flow.get("checkpoints") or []:
            lines += [f"    checkpoints: {finding}" for finding in group["findings"]]
    lines.append(f"report: {path}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
