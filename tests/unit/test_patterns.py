"""Each advanced pattern of the documents, on the exact generated values."""

from __future__ import annotations

import dataclasses

import pytest

from infra.checks import validation
from infra.plan.stack import plan
from infra.plan.symmetry import check_symmetry
from tests.support import patterns
from tests.support.stacks import by_kind_name, render_topology

BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
DEFAULT_POLICY = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"


def objects(tmp_path, topology):
    return by_kind_name(render_topology(tmp_path, topology).objects())


def config(objs, name):
    return objs[("KafkaConnector", name)]["spec"]["config"]


def without_connections(cfg: dict) -> dict:
    return {k: v for k, v in cfg.items()
            if not k.startswith(("source.cluster.", "target.cluster.")) or k.endswith(".alias")}


# ------------------------------------------------------------------ several MirrorSourceConnectors


def test_multi_instance_configmaps_follow_the_documents(tmp_path):
    o = objects(tmp_path, patterns.multi_instance())
    ns = "repl-us-west-us-east"
    # One common ConfigMap (the policy, and the groups of the one checkpoint connector) ...
    assert o[("ConfigMap", "replication")]["data"] == {"groups": "test.*", "replication.policy.class": DEFAULT_POLICY}
    # ... and one per instance with its topic filter.
    assert o[("ConfigMap", "replication-first")]["data"] == {"topics": "test.*"}
    assert o[("ConfigMap", "replication-second")]["data"] == {"topics": "prod.*"}
    assert o[("ConfigMap", "replication-first")]["metadata"]["namespace"] == ns


def test_multi_instance_connectors_follow_the_documents(tmp_path):
    o = objects(tmp_path, patterns.multi_instance())
    ns = "repl-us-west-us-east"
    first = config(o, f"{ns}-source-first")
    second = config(o, f"{ns}-source-second")
    assert first["topics"] == f"${{cfmap:{ns}/replication-first:topics}}"
    assert second["topics"] == f"${{cfmap:{ns}/replication-second:topics}}"
    # Both use the common replication policy.
    assert first["replication.policy.class"] == second["replication.policy.class"] == \
        f"${{cfmap:{ns}/replication:replication.policy.class}}"
    assert not any(k.startswith("transforms") for k in first)
    assert {k: v for k, v in second.items() if k.startswith("transforms")} == {
        "transforms": "insertHeader",
        "transforms.insertHeader.type": "org.apache.kafka.connect.transforms.InsertHeader",
        "transforms.insertHeader.header": "my_header_key",
        "transforms.insertHeader.value.literal": "my_header_value",
    }
    # The checkpoint connector covers every instance's topics, as the documents join them.
    checkpoint = config(o, f"{ns}-checkpoint")
    assert checkpoint["topics"] == (f"${{cfmap:{ns}/replication-first:topics}},"
                                    f"${{cfmap:{ns}/replication-second:topics}}")
    assert checkpoint["groups"] == f"${{cfmap:{ns}/replication:groups}}"
    assert [k for k in o if k[0] == "KafkaConnector"] == [
        ("KafkaConnector", f"{ns}-source-first"), ("KafkaConnector", f"{ns}-source-second"),
        ("KafkaConnector", f"{ns}-checkpoint"), ("KafkaConnector", f"{ns}-heartbeat")]
    role = o[("Role", f"{ns}-connector-configuration")]
    assert role["rules"][1] == {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": [
        "replication", "replication-first", "replication-second", "source-us-west", "target-us-east"]}


