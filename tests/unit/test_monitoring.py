"""The monitoring objects (infra/plan/monitoring/): the PodMonitor, the PrometheusRule and the Grafana
dashboard as rendered, field by field; every rule checked by `promtool check rules` and every
alert unit-tested by `promtool test rules` on series shaped as the real worker's scrape shows
(tests/data/scrape/*.txt, written by the dev stack's runtime test, tests/support/worker_metrics.py),
firing exactly the expected alert with its exact labels and annotations, and nothing on a healthy
set; every series and label the rules and the dashboard read present in every release's scrape.

promtool comes from Debian's prometheus package (`make promtool`); without it the promtool tests
skip, unless APISERVER_REQUIRED=1 (CI), where they fail.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from infra.core import releases
from infra.core.errors import TopologyError
from infra.plan import monitoring
from infra.plan.monitoring import DEFAULTS, Thresholds
from infra.tools import render
from tests.support.monitoring import (FLOW, MONITORED, SCRAPE_LABELS, TARGET_LABELS, all_queries, firing_cases,
                                      groups_of, model_of, monitored, plans)
from tests.support.stacks import ROOT, by_kind_name, doc_topology, on_release, render_topology

SCRAPES = ROOT / "tests" / "data" / "scrape"


def alerts_of(topology: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for group in groups_of(topology):
        for rule in group["rules"]:
            out.setdefault(rule["alert"], []).append(rule)
    return out


# ----------------------------------------------------------------- the objects, field by field


def test_dev_renders_the_pod_monitor_rule_and_dashboard(tmp_path):
    rendered = render.run("dev", placeholder_secrets=True)
    objects = by_kind_name(rendered.objects())
    labels = {"app.kubernetes.io/component": "monitoring", "app.kubernetes.io/managed-by": "pulumi",
              "app.kubernetes.io/part-of": "kafka-replication", "release": "prometheus"}
    assert objects[("Namespace", "replication-monitoring")]["metadata"] == {
        "name": "replication-monitoring", "labels": {k: v for k, v in labels.items() if k != "release"}}
    assert objects[("PodMonitor", "kafka-replication")] == {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
        "metadata": {"name": "kafka-replication", "namespace": "replication-monitoring", "labels": labels},
        "spec": {"selector": {"matchLabels": {"strimzi.io/kind": "KafkaConnect"},
                              "matchExpressions": [
                                  {"key": "kafka-replication.io/flow", "operator": "In", "values": [FLOW]},
                                  {"key": "strimzi.io/cluster", "operator": "In", "values": [FLOW]}]},
                 "namespaceSelector": {"matchNames": [FLOW]},
                 "podMetricsEndpoints": [{"port": "tcp-prometheus", "path": "/metrics"}]}}
    rule = objects[("PrometheusRule", "kafka-replication")]
    assert rule["metadata"]["labels"] == labels
    assert [g["name"] for g in rule["spec"]["groups"]] == [
        "kafka-replication.connectors", "kafka-replication.replication", "kafka-replication.target",
        "kafka-replication.checkpoints", "kafka-replication.heartbeats", "kafka-replication.audit",
        "kafka-replication.operator"]
    board = objects[("ConfigMap", "kafka-replication-dashboard")]
    assert board["metadata"]["labels"] == {"app.kubernetes.io/component": "monitoring",
                                           "app.kubernetes.io/managed-by": "pulumi",
                                           "app.kubernetes.io/part-of": "kafka-replication",
                                           "grafana_dashboard": "1"}
    assert list(board["data"]) == ["kafka-replication.json"]
    out = tmp_path / "out"
    written = render.write(rendered, out)
    assert sorted(w for w in written if w.startswith("replication-monitoring/")) == [
        "replication-monitoring/ConfigMap-kafka-replication-dashboard.yaml",
        "replication-monitoring/ConfigMap-kafka-replication-kube-state-metrics.yaml",
        "replication-monitoring/Namespace-replication-monitoring.yaml",
        "replication-monitoring/PodMonitor-kafka-replication.yaml",
        "replication-monitoring/PrometheusRule-kafka-replication.yaml"]
    summary = render.summary(rendered)
    assert "  monitoring  (namespace replication-monitoring): + 5 objects" in summary.splitlines()


def test_nothing_without_prometheus_operator_or_dashboard(tmp_path):
    rendered = render_topology(tmp_path, doc_topology(), secrets={})
    assert not [o for o in rendered.objects() if monitoring.is_monitoring(o["metadata"]["labels"])]
    assert not [r for r in rendered.resources if "monitoring" in r.type]
    assert not [o for o in rendered.objects() if o["apiVersion"].startswith("monitoring.coreos.com/")]


def test_only_the_objects_asked_for():
    (plan,) = plans(monitored(monitoring={"dashboard": True}))[2]
    assert [o["kind"] for o in plan.objects] == ["ConfigMap"]
    (plan,) = plans(monitored(monitoring={"prometheusOperator": True}))[2]
    assert [(o["kind"], o["metadata"]["name"]) for o in plan.objects] == [
        ("PodMonitor", "kafka-replication"), ("PrometheusRule", "kafka-replication"),
        ("ConfigMap", "kafka-replication-kube-state-metrics")]
    assert plan.outputs == {"namespace": "replication-monitoring", "podMonitor": "kafka-replication",
                            "prometheusRule": "kafka-replication", "dashboardConfigMap": None,
                            "grafanaDashboard": None}
    (plan,) = plans(monitored(monitoring={"grafanaOperator": {"instanceSelector": {"dashboards": "grafana"}}}))[2]
    assert [(o["kind"], o["metadata"]["name"]) for o in plan.objects] == [("GrafanaDashboard", "kafka-replication")]
    assert plan.outputs == {"namespace": "replication-monitoring", "podMonitor": None, "prometheusRule": None,
                            "dashboardConfigMap": None, "grafanaDashboard": "kafka-replication"}


def test_the_grafana_dashboard_is_the_sidecar_s_dashboard_for_grafana_operator():
    grafana = {"instanceSelector": {"team": "data", "dashboards": "grafana"}, "allowCrossNamespaceImport": True,
               "folder": "Kafka replication"}
    (plan,) = plans(monitored(monitoring={"dashboard": True, "grafanaOperator": grafana,
                                          "labels": {"release": "prometheus"}}))[2]
    configmap, resource = plan.objects
    assert resource == {
        "apiVersion": "grafana.integreatly.org/v1beta1", "kind": "GrafanaDashboard",
        "metadata": {"name": "kafka-replication", "namespace": "replication-monitoring",
                     "labels": {"release": "prometheus", "app.kubernetes.io/part-of": "kafka-replication",
                                "app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/component": "monitoring"}},
        "spec": {"instanceSelector": {"matchLabels": {"dashboards": "grafana", "team": "data"}},
                 "json": configmap["data"]["kafka-replication.json"], "allowCrossNamespaceImport": True,
                 "folder": "Kafka replication"}}
    assert json.loads(resource["spec"]["json"]) == monitoring.dashboard()
    # The sidecar's label is the ConfigMap's alone: the operator's object is not a sidecar's to load.
    assert "grafana_dashboard" not in resource["metadata"]["labels"]
    # Defaults: no folder (the operator's, named after the namespace), no import across namespaces.
    (plan,) = plans(monitored(monitoring={"grafanaOperator": {"instanceSelector": {"dashboards": "grafana"}}}))[2]
    (resource,) = plan.objects
    assert sorted(resource["spec"]) == ["instanceSelector", "json"]
    # What the API server holds immutable, and so what replaces the object (components/monitoring.py).
    assert monitoring.GRAFANA_DASHBOARD_IMMUTABLE == ("spec.instanceSelector", "spec.uid")


def test_a_grafana_operator_section_that_cannot_work_is_refused(tmp_path):
    topo = monitored(monitoring={"grafanaOperator": {"instanceSelector": {}, "folder": "ops\nreplication"}})
    with pytest.raises(TopologyError) as refused:
        render_topology(tmp_path, topo, secrets={})
    assert [str(p) for p in refused.value.problems] == [
        "line 38: topology: monitoring.grafanaOperator.instanceSelector: got {}; expected at least 1 entry",
        "line 39: topology: monitoring.grafanaOperator.folder: got 'ops\\nreplication'; expected a folder title without "
        "control characters (at most 189 characters)"]
    topo = on_release(monitored(monitoring={"exporter": "strimziMetricsReporter",
                                            "grafanaOperator": {"instanceSelector": {"dashboards": "grafana"}}}),
                      "strimzi", "1.2.0")
    model, stack_plan, _ = model_of(topo)
    assert [str(p) for p in monitoring.problems(model, stack_plan)] == [
        "monitoring: exporter: got 'metrics: true, exporter: strimziMetricsReporter, grafanaOperator: set'; expected "
        "metrics: true with exporter jmxPrometheusExporter for the alerts and the dashboard: they read the series and "
        "labels of the JMX exporter's rules (flow, connect_cluster), or no grafanaOperator"]


def test_user_labels_cannot_replace_ours():
    (plan,) = plans(monitored(monitoring={"prometheusOperator": True,
                                          "labels": {"app.kubernetes.io/part-of": "other", "team": "data"}}))[2]
    assert plan.objects[0]["metadata"]["labels"] == {
        "team": "data", "app.kubernetes.io/part-of": "kafka-replication", "app.kubernetes.io/managed-by": "pulumi",
        "app.kubernetes.io/component": "monitoring"}


def test_each_kubernetes_cluster_monitors_its_own_flows():
    topo = yaml.safe_load((ROOT / "stacks" / "regions.yaml").read_text())
    topo["monitoring"] = {"prometheusOperator": True}
    model, stack_plan, found = plans(topo)
    assert [p.kubernetes for p in found] == list(stack_plan.kubernetes_clusters)
    for plan in found:
        inside = stack_plan.in_cluster(plan.kubernetes)
        pod_monitor = plan.kind("PodMonitor")
        assert pod_monitor is not None
        assert pod_monitor["spec"]["namespaceSelector"]["matchNames"] == sorted(
            {p.names.namespace for f in inside.flows for p in f.parts})
        assert plan.outputs["kubernetesCluster"] == plan.kubernetes
    # The regions stack, by name: each cluster's PodMonitor watches the namespaces of its own flows only.
    assert {p.kubernetes: p.kind("PodMonitor")["spec"]["namespaceSelector"]["matchNames"] for p in found} == {
        "k8s-eu-central": ["orders-us-east-to-eu", "orders-us-west-to-eu"],
        "k8s-us-east": ["reference-eu-to-us-east"], "k8s-us-west": ["reference-eu-to-us-west"]}


# ----------------------------------------------------------------- thresholds


def test_thresholds_flow_over_stack_over_defaults():
    topo = monitored(monitoring={**MONITORED, "alerts": {"replicationLatencySeconds": 120, "forMinutes": 15}})
    topo["flows"][0]["alerts"] = {"replicationLatencySeconds": 30, "sourceLagRecords": 0}
    model, stack_plan, _ = model_of(topo)
    (fp,) = stack_plan.flows
    assert monitoring.thresholds(model, fp.flow.alerts) == Thresholds(
        replicationLatencySeconds=30, recordAgeSeconds=300, sourceLagRecords=0, heartbeatAgeSeconds=300, forMinutes=15)
    assert monitoring.stack_thresholds(model) == Thresholds(120, 300, 10_000, 300, 15)
    assert DEFAULTS == Thresholds(60, 300, 10_000, 300, 10)
    alerts = alerts_of(topo)
    (latency,) = alerts["KafkaReplicationLatencyHigh"]
    assert latency["expr"].endswith(") > 30000") and latency["for"] == "15m"
    (lag,) = alerts["KafkaReplicationSourceLagGrowing"]
    assert ") > 0 and max by" in lag["expr"]


def test_flows_sharing_a_threshold_share_a_rule():
    topo = monitored(flows=[{"source": "us-west", "target": "us-east", "topics": [f"{n}\\..*"], "name": n,
                             **({"alerts": {"recordAgeSeconds": 900}} if n == "c" else {})} for n in "abc"])
    (age_ab, age_c) = alerts_of(topo)["KafkaReplicationRecordAgeHigh"]
    assert 'flow=~"a|b"' in age_ab["expr"] and age_ab["expr"].endswith("> 300000")
    assert 'flow=~"c"' in age_c["expr"] and age_c["expr"].endswith("> 900000")
    (latency,) = alerts_of(topo)["KafkaReplicationLatencyHigh"]
    assert 'flow=~"a|b|c"' in latency["expr"]


@pytest.mark.parametrize("config,sync,expected", [
    ({}, {}, 240),                                                  # 2 x (60 + 60): Kafka's defaults
    ({"emit.checkpoints.interval.seconds": 30}, {"intervalSeconds": 15}, 90),
    ({"emit.checkpoints.interval.seconds": "45"}, {"enabled": False}, 90),  # no sync: emit only
    ({"emit.checkpoints.interval.seconds": -1}, {}, None),          # checkpoints switched off: no rule
])
def test_checkpoint_threshold_from_the_flow(config, sync, expected):
    topo = monitored()
    topo["flows"][0]["config"] = {"checkpoint": config}
    topo["flows"][0]["syncGroupOffsets"] = sync
    rules = alerts_of(topo).get("KafkaReplicationCheckpointsLate", [])
    if expected is None:
        assert rules == []
    else:
        (rule,) = rules
        assert rule["expr"].endswith(f"> {expected * 1000}")
        assert f"more than {expected} s" in rule["annotations"]["description"]


def test_no_checkpoint_rule_without_checkpoints():
    topo = monitored()
    topo["flows"][0]["checkpoints"] = False
    topo["flows"][0].pop("groups")
    assert "KafkaReplicationCheckpointsLate" not in alerts_of(topo)


def test_not_running_only_for_connectors_that_should_run():
    topo = monitored()
    topo["flows"][0]["state"] = {"checkpoint": "stopped"}
    (rule,) = alerts_of(topo)["KafkaReplicationConnectorNotRunning"]
    assert f'connector=~"{FLOW}-heartbeat|{FLOW}-source"' in rule["expr"]


def test_no_progress_only_for_source_connectors_that_run():
    """A paused task keeps its consumer and last lag while writing nothing: no fault when the
    topology paused it."""
    topo = monitored(flows=[{"source": "us-west", "target": "us-east", "sources": [
        {"name": "a", "topics": ["a.*"]}, {"name": "b", "topics": ["b.*"], "state": "paused"}]}])
    (rule,) = alerts_of(topo)["KafkaReplicationNoProgress"]
    assert f'client_id=~".*\\\\|(?:{FLOW}-source-a)-[0-9]+\\\\|replication-consumer"' in rule["expr"]
    assert f'connector=~"{FLOW}-source-a"' in rule["expr"]
    assert f"{FLOW}-source-b" not in rule["expr"]
    topo["flows"][0]["sources"][0]["state"] = "stopped"
    assert "KafkaReplicationNoProgress" not in alerts_of(topo)


def test_heartbeats_only_on_the_connector_that_copies_them():
    topo = monitored(flows=[{"source": "us-west", "target": "us-east", "topics": [t], "name": n}
                            for n, t in (("b-flow", "b.*"), ("a-flow", "a.*"))])
    model, _, _ = model_of(topo)
    (rule,) = alerts_of(topo)["KafkaReplicationHeartbeatsStale"]
    # The first running source connector of the pair by name (plan.heartbeat_replicators).
    # Not while that Connect cluster has lost its assignments (ConnectGroupDown says so).
    assert rule["expr"] == ('(max by (flow, connect_cluster, source, target, topic) '
                            '(changes(kafka_connect_mirror_mirrorsourceconnector_record_count{flow="a-flow", '
                            'connect_cluster="a-flow", topic="us-west.heartbeats"}[300s])) == 0 '
                            'unless on (flow, connect_cluster) sum by (flow, connect_cluster) '
                            '(kafka_connect_worker_connector_count{flow="a-flow", connect_cluster="a-flow"}) == 0)')
    topo["flows"][0]["heartbeats"] = topo["flows"][1]["heartbeats"] = False
    assert "KafkaReplicationHeartbeatsStale" not in alerts_of(topo)


def test_audit_rules_follow_the_audit_section():
    assert "kafka-replication.audit" not in [g["name"] for g in groups_of(monitored())]
    topo = monitored(audit={"schedule": "17 * * * *", "image": "registry.example.com/audit:1"})
    alerts = alerts_of(topo)
    assert "KafkaReplicationAuditFindings" not in alerts  # nothing pushed without a pushgateway
    (job,) = alerts["KafkaReplicationAuditJobFailed"]
    assert 'job_name=~"kafka-replication-audit-[0-9]+"' in job["expr"]
    topo["audit"]["pushgateway"] = "http://pushgateway.monitoring.svc:9091"
    (findings,) = alerts_of(topo)["KafkaReplicationAuditFindings"]
    assert findings["expr"] == 'max by (job) (kafka_replication_audit_status{job="kafka-replication-audit"}) > 0'


def test_every_alert_names_its_runbook_and_severity():
    topo = monitored(audit={"schedule": "17 * * * *", "image": "registry.example.com/audit:1",
                            "pushgateway": "http://pg:9091"})
    docs = (ROOT / "docs" / "operations.md").read_text()
    for name, rules in alerts_of(topo).items():
        for rule in rules:
            assert rule["labels"]["severity"] in ("warning", "critical")
            assert rule["annotations"]["runbook"] == f"docs/operations.md#{name.lower()}"
            assert set(rule["annotations"]) == {"summary", "description", "runbook"}
            if name == "KafkaReplicationCertificateExpiring":
                # A certificate is a cluster's, whichever flows read it: per cluster and item.
                assert re.findall(r"by \(([^)]*)\)", rule["expr"]) == ["job, cluster, item"]
            elif "Audit" not in name and name != "KafkaReplicationMetricsAbsent":  # absent() keeps its matchers' labels
                assert "flow" in re.findall(r"by \(([^)]*)\)", rule["expr"])[0]
        assert f"#### {name}" in docs, f"docs/operations.md has no section for {name}"


def test_runbook_urls_from_the_stack_s_base():
    """With monitoring.runbookBaseUrl, every alert carries `runbook_url`: the base, then the
    alert's section; a base that is no absolute http(s) URL is refused, saying what is allowed."""
    base = "https://github.com/acme/replication/blob/v1.4.0/docs/operations.md"
    topo = monitored()
    topo["monitoring"]["runbookBaseUrl"] = base
    alerts = alerts_of(topo)
    assert len(alerts) >= 8
    for name, rules in alerts.items():
        for rule in rules:
            assert rule["annotations"]["runbook_url"] == f"{base}#{name.lower()}"
            assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}
    for bad in ("docs/operations.md", "ftp://docs.example.com/ops.md", f"{base}#alerts"):
        topo["monitoring"]["runbookBaseUrl"] = bad
        with pytest.raises(TopologyError) as refused:
            alerts_of(topo)
        assert [str(p) for p in refused.value.problems] == [
            f"topology: monitoring.runbookBaseUrl: got {bad!r}; expected an http(s) URL without a #fragment (at most "
            "2048 characters)"]


