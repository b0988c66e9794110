"""Alerts and dashboards of the flows: a PodMonitor, a PrometheusRule and a Grafana dashboard
ConfigMap per Kubernetes cluster hosting flows, in `monitoring.namespace` (docs/operations.md,
sections Alerts and Dashboard).

Pure, like the plan: the objects are dicts with the Prometheus Operator's field names
(monitoring.coreos.com/v1, its CRDs pinned in tools/prometheus-operator/go.mod), built from the
stack plan so that the rules watch exactly the connectors that were deployed. Every series and
label the rules and the dashboard read is one the exporter rules of infra/plan/metrics.py produce on
the real worker of each release (tests/data/scrape/*.txt; tests/unit/test_monitoring.py holds them to
it), except the audit's: kube-state-metrics' job series and what spark/report.py pushes.

Thresholds: a flow's `alerts`, field by field, over `monitoring.alerts`, over DEFAULTS. Flows
sharing a threshold share one rule (a regex over their names), so the PrometheusRule grows with
the number of distinct thresholds, not of flows; MAX_RULE_BYTES bounds it.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Literal, Mapping, TypedDict, TypeVar, Union

import yaml

from infra.plan import failover, metrics
from infra.core import names
from infra.plan.connectors import ConnectorKind, ConnectorPlan
from infra.core.errors import Problem
from infra.core.manifests import JSON, ConfigMap, Manifest, Namespace, ObjectMeta, meta
from infra.plan.stack import FlowPlan, PartPlan, StackPlan, heartbeat_replicators
from infra.topology.resolution import Model
from infra.topology.schema import Alerts, Exporter, Flow

API_VERSION: Literal["monitoring.coreos.com/v1"] = "monitoring.coreos.com/v1"
# The PodMonitor scrapes the container port Strimzi gives the exporter of every KafkaConnect pod
# (metrics.METRICS_PORT_NAME; KafkaConnectCluster adds it to the container when metrics are
# configured, and its NetworkPolicy opens it to all).
STRIMZI_KIND_LABEL = "strimzi.io/kind"
DASHBOARD_KEY = "kafka-replication.json"
DASHBOARD_UID = "kafka-replication"
DOCS = "docs/operations.md"
# A PrometheusRule is one Kubernetes object, stored whole (etcd's request limit is 1.5 MiB) and
# written by the operator into a ConfigMap of at most 1 MiB: ours stays well under both.
MAX_RULE_BYTES = 900_000
# The window over which "no record written" is judged (a connector that polls and writes at all
# writes within a minute; five leave room for slow sources and scrape gaps).
PROGRESS_WINDOW_MINUTES = 5


@dataclass(frozen=True)
class Thresholds:
    """Effective alert thresholds of one flow (each a field of schema.Alerts, resolved)."""
    replicationLatencySeconds: int
    recordAgeSeconds: int
    sourceLagRecords: int
    heartbeatAgeSeconds: int
    forMinutes: int


# Sane defaults: replication within a minute is normal across regions (MirrorMaker 2 usually
# takes well under a second); records read five minutes after they were written mean the
# connector is behind; 10,000 records of lag on one partition is minutes of a busy topic;
# heartbeats are emitted every second (emit.heartbeats.interval.seconds), so five minutes
# without one is no hiccup; ten minutes rides out a rebalance or a rolling restart.
DEFAULTS = Thresholds(replicationLatencySeconds=60, recordAgeSeconds=300, sourceLagRecords=10_000,
                      heartbeatAgeSeconds=300, forMinutes=10)


def thresholds(model: Model, alerts: Alerts) -> Thresholds:
    """A flow's `alerts` over the stack's `monitoring.alerts` over DEFAULTS, field by field."""
    stack = model.topology.monitoring.alerts
    values = {f: getattr(alerts, f) if getattr(alerts, f) is not None else
              getattr(stack, f) if getattr(stack, f) is not None else getattr(DEFAULTS, f)
              for f in Thresholds.__dataclass_fields__}
    return Thresholds(**values)


def stack_thresholds(model: Model) -> Thresholds:
    return thresholds(model, Alerts())


# ----------------------------------------------------------------- the Prometheus Operator's objects


class PodMonitor(TypedDict):
    apiVersion: Literal["monitoring.coreos.com/v1"]
    kind: Literal["PodMonitor"]
    metadata: ObjectMeta
    spec: JSON


class PrometheusRule(TypedDict):
    apiVersion: Literal["monitoring.coreos.com/v1"]
    kind: Literal["PrometheusRule"]
    metadata: ObjectMeta
    spec: JSON


MonitoringObject = Union[PodMonitor, PrometheusRule, ConfigMap]


@dataclass(frozen=True)
class MonitoringPlan:
    namespace: Namespace
    objects: tuple[MonitoringObject, ...]  # in `namespace`: PodMonitor, PrometheusRule, dashboard
    outputs: JSON
    kubernetes: str | None = None          # None: the ambient context (no `kubernetes` section)

    def placed(self) -> list[tuple[str | None, Manifest]]:
        # The Prometheus Operator's kinds are not core manifests; their metadata is what the
        # name checks read.
        return [(self.kubernetes, o) for o in (self.namespace, *self.objects)]  # type: ignore[misc]

    def kind(self, kind: str) -> MonitoringObject | None:
        return next((o for o in self.objects if o["kind"] == kind), None)


def plan_monitorings(model: Model, stack_plan: StackPlan) -> tuple[MonitoringPlan, ...]:
    """The monitoring objects of every Kubernetes cluster hosting flows (one set without a
    `kubernetes` section); none when neither `prometheusOperator` nor `dashboard` is on."""
    clusters = stack_plan.kubernetes_clusters
    if not clusters:
        single = plan_monitoring(model, stack_plan, None)
        return (single,) if single else ()
    return tuple(m for k in clusters for m in [plan_monitoring(model, stack_plan.in_cluster(k), k, stack_plan)] if m)


# What tells the monitoring objects from the flows' and the audit's (the render's summary reads it).
COMPONENT = {"app.kubernetes.io/component": "monitoring"}


def is_monitoring(labels: Mapping[str, str]) -> bool:
    return COMPONENT.items() <= labels.items()


def owner(labels: Mapping[str, str] | None) -> str:
    """Who an object belongs to, by the labels the program sets: a flow, the audit or the
    monitoring (the render's summary and the diff group objects by it)."""
    labels = dict(labels or {})
    flow = labels.get(names.FLOW_LABEL)
    if flow:
        return f"flow {flow}"
    if names.AUDIT_SELECTOR.items() <= labels.items():
        return "audit"
    return "monitoring" if is_monitoring(labels) else "stack"


def _meta(name: str, namespace: str | None, extra: dict[str, str] | None = None) -> ObjectMeta:
    # The user's labels first: ours cannot be replaced by them.
    return meta(name, namespace, {**(extra or {}), **names.PART_OF, **COMPONENT})


def plan_monitoring(model: Model, stack_plan: StackPlan, kubernetes: str | None = None,
                    whole: StackPlan | None = None) -> MonitoringPlan | None:
    """`stack_plan`: the flows of one Kubernetes cluster (StackPlan.in_cluster); `whole`: the
    stack's, which decides which connector copies each pair's heartbeats (default: the same)."""
    monitoring = model.topology.monitoring
    if not (monitoring.prometheusOperator or monitoring.dashboard) or not stack_plan.flows:
        return None
    ns = monitoring.namespace
    labels = dict(sorted(monitoring.labels.items()))
    objects: list[MonitoringObject] = []
    if monitoring.prometheusOperator:
        objects.append(pod_monitor(stack_plan, ns, labels))
        objects.append(prometheus_rule(model, stack_plan, ns, labels, whole or stack_plan))
    if monitoring.dashboard:
        objects.append(dashboard_configmap(ns))
    outputs: JSON = {"namespace": ns,
                     "podMonitor": names.MONITORING if monitoring.prometheusOperator else None,
                     "prometheusRule": names.MONITORING if monitoring.prometheusOperator else None,
                     "dashboardConfigMap": names.DASHBOARD_CONFIGMAP if monitoring.dashboard else None}
    if kubernetes:
        outputs = {"kubernetesCluster": kubernetes, **outputs}
    namespace: Namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(ns, None)}
    return MonitoringPlan(namespace, tuple(objects), outputs, kubernetes)


