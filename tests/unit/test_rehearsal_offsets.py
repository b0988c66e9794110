"""The stand-in operator's offsets requests when the worker refuses one for the moment
(infra/tools/rehearsal/run.py `manage_offsets`): Connect answers 409 while its configuration is
stale after a concurrent change; the operator then keeps its annotation, adds a warning and
repeats at its next reconciliation (AbstractConnectOperator.alterConnectorOffsets, Strimzi 1.2.0).
The stand-in does the same; any other failure it raises, as the refusals tests prove."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.core.names import (CLUSTER_LABEL, CONNECTOR_OFFSETS_ANNOTATION, OFFSETS_KEY, OFFSETS_REQUEST_ANNOTATION,
                              USE_CONNECTOR_RESOURCES)
from infra.plan.connectors import ConnectorKind
from infra.tools.rehearsal import offsets
from infra.tools.rehearsal.process import RestError, RuntimeStartError
from infra.tools.rehearsal.run import Rehearsal
from tests.support.stacks import doc_topology

NS, NAME = "repl-east-west", "repl-east-west-source"
STALE_BODY = ('{"error_code":409,"message":"Cannot complete request momentarily due to stale configuration (typically '
              'caused by a concurrent config change)"}')
STALE = f"w: PATCH /connectors/repl-east-west-source/offsets: HTTP 409: {STALE_BODY}"
UNKNOWN_BODY = '{"message":"Unknown partition"}'
UNKNOWN = f"w: PATCH /connectors/x/offsets: HTTP 400: {UNKNOWN_BODY}"
ANSWERS = {STALE: RestError(STALE, 409, STALE_BODY), UNKNOWN: RestError(UNKNOWN, 400, UNKNOWN_BODY)}
CLASS = ConnectorKind.source.connector_class
BODY = {"offsets": [{"partition": {"topic": "t", "partition": 0}, "offset": {"offset": 9}}]}


class Worker:
    """Answers each PATCH from `answers` in turn (the message of a refusal, or None: done), as
    Worker.request raises a refusal; STOPPED."""

    def __init__(self, answers: list[str | None]) -> None:
        self.answers, self.patched = answers, []

    def status(self, name: str) -> dict[str, Any]:
        return {"connector": {"state": "STOPPED"}, "tasks": []}

    def connector_config(self, name: str) -> dict[str, str]:  # as the spec says: nothing to PUT
        return {"name": name, "connector.class": CLASS}

    def request(self, method: str, path: str, body: Any = None) -> Any:
        answer = self.answers.pop(0)
        if answer is not None:
            raise ANSWERS[answer]
        self.patched.append((method, path, body))
        return None


class Kube:
    def __init__(self) -> None:
        self.applied: list[dict[str, Any]] = []

    def apply(self, obj: dict[str, Any]) -> bool:
        self.applied.append(obj)
        return True


def rehearsal(tmp_path, worker: Worker) -> tuple[Rehearsal, Kube]:
    kube = Kube()
    r = Rehearsal(doc_topology(), tmp_path, kube, reconcile_every=None)  # type: ignore[arg-type]
    connector = {"apiVersion": "kafka.strimzi.io/v1", "kind": "KafkaConnector",
                 "metadata": {"name": NAME, "namespace": NS, "labels": {CLUSTER_LABEL: NS}},
                 "spec": {"class": CLASS, "state": "stopped",
                          "alterOffsets": {"fromConfigMap": {"name": f"{NAME}-offsets-alter"}}}}
    patch = {"apiVersion": "kafka.strimzi.io/v1", "kind": "KafkaConnector", "metadata": {  # the patch: no spec
        "name": NAME, "namespace": NS, "annotations": {CONNECTOR_OFFSETS_ANNOTATION: "alter",
                                                      OFFSETS_REQUEST_ANNOTATION: "alter/failback"}}}
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "data": {OFFSETS_KEY: json.dumps(BODY)},
                 "metadata": {"name": f"{NAME}-offsets-alter", "namespace": NS}}
    r.objects = [connector, configmap, patch]
    r.connectors[(NS, NAME)] = ((NS, NS), connector)
    r.workers[(NS, NS)] = worker  # type: ignore[assignment]
    r.connects[(NS, NS)] = {"metadata": {"namespace": NS, "name": NS, "annotations": {USE_CONNECTOR_RESOURCES: "true"}}}
    return r, kube


def test_a_409_keeps_the_request_and_the_next_reconciliation_carries_it_out(tmp_path):
    worker = Worker([STALE, None])
    r, kube = rehearsal(tmp_path, worker)
    r.manage_offsets()
    done = (NS, NAME, "alter/failback")
    assert (r.offsets_done, r.offsets_retried, worker.patched) == (set(), {done: STALE}, [])
    # Still annotated on the server: the operator keeps its annotation until it succeeds.
    assert kube.applied[-1]["metadata"]["annotations"][CONNECTOR_OFFSETS_ANNOTATION] == "alter"
    r.periodic_reconciliation()
    assert r.offsets_done == {done} and worker.patched == [("PATCH", f"/connectors/{NAME}/offsets", BODY)]
    assert CONNECTOR_OFFSETS_ANNOTATION not in kube.applied[-1]["metadata"].get("annotations", {})
    r.periodic_reconciliation()  # carried out: not again
    assert len(worker.patched) == 1 and worker.answers == []


def test_another_failure_is_raised_as_the_refusals_tests_prove():
    assert offsets.retried(ANSWERS[STALE])
    assert not offsets.retried(ANSWERS[UNKNOWN])
    # Decided on the status the worker answered, not on a message's text: a failure that only
    # mentions a 409 (a connector's trace, a log line) is no refusal to repeat.
    assert not offsets.retried(RuntimeStartError(STALE))
    assert not offsets.retried(RestError("w: GET /x: HTTP 500: HTTP 409 earlier", 500, "HTTP 409 earlier"))


def test_a_request_the_worker_refuses_otherwise_stops_the_rehearsal(tmp_path):
    r, _ = rehearsal(tmp_path, Worker([UNKNOWN]))
    with pytest.raises(RuntimeStartError, match="HTTP 400"):
        r.manage_offsets()
    assert r.offsets_done == set() and r.offsets_retried == {}