def test_deterministic_and_sorted():
    topo = monitored(flows=[{"source": "us-west", "target": "us-east", "topics": [f"t{i}.*"], "name": f"f{i}"}
                            for i in (3, 1, 2)])
    again = copy.deepcopy(topo)
    again["flows"].reverse()
    assert groups_of(topo) == groups_of(again)


# ----------------------------------------------------------------- refusals


def test_problems_a_checkpoint_interval_that_is_no_number():
    topo = monitored()
    topo["flows"][0]["config"] = {"checkpoint": {"emit.checkpoints.interval.seconds": "1m"}}
    # Refused with the rules (infra/plan/failover.py reads the same interval for the failover wait).
    with pytest.raises(TopologyError) as exc:
        model_of(topo)
    assert [str(p) for p in exc.value.problems] == [
        f"flows[0] ({FLOW}): config.checkpoint.emit.checkpoints.interval.seconds: got '1m'; expected a whole "
        "number of seconds (Kafka reads it as a long)"]


def test_problems_a_namespace_already_taken(tmp_path):
    topo = monitored(monitoring={**MONITORED, "namespace": FLOW})
    model, stack_plan, _ = model_of(topo)
    assert [str(p) for p in monitoring.problems(model, stack_plan)] == [
        f"monitoring: namespace: got '{FLOW}'; expected a namespace of its own: it is the namespace of flow {FLOW}"]
    topo = monitored(monitoring={**MONITORED, "namespace": "replication-audit"},
                     audit={"schedule": "17 * * * *", "image": "registry.example.com/audit:1"})
    model, stack_plan, _ = model_of(topo)
    assert [str(p) for p in monitoring.problems(model, stack_plan)] == [
        "monitoring: namespace: got 'replication-audit'; expected a namespace of its own: it is the audit's "
        "namespace (audit.namespace)"]
    with pytest.raises(TopologyError, match="a namespace of its own"):
        render_topology(tmp_path, topo, secrets={})
    # Without the objects, the namespace is not used: no refusal.
    topo["monitoring"] = {"namespace": "replication-audit"}
    model, stack_plan, _ = model_of(topo)
    assert monitoring.problems(model, stack_plan) == []