def pod_monitor(stack_plan: StackPlan, namespace: str, labels: dict[str, str]) -> PodMonitor:
    """The Connect pods of our flows. Strimzi copies the KafkaConnect's labels onto its pods
    (Labels.fromResource) except app.kubernetes.io/* other than part-of, and then sets part-of to
    strimzi-<cluster> itself (Labels.generateDefaultLabels, 0.43.0..1.2.0): the flow label and
    strimzi.io/kind are what select them."""
    flows = sorted({f.name for f in stack_plan.flows})
    connects = sorted({p.names.connect for f in stack_plan.flows for p in f.parts})
    namespaces = sorted({p.names.namespace for f in stack_plan.flows for p in f.parts})
    return {"apiVersion": API_VERSION, "kind": "PodMonitor", "metadata": _meta(names.MONITORING, namespace, labels),
            "spec": {
                "selector": {"matchLabels": {STRIMZI_KIND_LABEL: "KafkaConnect"},
                             "matchExpressions": [
                                 {"key": names.FLOW_LABEL, "operator": "In", "values": flows},
                                 {"key": names.CLUSTER_LABEL, "operator": "In", "values": connects}]},
                "namespaceSelector": {"matchNames": namespaces},
                "podMetricsEndpoints": [{"port": metrics.METRICS_PORT_NAME, "path": metrics.METRICS_PATH}]}}


