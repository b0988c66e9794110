"""Every guardrail (docs/guardrails.md) triggered, with the exact message it prints."""

from __future__ import annotations

import pytest

from infra.checks import validation
from infra.topology import schema
from tests.support import patterns
from tests.support.refusals import accepted, problems
from tests.support.stacks import on_release
from tests.support.topologies import PEM_SASL, among as topo

# ------------------------------------------------------------------ aliases


def test_two_aliases_for_the_same_bootstrap_servers():
    t = topo({"source": "a", "target": "b", "topics": "x"})
    t["clusters"]["c"]["bootstrapServers"] = "c-kafka:9093,A-KAFKA:9093"
    assert problems(t) == [
        "clusters.c: bootstrapServers: got 'A-KAFKA:9093'; expected servers of this cluster only: A-KAFKA:9093 is "
        "also a bootstrap server of cluster a; one Kafka cluster must have exactly one alias"]


# ------------------------------------------------------------------ policies


def test_chained_flows_with_different_policies_that_share_topics():
    t = topo({"source": "a", "target": "b", "topics": "orders.*"},
             {"source": "b", "target": "c", "topics": ".*", "replicationPolicy": "identity"})
    assert problems(t) == [
        "flows[1] (repl-b-c): replicationPolicy: got 'identity'; expected default, the policy of flow repl-a-b, "
        "which writes topic 'a.orders' into b where this flow reads it: flows that chain must use one policy "
        "(or filters that keep them apart)"]


def test_chained_flows_with_different_policies_but_disjoint_topics_are_fine():
    accepted(topo({"source": "a", "target": "b", "topics": "orders.*"},
                  {"source": "b", "target": "c", "topics": "local\\..*", "replicationPolicy": "identity",
                   "topicsExclude": ".*heartbeats"}))


def test_chained_flows_with_one_policy_are_fine():
    accepted(topo({"source": "a", "target": "b", "topics": ".*"}, {"source": "b", "target": "c", "topics": ".*"}))


# ------------------------------------------------------------------ loops


def test_identity_cycle_that_would_circulate_topics():
    t = topo({"source": "a", "target": "b", "topics": "orders.*", "replicationPolicy": "identity"},
             {"source": "b", "target": "a", "topics": "ord.*", "replicationPolicy": "identity"})
    assert problems(t) == [
        "flows[0] (repl-a-b): replicationPolicy: got 'identity'; expected no cycle of identity flows that replicate "
        "the same topics: a -> b -> a (repl-a-b -> repl-b-a) would replicate topic 'orders' forever. Declare a "
        "bidirectional pair (one flow with `bidirectional: true`, which adds the loop filter) or use the default "
        "policy; to fail back under the identity policy, keep one direction: remove the flow you failed over with, "
        "then deploy its reverse (docs/operations.md)"]


def test_three_cluster_identity_cycle():
    t = topo({"source": "a", "target": "b", "topics": "t.*", "replicationPolicy": "identity"},
             {"source": "b", "target": "c", "topics": "t.*", "replicationPolicy": "identity"},
             {"source": "c", "target": "a", "topics": "t\\.x.*", "replicationPolicy": "identity"})
    assert problems(t) == [
        "flows[0] (repl-a-b): replicationPolicy: got 'identity'; expected no cycle of identity flows that replicate "
        "the same topics: a -> b -> c -> a (repl-a-b -> repl-b-c -> repl-c-a) would replicate topic 't.x' forever. "
        "Declare a bidirectional pair (one flow with `bidirectional: true`, which adds the loop filter) or use the "
        "default policy"]


def test_identity_cycle_over_disjoint_topics_is_fine():
    accepted(topo({"source": "a", "target": "b", "topics": "from-a\\..*", "replicationPolicy": "identity",
                   "topicsExclude": ".*heartbeats"},
                  {"source": "b", "target": "a", "topics": "from-b\\..*", "replicationPolicy": "identity",
                   "topicsExclude": ".*heartbeats"}))


def test_default_policy_cycles_are_fine():
    # DefaultReplicationPolicy sees its own prefix and skips topics that came from the target.
    accepted(topo({"source": "a", "target": "b", "topics": ".*"}, {"source": "b", "target": "a", "topics": ".*"}))


