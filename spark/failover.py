"""Failover readiness of one flow: `python -m spark.audit failover --config audit.json --flow NAME
[--group G ...] [--procedure continuous|cutoff|disaster] [--out DIR] [--json]` (docs/operations.md,
"Failover and failback").

What it reads, all live: the replication lag of every source partition (the offsets audit,
spark/offsets.py: the source connectors' committed offsets against the source's end offsets), the
flow's checkpoint connectors on their Connect REST APIs (one per Connect cluster of the flow: a flow
split over several, `connectClusters`, runs one on each; state, `emit.checkpoints.*` and
`sync.group.offsets.*` as each runs them), the checkpoints in the target's
`<source>.checkpoints.internal` topic decoded as Kafka writes them (committed records only: under
exactly-once the checkpoint connector writes in transactions), and each consumer group's
committed offsets and activity on both clusters. It judges them against the procedure (the flow's
own unless `--procedure` says another) and answers ready (exit 0), not ready with the findings
(exit 1), or could not tell (exit 2), as the audit does.

Decisions the documents imply, written down:
- continuous: needs the Default policy, every checkpoint connector of the flow running with
  checkpoints and group offset sync (the wait is the longest of theirs);
  each group inactive on both clusters, its newest checkpoint translating exactly the offset the
  group committed on the source, and that translation committed into the target group (the
  documents' wait, `2 * (emit + sync)`, is how long that takes; the check looks at the result);
  replication lag within the audit's `maxLag` (replication goes on during this procedure);
- cutoff: replication caught up (lag 0), every group drained (its committed offset at the end
  of each partition it reads) and stopped on the source; under Identity the target groups must
  be inactive too (they are reset to the latest offsets there). Checkpoints are shown, not judged;
- disaster: the source is not read at all; the target groups' synced offsets against the newest
  checkpoints, and the groups inactive on the target.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from contract import audit as audit_contract
from spark.checkpoints import Stamped, checkpoints_topic
from spark.job import Clusters, CouldNotAudit, read_config, report_command
from spark.live import ClusterUnverifiable, GroupState, LiveCluster, flow_checkpoints
from spark.offsets import PAST_END, PartitionAudit, Status, Unverifiable, audit_flow, connect_get

PROCEDURES = ("continuous", "cutoff", "disaster")
EXIT = {"ready": 0, "not-ready": 1, "error": 2}
REPORT_FILE = "failover.json"
CHECKPOINT_CLASS = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
# MirrorCheckpointConfig defaults (3.8.0 through 4.x): emit on, every 60 s; sync off, every 60 s.
EMIT_DEFAULT = (True, 60)
SYNC_DEFAULT = (False, 60)


# ----------------------------------------------------------------- what was observed


@dataclass(frozen=True)
class CheckpointConnector:
    name: str
    state: str                  # the connector's (RUNNING, PAUSED, STOPPED, FAILED...)
    tasks: tuple[str, ...]      # each task's state
    emit_seconds: int | None    # None: checkpoints are not emitted
    sync_seconds: int | None    # None: group offsets are not synced

    @property
    def running(self) -> bool:
        return self.state == "RUNNING" and bool(self.tasks) and all(t == "RUNNING" for t in self.tasks)


@dataclass
class Observed:
    """Everything read for one flow; None where the procedure does not read it (the source, on
    disaster). `connectors`: the flow's checkpoint connectors by name, none when it runs none."""
    connectors: list[CheckpointConnector]
    checkpoints: dict[tuple[str, str, int], Stamped]
    groups: list[str]
    target_offsets: dict[str, dict[tuple[str, int], int]]
    target_states: dict[str, GroupState]
    replication: list[PartitionAudit] | None = None
    source_offsets: dict[str, dict[tuple[str, int], int]] | None = None
    source_states: dict[str, GroupState] | None = None
    source_ends: dict[tuple[str, int], int] | None = None
    errors: list[str] = field(default_factory=list)
    # Under a prefixing policy: each active topic of the flow (a replica's name less the prefix)
    # that the target does not have, with its replica's partition count. None: not read.
    missing_active: list[tuple[str, int]] | None = None
    # Under identity: each partition's end offset on the target of the flow's topics, where an
    # identity failback's reversed flow starts (docs/operations.md#controlled-failback). None: not read.
    target_ends: dict[tuple[str, int], int] | None = None


