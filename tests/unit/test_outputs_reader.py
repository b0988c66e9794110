"""contract/outputs.py reads what the program writes: the outputs of every stack and variant the
suite renders, written by the program under Pulumi's mocks, validate against
docs/outputs.schema.json and read back equal to what was written. Anything else is refused with a
ContractError naming the offending value's path, and no JSON value makes `read` raise anything
else."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from contract import outputs
from infra.checks import validation
from infra.plan.failover import failover_outputs
from infra.plan.stack import plan
from infra.tools import render
from tests.support.stacks import render_topology
from tests.support.topologies import pair as two_clusters
from tests.support.variants import STACKS, renders

SCHEMA = outputs.SCHEMA

# Every topology the suite renders (stacks on each release, exactly-once, every security variant
# and pattern), and the flow switches the suite renders without a topology of their own.
TOPOLOGIES = {**renders(),
              "heartbeats-off": two_clusters({}, {}, heartbeats=False),
              "checkpoints-off": two_clusters({}, {}, checkpoints=False)}


def as_consumers_get_them(values: dict) -> Any:
    return json.loads(json.dumps(values))  # as `pulumi stack output --json` gives them


@functools.cache
def stack_outputs(stack: str) -> Any:
    return as_consumers_get_them(render.run(stack, placeholder_secrets=True).outputs)


def topology_outputs(tmp_path: Path, name: str) -> Any:
    return as_consumers_get_them(render_topology(tmp_path, TOPOLOGIES[name], secrets={}).outputs)


def assert_read_back(out: dict) -> outputs.StackOutputs:
    assert [f"{list(e.path)}: {e.message}" for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(out)] == []
    stack = outputs.read(out)
    operator = out["operator"]
    assert (stack.version, stack.operator_flavour, stack.operator_version, stack.kafka_version) == (
        out["outputsVersion"], operator["flavour"], operator["version"], operator["kafkaVersion"])
    assert list(stack.flows) == list(out["flows"])
    for name, raw in out["flows"].items():
        target = raw["internalTopics"]["target"]
        assert stack.flows[name] == outputs.Flow(
            name=name, source_alias=raw["sourceAlias"], target_alias=raw["targetAlias"], namespace=raw["namespace"],
            replication_policy=raw["replicationPolicy"], topic_prefix=raw["topicPrefix"], topics=tuple(raw["topics"]),
            connect_rest_url=raw["connectRestUrl"],
            connect_clusters=tuple(outputs.ConnectCluster(
                name=c["name"], namespace=c["namespace"], rest_url=c["restUrl"], group_id=c["connectGroupId"],
                source_connectors=tuple(c["connectors"]["source"]),
                checkpoint_connectors=tuple(c["connectors"]["checkpoint"]),
                heartbeat_connectors=tuple(c["connectors"]["heartbeat"]), connect_version=c["connectVersion"],
                connect_image=c["connectImage"]) for c in raw["connectClusters"]),
            target_heartbeats_topic=target["heartbeats"], target_checkpoints_topic=target["checkpoints"],
            partner=raw["bidirectional"]["partner"] if raw["bidirectional"] else None,
            kubernetes_cluster=raw.get("kubernetesCluster"),
            failover=outputs.Failover(
                procedure=raw["failover"]["procedure"], procedures=tuple(raw["failover"]["procedures"]),
                wait_seconds=raw["failover"]["waitSeconds"], topics=tuple(raw["failover"]["topics"]))
            if "failover" in raw else None)
        # Off means absent, in the typed reader as in the connectors the flow runs.
        assert (stack.flows[name].target_heartbeats_topic is None) == (raw["connectors"]["heartbeat"] == [])
        assert (stack.flows[name].target_checkpoints_topic is None) == (raw["connectors"]["checkpoint"] == [])
    assert stack.audit_namespace == (out["audit"]["namespace"] if "audit" in out else None)
    assert stack.audit_namespaces == ({k: a["namespace"] for k, a in out["audits"].items()} if "audits" in out
                                      else None)
    assert stack.audit_cron_jobs == {**({None: (out["audit"]["namespace"], out["audit"]["cronJob"])} if "audit" in out
                                        else {}),
                                     **{k: (a["namespace"], a["cronJob"]) for k, a in out.get("audits", {}).items()}}
    return stack


@pytest.mark.parametrize("stack", STACKS)
def test_the_reader_reads_every_stack(stack):
    assert_read_back(stack_outputs(stack))


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_the_reader_reads_every_variant(tmp_path, name):
    assert_read_back(topology_outputs(tmp_path, name))


def test_switched_off_topics_read_as_none(tmp_path):
    heartbeats_off = assert_read_back(topology_outputs(tmp_path, "heartbeats-off")).flows["repl-a-b"]
    assert (heartbeats_off.target_heartbeats_topic, heartbeats_off.target_checkpoints_topic) == (
        None, "a.checkpoints.internal")
    checkpoints_off = assert_read_back(topology_outputs(tmp_path, "checkpoints-off")).flows["repl-a-b"]
    assert (checkpoints_off.target_heartbeats_topic, checkpoints_off.target_checkpoints_topic) == (
        "a.heartbeats", None)


def test_the_suite_renders_every_shape_the_reader_knows(tmp_path):
    """The renders above cover each optional and nullable field the reader types."""
    read = [outputs.read(stack_outputs(s)) for s in STACKS] + [
        outputs.read(topology_outputs(tmp_path, n)) for n in ("heartbeats-off", "checkpoints-off",
                                                              "bidirectional-csm-1.2", "split-csm-1.2")]
    flows = [f for s in read for f in s.flows.values()]
    assert any(s.audit_namespace for s in read) and any(s.audit_namespaces for s in read)
    assert any(f.partner for f in flows) and any(f.kubernetes_cluster for f in flows)
    assert any(len(f.connect_clusters) > 1 for f in flows)
    assert any(f.target_heartbeats_topic is None for f in flows)
    assert any(f.target_checkpoints_topic is None for f in flows)


# ------------------------------------------------------------------ refused, exactly

FLOW = "flows.repl-us-west-us-east"


def flow(out: dict) -> dict:
    return out["flows"]["repl-us-west-us-east"]


@pytest.mark.parametrize("change, message", [
    (lambda o: o.update(outputsVersion=True), "outputsVersion: got true; expected 1, the version this reader knows"),
    (lambda o: o.update(outputsVersion=1.5), "outputsVersion: got a number; expected 1, the version this reader knows"),
    (lambda o: o.update(outputsVersion="1"), "outputsVersion: got a string; expected 1, the version this reader knows"),
    (lambda o: o.pop("outputsVersion"), "outputsVersion: missing; expected 1 (outputs without it predate the contract)"),
    (lambda o: o.update(operator=None), "operator: got null; expected a mapping"),
    (lambda o: o["operator"].pop("kafkaVersion"), "operator.kafkaVersion: missing; expected a non-empty string"),
    (lambda o: o.update(flows=[]), "flows: got a list; expected a mapping"),
    (lambda o: o["flows"].update({1: {}}), "flows: got a key that is an integer; expected string keys"),
    (lambda o: o["flows"].update({"repl-us-west-us-east": "x"}), f"{FLOW}: got a string; expected a mapping"),
    (lambda o: flow(o).update(namespace=""), f"{FLOW}.namespace: got an empty string; expected a non-empty string"),
    (lambda o: flow(o).update(topicPrefix=False), f"{FLOW}.topicPrefix: got false; expected a string"),
    (lambda o: flow(o).update(topics="test.*"), f"{FLOW}.topics: got a string; expected a list of non-empty strings"),
    (lambda o: flow(o).update(topics=["test.*", None]), f"{FLOW}.topics[1]: got null; expected a non-empty string"),
    (lambda o: flow(o).update(bidirectional=[]), f"{FLOW}.bidirectional: got a list; expected a mapping or null"),
    (lambda o: flow(o).update(bidirectional={}), f"{FLOW}.bidirectional.partner: missing; expected a non-empty string"),
    (lambda o: flow(o).update(kubernetesCluster=3), f"{FLOW}.kubernetesCluster: got an integer; expected a non-empty "
     "string"),
    (lambda o: flow(o).update(connectClusters=[]), f"{FLOW}.connectClusters: got an empty list; expected at least one "
     "Connect cluster"),
    (lambda o: flow(o)["connectClusters"][0]["connectors"].pop("source"),
     f"{FLOW}.connectClusters[0].connectors.source: missing; expected a list of non-empty strings"),
    (lambda o: flow(o)["connectClusters"][0].update(restUrl=8083),
     f"{FLOW}.connectClusters[0].restUrl: got an integer; expected a non-empty string"),
    (lambda o: flow(o)["internalTopics"]["target"].update(heartbeats=True),
     f"{FLOW}.internalTopics.target.heartbeats: got true; expected a non-empty string or null"),
    (lambda o: flow(o)["internalTopics"].update(target=None),
     f"{FLOW}.internalTopics.target: got null; expected a mapping"),
    (lambda o: o.update(audit=None), "audit: got null; expected a mapping"),
    (lambda o: o["audit"].update(namespace=1), "audit.namespace: got an integer; expected a non-empty string"),
    (lambda o: o.update(audits={"k8s-a": []}), "audits.k8s-a: got a list; expected a mapping"),
    (lambda o: o.update(audits={"k8s-a": {}}), "audits.k8s-a.namespace: missing; expected a non-empty string"),
])
def test_the_reader_names_the_path_of_what_it_refuses(change, message):
    out = copy.deepcopy(stack_outputs("dev"))
    change(out)
    with pytest.raises(outputs.ContractError) as exc:
        outputs.read(out)
    assert str(exc.value) == message


def as_floats(value: Any) -> Any:
    """Every number a float, as a StackReference hands outputs over (Pulumi's protobuf Struct
    carries doubles only; seen on the engine tier, tests/engine/test_engine.py)."""
    if isinstance(value, dict):
        return {k: as_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_floats(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


@pytest.mark.parametrize("stack", STACKS)
def test_outputs_through_a_stack_reference_read_the_same(stack):
    """Numbers as floats and no null anywhere, as the Python SDK's StackReference gives them."""
    out = stack_outputs(stack)
    through = without_nulls(as_floats(out))
    assert through["outputsVersion"] == 1.0 and type(through["outputsVersion"]) is float
    assert "null" in json.dumps(out) and "null" not in json.dumps(through)
    assert outputs.read(through) == outputs.read(out)


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def test_the_reader_refuses_what_is_not_a_mapping():
    for value in (None, [], "outputs", 1, True):
        with pytest.raises(outputs.ContractError) as exc:
            outputs.read(value)  # type: ignore[arg-type]
        assert str(exc.value).startswith("outputs: got ")


