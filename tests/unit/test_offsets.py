"""Offsets as code (infra/plan/offsets.py, docs/operations.md#offsets-as-code): what a request renders
(the KafkaConnector's spec field, the alter ConfigMap in the Connect REST API's body, the Patch
resource setting the operator's annotation, with its options as the engine receives them), and
every refusal with its exact message."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from pulumi.runtime import mocks

from infra.plan.offsets import (Target, alter_body, checkpoint_topic, checkpointed_topic, is_patch,
                                problems as offsets_problems)
from infra.tools import render
from infra.topology.resolution import resolve
from infra.topology.schema import ConnectorState, PartitionOffset, Policy, Topology
from tests.support.refusals import refusals
from tests.support.stacks import ROOT, render_topology, write_topology

BASE = {
    "operator": {"flavour": "strimzi", "version": "1.2.0"},
    "clusters": {"a": {"bootstrapServers": "a.example.com:9092"}, "b": {"bootstrapServers": "b.example.com:9092"}},
    "flows": [{"source": "a", "target": "b", "topics": ["orders.*"], "groups": ["readers"],
               "state": {"source": "stopped"}}],
}
REWIND = {"connector": "repl-a-b-source", "action": "alter", "request": "2026-11-24-rewind",
          "offsets": [{"topic": "orders", "partition": 0, "offset": 41},
                      {"topic": "orders.eu", "partition": 2, "offset": None}]}
# The body the operator sends with PATCH /connectors/repl-a-b-source/offsets, as the ConfigMap holds it.
REWIND_JSON = """{
  "offsets": [
    {
      "partition": {
        "cluster": "a",
        "topic": "orders",
        "partition": 0
      },
      "offset": {
        "offset": 41
      }
    },
    {
      "partition": {
        "cluster": "a",
        "topic": "orders.eu",
        "partition": 2
      },
      "offset": null
    }
  ]
}"""
LABELS = {"app.kubernetes.io/part-of": "kafka-replication", "app.kubernetes.io/managed-by": "pulumi",
          "kafka-replication.io/flow": "repl-a-b"}


def topology(*requests: dict, release: tuple[str, str] = ("strimzi", "1.2.0"), **flow: object) -> dict:
    t = copy.deepcopy(BASE)
    t["operator"] = {"flavour": release[0], "version": release[1]}
    t["flows"][0].update(flow)
    t["flows"][0]["offsets"] = [copy.deepcopy(r) for r in requests]
    return t


def refused(tmp_path, t: dict) -> list[str]:
    return refusals(render_topology, tmp_path, t)


def kube(r: render.Render) -> dict[tuple[str, str], dict]:
    """Recorded Kubernetes resources by (type's last part, Pulumi name)."""
    return {(x.type.split(":")[-1], x.name): x.object() for x in r.resources if x.is_kubernetes}


# ----------------------------------------------------------------- what a request renders


@pytest.mark.parametrize("release", [("strimzi", "1.2.0"), ("strimzi", "0.48.0"), ("csm", "1.4")])
def test_alter_renders_the_spec_field_the_configmap_and_the_annotation_patch(tmp_path, release):
    api = "kafka.strimzi.io/v1" if release == ("strimzi", "1.2.0") else "kafka.strimzi.io/v1beta2"
    objects = kube(render_topology(tmp_path, topology(REWIND, release=release)))
    connector = objects[("KafkaConnector", "repl-a-b/repl-a-b-source")]
    assert connector["spec"]["alterOffsets"] == {"fromConfigMap": {"name": "repl-a-b-source-offsets-alter"}}
    assert "listOffsets" not in connector["spec"] and connector["spec"]["state"] == "stopped"
    # The KafkaConnector itself never carries the operator's annotation.
    assert "strimzi.io/connector-offsets" not in connector["metadata"].get("annotations", {})
    assert objects[("ConfigMap", "repl-a-b/repl-a-b-source-offsets-alter")] == {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "repl-a-b-source-offsets-alter", "namespace": "repl-a-b", "labels": LABELS},
        "data": {"offsets.json": REWIND_JSON}}
    assert objects[("KafkaConnectorPatch", "repl-a-b/repl-a-b-source/offsets-alter-2026-11-24-rewind")] == {
        "apiVersion": api, "kind": "KafkaConnector",
        "metadata": {"name": "repl-a-b-source", "namespace": "repl-a-b", "labels": LABELS,
                     "annotations": {"strimzi.io/connector-offsets": "alter",
                                     "kafka-replication.io/offsets-request": "alter/2026-11-24-rewind",
                                     "pulumi.com/patchForce": "true"}}}
    # The other connectors are untouched.
    for name in ("repl-a-b-checkpoint", "repl-a-b-heartbeat"):
        spec = objects[("KafkaConnector", f"repl-a-b/{name}")]["spec"]
        assert "alterOffsets" not in spec and "listOffsets" not in spec
    assert [k for k in objects if k[0] == "KafkaConnectorPatch"] == [
        ("KafkaConnectorPatch", "repl-a-b/repl-a-b-source/offsets-alter-2026-11-24-rewind")]