def _flag(config: dict, key: str, default: bool) -> bool:
    value = config.get(key)
    return default if value is None else str(value).strip().lower() == "true"


def _seconds(config: dict, key: str, default: int, name: str) -> int:
    value = config.get(key)
    if value is None:
        return default
    try:
        return int(str(value).strip())
    except ValueError:
        raise Unverifiable(f"checkpoint connector {name}: {key} is {value!r}, not a number of seconds") from None


def checkpoint_connector(name: str, info: dict) -> CheckpointConnector:
    """The checkpoint connector as it runs, from `GET /connectors?expand=info&expand=status`:
    Kafka's defaults where its configuration leaves a key out (MirrorCheckpointConfig: a
    disabled feature or a negative interval means none)."""
    config, status = info["info"]["config"], info["status"]
    emit = _seconds(config, "emit.checkpoints.interval.seconds", EMIT_DEFAULT[1], name)
    sync = _seconds(config, "sync.group.offsets.interval.seconds", SYNC_DEFAULT[1], name)
    return CheckpointConnector(
        name, status["connector"]["state"], tuple(t["state"] for t in sorted(status["tasks"], key=lambda t: t["id"])),
        emit if _flag(config, "emit.checkpoints.enabled", EMIT_DEFAULT[0]) and emit >= 0 else None,
        sync if _flag(config, "sync.group.offsets.enabled", SYNC_DEFAULT[0]) and sync >= 0 else None)


def find_checkpoint_connectors(flow: dict, get: Callable[[str, str], Any]) -> list[CheckpointConnector]:
    """The flow's MirrorCheckpointConnectors, by name: each flow has Connect clusters of its own, and
    the plan runs one checkpoint connector on each (infra/plan/connectors.py `connectors`: a flow split
    over several Connect clusters has as many; none when checkpoints are off)."""
    found = []
    for url in sorted({c["restUrl"] for c in flow["connectors"]}):
        listing = get(url, "/connectors?expand=info&expand=status")
        found += [checkpoint_connector(name, body) for name, body in sorted(listing.items())
                  if body["info"]["config"].get("connector.class") == CHECKPOINT_CLASS]
    return sorted(found, key=lambda c: c.name)


def _synced(connectors: list[CheckpointConnector]) -> bool:
    """Every checkpoint connector emits checkpoints and syncs group offsets (each one covers the
    topics of its own Connect cluster: one without leaves those groups without synced offsets)."""
    return bool(connectors) and all(c.emit_seconds is not None and c.sync_seconds is not None for c in connectors)


def allowed(policy: str, connectors: list[CheckpointConnector]) -> list[str]:
    """The procedures the flow allows as it runs (infra/plan/failover.py decides the same from the
    topology; the tests hold the two equal)."""
    return (["continuous"] if policy == "default" and _synced(connectors) else []) + ["cutoff", "disaster"]


def wait_seconds(connectors: list[CheckpointConnector]) -> int | None:
    """The documents' wait, 2 * (emit.checkpoints.interval.seconds + sync.group.offsets.interval.seconds),
    of the slowest checkpoint connector: every group's offsets are synced only after it. None when
    one of them does not emit or sync."""
    if not _synced(connectors):
        return None
    return max(2 * ((c.emit_seconds or 0) + (c.sync_seconds or 0)) for c in connectors)


# ----------------------------------------------------------------- the verdict


def _replication_findings(rows: list[PartitionAudit], procedure: str, max_lag: int) -> list[str]:
    found = []
    for r in rows:
        where = f"{r.topic}[{r.partition}]"
        if r.status is Status.retention_loss:
            found.append(f"{where}: {r.lost} offset(s) aged out of the source before replication")
        elif r.status is Status.offset_past_end:
            found.append(f"{where}: {PAST_END.format(committed=r.committed, end=r.end)}")
        elif r.status is Status.never_replicated:
            found.append(f"{where}: never replicated ({r.end - r.earliest} record(s) on the source)")
        elif r.status is Status.lagging:
            limit = "" if procedure == "cutoff" else f" (threshold {max_lag})"
            found.append(f"{where}: replication is {r.lag} record(s) behind the source{limit}")
    return found