# ------------------------------------------------------------------ any input

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                    max_leaves=25)
KEYS = ["outputsVersion", "operatorFlavour", "operator", "flows", "audit", "audits"]


def reads_or_refuses(values: Any) -> None:
    try:
        outputs.read(values)
    except outputs.ContractError as exc:
        assert ": " in str(exc) and "expected" in str(exc)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_any_json_value_is_read_or_refused(value):
    reads_or_refuses(value)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS), JSON).map(lambda d: {**d, "outputsVersion": 1}))
def test_any_shape_under_the_known_keys_is_read_or_refused(values):
    reads_or_refuses(values)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found += _paths(child, (*prefix, i))
    return found


# Real outputs with every optional field: the audit, per-cluster audits, a pair, a split flow.
SAMPLES = ["dev", "prod", "regions"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_mutation_of_real_outputs_is_read_or_refused(data):
    out = copy.deepcopy(stack_outputs(data.draw(st.sampled_from(SAMPLES))))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(out)))
        if not path:
            out = data.draw(JSON)
            continue
        parent = out
        for step in path[:-1]:
            parent = parent[step]
        if data.draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(JSON | st.sampled_from([True, False, 0, 1, "", None, [], {}]))
        if not isinstance(out, (dict, list)):
            break
    reads_or_refuses(out)


