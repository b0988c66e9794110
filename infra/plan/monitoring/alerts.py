"""The alert rules: per-flow thresholds, and the rules on connector and task states, replication
latency and progress, checkpoints, heartbeats and the audit, grouped by threshold."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, TypeVar

from contract.release import published_docs
from infra.core import names
from infra.core.manifests import JSON
from infra.plan import failover, metrics
from infra.plan.connectors import ConnectorKind, ConnectorPlan
from infra.plan.monitoring.operator import operator_rules
from infra.plan.monitoring.rule import regex_literal
from infra.plan.monitoring.rule import alert as _alert, alternatives as _alternatives, q as _q
from infra.plan.stack import heartbeat_replicators
from infra.plan.types import FlowPlan, PartPlan, StackPlan
from infra.topology.resolution import Model
from infra.topology.schema import Alerts, Flow


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
# The consumer's per-partition series under the topic's name as Kafka wrote it before 4.1, dots as
# underscores (FetchMetricsManager); 4.1+ adds the name as it is, a second series (KIP-1109:
# KAFKA-12469, apache/kafka#18232).
LEGACY_TOPIC = 'topic!~".*[.].*"'


# What the source task's poll() returned, before the transformations (WorkerSourceTask.
# recordPollReturned); `source_record_write_total` counts what is left after them (polled minus
# those a transformation dropped), so a flow whose filter drops every record (the loop filter of
# a bidirectional pair used active/passive) writes nothing while it keeps up.
RECORDS_POLLED = "kafka_connect_source_task_source_record_poll_total"


# The task producers' (infra/plan/metrics.py PRODUCER_ATTRIBUTES): records the target refused
# after the producer's retries, and the time the target's quotas held a response back.
PRODUCER_ERRORS = "kafka_producer_record_error_total"


PRODUCER_THROTTLE_MAX = "kafka_producer_produce_throttle_time_max"


# Authentications the broker refused (metrics.AUTH_ATTRIBUTES), on a new connection or when one
# authenticates again: the replication consumer's with the source, the task producers' with the
# target.
CONSUMER_AUTH_FAILED = ("kafka_consumer_failed_authentication_total", "kafka_consumer_failed_reauthentication_total")
PRODUCER_AUTH_FAILED = ("kafka_producer_failed_authentication_total", "kafka_producer_failed_reauthentication_total")


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


AUDIT_CHECKPOINT_STALE = "kafka_replication_audit_checkpoint_stale"


AUDIT_CERTIFICATE_EXPIRY = "kafka_replication_audit_certificate_expiry_timestamp_seconds"


# A Strimzi-managed cluster's operator renews its CAs this many days before they expire
# (CertificateAuthority.DEFAULT_CERTS_RENEWAL_DAYS, 30 at 0.48.0): from then on the cluster runs
# the renewed CA while the stack still holds the old copy, which stops working at its own expiry.
CERTIFICATE_WARNING_DAYS = 30


def _runbook_urls(rules: list[JSON], base: str | None) -> list[JSON]:
    """`runbook_url` (what Alertmanager templates and Grafana link, an absolute URL: the stack's
    monitoring.runbookBaseUrl, or the installed release's published docs) in place of the
    repository path, same section."""
    if base is None:
        return rules
    out = []
    for rule in rules:
        annotations = dict(rule["annotations"])
        section = annotations.pop("runbook").partition("#")[2]
        out.append({**rule, "annotations": {**annotations, "runbook_url": f"{base}#{section}"}})
    return out


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
    # Whose producers write where: the heartbeat connectors' into the SOURCE (docs/heartbeats.md),
    # the source and checkpoint connectors' into the target.
    heartbeat_connectors: tuple[str, ...] = ()
    checkpoint_connectors: tuple[str, ...] = ()


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
        tuple(c.name for c in connectors if c.runs),
        checkpoint_seconds,
        tuple(c.name for p in fp.parts for c in _connectors(p, ConnectorKind.heartbeat)),
        tuple(c.name for p in fp.parts for c in _connectors(p, ConnectorKind.checkpoint)))


def _increases(counters: tuple[str, ...], selector: str, window: str) -> str:
    """The sum of the counters' increases over the window: a client's counters of one kind (new
    connections' and re-authentications' failures), always registered together."""
    return " + ".join(f"increase({name}{selector}[{window}])" for name in counters)


def _flows(names_: list[str]) -> str:
    return f"flow=~{_q(_alternatives(names_))}"


def connector_rules(facts: list[_FlowFacts]) -> list[JSON]:
    rules = []
    for minutes, flows in _by_threshold([(f.limits.forMinutes, f.flow.name) for f in facts]):
        sel = _flows(flows)
        rules.append(_alert(
            "KafkaReplicationConnectorFailed",
            f'max by (flow, connect_cluster, connector) ({CONNECTOR_STATUS}{{{sel}, status="failed"}}) == 1',
            # Warning: its tasks are the worker's and run on with the task configurations they had
            # (recorded: tests/data/recordings/*/connector-failed.json copies on while the
            # connector is FAILED); a failed task is the critical alert.
            minutes, "warning", "Connector {{ $labels.connector }} of flow {{ $labels.flow }} has failed",
            "Kafka Connect reports connector {{ $labels.connector }} (Connect cluster {{ $labels.connect_cluster }}) "
            "FAILED. Its tasks run on with the task configurations they had, so records may still be copied, but "
            "the connector no longer follows the source: new topics, partitions and groups are not picked up, nor "
            "topic configurations synced, until it starts again with the cause fixed. Its KafkaConnector is NotReady "
            "(Connector has failed); read the connector's trace in its status (kubectl get kafkaconnector -o yaml) "
            "and the Connect pod logs."))
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
    # A Connect cluster that answers but runs no connector: its workers lost their assignments,
    # as they do when the group's coordinator and internal topics, on the target, are unreachable
    # (recorded: tests/data/recordings/*/target-down.json, where every connector and task series
    # goes and nothing else pages). Only clusters where the topology runs a connector.
    running_parts = [(f.limits.forMinutes, (f.flow.name, p.names.connect)) for f in facts for p in f.flow.parts
                     if any(c.runs for c in p.connectors)]
    for minutes, pairs in _by_threshold(running_parts):
        sel = (f"{_flows(sorted({fl for fl, _ in pairs}))}, "
               f"connect_cluster=~{_q(_alternatives([c for _, c in pairs]))}")
        rules.append(_alert(
            "KafkaReplicationConnectGroupDown",
            f"sum by (flow, connect_cluster) ({WORKER_CONNECTORS}{{{sel}}}) == 0", minutes, "critical",
            "Connect cluster {{ $labels.connect_cluster }} runs no connector (flow {{ $labels.flow }})",
            "The workers of {{ $labels.connect_cluster }} answer but run none of the flow's connectors: they lost "
            "their assignments, which happens when they cannot reach the Connect group's coordinator and internal "
            "topics on the flow's target cluster (brokers down, network, credentials). Nothing replicates, and "
            "the connector and task alerts are silent since their series are gone."))
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
    # MirrorSourceTask records a record's age when it polls it (record-age-ms: now - timestamp)
    # and its replication latency when the target acknowledges it (replication-latency-ms: now -
    # timestamp, commitRecord), so latency is age plus the time on the target side, and a
    # catch-up's old records carry both high. Latency minus age (per partition, the two maxima
    # of one window) is the target side alone: never more than its slowest record's, so a source
    # backlog never reads as a slow target; the age is RecordAgeHigh's.
    for (seconds, minutes), flows in _by_threshold(
            [((f.limits.replicationLatencySeconds, f.limits.forMinutes), f.flow.name) for f in facts]):
        sel = _flows(flows)
        rules.append(_alert(
            "KafkaReplicationLatencyHigh",
            f"max by ({by}) ({LATENCY_MAX}{{{sel}}} - {RECORD_AGE_MAX}{{{sel}}}) > {seconds * 1000}",
            minutes, "warning",
            "Writing {{ $labels.topic }} to {{ $labels.target }} takes over " + f"{seconds} s (flow {{{{ $labels.flow }}}})",
            "Records of {{ $labels.topic }} wait {{ $value }} ms between the source connector's read and "
            f"{{{{ $labels.target }}}}'s acknowledgement (replication latency minus record age; threshold "
            f"{seconds} s): the target or the Connect cluster's producer is slow (throttling, broker load, the "
            "network to the target). How old records are when they are read is KafkaReplicationRecordAgeHigh's.",
            f"> {seconds}s"))
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
        # From Kafka 4.1 the consumer reports a partition's lag twice, under the topic's name and, as
        # before, with its dots written as underscores (KIP-1109; the older form goes in 5.0): the
        # older form alone, which every release reports, so that a lag pages once (recorded:
        # tests/data/recordings/strimzi-1.2.0/source-link-narrow.json).
        sel = f"{{{_flows(flows)}, {client}, {LEGACY_TOPIC}}}"
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
    flows_all = sorted({f.flow.name for f in facts})
    if flows_all:
        # Two clients of a flow authenticate with the source: the source connectors' replication
        # consumer and the heartbeat connectors' producer (heartbeats go into the source).
        # MirrorSourceTask.poll logs a KafkaException and returns nothing, so a refused consumer
        # leaves its task RUNNING, copying nothing; a refused producer fails its task.
        sel = f"{{{_flows(flows_all)}, {client}}}"
        refused = _increases(CONSUMER_AUTH_FAILED, sel, window)
        keep = "flow, connect_cluster, connector"
        expr = f'max by ({keep}) (label_replace({refused}, "connector", "$1", "client_id", {_q(CONSUMER_CONNECTOR)})) > 0'
        heartbeats = sorted({c for f in facts for c in f.heartbeat_connectors})
        if heartbeats:
            hsel = f"{{{_flows(flows_all)}, connector=~{_q(_alternatives(heartbeats))}}}"
            emitted = _increases(PRODUCER_AUTH_FAILED, hsel, window)
            expr += f" or max by ({keep}) ({emitted}) > 0"
        rules.append(_alert(
            "KafkaReplicationSourceAuthenticationFails", expr, None, "critical",
            "The source refuses the credentials of {{ $labels.connector }} (flow {{ $labels.flow }})",
            "The source's brokers refused {{ $value }} authentications of {{ $labels.connector }} in the last "
            f"{PROGRESS_WINDOW_MINUTES} minutes (Connect cluster {{{{ $labels.connect_cluster }}}}; a source "
            "connector's replication consumer, or a heartbeat connector's producer, which writes the heartbeats into "
            "the source): its credential was revoked, expired or rotated on the brokers and not in the stack "
            "(docs/operations.md, Credential rotation). A source connector's tasks stay RUNNING and copy nothing "
            "(MirrorSourceTask logs each failed poll); a heartbeat connector's task fails.",
            f"refused in {window}"))
    # Only the source connectors the topology runs: a paused task keeps its consumer and its last
    # lag (a Value stat) while writing nothing, which is no fault when the topology paused it.
    sources = [((f.limits.forMinutes), c) for f in facts for c in f.source_connectors if c in f.running]
    for minutes, connectors in _by_threshold(sources):
        flows = sorted({f.flow.name for f in facts if set(f.source_connectors) & set(connectors)})
        of_these = ".*\\|(?:" + _alternatives(connectors) + ")-[0-9]+\\|" + metrics.REPLICATION_CONSUMER_ROLE
        sel = f"{{{_flows(flows)}, client_id=~{_q(of_these)}}}"
        keep = "flow, connect_cluster, connector"
        lag = f'label_replace({RECORDS_LAG}{sel}, "connector", "$1", "client_id", {_q(CONSUMER_CONNECTOR)})'
        polled = (f"changes({RECORDS_POLLED}{{{_flows(flows)}, connector=~{_q(_alternatives(connectors))}}}"
                  f"[{window}])")
        rules.append(_alert(
            "KafkaReplicationNoProgress",
            f"max by ({keep}) ({lag}) > 0 unless on ({keep}) max by ({keep}) ({polled}) > 0",
            minutes, "critical",
            "Connector {{ $labels.connector }} reads nothing while its source has records (flow {{ $labels.flow }})",
            f"Its consumer lags behind the source, yet its tasks handed no record on for {PROGRESS_WINDOW_MINUTES} "
            "minutes: a task is stuck (the target unreachable or refusing writes, so the producer blocks and "
            "the task polls no more; a poison record), though it may not be FAILED. Records a transformation "
            "drops (a loop filter) count as progress.", f"lag > 0, nothing polled in {window}"))
    return rules


def target_rules(facts: list[_FlowFacts]) -> list[JSON]:
    """What the target does to the source connectors' writes, from their producers."""
    rules = []
    window = f"{PROGRESS_WINDOW_MINUTES}m"
    keep = "flow, connect_cluster, connector"

    def selector(connectors: list[str]) -> str:
        flows = sorted({f.flow.name for f in facts if set(f.source_connectors) & set(connectors)})
        return f"{{{_flows(flows)}, connector=~{_q(_alternatives(connectors))}}}"
    every = sorted({c for f in facts for c in f.source_connectors})
    if every:
        # At once: each refused record is a fault, and the task fails with it.
        rules.append(_alert(
            "KafkaReplicationTargetRefusesWrites",
            f"max by ({keep}) (increase({PRODUCER_ERRORS}{selector(every)}[{window}])) > 0", None, "critical",
            "The target refuses records of {{ $labels.connector }} (flow {{ $labels.flow }})",
            "The producer of a task of {{ $labels.connector }} (Connect cluster {{ $labels.connect_cluster }}) "
            f"failed {{{{ $value }}}} records in the last {PROGRESS_WINDOW_MINUTES} minutes after its retries: the "
            "target refuses them (authorization, a record too large, the topic gone, the brokers unreachable "
            "past delivery.timeout.ms). The task fails with them; read its trace.", f"errors in {window}"))
    # The producers that write to the target: the source connectors' (records) and the checkpoint
    # connectors' (checkpoints); the heartbeat connectors' write into the source (source_rules).
    writers = sorted({c for f in facts for c in (*f.source_connectors, *f.checkpoint_connectors)})
    if writers:
        flows = sorted({f.flow.name for f in facts if set(writers) & {*f.source_connectors, *f.checkpoint_connectors}})
        sel = f"{{{_flows(flows)}, connector=~{_q(_alternatives(writers))}}}"
        refused = _increases(PRODUCER_AUTH_FAILED, sel, window)
        rules.append(_alert(
            "KafkaReplicationTargetAuthenticationFails",
            f"max by ({keep}) ({refused}) > 0", None, "critical",
            "The target refuses the credentials of {{ $labels.connector }} (flow {{ $labels.flow }})",
            "The target's brokers refused {{ $value }} authentications of {{ $labels.connector }}'s producer in the "
            f"last {PROGRESS_WINDOW_MINUTES} minutes (Connect cluster {{{{ $labels.connect_cluster }}}}): its "
            "credential was revoked, expired or rotated on the brokers and not in the stack (docs/operations.md, "
            "Credential rotation). Nothing it writes reaches the target.", f"refused in {window}"))
    sources = [(f.limits.forMinutes, c) for f in facts for c in f.source_connectors]
    for minutes, connectors in _by_threshold(sources):
        rules.append(_alert(
            "KafkaReplicationTargetThrottles",
            f"max by ({keep}) ({PRODUCER_THROTTLE_MAX}{selector(connectors)}) > 0", minutes, "warning",
            "The target throttles the writes of {{ $labels.connector }} (flow {{ $labels.flow }})",
            "The target's brokers held responses to {{ $labels.connector }}'s producer back by up to "
            "{{ $value }} ms (Connect cluster {{ $labels.connect_cluster }}): a client quota on the replication "
            "user or its client id caps the flow. Raise the quota, or expect the record age to grow.",
            "throttled"))
    return rules


def checkpoint_rules(facts: list[_FlowFacts]) -> list[JSON]:
    rules = []
    items = [((f.checkpoint_seconds, f.limits.forMinutes), f.flow.name) for f in facts if f.checkpoint_seconds]
    for (seconds, minutes), flows in _by_threshold(items):
        # Per connector, not per group: Kafka records every group's and partition's checkpoint
        # latency into one sensor (MirrorCheckpointMetrics.GroupMetrics: `metrics.sensor(
        # "checkpoint-latency")` by one name, 3.8.0 to 4.x), so each group's series carries the
        # latest write of any group.
        rules.append(_alert(
            "KafkaReplicationCheckpointsLate",
            f"max by (flow, connect_cluster, source, target) ({CHECKPOINT_LATENCY}{{{_flows(flows)}}}) "
            f"> {seconds * 1000}",
            minutes, "warning", "Checkpoint writes of flow {{ $labels.flow }} are slow",
            "The checkpoint connector's newest checkpoint took {{ $value }} ms from reading its group's "
            f"offsets on {{{{ $labels.source }}}} to being written to {{{{ $labels.target }}}}, more than "
            f"{seconds} s, twice the emit and sync intervals: the source answers slowly, or the target refuses "
            "or throttles the checkpoint connector's writes. (Kafka exports no checkpoint age, and one latency "
            "for all groups: whether a group's checkpoints trail its commits is what the failover readiness "
            "check reads.)",
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
               for c in _connectors(part, ConnectorKind.heartbeat) if c.runs}
    terms: list[tuple[tuple[int, int], str]] = []
    for (source, target), connector in sorted(copiers.items()):
        if (source, target) not in emitted or connector not in where:
            continue  # nothing emits heartbeats into the source, or the copier runs in another cluster
        fp, part, copier = where[connector]
        if not copier.runs:
            continue  # the topology stops or pauses it: no heartbeat is expected
        topic = names.replicated_topic(source, names.HEARTBEATS_TOPIC)  # both policies prefix heartbeats
        limit = limits[fp.name]
        where_ = f"flow={_q(fp.name)}, connect_cluster={_q(part.names.connect)}"
        # Not while the Connect cluster has lost its assignments: ConnectGroupDown names that
        # cause (the target unreachable). Kafka 3.8's workers (CSM 1.2) keep the lost tasks'
        # MirrorMaker 2 metrics, frozen, where later ones drop them (recorded: target-down).
        terms.append(((limit.heartbeatAgeSeconds, limit.forMinutes),
                      f"(max by (flow, connect_cluster, source, target, topic) "
                      f"(changes({RECORD_COUNT}{{{where_}, topic={_q(topic)}}}[{limit.heartbeatAgeSeconds}s])) == 0 "
                      f"unless on (flow, connect_cluster) sum by (flow, connect_cluster) "
                      f"({WORKER_CONNECTORS}{{{where_}}}) == 0)"))
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
        "(exit 1) or could not audit (exit 2). Its findings are in the Job's log (kubectl -n " + n.namespace +
        " logs job/{{ $labels.job_name }}, kept at least a day after it ends); the whole report is on the "
        "reports volume (docs/audit.md).")]
    if audit.pushgateway:
        rules.append(_alert(
            "KafkaReplicationAuditFindings",
            f"max by (job) ({AUDIT_STATUS}{{job={_q(names.AUDIT)}}}) > 0",
            minutes, "warning", "The replication audit reports faults",
            "The last audit pushed status {{ $value }} (1: records missing, duplicated or unexpected, "
            "or heartbeats too old; 2: it could not audit). Read its report (docs/audit.md)."))
        # Kafka exports no checkpoint age: the audit reads the checkpoints and each group's commits
        # on its schedule, as the failover readiness check does, and pushes what it found per group.
        rules.append(_alert(
            "KafkaReplicationCheckpointsStale",
            f"max by (job, flow, group) ({AUDIT_CHECKPOINT_STALE}{{job={_q(names.AUDIT)}}}) > 0",
            minutes, "warning", "Checkpoints of group {{ $labels.group }} are stale (flow {{ $labels.flow }})",
            "The last audit found the newest checkpoint of consumer group {{ $labels.group }} older than "
            f"{audit.thresholds.maxCheckpointAgeSeconds} s while the group committed on the source more than the "
            "source connector's offset.lag.max records past it: consumers failing over to the target now would "
            "read that much again. The flow's checkpoint connector is stopped or failing, or does not select the "
            "group (kafka-replication status; the audit's report names the records, docs/audit.md)."))
        rules.append(_alert(
            "KafkaReplicationCertificateExpiring",
            f"min by (job, cluster, item) ({AUDIT_CERTIFICATE_EXPIRY}{{job={_q(names.AUDIT)}}}) - time() "
            f"< {CERTIFICATE_WARNING_DAYS * 86400}",
            minutes, "warning", "The stack's {{ $labels.item }} of cluster {{ $labels.cluster }} expires soon",
            "The " + "{{ $labels.item }} the stack holds for cluster {{ $labels.cluster }} (the copy every connector "
            "and the audit read) expires in {{ $value | humanizeDuration }}, less than "
            f"{CERTIFICATE_WARNING_DAYS} days: its owner has renewed it or will (a Strimzi cluster's operator "
            "renews its CAs 30 days ahead), and once the copy expires every connection to the cluster fails. "
            "Set the renewed certificate in the stack beside the current one and run pulumi up "
            "(docs/operations.md, rotation).", f"< {CERTIFICATE_WARNING_DAYS}d"))
    return rules


def rule_groups(model: Model, stack_plan: StackPlan, whole: StackPlan | None = None) -> list[JSON]:
    """The PrometheusRule's groups (also what `promtool check rules` reads)."""
    facts = [_facts(model, fp) for fp in stack_plan.flows]
    groups = [("connectors", connector_rules(facts)), ("replication", replication_rules(facts)),
              ("target", target_rules(facts)), ("checkpoints", checkpoint_rules(facts)),
              ("heartbeats", heartbeat_rules(model, stack_plan, whole or stack_plan, facts)),
              ("audit", audit_rules(model, stack_thresholds(model).forMinutes)),
              ("operator", operator_rules(stack_plan))]
    # The stack's own, else the installed release's docs at its tag (contract/release.py).
    published = published_docs()
    base = model.topology.monitoring.runbookBaseUrl or (f"{published}/operations.md" if published else None)
    return [{"name": f"kafka-replication.{name}", "rules": _runbook_urls(rules, base)} for name, rules in groups
            if rules]
