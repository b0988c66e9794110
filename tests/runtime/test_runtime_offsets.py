"""Offsets as code on the runtime tier: a rendered offsets request carried out against the real
Connect worker as the operator carries it out (infra/tools/rehearsal/offsets.py), and the records
that replicate afterwards, exactly.

The documents' dev flow (SASL_SSL both ways) without heartbeats, so that the source connector's
offsets are those of the test's topic alone, named `orders` as in docs/operations.md's replay
steps, whose kubectl lines run here as written (kubectl of the API server's release)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time

import pytest
import yaml

from tests.support import runbooks
from tests.support.replication import (HAND_MADE_STATES, BASE_MS, audit_run, dev_for_runtime, eventually, halted,
                                       kubectl_line, operator_command, rehearsal, running, stack_project)
from tests.support.stacks import ROOT

pytestmark = pytest.mark.runtime

NS = "orders"  # the flow's name: its namespace and Connect cluster
SOURCE = "orders-source"
TOPIC, REMOTE = "test.replay", "us-west.test.replay"
REPLAY = "Step by step: replay from an offset"
N, K = 10, 3  # records sent; the offset partition 0 is altered to (the last one already replicated)


def flow_topology(flavour: str, version: str) -> dict:
    topo = dev_for_runtime(flavour, version)
    topo["flows"][0]["heartbeats"] = False
    topo["flows"][0]["name"] = NS
    return topo


def with_request(topo: dict, state: str, *requests: dict) -> dict:
    t = copy.deepcopy(topo)
    t["flows"][0]["state"] = {"source": state}
    t["flows"][0]["offsets"] = list(requests)
    return t


def replicated(r, count: int) -> list[str]:
    """The values on the target's copy of the topic, in offset order, once it holds `count`."""
    target = r.client("us-east")
    eventually(f"{count} records in {REMOTE}",
               lambda: r.clients.end_offsets(target, [REMOTE]).get(f"{REMOTE}:0") == count, 120)
    got = r.clients.consume(target, [REMOTE], count, 60_000)
    return [g["value"] for g in sorted(got, key=lambda g: g["offset"])]


