"""Start offsets, connector states and exactly-once, with the documents' two-step rollout guard."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from infra.core.errors import TopologyError
from infra.tools import render
from tests.support.schemas import validate
from tests.support.stacks import ROOT, by_kind_name, doc_topology, on_release, render_topology, write_topology

NS = "repl-us-west-us-east"


def flow_topology(flavour: str = "csm", **flow) -> dict:
    t = on_release(doc_topology(), flavour)
    t["flows"][0].update(flow)
    return t


def objects(tmp_path, t, **kwargs):
    return by_kind_name(render_topology(tmp_path, t, secrets={}, **kwargs).objects())


def test_start_from_latest_sets_the_source_consumer_and_warns(tmp_path):
    r = render_topology(tmp_path, flow_topology(startFrom="latest"), secrets={})
    source = by_kind_name(r.objects())[("KafkaConnector", f"{NS}-source")]["spec"]["config"]
    assert source["source.consumer.auto.offset.reset"] == "latest"
    assert r.warnings == [f"flow {NS}: startFrom latest replicates new partitions from their end offset: records "
                          "written before the connector first reads them are never replicated (at-least-once no "
                          "longer holds)"]
    assert "warning: flow repl-us-west-us-east: startFrom latest" in render.summary(r)
    assert r.outputs["flows"][NS]["startFrom"] == "latest"


def test_earliest_is_the_default_and_adds_nothing(doc_objects):
    source = doc_objects[("KafkaConnector", f"{NS}-source")]["spec"]["config"]
    assert "source.consumer.auto.offset.reset" not in source
    # Running, written out (a state changed by hand is then drift a refresh shows).
    assert all(o["spec"]["state"] == "running" for (kind, _), o in doc_objects.items() if kind == "KafkaConnector")


@pytest.mark.parametrize("flavour", ["csm", "strimzi"])
def test_connector_states(tmp_path, flavour):
    o = objects(tmp_path, flow_topology(flavour, state={"source": "stopped", "checkpoint": "paused"}))
    assert o[("KafkaConnector", f"{NS}-source")]["spec"]["state"] == "stopped"
    assert o[("KafkaConnector", f"{NS}-checkpoint")]["spec"]["state"] == "paused"
    assert o[("KafkaConnector", f"{NS}-heartbeat")]["spec"]["state"] == "running"
    for obj in o.values():
        validate(obj)


RESET = "source.consumer.auto.offset.reset"


@pytest.mark.parametrize("flavour, version, reset", [
    ("csm", "1.2", "none"), ("csm", "1.4", "none"), ("strimzi", "0.48.0", "none"), ("strimzi", "1.2.0", None)])
@pytest.mark.parametrize("state", ["stopped", "paused"])
@pytest.mark.parametrize("start", ["earliest", "latest"])
def test_a_source_connector_not_running_reads_no_partition_without_an_offset_where_it_is_created_running(
        tmp_path, flavour, version, reset, state, start):
    """Before Strimzi 1.2.0 the operator starts a connector it creates, then stops or pauses it:
    `none` keeps such a connector from copying what it has no offset for meanwhile (the runtime
    tier holds that window open: tests/runtime/test_created_stopped.py). 1.2.0 creates it in its
    state, and the flow's start stays. Set running, the flow's start applies again."""
    t = flow_topology(flavour, startFrom=start, state={"source": state})
    t["operator"]["version"] = version
    t["operator"].pop("connect", None)  # the release's own Connect version
    config = objects(tmp_path, t)[("KafkaConnector", f"{NS}-source")]["spec"]["config"]
    assert config.get(RESET) == (reset or {"earliest": None, "latest": "latest"}[start])
    t["flows"][0]["state"] = {"source": "running"}
    (tmp_path / "running").mkdir()
    config = objects(tmp_path / "running", t)[("KafkaConnector", f"{NS}-source")]["spec"]["config"]
    assert config.get(RESET) == {"earliest": None, "latest": "latest"}[start]


@pytest.mark.parametrize("mode", ["preparing", "enabled"])
@pytest.mark.parametrize("flavour", ["csm", "strimzi"])
def test_exactly_once(tmp_path, mode, flavour):
    o = objects(tmp_path, flow_topology(flavour, exactlyOnce=mode))
    assert o[("KafkaConnect", NS)]["spec"]["config"]["exactly.once.source.support"] == mode
    assert o[("KafkaConnector", f"{NS}-source")]["spec"]["config"]["source.consumer.isolation.level"] == \
        "read_committed"
    assert "source.consumer.isolation.level" not in o[("KafkaConnector", f"{NS}-checkpoint")]["spec"]["config"]
    for obj in o.values():
        validate(obj)


def test_exactly_once_disabled_sets_nothing(doc_objects):
    assert "exactly.once.source.support" not in doc_objects[("KafkaConnect", NS)]["spec"]["config"]


def previous(exactly_once: str) -> dict:
    return {"flows": {NS: {"exactlyOnce": exactly_once}}}


def test_enabling_a_running_flow_must_go_through_preparing(tmp_path):
    with pytest.raises(TopologyError) as exc:
        render_topology(tmp_path, flow_topology(exactlyOnce="enabled"), secrets={},
                        previous_outputs=previous("disabled"))
    (problem,) = exc.value.problems
    assert str(problem) == (
        f"flows[0] ({NS}): exactlyOnce: got 'enabled'; expected preparing first: this flow's running Connect "
        "cluster has exactly-once disabled. Deploy exactlyOnce: preparing, wait until the Connect pods' rolling "
        f"restart has finished (kubectl get pods -n {NS} --watch), then deploy exactlyOnce: enabled")


@pytest.mark.parametrize("before", [None, "preparing", "enabled"])
def test_enabling_is_allowed_after_preparing_or_for_a_new_flow(tmp_path, before):
    prior = previous(before) if before else {"flows": {"another-flow": {"exactlyOnce": "disabled"}}}
    o = objects(tmp_path, flow_topology(exactlyOnce="enabled"), previous_outputs=prior)
    assert o[("KafkaConnect", NS)]["spec"]["config"]["exactly.once.source.support"] == "enabled"


def test_cli_refuses_the_one_step_rollout(tmp_path):
    path = write_topology(tmp_path, flow_topology(exactlyOnce="enabled"))
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(previous("disabled")))
    proc = subprocess.run([sys.executable, "-m", "infra", "render", "--stack", "dev", "--topology", str(path),
                           "--placeholder-secrets", "--previous-outputs", str(outputs), "--out", str(tmp_path / "o")],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "exactlyOnce: got 'enabled'; expected preparing first" in proc.stderr


def test_consumer_settings_owned_by_the_flow_cannot_be_overridden():
    from infra.checks import validation
    t = flow_topology(config={"source": {"source.consumer.isolation.level": "read_uncommitted"}})
    with pytest.raises(TopologyError, match="config.source.source.consumer.isolation.level"):
        validation.parse(t)