def test_multi_instance_settings_are_per_instance(tmp_path):
    t = patterns.multi_instance()
    flow = t["flows"][0]
    flow["tasksMax"] = {"source": 4}
    flow["config"] = {"source": {"offset.lag.max": 100}}
    flow["sources"][0].update(tasksMax=8, topicsExclude=["test\\.tmp\\..*"], state="paused",
                              config={"producer.override.compression.type": "zstd", "replication.factor": 2})
    o = objects(tmp_path, t)
    first = o[("KafkaConnector", "repl-us-west-us-east-source-first")]["spec"]
    second = o[("KafkaConnector", "repl-us-west-us-east-source-second")]["spec"]
    assert (first["tasksMax"], second["tasksMax"]) == (8, 4)
    assert (first["state"], second["state"]) == ("paused", "running")
    assert first["config"]["producer.override.compression.type"] == "zstd"
    assert (first["config"]["replication.factor"], second["config"]["replication.factor"]) == (2, -1)
    assert first["config"]["offset.lag.max"] == second["config"]["offset.lag.max"] == 100
    assert o[("ConfigMap", "replication-first")]["data"] == {
        "topics": "test.*", "topics.exclude": "test\\.tmp\\..*,.*[\\-\\.]internal,.*\\.replica,__.*"}
    assert first["config"]["topics.exclude"] == "${cfmap:repl-us-west-us-east/replication-first:topics.exclude}"
    # Several sources: the checkpoint connector gets no exclude (excluded topics have no offset syncs).
    assert "topics.exclude" not in config(o, "repl-us-west-us-east-checkpoint")


def test_multi_instance_outputs_list_each_connector_and_filter(tmp_path):
    out = render_topology(tmp_path, patterns.multi_instance()).outputs["flows"]["repl-us-west-us-east"]
    ns = "repl-us-west-us-east"
    assert out["connectors"]["source"] == [f"{ns}-source-first", f"{ns}-source-second"]
    assert out["topics"] == ["test.*", "prod.*"] and out["topicsExclude"] == []
    assert out["connectClusters"][0]["sources"] == [
        {"connector": f"{ns}-source-first", "topics": ["test.*"], "topicsExclude": []},
        {"connector": f"{ns}-source-second", "topics": ["prod.*"], "topicsExclude": []}]


# ------------------------------------------------------------------ one flow, several Connect clusters


def test_split_flow_has_a_namespace_and_connect_cluster_per_workload(tmp_path):
    o = objects(tmp_path, patterns.split())
    small, high = o[("KafkaConnect", "workload-small")], o[("KafkaConnect", "workload-high")]
    assert small["metadata"]["namespace"] == "workload-small" and high["metadata"]["namespace"] == "workload-high"
    assert (small["spec"]["replicas"], small["spec"]["resources"]) == (
        3, {"requests": {"memory": "1Gi", "cpu": "1"}, "limits": {"memory": "2Gi", "cpu": "2"}})
    assert (high["spec"]["replicas"], high["spec"]["resources"]) == (
        6, {"requests": {"memory": "6Gi", "cpu": "2"}, "limits": {"memory": "12Gi", "cpu": "4"}})
    # Each part has its own Connect identity on the target cluster.
    assert small["spec"]["config"]["group.id"] == "workload-small-consumer-group"
    assert high["spec"]["config"]["offset.storage.topic"] == "workload-high-offsets-topic"
    assert {("Namespace", "workload-small"), ("Namespace", "workload-high")} <= set(o)
    assert ("Namespace", "workload") not in o


