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
from tests.support.replication import BASE_MS, dev_for_runtime, eventually, halted, kubectl_line, rehearsal, running
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
