"""The Grafana dashboard: its variables and panels, on the series the rules read."""

from __future__ import annotations

from dataclasses import dataclass

from infra.core.manifests import JSON
from infra.core.names import HEARTBEAT_CONNECTOR_SUFFIX
from infra.plan.monitoring.alerts import (BYTE_RATE, CHECKPOINT_LATENCY, CONNECTOR_STATUS, LATENCY_MAX,
                                          LEGACY_TOPIC, RECORD_AGE_MAX, RECORD_COUNT, RECORD_RATE, RECORDS_LAG,
                                          REPLICATION_CONSUMER, TASK_STATUS, WORKER_CONNECTORS)
from infra.plan.monitoring.rule import DOCS, q as _q

DASHBOARD_UID = "kafka-replication"


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


WORKER_TASKS = "kafka_connect_worker_task_count"
REBALANCES = "kafka_connect_worker_rebalance_completed_rebalances_total"
REBALANCING = "kafka_connect_worker_rebalance_rebalancing"
TASK_RECORD_FAILURES = "kafka_connect_task_error_total_record_failures"
PRODUCER = "kafka_producer_"
# The panels Strimzi's MirrorMaker 2 dashboard has (strimzi-kafka-mirror-maker-2.json, 1.2.0):
# bytes in from the source and out to the target, offset commit time, records not yet acknowledged.
BYTES_READ = "kafka_consumer_incoming_byte_total"  # the replication consumer's
BYTES_WRITTEN = "kafka_producer_outgoing_byte_total"  # the task producers' (_TO_TARGET's to the target)
OFFSET_COMMIT_TIME = "kafka_connect_connector_task_offset_commit_avg_time_ms"
# Records a source task polled and handed to its producer that the target has not acknowledged
# yet: what its next offset commit waits for (WorkerSourceTask's SubmittedRecords).
NOT_ACKNOWLEDGED = "kafka_connect_source_task_source_record_active_count"


@dataclass(frozen=True)
class Panel:
    title: str
    unit: str
    query: str
    legend: str = ""
    kind: str = "timeseries"  # or "stat" (one number), "table" (the query's instant result)
    width: int = 12


def _both(first: str, first_name: str, second: str, second_name: str) -> str:
    """Two queries of the same labels on one chart, told apart by a `series` label (`or` alone
    would keep only the first where both have a value)."""
    def named(query: str, name: str) -> str:
        return f'label_replace({query}, "series", "{name}", "", "")'
    return f"{named(first, first_name)} or {named(second, second_name)}"


def _per_pod(query: str, aggregate: str = "max") -> str:
    """A JVM series of the Connect pods (the exporter agent's JvmMetrics: no `flow` or
    `connect_cluster`), given them from the pod's worker series, so that the variables filter it."""
    worker = f"group by (namespace, pod, flow, connect_cluster) ({WORKER_CONNECTORS}{{{_F}}})"
    return (f"{aggregate} by (flow, connect_cluster, pod) ({query} * on (namespace, pod) "
            f"group_left (flow, connect_cluster) {worker})")


def _stat(title: str, unit: str, query: str) -> Panel:
    return Panel(title, unit, query, kind="stat", width=4)