def test_list_names_the_configmap_the_operator_writes_and_reset_adds_no_spec_field(tmp_path):
    listing = {"connector": "repl-a-b-checkpoint", "action": "list", "request": "l1"}
    reset = {"connector": "repl-a-b-source", "action": "reset", "request": "r1"}
    objects = kube(render_topology(tmp_path, topology(listing, reset)))
    checkpoint = objects[("KafkaConnector", "repl-a-b/repl-a-b-checkpoint")]["spec"]
    assert checkpoint["listOffsets"] == {"toConfigMap": {"name": "repl-a-b-checkpoint-offsets"}}
    source = objects[("KafkaConnector", "repl-a-b/repl-a-b-source")]["spec"]
    assert "listOffsets" not in source and "alterOffsets" not in source
    patches = {k[1]: v["metadata"]["annotations"]["strimzi.io/connector-offsets"]
               for k, v in objects.items() if k[0] == "KafkaConnectorPatch"}
    assert patches == {"repl-a-b/repl-a-b-checkpoint/offsets-list-l1": "list",
                       "repl-a-b/repl-a-b-source/offsets-reset-r1": "reset"}
    # Neither writes a ConfigMap of ours: the operator creates and owns the listed one.
    assert not [k for k in objects if k[0] == "ConfigMap" and "offsets" in k[1]]


def test_a_flow_without_requests_renders_as_before(tmp_path):
    objects = kube(render_topology(tmp_path, topology()))
    assert not [k for k in objects if k[0] == "KafkaConnectorPatch" or "offsets" in k[1]]
    for key, obj in objects.items():
        if key[0] == "KafkaConnector":
            assert not {"listOffsets", "alterOffsets"} & set(obj["spec"])


def test_checkpoint_offsets_name_the_group():
    body = alter_body("checkpoint", "a", [PartitionOffset(topic="a.orders", partition=1, group="readers", offset=0)])
    assert body == {"offsets": [{"partition": {"group": "readers", "topic": "a.orders", "partition": 1},
                                 "offset": {"offset": 0}}]}


# A checkpoint's partition names the topic as the target names it (MirrorCheckpointTask.renameTopicPartition):
# the request carries that name unchanged into the body.
FORGET = {"connector": "repl-a-b-checkpoint", "action": "alter", "request": "2026-11-24-forget",
          "offsets": [{"topic": "a.orders", "partition": 0, "group": "readers", "offset": None},
                      {"topic": "a.orders.eu", "partition": 1, "group": "readers", "offset": 0}]}
FORGET_JSON = """{
  "offsets": [
    {
      "partition": {
        "group": "readers",
        "topic": "a.orders",
        "partition": 0
      },
      "offset": null
    },
    {
      "partition": {
        "group": "readers",
        "topic": "a.orders.eu",
        "partition": 1
      },
      "offset": {
        "offset": 0
      }
    }
  ]
}"""


def test_a_checkpoint_alter_renders_the_target_side_topic_names(tmp_path):
    objects = kube(render_topology(tmp_path, topology(FORGET, state={"checkpoint": "stopped"})))
    assert objects[("ConfigMap", "repl-a-b/repl-a-b-checkpoint-offsets-alter")]["data"] == {"offsets.json": FORGET_JSON}


@pytest.mark.parametrize("flow, topic", [
    pytest.param({"replicationPolicy": "identity"}, "orders", id="identity-keeps-the-name"),
    # A group of `a` on `b.orders`, the replica of b's `orders`: its checkpoint names `orders`, the
    # name b has for it (ReplicationPolicy.originalTopic).
    pytest.param({"topics": ["b\\.orders"]}, "orders", id="back-from-the-target"),
    pytest.param({"topics": ["orders.*", "heartbeats"]}, "a.heartbeats", id="heartbeats-in-the-filter"),
])
def test_a_checkpoint_alter_takes_the_name_the_target_has(tmp_path, flow, topic):
    request = {**FORGET, "offsets": [{"topic": topic, "partition": 0, "group": "readers", "offset": None}]}
    objects = kube(render_topology(tmp_path, topology(request, state={"checkpoint": "stopped"}, **flow)))
    data = json.loads(objects[("ConfigMap", "repl-a-b/repl-a-b-checkpoint-offsets-alter")]["data"]["offsets.json"])
    assert data == {"offsets": [{"partition": {"group": "readers", "topic": topic, "partition": 0}, "offset": None}]}