def test_problems_alerts_without_the_series_they_read():
    for settings, field, given in (
            ({"metrics": False}, "metrics", "metrics: false, exporter: jmxPrometheusExporter, prometheusOperator and "
                                            "dashboard: true"),
            ({"exporter": "strimziMetricsReporter"}, "exporter",
             "metrics: true, exporter: strimziMetricsReporter, prometheusOperator and dashboard: true")):
        topo = on_release(monitored(monitoring={**MONITORED, **settings}), "strimzi", "1.2.0")
        model, stack_plan, _ = model_of(topo)
        assert [str(p) for p in monitoring.problems(model, stack_plan)] == [
            f"monitoring: {field}: got '{given}'; expected metrics: true with exporter jmxPrometheusExporter for the "
            "alerts and the dashboard: they read the series and labels of the JMX exporter's rules (flow, "
            "connect_cluster), or prometheusOperator and dashboard: false"]


def test_the_rule_stays_within_one_object():
    flows = [{"source": "us-west", "target": "us-east", "topics": [f"t{i}\\..*"], "name": f"flow-{i:03}",
              "checkpoints": False} for i in range(500)]
    same = monitored(flows=copy.deepcopy(flows))
    model, stack_plan, _ = model_of(same)
    assert monitoring.problems(model, stack_plan) == []
    size = len(monitoring.rules_yaml(monitoring.rule_groups(model, stack_plan)).encode())
    # One rule per alert: the flows' names once or twice each, and twice in each of the three
    # operator's rules (a KafkaConnect's and a KafkaConnector's series).
    assert size < 275_000, size
    for i, f in enumerate(flows):
        f["alerts"] = {"recordAgeSeconds": 1000 + i, "replicationLatencySeconds": 100 + i,
                       "sourceLagRecords": 1000 + i, "forMinutes": 1 + i % 1000 // 2}
    model, stack_plan, _ = model_of(monitored(flows=flows))
    (problem,) = monitoring.problems(model, stack_plan)
    assert problem.where == "monitoring" and problem.field == "alerts"
    assert re.fullmatch(r"a PrometheusRule of [0-9]+ bytes", problem.value)
    assert problem.allowed == ("at most 900000 bytes: fewer distinct thresholds across flows (flows sharing "
                               "thresholds share rules)")


# ----------------------------------------------------------------- series the scrape has

# Series shapes of the metrics contract (infra/plan/metrics.py), standing in until the runtime tier
# has written tests/data/scrape/*.txt: `name -> label names`.
CONTRACT: dict[str, frozenset[str]] = {
    "kafka_connect_connector_status": frozenset({"connector", "status"}),
    "kafka_connect_connector_task_status": frozenset({"connector", "task", "status"}),
    **{f"kafka_connect_mirror_mirrorsourceconnector_{a}": frozenset({"source", "target", "topic", "partition"})
       for a in ("record_count", "record_rate", "record_age_ms_max", "replication_latency_ms_max", "byte_rate")},
    "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms":
        frozenset({"source", "target", "group", "topic", "partition"}),
    "kafka_connect_source_task_source_record_write_total": frozenset({"connector", "task"}),
    "kafka_consumer_fetch_manager_records_lag": frozenset({"client_id", "topic", "partition"}),
}
STATIC = frozenset({"flow", "connect_cluster"})
# Series from elsewhere, with the labels their sources give them: kube-state-metrics' Job
# series, and the audit's push (spark/report.py, `job` from the Pushgateway's grouping key).
EXTERNAL: dict[str, frozenset[str]] = {
    "kube_job_status_failed": frozenset({"namespace", "job_name"}),
    "kube_job_status_succeeded": frozenset({"namespace", "job_name"}),
    "kube_job_status_start_time": frozenset({"namespace", "job_name"}),
    "kafka_replication_audit_status": frozenset({"job"}),
    "kafka_replication_audit_checkpoint_stale": frozenset({"job", "flow", "group"}),
    "kafka_replication_audit_certificate_expiry_timestamp_seconds": frozenset({"job", "cluster", "item"}),
    # kube-state-metrics on our configuration (monitoring.ksm_config): `warnings` and
    # `deprecated` are empty (no label, to Prometheus) unless such a condition is there.
    **{metric: frozenset({"flow", "exported_namespace", "name", "ready", "warnings", "deprecated"})
       for metric in ("kube_kafka_replication_connect_status", "kube_kafka_replication_connector_status")},
}


def scrape_files() -> list[Path]:
    return sorted(SCRAPES.glob("*.txt")) if SCRAPES.is_dir() else []


def scraped() -> dict[str, frozenset[str]] | None:
    """name -> label names present in EVERY scrape file (None before they exist)."""
    files = scrape_files()
    if not files:
        return None
    per_file = []
    for path in files:
        found: dict[str, set[str]] = {}
        for line in path.read_text().split():
            match = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}", line)
            assert match, f"{path.name}: not a series shape: {line!r}"
            found.setdefault(match.group(1), set()).update(filter(None, match.group(2).split(",")))
        per_file.append(found)
    common = set.intersection(*(set(f) for f in per_file))
    return {n: frozenset(set.intersection(*(f[n] for f in per_file))) for n in common}