# Every connector's task producers: the source and checkpoint connectors' write to the target
# (records, checkpoints), the heartbeat connector's into the source (connectors.py).
_TARGET_WRITES = f"{{{_F}}}"
# Those that write to the target alone, as the alerts on target writes select them (alerts.py).
_TO_TARGET = f'{{{_F}, connector!~".+{HEARTBEAT_CONNECTOR_SUFFIX}"}}'
# Rows, each a title and its panels, in the order on-call reads them: is anything down, is it
# behind, why (the source side, the target side, the workers).
ROWS: tuple[tuple[str, tuple[Panel, ...]], ...] = (
    ("Overview", (
        _stat("Flows", "none", f"count(count by (flow) ({CONNECTOR_STATUS}{{{_F}}}))"),
        _stat("Connectors not running", "none",
              f'count(max by (flow, connector) ({CONNECTOR_STATUS}{{{_F}, status!="running"}}) == 1) or vector(0)'),
        _stat("Tasks failed", "none",
              f'count(max by (flow, connector, task) ({TASK_STATUS}{{{_F}, status="failed"}}) == 1) or vector(0)'),
        _stat("Records/s", "rps", f"sum({RECORD_RATE}{{{_FST}}})"),
        _stat("Bytes/s", "Bps", f"sum({BYTE_RATE}{{{_FST}}})"),
        _stat("Worst record age", "ms", f"max({RECORD_AGE_MAX}{{{_FST}}})"),
    )),
    ("Connectors and tasks", (
        Panel("Connector status", "none",
              f"max by (flow, connect_cluster, connector, status) ({CONNECTOR_STATUS}{{{_F}}})",
              "{{connector}} {{status}}"),
        Panel("Task status", "none",
              f"max by (flow, connect_cluster, connector, task, status) ({TASK_STATUS}{{{_F}}})",
              "{{connector}}/{{task}} {{status}}"),
        Panel("Records failed in tasks (per 5 minutes)", "none",
              f"sum by (flow, connector) (increase({TASK_RECORD_FAILURES}{{{_F}}}[5m]))", "{{flow}} {{connector}}"),
    )),
    ("Replication", (
        Panel("Time on the target side (replication latency minus record age, max)", "ms",
              f"max by (flow, source, target, topic) ({LATENCY_MAX}{{{_FST}}} - {RECORD_AGE_MAX}{{{_FST}}})",
              "{{flow}} {{topic}}"),
        Panel("Record age when read (max)", "ms",
              f"max by (flow, source, target, topic) ({RECORD_AGE_MAX}{{{_FST}}})", "{{flow}} {{topic}}"),
        Panel("Replication latency (max)", "ms",
              f"max by (flow, source, target, topic) ({LATENCY_MAX}{{{_FST}}})", "{{flow}} {{topic}}"),
        Panel("Throughput (records/s)", "rps",
              f"sum by (flow, source, target, topic) ({RECORD_RATE}{{{_FST}}})", "{{flow}} {{topic}}"),
        Panel("Throughput (bytes/s)", "Bps",
              f"sum by (flow, source, target, topic) ({BYTE_RATE}{{{_FST}}})", "{{flow}} {{topic}}"),
    )),
    # The lag's series under the topic's name as every release writes it (alerts.LEGACY_TOPIC):
    # from Kafka 4.1 each partition is reported twice, once under the name as it is.
    ("Source lag", (
        Panel("Source consumer lag (records)", "none",
              f"sum by (flow, connect_cluster, topic) ({RECORDS_LAG}{{{_F}, client_id=~{_q(REPLICATION_CONSUMER)}, "
              f"{LEGACY_TOPIC}}})",
              "{{flow}} {{topic}}"),
        Panel("Most lagging partitions", "none",
              f"topk(10, max by (flow, topic, partition) ({RECORDS_LAG}{{{_F}, "
              f"client_id=~{_q(REPLICATION_CONSUMER)}, {LEGACY_TOPIC}}}))", kind="table"),
        Panel("Bytes read from the source (per second)", "Bps",
              f"sum by (flow, connect_cluster) (rate({BYTES_READ}{{{_F}, client_id=~{_q(REPLICATION_CONSUMER)}}}[5m]))",
              "{{flow}} {{connect_cluster}}"),
    )),
    ("Checkpoints and heartbeats", (
        # One series per flow: Kafka records every group's latency into one sensor (alerts.py).
        Panel("Checkpoint write latency (newest, any group)", "ms",
              f"max by (flow, source, target) ({CHECKPOINT_LATENCY}{{{_FST}}})", "{{flow}} {{source}} -> {{target}}"),
        Panel("Heartbeats replicated (per 5 minutes)", "none",
              f'sum by (flow, source, target, topic) (delta({RECORD_COUNT}{{{_FST}, topic=~".+\\\\.heartbeats"}}[5m]))',
              "{{source}} -> {{target}}"),
    )),
    ("Writes to the target", (
        Panel("Record errors and retries (per second)", "rps",
              _both(f"sum by (flow, connector) (rate({PRODUCER}record_error_total{_TARGET_WRITES}[5m]))", "errors",
                    f"sum by (flow, connector) (rate({PRODUCER}record_retry_total{_TARGET_WRITES}[5m]))", "retries"),
              "{{flow}} {{connector}} {{series}}"),
        Panel("Throttled by the target (max)", "ms",
              f"max by (flow, connector) ({PRODUCER}produce_throttle_time_max{_TARGET_WRITES})", "{{flow}} {{connector}}"),
        Panel("Waiting for producer buffer (ratio)", "percentunit",
              f"max by (flow, connector) ({PRODUCER}bufferpool_wait_ratio{_TARGET_WRITES})", "{{flow}} {{connector}}"),
        Panel("Produce request latency (avg)", "ms",
              f"max by (flow, connector) ({PRODUCER}request_latency_avg{_TARGET_WRITES})", "{{flow}} {{connector}}"),
        Panel("Bytes written to the target (per second)", "Bps",
              f"sum by (flow, connector) (rate({BYTES_WRITTEN}{_TO_TARGET}[5m]))", "{{flow}} {{connector}}"),
        Panel("Records not yet acknowledged by the target", "none",
              f"sum by (flow, connector) ({NOT_ACKNOWLEDGED}{_TO_TARGET})", "{{flow}} {{connector}}"),
        Panel("Offset commit time (avg)", "ms",
              f"max by (flow, connector) ({OFFSET_COMMIT_TIME}{_TARGET_WRITES})", "{{flow}} {{connector}}"),
    )),
    ("Workers", (
        Panel("Connectors and tasks per worker", "none",
              _both(f"max by (flow, connect_cluster, pod) ({WORKER_CONNECTORS}{{{_F}}})", "connectors",
                    f"max by (flow, connect_cluster, pod) ({WORKER_TASKS}{{{_F}}})", "tasks"),
              "{{pod}} {{series}}"),
        Panel("Rebalances (per 15 minutes)", "none",
              f"max by (flow, connect_cluster, pod) (increase({REBALANCES}{{{_F}}}[15m]))", "{{pod}}"),
        Panel("Rebalancing", "none", f"max by (flow, connect_cluster, pod) ({REBALANCING}{{{_F}}})", "{{pod}}"),
    )),
    ("JVM", (
        Panel("Heap (used and max)", "bytes",
              _both(_per_pod('jvm_memory_used_bytes{area="heap"}'), "used",
                    _per_pod('jvm_memory_max_bytes{area="heap"}'), "max"), "{{pod}} {{series}}"),
        Panel("Time in garbage collection (share)", "percentunit",
              _per_pod("rate(jvm_gc_collection_seconds_sum[5m])", "sum"), "{{pod}}"),
        Panel("CPU (cores)", "none", _per_pod("rate(process_cpu_seconds_total[5m])"), "{{pod}}"),
        Panel("Threads", "none", _per_pod("jvm_threads_current"), "{{pod}}"),
    )),
)
PANELS: tuple[Panel, ...] = tuple(p for _, panels in ROWS for p in panels)