def test_the_patch_is_told_apart_from_the_connector(tmp_path):
    objs = render_topology(tmp_path, topology(REWIND)).objects()
    assert [o["metadata"]["name"] for o in objs if is_patch(o)] == ["repl-a-b-source"]
    assert len([o for o in objs if o["kind"] == "KafkaConnector" and not is_patch(o)]) == 3


# ----------------------------------------------------------------- what the engine receives


class Options:
    """The options of every registration (the mock engine's RegisterResource request)."""

    def __enter__(self) -> "Options":
        self.seen: dict[str, tuple[list[str], list[str], str]] = {}  # name -> (ignoreChanges, dependencies, urn)
        self._original = mocks.MockMonitor.RegisterResource
        options = self

        def register(monitor, request):
            response = options._original(monitor, request)
            options.seen[request.name] = (list(request.ignoreChanges), list(request.dependencies), response.urn)
            return response
        mocks.MockMonitor.RegisterResource = register
        return self

    def __exit__(self, *exc) -> None:
        mocks.MockMonitor.RegisterResource = self._original


def test_the_patch_ignores_changes_and_waits_for_the_connector_and_its_configmap(tmp_path):
    with Options() as options:
        render_topology(tmp_path, topology(REWIND))
    ignore, depends, urn = options.seen["repl-a-b/repl-a-b-source/offsets-alter-2026-11-24-rewind"]
    assert ignore == ["metadata"]
    # The namespace too: the patch names it through the Namespace's Output, as every object of the flow.
    assert sorted(d.rsplit("::", 1)[1] for d in depends) == ["repl-a-b", "repl-a-b/repl-a-b-source",
                                                             "repl-a-b/repl-a-b-source-offsets-alter"]
    assert urn.split("::")[2].endswith("$kubernetes:kafka.strimzi.io/v1:KafkaConnectorPatch")
    # The KafkaConnector and the ConfigMap diff as every other object does.
    assert options.seen["repl-a-b/repl-a-b-source"][0] == []
    assert options.seen["repl-a-b/repl-a-b-source-offsets-alter"][0] == []


def test_a_new_request_is_a_new_patch_resource_and_the_same_one_is_the_same(tmp_path):
    """What keeps `pulumi up` from asking again: the same request registers the same resource
    (its inputs unchanged, nothing to apply); another request id or action, another resource."""
    def patches(*requests: dict) -> list[str]:
        with Options() as options:
            render_topology(tmp_path, topology(*requests))
        return sorted(urn for name, (_, _, urn) in options.seen.items() if "/offsets-" in name)
    first = patches(REWIND)
    assert patches(REWIND) == first
    again = patches({**REWIND, "request": "2026-11-25-rewind"})
    assert len(again) == 1 and again != first and again[0].endswith("offsets-alter-2026-11-25-rewind")
    reset = patches({"connector": "repl-a-b-source", "action": "reset", "request": "2026-11-24-rewind"})
    assert reset[0].endswith("::repl-a-b/repl-a-b-source/offsets-reset-2026-11-24-rewind")


# ----------------------------------------------------------------- refusals


def test_csm_1_2_has_no_offset_management(tmp_path):
    t = topology({"connector": "repl-a-b-source", "action": "list", "request": "l1"}, release=("csm", "1.2"))
    assert refused(tmp_path, t) == [
        "line 20: flows[0] (repl-a-b): offsets[0].action: got 'list'; expected no offsets request on csm 1.2 "
        "(Strimzi 0.43.0): KafkaConnector spec.listOffsets, spec.alterOffsets and the strimzi.io/connector-offsets "
        "annotation exist from Strimzi 0.44 (CSM 1.4); use the Connect REST API (GET, PATCH or DELETE "
        "/connectors/<name>/offsets) with the connector stopped, or a newer operator"]


CHECKPOINT_NAMES = ("MirrorCheckpointConnector's partitions name the topic as the target cluster does, as `list` "
                    "shows it (MirrorCheckpointTask.renameTopicPartition)")
STOPPED = ("the operator alters and resets the offsets of a STOPPED connector only "
           "(AbstractConnectOperator.verifyConnectorStopped, Strimzi 0.45.0 to 1.2.0)")
W = "flows[0] (repl-a-b)"