def test_declared_bidirectional_pair_is_not_a_loop():
    topology = accepted(topo({"source": "a", "target": "b", "bidirectional": True, "topics": ".*",
                                   "topicsExclude": ".*heartbeats"}))
    assert [d.name for d in topology.flows] == ["repl-a-b", "repl-b-a"]


def test_bidirectional_pair_plus_another_identity_flow_is_a_loop():
    t = topo({"source": "a", "target": "b", "bidirectional": True, "topics": "shared.*"},
             {"source": "b", "target": "a", "name": "extra", "topics": "shared\\.x", "replicationPolicy": "identity"})
    assert problems(t) == [
        "flows[0] (repl-a-b: repl-b-a): topics: got ['shared.*']; expected target topics of its own: flow extra also "
        "writes 'shared.x' into cluster a. Narrow the filters, or declare both flows `aggregation: true` (identity "
        "fan-in) if merging is intended",
        "flows[0] (repl-a-b): replicationPolicy: got 'identity'; expected no cycle of identity flows that "
        "replicate the same topics: a -> b -> a (repl-a-b -> extra) would replicate topic 'shared.x' forever. "
        "Declare a bidirectional pair (one flow with `bidirectional: true`, which adds the loop filter) or use the "
        "default policy"
        "; to fail back under the identity policy, keep one direction: remove the flow you failed over with, then deploy its reverse (docs/operations.md)"]


# ------------------------------------------------------------------ topics


def test_overlapping_source_connectors_of_one_flow():
    t = topo({"source": "a", "target": "b", "sources": [
        {"name": "first", "topics": ["test.*"]}, {"name": "second", "topics": ["te(st|ar)\\..*"]}]})
    assert problems(t) == [
        "flows[0] (repl-a-b): sources[1]: got ['te(st|ar)\\\\..*']; expected a topic filter disjoint from sources[0] "
        "(['test.*']): both match topic 'test.', which would be replicated twice"]


def test_excludes_make_source_connectors_disjoint():
    accepted(topo({"source": "a", "target": "b", "sources": [
        {"name": "all", "topics": [".*"], "topicsExclude": ["critical\\..*"]},
        {"name": "critical", "topics": ["critical\\..*"]}]}))


def test_overlap_across_the_connect_clusters_of_a_split_flow():
    t = topo({"source": "a", "target": "b", "connectClusters": [
        {"name": "small", "topics": ["low.*", "mid.*"]}, {"name": "high", "topics": ["high.*", "middle.*"]}]})
    assert problems(t) == [
        "flows[0] (repl-a-b): connectClusters[0]: got ['low.*', 'mid.*']; expected a topic filter disjoint from "
        "connectClusters[1] (['high.*', 'middle.*']): both match topic 'middle', which would be replicated twice"]


def test_two_identity_flows_writing_the_same_target_topic():
    t = topo({"source": "a", "target": "c", "topics": "orders\\..*", "replicationPolicy": "identity"},
             {"source": "b", "target": "c", "topics": ["orders\\.eu\\..*"], "replicationPolicy": "identity"})
    assert problems(t) == [
        "flows[1] (repl-b-c): topics: got ['orders\\\\.eu\\\\..*']; expected target topics of its own: flow repl-a-c "
        "also writes 'orders.eu.' into cluster c. Narrow the filters, or declare both flows `aggregation: true` "
        "(identity fan-in) if merging is intended"]


def test_declared_aggregation_allows_identity_fan_in():
    accepted(topo({"source": "a", "target": "c", "topics": "orders\\..*", "replicationPolicy": "identity",
                   "aggregation": True, "topicsExclude": ".*heartbeats"},
                  {"source": "b", "target": "c", "topics": "orders\\..*", "replicationPolicy": "identity",
                   "aggregation": True, "topicsExclude": ".*heartbeats"}))


def test_identity_flow_colliding_with_a_prefixed_one():
    t = topo({"source": "a", "target": "c", "topics": "orders"},
             {"source": "b", "target": "c", "topics": "a\\..*", "replicationPolicy": "identity"})
    assert problems(t)[0].startswith(
        "flows[1] (repl-b-c): topics: got ['a\\\\..*']; expected target topics of its own: flow repl-a-c also "
        "writes 'a.orders' into cluster c.")


