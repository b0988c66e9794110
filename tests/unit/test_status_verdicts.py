"""`kafka-replication status` (infra/tools/status): its verdicts on the objects a Kubernetes
cluster returns, each case an object as Strimzi's operator and Kubernetes' controllers write it,
read here through a scripted reader; its text, JSON and exit codes through the command line. The
reading itself runs against a real API server in tests/apiserver/test_status_command.py, and on real
Connect workers in tests/engine/test_engine_readiness.py."""

from __future__ import annotations

import copy
import json
import time

import pytest
import yaml

from contract import outputs as contract
from infra.checks import validation
from infra.plan.audit import plan_audit
from infra.plan.outputs import stack_outputs
from infra.plan.stack import plan
from infra.tools import cli, status
from infra.tools.status import assess
from infra.tools.status.assess import Health, Unreadable
from tests.support.stacks import ROOT

NS = CONNECT = "repl-us-west-us-east"
SOURCE, CHECKPOINT, HEARTBEAT = (f"{NS}-{k}" for k in ("source", "checkpoint", "heartbeat"))
TRACE = ("org.apache.kafka.connect.errors.ConnectException: Unrecoverable exception from producer send callback\n"
         "\tat org.apache.kafka.connect.runtime.WorkerSourceTask.maybeThrowProducerSendException(...)\n"
         "Caused by: org.apache.kafka.common.errors.RecordTooLargeException: The message is 1100 bytes")


def dev_outputs() -> dict:
    topo = validation.parse(yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text()))
    stack_plan = plan(topo)
    out = stack_outputs(stack_plan)
    out["audit"] = plan_audit(topo, stack_plan).outputs
    return json.loads(json.dumps(out))


OUTPUTS = dev_outputs()


def connect(ready: bool = True, generation: int = 1, observed: int = 1, strimzi_failure: str | None = None) -> dict:
    conditions = [{"type": "Ready", "status": "True"}] if ready else []
    if strimzi_failure:  # Strimzi writes a failure as a NotReady condition, status True
        conditions = [{"type": "NotReady", "status": "True", "reason": "TimeoutException", "message": strimzi_failure}]
    return {"metadata": {"name": CONNECT, "namespace": NS, "generation": generation},
            "status": {"conditions": conditions, "observedGeneration": observed, "replicas": 1,
                       "url": f"http://{NS}-connect-api.{NS}.svc:8083"}}


def connector(name: str, state: str = "RUNNING", tasks: tuple[str, ...] = ("RUNNING",), spec_state: str | None = None,
              trace: str | None = None, generation: int = 1, observed: int = 1) -> dict:
    rest = {"name": name, "connector": {"state": state, "worker_id": "10.0.0.7:8083"},
            "tasks": [{"id": i, "state": s, "worker_id": "10.0.0.7:8083", **({"trace": trace} if s == "FAILED" else {})}
                      for i, s in enumerate(tasks)], "type": "source"}
    # Strimzi's readiness of a connector (AbstractConnectOperator, updateStatus): NotReady, reason
    # Throwable, when the connector or a task FAILED, with these messages; Ready otherwise.
    failed_tasks = [str(i) for i, s in enumerate(tasks) if s == "FAILED"]
    message = ("Connector has failed, see connectorStatus for more details." if state == "FAILED" else
               f"The following tasks have failed: {', '.join(failed_tasks)}, see connectorStatus for more details."
               if failed_tasks else None)
    return {"metadata": {"name": name, "namespace": NS, "generation": generation},
            "spec": {"class": "x", "tasksMax": 2, **({"state": spec_state} if spec_state else {})},
            "status": {"conditions": [{"type": "NotReady", "status": "True", "reason": "Throwable",
                                       "message": message} if message
                                      else {"type": "Ready", "status": "True"}],
                       "observedGeneration": observed, "connectorStatus": rest, "tasksMax": 2}}


def job(name: str, created: str, result: str | None, message: str = "") -> dict:
    conditions = [] if result is None else [
        {"type": "Complete" if result == "succeeded" else "Failed", "status": "True",
         "lastTransitionTime": created.replace(":00Z", ":09Z"), **({"message": message} if message else {})}]
    return {"metadata": {"name": name, "creationTimestamp": created,
                         "ownerReferences": [{"kind": "CronJob", "name": "kafka-replication-audit"}]},
            "status": {"conditions": conditions}}


CRON = {"metadata": {"name": "kafka-replication-audit"}, "spec": {"schedule": "17 * * * *", "suspend": False},
        "status": {"lastScheduleTime": "2026-11-27T10:17:00Z", "lastSuccessfulTime": "2026-11-27T10:17:40Z"}}