@pytest.mark.parametrize("requests, flow, expected", [
    pytest.param([{**REWIND, "connector": "repl-a-b-sorce"}], {}, [
        f"{W}: offsets[0].connector: got 'repl-a-b-sorce'; expected a KafkaConnector of this flow: "
        "repl-a-b-checkpoint, repl-a-b-heartbeat, repl-a-b-source (did you mean repl-a-b-source?)"], id="unknown"),
    pytest.param([REWIND], {"state": {"source": "running"}}, [
        f"{W}: offsets[0].action: got 'alter'; expected list, or repl-a-b-source stopped first: it is running "
        f"(set state.source: stopped in the same change; once the operator has carried the request out, run it again by "
        f"removing the request in the change that sets it running); {STOPPED}"], id="alter-running"),
    pytest.param([{"connector": "repl-a-b-checkpoint", "action": "reset", "request": "r"}], {}, [
        f"{W}: offsets[0].action: got 'reset'; expected list, or repl-a-b-checkpoint stopped first: it is running "
        f"(set state.checkpoint: stopped in the same change; once the operator has carried the request out, run it again by "
        f"removing the request in the change that sets it running); {STOPPED}"], id="reset-running"),
    pytest.param([{**REWIND, "offsets": []}], {}, [
        f"{W}: offsets[0].offsets: got []; expected at least one partition offset to set for alter"],
        id="alter-without-offsets"),
    pytest.param([{**REWIND, "action": "list"}], {}, [
        f"{W}: offsets[0].offsets: got '2 partition offset(s)'; expected none for list: only alter sets offsets"],
        id="offsets-to-list"),
    pytest.param([{**REWIND, "action": "reset"}], {}, [
        f"{W}: offsets[0].offsets: got '2 partition offset(s)'; expected none for reset: only alter sets offsets"],
        id="offsets-to-reset"),
    pytest.param([{**REWIND, "offsets": [{"topic": "orders", "partition": 0, "group": "readers", "offset": 3}]}], {}, [
        f"{W}: offsets[0].offsets[0].group: got 'readers'; expected no group on a source connector's offset: "
        "MirrorSourceConnector's partitions are {cluster, topic, partition} (MirrorSourceConnector.alterOffsets)"],
        id="group-on-source"),
    pytest.param([{**REWIND, "connector": "repl-a-b-checkpoint",
                   "offsets": [{"topic": "a.orders", "partition": 0, "offset": 3}]}], {"state": {"checkpoint": "stopped"}}, [
        f"{W}: offsets[0].offsets[0].group: missing; expected a consumer group: MirrorCheckpointConnector's "
        "partitions are {group, topic, partition} (MirrorCheckpointConnector.alterOffsets)",
        f"{W}: offsets[0].offsets[0].offset: got 3; expected 0 or null: MirrorCheckpointConnector accepts offset 0 "
        "only (MirrorUtils.validateSourceOffset); its tasks do not read these offsets"], id="checkpoint-offsets"),
    pytest.param([{**REWIND, "connector": "repl-a-b-heartbeat"}], {"state": {"heartbeat": "stopped"}}, [
        f"{W}: offsets[0].action: got 'alter'; expected list or reset: MirrorHeartbeatConnector's partitions are "
        "{sourceClusterAlias, targetClusterAlias} and it accepts offset 0 only (MirrorHeartbeatConnector."
        "alterOffsets), which `offsets[]` (topic, partition) cannot express"], id="heartbeat-alter"),
    pytest.param([REWIND, {"connector": "repl-a-b-source", "action": "list", "request": "l"}], {}, [
        f"{W}: offsets[1].connector: got 'repl-a-b-source'; expected one request per connector: offsets[0] already "
        "names it (the operator reads one strimzi.io/connector-offsets annotation per KafkaConnector)"],
        id="two-requests"),
    pytest.param([{**REWIND, "offsets": [{"topic": "payments", "partition": 0, "offset": 3}]}], {}, [
        f"{W}: offsets[0].offsets[0].topic: got 'payments'; expected a topic repl-a-b-source reads: its topic "
        "filter does not include it"], id="topic-not-replicated"),
    # The source connector's partitions name the source topic: the target's name is refused.
    pytest.param([{**REWIND, "offsets": [{"topic": "a.orders", "partition": 0, "offset": 3}]}], {}, [
        f"{W}: offsets[0].offsets[0].topic: got 'a.orders'; expected a topic repl-a-b-source reads: its topic "
        "filter does not include it"], id="target-name-on-source"),
    pytest.param([{**FORGET, "offsets": [{"topic": "orders", "partition": 0, "group": "readers", "offset": None},
                                         {"topic": "orders.eu", "partition": 0, "group": "readers", "offset": 0}]}],
                 {"state": {"checkpoint": "stopped"}}, [
        f"{W}: offsets[0].offsets[0].topic: got 'orders'; expected 'a.orders', the name b has for orders of a: "
        f"{CHECKPOINT_NAMES}",
        f"{W}: offsets[0].offsets[1].topic: got 'orders.eu'; expected 'a.orders.eu', the name b has for orders.eu "
        f"of a: {CHECKPOINT_NAMES}"], id="source-name-on-checkpoint"),
    pytest.param([{**FORGET, "offsets": [{"topic": "a.payments", "partition": 0, "group": "readers", "offset": 0},
                                         {"topic": "a.heartbeats", "partition": 0, "group": "readers", "offset": 0},
                                         {"topic": "payments.eu", "partition": 0, "group": "readers", "offset": 0}]}],
                 {"state": {"checkpoint": "stopped"}}, [
        f"{W}: offsets[0].offsets[0].topic: got 'a.payments'; expected a topic repl-a-b-checkpoint checkpoints, "
        "named as on b: its topic filter does not include payments, the topic of a it names",
        # No heartbeats exception: MirrorCheckpointTask.shouldCheckpointTopic asks the filter alone.
        f"{W}: offsets[0].offsets[1].topic: got 'a.heartbeats'; expected a topic repl-a-b-checkpoint checkpoints, "
        "named as on b: its topic filter does not include heartbeats, the topic of a it names",
        f"{W}: offsets[0].offsets[2].topic: got 'payments.eu'; expected a topic named as repl-a-b-checkpoint names "
        f"one on b: no topic of a is checkpointed under it; {CHECKPOINT_NAMES}"], id="checkpoint-topic-not-read"),
    pytest.param([{**FORGET, "offsets": [{"topic": "a.orders", "partition": 0, "group": "readers", "offset": 0}]}],
                 {"state": {"checkpoint": "stopped"}, "replicationPolicy": "identity"}, [
        f"{W}: offsets[0].offsets[0].topic: got 'a.orders'; expected a topic repl-a-b-checkpoint checkpoints, "
        "named as on b: its topic filter does not include a.orders, the topic of a it names"],
        id="identity-prefixed-name"),
    pytest.param([{**REWIND, "offsets": [{"topic": "orders", "partition": 0, "offset": 3},
                                         {"topic": "orders", "partition": 0, "offset": 5}]}], {}, [
        f"{W}: offsets[0].offsets[1]: got 'orders:0'; expected each partition once: offsets[0] sets it already"],
        id="partition-twice"),
])
def test_refusals(tmp_path, requests, flow, expected):
    t = topology(*requests, **flow)
    assert [p.split(": ", 1)[1] for p in refused(tmp_path, t)] == expected


