"""What the program owns is what its generators write (infra/plan/connectors.py): every owned key a
connector is planned with, set by a user in that connector kind's `config`, is refused with its
exact message, on every supported release and flow variant; every documented default may be
set, and the user's value wins."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from infra.checks import validation
from infra.plan.connectors import ConnectorKind, Ownership, ProgramConfig
from infra.plan.stack import plan
from infra.plan.types import StackPlan
from tests.support.refusals import problems
from tests.support.stacks import RELEASES, doc_topology, on_release

PEM_SASL = {"protocol": "SASL_SSL", "sasl": {"mechanism": "PLAIN", "username": "u"}, "tls": {"trust": "pem"}}
SOURCE_SECURITY = [
    PEM_SASL,
    {"protocol": "SASL_SSL", "sasl": {"mechanism": "SCRAM-SHA-512", "username": "u"}, "tls": {"trust": "jks"}},
    {"protocol": "SSL", "tls": {"trust": "pkcs12", "clientCertificate": True}},
    {"protocol": "PLAINTEXT"},
]
OWNED = ("a property the program does not set itself (topics, groups, policy and cluster connections come from "
         "the flow)")
TYPED_SMTS = "the typed `transforms` and `predicates` lists (docs/topology.md#single-message-transforms)"
TYPED_CONVERTERS = "the typed `converters` field"
TYPED_SYNC = {"sync.topic.configs.enabled": "syncTopicConfigs", "config.properties.exclude": "syncTopicConfigs",
              "config.property.filter.class": "syncTopicConfigs", "sync.topic.configs.interval.seconds": "syncTopicConfigs",
              "sync.topic.acls.enabled": "syncTopicAcls", "sync.topic.acls.interval.seconds": "syncTopicAcls"}
CLIENTS = {
    "source.cluster.": "MirrorMaker 2's clients of the source cluster",
    "target.cluster.": "MirrorMaker 2's clients of the target cluster",
    "producer.override.": "the Connect framework's producer",
    "consumer.override.": "the Connect framework's offsets consumer",
    "admin.override.": "the Connect framework's admin client",
}


def family_message(prefix: str, family: str, kind: str) -> str:
    return (f"no `{prefix}{family}` key in the {kind} connector's config: `{prefix}` configures {CLIENTS[prefix]}, "
            "whose connection (bootstrap.servers, security.protocol, sasl.*, ssl.*) the program derives from the "
            "topology's clusters; a value here would connect it to another cluster or as another principal")


def expected_message(key: str, kind: str) -> str:
    for prefix in sorted(CLIENTS, key=len, reverse=True):
        rest = key[len(prefix):]
        if key.startswith(prefix):
            for family in ("bootstrap.servers", "security.protocol", "sasl.", "ssl."):
                if rest.startswith(family):
                    return family_message(prefix, family + "*" if family.endswith(".") else family, kind)
    if key.startswith(("transforms.", "predicates.")) or key in ("transforms", "predicates"):
        return TYPED_SMTS
    if key.startswith(("key.converter", "value.converter", "header.converter")):
        return TYPED_CONVERTERS
    if kind == "source" and key in TYPED_SYNC:
        return f"the typed `{TYPED_SYNC[key]}` field (docs/topology.md#topic-configuration-and-acl-sync)"
    if kind == "checkpoint" and key.startswith("sync.group.offsets."):
        return "the typed `syncGroupOffsets` field (`enabled`, `intervalSeconds`: docs/topology.md#flows)"
    return OWNED


@st.composite
def variants(draw):
    flavour, version = draw(st.sampled_from(RELEASES))
    kind = draw(st.sampled_from(list(ConnectorKind)))
    bidirectional = kind is not ConnectorKind.checkpoint and draw(st.booleans())
    flow: dict = {"source": "a", "target": "b", "groups": ["g.*"],
                  "exactlyOnce": draw(st.sampled_from(["disabled", "preparing", "enabled"])),
                  "startFrom": draw(st.sampled_from(["earliest", "latest"]))}
    if draw(st.booleans()):
        flow["sources"] = [{"name": "one", "topics": ["x.*"]}, {"name": "two", "topics": ["y.*"]}]
    else:
        flow["topics"] = ["x.*"]
    if bidirectional:
        flow["bidirectional"] = True
    if kind is ConnectorKind.source and draw(st.booleans()):
        flow["transforms"] = [{"name": "mark", "type": "org.apache.kafka.connect.transforms.InsertHeader",
                               "config": {"header": "h", "value.literal": "v"}}]
    source = PEM_SASL if bidirectional else draw(st.sampled_from(SOURCE_SECURITY))
    t = doc_topology(clusters={"a": {"bootstrapServers": "a-kafka:9093", "security": source},
                               "b": {"bootstrapServers": "b-kafka:9093", "security": PEM_SASL}},
                     flows=[flow])
    return on_release(t, flavour, version), kind


def programs(stack: StackPlan, kind: ConnectorKind) -> list[ProgramConfig]:
    found = [c.program for f in stack.flows for p in f.parts for c in p.connectors if c.kind is kind]
    assert all(found) and found, f"no {kind.value} connector planned"
    return [p for p in found if p is not None]


def with_config(t: dict, kind: ConnectorKind, config: dict) -> dict:
    t = copy.deepcopy(t)
    t["flows"][0]["config"] = {kind.value: config}
    return t


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(variants())
def test_every_owned_key_the_plan_writes_is_refused_and_every_default_wins(variant):
    t, kind = variant
    planned = programs(plan(validation.parse(t)), kind)
    owned = sorted({k for p in planned for k in p.config if p.ownership[k] is Ownership.owned})
    assert owned, "every connector writes owned keys"
    where = f"flows[0] ({validation.parse(t).topology.flows[0].flow_name})"
    found = problems(with_config(t, kind, {k: "x" for k in owned}))
    assert found == [f"{where}: config.{kind.value}.{k}: got '{k}'; expected {expected_message(k, kind.value)}"
                     for k in owned]
    for key in sorted({k for p in planned for k in p.defaults}):
        changed = [c.config for f in plan(validation.parse(with_config(t, kind, {key: 7}))).flows
                   for p in f.parts for c in p.connectors if c.kind is kind]
        assert changed and all(c[key] == 7 for c in changed)


# ------------------------------------------------------------------ the examples of issue 22


def test_heartbeat_consumer_override_connection_is_refused_without_exactly_once():
    t = doc_topology()
    t["flows"][0]["config"] = {"heartbeat": {"consumer.override.bootstrap.servers": "evil:9092",
                                             "consumer.override.sasl.jaas.config": "x"}}
    assert problems(t) == [
        "flows[0] (repl-us-west-us-east): config.heartbeat.consumer.override.bootstrap.servers: got "
        f"'consumer.override.bootstrap.servers'; expected "
        f"{family_message('consumer.override.', 'bootstrap.servers', 'heartbeat')}",
        "flows[0] (repl-us-west-us-east): config.heartbeat.consumer.override.sasl.jaas.config: got "
        f"'consumer.override.sasl.jaas.config'; expected {family_message('consumer.override.', 'sasl.*', 'heartbeat')}",
    ]


def test_mirrormaker_client_prefixes_are_connection_owned_too():
    t = doc_topology()
    t["flows"][0]["config"] = {"source": {"source.consumer.bootstrap.servers": "evil:9092",
                                          "consumer.ssl.truststore.location": "/x",
                                          "source.consumer.max.poll.records": 10}}
    assert problems(t) == [
        "flows[0] (repl-us-west-us-east): config.source.consumer.ssl.truststore.location: got "
        "'consumer.ssl.truststore.location'; expected no `consumer.ssl.*` key in the source connector's config: "
        "`consumer.` configures MirrorMaker 2's consumers, whose connection (bootstrap.servers, security.protocol, "
        "sasl.*, ssl.*) the program derives from the topology's clusters; a value here would connect it to another "
        "cluster or as another principal",
        "flows[0] (repl-us-west-us-east): config.source.source.consumer.bootstrap.servers: got "
        "'source.consumer.bootstrap.servers'; expected no `source.consumer.bootstrap.servers` key in the source "
        "connector's config: `source.consumer.` configures MirrorMaker 2's source consumer, whose connection "
        "(bootstrap.servers, security.protocol, sasl.*, ssl.*) the program derives from the topology's clusters; a "
        "value here would connect it to another cluster or as another principal",
    ]


def test_heartbeats_replication_is_owned_where_the_release_has_the_key():
    for flavour, version, refused in (("strimzi", "0.48.0", True), ("csm", "1.2", False)):
        t = on_release(doc_topology(), flavour, version)
        t["flows"][0]["config"] = {"source": {"heartbeats.replication.enabled": False}}
        if refused:
            assert problems(t) == [
                "flows[0] (repl-us-west-us-east): config.source.heartbeats.replication.enabled: got "
                f"'heartbeats.replication.enabled'; expected {OWNED}"]
        else:
            validation.parse(t)


def test_sync_settings_have_their_typed_field_and_refresh_intervals_are_defaults():
    t = doc_topology()
    t["flows"][0]["config"] = {"checkpoint": {"sync.group.offsets.interval.seconds": 5,
                                              "refresh.groups.interval.seconds": 30}}
    assert problems(t) == [
        "flows[0] (repl-us-west-us-east): config.checkpoint.sync.group.offsets.interval.seconds: got "
        "'sync.group.offsets.interval.seconds'; expected the typed `syncGroupOffsets` field (`enabled`, "
        "`intervalSeconds`: docs/topology.md#flows)"]
    del t["flows"][0]["config"]["checkpoint"]["sync.group.offsets.interval.seconds"]
    checkpoint = [c for f in plan(validation.parse(t)).flows for p in f.parts for c in p.connectors
                  if c.kind is ConnectorKind.checkpoint]
    assert [c.config["refresh.groups.interval.seconds"] for c in checkpoint] == [30]


@pytest.mark.parametrize(("kind", "key", "lists"), [
    ("source", "topic.filter.class", "topics"), ("checkpoint", "topic.filter.class", "topics"),
    ("checkpoint", "group.filter.class", "groups"), ("heartbeat", "group.filter.class", "groups"),
])
def test_a_custom_topic_or_group_filter_class_is_refused(kind, key, lists):
    """A filter class decides the flow's topics or groups in place of its typed lists, so every
    guardrail on them would decide nothing."""
    t = doc_topology()
    t["flows"][0]["config"] = {kind: {key: "com.example.EverythingFilter"}}
    assert problems(t) == [
        f"flows[0] (repl-us-west-us-east): config.{kind}.{key}: got '{key}'; expected the flow's typed `{lists}` and "
        f"its exclude list: MirrorMaker 2's default filter reads them, and another class would choose the flow's "
        f"{lists} itself, past every guardrail on them (docs/guardrails.md)"]