# ----------------------------------------------------------------- the rules

# Series of the worker (contract of infra/plan/metrics.py; every label named here is in every
# tests/data/scrape/*.txt).
CONNECTOR_STATUS = "kafka_connect_connector_status"
TASK_STATUS = "kafka_connect_connector_task_status"
WORKER_CONNECTORS = "kafka_connect_worker_connector_count"  # every worker, from its start
SOURCE = "kafka_connect_mirror_mirrorsourceconnector_"
LATENCY_MAX = SOURCE + "replication_latency_ms_max"
RECORD_AGE_MAX = SOURCE + "record_age_ms_max"
RECORD_COUNT = SOURCE + "record_count"
RECORD_RATE = SOURCE + "record_rate"
BYTE_RATE = SOURCE + "byte_rate"
CHECKPOINT_LATENCY = "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms"
RECORDS_LAG = "kafka_consumer_fetch_manager_records_lag"
RECORDS_WRITTEN = "kafka_connect_source_task_source_record_write_total"
# The source task's replication consumer: client.id `<source>-><target>|<connector>-<task>|replication-consumer`,
# a user's client.id before it (MirrorConnectorConfig.addClientId, MirrorSourceTaskConfig.entityLabel,
# MirrorSourceTask: sourceConsumerConfig("replication-consumer"); Kafka 3.8 and later). The
# worker's other consumers (its internal topics', the checkpoint task's offset-syncs reader) are not it.
REPLICATION_CONSUMER = ".*\\|" + metrics.REPLICATION_CONSUMER_ROLE
CONSUMER_CONNECTOR = ".*\\|(.+)-[0-9]+\\|" + metrics.REPLICATION_CONSUMER_ROLE
# Series from elsewhere: kube-state-metrics (the audit's Jobs) and the audit's own push
# (spark/report.py push_metrics, job name names.AUDIT).
KSM_FAILED = "kube_job_status_failed"
KSM_SUCCEEDED = "kube_job_status_succeeded"
KSM_START = "kube_job_status_start_time"
AUDIT_STATUS = "kafka_replication_audit_status"


REGEX_SPECIAL = re.compile(r"([.^$*+?()\[\]{}|\\])")


def regex_literal(value: str) -> str:
    """`value` as an RE2 pattern matching only itself (names are DNS labels: '.' at most)."""
    return REGEX_SPECIAL.sub(r"\\\1", value)


def _alternatives(values: list[str]) -> str:
    """An alternation matching exactly these names (PromQL anchors every regex)."""
    return "|".join(regex_literal(v) for v in sorted(set(values)))


def _q(value: str) -> str:
    """A PromQL string literal."""
    return json.dumps(value)


def _alert(name: str, expr: str, minutes: int | None, severity: str, summary: str, description: str,
           condition: str = "") -> JSON:
    """One alerting rule. Its `threshold` label says the condition and how long it held: flows
    with other thresholds get rules of their own, told apart by it (promtool refuses two rules
    of one alert with the same labels), and a receiver sees which limit was crossed."""
    rule: JSON = {"alert": name, "expr": expr}
    if minutes:
        rule["for"] = f"{minutes}m"
    held = f"for {minutes}m" if minutes else "at once"
    rule["labels"] = {"severity": severity, "threshold": f"{condition} {held}" if condition else held}
    rule["annotations"] = {"summary": summary, "description": description,
                           "runbook": f"{DOCS}#{name.lower()}"}
    return rule


ABSENT_WINDOW_MINUTES = 5  # a few scrape intervals: a restart is no absence


Named = TypeVar("Named", str, tuple[str, str])  # a name, or a (flow, Connect cluster) pair


def _by_threshold(items: list[tuple[Any, Named]]) -> list[tuple[Any, list[Named]]]:
    """(threshold, names) groups, by threshold, names sorted: one rule per distinct threshold."""
    grouped: dict[Any, list[Named]] = defaultdict(list)
    for key, name in items:
        grouped[key].append(name)
    return [(key, sorted(set(v))) for key, v in sorted(grouped.items())]


@dataclass(frozen=True)
class _FlowFacts:
    flow: FlowPlan
    limits: Thresholds
    source_connectors: tuple[str, ...]
    running: tuple[str, ...]                 # connectors the topology says run (spec.state absent)
    checkpoint_seconds: int | None           # 2 × (emit + sync) or None without checkpoints emitted


