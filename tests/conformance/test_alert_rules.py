"""Every rendered alert rule checked by `promtool check rules`, every dashboard query by promtool,
and every alert unit-tested by `promtool test rules` on series shaped as the real worker's scrape
shows them (promtool: `make promtool`, Debian's prometheus package unpacked into ~/.cache)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from infra.plan import monitoring
from tests.support.monitoring import (CLIENT, UNIT_TOPOLOGY, all_queries, firing_cases, groups_of, healthy, quiet_cases,
                                      replace, series, stack_objects)
from tests.support.stacks import ROOT, unavailable

PROMTOOL_CACHE = Path.home() / ".cache" / "kafka-replication" / "promtool" / "usr" / "bin" / "promtool"


def promtool() -> str:
    found = os.environ.get("PROMTOOL") or (str(PROMTOOL_CACHE) if PROMTOOL_CACHE.exists() else shutil.which("promtool"))
    if not found:
        unavailable("no promtool: run `make promtool` (Debian's prometheus package, unpacked into ~/.cache)")
    return str(found)


def run_promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_promtool_checks_the_rendered_rules(stack, tmp_path):
    rule = next(o for o in stack_objects(stack) if o["kind"] == "PrometheusRule")
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    done = run_promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    count = sum(len(g["rules"]) for g in rule["spec"]["groups"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {count} rules found" in done.stdout


def test_promtool_checks_every_dashboard_query(tmp_path):
    queries = [q for q in all_queries() if q not in [r["expr"] for g in groups_of(
        yaml.safe_load((ROOT / "stacks" / "prod.yaml").read_text())) for r in g["rules"]]]
    assert len(queries) == len(monitoring.dashboard_queries()) == 37
    rules = [{"record": f"dashboard:query_{i}", "expr": q} for i, q in enumerate(queries)]
    (tmp_path / "board.yaml").write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    done = run_promtool("check", "rules", "board.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    # It can fail: a broken query is refused.
    rules[0]["expr"] = "max by (flow (kafka_connect_connector_status)"
    (tmp_path / "board.yaml").write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    assert run_promtool("check", "rules", "board.yaml", cwd=tmp_path).returncode != 0


ALERTS = [
    "KafkaReplicationConnectorFailed", "KafkaReplicationTaskFailed", "KafkaReplicationConnectorNotRunning",
    "KafkaReplicationLatencyHigh", "KafkaReplicationRecordAgeHigh", "KafkaReplicationSourceLagGrowing",
    "KafkaReplicationNoProgress", "KafkaReplicationTargetRefusesWrites", "KafkaReplicationSourceAuthenticationFails",
    "KafkaReplicationTargetAuthenticationFails", "KafkaReplicationTargetThrottles",
    "KafkaReplicationCheckpointsLate", "KafkaReplicationHeartbeatsStale",
    "KafkaReplicationAuditJobFailed", "KafkaReplicationAuditFindings", "KafkaReplicationCheckpointsStale",
    "KafkaReplicationCertificateExpiring", "KafkaReplicationConnectGroupDown", "KafkaReplicationOperatorNotReady", "KafkaReplicationOperatorWarning",
    "KafkaReplicationOperatorDeprecated",
    "KafkaReplicationMetricsAbsent"]


def unit_tests() -> dict:
    tests = []
    cases = firing_cases()
    assert [c[0] for c in cases] == ALERTS
    for alert, inputs, at, expected in cases:
        # The fired alert, exactly; no other alert.
        tests.append({"name": f"{alert} fires", "interval": "1m", "input_series": inputs,
                      "alert_rule_test": [{"eval_time": at, "alertname": a, "exp_alerts": expected if a == alert else []}
                                          for a in ALERTS]})
    tests.append({"name": "healthy: nothing fires", "interval": "1m", "input_series": healthy(),
                  "alert_rule_test": [{"eval_time": t, "alertname": a, "exp_alerts": []}
                                      for a in ALERTS for t in ("5m", "15m", "35m")]})
    # Healthy situations that page no one: only the alerts named fire (a catch-up is old records,
    # not a slow target; a filter that drops records is no stuck task).
    as_fired = {alert: expected for alert, _, _, expected in cases}
    for what, inputs, firing in quiet_cases():
        name = f"{what}: only {', '.join(firing)} fires" if firing else f"{what}: no alert fires"
        tests.append({"name": name, "interval": "1m", "input_series": inputs,
                      "alert_rule_test": [{"eval_time": t, "alertname": a,
                                           "exp_alerts": as_fired[a] if a in firing else []}
                                          for a in ALERTS for t in ("15m", "35m")]})
    # A lag over the threshold that shrinks is no alert (the connector catches up).
    tests.append({"name": "a shrinking lag does not fire", "interval": "1m",
                  "input_series": replace(healthy(), series("kafka_consumer_fetch_manager_records_lag", "50000-100x40",
                                                            client_id=CLIENT, topic="test_orders", partition="1")),
                  "alert_rule_test": [{"eval_time": "20m", "alertname": "KafkaReplicationSourceLagGrowing",
                                       "exp_alerts": []}]})
    # Kafka 4.1+ reports a partition's lag under the topic's name too (KIP-1109): one page, not two.
    tests.append({"name": "a lag reported under both topic names pages once", "interval": "1m",
                  "input_series": replace(healthy(), *[series("kafka_consumer_fetch_manager_records_lag",
                                                              "20000+100x40", client_id=CLIENT, topic=topic,
                                                              partition="1")
                                                       for topic in ("test_orders", "test.orders")]),
                  "alert_rule_test": [{"eval_time": "15m", "alertname": "KafkaReplicationSourceLagGrowing",
                                       "exp_alerts": as_fired["KafkaReplicationSourceLagGrowing"]}]})
    return {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}


def test_promtool_unit_tests_every_alert(tmp_path):
    (tmp_path / "rules.yaml").write_text(monitoring.rules_yaml(groups_of(UNIT_TOPOLOGY)))
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(unit_tests(), sort_keys=False, width=4096))
    done = run_promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
    assert "SUCCESS" in done.stdout


def test_promtool_unit_tests_can_fail(tmp_path):
    """A wrong expectation (another label value) fails promtool: the tests above do assert."""
    (tmp_path / "rules.yaml").write_text(monitoring.rules_yaml(groups_of(UNIT_TOPOLOGY)))
    tests = unit_tests()
    tests["tests"][0]["alert_rule_test"][0]["exp_alerts"][0]["exp_labels"]["connector"] = "another"
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, sort_keys=False, width=4096))
    done = run_promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert done.returncode != 0 and "FAILED" in done.stdout + done.stderr


@pytest.mark.parametrize("alert,old_expr,case", [
    # Latency alone: a catch-up's old records page as a slow target.
    ("KafkaReplicationLatencyHigh",
     'max by (flow, connect_cluster, source, target, topic) '
     '(kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max) > 60000', "a catch-up"),
    # Writes instead of polls: a loop filter's passive direction pages as a stuck task.
    ("KafkaReplicationNoProgress", None, "a loop filter dropping every record"),
])
def test_the_quiet_cases_refuse_the_rules_that_paged_on_them(alert, old_expr, case, tmp_path):
    """The rules before their redesign (latency alone; progress judged on what was written) fail
    the quiet cases: those cases do hold the rules to what a healthy flow produces."""
    groups = groups_of(UNIT_TOPOLOGY)
    (rule,) = [r for g in groups for r in g["rules"] if r["alert"] == alert]
    rule["expr"] = old_expr or rule["expr"].replace("source_record_poll_total", "source_record_write_total")
    (tmp_path / "rules.yaml").write_text(monitoring.rules_yaml(groups))
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(unit_tests(), sort_keys=False, width=4096))
    done = run_promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert done.returncode != 0
    failed = [line for line in (done.stdout + done.stderr).splitlines() if "FAILED" in line or "name:" in line]
    assert any(case in line for line in failed), done.stdout[-3000:] + done.stderr[-3000:]


def test_a_chart_of_two_series_shows_both(tmp_path):
    """The workers' chart of connectors and tasks, evaluated by promtool on series shaped as the
    scrape: both come out, told apart by `series` (an `or` of the two alone keeps only the first)."""
    from infra.plan.monitoring.dashboard import PANELS
    from tests.support.monitoring import substitute
    (panel,) = [p for p in PANELS if p.title == "Connectors and tasks per worker"]
    pod = {"pod": "repl-us-west-us-east-connect-0"}
    tests = {"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [series("kafka_connect_worker_connector_count", "3x5", **pod),
                         series("kafka_connect_worker_task_count", "5x5", **pod)],
        "promql_expr_test": [{"expr": substitute(panel.query), "eval_time": "2m", "exp_samples": [
            {"labels": '{connect_cluster="repl-us-west-us-east", flow="repl-us-west-us-east", '
                       f'pod="{pod["pod"]}", series="{name}"}}', "value": value}
            for name, value in (("connectors", 3), ("tasks", 5))]}]}]}
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, sort_keys=False, width=4096))
    done = run_promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_jvm_charts_take_their_flow_from_the_pod(tmp_path):
    """The JVM series carry only the pod's labels; the chart gives them the pod's flow and Connect
    cluster from its worker series, so the variables filter them, and each pod keeps its own."""
    from infra.plan.monitoring.dashboard import PANELS
    from tests.support.monitoring import external, substitute
    (panel,) = [p for p in PANELS if p.title == "Heap (used and max)"]
    flow = "repl-us-west-us-east"
    target = {"namespace": flow, "job": "replication-monitoring/kafka-replication", "instance": "10.0.0.7:9404"}
    inputs = []
    for n, used in ((0, 300e6), (1, 200e6)):
        pod = {**target, "pod": f"{flow}-connect-{n}"}
        inputs += [external("jvm_memory_used_bytes", f"{used:.0f}x5", area="heap", **pod),
                   external("jvm_memory_used_bytes", "50000000x5", area="nonheap", **pod),
                   external("jvm_memory_max_bytes", "805306368x5", area="heap", **pod),
                   external("kafka_connect_worker_connector_count", "3x5", flow=flow, connect_cluster=flow, **pod)]
    tests = {"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": inputs,
        "promql_expr_test": [{"expr": substitute(panel.query), "eval_time": "2m", "exp_samples": [
            {"labels": f'{{connect_cluster="{flow}", flow="{flow}", pod="{flow}-connect-{n}", series="{name}"}}',
             "value": value}
            for n, used in ((0, 300e6), (1, 200e6)) for name, value in (("used", used), ("max", 805306368))]}]}]}
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, sort_keys=False, width=4096))
    done = run_promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_heartbeat_producer_refused_is_the_source_s_credential(tmp_path):
    """The heartbeat connector's producer writes into the source (docs/heartbeats.md): its refused
    authentications fire SourceAuthenticationFails naming it, never TargetAuthenticationFails
    (which a recording of a revoked source credential showed firing, before this)."""
    from tests.support.monitoring import FLOW, healthy, replace
    heartbeat = f"{FLOW}-heartbeat"
    inputs = replace(healthy(), series("kafka_producer_failed_authentication_total", "0x10 3x30", connector=heartbeat,
                                       task="0"),
                     series("kafka_producer_failed_reauthentication_total", "0x40", connector=heartbeat, task="0"))
    tests = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": inputs,
        "promql_expr_test": [{"expr": 'count by (alertname, connector) (ALERTS{alertstate="firing"})',
                              "eval_time": "12m", "exp_samples": [
                                  {"labels": '{alertname="KafkaReplicationSourceAuthenticationFails", '
                                             f'connector="{heartbeat}"}}', "value": 1}]}]}]}
    (tmp_path / "rules.yaml").write_text(monitoring.rules_yaml(groups_of(UNIT_TOPOLOGY)))
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, sort_keys=False, width=4096))
    done = run_promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
