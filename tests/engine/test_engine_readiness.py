"""`pulumi up` waits for what the stack asks (docs/engine.md): each KafkaConnect's Ready, and each
running KafkaConnector's Ready as Strimzi reports it (true unless the connector or a task FAILED:
watch.connector_condition's STRIMZI mode, the stand-in's default) together with Connect's own
RUNNING state in the status (infra/plan/connectors.py CONNECTOR_RUNNING). What the up guarantees
under real Strimzi is therefore: no connector or task FAILED, and every running connector RUNNING;
its tasks may still be starting. Proven here on the operator stand-in's statuses, which follow
Strimzi's Ready; the real operator does not run here.

The engine tier (the real Pulumi CLI and Kubernetes provider) deploys the dev stack, made local
as a rehearsal runs it (infra/tools/rehearsal/local.py `local_topology`), with its readiness wait on,
to a real kube-apiserver, while the runtime tier runs it: the topology's Kafka clusters on this
machine, and the operator stand-in's reconciler (tests/support/watch.py) watching the server,
starting a Connect worker for the KafkaConnect Pulumi creates, sending it each KafkaConnector,
and writing each object's status from what the worker's REST API reports. No other code writes
a status: the server's managedFields name the writer of each.

Between the up and the destroy, `kafka-replication status` reads the stack as on-call would
(docs/status.md): healthy, then the checkpoint connector paused through its spec, then a source
task failed by a record its target topic refuses; each verdict on the states the real workers
report. Then the flow lags (records the failed task never copies) and the audit runs for real
(Spark's Kafka source on the real clusters, with the configuration and credentials Pulumi
deployed): status shows the lag per partition from that run's own summary, which the Job
controller and the kubelet would keep on the Job and its pod (tests/support/audit_job.py writes
them: neither runs here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone

import pytest
import yaml

from infra.core import names
from infra.plan.connectors import CONNECTOR_RUNNING
from infra.tools import render
from infra.tools.rehearsal import jars
from infra.tools.rehearsal.apiserver import kubectl_binary, stop
from infra.tools.rehearsal.kube import ApiServerKube, install_crds
from infra.tools.rehearsal.kubeapi import Client
from infra.tools.rehearsal.local import local_topology
from infra.tools.rehearsal.credentials import secret_material
from infra.tools.rehearsal.run import Rehearsal
from tests.engine import harness
from tests.engine.harness import CREATE, DELETE
from tests.engine.test_engine import STORAGE_CLASS
from tests.support.audit_job import finished_run
from tests.support.engine import object_type_and_name, ours_left, servers
from tests.support.prometheus import prometheus_crds
from tests.support.replication import audit_run, operator_command
from tests.support.schemas import strimzi_crds
from tests.support.stacks import ROOT, RUNTIME_COUNTS, unavailable
from tests.support.urns import Recorder
from tests.support.watch import FIELD_MANAGER, Reconciler, connector_condition, now_iso, without_times

pytestmark = [pytest.mark.engine, pytest.mark.runtime]

TIMEOUT_SECONDS = 300  # the stack's readiness timeout: a failure ends in minutes, not the default 15
STRIMZI = ("KafkaConnect", "KafkaConnector")


def on_server(client: Client, api_version: str) -> dict[tuple[str, str, str], dict]:
    """Every KafkaConnect and KafkaConnector the server holds, whoever created it."""
    out = {}
    for kind in STRIMZI:
        res = client.resource(api_version, kind)
        assert res is not None, kind
        status, body = client.request("GET", f"{res.path}/{res.plural}")
        assert status == 200, body
        out.update({(kind, o["metadata"]["namespace"], o["metadata"]["name"]): o for o in body["items"]})
    return out


def status_writers(obj: dict) -> set[str]:
    """The field managers that wrote the object's status subresource."""
    return {e["manager"] for e in obj["metadata"].get("managedFields", []) if e.get("subresource") == "status"}


NS = "repl-us-west-us-east"
AUDIT_NS, AUDIT = "replication-audit", names.AUDIT  # the audit's default namespace, its CronJob
START_MS = int(time.time() * 1000) - 3_600_000  # the audit's window: from before the test's first record


