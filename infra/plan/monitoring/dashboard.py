"""The Grafana dashboard: its variables and panels, on the series the rules read."""

from __future__ import annotations

from infra.core.manifests import JSON
from infra.plan.monitoring.alerts import (BYTE_RATE, CHECKPOINT_LATENCY, CONNECTOR_STATUS, DOCS, LATENCY_MAX,
                                          RECORD_AGE_MAX, RECORD_COUNT, RECORD_RATE, RECORDS_LAG, REPLICATION_CONSUMER,
                                          TASK_STATUS, _q)

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
