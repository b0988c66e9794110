"""The operator stand-in's autoRestart (infra/tools/rehearsal/operator.py auto_restart), read from
Strimzi's AbstractConnectOperator.autoRestartFailedConnectorAndTasks at each supported tag (the
same rule at 0.43.0, 0.45.0, 0.48.0, 0.51.0 and 1.2.0), and the rehearsal's periodic
reconciliation that applies it. The runtime tier shows it bringing a failed task back on a real
worker (tests/runtime/test_pause_and_scale.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from infra.core.names import CLUSTER_LABEL, USE_CONNECTOR_RESOURCES
from infra.plan.connectors import ConnectorKind
from infra.tools.rehearsal import operator
from infra.tools.rehearsal.process import RuntimeStartError
from infra.tools.rehearsal.run import Rehearsal
from tests.support.replication import dev_for_runtime

ON = {"autoRestart": {"enabled": True}}
T0 = datetime(2026, 11, 28, 12, 0, 0, tzinfo=timezone.utc)
RUNNING = {"connector": {"state": "RUNNING"}, "tasks": [{"id": 0, "state": "RUNNING"}, {"id": 1, "state": "RUNNING"}]}
TASK_FAILED = {"connector": {"state": "RUNNING"}, "tasks": [{"id": 0, "state": "RUNNING"}, {"id": 1, "state": "FAILED"}]}
CONNECTOR_FAILED = {"connector": {"state": "FAILED"}, "tasks": []}


def stamp(t: datetime) -> str:
    return t.isoformat(timespec="seconds").replace("+00:00", "Z")


def test_the_backoff_is_strimzis_n_squared_plus_n_capped_at_an_hour():
    assert [operator.auto_restart_backoff_minutes(n) for n in range(11)] == [0, 2, 6, 12, 20, 30, 42, 56, 60, 60, 60]


@pytest.mark.parametrize("status", [TASK_FAILED, CONNECTOR_FAILED], ids=["a task", "the connector"])
def test_the_first_failure_is_restarted_at_once_and_counted(status):
    assert operator.auto_restart(ON, status, None, T0) == (True, {"count": 1, "lastRestartTimestamp": "2026-11-28T12:00:00Z"})


def test_the_next_restart_waits_for_the_backoff_in_whole_minutes():
    after_two = {"count": 2, "lastRestartTimestamp": stamp(T0)}
    # Six minutes after the second restart (shouldAutoRestart: `>=`, ChronoUnit.MINUTES truncates).
    assert operator.auto_restart(ON, TASK_FAILED, after_two, T0 + timedelta(minutes=5, seconds=59)) == (False, after_two)
    assert operator.auto_restart(ON, TASK_FAILED, after_two, T0 + timedelta(minutes=6)) == (
        True, {"count": 3, "lastRestartTimestamp": "2026-11-28T12:06:00Z"})


def test_max_restarts_stops_the_restarts():
    spec = {"autoRestart": {"enabled": True, "maxRestarts": 2}}
    after_two = {"count": 2, "lastRestartTimestamp": stamp(T0)}
    assert operator.auto_restart(spec, TASK_FAILED, after_two, T0 + timedelta(hours=5)) == (False, after_two)
    assert operator.auto_restart(spec, TASK_FAILED, {"count": 1, "lastRestartTimestamp": stamp(T0)},
                                 T0 + timedelta(minutes=2))[0] is True


def test_a_healthy_connector_keeps_its_count_until_it_outlasts_the_backoff():
    after_one = {"count": 1, "lastRestartTimestamp": stamp(T0)}
    # shouldResetAutoRestartStatus: strictly more minutes than the back-off since the last restart.
    assert operator.auto_restart(ON, RUNNING, after_one, T0 + timedelta(minutes=2, seconds=59)) == (False, after_one)
    assert operator.auto_restart(ON, RUNNING, after_one, T0 + timedelta(minutes=3)) == (False, None)
    assert operator.auto_restart(ON, RUNNING, None, T0) == (False, None)


@pytest.mark.parametrize("spec", [{}, {"autoRestart": {"enabled": False}}], ids=["absent", "disabled"])
def test_without_auto_restart_a_failure_stays(spec):
    assert operator.auto_restart(spec, CONNECTOR_FAILED, None, T0) == (False, None)


class FakeWorker:
    """A worker's REST API as the stand-in's reconciliation asks it: each connector's config (as
    Connect returns it, with its `name`) and status; a connector it has no answer for raises."""

    def __init__(self, statuses: dict[str, dict], refuse_restart: bool = False) -> None:
        self.statuses, self.refuse_restart, self.requests = statuses, refuse_restart, []

    def connector_config(self, name: str) -> dict:
        if name not in self.statuses:
            raise RuntimeStartError(f"GET /connectors/{name}/config: no answer")
        return {"name": name, "connector.class": CLASS}

    def status(self, name: str) -> dict:
        if name not in self.statuses:
            raise RuntimeStartError(f"GET /connectors/{name}/status: HTTP 404")
        return self.statuses[name]

    def request(self, method: str, path: str) -> None:
        self.requests.append((method, path))
        if self.refuse_restart and path.startswith("/connectors/") and "/restart" in path:
            raise RuntimeStartError(f"{method} {path}: HTTP 500")


CLASS = ConnectorKind.source.connector_class


def connector(name: str, **spec) -> dict:
    return {"kind": "KafkaConnector", "metadata": {"name": name, "namespace": "repl", "labels": {CLUSTER_LABEL: "repl"}},
            "spec": {"class": CLASS, "config": {}, **ON, **spec}}


def rehearsal_with(tmp_path, worker: FakeWorker, **spec) -> Rehearsal:
    r = Rehearsal(dev_for_runtime("strimzi", "1.2.0"), tmp_path, kube=None)  # type: ignore[arg-type]
    connect = ("repl", "repl")
    r.workers[connect] = worker  # type: ignore[assignment]
    r.connects[connect] = {"metadata": {"namespace": "repl", "name": "repl",
                                        "annotations": {USE_CONNECTOR_RESOURCES: "true"}}}
    for name in ("source", "checkpoint", "gone"):
        r.connectors[("repl", name)] = (connect, connector(name, **spec))
    return r


def test_a_reconciliation_restarts_what_failed_with_its_tasks_and_only_the_failed_ones(tmp_path):
    worker = FakeWorker({"source": TASK_FAILED, "checkpoint": RUNNING})
    r = rehearsal_with(tmp_path, worker)
    assert r.periodic_reconciliation(T0) == [("repl", "source")]
    # autoRestartConnector: apiClient.restart(host, port, name, true, true)
    assert worker.requests == [("POST", "/connectors/source/restart?includeTasks=true&onlyFailed=true")]
    assert r.auto_restarts == {("repl", "source"): {"count": 1, "lastRestartTimestamp": "2026-11-28T12:00:00Z"}}
    # Still failed a minute later: inside the two-minute back-off, nothing is sent.
    assert r.periodic_reconciliation(T0 + timedelta(minutes=1)) == []
    assert len(worker.requests) == 1
    assert r.periodic_reconciliation(T0 + timedelta(minutes=2)) == [("repl", "source")]
    assert r.auto_restarts[("repl", "source")]["count"] == 2
    assert r.auto_restarted == [("repl", "source", "2026-11-28T12:00:00+00:00"),
                                ("repl", "source", "2026-11-28T12:02:00+00:00")]


def test_a_refused_restart_is_counted_all_the_same(tmp_path):
    r = rehearsal_with(tmp_path, FakeWorker({"source": CONNECTOR_FAILED}, refuse_restart=True))
    assert r.periodic_reconciliation(T0) == [("repl", "source")]
    assert r.auto_restarts[("repl", "source")]["count"] == 1


def test_a_reconciliation_puts_back_the_state_the_spec_says_before_its_auto_restart(tmp_path):
    """Every periodic pass reconciles every connector (reconcileAll, then reconcileConnectors and
    maybeCreateOrUpdateConnector, AbstractConnectOperator 1.2.0 lines 414-450): its config left as
    it is when Connect holds the spec's, a state set by hand on the worker put back
    (updateState), then autoRestart on the status read after."""
    worker = FakeWorker({"source": {"connector": {"state": "PAUSED"}, "tasks": []}, "checkpoint": RUNNING})
    r = rehearsal_with(tmp_path, worker)
    assert r.periodic_reconciliation(T0) == []
    assert worker.requests == [("PUT", "/connectors/source/resume")]
    # A connector the topology holds stopped is stopped again; nothing is PUT to its config.
    worker = FakeWorker({"source": RUNNING, "checkpoint": {"connector": {"state": "STOPPED"}, "tasks": []}})
    r = rehearsal_with(tmp_path, worker, state="stopped")
    r.periodic_reconciliation(T0)
    assert worker.requests == [("PUT", "/connectors/source/stop")]