def checkpoint_threshold_seconds(flow: Flow) -> int | None:
    """2 × (emit.checkpoints.interval.seconds + sync.group.offsets.interval.seconds): the
    documents' wait for a checkpointed offset to reach the target group, read as the failover
    wait is (infra/plan/failover.py, one home); the sync interval counts only while syncing is on.
    None: no checkpoints emitted."""
    emit = failover.emit_seconds(flow)
    return None if emit is None else 2 * (emit + (failover.sync_seconds(flow) or 0))


def _connectors(part: PartPlan, kind: ConnectorKind) -> list[ConnectorPlan]:
    return [c for c in part.connectors if c.kind is kind]


def _facts(model: Model, fp: FlowPlan) -> _FlowFacts:
    connectors = [c for p in fp.parts for c in p.connectors]
    has_checkpoints = any(_connectors(p, ConnectorKind.checkpoint) for p in fp.parts)
    checkpoint_seconds = checkpoint_threshold_seconds(fp.flow) if has_checkpoints else None
    return _FlowFacts(
        fp, thresholds(model, fp.flow.alerts),
        tuple(c.name for p in fp.parts for c in _connectors(p, ConnectorKind.source)),
        tuple(c.name for c in connectors if "state" not in c.manifest["spec"]),
        checkpoint_seconds)


def _flows(names_: list[str]) -> str:
    return f"flow=~{_q(_alternatives(names_))}"


def connector_rules(facts: list[_FlowFacts]) -> list[JSON]:
    rules = []
    for minutes, flows in _by_threshold([(f.limits.forMinutes, f.flow.name) for f in facts]):
        sel = _flows(flows)
        rules.append(_alert(
            "KafkaReplicationConnectorFailed",
            f'max by (flow, connect_cluster, connector) ({CONNECTOR_STATUS}{{{sel}, status="failed"}}) == 1',
            minutes, "critical", "Connector {{ $labels.connector }} of flow {{ $labels.flow }} has failed",
            "Kafka Connect reports connector {{ $labels.connector }} (Connect cluster {{ $labels.connect_cluster }}) "
            "FAILED: nothing of it replicates. Its KafkaConnector may still look Ready; read the connector's "
            "trace in its status (kubectl get kafkaconnector -o yaml) and the Connect pod logs."))
        rules.append(_alert(
            "KafkaReplicationTaskFailed",
            f'max by (flow, connect_cluster, connector, task) ({TASK_STATUS}{{{sel}, status="failed"}}) == 1',
            minutes, "critical", "Task {{ $labels.task }} of connector {{ $labels.connector }} (flow {{ $labels.flow }}) "
            "has failed",
            "Task {{ $labels.task }} of {{ $labels.connector }} (Connect cluster {{ $labels.connect_cluster }}) is "
            "FAILED: the partitions it owns do not replicate while the other tasks run. Read its trace "
            "(KafkaConnector status, Connect pod logs); the operator restarts it when autoRestart is on."))
    running = [(f.limits.forMinutes, c) for f in facts for c in f.running]
    for minutes, connectors in _by_threshold(running):
        flows = sorted({f.flow.name for f in facts if set(f.running) & set(connectors)})
        rules.append(_alert(
            "KafkaReplicationConnectorNotRunning",
            f'max by (flow, connect_cluster, connector, status) ({CONNECTOR_STATUS}{{{_flows(flows)}, '
            f'connector=~{_q(_alternatives(connectors))}, status=~"paused|stopped"}}) == 1',
            minutes, "warning", "Connector {{ $labels.connector }} of flow {{ $labels.flow }} is {{ $labels.status }}",
            "The topology says {{ $labels.connector }} runs, but Kafka Connect reports it {{ $labels.status }}: "
            "someone paused or stopped it outside the topology (REST API, annotation), or a change is not "
            "deployed yet. Deploy the stack again or set its `state` in the topology."))
    # A Connect cluster whose metrics are gone (pods down, not scraped, or the PodMonitor selecting
    # nothing) leaves every other rule silent: absent() keeps the labels of its equality matchers.
    clusters = [(f.limits.forMinutes, (f.flow.name, p.names.connect)) for f in facts for p in f.flow.parts]
    for minutes, pairs in _by_threshold(clusters):
        expr = " or ".join(f"absent_over_time({WORKER_CONNECTORS}{{flow={_q(flow)}, connect_cluster={_q(connect)}}}"
                           f"[{ABSENT_WINDOW_MINUTES}m])" for flow, connect in pairs)
        rules.append(_alert(
            "KafkaReplicationMetricsAbsent", expr, minutes, "critical",
            "No metrics from Connect cluster {{ $labels.connect_cluster }} (flow {{ $labels.flow }})",
            "Prometheus has no series of Connect cluster {{ $labels.connect_cluster }}: its pods are down or not "
            "scraped (the PodMonitor, the metrics port, Prometheus' selectors), and every other alert of the "
            "flow is silent until they are back."))
    return rules


