"""Failover and failback as the documents define them, per flow: which procedures the flow's
replication policy and checkpoints allow, how long consumers wait after stopping before they move
(continuous failover), and which topics they subscribe to on the target afterwards. Pure: the
stack outputs (`failover_outputs`) and the guardrails (`problems`) read the model and the plan.

The documents ("Performing a failover or failback", seeds/002):
- continuous and controlled: consumers stop, wait `2 * (emit.checkpoints.interval.seconds +
  sync.group.offsets.interval.seconds)`, then read the prefixed replica and the active topic on
  the target from their synced offsets. DefaultReplicationPolicy only, and it relies on group
  offset sync (the cutoff procedure is the one that "does not rely on group offset syncing");
- controlled with a cutoff: producers stopped, consumers drained, replication caught up; both
  policies (under Identity the groups are reset to the latest offsets on the target);
- on disaster: clients restart on the target with what was replicated and synced until then;
- controlled failback: a failover in reverse, which needs a reverse flow; under Identity only
  after removing this flow (a reversed identity flow beside it is a replication loop, refused by
  the guardrails); progress on prefixed topics is lost.
"""

from __future__ import annotations

from contract.output_types import OutputsFailover
from infra.core import names
from infra.core.errors import Problem
from infra.core.manifests import JSON
from infra.topology.resolution import Direction, Model
from infra.topology.schema import FailoverProcedure, Flow, Policy
from infra.topology.schema.values import INT64, INT64_MIN

# MirrorCheckpointConfig's defaults (apache/kafka connect/mirror, MirrorCheckpointConfig.java at
# 3.8.0, unchanged through 4.x): EMIT_CHECKPOINTS_INTERVAL_SECONDS_DEFAULT = 60,
# SYNC_GROUP_OFFSETS_INTERVAL_SECONDS_DEFAULT = 60.
EMIT_INTERVAL_KEY = "emit.checkpoints.interval.seconds"
EMIT_ENABLED_KEY = "emit.checkpoints.enabled"
DEFAULT_EMIT_SECONDS = 60
DEFAULT_SYNC_SECONDS = 60


# Java's String.trim: code points up to U+0020, no other white space.
_JAVA_TRIMMED = "".join(chr(c) for c in range(0x21))