class Scripted:
    """A reader whose answers are given: objects by (kind, namespace, name); absent means 404."""

    def __init__(self, objects: dict, cron: dict | None | Unreadable = CRON, jobs: list | Unreadable | None = None,
                 pods: list | Unreadable = ()):
        self.objects, self.cron, self.pods = objects, cron, list(pods) if isinstance(pods, tuple) else pods
        self.jobs = [job("kafka-replication-audit-29400617", "2026-11-27T10:17:00Z", "succeeded")] \
            if jobs is None else jobs

    def strimzi(self, kind: str, namespace: str, name: str):
        return copy.deepcopy(self.objects.get((kind, namespace, name)))

    def cron_job(self, namespace: str, name: str):
        return self.cron

    def jobs_of(self, namespace: str, cron_job: str):
        return self.jobs

    def pods_of(self, namespace: str):
        return self.pods


def healthy() -> dict:
    return {("KafkaConnect", NS, CONNECT): connect(), ("KafkaConnector", NS, SOURCE): connector(SOURCE, tasks=("RUNNING",) * 2),
            ("KafkaConnector", NS, CHECKPOINT): connector(CHECKPOINT), ("KafkaConnector", NS, HEARTBEAT): connector(HEARTBEAT)}


def report(objects: dict, **reader) -> assess.Report:
    stack = contract.read(OUTPUTS)
    return status.collect(stack, list(stack.flows), {None: Scripted(objects, **reader)})


def test_a_healthy_stack_prints_each_object_and_exits_0():
    r = report(healthy())
    assert r.health is Health.healthy
    assert status.show.text(r) == (
        "operator csm 1.2 (Kafka 3.8.0)\n"
        "\n"
        "flow repl-us-west-us-east: us-west -> us-east: HEALTHY\n"
        "  KafkaConnect repl-us-west-us-east/repl-us-west-us-east: Ready, 1 replica\n"
        "  source     repl-us-west-us-east-source      RUNNING, 2 tasks: 2 RUNNING\n"
        "  checkpoint repl-us-west-us-east-checkpoint  RUNNING, 1 task: 1 RUNNING\n"
        "  heartbeat  repl-us-west-us-east-heartbeat   RUNNING, 1 task: 1 RUNNING\n"
        "audit replication-audit/kafka-replication-audit: HEALTHY; last run kafka-replication-audit-29400617: "
        "succeeded at 2026-11-27T10:17:09Z\n"
        "\n"
        "healthy (exit 0): 1 flow, 1 healthy; 1 audit, 1 healthy\n")


def test_a_paused_connector_is_degraded_and_said_to_be_asked_for():
    objects = healthy()
    objects[("KafkaConnector", NS, CHECKPOINT)] = connector(CHECKPOINT, "PAUSED", ("PAUSED",), spec_state="paused")
    r = report(objects)
    (flow,) = r.flows
    assert (r.health, flow.health) == (Health.degraded, Health.degraded)
    assert flow.problems == (f"{CHECKPOINT} is PAUSED (its spec asks for it: state: paused)",
                             f"{CHECKPOINT} task 0 is PAUSED")
    assert f"  checkpoint {CHECKPOINT}  PAUSED (spec: paused), 1 task: 1 PAUSED\n" in status.show.text(r)


def test_a_failed_task_shows_its_trace_first_line():
    objects = healthy()
    objects[("KafkaConnector", NS, SOURCE)] = connector(SOURCE, tasks=("RUNNING", "FAILED"), trace=TRACE)
    r = report(objects)
    assert r.health is Health.degraded  # task 0 still copies its partitions
    assert r.flows[0].problems == (f"{SOURCE} task 1 is FAILED: org.apache.kafka.connect.errors.ConnectException: "
                                   "Unrecoverable exception from producer send callback",
                                   f"{SOURCE}: the operator reports NotReady: The following tasks have failed: 1, "
                                   "see connectorStatus for more details.")
    assert f"    ! {SOURCE} task 1 is FAILED: org.apache" in status.show.text(r)


def test_a_long_trace_line_is_cut():
    objects = healthy()
    objects[("KafkaConnector", NS, SOURCE)] = connector(SOURCE, tasks=("FAILED", "RUNNING"), trace="x" * 5000)
    (task, _) = report(objects).flows[0].connectors[0].tasks
    assert task.trace == "x" * 297 + "..."


@pytest.mark.parametrize("change, problem", [
    ({("KafkaConnector", NS, SOURCE): connector(SOURCE, "FAILED", (), trace=None)}, f"{SOURCE} is FAILED"),
    ({("KafkaConnector", NS, SOURCE): connector(SOURCE, tasks=("FAILED", "FAILED"), trace=TRACE)},
     f"{SOURCE} task 0 is FAILED: org.apache.kafka.connect.errors.ConnectException: Unrecoverable exception from "
     "producer send callback"),
    ({("KafkaConnector", NS, SOURCE): connector(SOURCE, "STOPPED", (), spec_state="stopped")},
     f"{SOURCE} is STOPPED (its spec asks for it: state: stopped)"),
    ({("KafkaConnect", NS, CONNECT): None}, f"KafkaConnect {NS}/{CONNECT} is missing from the cluster"),
    ({("KafkaConnect", NS, CONNECT): {**connect(), "status": {**connect()["status"], "replicas": 0}},
      **{("KafkaConnector", NS, n): {**connector(n), "status": {
          "conditions": [{"type": "NotReady", "status": "True", "reason": "RuntimeException",
                          "message": f"Kafka Connect cluster '{CONNECT}' in namespace {NS} has 0 replicas."}],
          "observedGeneration": 1}} for n in (SOURCE, CHECKPOINT, HEARTBEAT)}},
     f"KafkaConnect {NS}/{CONNECT} has no replica: none of its connectors runs"),
    ({("KafkaConnector", NS, SOURCE): None}, f"KafkaConnector {NS}/{SOURCE} is missing from the cluster"),
])
def test_a_flow_that_copies_nothing_is_down(change, problem):
    objects = {**healthy(), **change}
    r = report({k: v for k, v in objects.items() if v is not None})
    assert (r.health, r.flows[0].health) == (Health.down, Health.down)
    assert r.flows[0].problems[0] == problem