def replication_rules(facts: list[_FlowFacts]) -> list[JSON]:
    rules = []
    by = "flow, connect_cluster, source, target, topic"
    for (seconds, minutes), flows in _by_threshold(
            [((f.limits.replicationLatencySeconds, f.limits.forMinutes), f.flow.name) for f in facts]):
        rules.append(_alert(
            "KafkaReplicationLatencyHigh",
            f"max by ({by}) ({LATENCY_MAX}{{{_flows(flows)}}}) > {seconds * 1000}",
            minutes, "warning",
            "Replication of {{ $labels.topic }} (flow {{ $labels.flow }}) takes over " + f"{seconds} s",
            "Records of {{ $labels.topic }} reach {{ $labels.target }} {{ $value }} ms after they were written to "
            f"{{{{ $labels.source }}}} (threshold {seconds} s): the target or the Connect cluster is slow "
            "(producer throttling, broker load, the network between the clusters).", f"> {seconds}s"))
    for (seconds, minutes), flows in _by_threshold(
            [((f.limits.recordAgeSeconds, f.limits.forMinutes), f.flow.name) for f in facts]):
        rules.append(_alert(
            "KafkaReplicationRecordAgeHigh",
            f"max by ({by}) ({RECORD_AGE_MAX}{{{_flows(flows)}}}) > {seconds * 1000}",
            minutes, "warning",
            "Flow {{ $labels.flow }} reads {{ $labels.topic }} records over " + f"{seconds} s old",
            "The source connector reads records of {{ $labels.topic }} {{ $value }} ms after they were written "
            f"(threshold {seconds} s): it is behind the source (catching up after a start from earliest "
            "or an outage, or too few tasks for the source's rate).", f"> {seconds}s"))
    client = f"client_id=~{_q(REPLICATION_CONSUMER)}"
    for (records, minutes), flows in _by_threshold(
            [((f.limits.sourceLagRecords, f.limits.forMinutes), f.flow.name) for f in facts]):
        sel = f"{{{_flows(flows)}, {client}}}"
        lag = f'label_replace({RECORDS_LAG}{sel}, "connector", "$1", "client_id", {_q(CONSUMER_CONNECTOR)})'
        grows = (f'label_replace(delta({RECORDS_LAG}{sel}[{minutes}m]), "connector", "$1", "client_id", '
                 f'{_q(CONSUMER_CONNECTOR)})')
        keep = "flow, connect_cluster, connector, topic"
        rules.append(_alert(
            "KafkaReplicationSourceLagGrowing",
            f"max by ({keep}) ({lag}) > {records} and max by ({keep}) ({grows}) > 0",
            minutes, "warning",
            "Source lag of {{ $labels.connector }} on {{ $labels.topic }} grows (flow {{ $labels.flow }})",
            "The source connector's consumer is {{ $value }} records behind on a partition of {{ $labels.topic }} "
            f"(over {records}; Kafka writes '.' in topic names as '_' here) and the lag grew over the last "
            f"{minutes} minutes: the source is written faster than the flow replicates.", f"> {records} records, growing"))
    window = f"{PROGRESS_WINDOW_MINUTES}m"
    # Only the source connectors the topology runs: a paused task keeps its consumer and its last
    # lag (a Value stat) while writing nothing, which is no fault when the topology paused it.
    sources = [((f.limits.forMinutes), c) for f in facts for c in f.source_connectors if c in f.running]
    for minutes, connectors in _by_threshold(sources):
        flows = sorted({f.flow.name for f in facts if set(f.source_connectors) & set(connectors)})
        of_these = ".*\\|(?:" + _alternatives(connectors) + ")-[0-9]+\\|" + metrics.REPLICATION_CONSUMER_ROLE
        sel = f"{{{_flows(flows)}, client_id=~{_q(of_these)}}}"
        keep = "flow, connect_cluster, connector"
        lag = f'label_replace({RECORDS_LAG}{sel}, "connector", "$1", "client_id", {_q(CONSUMER_CONNECTOR)})'
        written = (f"changes({RECORDS_WRITTEN}{{{_flows(flows)}, connector=~{_q(_alternatives(connectors))}}}"
                   f"[{window}])")
        rules.append(_alert(
            "KafkaReplicationNoProgress",
            f"max by ({keep}) ({lag}) > 0 unless on ({keep}) max by ({keep}) ({written}) > 0",
            minutes, "critical",
            "Connector {{ $labels.connector }} writes nothing while its source has records (flow {{ $labels.flow }})",
            f"Its consumer lags behind the source, yet no record was written to the target for {PROGRESS_WINDOW_MINUTES} "
            "minutes: the task is stuck (target unreachable or refusing writes, producer blocked, "
            "a poison record), though it may not be FAILED.", f"lag > 0, nothing written in {window}"))
    return rules