def shapes() -> dict[str, frozenset[str]]:
    """What the rules may read: the scrape's shapes once they exist (else the contract's), and the
    external series."""
    found = scraped()
    worker = found if found is not None else {n: labels | STATIC for n, labels in CONTRACT.items()}
    return {**worker, **EXTERNAL}


_SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[^{}\"]|\"(?:[^\"\\]|\\.)*\")*)\}")
_MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*\"(?:[^\"\\]|\\.)*\"")
_CLAUSE = re.compile(r"\b(?:by|on|without|ignoring)\s*\(([^)]*)\)")
_REPLACE = re.compile(r"label_replace\(.*?,\s*\"([^\"]+)\",\s*\"[^\"]*\",\s*\"([^\"]+)\"")
_STRINGS = re.compile(r"\"(?:[^\"\\]|\\.)*\"")


def used(expr: str) -> tuple[dict[str, set[str]], set[str], set[str]]:
    """(series -> the labels its selector matches on, labels of by/on clauses, labels created by
    label_replace) of a query; every series is written with a selector."""
    series: dict[str, set[str]] = {}
    for name, body in _SELECTOR.findall(expr):
        series.setdefault(name, set()).update(_MATCHER.findall(body))
    for name in re.findall(r"\b((?:kafka|kube|jvm|process)_[a-z0-9_]+)\b", _STRINGS.sub('""', expr)):
        series.setdefault(name, set())  # written without a selector
    clauses = {label.strip() for group in _CLAUSE.findall(expr) for label in group.split(",") if label.strip()}
    created, read = set(), set()
    for new, source in _REPLACE.findall(expr):
        created.add(new)
        read.add(source)
    for labels in series.values():
        labels |= read & labels  # read labels are checked below with the series that has them
    return series, clauses | read, created