def test_a_connect_cluster_the_operator_failed_to_reconcile_still_copies():
    """Strimzi's NotReady on a KafkaConnect says its last reconciliation failed (a rolling update
    that timed out, say); the workers it left run on."""
    objects = healthy()
    objects[("KafkaConnect", NS, CONNECT)] = connect(ready=False, strimzi_failure="Timeout waiting for the pods")
    r = report(objects)
    assert (r.health, r.flows[0].problems) == (
        Health.degraded, (f"KafkaConnect {NS}/{CONNECT} is not Ready: Timeout waiting for the pods",))


@pytest.mark.parametrize("state, tasks", [("RUNNING", ("UNASSIGNED", "UNASSIGNED")), ("RESTARTING", ("RESTARTING",)),
                                          ("UNASSIGNED", ())])
def test_a_source_connector_on_its_way_to_running_is_degraded_not_down(state, tasks):
    objects = healthy()
    objects[("KafkaConnector", NS, SOURCE)] = connector(SOURCE, state, tasks)
    assert report(objects).health is Health.degraded


def test_the_operator_message_says_why_there_is_no_connect_status():
    objects = healthy()
    objects[("KafkaConnector", NS, CHECKPOINT)] = {**connector(CHECKPOINT), "status": {
        "conditions": [{"type": "NotReady", "status": "True", "reason": "ConnectRestException",
                        "message": "GET /connectors/x/status returned 500 (Internal Server Error)"}],
        "observedGeneration": 1}}
    assert report(objects).flows[0].problems == (
        f"{CHECKPOINT}: the operator reports no Connect status: GET /connectors/x/status returned 500 "
        "(Internal Server Error)",)


def test_restarts_by_the_operator_are_reported():
    objects = healthy()
    objects[("KafkaConnector", NS, SOURCE)]["status"]["autoRestart"] = {
        "count": 3, "connectorName": SOURCE, "lastRestartTimestamp": "2026-11-27T10:02:00Z"}
    r = report(objects)
    assert (r.flows[0].connectors[0].restarts, r.flows[0].connectors[0].last_restart) == (3, "2026-11-27T10:02:00Z")
    assert f"  source     {SOURCE}      RUNNING, 2 tasks: 2 RUNNING; restarted 3 times by the operator, last at " \
           "2026-11-27T10:02:00Z\n" in status.show.text(r)


def test_a_source_connector_with_no_topic_to_copy_is_healthy():
    objects = healthy()
    objects[("KafkaConnector", NS, SOURCE)] = connector(SOURCE, tasks=())
    assert report(objects).health is Health.healthy


def test_a_generation_not_reconciled_yet_is_degraded():
    objects = healthy()
    objects[("KafkaConnector", NS, SOURCE)] = connector(SOURCE, tasks=("RUNNING",), generation=3, observed=2)
    r = report(objects)
    assert r.health is Health.degraded
    assert r.flows[0].problems == (f"{SOURCE}: its current generation is not reconciled yet",)


def test_an_object_not_read_makes_the_flow_unknown():
    objects = healthy()
    objects[("KafkaConnector", NS, HEARTBEAT)] = Unreadable(
        f"KafkaConnector {NS}/{HEARTBEAT}: HTTP 403: kafkaconnectors.kafka.strimzi.io is forbidden")
    r = report(objects)
    assert (r.health, r.flows[0].health) == (Health.unknown, Health.unknown)
    assert r.flows[0].problems == (f"not read: KafkaConnector {NS}/{HEARTBEAT}: HTTP 403: "
                                   "kafkaconnectors.kafka.strimzi.io is forbidden",)


def test_down_outranks_unknown():
    objects = healthy()
    objects[("KafkaConnector", NS, HEARTBEAT)] = Unreadable("HTTP 403")
    objects[("KafkaConnector", NS, SOURCE)] = connector(SOURCE, "FAILED", ())
    assert report(objects).health is Health.down