def _partition_findings(row: dict, procedure: str, synced: bool, names: dict) -> list[str]:
    found = []
    committed, stamped, target = row["sourceCommitted"], row["checkpoint"], row["targetCommitted"]
    if procedure == "cutoff":
        end = row["sourceEnd"]
        if committed is not None and end is not None and end > committed:
            found.append(f"{end - committed} record(s) left to read on {names['source']}: let the consumers "
                         "drain first")
        return found
    if stamped is None:
        if committed is not None:
            found.append(f"no checkpoint yet for offset {committed} committed on {names['source']}: on "
                         f"{names['target']} the group would start where its auto.offset.reset says")
        return found
    upstream, translated = stamped["upstream"], stamped["translated"]
    if committed is not None and upstream != committed:
        found.append(f"the newest checkpoint ({stamped['ageSeconds']:.0f} s old) translates offset {upstream}, "
                     f"the group committed {committed} on {names['source']}: checkpoints have not caught up")
    elif synced:
        if target is None:
            found.append(f"not synced: no committed offset on {names['target']} (translated offset {translated})")
        elif target < translated:
            found.append(f"not synced: committed {target} on {names['target']}, translated offset {translated}")
        elif target > translated:
            found.append(f"committed {target} on {names['target']}, past the translated offset {translated}: "
                         "the group has read the replica there")
    return found