def dashboard() -> JSON:
    """The Grafana dashboard (schema 39): the four variables, then a row per ROWS entry with its
    panels, stats six to a line, charts two."""
    datasource = {"type": "prometheus", "uid": "${datasource}"}
    templating: list[JSON] = [{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source",
                               "current": {}, "hide": 0}]
    for name in VARIABLES:
        templating.append({"name": name, "label": name.replace("_", " "), "type": "query", "datasource": datasource,
                           "query": {"query": VARIABLE_QUERIES[name], "refId": name},
                           "definition": VARIABLE_QUERIES[name], "refresh": 2, "includeAll": True, "multi": True,
                           "allValue": ALL_VALUES, "current": {"text": "All", "value": "$__all"}, "sort": 1,
                           "hide": 0})
    panels: list[JSON] = []
    y = 0
    for row, members in ROWS:
        panels.append({"id": len(panels) + 1, "type": "row", "title": row, "collapsed": False,
                       "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
        y += 1
        x, height = 0, 0
        for p in members:
            h = 4 if p.kind == "stat" else 8
            if x + p.width > 24:
                x, y = 0, y + height
            target: JSON = {"refId": "A", "expr": p.query, "legendFormat": p.legend, "datasource": datasource}
            if p.kind == "table":
                target.update(instant=True, format="table")
            panels.append({"id": len(panels) + 1, "type": p.kind, "title": p.title, "datasource": datasource,
                           "gridPos": {"h": h, "w": p.width, "x": x, "y": y},
                           "fieldConfig": {"defaults": {"unit": p.unit}, "overrides": []}, "targets": [target]})
            x, height = x + p.width, h
        y += height
    return {"uid": DASHBOARD_UID, "title": "Kafka replication (MirrorMaker 2 on KafkaConnect)",
            "description": f"Flows deployed by kafka-replication; {DOCS}#dashboard",
            "tags": ["kafka", "mirrormaker2", "kafka-replication"], "schemaVersion": 39, "version": 1,
            "editable": True, "refresh": "1m", "time": {"from": "now-6h", "to": "now"},
            "templating": {"list": templating}, "panels": panels}


def dashboard_queries() -> list[str]:
    """Every PromQL query of the dashboard: the variables' label_values selectors and the panels'."""
    return [*VARIABLE_QUERIES.values(), *(p.query for p in PANELS)]