def test_the_audit_last_finished_run_decides():
    failed = job("kafka-replication-audit-29400557", "2026-11-27T09:17:00Z", "failed",
                 "Job has reached the specified backoff limit")
    running = job("kafka-replication-audit-29400617", "2026-11-27T10:17:00Z", None)
    r = report(healthy(), jobs=[running, failed])
    (audit,) = r.audits
    assert (r.health, audit.last_run, audit.last_result) == (Health.degraded, "kafka-replication-audit-29400557",
                                                             "failed")
    assert audit.problems == ("audit run kafka-replication-audit-29400557 failed: Job has reached the specified "
                              "backoff limit (exit 1: findings in its report; another exit: the audit could not run)",)
    ok = job("kafka-replication-audit-29400617", "2026-11-27T10:17:00Z", "succeeded")
    assert report(healthy(), jobs=[failed, ok]).health is Health.healthy
    assert report(healthy(), jobs=[]).audits[0].last_result is None
    assert report(healthy(), cron=None).audits[0].problems == (
        "CronJob replication-audit/kafka-replication-audit is missing from the cluster",)
    assert report(healthy(), cron=None).health is Health.degraded


# ------------------------------------------------------------------ the command line


@pytest.fixture
def outputs_file(tmp_path):
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(OUTPUTS))
    return path


def scheduled_minutes_ago(minutes: int) -> dict:
    """The CronJob as the controller leaves it, its last schedule `minutes` before now: the
    command line judges it against its own clock."""
    from datetime import datetime, timedelta, timezone
    at = (datetime.now(timezone.utc) - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {**CRON, "status": {"lastScheduleTime": at, "lastSuccessfulTime": at}}


def run_cli(monkeypatch, capsys, objects: dict, *args: str) -> tuple[int, str, str]:
    cron = scheduled_minutes_ago(5)
    monkeypatch.setattr(status, "Reader", lambda kubeconfig, context, api_version, deadline=None: Scripted(objects, cron=cron))
    code = cli.main(["status", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_and_exit_codes(monkeypatch, capsys, outputs_file):
    objects = healthy()
    assert run_cli(monkeypatch, capsys, objects, "--outputs", str(outputs_file))[0] == 0
    objects[("KafkaConnector", NS, SOURCE)] = connector(SOURCE, tasks=("RUNNING", "FAILED"), trace=TRACE)
    code, out, _ = run_cli(monkeypatch, capsys, objects, "--outputs", str(outputs_file), "--output", "json")
    assert code == 1
    got = json.loads(out)
    assert (got["health"], got["exitCode"], list(got["flows"])) == ("degraded", 1, [NS])
    assert got["flows"][NS]["connectors"][0] == {
        "name": SOURCE, "kind": "source", "namespace": NS, "spec": "running", "state": "RUNNING",
        "workerId": "10.0.0.7:8083", "trace": None, "ready": False, "reconciled": True,
        "message": "The following tasks have failed: 1, see connectorStatus for more details.", "restarts": 0,
        "lastRestart": None,
        "tasks": [{"id": 0, "state": "RUNNING", "workerId": "10.0.0.7:8083", "trace": None},
                  {"id": 1, "state": "FAILED", "workerId": "10.0.0.7:8083",
                   "trace": "org.apache.kafka.connect.errors.ConnectException: Unrecoverable exception from producer "
                            "send callback"}]}
    assert got["flows"][NS]["connectClusters"] == [{"name": CONNECT, "namespace": NS, "ready": True, "replicas": 1,
                                                   "generation": 1, "observedGeneration": 1, "message": None}]
    assert got["audits"][0]["lastResult"] == "succeeded"
    objects[("KafkaConnect", NS, CONNECT)] = None
    assert run_cli(monkeypatch, capsys, objects, "--outputs", str(outputs_file))[0] == 4
    objects = healthy()
    objects[("KafkaConnector", NS, SOURCE)] = Unreadable("HTTP 403")
    assert run_cli(monkeypatch, capsys, objects, "--outputs", str(outputs_file))[0] == 5


def test_bad_input_is_every_problem_at_once(monkeypatch, capsys, outputs_file, tmp_path):
    code, out, err = run_cli(monkeypatch, capsys, healthy(), "--outputs", str(outputs_file), "--flow", "nope",
                             "--kubeconfig", "eu=/x", "--context", "eu=ctx")
    assert (code, out) == (2, "")
    assert err == (
        "error: the command line has 3 problem(s):\n"
        "  - --flow: (argument): got 'nope'; expected a flow of the stack's outputs: repl-us-west-us-east\n"
        "  - --kubeconfig: (argument): got 'eu=/x'; expected a Kubernetes cluster of the stack: none (the "
        "stack has no `kubernetes` section: give the value alone)\n"
        "  - --context: (argument): got 'eu=ctx'; expected a Kubernetes cluster of the stack: none (the stack "
        "has no `kubernetes` section: give the value alone)\n")
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({**OUTPUTS, "outputsVersion": 7}))
    code, _, err = run_cli(monkeypatch, capsys, healthy(), "--outputs", str(wrong))
    assert code == 2 and "expected kafka-replication stack outputs (docs/outputs.md): outputsVersion: got 7; " \
                         "expected 1, the version this reader knows" in err
    wrong.write_text("{")
    code, _, err = run_cli(monkeypatch, capsys, healthy(), "--outputs", str(wrong))
    assert code == 2 and "valid JSON" in err and "Traceback" not in err


def test_a_file_that_is_not_a_kubeconfig(capsys, outputs_file, tmp_path):
    not_one = tmp_path / "config"
    not_one.write_text("just text\n")
    assert cli.main(["status", "--outputs", str(outputs_file), "--kubeconfig", str(not_one)]) == 2
    assert capsys.readouterr().err == (
        f"error: the command line has 1 problem(s):\n  - --kubeconfig: (argument): got '{not_one}'; expected a "
        "kubeconfig the client can use: not a kubeconfig (a YAML mapping with clusters, contexts and users)\n")


def test_a_suspended_or_silent_audit_is_degraded():
    from datetime import datetime, timezone
    stack = contract.read(OUTPUTS)
    suspended = {**CRON, "spec": {**CRON["spec"], "suspend": True}}
    r = status.collect(stack, list(stack.flows), {None: Scripted(healthy(), cron=suspended)})
    assert r.audits[0].problems == ("CronJob replication-audit/kafka-replication-audit is suspended: no audit runs",)
    hourly_then = datetime(2026, 11, 27, 12, 17, 1, tzinfo=timezone.utc)  # 2 h 0 min 1 s after the last schedule
    r = status.collect(stack, list(stack.flows), {None: Scripted(healthy(), jobs=[])}, hourly_then)
    assert r.health is Health.degraded
    assert r.audits[0].problems == ("CronJob replication-audit/kafka-replication-audit has not been scheduled since "
                                    "2026-11-27T10:17:00Z, more than twice its longest period (17 * * * *)",)
    on_time = datetime(2026, 11, 27, 12, 16, tzinfo=timezone.utc)
    assert status.collect(stack, list(stack.flows), {None: Scripted(healthy())}, on_time).health is Health.healthy


@pytest.mark.parametrize("items, pairs", [
    (["/home/me/.kube/config"], {"": "/home/me/.kube/config"}),
    (["eu=/k/eu.yaml", "/k/default"], {"eu": "/k/eu.yaml", "": "/k/default"}),
    (["/k/a=b.yaml"], {"": "/k/a=b.yaml"}),  # `=` in a path, no cluster name before it
])
def test_cluster_value_pairs(items, pairs):
    assert status.split_pairs(items) == pairs


def kubeconfig_with(tmp_path, user: dict) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "dev",
        "clusters": [{"name": "dev", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "me", "user": user}],
        "contexts": [{"name": "dev", "context": {"cluster": "dev", "user": "me"}}]}))
    return str(path)