def test_excluded_topics_and_heartbeats(tmp_path):
    """The filter is the connector's own: excludes count; heartbeats topics are read whatever it says."""
    t = topology({**REWIND, "offsets": [{"topic": "orders.tmp", "partition": 0, "offset": 1},
                                        {"topic": "heartbeats", "partition": 0, "offset": 1}]},
                 topicsExclude=["orders\\.tmp"])
    assert [p.split(": ", 1)[1] for p in refused(tmp_path, t)] == [
        f"{W}: offsets[0].offsets[0].topic: got 'orders.tmp'; expected a topic repl-a-b-source reads: its topic "
        "filter does not include it"]


def test_named_sources_name_their_own_state_field(tmp_path):
    t = topology({**REWIND, "connector": "repl-a-b-source-eu"},
                 topics=None, sources=[{"name": "eu", "topics": ["orders.*"]}], state={})
    assert [p.split(": ", 1)[1] for p in refused(tmp_path, t)] == [
        f"{W}: offsets[0].action: got 'alter'; expected list, or repl-a-b-source-eu stopped first: it is running "
        f"(set sources[0].state: stopped in the same change; once the operator has carried the request out, run it again by "
        f"removing the request in the change that sets it running); {STOPPED}"]


def test_a_bidirectional_pair_names_the_connectors_of_both_directions():
    pair = topology({"connector": "repl-b-a-source", "action": "list", "request": "l"},
                    {"connector": "repl-a-b-sourc", "action": "list", "request": "l"},
                    bidirectional=True, groups=[".*"], state={})
    model = resolve(Topology.model_validate(pair))
    assert [str(p) for p in offsets_problems(model)] == [
        f"{W}: offsets[1].connector: got 'repl-a-b-sourc'; expected a KafkaConnector of this flow: "
        "repl-a-b-heartbeat, repl-a-b-source, repl-b-a-heartbeat, repl-b-a-source (did you mean repl-a-b-source?)"]


def test_the_documented_example_validates_and_renders(tmp_path):
    path = ROOT / "docs" / "examples" / "offsets" / "topology.yaml"
    document = yaml.safe_load(path.read_text())
    objects = kube(render.run("example", {"topology": str(write_topology(tmp_path, document))}, {},
                              placeholder_secrets=True))
    (patch,) = [k for k in objects if k[0] == "KafkaConnectorPatch"]
    assert patch == ("KafkaConnectorPatch", "orders/orders-source/offsets-alter-2026-11-24-rewind")
    data = json.loads(objects[("ConfigMap", "orders/orders-source-offsets-alter")]["data"]["offsets.json"])
    assert data == {"offsets": [{"partition": {"cluster": "us-west", "topic": "orders", "partition": 0},
                                 "offset": {"offset": 41}}]}