# ------------------------------------------------------------------ failover (added within version 1)


def with_failover(tmp_path: Path, name: str) -> Any:
    """A variant's outputs with each flow's `failover`, as plan.flow_outputs adds them."""
    out = topology_outputs(tmp_path, name)
    for fp in plan(validation.parse(TOPOLOGIES[name])).flows:
        out["flows"][fp.name].update(as_consumers_get_them({"failover": failover_outputs(fp.direction)}))
    return out


@pytest.mark.parametrize("name", ["checkpoints-off", "bidirectional-csm-1.2", "split-csm-1.2"])
def test_the_reader_reads_failover(tmp_path, name):
    stack = assert_read_back(with_failover(tmp_path, name))
    assert all(f.failover is not None for f in stack.flows.values())


def test_the_reader_types_failover(tmp_path):
    flow_ = assert_read_back(with_failover(tmp_path, "checkpoints-off")).flows["repl-a-b"]
    assert flow_.failover == outputs.Failover(
        procedure="cutoff", procedures=("cutoff", "disaster"), wait_seconds=None,
        topics=(r"(?!(?:.*[\-\.]internal|.*\.replica|__.*)$)(?:orders.*)",))


@pytest.mark.parametrize("change, message", [
    (lambda f: f.update(failover=None), "flows.repl-a-b.failover: got null; expected a mapping"),
    (lambda f: f["failover"].update(waitSeconds=True),
     "flows.repl-a-b.failover.waitSeconds: got true; expected a whole number of seconds or null"),
    (lambda f: f["failover"].update(waitSeconds=2.5),
     "flows.repl-a-b.failover.waitSeconds: got a number; expected a whole number of seconds or null"),
    (lambda f: f["failover"].update(waitSeconds=-5),
     "flows.repl-a-b.failover.waitSeconds: got an integer; expected a whole number of seconds or null"),
    (lambda f: f["failover"].update(procedures="cutoff"),
     "flows.repl-a-b.failover.procedures: got a string; expected a list of non-empty strings"),
    (lambda f: f["failover"].update(topics=[""]),
     "flows.repl-a-b.failover.topics[0]: got an empty string; expected a non-empty string"),
])
def test_the_reader_refuses_bad_failover(tmp_path, change, message):
    out = with_failover(tmp_path, "checkpoints-off")
    change(out["flows"]["repl-a-b"])
    with pytest.raises(outputs.ContractError) as exc:
        outputs.read(out)
    assert str(exc.value) == message


