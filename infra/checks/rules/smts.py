"""Single message transforms on MirrorMaker 2's connectors: which keep the record's topic, which
rename it (and break the replication policy), and the checks on a flow's SMT chain."""

from __future__ import annotations

import re
from collections.abc import Mapping

from infra.checks.rules.flows import _unique
from infra.checks.rules.secrets import secret_named
from infra.core.errors import Problem
from infra.core.names import LOOP_FILTER_TRANSFORM, LOOP_HEADER_TRANSFORM, LOOP_PREDICATE
from infra.filters import jregex
from infra.topology.resolution import SourceSpec
from infra.topology.schema import Flow

# Set by the typed fields, not as raw properties.
SMT_PREFIXES = ("transforms.", "predicates.")


# SMTs and the record's topic. The replication policy maps source topics to target topics by
# name, and offset syncs, checkpoints and loop detection rely on that mapping, so a transform
# must keep the topic. Decided by what a transform does: Kafka's own transforms that only touch
# keys, values, headers or schemas (and the CSM converters of the documents) keep it; routers
# (Kafka's, other vendors', and any class named like one) change it; any other class is refused
# until its user states `keepsTopic: true` (fail closed: we cannot read its code). The policy
# pack refuses the renaming ones on any KafkaConnector (infra/checks/policies.py).
TOPIC_KEEPING_SMTS = frozenset({
    *(f"org.apache.kafka.connect.transforms.{name}" for name in (
        "Cast", "DropHeaders", "ExtractField", "Filter", "Flatten", "HeaderFrom", "HoistField", "InsertField",
        "InsertHeader", "MaskField", "ReplaceField", "SetSchemaMetadata", "TimestampConverter", "ValueToKey")),
    "com.cloudera.dim.kafka.connect.transforms.ConvertFromBytes",
    "com.cloudera.dim.kafka.connect.transforms.ConvertToBytes",
})


TOPIC_RENAMING_SMTS = frozenset({
    "org.apache.kafka.connect.transforms.RegexRouter",
    "org.apache.kafka.connect.transforms.TimestampRouter",
    "io.confluent.connect.transforms.MessageTimestampRouter",
    "io.confluent.connect.transforms.ExtractTopic",
    "io.confluent.connect.cloud.transforms.TopicRegexRouter",
    "io.aiven.kafka.connect.transforms.ExtractTopic",
    "io.aiven.kafka.connect.transforms.ExtractTopicFromSchemaName",
    "io.debezium.transforms.ByLogicalTableRouter",
    "io.debezium.transforms.outbox.EventRouter",
    "io.debezium.transforms.partitions.PartitionRouting",
})


# Simple class names that say a transform routes records: refused as renaming whatever the package.
ROUTER_NAME = re.compile(r"(Router|Routing|Route|Topic)", re.IGNORECASE)


# What is allowed instead of a renaming transform, in the topology's report and the pack's.
TOPIC_KEEPING = ("an SMT that keeps the record's topic: topic-renaming transforms break the replication policy "
                 "(target topic names, offset syncs, checkpoints and loop detection all derive from the source "
                 "topic name)")


def renames_topic(transform_type: str) -> bool:
    """Whether a transform of this class (as `type` names it, `$Key`/`$Value` included) changes
    the record's topic: a known router, or a class not known to keep it named like one."""
    base = transform_type.split("$")[0]
    return base in TOPIC_RENAMING_SMTS or (
        base not in TOPIC_KEEPING_SMTS and ROUTER_NAME.search(base.rsplit(".", 1)[-1]) is not None)


def keeps_topic(transform_type: str) -> bool:
    """Whether a transform of this class is known to keep the record's topic."""
    return transform_type.split("$")[0] in TOPIC_KEEPING_SMTS


# Predicates of Kafka and the property each one needs.
PREDICATE_REQUIRED = {
    "org.apache.kafka.connect.transforms.predicates.TopicNameMatches": "pattern",
    "org.apache.kafka.connect.transforms.predicates.HasHeaderKey": "name",
}