def missing(expr: str, available: dict[str, frozenset[str]]) -> list[str]:
    series, clauses, created = used(expr)
    out = [f"series {n}" for n in sorted(series) if n not in available]
    for name, labels in sorted(series.items()):
        out += [f"{name}{{{label}}}" for label in sorted(labels - available.get(name, frozenset()))]
    having = set().union(*(available.get(n, frozenset()) for n in series)) | created
    if any(n.startswith(("kafka_", "jvm_", "process_")) for n in series):
        having |= SCRAPE_LABELS  # the worker's series, scraped through the PodMonitor
    out += [f"by/on ({label})" for label in sorted(clauses - having)]
    return out


def test_every_series_and_label_read_is_in_every_scrape():
    available = shapes()
    problems = {q: m for q in all_queries() for m in [missing(q, available)] if m}
    assert problems == {}
    if scraped() is None:
        pytest.skip(f"no scrape files in {SCRAPES.relative_to(ROOT)} yet (the dev stack's runtime test writes "
                    "them): checked against the metrics contract only")
    # The contract's shapes are what the scrape showed.
    for name, labels in CONTRACT.items():
        assert name in available and labels | STATIC <= available[name], name


def test_the_checker_refuses_what_the_scrape_lacks():
    available = shapes()
    assert missing('max by (flow, worker) (kafka_connect_connector_status{flow=~"x", state="failed"}) == 1',
                   available) == ["kafka_connect_connector_status{state}", "by/on (worker)"]
    # The target's labels are the worker's series' only.
    assert missing("max by (pod) (kube_job_status_failed)", available) == ["by/on (pod)"]
    assert missing("rate(kafka_connect_nothing_total{flow=\"x\"}[5m])", available) == [
        "series kafka_connect_nothing_total", "kafka_connect_nothing_total{flow}"]
    assert missing("count by (flow) (kafka_connect_nothing)", available) == ["series kafka_connect_nothing",
                                                                          "by/on (flow)"]
    assert missing('label_replace(kafka_connect_connector_status{flow="x"}, "c", "$1", "client_id", "(.*)")',
                   available) == ["by/on (client_id)"]


