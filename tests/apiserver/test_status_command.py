"""`kafka-replication status` against a real kube-apiserver, run as a user runs it (the command
line, the official client, a kubeconfig): the dev stack's objects created for real, their
statuses written through the status subresource as Strimzi's operator and the Job controller
write them (this tier runs neither: the statuses here are given, and tests/engine/
test_engine_readiness.py reads the ones the operator stand-in derives from real workers).

What it proves: the reader finds each object the stack outputs name, at the API version of the
stack's release; the Roles docs/status.md gives a reader are enough (exit 0 with them) and
without them nothing is read (403: exit 5, each object named); a path the server does not serve
is not an object's absence; a server that refuses connections or never answers ends the command
within one request's deadline, with exit 5."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
import yaml

from contract import lastrun, outputs as contract
from infra.core.releases import Flavour, find
from infra.tools import render
from infra.tools.rehearsal.apiserver import kubeconfig
from infra.tools.rehearsal.kube import ApiServerKube, install_crds
from infra.tools.rehearsal.kubeapi import Client
from infra.tools.status.kube import SECONDS
from tests.support.audit_job import finished_run
from tests.support.schemas import strimzi_crds
from tests.support.stacks import ROOT, started_apiserver

pytestmark = pytest.mark.apiserver

NS = "repl-us-west-us-east"
AUDIT_NS = "replication-audit"
CRON = "kafka-replication-audit"


def status_reader_roles(doc: str) -> tuple[list[dict], list[dict]]:
    """The Roles and bindings docs/status.md gives a reader, as a user copies them (its two yaml
    blocks under "## Who may read it"): those of the flow namespaces, those of the audit's."""
    section = doc.split("## Who may read it", 1)[1].split("\n## ", 1)[0]
    flows, audit = (block.split("```", 1)[0] for block in section.split("```yaml\n")[1:3])
    return [d for d in yaml.safe_load_all(flows) if d], [d for d in yaml.safe_load_all(audit) if d]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from started_apiserver(tmp_path_factory, "apiserver-status")


@pytest.fixture(scope="module")
def deployed(server: Client, tmp_path_factory):
    """The dev stack's objects on the server, with the statuses the operator writes once every
    connector runs, and one audit run that succeeded."""
    result = render.run("dev", placeholder_secrets=True)
    objects = result.objects()
    release = find(Flavour.csm, "1.2")
    assert release is not None
    install_crds(server, strimzi_crds(release))
    kube = ApiServerKube(server)
    for kinds in (("Namespace",), ("ServiceAccount", "KafkaConnect", "KafkaConnector", "CronJob")):
        for o in objects:
            if o["kind"] in kinds:
                assert kube.apply(o), o["metadata"]
    for o in objects:
        if o["kind"] == "KafkaConnect":
            write_status(server, o, {"conditions": [{"type": "Ready", "status": "True",
                                                     "lastTransitionTime": "2026-11-27T10:00:00Z"}],
                                     "observedGeneration": 1, "replicas": 1,
                                     "url": f"http://{NS}-connect-api.{NS}.svc:8083"})
        elif o["kind"] == "KafkaConnector":
            write_status(server, o, connector_status(o["metadata"]["name"], "RUNNING", ["RUNNING"]))
    summary = lastrun.encode({"status": "ok", "finishedAt": 1795774660000, "flows": [
        {"name": NS, "status": "ok", "topics": [{"source": "test.orders", "partitions": [
            {"lag": 2, "status": "ok"}, {"lag": 0, "status": "ok"}]}]}]})
    finished_run(server, AUDIT_NS, CRON, "29400617", summary, 0)
    outputs = tmp_path_factory.mktemp("status") / "outputs.json"
    outputs.write_text(json.dumps(result.outputs))
    contract.read(json.loads(outputs.read_text()))
    return outputs, objects


HEALTHY = (
    "operator csm 1.2 (Kafka 3.8.0)\n"
    "\n"
    f"flow {NS}: us-west -> us-east: HEALTHY\n"
    f"  KafkaConnect {NS}/{NS}: Ready, 1 replica\n"
    f"  source     {NS}-source      RUNNING, 1 task: 1 RUNNING\n"
    f"  checkpoint {NS}-checkpoint  RUNNING, 1 task: 1 RUNNING\n"
    f"  heartbeat  {NS}-heartbeat   RUNNING, 1 task: 1 RUNNING\n"
    "  last audit 2026-11-27T10:17:40Z: ok, lag 2 record(s) (test.orders 2)\n"
    f"audit {AUDIT_NS}/{CRON}: HEALTHY; last run {CRON}-29400617: succeeded at 2026-11-27T10:17:40Z\n"
    "\n"
    "healthy (exit 0): 1 flow, 1 healthy; 1 audit, 1 healthy\n")


def get(server: Client, api_version: str, kind: str, namespace: str, name: str) -> dict:
    res = server.resource(api_version, kind)
    assert res is not None
    status, body = server.request("GET", f"{res.path}/namespaces/{namespace}/{res.plural}/{name}")
    assert status == 200, body
    return body