def kafka_long(value: object) -> int | None:
    """A connector setting as Kafka's ConfigDef reads a LONG (an integer within Java's long, or
    a string `Long.parseLong` takes once trimmed: a sign, then decimal digits, which Java reads
    in any script, `Character.digit`, as Python's int does; '²' is not one); None when Kafka
    would refuse it."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip(_JAVA_TRIMMED)
        digits = text[1:] if text[:1] in ("+", "-") else text
        if not digits.isdecimal():
            return None
        value = int(text)
    if isinstance(value, int) and INT64_MIN <= value <= INT64:
        return value
    return None


def _emit_enabled(flow: Flow) -> bool:
    value = flow.config.checkpoint.get(EMIT_ENABLED_KEY, True)
    # ConfigDef BOOLEAN: true/false in any case, as a string or a boolean.
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def emit_seconds(flow: Flow) -> int | None:
    """How often the checkpoint connector emits checkpoints; None when it emits none (no
    checkpoints, `emit.checkpoints.enabled: false`, or a negative interval, which Kafka reads
    as disabled: MirrorCheckpointConnector.taskConfigs)."""
    if not flow.with_checkpoints or not _emit_enabled(flow):
        return None
    seconds = kafka_long(flow.config.checkpoint.get(EMIT_INTERVAL_KEY, DEFAULT_EMIT_SECONDS))
    return seconds if seconds is not None and seconds >= 0 else None


def sync_seconds(flow: Flow) -> int | None:
    """How often translated offsets are written into the target's groups; None when they never
    are (no checkpoints, or `syncGroupOffsets.enabled: false`)."""
    if not flow.with_checkpoints or not flow.syncGroupOffsets.enabled:
        return None
    return flow.syncGroupOffsets.intervalSeconds or DEFAULT_SYNC_SECONDS


def wait_seconds(flow: Flow) -> int | None:
    """The documents' wait between stopping consumers and starting them on the target:
    `2 * (emit.checkpoints.interval.seconds + sync.group.offsets.interval.seconds)`. None when
    checkpoints or group offset sync are off: then no wait makes synced offsets appear (the
    continuous procedure is not available)."""
    emit, sync = emit_seconds(flow), sync_seconds(flow)
    return None if emit is None or sync is None else 2 * (emit + sync)


def procedures(flow: Flow) -> list[FailoverProcedure]:
    """The procedures this flow allows: continuous needs the Default policy and synced group
    offsets; the cutoff and the failover on disaster work under both policies."""
    allowed = [FailoverProcedure.continuous] if (flow.policy is Policy.default and wait_seconds(flow) is not None) else []
    return allowed + [FailoverProcedure.cutoff, FailoverProcedure.disaster]


def _java_literal(text: str) -> str:
    """A literal for java.util.regex: every character outside [A-Za-z0-9_-] escaped (aliases and
    separators are such characters; escaping a non-alphanumeric is always allowed in Java)."""
    return "".join(c if c.isalnum() or c in "_-" else "\\" + c for c in text)


def _subscription(prefix: str, topics: tuple[str, ...], exclude: tuple[str, ...]) -> str:
    """One Java regex (a consumer's `subscribe(Pattern)` matches it against whole names) for the
    topics one source connector writes: its includes less its excludes, as Kafka's
    DefaultTopicFilter joins and applies them, behind the replication policy's prefix."""
    include = "|".join(topics)
    if not exclude:
        return f"{_java_literal(prefix)}(?:{include})"
    return f"{_java_literal(prefix)}(?!(?:{'|'.join(exclude)})$)(?:{include})"


def subscriptions(d: Direction, procedure: FailoverProcedure) -> list[str]:
    """What consumers of the flow's topics subscribe to on the target after `procedure`, one
    regex per source connector and side. Default policy: the prefixed replica (`<source>.<topic>`,
    the data replicated until the switch, read from the synced offsets) and the active topic
    (the same name as on the source, where producers write after the switch); after a cutoff the
    old data is consumed already, so the active topics alone. Identity: the same names."""
    specs = [s for part in d.parts for s in part.sources]
    prefix = names.topic_prefix(d.flow.source, d.flow.policy is Policy.default)
    replica = [_subscription(prefix, s.topics, s.kafka_topics_exclude) for s in specs]
    if d.flow.policy is Policy.identity:
        return replica
    active = [_subscription("", s.topics, s.kafka_topics_exclude) for s in specs]
    return active if procedure is FailoverProcedure.cutoff else replica + active


def failover_outputs(d: Direction) -> OutputsFailover:
    """The flow's `failover` stack output (docs/outputs.md), from the flow as deployed (plan.flow_outputs)."""
    flow = d.flow
    return {
        "procedure": flow.failover.procedure.value,
        "procedures": [p.value for p in procedures(flow)],
        "waitSeconds": wait_seconds(flow),
        "topics": subscriptions(d, flow.failover.procedure),
    }


def problems(model: Model) -> list[Problem]:
    """The combinations the documents forbid, once per declared flow (a bidirectional pair's two
    directions share their `failover`)."""
    found: list[Problem] = []
    seen: set[int] = set()
    for d in model.flows:
        if d.declared in seen:
            continue
        seen.add(d.declared)
        flow = d.flow
        raw = flow.config.checkpoint.get(EMIT_INTERVAL_KEY)
        if raw is not None and kafka_long(raw) is None:
            found.append(Problem(d.where, f"config.checkpoint.{EMIT_INTERVAL_KEY}", raw,
                                 "a whole number of seconds (Kafka reads it as a long)"))
        enabled = flow.config.checkpoint.get(EMIT_ENABLED_KEY)
        if enabled is not None and not (isinstance(enabled, bool) or (
                isinstance(enabled, str) and enabled.strip().lower() in ("true", "false"))):
            # Kafka's ConfigDef would fail the connector; read as "off" here it would silently
            # take continuous failover away.
            found.append(Problem(d.where, f"config.checkpoint.{EMIT_ENABLED_KEY}", enabled,
                                 "true or false (Kafka reads it as a boolean)"))
        if flow.failover.procedure is not FailoverProcedure.continuous:
            continue
        if flow.policy is Policy.identity:
            found.append(Problem(
                d.where, "failover.procedure", FailoverProcedure.continuous.value,
                "cutoff or disaster: continuous failover works with the default replication policy only "
                "(consumers read the prefixed replica and the active topic side by side); this flow uses the "
                "identity policy. Set `failover.procedure: cutoff`, or `replicationPolicy: default`"))
        elif wait_seconds(flow) is None:
            missing = ("checkpoints are off" if not flow.with_checkpoints
                       else "group offset sync is off" if not flow.syncGroupOffsets.enabled
                       else f"checkpoints are not emitted ({EMIT_ENABLED_KEY} or {EMIT_INTERVAL_KEY})")
            found.append(Problem(
                d.where, "failover.procedure", FailoverProcedure.continuous.value,
                f"cutoff or disaster: continuous failover relies on checkpoints and group offset sync, and {missing} "
                "for this flow. Set `failover.procedure: cutoff`, or turn them on (`checkpoints`, "
                "`syncGroupOffsets.enabled`)"))
    return found