def checkpoint_rules(facts: list[_FlowFacts]) -> list[JSON]:
    rules = []
    items = [((f.checkpoint_seconds, f.limits.forMinutes), f.flow.name) for f in facts if f.checkpoint_seconds]
    for (seconds, minutes), flows in _by_threshold(items):
        rules.append(_alert(
            "KafkaReplicationCheckpointsLate",
            f"max by (flow, connect_cluster, source, target, group) ({CHECKPOINT_LATENCY}{{{_flows(flows)}}}) "
            f"> {seconds * 1000}",
            minutes, "warning", "Checkpoints of group {{ $labels.group }} are late (flow {{ $labels.flow }})",
            "The newest checkpoint of {{ $labels.group }} took {{ $value }} ms to be written to "
            f"{{{{ $labels.target }}}}, more than {seconds} s, twice the emit and sync intervals: the target "
            "refuses or throttles the checkpoint connector's writes. (Kafka exports no checkpoint age: "
            "whether checkpoints trail the group's commits is what the failover readiness check reads.)",
            f"> {seconds}s"))
    return rules


def heartbeat_rules(model: Model, stack_plan: StackPlan, whole: StackPlan, facts: list[_FlowFacts]) -> list[JSON]:
    """Per cluster pair with heartbeats, on the one connector that copies them
    (plan.heartbeat_replicators): one term per pair, pairs with the same limits in one rule."""
    copiers = heartbeat_replicators(model)
    where = {c.name: (fp, part, c) for fp in stack_plan.flows for part in fp.parts for c in part.connectors}
    limits = {f.flow.name: f.limits for f in facts}
    # Heartbeats reach a source cluster from the running heartbeat connectors of its flows.
    emitted = {(fp.flow.source, fp.flow.target) for fp in whole.flows for part in fp.parts
               for c in _connectors(part, ConnectorKind.heartbeat) if "state" not in c.manifest["spec"]}
    terms: list[tuple[tuple[int, int], str]] = []
    for (source, target), connector in sorted(copiers.items()):
        if (source, target) not in emitted or connector not in where:
            continue  # nothing emits heartbeats into the source, or the copier runs in another cluster
        fp, part, copier = where[connector]
        if "state" in copier.manifest["spec"]:
            continue  # the topology stops or pauses it: no heartbeat is expected
        topic = names.replicated_topic(source, names.HEARTBEATS_TOPIC)  # both policies prefix heartbeats
        limit = limits[fp.name]
        sel = f"flow={_q(fp.name)}, connect_cluster={_q(part.names.connect)}, topic={_q(topic)}"
        terms.append(((limit.heartbeatAgeSeconds, limit.forMinutes),
                      f"max by (flow, connect_cluster, source, target, topic) "
                      f"(changes({RECORD_COUNT}{{{sel}}}[{limit.heartbeatAgeSeconds}s])) == 0"))
    rules = []
    for (seconds, minutes), exprs in _by_threshold(terms):
        rules.append(_alert(
            "KafkaReplicationHeartbeatsStale", " or ".join(exprs), minutes, "warning",
            "No heartbeat replicated from {{ $labels.source }} to {{ $labels.target }} for " + f"{seconds} s",
            "The connector of flow {{ $labels.flow }} (Connect cluster {{ $labels.connect_cluster }}) that copies "
            "the heartbeats of {{ $labels.source }} into {{ $labels.topic }} on {{ $labels.target }} wrote none for "
            f"{seconds} s. Heartbeats are emitted every second: the pair does not replicate (or its heartbeat "
            "connector does not run).", f"no heartbeat in {seconds}s"))
    return rules