def test_split_flow_connectors_and_configmaps_per_namespace(tmp_path):
    rendered = render_topology(tmp_path, patterns.split()).objects()
    by_ns = {}
    for obj in rendered:
        by_ns.setdefault(obj["metadata"].get("namespace"), {})[(obj["kind"], obj["metadata"]["name"])] = obj
    for part, topics in (("small", "low.*"), ("high", "high.*")):
        ns = f"workload-{part}"
        objs = by_ns[ns]
        assert objs[("ConfigMap", "replication")]["data"] == {
            "topics": topics, "groups": "test.*", "replication.policy.class": DEFAULT_POLICY}
        source = objs[("KafkaConnector", f"{ns}-source")]
        assert source["metadata"]["labels"]["strimzi.io/cluster"] == ns
        assert source["spec"]["tasksMax"] == 3
        assert source["spec"]["config"]["topics"] == f"${{cfmap:{ns}/replication:topics}}"
        checkpoint = objs[("KafkaConnector", f"{ns}-checkpoint")]
        assert checkpoint["spec"]["tasksMax"] == 3
        assert checkpoint["spec"]["config"]["topics"] == f"${{cfmap:{ns}/replication:topics}}"
        assert checkpoint["spec"]["config"]["groups"] == f"${{cfmap:{ns}/replication:groups}}"
        # Connection objects are in each namespace (config providers read their own namespace only).
        assert ("ConfigMap", "source-us-west") in objs and ("Secret", "target-us-east-password") in objs
    # One heartbeat emitter per alias pair, in the first Connect cluster by name.
    heartbeats = [k for ns in by_ns.values() for k in ns if k[0] == "KafkaConnector" and k[1].endswith("heartbeat")]
    assert heartbeats == [("KafkaConnector", "workload-high-heartbeat")]


def test_split_flow_resource_quota(tmp_path):
    o = objects(tmp_path, patterns.split())
    quota = o[("ResourceQuota", "workload-small-quota")]
    assert quota["metadata"]["namespace"] == "workload-small"
    assert quota["spec"] == {"hard": {"limits.memory": "6Gi", "requests.cpu": "3"}}
    assert ("ResourceQuota", "workload-high-quota") not in o


def test_split_flow_outputs(tmp_path):
    out = render_topology(tmp_path, patterns.split()).outputs["flows"]["workload"]
    assert [(c["name"], c["namespace"], c["restUrl"]) for c in out["connectClusters"]] == [
        ("workload-high", "workload-high", "http://workload-high-connect-api.workload-high.svc:8083"),
        ("workload-small", "workload-small", "http://workload-small-connect-api.workload-small.svc:8083")]
    assert out["connectors"] == {"source": ["workload-high-source", "workload-small-source"],
                                 "checkpoint": ["workload-high-checkpoint", "workload-small-checkpoint"],
                                 "heartbeat": ["workload-high-heartbeat"]}
    assert out["topics"] == ["high.*", "low.*"]


def test_split_flow_urns_nest_under_the_flow(tmp_path):
    r = render_topology(tmp_path, patterns.split())
    names = sorted(res.name for res in r.resources if res.type.startswith("kafka-replication:flow:"))
    assert names == ["workload", "workload-high/access", "workload-high/connect", "workload-high/connectors",
                     "workload-small/access", "workload-small/connect", "workload-small/connectors"]


# ------------------------------------------------------------------ bidirectional prefixless


def test_bidirectional_pair_generates_both_directions_with_the_loop_filter(tmp_path):
    o = objects(tmp_path, patterns.bidirectional())
    for source, target in (("us-west", "us-east"), ("us-east", "us-west")):
        ns = f"repl-{source}-{target}"
        cfg = config(o, f"{ns}-source")
        assert o[("KafkaConnector", f"{ns}-source")]["spec"]["tasksMax"] == 2
        assert {k: v for k, v in cfg.items() if k.startswith(("transforms", "predicates"))} == {
            "transforms": "FilterReplicatedFromTarget,InsertHeader",
            "transforms.FilterReplicatedFromTarget.type": "org.apache.kafka.connect.transforms.Filter",
            "transforms.FilterReplicatedFromTarget.predicate": "ReplicatedFromTarget",
            "transforms.InsertHeader.type": "org.apache.kafka.connect.transforms.InsertHeader",
            "transforms.InsertHeader.header": f"replicated-from-${{cfmap:{ns}/source-{source}:alias}}",
            "transforms.InsertHeader.value.literal": "true",
            "predicates": "ReplicatedFromTarget",
            "predicates.ReplicatedFromTarget.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
            "predicates.ReplicatedFromTarget.name": f"replicated-from-${{cfmap:{ns}/target-{target}:alias}}",
        }
        # Kafka 3.8 (CSM 1.2) has no emit.offset-syncs.enabled (3.9+, KIP-1031): not written.
        assert "emit.offset-syncs.enabled" not in cfg
        # The aliases behind the references are the two clusters'.
        assert o[("ConfigMap", f"source-{source}")]["data"]["alias"] == source
        assert o[("ConfigMap", f"target-{target}")]["data"]["alias"] == target
        assert o[("ConfigMap", "replication")]["data"]["replication.policy.class"] == IDENTITY_POLICY
        assert ("KafkaConnector", f"{ns}-checkpoint") not in o
        heartbeat = config(o, f"{ns}-heartbeat")
        assert heartbeat["replication.policy.class"] == f"${{cfmap:{ns}/replication:replication.policy.class}}"
        assert "groups" not in o[("ConfigMap", "replication")]["data"]