def test_prefixed_flows_from_different_sources_never_collide():
    accepted(topo({"source": "a", "target": "c", "topics": ".*"}, {"source": "b", "target": "c", "topics": ".*"}))


def test_two_flows_of_one_pair_with_overlapping_topics():
    t = topo({"source": "a", "target": "b", "topics": "x.*"},
             {"source": "a", "target": "b", "name": "more", "topics": "xy.*"})
    assert problems(t) == [
        "flows[0] (repl-a-b): topics: got ['x.*']; expected target topics of its own: flow more also writes 'a.xy' "
        "into cluster b. Narrow the filters, or declare both flows `aggregation: true` (identity fan-in) if merging "
        "is intended"]


def test_filters_the_automata_cannot_model_are_refused_by_name():
    t = topo({"source": "a", "target": "b", "sources": [
        {"name": "one", "topics": ["(?!x).*"]}, {"name": "two", "topics": ["x.*", "(?i)y"]}]})
    assert problems(t) == [
        "flows[0] (repl-a-b): sources[0].topics: got ['(?!x).*']; expected '(?!x).*' uses a lookahead (?!...), "
        "which the topology checks cannot model exactly; rewrite it without that construct",
        "flows[0] (repl-a-b): sources[1].topics: got ['x.*', '(?i)y']; expected '(?i)y' uses inline flags (?i...), "
        "which the topology checks cannot model exactly; rewrite it without that construct"]


EXPLODING = "(a|b)*a(a|b){15}"  # its deterministic automaton has 2^16 states


def test_a_rule_that_cannot_decide_within_its_budget_refuses():
    t = topo({"source": "a", "target": "b", "topics": EXPLODING, "replicationPolicy": "identity"},
             {"source": "b", "target": "a", "topics": "b.*", "replicationPolicy": "identity"})
    assert problems(t) == [
        "flows[0] (repl-a-b): topics: got ['(a|b)*a(a|b){15}', 'b.*']; expected filters whose identity path "
        "a -> b -> a (a possible replication loop) can be decided: it needs more than 20000 automaton states. "
        "Simplify the filters (literal names or prefixes such as `orders\\..*` rather than nested repetitions "
        "such as `(a|b)*a(a|b){15}`), or set `acknowledgeUndecidedFilters: true` on this flow to deploy "
        "without this check"]


def test_an_acknowledged_undecided_rule_is_a_warning():
    t = topo({"source": "a", "target": "b", "topics": EXPLODING, "replicationPolicy": "identity",
              "acknowledgeUndecidedFilters": True},
             {"source": "b", "target": "a", "topics": "b.*", "replicationPolicy": "identity",
              "topicsExclude": ".*heartbeats"})
    assert list(validation.parse(t).warnings) == [
        "flows[0] (repl-a-b): identity path a -> b -> a (a possible replication loop) was not checked (more than "
        "20000 automaton states; acknowledged by acknowledgeUndecidedFilters): check it by hand",
        "flows[0] (repl-a-b): whether this identity flow replicates topics ending in 'heartbeats' was not checked "
        "(more than 20000 automaton states)"]


def test_java_dialect_decides_loops_python_would_miss():
    # `[[o]]` is a nested class and `\0157` octal 'o' in Java: both filters match `orders`.
    for pattern in ("[[o]]rders", "\\0157rders", "[]o]rders"):
        t = topo({"source": "a", "target": "b", "topics": pattern, "replicationPolicy": "identity"},
                 {"source": "b", "target": "a", "topics": "orders", "replicationPolicy": "identity"})
        assert problems(t) == [
            "flows[0] (repl-a-b): replicationPolicy: got 'identity'; expected no cycle of identity flows that "
            "replicate the same topics: a -> b -> a (repl-a-b -> repl-b-a) would replicate topic 'orders' forever. "
            "Declare a bidirectional pair (one flow with `bidirectional: true`, which adds the loop filter) or use "
            "the default policy"
            "; to fail back under the identity policy, keep one direction: remove the flow you failed over with, then deploy its reverse (docs/operations.md)"], pattern