def audit_rules(model: Model, minutes: int) -> list[JSON]:
    audit = model.audit
    if audit is None:
        return []
    n = names.AuditNames(audit.namespace)
    jobs = f'namespace={_q(n.namespace)}, job_name=~{_q(regex_literal(n.cronjob) + "-[0-9]+")}'
    keep = "namespace, job_name"
    rules = [_alert(
        "KafkaReplicationAuditJobFailed",
        f"(max by ({keep}) ({KSM_FAILED}{{{jobs}}}) > 0 unless on ({keep}) max by ({keep}) ({KSM_SUCCEEDED}{{{jobs}}}) > 0)"
        f" and on ({keep}) topk by (namespace) (1, {KSM_START}{{{jobs}}})",
        minutes, "warning", "The replication audit's last run failed ({{ $labels.job_name }})",
        "The newest Job of CronJob " + n.cronjob + " in " + n.namespace + " failed: the audit found faults "
        "(exit 1) or could not audit (exit 2). Its report is under /reports/latest (docs/audit.md).")]
    if audit.pushgateway:
        rules.append(_alert(
            "KafkaReplicationAuditFindings",
            f"max by (job) ({AUDIT_STATUS}{{job={_q(names.AUDIT)}}}) > 0",
            minutes, "warning", "The replication audit reports faults",
            "The last audit pushed status {{ $value }} (1: records missing, duplicated or unexpected, "
            "or heartbeats too old; 2: it could not audit). Read its report (docs/audit.md)."))
    return rules


def rule_groups(model: Model, stack_plan: StackPlan, whole: StackPlan | None = None) -> list[JSON]:
    """The PrometheusRule's groups (also what `promtool check rules` reads)."""
    facts = [_facts(model, fp) for fp in stack_plan.flows]
    groups = [("connectors", connector_rules(facts)), ("replication", replication_rules(facts)),
              ("checkpoints", checkpoint_rules(facts)),
              ("heartbeats", heartbeat_rules(model, stack_plan, whole or stack_plan, facts)),
              ("audit", audit_rules(model, stack_thresholds(model).forMinutes))]
    return [{"name": f"kafka-replication.{name}", "rules": rules} for name, rules in groups if rules]


def prometheus_rule(model: Model, stack_plan: StackPlan, namespace: str, labels: dict[str, str],
                    whole: StackPlan | None = None) -> PrometheusRule:
    return {"apiVersion": API_VERSION, "kind": "PrometheusRule", "metadata": _meta(names.MONITORING, namespace, labels),
            "spec": {"groups": rule_groups(model, stack_plan, whole)}}


# ----------------------------------------------------------------- the dashboard

# Template variables: what each query's `$name` stands for (tests substitute ALL_VALUES).
VARIABLES = ("flow", "source", "target", "connect_cluster")
ALL_VALUES = ".*"
_F = 'flow=~"$flow", connect_cluster=~"$connect_cluster"'
_FST = 'flow=~"$flow", connect_cluster=~"$connect_cluster", source=~"$source", target=~"$target"'
VARIABLE_QUERIES = {
    "flow": f"label_values({CONNECTOR_STATUS}, flow)",
    "source": f'label_values({RECORD_COUNT}{{flow=~"$flow"}}, source)',
    "target": f'label_values({RECORD_COUNT}{{flow=~"$flow", source=~"$source"}}, target)',
    "connect_cluster": f'label_values({CONNECTOR_STATUS}{{flow=~"$flow"}}, connect_cluster)',
}
# (title, unit, query, legend): one panel each.
PANELS: tuple[tuple[str, str, str, str], ...] = (
    ("Connector status", "none",
     f"max by (flow, connect_cluster, connector, status) ({CONNECTOR_STATUS}{{{_F}}})",
     "{{connector}} {{status}}"),
    ("Task status", "none",
     f"max by (flow, connect_cluster, connector, task, status) ({TASK_STATUS}{{{_F}}})",
     "{{connector}}/{{task}} {{status}}"),
    ("Replication latency (max)", "ms",
     f"max by (flow, source, target, topic) ({LATENCY_MAX}{{{_FST}}})", "{{flow}} {{topic}}"),
    ("Record age (max)", "ms",
     f"max by (flow, source, target, topic) ({RECORD_AGE_MAX}{{{_FST}}})", "{{flow}} {{topic}}"),
    ("Throughput (records/s)", "rps",
     f"sum by (flow, source, target, topic) ({RECORD_RATE}{{{_FST}}})", "{{flow}} {{topic}}"),
    ("Throughput (bytes/s)", "Bps",
     f"sum by (flow, source, target, topic) ({BYTE_RATE}{{{_FST}}})", "{{flow}} {{topic}}"),
    ("Source consumer lag (records)", "none",
     f"sum by (flow, connect_cluster, topic) ({RECORDS_LAG}{{{_F}, client_id=~{_q(REPLICATION_CONSUMER)}}})",
     "{{flow}} {{topic}}"),
    ("Checkpoint latency (newest)", "ms",
     f"max by (flow, source, target, group) ({CHECKPOINT_LATENCY}{{{_FST}}})", "{{flow}} {{group}}"),
    ("Heartbeats replicated (per 5 minutes)", "none",
     f'sum by (flow, source, target, topic) (delta({RECORD_COUNT}{{{_FST}, topic=~".+\\\\.heartbeats"}}[5m]))',
     "{{source}} -> {{target}}"),
)