def status_after_faults(engine, project, kubeconfig, client: Client, r: Rehearsal, tmp_path) -> dict[str, tuple]:
    """`kafka-replication status` as on-call runs it (the stack's outputs from `pulumi stack
    output --json`, saved for the text screen, read by the command itself with `--stack` for the
    JSON one, which must agree with it), the kubeconfig, on what the workers really do: after the up; after the
    checkpoint connector is paused through its spec (`kubectl patch`, as a person pauses it);
    after a record the target refuses (its topic's max.message.bytes lowered) fails the source
    task that copies it. Each read once the stand-in has written the worker's state."""
    outputs = tmp_path / "outputs.json"
    outputs.write_text(engine.cli("stack", "output", "--json", "--stack", "dev", cwd=project).stdout)
    binary = kubectl_binary()
    assert binary is not None

    def run(name: str) -> None:
        text = subprocess.run([sys.executable, "-m", "infra", "status", "--outputs", str(outputs), "--kubeconfig",
                               str(kubeconfig)], capture_output=True, text=True, timeout=120, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        # The same read with `--stack`: the command asks the Pulumi CLI for the outputs itself, from
        # the project's folder (-C), with the backend the user is logged in to.
        data = subprocess.run([sys.executable, "-m", "infra", "-C", str(project), "status", "--stack", "dev",
                               "--kubeconfig", str(kubeconfig), "--output", "json"], capture_output=True, text=True,
                              timeout=180, cwd=ROOT, env={**engine.env(project), "PYTHONPATH": str(ROOT)})
        assert text.stderr == data.stderr == "" and text.returncode == data.returncode, (text, data)
        found[name] = (text.returncode, text.stdout, json.loads(data.stdout))

    def reported(connector: str, check) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            status, body = client.request(
                "GET", f"/apis/{r.release.api_version}/namespaces/{NS}/kafkaconnectors/{connector}")
            rest = (body.get("status") or {}).get("connectorStatus") or {}
            if status == 200 and rest and check(rest):
                return
            time.sleep(1)
        raise AssertionError(f"{connector}: not reported in 120 s: {body.get('status')}")

    found: dict[str, tuple] = {}
    # The up waits for each connector's RUNNING, not its tasks' (CONNECTOR_RUNNING).
    # The source connector: a task per partition, tasksMax 3 (test.orders' two, the heartbeats').
    for connector, tasks in ((f"{NS}-source", 3), (f"{NS}-checkpoint", 1), (f"{NS}-heartbeat", 1)):
        reported(connector, lambda rest, n=tasks: [t["state"] for t in rest["tasks"]] == ["RUNNING"] * n)
    run("after the up")
    patch = subprocess.run([str(binary), "--kubeconfig", str(kubeconfig), "-n", NS, "patch",
                            f"kafkaconnector.{r.release.api_version.split('/')[1]}.kafka.strimzi.io",
                            f"{NS}-checkpoint", "--type", "merge", "-p", '{"spec":{"state":"paused"}}'],
                           capture_output=True, text=True, timeout=60)
    assert patch.returncode == 0, patch.stderr
    reported(f"{NS}-checkpoint", lambda rest: rest["connector"]["state"] == "PAUSED"
             and {t["state"] for t in rest["tasks"]} == {"PAUSED"})
    run("checkpoint paused")
    target = r.client("us-east")
    r.clients.alter_topic_configs(target, "us-west.test.orders", {"max.message.bytes": "1024"})
    refused_before = time.time() * 1000
    r.clients.produce(r.client("us-west"), "test.orders", [{"key": "big", "value": "x" * 4000, "partition": 0}])
    found["refused record produced"] = (refused_before, time.time() * 1000)
    reported(f"{NS}-source", lambda rest: [t["state"] for t in rest["tasks"]].count("FAILED") == 1)
    run("a source task failed")
    # The flow lags: three more records of partition 0, which the failed task never copies. The
    # audit runs on what Pulumi deployed (its ConfigMap and credential Secrets, read back from
    # the server), and its run ends as a Job of the CronJob with the run's summary on its pod.
    r.clients.produce(r.client("us-west"), "test.orders", [{"key": f"late{i}", "value": "v", "partition": 0}
                                                          for i in range(3)])
    deployed = [client.request("GET", f"/api/v1/namespaces/{AUDIT_NS}/configmaps/{AUDIT}")[1]] + [
        client.request("GET", f"/api/v1/namespaces/{AUDIT_NS}/secrets/{AUDIT}-{alias}")[1] for alias in ("us-west", "us-east")]
    started = now_iso()
    code, report, summary = audit_run(r, tmp_path, START_MS, "lagging", deployed)
    found["audit report"] = (code, report, summary)
    finished_run(client, AUDIT_NS, AUDIT, "29400617", summary, code, started, now_iso())
    run("the flow lags, audited")
    # `status --live` as on-call runs it from a machine that reaches the clusters: the objects as
    # above, and the lag now, read with the credentials Pulumi deployed for the audit.
    before = time.time() * 1000
    done = operator_command(r, tmp_path / "live", project, "status", NS, "--live", "--kubeconfig", str(kubeconfig),
                            "--output", "json", stack="dev", objects=deployed, env=engine.env(project))
    found["live"] = (done, before, time.time() * 1000)
    return found


def test_up_waits_until_the_operator_reports_ready_from_the_rest_api(tmp_path):
    try:
        engine = harness.start(tmp_path / "engine")
    except LookupError as exc:
        unavailable(f"the engine tier's binaries are missing: {exc}")
    dev = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())
    topology = local_topology(dev)
    topology["operator"]["readiness"] = {"wait": True, "timeoutSeconds": TIMEOUT_SECONDS}
    # The dev stack's audit, which a rehearsal leaves out, deployed here: status reads its runs.
    topology["audit"] = {**dev["audit"], "thresholds": {"maxLag": 0}, "window": {"graceMinutes": 0}}
    path = tmp_path / "dev.yaml"
    path.write_text(yaml.safe_dump(topology, sort_keys=False))
    states, ambient, _ = servers("dev", topology, tmp_path)
    client = Client(states[""])
    r = Rehearsal(topology, tmp_path / "rehearsal", ApiServerKube(client), stack="dev")
    reconciler = Reconciler(r, client)
    timings: dict[str, float] = {}
    try:
        try:
            jars.release_jars(r.release)
        except jars.JarsError as exc:
            unavailable(str(exc))
        install_crds(client, strimzi_crds(r.release))
        prometheus_crds(client, True)
        client.create(STORAGE_CLASS)  # the audit's report claim
        began = time.monotonic()
        r.start_clusters()
        # A topic and a group for the flow, so that the source and checkpoint connectors have
        # tasks to run (the heartbeat connector always has one).
        source = r.client("us-west")
        r.clients.create_topics(source, {"test.orders": 2})
        r.clients.produce(source, "test.orders", [{"key": f"k{i}", "value": f"v{i}", "partition": i % 2}
                                                  for i in range(4)])
        r.clients.consume(source, ["test.orders"], 4, 30_000, group="test.readers")
        timings["Kafka clusters, topic and group"] = time.monotonic() - began

        secrets = secret_material(r.model, r.clusters)
        with Recorder() as recorder:
            rendered = render.run("dev", {"topology": str(path)}, secrets)
        render_urns = set(recorder.urns())  # the stack's own resource left out, as Run.steps does
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(ambient))
        project = engine.project("dev", "readiness")
        engine.cli("config", "set", "kafka-replication:topology", str(path), "--stack", "dev", cwd=project)
        for key, value in secrets.items():
            engine.set_secret(project, "dev", key, value)

        reconciler.start()
        up_started = time.monotonic()
        up = engine.run("up", project, "dev", kubeconfig=kubeconfig, timeout=TIMEOUT_SECONDS + 300)
        up_finished = time.monotonic()
        reconciler.stop()
        timings["pulumi up"] = up_finished - up_started
        after_up = on_server(client, r.release.api_version)
        # What the worker says now, read afresh, for every connector on the server: each with
        # its tasks (a topic and a group to copy), every one RUNNING.
        rest_now = {k: r.workers[(k[1], o["metadata"]["labels"][names.CLUSTER_LABEL])].wait_running(k[2], 60, 1)
                    for k, o in after_up.items() if k[0] == "KafkaConnector"}
        errors_after_up = list(reconciler.errors)
        # The reconciler's record after the up (the destroy's deletions drop its entries).
        running_at, ready_since, last = dict(reconciler.running_at), dict(reconciler.ready_since), dict(reconciler.last)

        reconciler.start()
        statuses = status_after_faults(engine, project, kubeconfig, client, r, tmp_path)
        reconciler.stop()

        reconciler.start()
        destroy_started = time.monotonic()
        destroy = engine.run("destroy", project, "dev", kubeconfig=kubeconfig)
        timings["pulumi destroy"] = time.monotonic() - destroy_started
        deadline = time.monotonic() + 60
        while r.workers and time.monotonic() < deadline:
            time.sleep(0.5)  # the reconciler stops a deleted KafkaConnect's worker
        reconciler.stop()
        workers_left = sorted(r.workers)
        left = ours_left(client, rendered.objects())
    finally:
        reconciler.stop()
        RUNTIME_COUNTS["Connect workers started"] += reconciler.workers_started
        r.stop()
        stop(tmp_path / "apiserver-dev")
    timings["whole test"] = time.monotonic() - began
    for write in reconciler.writes:
        print(f"{write.at - up_started:8.1f} s  {write.kind} {write.namespace}/{write.name} "
              f"generation {write.generation}, {write.tasks} tasks: "
              f"{without_times({'conditions': [write.condition]})['conditions'][0]}")
    print({k: round(v, 1) for k, v in timings.items()})

    assert up.code == 0, up.output
    assert errors_after_up == [] and reconciler.errors == [], reconciler.errors
    # The up created exactly the rendered objects, each once.
    assert up.steps() == {urn: CREATE for urn in render_urns}
    kubernetes = {(u.split("::")[2].rpartition("$")[2], u.split("::")[3]) for u in up.steps()
                  if u.split("::")[2].rpartition("$")[2].startswith("kubernetes:")}
    assert kubernetes == {object_type_and_name(o) for o in rendered.objects()}

    # What the up waited for: the KafkaConnect's Ready, and its three running connectors' Ready and
    # RUNNING, all on the server.
    waits = {(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]):
             o["metadata"]["annotations"][names.WAIT_FOR]
             for o in rendered.objects() if names.WAIT_FOR in o["metadata"].get("annotations", {})}
    waited = set(waits)
    connect = ("KafkaConnect", "repl-us-west-us-east", "repl-us-west-us-east")
    connectors = {("KafkaConnector", "repl-us-west-us-east", f"repl-us-west-us-east-{part}")
                  for part in ("source", "checkpoint", "heartbeat")}
    assert waited == {connect, *connectors}
    assert set(after_up) == waited
    assert waits[connect] == "condition=Ready"
    assert {waits[k] for k in connectors} == {json.dumps(["condition=Ready", CONNECTOR_RUNNING])}

    # The up ended only after the reconciler had seen every connector RUNNING (Connect's state)
    # and had sent the status that made each object Ready (its clock read before the PUT left).
    # Under Strimzi's Ready a connector may be Ready before it runs: the RUNNING wait is what
    # holds the up until it does.
    assert set(running_at) == {k[1:] for k in connectors}
    assert set(ready_since) == waited
    last_running = max(running_at.values())
    last_ready = max(ready_since.values())
    assert up_started < min(ready_since.values()) <= last_ready < up_finished
    assert up_started < last_running < up_finished

    # Each object ends with exactly the status the reconciler derived from REST, written by it alone.
    for key, obj in after_up.items():
        status = obj["status"]
        assert status == last[key], key
        assert without_times(status)["conditions"] == [{"type": "Ready", "status": "True"}], key
        assert status["observedGeneration"] == obj["metadata"]["generation"] == 1, key
        assert status_writers(obj) == {FIELD_MANAGER}, obj["metadata"]["managedFields"]
    connect_status = after_up[connect]["status"]
    assert connect_status["url"] == "http://repl-us-west-us-east-connect-api.repl-us-west-us-east.svc:8083"
    assert connect_status["replicas"] == 1
    assert {"org.apache.kafka.connect.mirror.MirrorSourceConnector",
            "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
            "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"} <= {
        p["class"] for p in connect_status["connectorPlugins"]}
    for key in connectors:
        status = after_up[key]["status"]
        rest = status["connectorStatus"]
        assert rest["name"] == key[2]
        assert rest["connector"]["state"] == "RUNNING"
        assert "FAILED" not in {t["state"] for t in rest["tasks"]}, rest
        assert len(rest_now[key]["tasks"]) >= 1 and {t["state"] for t in rest_now[key]["tasks"]} == {"RUNNING"}
        assert without_times({"conditions": [connector_condition(rest_now[key])]}) == \
            without_times({"conditions": status["conditions"]})
        assert status["tasksMax"] == after_up[key]["spec"].get("tasksMax", len(rest["tasks"]))

    # What `kafka-replication status` said at each step (docs/status.md).
    code, text, data = statuses["after the up"]
    assert code == 0, text
    assert data["health"] == "healthy" and data["flows"][NS]["problems"] == []
    assert [(c["name"], c["state"], [t["state"] for t in c["tasks"]]) for c in data["flows"][NS]["connectors"]] == [
        (f"{NS}-source", "RUNNING", ["RUNNING"] * 3), (f"{NS}-checkpoint", "RUNNING", ["RUNNING"]),
        (f"{NS}-heartbeat", "RUNNING", ["RUNNING"])]
    assert "replication-audit: HEALTHY; no run yet (schedule 17 * * * *)\n" in text
    assert text.endswith("healthy (exit 0): 1 flow, 1 healthy; 1 audit, 1 healthy\n")
    code, text, data = statuses["checkpoint paused"]
    assert (code, data["health"]) == (1, "degraded"), text
    assert data["flows"][NS]["problems"] == [f"{NS}-checkpoint is PAUSED (its spec asks for it: state: paused)",
                                             f"{NS}-checkpoint task 0 is PAUSED"]
    assert f"  checkpoint {NS}-checkpoint  PAUSED (spec: paused), 1 task: 1 PAUSED\n" in text
    code, text, data = statuses["a source task failed"]
    assert (code, data["health"]) == (1, "degraded"), text  # the other task still copies partition 1
    (failed,) = [t for t in data["flows"][NS]["connectors"][0]["tasks"] if t["state"] == "FAILED"]
    assert failed["trace"] == ("org.apache.kafka.connect.errors.ConnectException: Unrecoverable exception from "
                               "producer send callback"), failed
    assert f"{NS}-source task {failed['id']} is FAILED: org.apache.kafka.connect.errors.ConnectException: " \
           "Unrecoverable exception from producer send callback" in data["flows"][NS]["problems"]
    # The stand-in's condition is Strimzi's (AbstractConnectOperator): NotReady, the failed task's id.
    assert (f"{NS}-source: the operator reports NotReady: The following tasks have failed: {failed['id']}, see "
            "connectorStatus for more details.") in data["flows"][NS]["problems"], data["flows"][NS]["problems"]

    # The audit's own run on the real clusters: partition 0 lags by the refused record and the
    # three after it; and what status makes of that run's summary.
    code, report, summary = statuses["audit report"]
    (topic,) = report["flows"][0]["topics"]
    assert code == 1 and [(p["partition"], p["lag"], p["findings"]) for p in topic["partitions"]] == [
        (0, 4, ["lag of 4 record(s)"]), (1, 0, [])], (code, topic)
    finished = datetime.fromtimestamp(json.loads(summary)["finishedAt"] / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    code, text, data = statuses["the flow lags, audited"]
    assert (code, data["health"]) == (1, "degraded"), text
    last = data["flows"][NS]["lastAudit"]
    assert {k: last[k] for k in ("finishedAt", "status", "partitionsWithFindings", "lagTotal", "lag",
                                 "staleCheckpointGroups")} == {
        "finishedAt": finished, "status": "findings", "partitionsWithFindings": 1, "lagTotal": 4,
        "lag": {"test.orders": 4}, "staleCheckpointGroups": 0}
    assert f"  last audit {finished}: findings, lag 4 record(s) (test.orders 4)\n" in text
    assert (f"the last audit ({finished}): 1 partition(s) with findings; lag test.orders 4 (its report: "
            "docs/audit.md)") in data["flows"][NS]["problems"]
    assert "! audit run kafka-replication-audit-29400617 failed: BackoffLimitExceeded (exit 1: findings in its " \
           "report; another exit: the audit could not run)\n" in text

    # `status --live`: the same objects, and the lag read now from the real clusters and worker:
    # partition 0 behind by the refused record and the three after it, the oldest not replicated
    # the refused record itself (its own timestamp against the read's clock).
    done, before, after = statuses["live"]
    assert (done.returncode, done.stderr) == (1, ""), done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert (data["health"], data["liveError"], data["live"]["verdict"]) == ("degraded", None, "findings")
    assert data["flows"][NS]["health"] == "degraded"
    assert f"{NS}-source task {failed['id']} is FAILED: org.apache.kafka.connect.errors.ConnectException: " \
           "Unrecoverable exception from producer send callback" in data["flows"][NS]["problems"]
    (flow,) = data["live"]["flows"]
    assert (flow["flow"], flow["errors"], flow["findings"]) == (NS, [], ["test.orders[0]: lagging, lag 4"])
    assert [(p["topic"], p["partition"], p["lag"], p["status"]) for p in flow["replication"]] == [
        ("test.orders", 0, 4, "lagging"), ("test.orders", 1, 0, "ok")]
    refused_before, refused_after = statuses["refused record produced"]
    age = flow["replication"][0]["oldestUnreplicatedAgeSeconds"]
    assert (before - refused_after) / 1000 - 1 <= age <= (after - refused_before) / 1000 + 1, age
    assert destroy.code == 0, destroy.output
    assert set(destroy.steps()) == render_urns
    assert set(destroy.steps().values()) == {DELETE}
    assert left == [] and workers_left == []
    RUNTIME_COUNTS["connectors seen RUNNING with every task"] += len(running_at)