def judge(flow: dict, procedure: str, seen: Observed, now_ms: int, max_lag: int) -> dict:
    """The readiness report of one flow for `procedure`, from what was observed. Pure."""
    names = {"source": flow["sourceAlias"], "target": flow["targetAlias"]}
    connectors = seen.connectors
    shown = [{"name": c.name, "state": c.state, "tasks": list(c.tasks), "emitSeconds": c.emit_seconds,
              "syncSeconds": c.sync_seconds} for c in connectors]
    report: dict = {
        "version": 1, "flow": flow["name"], "sourceAlias": names["source"], "targetAlias": names["target"],
        "replicationPolicy": flow["replicationPolicy"], "procedure": procedure,
        "procedures": allowed(flow["replicationPolicy"], connectors), "waitSeconds": wait_seconds(connectors),
        "checkpointsTopic": checkpoints_topic(flow), "checkedAt": now_ms,
        # The flow's one checkpoint connector (null when it runs none, or several: a split flow's
        # are all in checkpointConnectors, by name).
        "checkpointConnector": shown[0] if len(shown) == 1 else None,
        "checkpointConnectors": shown,
        "replication": None if seen.replication is None else [r.row() for r in seen.replication],
        "groups": [], "findings": [], "errors": list(seen.errors),
        "targetEnds": None if seen.target_ends is None else [
            {"topic": tp[0], "partition": tp[1], "end": end} for tp, end in sorted(seen.target_ends.items())]}
    findings: list[str] = report["findings"]
    if report["errors"]:
        report["verdict"] = "error"  # what could not be read is never judged
        return report
    if procedure == "continuous":
        if flow["replicationPolicy"] != "default":
            findings.append(f"continuous failover needs the default replication policy; this flow uses "
                            f"{flow['replicationPolicy']}: fail over with a cutoff (--procedure cutoff)")
        elif not connectors:
            findings.append(f"the flow runs no checkpoint connector: consumers have no translated offsets on "
                            f"{names['target']}; fail over with a cutoff (--procedure cutoff)")
        for connector in connectors if flow["replicationPolicy"] == "default" else []:
            # Each one checkpoints the groups of its own Connect cluster's topics: each must run.
            if connector.emit_seconds is None or connector.sync_seconds is None:
                off = "checkpoints are not emitted" if connector.emit_seconds is None else "group offset sync is off"
                findings.append(f"checkpoint connector {connector.name}: {off}, so consumers would not find their "
                                f"offsets on {names['target']}; fail over with a cutoff (--procedure cutoff)")
            elif not connector.running:
                findings.append(f"checkpoint connector {connector.name} is {connector.state} (tasks: "
                                f"{', '.join(connector.tasks) or 'none'}): checkpoints and group offset sync do "
                                "not run")
    if seen.replication is not None:
        findings += _replication_findings(seen.replication, procedure, max_lag)
    for topic, partitions in seen.missing_active or []:
        findings.append(f"active topic {topic} does not exist on {names['target']}: create it ({partitions} "
                        f"partition(s), as its replica {flow['topicPrefix']}{topic}) before the consumers move. They "
                        "subscribe to it (failover.topics), are assigned it only once it exists, and with "
                        "auto.offset.reset latest skip what producers write to it before")
    synced = bool(connectors) and all(c.sync_seconds is not None for c in connectors)
    prefix = flow["topicPrefix"]
    for group in seen.groups:
        source_offsets = (seen.source_offsets or {}).get(group, {})
        target_offsets = seen.target_offsets.get(group, {})
        rows: dict[tuple[str, int], dict] = {}

        def row(topic: str, partition: int) -> dict:
            return rows.setdefault((topic, partition), {
                "topic": topic, "targetTopic": prefix + topic, "partition": partition,
                "sourceCommitted": None, "sourceEnd": None, "checkpoint": None, "targetCommitted": None,
                "findings": []})
        for (topic, partition), offset in source_offsets.items():
            r = row(topic, partition)
            r["sourceCommitted"] = offset
            r["sourceEnd"] = (seen.source_ends or {}).get((topic, partition))
        for (g, target_topic, partition), stamped in seen.checkpoints.items():
            if g != group or not target_topic.startswith(prefix):
                continue
            c = stamped.checkpoint
            row(target_topic[len(prefix):], partition)["checkpoint"] = {
                "upstream": c.upstream, "translated": c.downstream, "metadata": c.metadata,
                "timestamp": stamped.timestamp_ms, "ageSeconds": round((now_ms - stamped.timestamp_ms) / 1000, 3)}
        for r in rows.values():
            r["targetCommitted"] = target_offsets.get((r["targetTopic"], r["partition"]))
            r["findings"] = _partition_findings(r, procedure, synced, names)
        source_state = None if seen.source_states is None else seen.source_states.get(group)
        target_state = seen.target_states.get(group)
        entry = {"group": group,
                 "source": None if source_state is None else {"state": source_state.state,
                                                              "members": source_state.members},
                 "target": None if target_state is None else {"state": target_state.state,
                                                              "members": target_state.members},
                 "partitions": [rows[k] for k in sorted(rows)], "findings": []}
        group_findings: list[str] = entry["findings"]
        if not rows:
            group_findings.append(f"no checkpoint on {names['target']}" + (
                "" if seen.source_offsets is None else f" and no committed offset on {names['source']}")
                + " for the flow's topics")
        if source_state is not None and source_state.active and procedure in ("continuous", "cutoff"):
            group_findings.append(f"still active on {names['source']} (state {source_state.state}, "
                                  f"{source_state.members} member(s)): stop its consumers first")
        if target_state is not None and target_state.active and (
                procedure != "cutoff" or flow["replicationPolicy"] == "identity"):
            group_findings.append(f"active on {names['target']} (state {target_state.state}, {target_state.members} "
                                  "member(s)): stop its consumers there first (offsets are synced or reset only "
                                  "into inactive groups)")
        report["groups"].append(entry)
    unready = findings or any(g["findings"] or any(p["findings"] for p in g["partitions"]) for g in report["groups"])
    report["verdict"] = "error" if report["errors"] else "not-ready" if unready else "ready"
    return report


def summary(report: dict) -> str:
    """The report for a person: the verdict, what the procedure needs, every finding."""
    wait = report["waitSeconds"]
    lines = [f"failover {report['verdict']}: flow {report['flow']} ({report['sourceAlias']} -> "
             f"{report['targetAlias']}, {report['replicationPolicy']} policy), procedure {report['procedure']}; "
             f"allowed: {', '.join(report['procedures'])}; wait after stopping consumers: "
             + (f"{wait} s" if wait is not None else "none (no synced group offsets)")]
    lines += [f"  error: {e}" for e in report["errors"]]
    lines += [f"  {f}" for f in report["findings"]]
    for g in report["groups"]:
        lines += [f"  group {g['group']}: {f}" for f in g["findings"]]
        for p in g["partitions"]:
            lines += [f"  group {g['group']} {p['topic']}[{p['partition']}]: {f}" for f in p["findings"]]
    return "\n".join(lines)


