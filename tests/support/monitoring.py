"""The monitoring tests' shared material: the stacks' rendered rules and dashboards, the series
shaped as a real worker's scrape shows them, and the alert cases they must fire on."""

from __future__ import annotations

import copy
import re

import yaml

from infra.deploy.deployment import prepare
from infra.plan import monitoring
from infra.tools import render
from tests.support.stacks import ROOT, doc_topology

FLOW = "repl-us-west-us-east"


SOURCE_CONNECTOR = f"{FLOW}-source"


MONITORED = {"prometheusOperator": True, "dashboard": True, "labels": {"release": "prometheus"}}


def model_of(topology: dict):
    return prepare(topology, "test")


def plans(topology: dict):
    model, stack_plan, _ = model_of(topology)
    return model, stack_plan, monitoring.plan_monitorings(model, stack_plan)


def monitored(**changes) -> dict:
    topo = doc_topology(**changes)
    topo.setdefault("monitoring", copy.deepcopy(MONITORED))
    return topo


def groups_of(topology: dict) -> list[dict]:
    (plan,) = plans(topology)[2]
    rule = plan.kind("PrometheusRule")
    assert rule is not None
    return rule["spec"]["groups"]


def target_labels(flow: str) -> dict[str, str]:
    """What the Prometheus Operator adds to every series of a PodMonitor's target: here the first
    pod of the Connect cluster named as the flow."""
    return {"namespace": flow, "pod": f"{flow}-connect-0", "container": f"{flow}-connect",
            "endpoint": "tcp-prometheus", "job": "replication-monitoring/kafka-replication"}


TARGET_LABELS = target_labels(FLOW)
# And Prometheus' own, on every scraped series.
SCRAPE_LABELS = frozenset(TARGET_LABELS) | {"instance"}


Series = dict[tuple[str, frozenset[tuple[str, str]]], float]
_SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*')


def exposition(text: str) -> Series:
    """Prometheus' text exposition, as an exporter serves it: (name, labels) -> value."""
    out: Series = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = _SAMPLE.fullmatch(line.strip())
        assert match, f"not a sample line: {line!r}"
        name, labels, value = match.groups()
        pairs = frozenset((k, v.replace('\\"', '"').replace("\\\\", "\\")) for k, v in _LABEL.findall(labels or ""))
        out[(name, pairs)] = float(value)
    return out


_LABEL_VALUES = re.compile(r"^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$")


def all_queries() -> list[str]:
    topo = yaml.safe_load((ROOT / "stacks" / "prod.yaml").read_text())
    rules = [r["expr"] for g in groups_of(topo) for r in g["rules"]]
    board = []
    for query in monitoring.dashboard_queries():
        match = _LABEL_VALUES.match(query)
        board.append(f"count by ({match.group(2)}) ({match.group(1)})" if match else query)
    return rules + [substitute(q) for q in board]


def substitute(query: str) -> str:
    for name in monitoring.VARIABLES:
        query = query.replace(f"${name}", monitoring.ALL_VALUES)
    return query


def stack_objects(stack: str) -> list[dict]:
    """A stack's monitoring objects: dev's as rendered; prod's as planned (its render is the
    program's whole verdict, which other parts of the program decide)."""
    if stack == "dev":
        return render.run(stack, placeholder_secrets=True).objects()
    topo = yaml.safe_load((ROOT / "stacks" / f"{stack}.yaml").read_text())
    return [o for p in plans(topo)[2] for o in p.objects]


# The promtool unit tests: the documents' flow on its default thresholds, its checkpoint connector
# stopped by the topology (so that a stopped connector that should be stopped fires nothing), an
# audit pushing to a Pushgateway.
UNIT_TOPOLOGY = monitored(audit={"schedule": "17 * * * *", "image": "registry.example.com/audit:1",
                                 "pushgateway": "http://pushgateway.monitoring.svc:9091"})
UNIT_TOPOLOGY["flows"][0]["state"] = {"checkpoint": "stopped"}