def test_identity_flows_that_match_topics_ending_in_heartbeats_are_warned_about():
    t = validation.parse(topo({"source": "a", "target": "b", "topics": ["device-.*", "orders"],
                          "replicationPolicy": "identity"},
                         {"source": "a", "target": "c", "topics": "device-.*", "replicationPolicy": "identity",
                          "topicsExclude": ".*heartbeats"}))
    assert list(t.warnings) == [
        "flows[0] (repl-a-b): topics such as 'device-heartbeats' match this identity flow and end in 'heartbeats': "
        "IdentityReplicationPolicy takes them for heartbeat topics and writes them to b as 'a.device-heartbeats', "
        "not under their own name. Exclude them (topicsExclude: '.*heartbeats'; MirrorMaker 2 replicates its own heartbeats topics whatever the "
        "filter) or rename them"]


def test_aggregation_only_declares_identity_fan_in():
    t = topo({"source": "a", "target": "c", "topics": "x.*", "aggregation": True},
             {"source": "b", "target": "c", "topics": "x.*", "aggregation": True, "replicationPolicy": "identity"})
    assert problems(t) == [
        "flows[0] (repl-a-c): aggregation: got True; expected false (or unset): aggregation declares an identity "
        "fan-in (replicationPolicy: identity); this flow uses the default policy"]


def test_aggregation_does_not_hide_a_collision_of_one_source():
    t = topo({"source": "a", "target": "c", "name": "one", "topics": "x.*", "aggregation": True,
              "replicationPolicy": "identity"},
             {"source": "a", "target": "c", "name": "two", "topics": "x1", "aggregation": True,
              "replicationPolicy": "identity"})
    assert problems(t)[-1] == (
        "flows[1] (two): topics: got ['x1']; expected target topics of its own: flow one also writes 'x1' into "
        "cluster c. Narrow the filters, or declare both flows `aggregation: true` (identity fan-in) if merging "
        "is intended")


def test_one_broker_spelled_two_ways_is_one_cluster():
    t = topo({"source": "a", "target": "b", "topics": "x"})
    t["clusters"]["b"]["bootstrapServers"] = "A.Kafka.Example.:09093"
    t["clusters"]["a"]["bootstrapServers"] = "a.kafka.example:9093"
    assert problems(t)[0].startswith("clusters.b: bootstrapServers: got 'A.Kafka.Example.:09093'; expected servers "
                                     "of this cluster only")


def test_per_source_excludes_count_across_flows():
    # Source one keeps x.* but x1; source two keeps x1 only: together they cover x1, which the
    # second flow also writes.
    t = topo({"source": "a", "target": "c", "name": "one", "replicationPolicy": "identity", "sources": [
                 {"name": "s1", "topics": "x.*", "topicsExclude": "x1"}, {"name": "s2", "topics": "x1"}]},
             {"source": "b", "target": "c", "name": "two", "replicationPolicy": "identity", "topics": "x1"})
    assert problems(t)[-1].startswith("flows[1] (two): topics: got ['x1']; expected target topics of its own: "
                                      "flow one also writes 'x1' into cluster c")


def test_identity_flows_never_write_a_connect_storage_topic_of_their_target():
    t = validation.parse(topo({"source": "a", "target": "b", "topics": "x.*", "replicationPolicy": "identity"},
                         {"source": "c", "target": "b", "name": "other", "topics": "t"}))
    flow = next(d for d in t.flows if d.name == "repl-a-b")
    assert flow.parts[0].sources[0].topics_exclude == (
        "other-config-topic", "other-offsets-topic", "other-status-topic",
        "repl-a-b-config-topic", "repl-a-b-offsets-topic", "repl-a-b-status-topic")


# ------------------------------------------------------------------ names


def test_connect_names_unique_per_target_cluster():
    t = topo({"source": "a", "target": "b", "name": "x", "connectClusters": [{"name": "y", "topics": "t1"}]},
             {"source": "c", "target": "b", "name": "x-y", "topics": "t2"})
    found = problems(t)
    assert found[0] == ("flows[1] (x-y): name: got 'x-y'; expected a name whose namespace is not also used by "
                        "flows[0] (x)")
    assert ("flows[1] (x-y): name: got 'x-y'; expected names that do not collide on cluster b: Connect group id "
            "'x-y-consumer-group' is also used by flows[0] (x)") in found
    assert len(found) == 1 + 4 + 3  # namespace, group id + 3 storage topics, 3 connectors