def test_bidirectional_directions_are_mirror_images(tmp_path):
    o = objects(tmp_path, patterns.bidirectional())
    ab = without_connections(config(o, "repl-us-west-us-east-source"))
    ba = without_connections(config(o, "repl-us-east-us-west-source"))
    swap = {"repl-us-west-us-east": "repl-us-east-us-west", "source-us-west": "source-us-east",
            "target-us-east": "target-us-west"}
    mirrored = {k: v if not isinstance(v, str) else _swap(v, swap) for k, v in ab.items()}
    # The digest is of each direction's own ConfigMaps, whose aliases differ by nature.
    digest = "kafka-replication.configmaps.digest"
    assert {k: v for k, v in mirrored.items() if k != digest} == {k: v for k, v in ba.items() if k != digest}
    assert mirrored[digest] != ba[digest]


def _swap(text, mapping):
    for a, b in mapping.items():
        text = text.replace(a, "\0" + b)
    return text.replace("\0", "")


def test_symmetry_check_catches_an_asymmetric_pair():
    topo = validation.parse(patterns.bidirectional())
    stack = plan(topo)
    a, b = stack.flows
    check_symmetry(a, b)
    broken_part = b.parts[0]
    connectors = list(broken_part.connectors)
    first = connectors[0]
    connectors[0] = dataclasses.replace(first, manifest={**first.manifest, "spec": {**first.manifest["spec"], "tasksMax": 9}})
    broken = dataclasses.replace(b, parts=(dataclasses.replace(broken_part, connectors=tuple(connectors)),))
    with pytest.raises(AssertionError, match="not symmetric"):
        check_symmetry(a, broken)


def test_bidirectional_outputs(tmp_path):
    out = render_topology(tmp_path, patterns.bidirectional()).outputs["flows"]
    assert sorted(out) == ["repl-us-east-us-west", "repl-us-west-us-east"]
    assert out["repl-us-west-us-east"]["bidirectional"] == {
        "partner": "repl-us-east-us-west", "loopHeader": "replicated-from-us-west",
        "filteredHeader": "replicated-from-us-east"}
    assert out["repl-us-west-us-east"]["replicationPolicy"] == "identity"
    assert out["repl-us-west-us-east"]["topicPrefix"] == ""
    # Kafka 3.8 writes offset syncs whatever the pair wants; 3.9+ switches them off.
    assert out["repl-us-west-us-east"]["internalTopics"]["source"]["offsetSyncs"] == "mm2-offset-syncs.us-east.internal"
    later = render_topology(tmp_path, patterns.bidirectional("csm", "1.4")).outputs["flows"]
    assert later["repl-us-west-us-east"]["internalTopics"]["source"]["offsetSyncs"] is None
    assert out["repl-us-east-us-west"]["connectors"]["checkpoint"] == []