SMT_FIELDS = ("type", "predicate", "negate", "keepsTopic")


def _check_smts(where: str, flow: Flow, spec: SourceSpec) -> list[Problem]:
    problems = []
    at = "" if spec.where in ("topics", "(flow)") or spec.name is None else f"{spec.where}."
    names_ = [t.name for t in spec.transforms]
    problems += _unique(where, [(f"{at}transforms[{i}].name", n) for i, n in enumerate(names_)])
    problems += _unique(where, [(f"{at}predicates[{i}].name", p.name) for i, p in enumerate(spec.predicates)])
    declared = {p.name for p in spec.predicates}
    if flow.bidirectional:
        reserved = {LOOP_FILTER_TRANSFORM, LOOP_HEADER_TRANSFORM}
        for i, t in enumerate(spec.transforms):
            if t.name in reserved:
                problems.append(Problem(where, f"{at}transforms[{i}].name", t.name,
                                        f"another name: {', '.join(sorted(reserved))} are the loop filter's "
                                        "transforms in a bidirectional pair"))
        for i, p in enumerate(spec.predicates):
            if p.name == LOOP_PREDICATE:
                problems.append(Problem(where, f"{at}predicates[{i}].name", p.name,
                                        f"another name: {LOOP_PREDICATE} is the loop filter's predicate"))
    for i, t in enumerate(spec.transforms):
        if renames_topic(t.type):
            problems.append(Problem(where, f"{at}transforms[{i}].type", t.type, TOPIC_KEEPING))
        elif not keeps_topic(t.type) and not t.keepsTopic:
            problems.append(Problem(where, f"{at}transforms[{i}].type", t.type,
                                    "a transform known to keep the record's topic (Kafka's own field, header and "
                                    "schema transforms): the program cannot tell what this class does. If it never "
                                    "changes the record's topic, say so with `keepsTopic: true` on this transform"))
        if t.predicate and t.predicate not in declared:
            problems.append(Problem(where, f"{at}transforms[{i}].predicate", t.predicate,
                                    f"a predicate declared under predicates: {', '.join(sorted(declared)) or 'none'}"))
        if t.negate and not t.predicate:
            problems.append(Problem(where, f"{at}transforms[{i}].negate", True, "a `predicate` to negate"))
        problems += _check_smt_config(where, f"{at}transforms[{i}].config", t.config)
    for i, p in enumerate(spec.predicates):
        problems += _check_smt_config(where, f"{at}predicates[{i}].config", p.config)
        required = PREDICATE_REQUIRED.get(p.type)
        if required and required not in p.config:
            problems.append(Problem(where, f"{at}predicates[{i}].config.{required}", None,
                                    f"a value: {p.type.rsplit('.', 1)[-1]} needs `{required}`"))
        if required == "pattern" and required in p.config:
            # TopicNameMatches compiles it with java.util.regex. No guardrail reasons about it,
            # so constructs the automata cannot model (lookarounds...) are fine here.
            try:
                jregex.parse(str(p.config["pattern"]))
            except jregex.RegexError as exc:
                problems.append(Problem(where, f"{at}predicates[{i}].config.pattern", p.config["pattern"],
                                        f"a valid Java regex ({exc})"))
            except jregex.Unsupported:
                pass
    for conv_name in ("key", "value"):
        conv = getattr(spec.converters, conv_name, None) if spec.converters else None
        if conv:
            problems += _check_smt_config(where, f"{at}converters.{conv_name}.config", conv.config)
    return problems


def _check_smt_config(where: str, field: str, config: Mapping[str, object]) -> list[Problem]:
    problems = []
    for key in sorted(config):
        if key in SMT_FIELDS:
            problems.append(Problem(where, f"{field}.{key}", key, f"the `{key}` field beside `config`"))
        elif secret_named(key):
            problems.append(Problem(where, f"{field}.{key}", key, "no secrets in connector config"))
    return problems