def test_a_context_the_kubeconfig_lacks(capsys, outputs_file, tmp_path):
    path = kubeconfig_with(tmp_path, {"token": "t"})
    assert cli.main(["status", "--outputs", str(outputs_file), "--kubeconfig", path, "--context", "prod"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the command line has 1 problem(s):\n  - --context: (argument): got 'prod'; expected "
                          "a context of the kubeconfig: context prod: "), err


def test_an_exec_plugin_that_fails_is_said_not_logged(capsys, outputs_file, tmp_path):
    path = kubeconfig_with(tmp_path, {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                               "command": "false", "interactiveMode": "Never"}})
    assert cli.main(["status", "--outputs", str(outputs_file), "--kubeconfig", path]) == 2
    err = capsys.readouterr().err
    assert "expected a kubeconfig the client can use: its user has no credentials: exec: process returned 1" in err, err
    assert err.count("\n") == 2  # the problem alone: nothing the client logged


def test_a_default_kubeconfig_that_is_not_yaml(monkeypatch, capsys, outputs_file, tmp_path):
    broken = tmp_path / "config"
    broken.write_text("clusters: [\n")
    monkeypatch.setenv("KUBECONFIG", str(broken))
    assert cli.main(["status", "--outputs", str(outputs_file)]) == 2
    err = capsys.readouterr().err
    assert "got '(default)'; expected a kubeconfig the client can use: the default ($KUBECONFIG, else " \
           "~/.kube/config): " in err and "Traceback" not in err


def test_the_example_of_the_docs_is_what_the_command_prints():
    """docs/status.md's example: the dev stack, a source task failed, the checkpoint connector
    paused through its spec."""
    objects = healthy()
    objects[("KafkaConnector", NS, SOURCE)] = connector(SOURCE, tasks=("RUNNING", "RUNNING", "FAILED"), trace=TRACE)
    objects[("KafkaConnector", NS, CHECKPOINT)] = connector(CHECKPOINT, "PAUSED", ("PAUSED",), spec_state="paused")
    doc = (ROOT / "docs" / "status.md").read_text()
    example = doc.split("```text\n", 1)[1].split("```", 1)[0]
    assert status.show.text(report(objects)) == example


def audit_pod(job_name: str, message: str) -> dict:
    """The audit's pod as the kubelet leaves it: the termination message on its status."""
    return {"metadata": {"name": f"{job_name}-x7k2p", "labels": {"batch.kubernetes.io/job-name": job_name,
                                                                  "job-name": job_name}},
            "status": {"phase": "Failed", "containerStatuses": [{"name": "audit", "state": {"terminated": {
                "exitCode": 1, "reason": "Error", "message": message}}}]}}