def test_the_documented_checkpoint_example_renders_the_target_side_name_and_its_source_name_is_refused(tmp_path):
    path = ROOT / "docs" / "examples" / "offsets" / "checkpoint.yaml"
    document = yaml.safe_load(path.read_text())
    objects = kube(render.run("example", {"topology": str(write_topology(tmp_path, document))}, {},
                              placeholder_secrets=True))
    (patch,) = [k for k in objects if k[0] == "KafkaConnectorPatch"]
    assert patch == ("KafkaConnectorPatch", "orders/orders-checkpoint/offsets-alter-2026-11-24-forget")
    assert objects[("ConfigMap", "orders/orders-checkpoint-offsets-alter")]["data"]["offsets.json"] == """{
  "offsets": [
    {
      "partition": {
        "group": "orders-readers",
        "topic": "us-west.orders",
        "partition": 0
      },
      "offset": null
    }
  ]
}"""
    document["flows"][0]["offsets"][0]["offsets"][0]["topic"] = "orders"
    assert [str(p) for p in offsets_problems(resolve(Topology.model_validate(document)))] == [
        "flows[0] (orders): offsets[0].offsets[0].topic: got 'orders'; expected 'us-west.orders', the name "
        f"us-east has for orders of us-west: {CHECKPOINT_NAMES}"]


# ----------------------------------------------------------------- the stand-in operator (no worker)

# ObjectMapper.writerWithDefaultPrettyPrinter() of jackson-databind 2.21.2 (the release jars) on
# this value, recorded: objects one entry a line, arrays on the line, empty ones with a space.
JACKSON = """{
  "offsets" : [ {
    "partition" : {
      "cluster" : "a",
      "partition" : 0,
      "topic" : "té"
    },
    "offset" : {
      "offset" : 5
    }
  }, {
    "partition" : {
      "x" : [ ]
    },
    "offset" : null
  } ],
  "e" : { },
  "n" : [ 1, [ 2, {
    "a" : true
  } ] ],
  "f" : 1.5
}"""


def test_the_listed_offsets_are_printed_as_jackson_prints_them():
    from infra.tools.rehearsal.offsets import pretty
    value = {"offsets": [{"partition": {"cluster": "a", "partition": 0, "topic": "té"}, "offset": {"offset": 5}},
                         {"partition": {"x": []}, "offset": None}], "e": {}, "n": [1, [2, {"a": True}]], "f": 1.5}
    assert pretty(value) == JACKSON


class FakeWorker:
    """The REST calls the stand-in makes, answered from a script."""

    def __init__(self, states: list[str], offsets: dict | None = None):
        self.states, self.offsets, self.calls = list(states), offsets, []

    def status(self, name):
        self.calls.append(("status", name))
        return {"connector": {"state": self.states.pop(0) if len(self.states) > 1 else self.states[0]}}

    def request(self, method, path, body=None):
        self.calls.append((method, path, body))
        return self.offsets if method == "GET" else {"message": "ok"}


def annotated(action: str, **spec) -> dict:
    return {"apiVersion": "kafka.strimzi.io/v1", "kind": "KafkaConnector",
            "metadata": {"name": "c", "namespace": "ns", "labels": {"strimzi.io/cluster": "connect",
                                                                     "app.kubernetes.io/name": "x", "team": "t"},
                         "annotations": {"strimzi.io/connector-offsets": action, "keep": "me"}},
            "spec": {"class": "X", "config": {}, **spec}}


def test_the_stand_in_lists_alters_and_resets_as_the_operator_does(monkeypatch):
    from infra.tools.rehearsal import offsets as standin
    monkeypatch.setattr(standin.time, "sleep", lambda s: None)
    answer = {"offsets": [{"partition": {"cluster": "a", "partition": 0, "topic": "t"}, "offset": {"offset": 9}}]}
    worker = FakeWorker(["RUNNING"], answer)
    written = standin.manage(worker, annotated("list", listOffsets={"toConfigMap": {"name": "c-offsets"}}),
                             {("ns", "c-offsets"): {"other": "kept"}})
    assert worker.calls == [("GET", "/connectors/c/offsets", None)]  # list needs no stopped connector
    assert written == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c-offsets", "namespace": "ns", "labels": {
        "team": "t", "strimzi.io/cluster": "c", "strimzi.io/kind": "KafkaConnector", "strimzi.io/name": "c",
        "strimzi.io/component-type": "kafka-connector", "app.kubernetes.io/name": "kafka-connector",
        "app.kubernetes.io/instance": "c", "app.kubernetes.io/part-of": "strimzi-c",
        "app.kubernetes.io/managed-by": "strimzi-cluster-operator"}},
        "data": {"other": "kept", "offsets.json": standin.pretty(answer)}}

    worker = FakeWorker(["RUNNING", "RUNNING", "STOPPED"])
    cm = {("ns", "c-offsets-alter"): {"offsets.json": REWIND_JSON}}
    assert standin.manage(worker, annotated("alter", alterOffsets={"fromConfigMap": {"name": "c-offsets-alter"}}),
                          cm) is None
    assert worker.calls == [("status", "c")] * 3 + [("PATCH", "/connectors/c/offsets", json.loads(REWIND_JSON))]

    worker = FakeWorker(["STOPPED"])
    assert standin.manage(worker, annotated("reset"), {}) is None
    assert worker.calls == [("status", "c"), ("DELETE", "/connectors/c/offsets", None)]
    assert standin.without_annotation(annotated("reset"))["metadata"]["annotations"] == {"keep": "me"}