BASE = {"flow": FLOW, "connect_cluster": FLOW, **TARGET_LABELS}


CLIENT = f"us-west->us-east|{SOURCE_CONNECTOR}-0|replication-consumer"  # MirrorConnectorConfig.addClientId


SOURCE_TOPIC = {"source": "us-west", "target": "us-east", "topic": "us-west.test.orders"}


def series(name: str, values: str, **labels: str) -> dict:
    body = ", ".join(f'{k}="{v}"' for k, v in sorted({**BASE, **labels}.items()) if v is not None)
    return {"series": f"{name}{{{body}}}", "values": values}


def external(name: str, values: str, /, **labels: str) -> dict:
    body = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return {"series": f"{name}{{{body}}}", "values": values}


def healthy() -> list[dict]:
    """Every series every alert reads, healthy, for 40 minutes."""
    return [
        series("kafka_connect_worker_connector_count", "3x40"),
        *[series("kafka_connect_connector_status", "1x40", connector=f"{FLOW}-{c}", status="running")
          for c in ("source", "heartbeat")],
        series("kafka_connect_connector_status", "1x40", connector=f"{FLOW}-checkpoint", status="stopped"),
        *[series("kafka_connect_connector_task_status", "1x40", connector=f"{FLOW}-{c}", task="0", status="running")
          for c in ("source", "heartbeat")],
        *[series(f"kafka_connect_mirror_mirrorsourceconnector_{m}", v, partition=p, **SOURCE_TOPIC)
          for m, v in (("replication_latency_ms_max", "80x40"), ("record_age_ms_max", "40x40"),
                       ("record_count", "0+10x40")) for p in ("0", "1")],
        series("kafka_connect_mirror_mirrorsourceconnector_record_count", "0+60x40", source="us-west",
               target="us-east", topic="us-west.heartbeats", partition="0"),
        series("kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms", "30x40", source="us-west",
               target="us-east", group="test.readers", topic="us-west.test.orders", partition="0"),
        *[series("kafka_consumer_fetch_manager_records_lag", "0x40", client_id=CLIENT, topic="test_orders", partition=p)
          for p in ("0", "1")],
        *[series(f"kafka_connect_source_task_source_record_{m}_total", "0+10x40", connector=SOURCE_CONNECTOR, task="0")
          for m in ("poll", "write")],
        series("kafka_producer_record_error_total", "0x40", connector=SOURCE_CONNECTOR, task="0"),
        series("kafka_producer_produce_throttle_time_max", "0x40", connector=SOURCE_CONNECTOR, task="0"),
        *[series(f"kafka_consumer_failed_{a}authentication_total", "0x40", client_id=CLIENT) for a in ("", "re")],
        *[series(f"kafka_producer_failed_{a}authentication_total", "0x40", connector=SOURCE_CONNECTOR, task="0")
          for a in ("", "re")],
        external("kube_job_status_failed", "0x40", namespace="replication-audit",
                 job_name="kafka-replication-audit-29400000", job="kube-state-metrics"),
        external("kube_job_status_succeeded", "1x40", namespace="replication-audit",
                 job_name="kafka-replication-audit-29400000", job="kube-state-metrics"),
        external("kube_job_status_start_time", "1764000000x40", namespace="replication-audit",
                 job_name="kafka-replication-audit-29400000", job="kube-state-metrics"),
        external("kafka_replication_audit_status", "0x40", job="kafka-replication-audit", instance=""),
        external("kafka_replication_audit_checkpoint_stale", "0x40", job="kafka-replication-audit", instance="",
                 flow=FLOW, group="test.readers"),
        # A CA copy valid for a year from the evaluation's start (promtool's time() starts at 0).
        external("kafka_replication_audit_certificate_expiry_timestamp_seconds", f"{365 * 86400}x40",
                 job="kafka-replication-audit", instance="", cluster="us-west", item="caCert"),
        *operator_view(),
        # Another team's Connect cluster (no flow label of ours), not Ready for an hour: not ours to page on.
        operated(monitoring.CONNECT_INFO, "other-team", "their-connect", ready="False"),
    ]