# ----------------------------------------------------------------- promtool


def test_dashboard_has_the_variables_and_panels():
    board = json.loads(monitoring.dashboard_configmap("ns")["data"]["kafka-replication.json"])
    assert [v["name"] for v in board["templating"]["list"]] == ["datasource", "flow", "source", "target",
                                                                 "connect_cluster"]
    assert [v["query"]["query"] for v in board["templating"]["list"][1:]] == [
        "label_values(kafka_connect_connector_status, flow)",
        'label_values(kafka_connect_mirror_mirrorsourceconnector_record_count{flow=~"$flow"}, source)',
        'label_values(kafka_connect_mirror_mirrorsourceconnector_record_count{flow=~"$flow", source=~"$source"}, target)',
        'label_values(kafka_connect_connector_status{flow=~"$flow"}, connect_cluster)']
    rows: dict[str, list[str]] = {}
    for p in board["panels"]:
        if p["type"] == "row":
            rows[p["title"]] = []
        else:
            list(rows.values())[-1].append(f'{p["type"]}: {p["title"]}')
    assert rows == {
        "Overview": [f"stat: {t}" for t in ("Flows", "Connectors not running", "Tasks failed", "Records/s", "Bytes/s",
                                            "Worst record age")],
        "Connectors and tasks": ["timeseries: Connector status", "timeseries: Task status",
                                 "timeseries: Records failed in tasks (per 5 minutes)"],
        "Replication": ["timeseries: Time on the target side (replication latency minus record age, max)",
                        "timeseries: Record age when read (max)", "timeseries: Replication latency (max)",
                        "timeseries: Throughput (records/s)", "timeseries: Throughput (bytes/s)"],
        "Source lag": ["timeseries: Source consumer lag (records)", "table: Most lagging partitions",
                       "timeseries: Bytes read from the source (per second)"],
        "Checkpoints and heartbeats": ["timeseries: Checkpoint write latency (newest, any group)",
                                       "timeseries: Heartbeats replicated (per 5 minutes)"],
        "Writes to the target": ["timeseries: Record errors and retries (per second)",
                                 "timeseries: Throttled by the target (max)",
                                 "timeseries: Waiting for producer buffer (ratio)",
                                 "timeseries: Produce request latency (avg)",
                                 "timeseries: Bytes written to the target (per second)",
                                 "timeseries: Records not yet acknowledged by the target",
                                 "timeseries: Offset commit time (avg)"],
        "Workers": ["timeseries: Connectors and tasks per worker", "timeseries: Rebalances (per 15 minutes)",
                    "timeseries: Rebalancing"],
        "JVM": ["timeseries: Heap (used and max)", "timeseries: Time in garbage collection (share)",
                "timeseries: CPU (cores)", "timeseries: Threads"]}
    assert len({p["id"] for p in board["panels"]}) == len(board["panels"])
    # The layout: no two panels overlap, none wider than the grid.
    cells = [(x, y) for p in board["panels"] for g in [p["gridPos"]]
             for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])]
    assert len(cells) == len(set(cells)) and max(x for x, _ in cells) < 24
    (table,) = [p for p in board["panels"] if p["type"] == "table"]
    assert table["targets"][0]["instant"] is True and table["targets"][0]["format"] == "table"


