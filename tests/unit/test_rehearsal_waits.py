"""What the rehearsal waits for before it calls a connector running (infra/tools/rehearsal/connect.py
Worker.wait_running, run.py min_tasks), driven by the REST answers a distributed herder gives in the
order it gives them: the connector RUNNING with no task yet, then its task configs written, then
the tasks started. Proven here on scripted answers; the runtime tier waits on real workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.plan.connectors import ConnectorKind
from infra.tools.rehearsal.connect import Worker
from infra.tools.rehearsal.process import RuntimeStartError
from infra.tools.rehearsal.operator import min_tasks

RUNNING = {"state": "RUNNING", "worker_id": "w:8083"}


class Scripted(Worker):
    """A worker whose REST answers come from a list, one step per status read."""

    def __init__(self, steps: list[tuple[dict, list]]):
        super().__init__("ns/c", None, Path("."), "127.0.0.1", "", None, "")  # type: ignore[arg-type]
        self.steps = steps
        self.reads = 0

    def get(self, path: str):
        status, generated = self.steps[min(self.reads, len(self.steps) - 1)]
        if path.endswith("/status"):
            return status
        self.reads += 1
        return generated


def status(*tasks: str) -> dict:
    return {"name": "c", "connector": RUNNING, "tasks": [{"id": i, "state": s} for i, s in enumerate(tasks)]}


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr("infra.tools.rehearsal.connect.time.sleep", lambda s: None)


def test_a_running_connector_waits_for_the_tasks_it_generated():
    worker = Scripted([(status(), [{"task.class": "t"}] * 2), (status("RUNNING"), [{}] * 2),
                       (status("RUNNING", "UNASSIGNED"), [{}] * 2), (status("RUNNING", "RUNNING"), [{}] * 2)])
    assert [t["state"] for t in worker.wait_running("c", 60)["tasks"]] == ["RUNNING", "RUNNING"]
    assert worker.reads == 4


def test_the_heartbeat_connector_is_not_running_before_its_one_task():
    """The race a CI run met: the heartbeat connector RUNNING, its task configs not yet written."""
    worker = Scripted([(status(), []), (status(), []), (status("RUNNING"), [{}])])
    assert [t["state"] for t in worker.wait_running("c", 60, min_tasks=1)["tasks"]] == ["RUNNING"]
    assert worker.reads == 3


def test_a_connector_without_tasks_is_running_when_it_generated_none():
    worker = Scripted([(status(), [])])
    assert worker.wait_running("c", 60)["tasks"] == []


def test_a_failed_task_ends_the_wait_with_its_trace():
    failed = {"name": "c", "connector": RUNNING, "tasks": [{"id": 0, "state": "FAILED", "trace": "boom"}]}
    with pytest.raises(RuntimeStartError, match="connector c on ns/c FAILED:\nboom"):
        Scripted([(failed, [{}])]).wait_running("c", 60)


STALE = ("org.apache.kafka.connect.errors.ConnectException: Cannot start source task c-1 with exactly-once "
         "support as the connector has already generated a new set of task configs")


def _failed(trace: str) -> dict:
    return {"name": "c", "connector": RUNNING, "tasks": [{"id": 0, "state": "RUNNING"},
                                                         {"id": 1, "state": "FAILED", "trace": trace}]}


def test_a_task_of_a_replaced_generation_is_waited_for_while_its_worker_starts_it_again():
    """An exactly-once rolling update (the CI run that met it: Strimzi 0.48.0): a task refused for
    its stale task config generation, then started again on the new one."""
    worker = Scripted([(_failed(STALE), [{}] * 2), (_failed(STALE), [{}] * 2), (status("RUNNING", "RUNNING"), [{}] * 2)])
    assert [t["state"] for t in worker.wait_running("c", 60)["tasks"]] == ["RUNNING", "RUNNING"]
    assert worker.reads == 3


def test_a_task_of_a_replaced_generation_still_failed_after_the_grace_ends_the_wait(monkeypatch):
    clock = iter(range(0, 1000, 10))
    monkeypatch.setattr("infra.tools.rehearsal.connect.time.monotonic", lambda: next(clock))
    worker = Scripted([(_failed(STALE), [{}] * 2)])
    with pytest.raises(RuntimeStartError, match="connector c on ns/c FAILED:\n.*already generated a new set"):
        worker.wait_running("c", 600)
    assert worker.reads > 1  # it read again before it gave up


def test_another_failure_beside_a_stale_generation_ends_the_wait_at_once():
    both = _failed(STALE)
    both["tasks"][0] = {"id": 0, "state": "FAILED", "trace": "SaslAuthenticationException"}
    with pytest.raises(RuntimeStartError, match="FAILED:\nSaslAuthenticationException"):
        Scripted([(both, [{}] * 2)]).wait_running("c", 60)


def test_a_connector_short_of_its_tasks_times_out(monkeypatch):
    clock = iter(range(0, 1000, 30))
    monkeypatch.setattr("infra.tools.rehearsal.connect.time.monotonic", lambda: next(clock))
    with pytest.raises(RuntimeStartError, match="connector c on ns/c not running after 60 s"):
        Scripted([(status(), [])]).wait_running("c", 60, min_tasks=1)


@pytest.mark.parametrize("config,expected", [
    ({}, 1),
    ({"emit.heartbeats.interval.seconds": "5"}, 1),
    ({"emit.heartbeats.interval.seconds": "-1"}, 0),
    ({"emit.heartbeats.enabled": "false"}, 0),
    ({"emit.heartbeats.enabled": "False"}, 0),
])
def test_min_tasks_of_the_heartbeat_connector(config, expected):
    assert min_tasks({"class": ConnectorKind.heartbeat.connector_class, "config": config}) == expected


@pytest.mark.parametrize("kind", [ConnectorKind.source, ConnectorKind.checkpoint])
def test_source_and_checkpoint_connectors_may_rightly_have_no_task(kind):
    assert min_tasks({"class": kind.connector_class, "config": {}}) == 0


# ------------------------------------------------------------------ the Ready the stand-in reports

def _rest(connector: str, *tasks: str) -> dict:
    return {"connector": {"state": connector}, "tasks": [{"id": i, "state": t} for i, t in enumerate(tasks)]}


READY = {"type": "Ready", "status": "True"}


def _not_ready(message: str) -> dict:
    return {"type": "NotReady", "status": "True", "reason": "Throwable", "message": message}


@pytest.mark.parametrize("rest, strimzi, strict", [
    (_rest("RUNNING", "RUNNING"), READY, "True"),
    (_rest("UNASSIGNED"), READY, "False"),
    (_rest("RUNNING"), READY, "True"),
    (_rest("RUNNING", "UNASSIGNED"), READY, "False"),
    (_rest("RESTARTING", "RUNNING"), READY, "False"),
    (_rest("RUNNING", "FAILED", "RUNNING", "FAILED"),
     _not_ready("The following tasks have failed: 0, 2, see connectorStatus for more details."), "False"),
    (_rest("FAILED", "FAILED"), _not_ready("Connector has failed, see connectorStatus for more details."), "False"),
])
def test_ready_as_strimzi_reports_it_and_the_strict_mode(rest, strimzi, strict):
    """Strimzi: Ready unless the connector or a task FAILED (an UNASSIGNED connector, or one with
    tasks not yet started, is Ready), and then its one NotReady condition with its message
    (AbstractConnectOperator, 0.43.0 to 1.2.0). Strict: every one RUNNING."""
    from tests.support.watch import STRICT, connector_condition
    assert connector_condition(rest) == strimzi
    strict_condition = connector_condition(rest, "RUNNING", STRICT)
    assert strict_condition["status"] == "True"  # Strimzi's conditions: Ready or NotReady, never False
    assert {"True": "Ready", "False": "NotReady"}[strict] == strict_condition["type"]
