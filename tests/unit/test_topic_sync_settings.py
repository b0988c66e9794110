"""Topic configuration and ACL sync as settings of a flow (docs/topology.md#topic-configuration-and-acl-sync):
what the source connector is given, and what is refused. tests/runtime/test_topic_sync_on_kafka.py runs
them on real Kafka."""

from __future__ import annotations

import pytest

from tests.support.refusals import accepted, problems
from tests.support.stacks import doc_topology, render_topology

EXCLUDES = ("follower\\.replication\\.throttled\\.replicas,leader\\.replication\\.throttled\\.replicas,"
            "message\\.timestamp\\.difference\\.max\\.ms,log\\.message\\.timestamp\\.before\\.max\\.ms,"
            "log\\.message\\.timestamp\\.after\\.max\\.ms,message\\.timestamp\\.type,"
            "unclean\\.leader\\.election\\.enable,min\\.insync\\.replicas")
SYNC_KEYS = ("sync.topic.configs.enabled", "config.properties.exclude", "sync.topic.configs.interval.seconds",
             "sync.topic.acls.enabled", "sync.topic.acls.interval.seconds")


def source_config(tmp_path, topology: dict) -> dict:
    objects = render_topology(tmp_path, topology).objects()
    (source,) = [o for o in objects if o["kind"] == "KafkaConnector" and o["metadata"]["name"].endswith("-source")]
    return {k: v for k, v in source["spec"]["config"].items() if k in SYNC_KEYS}


def test_defaults_are_written_out(tmp_path):
    """Topic configs synced with MirrorMaker 2's exclusions (the union of every supported line's),
    ACLs not: both said in the connector, whatever Kafka's defaults."""
    assert source_config(tmp_path, doc_topology()) == {
        "sync.topic.configs.enabled": True, "config.properties.exclude": EXCLUDES, "sync.topic.acls.enabled": False}


def test_the_flow_s_settings_reach_the_source_connector(tmp_path):
    t = doc_topology()
    t["flows"][0]["syncTopicConfigs"] = {"exclude": ["retention\\.ms", "cleanup\\..*"], "intervalSeconds": 30}
    t["flows"][0]["syncTopicAcls"] = {"enabled": True, "intervalSeconds": 60}
    assert source_config(tmp_path, t) == {
        "sync.topic.configs.enabled": True, "config.properties.exclude": EXCLUDES + ",retention\\.ms,cleanup\\..*",
        "sync.topic.configs.interval.seconds": 30, "sync.topic.acls.enabled": True,
        "sync.topic.acls.interval.seconds": 60}
    t["flows"][0]["syncTopicConfigs"] = {"enabled": False}
    assert source_config(tmp_path, t)["sync.topic.configs.enabled"] is False


@pytest.mark.parametrize("key", ["sync.topic.acls.enabled", "config.properties.exclude", "sync.topic.configs.enabled",
                                 "config.property.filter.class"])
def test_the_keys_are_refused_as_raw_config(key):
    t = doc_topology()
    t["flows"][0]["config"] = {"source": {key: "x"}}
    field = "syncTopicAcls" if "acls" in key else "syncTopicConfigs"
    (problem,) = problems(t)
    assert problem == (f"flows[0] (repl-us-west-us-east): config.source.{key}: got '{key}'; expected the typed "
                       f"`{field}` field (docs/topology.md#topic-configuration-and-acl-sync)")


def test_an_exclusion_kafka_could_not_compile_is_refused():
    t = doc_topology()
    t["flows"][0]["syncTopicConfigs"] = {"exclude": ["retention(\\.ms"], "enabled": "yes please"}
    assert problems(t) == [
        "flows[0] (repl-us-west-us-east): syncTopicConfigs.enabled: got 'yes please'; expected true or false",
        "flows[0] (repl-us-west-us-east): syncTopicConfigs.exclude: got ['retention(\\\\.ms']; expected "
        "'retention(\\\\.ms' is not a valid Java regex (Unclosed group)"]


@pytest.mark.parametrize(("field", "settings", "name", "value"), [
    ("syncTopicConfigs", {"enabled": False, "exclude": ["retention\\.ms"]}, "exclude", ["retention\\.ms"]),
    ("syncTopicConfigs", {"enabled": False, "intervalSeconds": 60}, "intervalSeconds", 60),
    ("syncTopicAcls", {"enabled": False, "intervalSeconds": 60}, "intervalSeconds", 60),
    ("syncGroupOffsets", {"enabled": False, "intervalSeconds": 30}, "intervalSeconds", 30),
])
def test_a_sync_setting_that_nothing_reads_is_refused(field, settings, name, value):
    """A sync switched off with its interval or exclusions still set: MirrorMaker 2 reads neither,
    so the file would say something the flow does not do."""
    t = doc_topology()
    t["flows"][0][field] = settings
    assert problems(t) == [
        f"flows[0] (repl-us-west-us-east): {field}.{name}: got {value!r}; expected no {name} while {field}.enabled "
        f"is false: MirrorMaker 2 reads it only with the sync on (remove it, or set {field}.enabled: true)"]
    t["flows"][0][field] = {**settings, "enabled": True}
    accepted(t)


def test_acknowledging_replayed_history_on_a_default_policy_flow_is_refused():
    t = doc_topology()
    t["flows"][0]["acknowledgeReplayedHistory"] = True
    assert problems(t) == [
        "flows[0] (repl-us-west-us-east): acknowledgeReplayedHistory: got True; expected false (or absent) on a "
        "default-policy flow: it acknowledges an identity failback's copy of history into same-named topics, which "
        "this flow's prefixed remote topics never make"]


@pytest.mark.parametrize(("kind", "key", "typed"), [
    ("source", "scheduled.rebalance.max.delay.ms", " (the rebalance delay is `connect.rebalanceDelaySeconds`)"),
    ("checkpoint", "offset.flush.interval.ms", ""),
    ("heartbeat", "group.id", ""),
])
def test_a_worker_setting_in_a_connector_config_is_refused(kind, key, typed):
    t = doc_topology()
    t["flows"][0]["config"] = {kind: {key: "1000"}}
    assert problems(t) == [
        f"flows[0] (repl-us-west-us-east): config.{kind}.{key}: got '{key}'; expected a connector setting: `{key}` is "
        f"the Connect worker's, which a connector's config does not read: here it would do nothing{typed}"]


def test_an_exclusion_with_a_lookaround_java_compiles_is_accepted(tmp_path):
    """No guardrail reads the property exclusions, so a construct the topic automata cannot model
    is fine there when Java compiles it (tests/conformance/test_jregex.py holds the verdicts to the
    JDK); a construct the parser does not read (inline flags) is still refused, never guessed."""
    t = doc_topology()
    t["flows"][0]["syncTopicConfigs"] = {"exclude": ["(?!retention\\.).*\\.ms", "(?<=segment\\.)bytes"]}
    assert source_config(tmp_path, t)["config.properties.exclude"] == \
        EXCLUDES + ",(?!retention\\.).*\\.ms,(?<=segment\\.)bytes"
    t["flows"][0]["syncTopicConfigs"] = {"exclude": ["(?=seg", "(?i)retention"]}
    assert problems(t) == [
        "flows[0] (repl-us-west-us-east): syncTopicConfigs.exclude: got ['(?=seg', '(?i)retention']; expected "
        "'(?=seg' is not a valid Java regex (Unclosed group); "
        "'(?i)retention' uses inline flags (?i...), which the topology checks cannot read; rewrite it without that "
        "construct"]