def test_flow_and_part_names_are_dns_labels_within_limits():
    t = topo({"source": "a", "target": "b", "name": "a" * 35, "connectClusters": [
        {"name": "Bad_Part", "topics": "x"}, {"name": "longer", "topics": "y"}]})
    assert problems(t) == [
        "flows[0] (aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa): connectClusters[0].name: got 'Bad_Part'; expected lowercase "
        "letters, digits and '-' (DNS-1123), starting and ending alphanumeric (at most 30 characters)"]
    t["flows"][0]["connectClusters"][0]["name"] = "small"
    assert problems(t) == [
        "flows[0] (aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa): connectClusters[1].name: got 'longer'; expected a shorter "
        "name: the Connect cluster and namespace `aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-longer` must be at most 40 "
        "characters",
        "flows[0] (aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa): connectClusters[0].name: got 'small'; expected a shorter "
        "name: the Connect cluster and namespace `aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-small` must be at most 40 "
        "characters"]


def test_shape_of_a_flow():
    t = topo({"source": "a", "target": "b", "topics": "x", "sources": [{"name": "s", "topics": "y"}]},
             {"source": "a", "target": "c"},
             {"source": "b", "target": "c", "sources": [{"name": "s", "topics": "y"}, {"name": "s", "topics": "z"}],
              "topicsExclude": ["q"]},
             {"source": "c", "target": "a", "connectClusters": [{"name": "p", "topics": "x",
                                                                 "sources": [{"name": "s", "topics": "y"}]}]})
    assert problems(t) == [
        "flows[0] (repl-a-b): topics / sources: got 'topics, sources'; expected exactly one of `topics` (one "
        "MirrorSourceConnector), `sources` (several) or `connectClusters` (the flow split over several Connect "
        "clusters)",
        "flows[1] (repl-a-c): topics: missing; expected exactly one of `topics` (one MirrorSourceConnector), "
        "`sources` (several) or `connectClusters` (the flow split over several Connect clusters)",
        "flows[2] (repl-b-c): topicsExclude: got ['q']; expected topicsExclude next to the `topics` it narrows (in "
        "`sources[]` or `connectClusters[]`)",
        "flows[2] (repl-b-c): sources[1].name: got 's'; expected a name not used by another entry of the list",
        "flows[3] (repl-c-a): connectClusters[0]: got 'p'; expected exactly one of `topics` or `sources` in each "
        "Connect cluster"]


def test_tasks_max_at_least_one():
    t = topo({"source": "a", "target": "b", "sources": [{"name": "s", "topics": "y", "tasksMax": 0}],
              "tasksMax": {"checkpoint": 0}})
    assert problems(t) == [
        "flows[0] (repl-a-b): sources[0].tasksMax: got 0; expected an integer from 1 to 2147483647",
        "flows[0] (repl-a-b): tasksMax.checkpoint: got 0; expected an integer from 1 to 2147483647"]


# ------------------------------------------------------------------ bidirectional


def test_bidirectional_pair_refuses_prefixes_checkpoints_and_aggregation():
    t = topo({"source": "a", "target": "b", "bidirectional": True, "topics": "x", "replicationPolicy": "default",
              "checkpoints": True, "aggregation": True})
    assert problems(t) == [
        "flows[0] (repl-a-b): replicationPolicy: got 'default'; expected identity (or unset) for a bidirectional "
        "pair; prefixed replication both ways is two ordinary flows, whose DefaultReplicationPolicy detects loops "
        "by itself",
        "flows[0] (repl-a-b): checkpoints: got True; expected false (or unset): checkpointing and group offset sync "
        "do not work in a bidirectional prefixless setup (the documents)",
        "flows[0] (repl-a-b): aggregation: got True; expected false: a bidirectional pair is not a fan-in"]


def test_bidirectional_pair_reserves_the_loop_filter_names_and_property():
    t = topo({"source": "a", "target": "b", "bidirectional": True, "topics": "x",
              "config": {"source": {"emit.offset-syncs.enabled": True}},
              "transforms": [{"name": "InsertHeader", "type": "org.apache.kafka.connect.transforms.InsertHeader",
                              "config": {"header": "h", "value.literal": "v"}}],
              "predicates": [{"name": "ReplicatedFromTarget",
                              "type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
                              "config": {"name": "h"}}]})
    assert problems(t) == [
        "flows[0] (repl-a-b): config.source.emit.offset-syncs.enabled: got 'emit.offset-syncs.enabled'; expected a "
        "property the program does not set itself (topics, groups, policy and cluster connections come from the "
        "flow)",
        "flows[0] (repl-a-b): transforms[0].name: got 'InsertHeader'; expected another name: "
        "FilterReplicatedFromTarget, InsertHeader are the loop filter's transforms in a bidirectional pair",
        "flows[0] (repl-a-b): predicates[0].name: got 'ReplicatedFromTarget'; expected another name: "
        "ReplicatedFromTarget is the loop filter's predicate"]