def connector_status(name: str, state: str, tasks: list[str], trace: str | None = None) -> dict:
    failed = state == "FAILED" or "FAILED" in tasks
    return {"conditions": [{"type": "NotReady" if failed else "Ready", "status": "True",
                            "lastTransitionTime": "2026-11-27T10:00:00Z"}],
            "observedGeneration": 1, "tasksMax": 1,
            "connectorStatus": {"name": name, "type": "source",
                                "connector": {"state": state, "worker_id": "10.244.0.5:8083"},
                                "tasks": [{"id": i, "state": s, "worker_id": "10.244.0.5:8083",
                                           **({"trace": trace} if trace and s == "FAILED" else {})}
                                          for i, s in enumerate(tasks)]}}


def write_status(server: Client, obj: dict, status: dict) -> None:
    current = get(server, obj["apiVersion"], obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])
    current["status"] = status
    res = server.resource(obj["apiVersion"], obj["kind"])
    assert res is not None
    code, body = server.request("PUT", f"{res.path}/namespaces/{obj['metadata']['namespace']}/{res.plural}/"
                                       f"{obj['metadata']['name']}/status", current)
    assert code == 200, body


def run_status(outputs, config: dict, *args: str) -> subprocess.CompletedProcess:
    path = outputs.parent / f"kubeconfig-{time.monotonic_ns()}"
    path.write_text(yaml.safe_dump(config))
    return subprocess.run([sys.executable, "-m", "infra", "status", "--outputs", str(outputs), "--kubeconfig",
                           str(path), *args], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def admin(server: Client) -> dict:
    assert server.state is not None
    return kubeconfig({"dev": server.state}, "dev")


def as_service_account(server: Client, name: str) -> dict:
    config = admin(server)
    config["users"] = [{"name": "dev-admin", "user": {"token": ApiServerKube(server).token("default", name)}}]
    return config


def test_a_healthy_stack_read_from_the_server(server, deployed):
    outputs, _ = deployed
    done = run_status(outputs, admin(server))
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    assert done.stdout == HEALTHY


def test_a_failed_task_read_from_the_server(server, deployed):
    outputs, objects = deployed
    (source,) = [o for o in objects if o["kind"] == "KafkaConnector" and o["metadata"]["name"] == f"{NS}-source"]
    trace = ("org.apache.kafka.connect.errors.ConnectException: Unrecoverable exception from producer send "
             "callback\n\tat org.apache.kafka.connect.runtime.WorkerSourceTask...")
    write_status(server, source, connector_status(f"{NS}-source", "RUNNING", ["RUNNING", "FAILED"], trace))
    try:
        done = run_status(outputs, admin(server), "--output", "json")
        assert done.returncode == 1, done.stdout + done.stderr
        got = json.loads(done.stdout)
        assert got["flows"][NS]["problems"] == [
            f"{NS}-source task 1 is FAILED: org.apache.kafka.connect.errors.ConnectException: Unrecoverable "
            "exception from producer send callback"]
        assert got["flows"][NS]["connectors"][0]["ready"] is False
    finally:
        write_status(server, source, connector_status(f"{NS}-source", "RUNNING", ["RUNNING"]))


def test_watch_shows_each_round_as_read_until_interrupted(server, deployed):
    """`--watch 2`: a round every 2 s, each read again from the server (a task that fails between
    rounds is on the next one), each under its heading on a pipe; Ctrl-C (SIGINT) ends it with
    exit 130 and no traceback."""
    outputs, objects = deployed
    (source,) = [o for o in objects if o["kind"] == "KafkaConnector" and o["metadata"]["name"] == f"{NS}-source"]
    path = outputs.parent / "kubeconfig-watch"
    path.write_text(yaml.safe_dump(admin(server)))
    watching = subprocess.Popen([sys.executable, "-X", "faulthandler", "-m", "infra", "status", "--outputs", str(outputs), "--kubeconfig",
                                 str(path), "--watch", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                                # As a terminal starts it: `make test` runs this tier in the background,
                                # where the shell ignores SIGINT, and Python keeps an ignored SIGINT.
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    rounds: list[list[str]] = []
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in watching.stdout or []], daemon=True)
    reader.start()

    def next_round() -> tuple[str, str]:
        """The next round's heading and screen (its last line is the verdict)."""
        heading, screen = lines.get(timeout=60), []
        while not screen or not screen[-1].startswith(("healthy", "degraded", "down", "unknown")):
            screen.append(lines.get(timeout=60))
        rounds.append([heading, *screen])
        return heading, "".join(screen)

    try:
        heading, screen = next_round()
        assert re.fullmatch(r"every 2 s, 20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC \(Ctrl-C stops\)\n", heading), heading
        assert screen == HEALTHY
        write_status(server, source, connector_status(f"{NS}-source", "RUNNING", ["FAILED"], "boom"))
        while "FAILED" not in screen:
            assert len(rounds) < 5, rounds
            heading, screen = next_round()
        # The flow's only source task failed: nothing is copied.
        assert screen == HEALTHY.replace(f"{NS}: us-west -> us-east: HEALTHY", f"{NS}: us-west -> us-east: DOWN").replace(
            f"{NS}-source      RUNNING, 1 task: 1 RUNNING\n", f"{NS}-source      RUNNING, 1 task: 1 FAILED\n").replace(
            "(test.orders 2)\n", f"(test.orders 2)\n    ! {NS}-source task 0 is FAILED: boom\n").replace(
            "healthy (exit 0): 1 flow, 1 healthy;", "down (exit 4): 1 flow, 1 down;")
    finally:
        watching.send_signal(signal.SIGINT)
        try:
            code = watching.wait(timeout=30)
        except subprocess.TimeoutExpired:  # where it is stuck: faulthandler prints every thread's stack
            watching.send_signal(signal.SIGABRT)
            watching.wait(timeout=30)
            raise AssertionError(f"not ended by SIGINT in 30 s:\n{watching.stderr.read() if watching.stderr else ''}")
        finally:
            watching.kill()
            write_status(server, source, connector_status(f"{NS}-source", "RUNNING", ["RUNNING"]))
    assert (code, watching.stderr.read() if watching.stderr else "") == (130, "")


def test_the_documented_reader_roles_are_enough_and_without_them_nothing_is_read(server, deployed):
    outputs, _ = deployed
    flows, audit = status_reader_roles((ROOT / "docs" / "status.md").read_text())
    kube = ApiServerKube(server)
    for name in ("on-call", "nobody"):
        kube.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "default"}})
    for documents, ns in ((flows, NS), (audit, AUDIT_NS)):
        for doc in documents:
            if doc["kind"] in ("Role", "RoleBinding"):
                placed = json.loads(json.dumps(doc))
                placed["metadata"]["namespace"] = ns  # `kubectl apply -n <namespace>`
                if doc["kind"] == "RoleBinding":  # the group of the document stands for a person
                    placed["subjects"] = [{"kind": "ServiceAccount", "name": "on-call", "namespace": "default"}]
                kube.apply(placed)
    done = run_status(outputs, as_service_account(server, "on-call"))
    assert (done.returncode, done.stderr) == (0, ""), done.stdout

    done = run_status(outputs, as_service_account(server, "nobody"))
    assert done.returncode == 5, done.stdout + done.stderr
    assert f"    ! not read: KafkaConnect {NS}/{NS}: HTTP 403: kafkaconnects.kafka.strimzi.io \"{NS}\" is " \
           f"forbidden: User \"system:serviceaccount:default:nobody\" cannot get resource \"kafkaconnects\" in API " \
           f"group \"kafka.strimzi.io\" in the namespace \"{NS}\"\n" in done.stdout
    assert f"    ! not read: CronJob {AUDIT_NS}/{CRON}: HTTP 403: " in done.stdout
    assert done.stdout.endswith("unknown (exit 5): 1 flow, 1 unknown; 1 audit, 1 unknown\n")