def missing_active_topics(flow: dict, partitions: dict[str, int], filters) -> list[tuple[str, int]]:
    """Under a prefixing policy, the flow's replicas on the target (`<prefix><topic>`, the topic
    selected by one of its connectors) whose active topic (`<topic>`) the target lacks, with the
    replica's partition count. Consumers move to the names `failover.topics` gives, the active
    topic among them: subscribed before it exists, a consumer is assigned it only once it does
    (at its next metadata refresh), and with auto.offset.reset latest skips what was written
    before."""
    prefix, never = flow["topicPrefix"], flow["excludeTopics"]["source"]
    if not prefix:
        return []  # identity: the replica is the active topic
    replicas = {name[len(prefix):]: n for name, n in partitions.items() if name.startswith(prefix)}
    return sorted((topic, n) for topic, n in replicas.items() if topic not in partitions
                  and any(filters.selects(c, never, topic) for c in flow["connectors"]))


def identity_ends(flow: dict, target, partitions: dict[str, int], filters) -> dict[tuple[str, int], int] | None:
    """Under identity, the end offset of each partition of the flow's topics on the target (the
    names its connectors select, the target's own internal topics left out): what the old
    target held when the check ran. None under a prefixing policy, whose failback needs none."""
    if flow["topicPrefix"] or flow["replicationPolicy"] != "identity":
        return None
    never = set(flow["excludeTopics"]["source"]) | set(flow["excludeTopics"]["target"])
    mine = {t: n for t, n in partitions.items() if t not in never
            and any(filters.selects(c, sorted(never), t) for c in flow["connectors"])}
    return {tp: end for tp, (_, end) in target.watermarks(mine).items()}


def observe(flow: dict, procedure: str, clusters, get, filters, groups: list[str], max_lag: int) -> Observed:
    """Read what `judge` needs. `clusters[alias]`: a LiveCluster; `get(rest_url, path)`: a Connect
    REST answer; `filters`: spark.topicfilter.TopicFilters."""
    connectors = find_checkpoint_connectors(flow, get)
    target = clusters[flow["targetAlias"]]
    partitions = target.partitions()
    checkpoints = flow_checkpoints(flow, target, filters, partitions)
    missing = missing_active_topics(flow, partitions, filters)
    ends = identity_ends(flow, target, partitions, filters)
    chosen = sorted(set(groups) | ({g for g, _, _ in checkpoints} if not groups else set()))
    if procedure == "disaster":
        # The source is gone: nothing is read there.
        return Observed(connectors, checkpoints, chosen, {g: target.group_offsets(g) for g in chosen},
                        target.group_states(chosen), missing_active=missing, target_ends=ends)
    source = clusters[flow["sourceAlias"]]
    replication = audit_flow(flow, lambda url, name: get(url, f"/connectors/{name}/offsets"),
                             lambda: source.watermarks(source.partitions()), filters,
                             0 if procedure == "cutoff" else max_lag)
    mine = {(r.topic, r.partition) for r in replication}

    def on_mine(group: str) -> dict[tuple[str, int], int]:
        # Only the flow's topics: a group may read others, which this flow does not replicate.
        return {tp: o for tp, o in source.group_offsets(group).items() if tp in mine}
    committed = {g: on_mine(g) for g in chosen}
    if not groups:
        # A group that reads the flow's topics on the source but has no checkpoint (not yet, or
        # outside the checkpoint connector's `groups`) would start on the target where its
        # auto.offset.reset says: it is checked too, and found not ready.
        for g in source.groups():
            found = {} if g in committed else on_mine(g)
            if found:
                committed[g] = found
        chosen = sorted(committed)
    seen = Observed(connectors, checkpoints, chosen, {g: target.group_offsets(g) for g in chosen},
                    target.group_states(chosen), missing_active=missing, target_ends=ends)
    seen.replication = replication
    seen.source_ends = {(r.topic, r.partition): r.end for r in replication}
    seen.source_offsets = {g: committed[g] for g in chosen}
    seen.source_states = source.group_states(chosen)
    return seen