def test_the_panels_strimzi_s_mirror_maker_2_dashboard_has():
    """Bytes in from the source and out to the target, offset commit time and records not yet
    acknowledged, as Strimzi's strimzi-kafka-mirror-maker-2.json (1.2.0) reads them (rate() of the
    byte counters), on our series: every flow and Connect cluster filterable, the source side the
    replication consumer's alone, the target side without the heartbeat connector (its producer
    writes into the source)."""
    from infra.plan.monitoring.dashboard import PANELS
    queries = {p.title: (p.unit, p.query, p.legend) for p in PANELS}
    f = 'flow=~"$flow", connect_cluster=~"$connect_cluster"'
    assert {t: queries[t] for t in ("Bytes read from the source (per second)", "Bytes written to the target (per second)",
                                    "Records not yet acknowledged by the target", "Offset commit time (avg)")} == {
        "Bytes read from the source (per second)": (
            "Bps", f'sum by (flow, connect_cluster) (rate(kafka_consumer_incoming_byte_total{{{f}, '
                   f'client_id=~".*\\\\|replication-consumer"}}[5m]))', "{{flow}} {{connect_cluster}}"),
        "Bytes written to the target (per second)": (
            "Bps", f'sum by (flow, connector) (rate(kafka_producer_outgoing_byte_total{{{f}, '
                   f'connector!~".+-heartbeat"}}[5m]))', "{{flow}} {{connector}}"),
        "Records not yet acknowledged by the target": (
            "none", f'sum by (flow, connector) (kafka_connect_source_task_source_record_active_count{{{f}, '
                    f'connector!~".+-heartbeat"}})', "{{flow}} {{connector}}"),
        "Offset commit time (avg)": (
            "ms", f"max by (flow, connector) (kafka_connect_connector_task_offset_commit_avg_time_ms{{{f}}})",
            "{{flow}} {{connector}}")}