def test_a_server_that_refuses_connections(deployed, server):
    outputs, _ = deployed
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    config = admin(server)
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    done = run_status(outputs, config)
    assert done.returncode == 5, done.stdout + done.stderr
    assert f"    ! not read: KafkaConnect {NS}/{NS}: https://127.0.0.1:{port} did not answer: " \
           "NewConnectionError: " in done.stdout
    # Asked once: the other objects are not asked again.
    assert f"    ! not read: KafkaConnector {NS}/{NS}-source: not asked (https://127.0.0.1:{port} did not " \
           "answer: " in done.stdout


def test_a_server_that_never_answers_costs_one_deadline(deployed, server):
    """A listener that accepts connections and says nothing (a dropped route, a hung proxy): one
    request's deadline (kube.SECONDS), then nothing more is asked of it."""
    outputs, _ = deployed
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # the kernel completes the handshakes; nobody reads
        port = silent.getsockname()[1]
        config = admin(server)
        config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
        began = time.monotonic()
        done = run_status(outputs, config)
        took = time.monotonic() - began
    assert done.returncode == 5, done.stdout + done.stderr
    assert f"https://127.0.0.1:{port} did not answer: ReadTimeoutError: " in done.stdout
    assert took < 3 * SECONDS, took


def test_a_path_the_server_does_not_serve_is_not_a_missing_object(deployed, server):
    """A 404 without a NotFound Status (the API version not served): not read, never `missing`."""
    outputs, _ = deployed
    served = json.loads(outputs.read_text())
    served["operator"] = {**served["operator"], "flavour": "strimzi", "version": "1.2.0", "strimziVersion": "1.2.0"}
    served["operatorFlavour"] = "strimzi"
    other = outputs.parent / "outputs-1.2.0.json"
    other.write_text(json.dumps(served))
    done = run_status(other, admin(server))
    assert done.returncode == 5, done.stdout + done.stderr
    assert f"    ! not read: KafkaConnect {NS}/{NS}: HTTP 404: {server.url} does not serve /apis/kafka.strimzi.io/v1/" \
           f"namespaces/{NS}/kafkaconnects/{NS} (the right context? the operator's CRDs at kafka.strimzi.io/v1?)" \
           in done.stdout
    assert "missing" not in done.stdout