def operated(metric: str, namespace: str, name: str, **conditions: str) -> dict:
    """A custom resource's series as kube-state-metrics exports it with our configuration
    (monitoring.ksm_config): `exported_namespace` the object's, `namespace` and `job` the scrape's;
    a label whose path finds nothing empty, which Prometheus takes as no label."""
    return external(metric, "1x40", **{"exported_namespace": namespace, "name": name, "job": "kube-state-metrics",
                                       "namespace": "kube-system", "flow": "", "warnings": "", "deprecated": "", **conditions})


def operator_view(**changed: dict[str, str]) -> list[dict]:
    """The flow's KafkaConnect and KafkaConnectors as the operator reports them: Ready, unless
    `changed` (by object name) says otherwise."""
    objects = [(monitoring.CONNECT_INFO, FLOW)] + [(monitoring.CONNECTOR_INFO, f"{FLOW}-{c}")
                                                     for c in ("source", "checkpoint", "heartbeat")]
    return [operated(metric, FLOW, name, flow=FLOW, **changed.get(name, {"ready": "True"})) for metric, name in objects]


def replace(inputs: list[dict], *new: dict) -> list[dict]:
    """The healthy set with the series of `new` (by name and labels) replaced or added."""
    keys = {n["series"] for n in new}
    return [s for s in inputs if s["series"] not in keys] + list(new)