@pytest.mark.parametrize("flavour,version", [("strimzi", "1.2.0"), ("csm", "1.4")], ids=["strimzi-1.2.0", "csm-1.4"])
def test_list_alter_and_reset_on_the_real_worker(flavour, version, runtime_api, tmp_path):
    topo = flow_topology(flavour, version)
    values = [f"v{i}" for i in range(N)]
    with rehearsal(topo, tmp_path, runtime_api) as r:
        source = r.client("us-west")
        r.clients.create_topics(source, {TOPIC: 1})
        r.clients.produce(source, TOPIC, [{"key": f"k{i}", "value": v, "partition": 0, "timestamp": BASE_MS + i}
                                          for i, v in enumerate(values)])
        r.deploy()
        running(r)
        assert replicated(r, N) == values
        (connect,) = {c for c, _ in r.connectors.values()}
        worker = r.workers[connect]

        # Stopped: its tasks commit their last offsets as they stop.
        r.update(r.render(with_request(topo, "stopped")))
        partition = {"cluster": "us-west", "partition": 0, "topic": TOPIC}
        last = {"offsets": [{"partition": partition, "offset": {"offset": N - 1}}]}
        eventually("the stopped connector's offsets", lambda: worker.get(f"/connectors/{SOURCE}/offsets") == last, 60)

        # list: the operator's ConfigMap, as Jackson pretty-prints the worker's answer.
        r.update(r.render(with_request(topo, "stopped", {"connector": SOURCE, "action": "list", "request": "list-1"})))
        listed = r.listed[(NS, f"{SOURCE}-offsets")]
        text = (
            '{\n  "offsets" : [ {\n    "partition" : {\n      "cluster" : "us-west",\n      "partition" : 0,\n'
            f'      "topic" : "{TOPIC}"\n    }},\n    "offset" : {{\n      "offset" : {N - 1}\n    }}\n  }} ]\n}}')
        assert listed["data"] == {"offsets.json": text}
        assert json.loads(text) == last
        assert listed["metadata"]["labels"]["strimzi.io/kind"] == "KafkaConnector"
        status, stored = r.kube.client.request("GET", f"/api/v1/namespaces/{NS}/configmaps/{SOURCE}-offsets")
        assert status == 200 and stored["data"] == {"offsets.json": text}
        # The operator removed its annotation; ours stays with the request.
        annotations = r.connectors[(NS, SOURCE)][1]["metadata"]["annotations"]
        assert "strimzi.io/connector-offsets" not in annotations
        assert annotations["kafka-replication.io/offsets-request"] == "list/list-1"
        # docs/operations.md, "Listed offsets": its kubectl line as written prints the same text.
        assert kubectl_line(r.kube.client, runbooks.line(REPLAY, "kubectl -n orders get configmap"),
                            tmp_path) == text

        # alter partition 0 to K: the worker's offsets say so.
        rewind = {"connector": SOURCE, "action": "alter", "request": "rewind-1",
                  "offsets": [{"topic": TOPIC, "partition": 0, "offset": K}]}
        r.update(r.render(with_request(topo, "stopped", rewind)))
        assert worker.get(f"/connectors/{SOURCE}/offsets") == {
            "offsets": [{"partition": partition, "offset": {"offset": K}}]}
        # docs/operations.md's replay steps, their kubectl lines as written: the operator's
        # annotation gone (done), ours with the request. The conditions line reads the field
        # Strimzi writes; this rehearsal's operator stand-in carries requests out and writes no
        # status (tests/engine/test_engine_readiness.py's does), so it prints nothing here.
        annotations_line, conditions_line = (runbooks.line(REPLAY, f"kubectl -n orders get kafkaconnector {SOURCE} -o "
                                                           f"jsonpath='{{.{field}}}'") for field in
                                             ("metadata.annotations", "status.conditions"))
        stored = r.kube.client.request("GET", f"/apis/{r.release.api_version}/namespaces/{NS}/kafkaconnectors/"
                                              f"{SOURCE}")[1]
        shown = json.loads(kubectl_line(r.kube.client, annotations_line, tmp_path))
        assert shown == stored["metadata"]["annotations"]
        assert "strimzi.io/connector-offsets" not in shown
        assert shown["kafka-replication.io/offsets-request"] == "alter/rewind-1"
        assert "status" not in stored and kubectl_line(r.kube.client, conditions_line, tmp_path) == ""
        # The same request rendered again is not carried out again.
        r.update(r.render(with_request(topo, "stopped", rewind)))
        assert len([d for d in r.offsets_done if d[1] == SOURCE]) == 2

        # Running again: the records after K arrive a second time, and nothing else.
        r.update(r.render(with_request(topo, "running")))
        running(r)
        assert replicated(r, N + N - K - 1) == values + values[K + 1:]
        time.sleep(10)
        assert r.clients.end_offsets(r.client("us-east"), [REMOTE]) == {f"{REMOTE}:0": N + N - K - 1}

        # reset: no offsets left; running again, the whole topic arrives again.
        r.update(r.render(with_request(topo, "stopped")))
        halted(worker, SOURCE, "STOPPED")
        r.update(r.render(with_request(topo, "stopped", {"connector": SOURCE, "action": "reset",
                                                          "request": "reset-1"})))
        assert worker.get(f"/connectors/{SOURCE}/offsets") == {"offsets": []}
        r.update(r.render(with_request(topo, "running")))
        running(r)
        assert replicated(r, 3 * N - K - 1) == values + values[K + 1:] + values


