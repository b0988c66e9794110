"""A source connector the stack creates stopped, as a failback or a split deploys one before its
offsets alter: it must copy nothing before it stops, on every release.

Before Strimzi 1.2.0 (CSM 1.2 and 1.4, Strimzi 0.48.0) the operator creates a connector by
PUTting its config, which starts it, and stops it only once its status reads RUNNING
(AbstractConnectOperator.createOrUpdateConnector, then updateState; one still UNASSIGNED runs on
until the next reconciliation, 120 s later). The test plays that first request itself and holds
the connector running for HOLD seconds with its tasks RUNNING, on real Kafka and Connect: the
render's config (`source.consumer.auto.offset.reset: none` while stopped) copies none of the
source's history, where the same config with Kafka's default reset (the render before it)
copies all of it. Strimzi 1.2.0 creates it in its state (`initial_state`): the stand-in POSTs it
so, and it never runs. The stopped-then-altered-then-running path that follows is the identity
failback's drill (tests/runtime/test_failover_drills.py), on every release.

The operator's part here is the stand-in's (infra/tools/rehearsal/run.py reconcile), read from
each release's source; Kafka, Connect and MirrorMaker 2 are real."""

from __future__ import annotations

import time

import pytest

from infra.tools.rehearsal import offsets
from infra.tools.rehearsal.operator import connector_requests
from tests.support.replication import dev_for_runtime, rehearsal

pytestmark = pytest.mark.runtime

FLOW, TOPIC = "repl-us-west-us-east", "test.orders"
SOURCE = f"{FLOW}-source"
REMOTE = f"us-west.{TOPIC}"
HISTORY = [{"key": f"h{i}", "value": f"history-{i}", "partition": i % 2} for i in range(10)]
HOLD = 15  # seconds the started connector runs with every task RUNNING: MirrorSourceTask polls every second
RESET = "source.consumer.auto.offset.reset"


def stopped_flow(flavour: str, version: str) -> dict:
    topo = dev_for_runtime(flavour, version)
    flow = topo["flows"][0]
    flow["heartbeats"] = False
    flow["state"] = {"source": "stopped"}
    return topo


def copied(r) -> int:
    """Records on the target's replica of the source topic (none while it does not exist)."""
    target = r.client("us-east")
    if REMOTE not in r.clients.topics(target):
        return 0
    return sum(r.clients.end_offsets(target, [REMOTE]).values())


def test_created_stopped_before_1_2_copies_nothing_while_the_operator_has_it_running(runtime_api, tmp_path):
    topo = stopped_flow("csm", "1.2")
    with rehearsal(topo, tmp_path, runtime_api) as r:
        assert not r.release.creates_connectors_in_state
        source = r.client("us-west")
        r.clients.create_topics(source, {TOPIC: 2})
        r.clients.produce(source, TOPIC, HISTORY)
        objects = r.render()
        (connector,) = [o for o in objects if o["kind"] == "KafkaConnector" and o["metadata"]["name"] == SOURCE]
        r.deploy([o for o in objects if o is not connector])
        worker = r.workers[(FLOW, FLOW)]
        name, config, state = connector_requests(r.release, connector)
        assert (name, state, config[RESET]) == (SOURCE, "stopped", "none")

        # The operator's create (the config's PUT: started), held running with its tasks.
        worker.put_connector(name, config)
        assert worker.wait_running(name, min_tasks=1)["connector"]["state"] == "RUNNING"
        time.sleep(HOLD)
        assert copied(r) == 0
        log = (worker.pod / "worker.log").read_text(errors="replace")
        assert "Failure during poll" in log and "NoOffsetForPartitionException" in log
        worker.request("PUT", f"/connectors/{name}/stop")  # updateState
        offsets.wait_stopped(worker, name, 60)
        assert copied(r) == 0

        # Without the reset (Kafka's default, earliest), the same window copies the history.
        control = {k: v for k, v in config.items() if k != RESET}
        worker.put_connector("control-source", control)
        worker.wait_running("control-source", min_tasks=1)
        deadline = time.monotonic() + 90  # the same window, waited out only as long as the copy takes
        while copied(r) < len(HISTORY) and time.monotonic() < deadline:
            time.sleep(1)
        assert copied(r) == len(HISTORY)


def test_created_stopped_on_1_2_0_never_starts(runtime_api, tmp_path):
    topo = stopped_flow("strimzi", "1.2.0")
    with rehearsal(topo, tmp_path, runtime_api) as r:
        assert r.release.creates_connectors_in_state
        source = r.client("us-west")
        r.clients.create_topics(source, {TOPIC: 2})
        r.clients.produce(source, TOPIC, HISTORY)
        r.deploy()  # the stand-in POSTs /connectors with initial_state STOPPED
        worker = r.workers[(FLOW, FLOW)]
        assert RESET not in worker.connector_config(SOURCE)  # the flow's own start: no reset needed
        assert worker.status(SOURCE)["connector"]["state"] == "STOPPED"
        time.sleep(HOLD)
        assert (worker.status(SOURCE)["connector"]["state"], worker.status(SOURCE)["tasks"], copied(r)) == (
            "STOPPED", [], 0)