def firing_cases() -> list[tuple[str, list[dict], str, list[dict]]]:
    """(alert, inputs, eval time, expected alerts) per alert."""
    running = f"{FLOW}-source"
    src = {"flow": FLOW, "connect_cluster": FLOW}
    h = healthy()
    without_running_source = [s for s in h if not (s["series"].startswith("kafka_connect_connector_status{")
                                                   and f'connector="{running}"' in s["series"])]
    without_running_task = [s for s in h if not (s["series"].startswith("kafka_connect_connector_task_status{")
                                                 and f'connector="{running}"' in s["series"])]
    return [
        ("KafkaReplicationConnectorFailed",
         without_running_source + [series("kafka_connect_connector_status", "1x40", connector=running, status="failed")],
         "15m", [{"exp_labels": {"severity": "warning", "threshold": "for 10m", **src, "connector": running},
                  "exp_annotations": {
                      "summary": f"Connector {running} of flow {FLOW} has failed",
                      "description": f"Kafka Connect reports connector {running} (Connect cluster {FLOW}) FAILED. "
                                     "Its tasks run on with the task configurations they had, so records may still be "
                                     "copied, but the connector no longer follows the source: new topics, partitions "
                                     "and groups are not picked up, nor topic configurations synced, until it starts "
                                     "again with the cause fixed. Its KafkaConnector is NotReady (Connector has "
                                     "failed); read the connector's trace in its status (kubectl get kafkaconnector "
                                     "-o yaml) and the Connect pod logs.",
                      "runbook": "docs/operations.md#kafkareplicationconnectorfailed"}}]),
        ("KafkaReplicationTaskFailed",
         without_running_task + [series("kafka_connect_connector_task_status", "1x40", connector=running, task="0",
                                        status="failed")],
         "15m", [{"exp_labels": {"severity": "critical", "threshold": "for 10m", **src, "connector": running, "task": "0"},
                  "exp_annotations": {
                      "summary": f"Task 0 of connector {running} (flow {FLOW}) has failed",
                      "description": f"Task 0 of {running} (Connect cluster {FLOW}) is FAILED: the partitions it owns "
                                     "do not replicate while the other tasks run. Read its trace (KafkaConnector "
                                     "status, Connect pod logs); the operator restarts it when autoRestart is on.",
                      "runbook": "docs/operations.md#kafkareplicationtaskfailed"}}]),
        ("KafkaReplicationConnectorNotRunning",
         without_running_source + [series("kafka_connect_connector_status", "1x40", connector=running, status="paused")],
         "15m", [{"exp_labels": {"severity": "warning", "threshold": "for 10m", **src, "connector": running, "status": "paused"},
                  "exp_annotations": {
                      "summary": f"Connector {running} of flow {FLOW} is paused",
                      "description": f"The topology says {running} runs, but Kafka Connect reports it paused: someone "
                                     "paused or stopped it outside the topology (REST API, annotation), or a change "
                                     "is not deployed yet. Deploy the stack again or set its `state` in the topology.",
                      "runbook": "docs/operations.md#kafkareplicationconnectornotrunning"}}]),
        ("KafkaReplicationLatencyHigh",
         # Records read at once (40 ms old) and acknowledged 70 s later: the target side is slow.
         replace(h, series("kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max", "70040x40",
                           partition="1", **SOURCE_TOPIC)),
         "15m", [{"exp_labels": {"severity": "warning", "threshold": "> 60s for 10m", **src, **SOURCE_TOPIC},
                  "exp_annotations": {
                      "summary": f"Writing us-west.test.orders to us-east takes over 60 s (flow {FLOW})",
                      "description": "Records of us-west.test.orders wait 70000 ms between the source connector's "
                                     "read and us-east's acknowledgement (replication latency minus record age; "
                                     "threshold 60 s): the target or the Connect cluster's producer is slow "
                                     "(throttling, broker load, the network to the target). How old records are "
                                     "when they are read is KafkaReplicationRecordAgeHigh's.",
                      "runbook": "docs/operations.md#kafkareplicationlatencyhigh"}}]),
        ("KafkaReplicationRecordAgeHigh",
         # A catch-up: records read 400 s after they were written, acknowledged 80 ms later (the
         # worker records both from one timestamp: latency is never below age).
         replace(h, *[series(f"kafka_connect_mirror_mirrorsourceconnector_{m}", v, partition="0", **SOURCE_TOPIC)
                      for m, v in (("record_age_ms_max", "400000x40"), ("replication_latency_ms_max", "400080x40"))]),
         "15m", [{"exp_labels": {"severity": "warning", "threshold": "> 300s for 10m", **src, **SOURCE_TOPIC},
                  "exp_annotations": {
                      "summary": f"Flow {FLOW} reads us-west.test.orders records over 300 s old",
                      "description": "The source connector reads records of us-west.test.orders 400000 ms after they "
                                     "were written (threshold 300 s): it is behind the source (catching up after a "
                                     "start from earliest or an outage, or too few tasks for the source's rate).",
                      "runbook": "docs/operations.md#kafkareplicationrecordagehigh"}}]),
        ("KafkaReplicationSourceLagGrowing",
         replace(h, series("kafka_consumer_fetch_manager_records_lag", "20000+100x40", client_id=CLIENT,
                           topic="test_orders", partition="1")),
         "15m", [{"exp_labels": {"severity": "warning", "threshold": "> 10000 records, growing for 10m", **src, "connector": running, "topic": "test_orders"},
                  "exp_annotations": {
                      "summary": f"Source lag of {running} on test_orders grows (flow {FLOW})",
                      "description": "The source connector's consumer is 21500 records behind on a partition of "
                                     "test_orders (over 10000; Kafka writes '.' in topic names as '_' here) and the "
                                     "lag grew over the last 10 minutes: the source is written faster than the flow "
                                     "replicates.",
                      "runbook": "docs/operations.md#kafkareplicationsourcelaggrowing"}}]),
        ("KafkaReplicationNoProgress",
         replace(h, series("kafka_consumer_fetch_manager_records_lag", "7x40", client_id=CLIENT, topic="test_orders",
                           partition="0"),
                 *[series(f"kafka_connect_source_task_source_record_{m}_total", "500x40", connector=running, task="0")
                   for m in ("poll", "write")]),
         "15m", [{"exp_labels": {"severity": "critical", "threshold": "lag > 0, nothing polled in 5m for 10m", **src, "connector": running},
                  "exp_annotations": {
                      "summary": f"Connector {running} reads nothing while its source has records (flow {FLOW})",
                      "description": "Its consumer lags behind the source, yet its tasks handed no record on for 5 "
                                     "minutes: a task is stuck (the target unreachable or refusing writes, so the "
                                     "producer blocks and the task polls no more; a poison record), though it may "
                                     "not be FAILED. Records a transformation drops (a loop filter) count as "
                                     "progress.",
                      "runbook": "docs/operations.md#kafkareplicationnoprogress"}}]),
        ("KafkaReplicationTargetRefusesWrites",
         replace(h, series("kafka_producer_record_error_total", "0x10 3x30", connector=running, task="0")),
         "12m", [{"exp_labels": {"severity": "critical", "threshold": "errors in 5m at once", **src, "connector": running},
                  "exp_annotations": {
                      "summary": f"The target refuses records of {running} (flow {FLOW})",
                      "description": f"The producer of a task of {running} (Connect cluster {FLOW}) failed 3 records "
                                     "in the last 5 minutes after its retries: the target refuses them (authorization, "
                                     "a record too large, the topic gone, the brokers unreachable past "
                                     "delivery.timeout.ms). The task fails with them; read its trace.",
                      "runbook": "docs/operations.md#kafkareplicationtargetrefuseswrites"}}]),
        ("KafkaReplicationSourceAuthenticationFails",
         replace(h, series("kafka_consumer_failed_reauthentication_total", "0x10 1x30", client_id=CLIENT),
                 series("kafka_consumer_failed_authentication_total", "0x11 1+1x29", client_id=CLIENT)),
         "14m", [{"exp_labels": {"severity": "critical", "threshold": "refused in 5m at once", **src,
                                 "connector": running},
                  "exp_annotations": {
                      "summary": f"The source refuses the credentials of {running} (flow {FLOW})",
                      "description": f"The source's brokers refused 4 authentications of {running} in the last 5 "
                                     f"minutes (Connect cluster {FLOW}; a source connector's replication consumer, or "
                                     "a heartbeat connector's producer, which writes the heartbeats into the source): "
                                     "its credential was revoked, expired or rotated on the brokers and not in the "
                                     "stack (docs/operations.md, Credential rotation). A source connector's tasks stay "
                                     "RUNNING and copy nothing (MirrorSourceTask logs each failed poll); a heartbeat "
                                     "connector's task fails.",
                      "runbook": "docs/operations.md#kafkareplicationsourceauthenticationfails"}}]),
        ("KafkaReplicationTargetAuthenticationFails",
         replace(h, series("kafka_producer_failed_authentication_total", "0x10 2x30", connector=running, task="0")),
         "12m", [{"exp_labels": {"severity": "critical", "threshold": "refused in 5m at once", **src,
                                 "connector": running},
                  "exp_annotations": {
                      "summary": f"The target refuses the credentials of {running} (flow {FLOW})",
                      "description": f"The target's brokers refused 2 authentications of {running}'s producer in the "
                                     f"last 5 minutes (Connect cluster {FLOW}): its credential was revoked, expired or "
                                     "rotated on the brokers and not in the stack (docs/operations.md, Credential "
                                     "rotation). Nothing it writes reaches the target.",
                      "runbook": "docs/operations.md#kafkareplicationtargetauthenticationfails"}}]),
        ("KafkaReplicationTargetThrottles",
         replace(h, series("kafka_producer_produce_throttle_time_max", "250x40", connector=running, task="0")),
         "15m", [{"exp_labels": {"severity": "warning", "threshold": "throttled for 10m", **src, "connector": running},
                  "exp_annotations": {
                      "summary": f"The target throttles the writes of {running} (flow {FLOW})",
                      "description": f"The target's brokers held responses to {running}'s producer back by up to 250 "
                                     f"ms (Connect cluster {FLOW}): a client quota on the replication user or its "
                                     "client id caps the flow. Raise the quota, or expect the record age to grow.",
                      "runbook": "docs/operations.md#kafkareplicationtargetthrottles"}}]),
        ("KafkaReplicationCheckpointsLate",
         replace(h, series("kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms", "300000x40",
                           source="us-west", target="us-east", group="test.readers", topic="us-west.test.orders",
                           partition="0")),
         "15m", [{"exp_labels": {"severity": "warning", "threshold": "> 240s for 10m", **src, "source": "us-west",
                                 "target": "us-east"},
                  "exp_annotations": {
                      "summary": f"Checkpoint writes of flow {FLOW} are slow",
                      "description": "The checkpoint connector's newest checkpoint took 300000 ms from reading its "
                                     "group's offsets on us-west to being written to us-east, more than 240 s, twice "
                                     "the emit and sync intervals: the source answers slowly, or the target refuses "
                                     "or throttles the checkpoint connector's writes. (Kafka exports no checkpoint "
                                     "age, and one latency for all groups: whether a group's checkpoints trail its "
                                     "commits is what the failover readiness check reads.)",
                      "runbook": "docs/operations.md#kafkareplicationcheckpointslate"}}]),
        ("KafkaReplicationHeartbeatsStale",
         replace(h, series("kafka_connect_mirror_mirrorsourceconnector_record_count", "0+60x5 300x35",
                           source="us-west", target="us-east", topic="us-west.heartbeats", partition="0")),
         # Stuck from minute 5: no change over 300 s from minute 10, then 10 minutes `for`.
         "21m", [{"exp_labels": {"severity": "warning", "threshold": "no heartbeat in 300s for 10m", **src, "source": "us-west", "target": "us-east",
                                 "topic": "us-west.heartbeats"},
                  "exp_annotations": {
                      "summary": "No heartbeat replicated from us-west to us-east for 300 s",
                      "description": f"The connector of flow {FLOW} (Connect cluster {FLOW}) that copies the "
                                     "heartbeats of us-west into us-west.heartbeats on us-east wrote none for 300 s. "
                                     "Heartbeats are emitted every second: the pair does not replicate (or its "
                                     "heartbeat connector does not run).",
                      "runbook": "docs/operations.md#kafkareplicationheartbeatsstale"}}]),
        ("KafkaReplicationAuditJobFailed",
         # An older run failed and a newer one succeeded, then the newest failed: only the newest fires.
         replace(h, *[external(m, v, namespace="replication-audit", job_name=j, job="kube-state-metrics")
                      for m, v, j in (
                          ("kube_job_status_failed", "1x40", "kafka-replication-audit-29399940"),
                          ("kube_job_status_succeeded", "0x40", "kafka-replication-audit-29399940"),
                          ("kube_job_status_start_time", "1763996400x40", "kafka-replication-audit-29399940"),
                          ("kube_job_status_failed", "1x40", "kafka-replication-audit-29400060"),
                          ("kube_job_status_succeeded", "0x40", "kafka-replication-audit-29400060"),
                          ("kube_job_status_start_time", "1764003600x40", "kafka-replication-audit-29400060"))]),
         "15m", [{"exp_labels": {"severity": "warning", "threshold": "for 10m", "namespace": "replication-audit",
                                 "job_name": "kafka-replication-audit-29400060"},
                  "exp_annotations": {
                      "summary": "The replication audit's last run failed (kafka-replication-audit-29400060)",
                      "description": "The newest Job of CronJob kafka-replication-audit in replication-audit failed: "
                                     "the audit found faults (exit 1) or could not audit (exit 2). Its findings are in "
                                     "the Job's log (kubectl -n replication-audit logs "
                                     "job/kafka-replication-audit-29400060, kept at least a day after it ends); the whole report "
                                     "is on the reports volume (docs/audit.md).",
                      "runbook": "docs/operations.md#kafkareplicationauditjobfailed"}}]),
        ("KafkaReplicationAuditFindings",
         replace(h, external("kafka_replication_audit_status", "1x40", job="kafka-replication-audit", instance="")),
         "15m", [{"exp_labels": {"severity": "warning", "threshold": "for 10m", "job": "kafka-replication-audit"},
                  "exp_annotations": {
                      "summary": "The replication audit reports faults",
                      "description": "The last audit pushed status 1 (1: records missing, duplicated or unexpected, or "
                                     "heartbeats too old; 2: it could not audit). Read its report (docs/audit.md).",
                      "runbook": "docs/operations.md#kafkareplicationauditfindings"}}]),
        ("KafkaReplicationCheckpointsStale",
         replace(h, external("kafka_replication_audit_checkpoint_stale", "0x3 1x37", job="kafka-replication-audit",
                             instance="", flow=FLOW, group="test.readers")),
         "15m", [{"exp_labels": {"severity": "warning", "threshold": "for 10m", "job": "kafka-replication-audit",
                                 "flow": FLOW, "group": "test.readers"},
                  "exp_annotations": {
                      "summary": f"Checkpoints of group test.readers are stale (flow {FLOW})",
                      "description": "The last audit found the newest checkpoint of consumer group test.readers "
                                     "older than 600 s while the group committed on the source more than the source "
                                     "connector's offset.lag.max records past it: consumers failing over to the "
                                     "target now would read that much again. The flow's checkpoint connector is "
                                     "stopped or failing, or does not select the group (kafka-replication status; "
                                     "the audit's report names the records, docs/audit.md).",
                      "runbook": "docs/operations.md#kafkareplicationcheckpointsstale"}}]),
        ("KafkaReplicationCertificateExpiring",
         # The copy expires 29 days and 23 hours after the start: under the 30 days at once, the alert
         # after its 10 minutes; the value is what is left at the evaluation (15 minutes in).
         replace(h, external("kafka_replication_audit_certificate_expiry_timestamp_seconds",
                             f"{29 * 86400 + 23 * 3600}x40", job="kafka-replication-audit", instance="",
                             cluster="us-west", item="caCert")),
         "15m", [{"exp_labels": {"severity": "warning", "threshold": "< 30d for 10m", "job": "kafka-replication-audit",
                                 "cluster": "us-west", "item": "caCert"},
                  "exp_annotations": {
                      "summary": "The stack's caCert of cluster us-west expires soon",
                      "description": "The caCert the stack holds for cluster us-west (the copy every connector and "
                                     "the audit read) expires in 29d 22h 45m 0s, less than 30 days: its owner has "
                                     "renewed it or will (a Strimzi cluster's operator renews its CAs 30 days "
                                     "ahead), and once the copy expires every connection to the cluster fails. Set "
                                     "the renewed certificate in the stack beside the current one and run pulumi up "
                                     "(docs/operations.md, rotation).",
                      "runbook": "docs/operations.md#kafkareplicationcertificateexpiring"}}]),
        ("KafkaReplicationConnectGroupDown",
         replace(h, series("kafka_connect_worker_connector_count", "3x3 0x37")),
         "15m", [{"exp_labels": {"severity": "critical", "threshold": "for 10m", **src},
                  "exp_annotations": {
                      "summary": f"Connect cluster {FLOW} runs no connector (flow {FLOW})",
                      "description": f"The workers of {FLOW} answer but run none of the flow's connectors: they lost "
                                     "their assignments, which happens when they cannot reach the Connect group's "
                                     "coordinator and internal topics on the flow's target cluster (brokers down, "
                                     "network, credentials). Nothing replicates, and the connector and task alerts "
                                     "are silent since their series are gone.",
                      "runbook": "docs/operations.md#kafkareplicationconnectgroupdown"}}]),
        *[(alert, [x for x in h if not x["series"].startswith((f"{monitoring.CONNECT_INFO}{{",
                                                                f"{monitoring.CONNECTOR_INFO}{{"))
                   or 'exported_namespace="other-team"' in x["series"]] + operator_view(**{name: conditions}),
           "20m", [{"exp_labels": {"severity": severity, "threshold": "for 15m", "flow": FLOW,
                                   "exported_namespace": FLOW, "name": name, "kind": kind},
                    "exp_annotations": {"summary": f"{kind} {name} ({FLOW}) {summary}", "description": description,
                                        "runbook": f"docs/operations.md#{alert.lower()}"}}])
          for alert, name, kind, conditions, severity, summary, description in (
              ("KafkaReplicationOperatorNotReady", FLOW, "KafkaConnect", {"ready": "False"}, "warning",
               "is not Ready",
               f"The operator reports KafkaConnect {FLOW} not Ready: it does not reconcile it, so changes deployed "
               "since are not applied (a KafkaConnect whose Kafka version the operator refuses keeps its pods and "
               f"connectors running as they were). Read the reason in its status (kubectl -n {FLOW} get "
               f"KafkaConnect {FLOW} -o yaml) and the operator's log."),
              ("KafkaReplicationOperatorWarning", SOURCE_CONNECTOR, "KafkaConnector",
               {"ready": "True", "warnings": "True"}, "warning", "has a warning",
               f"The operator reports a Warning condition on KafkaConnector {SOURCE_CONNECTOR}: a setting it "
               "ignores or changed. Read it in the object's status conditions."),
              # A deprecation is a Warning condition too: only the deprecation pages.
              ("KafkaReplicationOperatorDeprecated", FLOW, "KafkaConnect",
               {"ready": "True", "warnings": "True", "deprecated": "Warning"}, "warning", "uses deprecated fields",
               f"The operator reports fields of KafkaConnect {FLOW} deprecated: the next operator release may not "
               "accept them. Follow the upgrade runbook for the stack's operator (docs/operations.md, Operator "
               "upgrades) before upgrading it."))],
        ("KafkaReplicationMetricsAbsent",
         [s for s in h if not s["series"].startswith("kafka_connect_worker_connector_count{")],
         "15m", [{"exp_labels": {"severity": "critical", "threshold": "for 10m", **src},
                  "exp_annotations": {
                      "summary": f"No metrics from Connect cluster {FLOW} (flow {FLOW})",
                      "description": f"Prometheus has no series of Connect cluster {FLOW}: its pods are down or not "
                                     "scraped (the PodMonitor, the metrics port, Prometheus' selectors), and every "
                                     "other alert of the flow is silent until they are back.",
                      "runbook": "docs/operations.md#kafkareplicationmetricsabsent"}}]),
    ]