def test_bidirectional_pair_takes_no_offset_syncs_settings_where_kafka_refuses_them():
    """Kafka 3.9+ refuses a MirrorSourceConnector with emit.offset-syncs.enabled=false and any
    offset-syncs key (seen on the real worker, tests/runtime/test_replication.py); Kafka 3.8 still emits
    offset syncs in the pair, so the settings stay there."""
    flow = {"source": "a", "target": "b", "bidirectional": True,
            "config": {"source": {"offset-syncs.topic.replication.factor": 1, "offset.lag.max": 0}},
            "sources": [{"name": "more", "topics": "y", "config": {"offset-syncs-source-admin.retries": 3}}]}
    t = on_release(topo(flow), "strimzi", "0.48.0")
    assert problems(t) == [
        "flows[0] (repl-a-b): config.source.offset-syncs.topic.replication.factor: got "
        "'offset-syncs.topic.replication.factor'; expected no offset-syncs settings in a bidirectional pair: its "
        "source connectors emit no offset syncs (emit.offset-syncs.enabled=false), and Kafka 4.1.0 refuses the "
        "connector when any such key is set (MirrorSourceConnector.validate)",
        "flows[0] (repl-a-b): sources[0].config.offset-syncs-source-admin.retries: got "
        "'offset-syncs-source-admin.retries'; expected no offset-syncs settings in a bidirectional pair: its "
        "source connectors emit no offset syncs (emit.offset-syncs.enabled=false), and Kafka 4.1.0 refuses the "
        "connector when any such key is set (MirrorSourceConnector.validate)"]
    accepted(on_release(topo(flow), "csm", "1.2"))
    flow["bidirectional"] = False
    accepted(on_release(topo(flow), "strimzi", "0.48.0"))


def test_bidirectional_pair_needs_pem_trust_on_both_sides():
    t = topo({"source": "a", "target": "b", "bidirectional": True, "topics": "x"})
    t["clusters"]["a"]["security"] = {**PEM_SASL, "tls": {"trust": "jks"}}
    assert problems(t) == [
        "clusters.a: security.tls.trust: got 'jks'; expected pem: the cluster is the target of flow repl-a-b, and "
        "Strimzi's KafkaConnect trusts PEM certificates only (spec.tls.trustedCertificates)"]


# ------------------------------------------------------------------ SMTs


@pytest.mark.parametrize("smt", [
    "org.apache.kafka.connect.transforms.RegexRouter",
    "org.apache.kafka.connect.transforms.TimestampRouter",
    "io.confluent.connect.transforms.ExtractTopic$Value",
    "io.aiven.kafka.connect.transforms.ExtractTopic$Key",
    "com.example.kafka.CustomTopicRouter",  # named like a router: refused whatever its package
])
def test_topic_renaming_smts_are_refused(smt):
    t = topo({"source": "a", "target": "b", "topics": "x", "transforms": [
        {"name": "Route", "type": smt, "config": {"regex": "(.*)", "replacement": "$1-copy"}}]})
    assert problems(t) == [
        f"flows[0] (repl-a-b): transforms[0].type: got '{smt}'; expected an SMT that keeps the record's topic: "
        "topic-renaming transforms break the replication policy (target topic names, offset syncs, checkpoints "
        "and loop detection all derive from the source topic name)"]