# ------------------------------------------------------------------ connectVersion, connectImage (added within version 1)


def test_outputs_before_connect_version_read_as_none():
    out = copy.deepcopy(stack_outputs("dev"))
    for flow_ in out["flows"].values():
        for cluster in flow_["connectClusters"]:
            del cluster["connectVersion"], cluster["connectImage"]
    assert {(c.connect_version, c.connect_image) for f in outputs.read(out).flows.values()
            for c in f.connect_clusters} == {(None, None)}


@pytest.mark.parametrize("change, message", [
    (lambda c: c.update(connectVersion=None),
     "flows.repl-us-west-us-east.connectClusters[0].connectVersion: got null; expected a non-empty string"),
    (lambda c: c.update(connectVersion=4.2),
     "flows.repl-us-west-us-east.connectClusters[0].connectVersion: got a number; expected a non-empty string"),
    (lambda c: c.update(connectImage=""),
     "flows.repl-us-west-us-east.connectClusters[0].connectImage: got an empty string; expected a non-empty string "
     "or null"),
])
def test_the_reader_refuses_a_bad_connect_version_or_image(change, message):
    out = copy.deepcopy(stack_outputs("dev"))
    change(out["flows"]["repl-us-west-us-east"]["connectClusters"][0])
    with pytest.raises(outputs.ContractError) as exc:
        outputs.read(out)
    assert str(exc.value) == message