def test_bidirectional_named_pair_and_user_smts_after_the_filter(tmp_path):
    t = patterns.bidirectional()
    t["flows"][0].update(name="shared", transforms=[{"name": "Tag", "type": "org.apache.kafka.connect.transforms.InsertHeader",
                                                     "config": {"header": "dc", "value.literal": "x"}}])
    o = objects(tmp_path, t)
    cfg = config(o, "shared-us-east-us-west-source")
    assert cfg["transforms"] == "FilterReplicatedFromTarget,InsertHeader,Tag"
    assert cfg["transforms.Tag.header"] == "dc"


# ------------------------------------------------------------------ SMTs


def test_value_chain_with_the_heartbeat_predicate_is_the_documents(tmp_path):
    o = objects(tmp_path, patterns.value_chain())
    cfg = config(o, "repl-us-west-us-east-source")
    assert {k: v for k, v in cfg.items() if k.startswith(("transforms", "predicates", "key.", "value."))} == {
        "transforms": "ConvertFromBytes,ReplaceField,ConvertToBytes",
        "transforms.ConvertFromBytes.type": "com.cloudera.dim.kafka.connect.transforms.ConvertFromBytes$Value",
        "transforms.ConvertFromBytes.converter": "org.apache.kafka.connect.json.JsonConverter",
        "transforms.ConvertFromBytes.converter.schemas.enable": False,
        "transforms.ReplaceField.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
        "transforms.ReplaceField.renames": "name:replaced_name,age:replaced_age",
        "transforms.ConvertToBytes.type": "com.cloudera.dim.kafka.connect.transforms.ConvertToBytes$Value",
        "transforms.ConvertToBytes.converter": "org.apache.kafka.connect.json.JsonConverter",
        "transforms.ConvertToBytes.converter.schemas.enable": False,
        "predicates": "NotHeartbeats",
        "predicates.NotHeartbeats.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.NotHeartbeats.pattern": "^(?!(.+\\.)?heartbeats).*$",
        "transforms.ConvertFromBytes.predicate": "NotHeartbeats",
        "transforms.ReplaceField.predicate": "NotHeartbeats",
        "transforms.ConvertToBytes.predicate": "NotHeartbeats",
        "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
    }
    # Only the source connector transforms records.
    assert not any(k.startswith("transforms") for k in config(o, "repl-us-west-us-east-checkpoint"))


def test_json_value_converter_of_the_documents(tmp_path):
    t = patterns.flows({"source": "us-west", "target": "us-east", "topics": ["test.*"],
                        "transforms": [patterns.VALUE_CHAIN["transforms"][0], patterns.VALUE_CHAIN["transforms"][1]],
                        "converters": {"value": {"type": "org.apache.kafka.connect.json.JsonConverter",
                                                 "config": {"schemas.enable": False}}}})
    t["flows"][0]["transforms"] = [{k: v for k, v in tr.items() if k != "predicate"}
                                   for tr in t["flows"][0]["transforms"]]
    cfg = config(objects(tmp_path, t), "repl-us-west-us-east-source")
    assert cfg["value.converter"] == "org.apache.kafka.connect.json.JsonConverter"
    assert cfg["value.converter.schemas.enable"] is False
    assert cfg["key.converter"] == BYTES
    assert cfg["transforms"] == "ConvertFromBytes,ReplaceField"


def test_negated_predicate(tmp_path):
    t = patterns.value_chain()
    t["flows"][0]["transforms"][0]["negate"] = True
    cfg = config(objects(tmp_path, t), "repl-us-west-us-east-source")
    assert cfg["transforms.ConvertFromBytes.negate"] is True
    assert "transforms.ReplaceField.negate" not in cfg


def test_metadata_transform_of_the_documents(tmp_path):
    t = patterns.flows({"source": "us-west", "target": "us-east", "topics": ["test.*"], "transforms": [
        {"name": "InsertHeader", "type": "org.apache.kafka.connect.transforms.InsertHeader",
         "config": {"header": "smt-header-key", "value.literal": "smt-header-value"}}]})
    cfg = config(objects(tmp_path, t), "repl-us-west-us-east-source")
    assert {k: v for k, v in cfg.items() if k.startswith("transforms")} == {
        "transforms": "InsertHeader",
        "transforms.InsertHeader.header": "smt-header-key",
        "transforms.InsertHeader.type": "org.apache.kafka.connect.transforms.InsertHeader",
        "transforms.InsertHeader.value.literal": "smt-header-value",
    }