def quiet_cases() -> list[tuple[str, list[dict], list[str]]]:
    """(what, inputs, the alerts that fire) for healthy situations that once paged: each must fire
    only the alerts named, at every evaluation."""
    h = healthy()
    running = f"{FLOW}-source"
    return [
        # A catch-up from the earliest offsets: old records, read and written at once.
        ("a catch-up", replace(h, *[series(f"kafka_connect_mirror_mirrorsourceconnector_{m}", v, partition=p,
                                           **SOURCE_TOPIC)
                                    for m, v in (("record_age_ms_max", "400000x40"),
                                                 ("replication_latency_ms_max", "400080x40")) for p in ("0", "1")]),
         ["KafkaReplicationRecordAgeHigh"]),
        # A bidirectional pair's passive direction: its loop filter drops every record it polls.
        ("a loop filter dropping every record",
         replace(h, series("kafka_consumer_fetch_manager_records_lag", "3x40", client_id=CLIENT, topic="test_orders",
                           partition="0"),
                 series("kafka_connect_source_task_source_record_poll_total", "0+10x40", connector=running, task="0"),
                 series("kafka_connect_source_task_source_record_write_total", "0x40", connector=running, task="0")),
         []),
        # The target down on Kafka 3.8 (CSM 1.2): the workers lose their assignments but keep the
        # lost tasks' MirrorMaker 2 series, frozen; the group's alert names the cause, alone.
        ("a Connect group down with its heartbeat series frozen",
         replace(h, series("kafka_connect_worker_connector_count", "0x40"),
                 series("kafka_connect_mirror_mirrorsourceconnector_record_count", "60x40", source="us-west",
                        target="us-east", topic="us-west.heartbeats", partition="0")),
         ["KafkaReplicationConnectGroupDown"]),
    ]