def dashboard() -> JSON:
    """The Grafana dashboard (schema 39): the four variables and one panel per PANELS entry."""
    datasource = {"type": "prometheus", "uid": "${datasource}"}
    templating: list[JSON] = [{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source",
                               "current": {}, "hide": 0}]
    for name in VARIABLES:
        templating.append({"name": name, "label": name.replace("_", " "), "type": "query", "datasource": datasource,
                           "query": {"query": VARIABLE_QUERIES[name], "refId": name},
                           "definition": VARIABLE_QUERIES[name], "refresh": 2, "includeAll": True, "multi": True,
                           "allValue": ALL_VALUES, "current": {"text": "All", "value": "$__all"}, "sort": 1,
                           "hide": 0})
    panels = []
    for i, (title, unit, query, legend) in enumerate(PANELS):
        panels.append({"id": i + 1, "type": "timeseries", "title": title, "datasource": datasource,
                       "gridPos": {"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i // 2)},
                       "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                       "targets": [{"refId": "A", "expr": query, "legendFormat": legend, "datasource": datasource}]})
    return {"uid": DASHBOARD_UID, "title": "Kafka replication (MirrorMaker 2 on KafkaConnect)",
            "description": f"Flows deployed by kafka-replication; {DOCS}#dashboard",
            "tags": ["kafka", "mirrormaker2", "kafka-replication"], "schemaVersion": 39, "version": 1,
            "editable": True, "refresh": "1m", "time": {"from": "now-6h", "to": "now"},
            "templating": {"list": templating}, "panels": panels}


def dashboard_queries() -> list[str]:
    """Every PromQL query of the dashboard: the variables' label_values selectors and the panels'."""
    return [*VARIABLE_QUERIES.values(), *(p[2] for p in PANELS)]


def dashboard_configmap(namespace: str) -> ConfigMap:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": _meta(names.DASHBOARD_CONFIGMAP, namespace, dict(names.DASHBOARD_LABEL)),
            "data": {DASHBOARD_KEY: json.dumps(dashboard(), indent=1, sort_keys=True) + "\n"}}


# ----------------------------------------------------------------- refusals


def rules_yaml(groups: list[JSON]) -> str:
    """The groups as a Prometheus rule file (what the operator writes and promtool reads)."""
    return yaml.safe_dump({"groups": groups}, sort_keys=True, width=4096)


def problems(model: Model, stack_plan: StackPlan | None = None) -> list[Problem]:
    """What the monitoring objects refuse: alerts or a dashboard without our exporter's series, a
    `monitoring.namespace` that another object of the stack already is, and a PrometheusRule too
    large for one Kubernetes object. (A checkpoint interval that is no whole number, which the
    checkpoint alert reads, is refused with the rules: infra/plan/failover.py.)"""
    out: list[Problem] = []
    monitoring = model.topology.monitoring
    if not (monitoring.prometheusOperator or monitoring.dashboard):
        return out
    if not monitoring.metrics or monitoring.exporter is not Exporter.jmxPrometheusExporter:
        asked = " and ".join(f for f in ("prometheusOperator", "dashboard") if getattr(monitoring, f))
        given = (f"metrics: {str(monitoring.metrics).lower()}, exporter: {monitoring.exporter.value}, "
                 f"{asked}: true")
        out.append(Problem("monitoring", "exporter" if monitoring.metrics else "metrics", given,
                           "metrics: true with exporter jmxPrometheusExporter for the alerts and the dashboard: "
                           "they read the series and labels of the JMX exporter's rules (flow, connect_cluster), "
                           f"or {asked}: false"))
    taken = {d.names(p).namespace: f"the namespace of flow {d.name}" for d in model.flows for p in d.parts}
    if model.audit is not None:
        taken[model.audit.namespace] = "the audit's namespace (audit.namespace)"
    if monitoring.namespace in taken:
        out.append(Problem("monitoring", "namespace", monitoring.namespace,
                           f"a namespace of its own: it is {taken[monitoring.namespace]}"))
    if out or stack_plan is None or not monitoring.prometheusOperator:
        return out
    whole = stack_plan
    for k in stack_plan.kubernetes_clusters or (None,):
        part = stack_plan.in_cluster(k) if k else stack_plan
        size = len(rules_yaml(rule_groups(model, part, whole)).encode())
        if size > MAX_RULE_BYTES:
            where = f" of Kubernetes cluster {k}" if k else ""
            out.append(Problem("monitoring", "alerts", f"a PrometheusRule{where} of {size} bytes",
                               f"at most {MAX_RULE_BYTES} bytes: fewer distinct thresholds across flows "
                               "(flows sharing thresholds share rules)"))
    return out