def test_a_transform_the_program_does_not_know_needs_the_users_word():
    unknown = {"name": "Mask", "type": "com.example.kafka.Anonymise$Value", "config": {"fields": "email"}}
    t = topo({"source": "a", "target": "b", "topics": "x", "transforms": [unknown]})
    assert problems(t) == [
        "flows[0] (repl-a-b): transforms[0].type: got 'com.example.kafka.Anonymise$Value'; expected a transform "
        "known to keep the record's topic (Kafka's own field, header and schema transforms): the program cannot "
        "tell what this class does. If it never changes the record's topic, say so with `keepsTopic: true` on this "
        "transform"]
    accepted(topo({"source": "a", "target": "b", "topics": "x", "transforms": [{**unknown, "keepsTopic": True}]}))
    # A router stays refused even with the statement.
    router = {"name": "R", "type": "org.apache.kafka.connect.transforms.RegexRouter", "keepsTopic": True}
    assert "expected an SMT that keeps the record's topic" in problems(
        topo({"source": "a", "target": "b", "topics": "x", "transforms": [router]}))[0]


def test_set_schema_metadata_is_fine():
    accepted(topo({"source": "a", "target": "b", "topics": "x", "transforms": [
        {"name": "Schema", "type": "org.apache.kafka.connect.transforms.SetSchemaMetadata$Value",
         "config": {"schema.name": "orders"}}]}))


def test_smt_chain_consistency():
    t = topo({"source": "a", "target": "b", "sources": [{"name": "s", "topics": "x", "transforms": [
        {"name": "A", "type": "x.A", "predicate": "Missing", "keepsTopic": True},
        {"name": "A", "type": "x.B", "negate": True, "config": {"type": "x", "ssl.key.password": "p"},
         "keepsTopic": True}],
        "predicates": [{"name": "P", "type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
                        "config": {"pattern": "a("}},
                       {"name": "Q", "type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey"}]}]})
    assert problems(t) == [
        "flows[0] (repl-a-b): sources[0].transforms[1].name: got 'A'; expected a name not used by another entry of "
        "the list",
        "flows[0] (repl-a-b): sources[0].transforms[0].predicate: got 'Missing'; expected a predicate declared under "
        "predicates: P, Q",
        "flows[0] (repl-a-b): sources[0].transforms[1].negate: got True; expected a `predicate` to negate",
        "flows[0] (repl-a-b): sources[0].transforms[1].config.ssl.key.password: got 'ssl.key.password'; expected no "
        "secrets in connector config",
        "flows[0] (repl-a-b): sources[0].transforms[1].config.type: got 'type'; expected the `type` field beside "
        "`config`",
        "flows[0] (repl-a-b): sources[0].predicates[0].config.pattern: got 'a('; expected a valid Java regex (Unclosed group)",
        "flows[0] (repl-a-b): sources[0].predicates[1].config.name: missing; expected a value: HasHeaderKey needs "
        "`name`"]


def test_raw_smt_and_converter_properties_point_to_the_typed_fields():
    t = topo({"source": "a", "target": "b", "topics": "x",
              "config": {"source": {"transforms": "A", "transforms.A.type": "x", "value.converter": "y"}}})
    assert problems(t) == [
        "flows[0] (repl-a-b): config.source.transforms: got 'transforms'; expected the typed `transforms` and "
        "`predicates` lists (docs/topology.md#single-message-transforms)",
        "flows[0] (repl-a-b): config.source.transforms.A.type: got 'transforms.A.type'; expected the typed "
        "`transforms` and `predicates` lists (docs/topology.md#single-message-transforms)",
        "flows[0] (repl-a-b): config.source.value.converter: got 'value.converter'; expected the typed `converters` "
        "field"]


# ------------------------------------------------------------------ quotas


def test_quota_the_connect_pods_cannot_satisfy():
    t = patterns.split()
    small = t["flows"][0]["connectClusters"][0]
    small["resourceQuota"] = {"hard": {"requests.cpu": "2", "limits.cpu": "10", "requests.memory": "bad",
                                       "pods": "10"}}
    small["connect"]["resources"]["limits"].pop("cpu")
    assert problems(t) == [
        "flows[0] (workload): connectClusters[0].resourceQuota.hard.requests.memory: got 'bad'; expected 'bad' is "
        "not a quantity such as 500m, 2 or 4Gi",
        "flows[0] (workload): connectClusters[0].resourceQuota.hard.limits.cpu: got '10'; expected "
        "connect.resources.limits.cpu set as well: with this quota, pods without a cpu limit are refused by the "
        "API server",
        "flows[0] (workload): connectClusters[0].resourceQuota.hard.requests.cpu: got '2'; expected at least 3 "
        "replicas x 1 = 3 (connect.replicas x connect.resources.requests.cpu)"]