LAGGING = {"status": "findings", "finishedAt": 1764238660000, "flows": [
    {"name": NS, "status": "findings", "topics": [
        {"source": "test.orders", "partitions": [{"lag": 1200, "status": "findings"}, {"lag": 3, "status": "ok"}]},
        {"source": "test.payments", "partitions": [{"lag": 0, "status": "ok"}]}]}]}


def test_a_lagging_flow_as_its_last_audit_found_it():
    from contract import lastrun
    run = "kafka-replication-audit-29400617"
    failed = job(run, "2026-11-27T10:17:00Z", "failed", "Job has reached the specified backoff limit")
    r = report(healthy(), jobs=[failed], pods=[audit_pod(run, lastrun.encode(LAGGING)),
                                               audit_pod("kafka-replication-audit-29400557", "not ours")])
    (flow,) = r.flows
    assert (r.health, flow.health) == (Health.degraded, Health.degraded)
    assert flow.problems == ("the last audit (2025-11-27T10:17:40Z): 1 partition(s) with findings; lag test.orders "
                             "1203 (its report: docs/audit.md)",)
    text = status.show.text(r)
    assert "  last audit 2025-11-27T10:17:40Z: findings, lag 1203 record(s) (test.orders 1203)\n" in text
    data = status.show.as_json(r)
    assert data["flows"][NS]["lastAudit"] == {"finishedAt": "2025-11-27T10:17:40Z", "status": "findings",
                                              "partitionsWithFindings": 1, "lagTotal": 1203,
                                              "lag": {"test.orders": 1203, "test.payments": 0},
                                              "staleCheckpointGroups": 0, "checkpoints": None}
    assert data["audits"][0]["lastSummary"] == {"status": "findings", "error": None, "truncated": False,
                                                "certificatesExpire": None}


STALE = {"status": "findings", "finishedAt": 1764238660000, "flows": [
    {"name": NS, "status": "findings", "topics": [
        {"source": "test.orders", "partitions": [{"lag": 0, "status": "ok"}, {"lag": 0, "status": "ok"}]}],
     "checkpoints": [
         {"group": "billing", "ageSeconds": 31.2, "behindRecords": 0, "findings": []},
         {"group": "test.readers", "ageSeconds": 1843.9, "behindRecords": 5120, "findings": ["stale"]},
         *({"group": f"reports-{i}", "ageSeconds": 4000, "behindRecords": 0, "findings": []} for i in range(5))]}]}


def test_each_group_s_checkpoint_age_and_a_stale_one_as_the_last_audit_found_them():
    from contract import lastrun
    run = "kafka-replication-audit-29400617"
    failed = job(run, "2026-11-27T10:17:00Z", "failed", "Job has reached the specified backoff limit")
    r = report(healthy(), jobs=[failed], pods=[audit_pod(run, lastrun.encode(STALE))])
    (flow,) = r.flows
    assert flow.health is Health.degraded
    assert flow.problems == ("the last audit (2025-11-27T10:17:40Z): stale checkpoints of 1 group(s): test.readers "
                             "(1843 s old, 5120 record(s) behind) (its report: docs/audit.md)",)
    assert ("  checkpoints: test.readers 1843 s old, 5120 behind (STALE), billing 31 s old, 0 behind, reports-0 4000 s "
            "old, 0 behind, reports-1 4000 s old, 0 behind, reports-2 4000 s old, 0 behind and 2 more group(s)\n"
            ) in status.show.text(r)
    last = status.show.as_json(r)["flows"][NS]["lastAudit"]
    assert last["staleCheckpointGroups"] == 1 and len(last["checkpoints"]) == 7
    assert last["checkpoints"]["test.readers"] == {"ageSeconds": 1843, "behindRecords": 5120, "stale": True}


def test_a_run_without_a_summary_and_pods_not_read():
    run = "kafka-replication-audit-29400617"
    ok = job(run, "2026-11-27T10:17:00Z", "succeeded")
    r = report(healthy(), jobs=[ok], pods=[audit_pod(run, "Traceback (most recent call last): ...")])
    assert r.health is Health.healthy and r.flows[0].audit is None and r.audits[0].summary is None
    r = report(healthy(), jobs=[ok], pods=Unreadable("pods in replication-audit: HTTP 403: forbidden"))
    assert (r.health, r.audits[0].problems) == (Health.unknown,
                                                ("not read: pods in replication-audit: HTTP 403: forbidden",))


@pytest.mark.parametrize("flavour", ["Strimzi", "CSM", "amq"])
def test_outputs_naming_an_unknown_flavour_are_refused_not_a_traceback(capsys, tmp_path, flavour):
    outputs = json.loads(json.dumps(OUTPUTS))
    outputs["operator"]["flavour"] = flavour
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    assert cli.main(["status", "--outputs", str(path)]) == 2
    assert capsys.readouterr().err == (
        "error: the command line has 1 problem(s):\n  - --outputs: operator: got "
        f"'{flavour} {OUTPUTS['operator']['version']}'; expected a release this version of kafka-replication supports\n")