def test_input_series_are_shaped_as_the_scrape(tmp_path):
    available = shapes()
    for _, inputs, _, _ in firing_cases():
        for s in inputs:
            match = re.fullmatch(r"([a-z_]+)\{(.*)\}", s["series"])
            name, labels = match.group(1), set(re.findall(r'([a-z_]+)="', match.group(2)))
            assert name in available, name
            if name in EXTERNAL:
                assert EXTERNAL[name] <= labels, (name, labels)
            else:
                assert labels - set(TARGET_LABELS) == set(available[name]), (name, labels)


def test_alert_thresholds_without_the_prometheus_rule_are_refused(tmp_path):
    """The thresholds are written only into the PrometheusRule: without it they would be dropped."""
    t = doc_topology()
    t["flows"][0]["alerts"] = {"recordAgeSeconds": 600, "forMinutes": 5}
    t["monitoring"] = {"alerts": {"sourceLagRecords": 100}}
    unused = ("expected monitoring.prometheusOperator: true (the thresholds are written into its PrometheusRule), "
              "or no alerts")
    with pytest.raises(TopologyError) as exc:
        render_topology(tmp_path, t, secrets={})
    assert sorted(str(p) for p in exc.value.problems) == sorted([
        f"monitoring: alerts: got 'sourceLagRecords: 100'; {unused}",
        f"line 36: flows[0] (repl-us-west-us-east): alerts: got 'recordAgeSeconds: 600, forMinutes: 5'; {unused}"])
    t["monitoring"]["prometheusOperator"] = True
    rule = next(o for o in render_topology(tmp_path, t, secrets={}).objects() if o["kind"] == "PrometheusRule")
    assert "> 600000" in json.dumps(rule)


# ----------------------------------------------------------------- the operator's view


@pytest.mark.parametrize("release", releases.SUPPORTED, ids=lambda r: f"{r.flavour.value}-{r.version}")
def test_kube_state_metrics_reads_the_operator_s_view_at_the_release_s_api_version(release):
    config = yaml.safe_load(monitoring.ksm_config_text(release))
    group, version = release.api_versions[-1].split("/")
    labels = {"flow": ["metadata", "labels", "kafka-replication.io/flow"], "exported_namespace": ["metadata", "namespace"],
              "ready": ["status", "conditions", "[type=Ready]", "status"],
              "warnings": ["status", "conditions", "[type=Warning]", "status"],
              "deprecated": ["status", "conditions", "[reason=DeprecatedFields]", "type"]}
    assert config == {"kind": "CustomResourceStateMetrics", "spec": {"resources": [
        {"groupVersionKind": {"group": group, "version": version, "kind": kind},
         "metricNamePrefix": prefix,
         "metrics": [{"name": "status",
                      "help": f"The operator's status of a {kind} (its Ready, Warning and DeprecatedFields conditions).",
                      "each": {"type": "Info", "info": {"labelsFromPath": {"name": ["metadata", "name"]}}},
                      "labelsFromPath": labels}]}
        for kind, prefix in (("KafkaConnect", "kube_kafka_replication_connect"),
                             ("KafkaConnector", "kube_kafka_replication_connector"))]}}
    # The newest version served: v1 from the bridge release on, so an upgrade's next CRDs keep it.
    assert (group, version) == ("kafka.strimzi.io", "v1beta2" if release.flavour.value == "csm"
                                or release.version == "0.48.0" else "v1")
    assert "&" not in monitoring.ksm_config_text(release)  # no YAML anchors: each resource whole


def test_the_operator_s_rules_select_the_stack_s_flows_and_both_kinds():
    rules = {name: rule for name, (rule,) in alerts_of(monitored()).items() if "Operator" in name}
    assert rules["KafkaReplicationOperatorNotReady"]["expr"] == (
        f'label_replace(max by (flow, exported_namespace, name) (kube_kafka_replication_connect_status{{flow=~"{FLOW}", '
        f'ready!="True"}}), "kind", "KafkaConnect", "", "") or label_replace(max by (flow, exported_namespace, name) '
        f'(kube_kafka_replication_connector_status{{flow=~"{FLOW}", ready!="True"}}), "kind", "KafkaConnector", "", "")')
    assert rules["KafkaReplicationOperatorWarning"]["expr"].count('warnings="True", deprecated!="Warning"') == 2
    assert rules["KafkaReplicationOperatorDeprecated"]["expr"].count('deprecated="Warning"') == 2
    assert sorted(rules) == ["KafkaReplicationOperatorDeprecated", "KafkaReplicationOperatorNotReady",
                             "KafkaReplicationOperatorWarning"]
    assert {r["for"] for r in rules.values()} == {"15m"}