def test_quantities():
    assert schema.quantity("500m") == 0.5 and schema.quantity("4Gi") == 4 * 2**30 and schema.quantity("2") == 2
    assert schema.quantity("1.5G") == 1.5e9
    with pytest.raises(ValueError):
        schema.quantity("4 GB")


def test_too_many_identity_paths_refuse_instead_of_running_for_minutes():
    # A dense web of identity flows (every cluster to every later one, one way back that shares
    # no topic): no loop, but the paths to follow double with every cluster.
    n = 16
    aliases = tuple(f"c{i:02d}" for i in range(n))
    flows = [{"source": aliases[i], "target": aliases[j], "topics": "x.*", "topicsExclude": ".*heartbeats",
              "replicationPolicy": "identity", "aggregation": True, "name": f"f{i}-{j}"}
             for i in range(n) for j in range(i + 1, n)]
    flows.append({"source": aliases[-1], "target": aliases[0], "topics": "y.*", "topicsExclude": ".*heartbeats",
                  "replicationPolicy": "identity", "name": "back"})
    found = problems(topo(*flows, aliases=aliases))
    assert found == [
        "flows[0] (f0-1): topics: got ['x.*']; expected filters whose replication loops among clusters "
        f"{', '.join(aliases)} can be decided: it needs more than 5000 identity paths to follow. Simplify the filters "
        "(literal names or prefixes such as `orders\\..*` rather than nested repetitions such as `(a|b)*a(a|b){15}`), "
        "or set `acknowledgeUndecidedFilters: true` on this flow to deploy without this check"]


@pytest.mark.parametrize("value", ["yes", 1, "on"])
def test_a_checkpoint_switch_kafka_would_refuse_is_refused(value):
    """Read as "off" it would silently take continuous failover away; Kafka's ConfigDef would fail
    the connector (a BOOLEAN: true or false, any case)."""
    t = topo({"source": "a", "target": "b", "topics": "t.*",
              "config": {"checkpoint": {"emit.checkpoints.enabled": value}}})
    assert problems(t) == [
        f"flows[0] (repl-a-b): config.checkpoint.emit.checkpoints.enabled: got {value!r}; expected true or false "
        "(Kafka reads it as a boolean)"]
    t["flows"][0]["config"]["checkpoint"]["emit.checkpoints.enabled"] = "False"
    validation.parse(t)  # any case, as Kafka reads it


def test_quota_keys_beyond_compute_need_an_acknowledgement_and_pods_are_counted():
    """No tier admits a pod or counts the operator's objects: object-count keys are refused unless
    acknowledged; pod counts and the bare compute names are checked against the Connect pods."""
    t = patterns.split()
    small = t["flows"][0]["connectClusters"][0]
    small["resourceQuota"] = {"hard": {"count/pods": "2", "count/secrets": "10", "services": "3", "cpu": "2",
                                       "requests.ephemeral-storage": "1Gi"}}
    assert problems(t) == [
        "flows[0] (workload): connectClusters[0].resourceQuota.hard.count/pods: got '2'; expected at least 3 pods "
        "(connect.replicas): Strimzi's pods beyond the quota are refused",
        "flows[0] (workload): connectClusters[0].resourceQuota.hard.cpu: got '2'; expected at least 3 replicas x 1 = 3 "
        "(connect.replicas x connect.resources.requests.cpu)",
        "flows[0] (workload): connectClusters[0].resourceQuota.hard.requests.ephemeral-storage: got '1Gi'; expected "
        "connect.resources.requests.ephemeral-storage set as well: with this quota, pods without a ephemeral-storage "
        "request are refused by the API server",
        "flows[0] (workload): connectClusters[0].resourceQuota.hard: got 'count/secrets, services'; expected quota "
        "keys the program checks (requests.*, limits.*, cpu, memory, ephemeral-storage, pods, count/pods), or "
        "`resourceQuota.acknowledgeUnchecked: true`: these count objects the operator also creates in the namespace, "
        "which no check here counts, and a quota too small leaves the Connect cluster NotReady"]
    small["resourceQuota"] = {"hard": {"count/pods": "3", "count/secrets": "10", "services": "3", "cpu": "3"},
                              "acknowledgeUnchecked": True}
    from infra.checks import validation
    assert validation.parse(t).flows