def test_every_pattern_example_of_the_docs_renders(tmp_path):
    import re
    from pathlib import Path

    import yaml
    text = (Path(__file__).resolve().parents[2] / "docs" / "topology.md").read_text()
    complete = yaml.safe_load(re.search(r"## A complete example\n\n```yaml\n(.*?)```", text, re.S).group(1))
    section = text[text.index("## Patterns"):text.index("## Secrets")]
    examples = re.findall(r"```yaml\n(.*?)```", section, re.S)
    assert len(examples) == 4
    deployed = []
    for i, example in enumerate(examples):
        (tmp_path / str(i)).mkdir()
        r = render_topology(tmp_path / str(i), {**complete, **yaml.safe_load(example)}, secrets={})
        deployed.append(sorted(r.outputs["flows"]))
    assert deployed == [["repl-us-west-us-east"], ["workload"], ["repl-us-east-us-west", "repl-us-west-us-east"],
                        ["repl-us-west-us-east"]]


# ------------------------------------------------------------------ exactly-once: an unreadable previous state

def _eos_enabled() -> dict:
    from tests.support.stacks import doc_topology
    t = doc_topology()
    t["flows"][0]["exactlyOnce"] = "enabled"
    return t


@pytest.mark.parametrize("before, shown", [({}, "null (or missing)"), ({"exactlyOnce": "Disabled"}, "'Disabled'"),
                                           ({"exactlyOnce": 0}, "a number"), ("garbled", "null (or missing)"),
                                           ({"exactlyOnce": ["disabled"]}, "a list"), ({"exactlyOnce": {}}, "an object")])
def test_enabling_with_an_unreadable_previous_state_is_refused(tmp_path, before, shown):
    from infra.core.errors import TopologyError
    ns = "repl-us-west-us-east"
    with pytest.raises(TopologyError) as exc:
        render_topology(tmp_path, _eos_enabled(), secrets={}, previous_outputs={"flows": {ns: before}})
    assert [str(p) for p in exc.value.problems] == [
        f"flows[0] ({ns}): exactlyOnce: got 'enabled'; expected previous stack outputs the program can read: "
        f"flows.{ns}.exactlyOnce there is {shown}, not one of disabled, enabled, preparing, so whether the running "
        "Connect cluster has exactly-once disabled is unknown. Pass the stack's real outputs (`pulumi stack output "
        "--json` to --previous-outputs), or deploy exactlyOnce: preparing, wait until the Connect pods' rolling "
        f"restart has finished (kubectl get pods -n {ns} --watch), then deploy exactlyOnce: enabled"]


def test_enabling_with_previous_flows_that_are_no_mapping_is_refused():
    from infra.checks import rules
    model = validation.parse(_eos_enabled())
    assert [str(p) for p in rules.check_transitions(model, ["repl-us-west-us-east"])] == [  # type: ignore[arg-type]
        "flows[0] (repl-us-west-us-east): exactlyOnce: got 'enabled'; expected previous stack outputs the program "
        "can read: their `flows` is list, not a mapping of flows, so whether the running Connect cluster has "
        "exactly-once disabled is unknown. Pass the stack's real outputs (`pulumi stack output --json` to "
        "--previous-outputs), or deploy exactlyOnce: preparing, wait until the Connect pods' rolling restart has "
        "finished (kubectl get pods -n repl-us-west-us-east --watch), then deploy exactlyOnce: enabled"]
    # Nothing deployed before, or a flow the previous outputs do not know: a new flow may start enabled.
    assert rules.check_transitions(model, None) == []
    assert rules.check_transitions(model, {"another": {"exactlyOnce": "disabled"}}) == []