@pytest.mark.parametrize("connector, configmaps, message", [
    (annotated("list"), {}, "Failed to list the connector offsets due to missing property listOffsets in "
                            "KafkaConnector CR."),
    (annotated("alter"), {}, "Failed to alter the connector offsets due to missing property alterOffsets in "
                             "KafkaConnector CR."),
    (annotated("alter", alterOffsets={"fromConfigMap": {"name": "gone"}}), {},
     "Encountered error fetching offsets to use in alter operation. ConfigMap ns/gone does not exist."),
    (annotated("alter", alterOffsets={"fromConfigMap": {"name": "m"}}), {("ns", "m"): {}},
     "Encountered error fetching offsets to use in alter operation. Data field offsets.json is missing."),
    (annotated("rewind"), {}, "c: strimzi.io/connector-offsets=rewind is none of list, alter, reset"),
])
def test_the_stand_in_refuses_what_the_operator_refuses(connector, configmaps, message):
    from infra.tools.rehearsal import offsets as standin
    from infra.tools.rehearsal.process import RuntimeStartError
    with pytest.raises(RuntimeStartError) as exc:
        standin.manage(FakeWorker(["STOPPED"]), connector, configmaps)
    assert str(exc.value) == message


def test_the_stand_in_alters_a_stopped_connector_only(monkeypatch):
    from infra.tools.rehearsal import offsets as standin
    from infra.tools.rehearsal.process import RuntimeStartError
    clock = iter(range(0, 1000, 30))
    monkeypatch.setattr(standin.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(standin.time, "sleep", lambda s: None)
    worker = FakeWorker(["RUNNING"])
    with pytest.raises(RuntimeStartError) as exc:
        standin.manage(worker, annotated("reset"), {})
    assert str(exc.value) == "c: Connector is not in STOPPED state (it is RUNNING after 60 s)"
    assert ("DELETE", "/connectors/c/offsets", None) not in worker.calls


def test_validate_and_render_agree_on_the_example_and_its_refusal(tmp_path):
    from tests.support.verdicts import verdicts
    document = yaml.safe_load((ROOT / "docs" / "examples" / "offsets" / "topology.yaml").read_text())
    assert verdicts(tmp_path, document) == (None, None)
    old = {**document, "operator": {"flavour": "csm", "version": "1.2"}}
    v, r = verdicts(tmp_path, old)
    assert v == r and v is not None and len(v) == 1 and v[0].startswith(
        "line 21: flows[0] (orders): offsets[0].action: got 'alter'; expected no offsets request on csm 1.2")


def test_a_name_of_both_sides_is_the_source_topic_unless_the_target_replicates_back(tmp_path):
    """With `.*`, `orders` is both a's own topic (whose checkpoints say `a.orders`) and the name b
    has for `b.orders` on a. That topic exists where a flow copies b to a: then `orders` is taken
    as written; without one, it is the source-side slip, refused with the name to write."""
    request = {**FORGET, "offsets": [{"topic": "orders", "partition": 0, "group": "readers", "offset": None}]}
    alone = topology(request, topics=[".*"], state={"checkpoint": "stopped"})
    assert [p.split(": ", 1)[1] for p in refused(tmp_path, alone)] == [
        f"{W}: offsets[0].offsets[0].topic: got 'orders'; expected 'a.orders', the name b has for orders of a "
        "(orders is also what b has for b.orders of a, a topic back from b, which no flow of this topology "
        f"replicates to a): {CHECKPOINT_NAMES}"]
    back = copy.deepcopy(alone)
    back["flows"].append({"source": "b", "target": "a", "topics": ["orders"], "checkpoints": False})
    objects = kube(render_topology(tmp_path, back))
    data = json.loads(objects[("ConfigMap", "repl-a-b/repl-a-b-checkpoint-offsets-alter")]["data"]["offsets.json"])
    assert data["offsets"][0]["partition"] == {"group": "readers", "topic": "orders", "partition": 0}


@pytest.mark.parametrize("policy, topic, named, back", [
    ("default", "orders", "us-west.orders", "orders"),
    ("default", "orders.eu", "us-west.orders.eu", "orders.eu"),
    # Came from the target: ReplicationPolicy.originalTopic drops every `<alias>.` it sees, so the
    # way back names the one-hop replica of the name.
    ("default", "us-east.orders", "orders", "us-east.orders"),
    ("default", "us-east.orders.eu", "eu", "us-east.eu"),
    ("identity", "orders", "orders", "orders"),
    ("identity", "us-east.orders", "us-east.orders", "us-east.orders"),
    ("identity", "heartbeats", "us-west.heartbeats", "heartbeats"),
    ("identity", "us-east.heartbeats", "heartbeats", "us-east.heartbeats"),
])
def test_a_checkpoint_names_its_topic_as_mirror_checkpoint_task_does(policy, topic, named, back):
    """MirrorCheckpointTask.renameTopicPartition in a flow us-west -> us-east, and the way back."""
    target = Target("c", "checkpoint", ConnectorState.stopped, "state.checkpoint", (), "us-west", "us-east",
                    Policy(policy))
    assert checkpoint_topic(target, topic) == named
    assert checkpointed_topic(target, named) == back


def test_a_name_no_checkpoint_carries_maps_to_no_source_topic():
    target = Target("c", "checkpoint", ConnectorState.stopped, "state.checkpoint", (), "us-west", "us-east",
                    Policy.default)
    # Unprefixed with a dot: neither `us-west.<it>` nor a topic back from us-east (that would lose the dot).
    assert checkpointed_topic(target, "orders.eu") is None


def test_an_alter_over_the_configmap_limit_is_refused_and_one_under_it_renders(tmp_path):
    """Kubernetes refuses a ConfigMap whose data exceeds 1 MiB: 10,000 partitions do."""
    many = dict(REWIND, offsets=[{"topic": "orders", "partition": p, "offset": 41} for p in range(10_000)])
    (problem,) = refused(tmp_path, topology(many))
    assert problem.startswith("line ") and problem.split(": ", 1)[1] == (
        "flows[0] (repl-a-b): offsets[0].offsets: got '10000 partition offsets (1668923 bytes)'; expected at most "
        "1048576 bytes in the alter ConfigMap (Kubernetes' limit): split the request over several changes, one after "
        "the other")
    fewer = dict(REWIND, offsets=many["offsets"][:5000])
    data = kube(render_topology(tmp_path, topology(fewer), secrets={}))[("ConfigMap", "repl-a-b/repl-a-b-source-offsets-alter")]
    assert 1 << 19 < len(data["data"]["offsets.json"]) < 1 << 20


def test_a_source_offset_at_java_s_largest_long_is_refused(tmp_path):
    """The task resumes at offset + 1 (MirrorSourceTask.loadOffset): Long.MAX_VALUE overflows."""
    last = dict(REWIND, offsets=[{"topic": "orders", "partition": 0, "offset": 2**63 - 1}])
    (problem,) = refused(tmp_path, topology(last))
    assert problem.split(": ", 1)[1] == (
        "flows[0] (repl-a-b): offsets[0].offsets[0].offset: got 9223372036854775807; expected at most "
        "9223372036854775806: the task resumes at offset + 1 (MirrorSourceTask.loadOffset), which overflows Java's "
        "long and falls back to auto.offset.reset")
    largest = dict(REWIND, offsets=[{"topic": "orders", "partition": 0, "offset": 2**63 - 2}])
    assert render_topology(tmp_path, topology(largest), secrets={}).objects()


def test_the_documented_replay_procedure_is_accepted_step_by_step(tmp_path):
    """docs/operations.md, "Step by step: replay from an offset", followed as written: the stop and
    the request in one change, then the connector running again and the request removed."""
    text = (ROOT / "docs" / "operations.md").read_text()
    section = text[text.index("### Step by step: replay from an offset"):]
    block = section[section.index("```yaml") + len("```yaml"):section.index("```", section.index("```yaml") + 7)]
    (flow,) = yaml.safe_load(block)["flows"]
    t = {"operator": {"flavour": "strimzi", "version": "1.2.0"},
         "clusters": {"us-west": {"bootstrapServers": "w:9092"}, "us-east": {"bootstrapServers": "e:9092"}},
         "flows": [flow]}
    first = kube(render_topology(tmp_path, t, secrets={}))
    assert ("KafkaConnectorPatch", "orders/orders-source/offsets-alter-2026-11-24-rewind") in first
    assert "then, in one change, state.source: running and the request removed from offsets[]" in section
    flow["state"] = {"source": "running"}
    kept = refused(tmp_path, t)
    assert len(kept) == 1 and "run it again by removing the request in the change that sets it running" in kept[0]
    flow["offsets"] = []
    second = kube(render_topology(tmp_path, t, secrets={}))
    assert not [k for k in second if k[0] == "KafkaConnectorPatch"]
    assert second[("KafkaConnector", "orders/orders-source")]["spec"]["state"] == "running"