def created_again(r, values: list[str]) -> None:
    """The source topic deleted and created again (one partition), then `values` written to it."""
    source = r.client("us-west")
    r.clients.delete_topics(source, [TOPIC])
    eventually(f"{TOPIC} gone", lambda: TOPIC not in r.clients.topics(source), 60)
    r.clients.create_topics(source, {TOPIC: 1})
    r.clients.produce(source, TOPIC, [{"key": f"k-{v}", "value": v, "partition": 0} for v in values])


def lag_read(r, tmp_path, project):
    """`kafka-replication lag --json` of the flow, read again while it says it could not read
    (exit 5, for at most 30 s): once, a read right after the topic was created again could not."""
    deadline = time.monotonic() + 30
    while True:
        done = operator_command(r, tmp_path / "lag", project, "lag", NS, "--json")
        if done.returncode != 5 or time.monotonic() > deadline:
            return done
        time.sleep(3)


def test_a_source_topic_deleted_and_created_again(runtime_api, tmp_path):
    """docs/operations.md#a-source-topic-deleted-and-created-again, on Strimzi 1.2.0: the source
    connector keeps the offset it stored for the old topic. While the new topic is shorter, `lag`
    and the audit name the partition; the runbook's reset of that partition's offset (offsets as
    code, `offset: null`) copies the new topic whole. Left in place once the new topic has grown
    past it, the stored offset makes MirrorMaker 2 skip the new topic's first records, which the
    offsets cannot show and the audit's data comparison finds missing. A running task does the
    same from the position its consumer holds: a new topic shorter than it is copied whole, one
    grown past it loses its first records."""
    topo = flow_topology("strimzi", "1.2.0")
    topo["audit"] = {"window": {"graceMinutes": 0}}
    old, new, grown = [f"v{i}" for i in range(N)], ["n0", "n1", "n2"], [f"m{i}" for i in range(6)]
    partition = {"cluster": "us-west", "partition": 0, "topic": TOPIC}
    with rehearsal(topo, tmp_path, runtime_api, **HAND_MADE_STATES) as r:
        source = r.client("us-west")
        r.clients.create_topics(source, {TOPIC: 1})
        r.clients.produce(source, TOPIC, [{"key": f"k{i}", "value": v, "partition": 0} for i, v in enumerate(old)])
        r.deploy()
        running(r)
        assert replicated(r, N) == old
        (connect,) = {c for c, _ in r.connectors.values()}
        worker = r.workers[connect]
        project = stack_project(tmp_path, topo)

        # 1. Stopped, the topic deleted and created again with three records: the stored offset
        # (N - 1) is past the new end, which `lag` and the audit name.
        r.update(r.render(with_request(topo, "stopped")))
        stored = {"offsets": [{"partition": partition, "offset": {"offset": N - 1}}]}
        eventually("the stopped connector's offsets", lambda: worker.get(f"/connectors/{SOURCE}/offsets") == stored, 60)
        created_again(r, new)
        done = lag_read(r, tmp_path, project)
        assert done.returncode == 1, done.stdout + done.stderr
        (flow,) = json.loads(done.stdout)["flows"]
        assert flow["findings"] == [f"{TOPIC}[0]: offset-past-end, lag 3"]
        assert [(row["end"], row["committed"], row["lag"], row["status"]) for row in flow["replication"]] == [
            (3, N - 1, 3, "offset-past-end")]
        start_ms = int(time.time() * 1000) - 60_000
        code, result, _ = audit_run(r, tmp_path, start_ms, "past-end")
        assert (code, result["status"]) == (1, "findings")
        assert [(t["target"], p["partition"], p["findings"]) for t in result["flows"][0]["topics"]
                for p in t["partitions"]] == [(REMOTE, 0, [
                    f"unverifiable: the source connector's stored offset {N - 1} is past the partition's end 3: the "
                    "topic was deleted and created again; reset the connector's offsets for it "
                    "(docs/operations.md#a-source-topic-deleted-and-created-again)"])]

        # 2. The runbook: the partition's offset deleted (alter, `offset: null`), then running:
        # the new topic arrives whole, after the old one's records.
        forget = {"connector": SOURCE, "action": "alter", "request": "recreated-1",
                  "offsets": [{"topic": TOPIC, "partition": 0, "offset": None}]}
        r.update(r.render(with_request(topo, "stopped", forget)))
        assert worker.get(f"/connectors/{SOURCE}/offsets") == {"offsets": []}
        r.update(r.render(with_request(topo, "running")))
        running(r)
        assert replicated(r, N + len(new)) == old + new

        # 3. Without the runbook: stopped (stored offset 2), the topic created again and grown to
        # six records, running again. MirrorMaker 2 resumes after offset 2: m0..m2 never arrive.
        r.update(r.render(with_request(topo, "stopped")))
        halted(worker, SOURCE, "STOPPED")
        eventually("the stopped connector's offsets", lambda: worker.get(f"/connectors/{SOURCE}/offsets") == {
            "offsets": [{"partition": partition, "offset": {"offset": len(new) - 1}}]}, 60)
        start_ms = int(time.time() * 1000)
        created_again(r, grown)
        r.update(r.render(with_request(topo, "running")))
        running(r)
        assert replicated(r, N + len(new) + 3) == old + new + grown[3:]
        # Connect commits the offsets after the records (offset.flush.interval.ms): once it has,
        # the offsets say caught up, and cannot tell.
        eventually("the offsets committed past the copy", lambda: worker.get(f"/connectors/{SOURCE}/offsets") == {
            "offsets": [{"partition": partition, "offset": {"offset": len(grown) - 1}}]}, 120)
        assert r.clients.end_offsets(r.client("us-east"), [REMOTE]) == {f"{REMOTE}:0": N + len(new) + 3}
        done = lag_read(r, tmp_path, project)
        assert done.returncode == 0, done.stdout + done.stderr
        (flow,) = json.loads(done.stdout)["flows"]
        assert [(row["end"], row["committed"], row["lag"], row["status"]) for row in flow["replication"]] == [
            (len(grown), len(grown) - 1, 0, "ok")]
        code, result, _ = audit_run(r, tmp_path, start_ms, "skipped")
        assert (code, result["status"]) == (1, "findings")
        assert [(t["target"], p["partition"], p["missing"], p["findings"]) for t in result["flows"][0]["topics"]
                for p in t["partitions"]] == [(REMOTE, 0, 3, ["3 missing record(s)"])]

        # 4. While a task runs: its consumer holds its position (6) in memory. The topic deleted and
        # created again with two records, shorter than the position: out of range, the consumer
        # starts from the earliest record, and both arrive.
        copied = old + new + grown[3:]
        created_again(r, ["r0", "r1"])
        assert replicated(r, len(copied) + 2) == copied + ["r0", "r1"]
        # Created again and grown to six past the position (2) while the task was paused (as a
        # consumer that meets the new topic only once it has grown): the first two never arrive.
        worker.request("PUT", f"/connectors/{SOURCE}/pause")
        halted(worker, SOURCE, "PAUSED")
        created_again(r, [f"g{i}" for i in range(6)])
        worker.request("PUT", f"/connectors/{SOURCE}/resume")
        assert replicated(r, len(copied) + 6) == copied + ["r0", "r1"] + [f"g{i}" for i in range(2, 6)]


def test_csm_1_2_refuses_an_offsets_request_before_anything_starts(tmp_path):
    topo = with_request(flow_topology("csm", "1.2"), "stopped", {"connector": SOURCE, "action": "list", "request": "l"})
    path = tmp_path / "topology.yaml"
    path.write_text(yaml.safe_dump(topo, sort_keys=False))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "infra", "rehearse", str(path)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 2
    assert done.stdout == ""
    assert ("flows[0] (orders): offsets[0].action: got 'list'; expected no offsets request on csm 1.2 "
            "(Strimzi 0.43.0)") in done.stderr
    assert time.monotonic() - started < 30