# ----------------------------------------------------------------- command line


def java_filters():
    """Topic filters answered by java.util.regex, as the audit's (spark/topicfilter.py), in a
    plain JVM through py4j: the readiness check needs no Spark."""
    import glob

    from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway
    from pyspark.find_spark_home import _find_spark_home

    from spark.topicfilter import TopicFilters
    jars = sorted(glob.glob(os.path.join(_find_spark_home(), "jars", "py4j-*.jar")))
    if not jars:
        raise Unverifiable("no py4j jar beside PySpark: the topic filters need Java's regex engine")
    port = launch_gateway(jarpath=jars[-1], die_on_exit=True)
    gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port))
    return TopicFilters(gateway.jvm), gateway


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m spark.audit failover", description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, required=True, help="the audit configuration (audit.json)")
    ap.add_argument("--flow", required=True, help="the flow to fail over")
    ap.add_argument("--group", action="append", default=[],
                    help="a consumer group to check (repeatable); default: every group with checkpoints of "
                         "the flow's topics or, but on disaster, offsets committed on them on the source")
    ap.add_argument("--procedure", choices=PROCEDURES,
                    help="the procedure to check for; default: the flow's failover.procedure, else cutoff")
    ap.add_argument("--credentials", type=Path, default=Path(audit_contract.CREDENTIALS_DIR),
                    help="directory of <alias>/<file> credentials (mounted Secrets)")
    ap.add_argument("--out", type=Path, help=f"also write the report to <out>/{REPORT_FILE}")
    ap.add_argument("--json", action="store_true", help="print the JSON report instead of the summary")
    ap.add_argument("--now-ms", type=int, help="the time checkpoint ages are measured at; default: now")
    return ap.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    # A crash is "could not tell", never "not ready".
    return report_command(args.out, lambda: _main(args), "failover error: could not tell", REPORT_FILE,
                          lambda r: json.dumps(r, indent=2, sort_keys=True) if args.json else summary(r), EXIT)


def error_text(exc: Unverifiable, procedure: str) -> str:
    """What could not be read, as the report says it: the disaster procedure reads nothing on the
    source, so it is suggested when the source is what failed."""
    gone = isinstance(exc, ClusterUnverifiable) and exc.role == "source" and procedure != "disaster"
    return f"{exc}" + (" (if the source cluster is gone: --procedure disaster)" if gone else "")


def live_cluster(config: dict, flow: dict, alias: str, credentials: Path) -> LiveCluster:
    """The audit's clients of cluster `alias` in its role in `flow`, with its credential files
    `<credentials>/<alias>/`; what fails names the cluster and its role."""
    from spark.clusters import KafkaCluster, librdkafka_config
    role = "source" if alias == flow["sourceAlias"] else "target"
    try:
        client = librdkafka_config(config["clusters"][alias], credentials / alias)
        return LiveCluster(KafkaCluster(None, client), client, alias, role)
    except Unverifiable as exc:
        raise ClusterUnverifiable(f"{alias} ({role}): {exc}", role) from None


def _main(args) -> dict:
    config = read_config(args.config)
    flows = {f["name"]: f for f in config["flows"]}
    if args.flow not in flows:
        raise CouldNotAudit(f"no flow named {args.flow} in the configuration ({', '.join(sorted(flows))})")
    flow = flows[args.flow]
    procedure = args.procedure or flow.get("failover", {}).get("procedure") or "cutoff"
    now = args.now_ms or int(time.time() * 1000)

    clusters = Clusters(lambda alias: live_cluster(config, flow, alias, args.credentials))
    filters, gateway = java_filters()
    try:
        try:
            seen = observe(flow, procedure, clusters, connect_get, filters, args.group,
                           config["settings"]["thresholds"]["maxLag"])
        except Unverifiable as exc:
            seen = Observed([], {}, [], {}, {}, errors=[error_text(exc, procedure)])
    finally:
        gateway.shutdown()
    return judge(flow, procedure, seen, now, config["settings"]["thresholds"]["maxLag"])