def test_the_teams_usual_context_for_every_cluster_with_one_flow_chosen(monkeypatch, capsys, tmp_path):
    """`--context` named for each Kubernetes cluster of the stack, as a team's alias gives it, with
    `--flow` choosing a flow of one cluster: the others' values are left unused, not refused; a
    cluster the stack does not have still is."""
    topo = validation.parse(yaml.safe_load((ROOT / "stacks" / "regions.yaml").read_text()))
    stack_plan = plan(topo)
    outputs = json.loads(json.dumps(stack_outputs(stack_plan)))
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    by_cluster = {f["kubernetesCluster"]: name for name, f in sorted(outputs["flows"].items())}
    assert len(by_cluster) >= 2
    (cluster, flow), *others = sorted(by_cluster.items())
    asked = []
    monkeypatch.setattr(status, "Reader", lambda kubeconfig, context, api_version, deadline=None: (
        asked.append(context), Scripted({}))[1])
    contexts = [f"--context={c}=ctx-{c}" for c in sorted(by_cluster)]
    code = cli.main(["status", "--outputs", str(path), "--flow", flow, *contexts])
    err = capsys.readouterr().err
    assert code != 2, err
    assert asked == [f"ctx-{cluster}"]
    code = cli.main(["status", "--outputs", str(path), "--flow", flow, *contexts, "--context", "mars=ctx"])
    assert code == 2
    assert ("--context: (argument): got 'mars=ctx'; expected a Kubernetes cluster of the stack: "
            + ", ".join(sorted(by_cluster))) in capsys.readouterr().err


def _pulumi_stub(folder, script: str) -> str:
    """A `pulumi` on the PATH that answers as `script` says: a stand-in for the CLI's failures
    (the real CLI reads a real stack in tests/engine/test_engine_readiness.py)."""
    folder.mkdir(exist_ok=True)
    (folder / "pulumi").write_text(f"#!/bin/sh\n{script}\n")
    (folder / "pulumi").chmod(0o755)
    return f"{folder}:/usr/bin:/bin"


def test_stack_reads_the_outputs_through_the_pulumi_cli(monkeypatch, capsys, tmp_path, outputs_file):
    """`--stack NAME` runs `pulumi stack output --json --stack NAME` in the project's folder: its
    outputs are the file's; a CLI that fails, is missing or prints no outputs is an argument
    problem (exit 2) naming the stack and what to do instead."""
    seen = tmp_path / "argv"
    monkeypatch.setenv("PATH", _pulumi_stub(tmp_path / "bin", f'echo "$@" > {seen}; cat {outputs_file}'))
    code, out, err = run_cli(monkeypatch, capsys, healthy(), "--stack", "dev")
    assert (code, err) == (0, "") and out.endswith("healthy (exit 0): 1 flow, 1 healthy; 1 audit, 1 healthy\n")
    assert seen.read_text() == "stack output --json --stack dev --non-interactive\n"
    expected = ("error: the command line has 1 problem(s):\n  - --stack: (argument): got 'dev'; expected a stack "
                "`pulumi stack output` reads: {}; or give its outputs with --outputs FILE\n")
    monkeypatch.setenv("PATH", _pulumi_stub(tmp_path / "bin", "echo 'error: no stack named dev found' >&2; exit 255"))
    assert run_cli(monkeypatch, capsys, healthy(), "--stack", "dev") == (
        2, "", expected.format("it exited 255: error: no stack named dev found"))
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert run_cli(monkeypatch, capsys, healthy(), "--stack", "dev") == (
        2, "", expected.format("the Pulumi CLI is not on the PATH"))
    monkeypatch.setenv("PATH", _pulumi_stub(tmp_path / "bin", "echo '{}'"))
    code, _, err = run_cli(monkeypatch, capsys, healthy(), "--stack", "dev")
    assert code == 2 and err.startswith("error: the command line has 1 problem(s):\n  - --outputs: (argument): got "
                                        "'--stack dev'; expected kafka-replication stack outputs (docs/outputs.md): ")


@pytest.mark.parametrize("value", ["1", "3601", "0.5", "-2", "soon"])
def test_watch_takes_whole_seconds_from_2_to_3600(capsys, outputs_file, value):
    with pytest.raises(SystemExit) as exited:
        cli.main(["status", "--outputs", str(outputs_file), "--watch", value])
    assert exited.value.code == 2
    # (the program's name is the command's, or `python -m infra` under pytest)
    assert capsys.readouterr().err.splitlines()[-1].split(" status: ", 1)[1] == (
        f"error: argument --watch: {value!r}: a whole number of seconds from 2 to 3600")


def test_outputs_or_stack_one_of_them(capsys, outputs_file):
    for argv in (["status"], ["status", "--outputs", str(outputs_file), "--stack", "dev"]):
        with pytest.raises(SystemExit) as exited:
            cli.main(argv)
        assert exited.value.code == 2
    errors = capsys.readouterr().err.splitlines()
    assert [e.split(" status: ", 1)[1] for e in errors if "error:" in e] == [
        "error: one of the arguments --outputs --stack is required",
        "error: argument --stack: not allowed with argument --outputs"]


def test_an_interrupt_lost_in_a_finalizer_still_ends_the_watch(monkeypatch, outputs_file):
    """SIGINT arriving while the garbage collector runs a finalizer raises KeyboardInterrupt there,
    where Python prints it as "Exception ignored" and drops it (an API-server run saw `--watch`
    go on so, urllib3 closing a pool's sockets). The watch remembers the signal and ends at its
    next check, with the command line's exit 130; one round only."""
    import os
    import signal

    from infra.tools import status
    rounds = []

    def one_round(*args):
        rounds.append(args)
        assert len(rounds) == 1, "the watch went on after SIGINT"
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)  # the handler runs here
        except KeyboardInterrupt:
            pass  # as a finalizer loses it
        return "healthy"
    monkeypatch.setattr(status, "_once", one_round)
    # SIGINT as a terminal leaves it: `make test` runs tiers in the background, where the shell
    # ignores it (and the watch, like any program, then cannot be interrupted).
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        started = time.monotonic()
        assert cli.main(["status", "--outputs", str(outputs_file), "--watch", "2"]) == 130
        assert len(rounds) == 1 and time.monotonic() - started < 2
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_an_interrupt_in_a_real_finalizer_ends_the_watch_without_a_traceback(monkeypatch, outputs_file, capsys):
    """The same in a finalizer as the collector runs it (weakref.finalize, as urllib3 closes a
    pool): Python hands the interrupt to sys.unraisablehook, which printed "Exception ignored
    in" and a traceback on standard error after Ctrl-C. Not now; any other such report still is."""
    import os
    import signal
    import sys
    import weakref

    from infra.tools import status
    rounds, reports = [], []

    class Pool:
        pass

    def close() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)  # the handler runs here, inside the finalizer

    def one_round(*args):
        rounds.append(args)
        assert len(rounds) == 1, "the watch went on after SIGINT"
        pool = Pool()
        weakref.finalize(pool, close)
        del pool  # the finalizer runs, the interrupt raised in it is unraisable
        weakref.finalize(Pool(), lambda: 1 / 0)  # another unraisable error: reported as before
        return "healthy"
    monkeypatch.setattr(status, "_once", one_round)
    monkeypatch.setattr(sys, "unraisablehook", lambda report: reports.append(report.exc_type))
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert cli.main(["status", "--outputs", str(outputs_file), "--watch", "2"]) == 130
    finally:
        signal.signal(signal.SIGINT, inherited)
    assert (len(rounds), reports) == (1, [ZeroDivisionError])
    assert "Exception ignored" not in capsys.readouterr().err


def test_a_certificate_the_last_audit_found_near_its_expiry():
    """The stack's copies of the clusters' certificates, as the last audit read them: one under
    the alert's 30 days and one expired are the audit's problems (degraded); one further off is
    only shown in the JSON."""
    from datetime import datetime, timezone

    from contract import lastrun
    run = "kafka-replication-audit-29400617"
    ok = job(run, "2026-11-27T10:17:00Z", "succeeded")
    summary = {**LAGGING, "status": "ok", "certificates": [
        {"cluster": "us-east", "item": "caCert", "notAfter": 1_798_761_600_000},       # 2027-01-01
        {"cluster": "us-west", "item": "truststore", "notAfter": 1_829_260_800_000},   # 2027-12-20
        {"cluster": "us-west", "item": "clientCert", "notAfter": 1_764_547_200_000}]}  # 2025-12-01
    stack = contract.read(OUTPUTS)
    now = datetime(2026, 12, 2, 12, 0, tzinfo=timezone.utc)
    r = status.collect(stack, list(stack.flows), {None: Scripted(healthy(), jobs=[ok], pods=[
        audit_pod(run, lastrun.encode(summary))], cron=scheduled_minutes_ago(5))}, now)
    (audit,) = r.audits
    assert (audit.health, r.health) == (Health.degraded, Health.degraded)
    assert audit.problems == (
        "the stack's clientCert of cluster us-west expired at 2025-12-01T00:00:00Z: set the renewed certificate in "
        "the stack and run pulumi up (docs/operations.md#kafkareplicationcertificateexpiring)",
        "the stack's caCert of cluster us-east expires at 2027-01-01T00:00:00Z, in 29 day(s): set the renewed "
        "certificate in the stack and run pulumi up (docs/operations.md#kafkareplicationcertificateexpiring)")
    assert "    ! the stack's caCert of cluster us-east expires at 2027-01-01T00:00:00Z, in 29 day(s)" in status.show.text(r)
    assert status.show.as_json(r)["audits"][0]["lastSummary"]["certificatesExpire"] == {
        "us-east/caCert": "2027-01-01T00:00:00Z", "us-west/clientCert": "2025-12-01T00:00:00Z",
        "us-west/truststore": "2027-12-20T00:00:00Z"}
