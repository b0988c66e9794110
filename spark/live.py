"""What the failover readiness check and the audit's checkpoint staleness read live on a flow's
clusters, through the audit's clients (librdkafka): topics and watermarks, the checkpoints topic
read to its end (committed records only), consumer groups' offsets and states."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from contract import audit as audit_contract
from spark.checkpoints import Stamped, checkpoints_topic, newest_checkpoints
from spark.offsets import Unverifiable

# MirrorCheckpointTask syncs translated offsets only into groups in these states on the target
# (refreshIdleConsumerGroupOffset: EMPTY; a group unknown there is DEAD), apache/kafka 3.8.0.
INACTIVE = ("EMPTY", "DEAD")


@dataclass(frozen=True)
class GroupState:
    state: str     # ConsumerGroupState's name: EMPTY, DEAD, STABLE, PREPARING_REBALANCING...
    members: int

    @property
    def active(self) -> bool:
        return self.state not in INACTIVE or self.members > 0


class ClusterUnverifiable(Unverifiable):
    """What could not be read on one cluster of the flow; `role` is source or target (only a source
    that cannot be read suggests the disaster procedure)."""

    def __init__(self, message: str, role: str):
        super().__init__(message)
        self.role = role


# The checkpoints topic is read with a consumer of its own: committed records only (under exactly-once
# the checkpoint connector writes in transactions, whose records are not checkpoints until committed),
# and an end-of-partition event, since the last offset of a partition may be a transaction marker
# that no consumer delivers (librdkafka CONFIGURATION.md: enable.partition.eof, isolation.level).
READER_CONFIG = {"group.id": audit_contract.JOB, "enable.auto.commit": False, "enable.partition.eof": True,
                 "isolation.level": "read_committed", "log_level": 3}


def _read_topic(consumer, on: LiveCluster, topic: str, partitions: int, deadline_seconds: float = 60.0,
                clock: Callable[[], float] = time.monotonic) -> list[tuple[int, int, int, bytes | None, bytes | None]]:
    """Every committed record of the topic, bytes as stored (librdkafka, no group, nothing
    committed). A partition is read to its end at its end-of-partition event, or once the consumer's
    position reaches the high watermark read first (a position past a transaction marker, which is
    never delivered). `on`: the cluster, named in what fails."""
    from confluent_kafka import KafkaError, TopicPartition
    call = on.call
    marks = {p: call(f"watermarks of {topic}[{p}]", consumer.get_watermark_offsets, TopicPartition(topic, p),
                     on.timeout) for p in range(partitions)}
    left = {p for p, (lo, hi) in marks.items() if hi > lo}
    if not left:
        return []
    consumer.assign([TopicPartition(topic, p, marks[p][0]) for p in sorted(left)])
    out = []
    deadline = clock() + deadline_seconds

    def positions() -> dict[int, int]:
        return {tp.partition: tp.offset for tp in call(f"positions in {topic}", consumer.position,
                                                        [TopicPartition(topic, p) for p in sorted(left)])}
    try:
        while left:
            if clock() > deadline:
                at = positions()
                where = "; ".join(f"{topic}[{p}] " + (f"position {at[p]}" if at.get(p, -1) >= 0 else "no position")
                                  + f", high watermark {marks[p][1]}" for p in sorted(left))
                raise on.failed(topic, f"not read to its end within {deadline_seconds:.0f} s ({where})")
            for msg in consumer.consume(500, 1.0):
                error = msg.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    left.discard(msg.partition())
                elif error is not None:
                    raise on.failed(f"{topic}[{msg.partition()}]", str(error))
                else:
                    out.append((msg.partition(), msg.offset(), msg.timestamp()[1], msg.key(), msg.value()))
            if left:
                left -= {p for p, offset in positions().items() if offset >= marks[p][1]}
    finally:
        consumer.unassign()
    return out


class LiveCluster:
    """What the readiness check asks a cluster, answered by the audit's clients of it
    (spark.clusters.KafkaCluster: librdkafka, the same connection and credentials). Every failure
    names the cluster: `<what> on <alias> (<role>): <error>`."""

    def __init__(self, cluster, client_config: dict, alias: str, role: str,
                 make_consumer: Callable[[dict], Any] | None = None):
        self.cluster, self.client_config, self.alias, self.role = cluster, client_config, alias, role
        self.make_consumer = make_consumer

    @property
    def where(self) -> str:
        return f"{self.alias} ({self.role})"

    @property
    def timeout(self) -> float:
        return float(self.cluster.timeout)

    def failed(self, what: str, error: object) -> ClusterUnverifiable:
        return ClusterUnverifiable(f"{what} on {self.where}: {error}", self.role)

    def call(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        from confluent_kafka import KafkaException
        try:
            return fn(*args)
        except KafkaException as exc:
            raise self.failed(what, exc.args[0]) from None

    def partitions(self) -> dict[str, int]:
        meta = self.call("metadata", self.cluster.consumer.list_topics, None, self.cluster.timeout)
        return {t: len(m.partitions) for t, m in sorted(meta.topics.items()) if m.error is None}

    def watermarks(self, partitions: dict[str, int]) -> dict[tuple[str, int], tuple[int, int]]:
        from confluent_kafka import TopicPartition
        return {(t, p): self.call(f"watermarks of {t}[{p}]", self.cluster.consumer.get_watermark_offsets,
                                  TopicPartition(t, p), self.cluster.timeout)
                for t, n in sorted(partitions.items()) for p in range(n)}

    def consumer(self, **overrides: Any) -> Any:
        """A consumer of the audit's clients (READER_CONFIG, with `overrides`): no group, nothing committed."""
        if self.make_consumer is None:
            from confluent_kafka import Consumer
            make: Callable[[dict], Any] = Consumer
        else:
            make = self.make_consumer
        return make({**self.client_config, **READER_CONFIG, **overrides})

    def records(self, topic: str, partitions: int) -> list[tuple[int, int, int, bytes | None, bytes | None]]:
        consumer = self.consumer()
        try:
            return _read_topic(consumer, self, topic, partitions)
        finally:
            consumer.close()

    def first_timestamps(self, positions: dict[tuple[str, int], int], deadline_seconds: float = 10.0,
                         clock: Callable[[], float] = time.monotonic) -> dict[tuple[str, int], int | None]:
        """The timestamp (ms) of the first record at or after each position: for a lagging partition
        the oldest record not yet replicated, whose age is how far behind the copy is in time. One
        consumer for them all, read_uncommitted as MirrorSourceTask's consumer reads by default (an
        open transaction's records wait to be copied too); None where no record with a timestamp
        came within the deadline."""
        from confluent_kafka import TopicPartition
        if not positions:
            return {}
        consumer = self.consumer(**{"isolation.level": "read_uncommitted", "enable.partition.eof": False})
        found: dict[tuple[str, int], int | None] = {tp: None for tp in positions}
        left = set(positions)
        try:
            consumer.assign([TopicPartition(t, p, o) for (t, p), o in sorted(positions.items())])
            deadline = clock() + deadline_seconds
            while left and clock() < deadline:
                for msg in consumer.consume(500, 0.5):
                    tp = (msg.topic(), msg.partition())
                    if msg.error() is not None or tp not in left:
                        continue
                    kind, ms = msg.timestamp()
                    found[tp] = ms if kind != 0 and ms >= 0 else None  # 0: TIMESTAMP_NOT_AVAILABLE
                    left.discard(tp)
                    consumer.pause([TopicPartition(*tp)])
        finally:
            consumer.close()
        return found

    def groups(self) -> list[str]:
        """Every consumer group the cluster knows, sorted."""
        future = self.cluster.admin.list_consumer_groups(request_timeout=self.cluster.timeout)
        listed = self.call("consumer groups", future.result)
        return sorted(g.group_id for g in listed.valid)

    def group_offsets(self, group: str) -> dict[tuple[str, int], int]:
        from confluent_kafka import ConsumerGroupTopicPartitions
        futures = self.cluster.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                                 request_timeout=self.cluster.timeout)
        result = self.call(f"offsets of group {group}", futures[group].result)
        return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions or [] if tp.offset >= 0}

    def group_states(self, groups: list[str]) -> dict[str, GroupState]:
        from confluent_kafka import KafkaError, KafkaException
        if not groups:
            return {}
        futures = self.cluster.admin.describe_consumer_groups(groups, request_timeout=self.cluster.timeout)
        states = {}
        for group, future in futures.items():
            try:
                desc = future.result()
            except KafkaException as exc:
                if exc.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND:  # Kafka 4 answers so for no group
                    states[group] = GroupState("DEAD", 0)
                    continue
                raise self.failed(f"state of group {group}", exc.args[0]) from None
            states[group] = GroupState(desc.state.name, len(desc.members or []))
        return states


def flow_checkpoints(flow: dict, target: LiveCluster, filters,
                     partitions: dict[str, int] | None = None) -> dict[tuple[str, str, int], Stamped]:
    """The newest checkpoint of each (group, target topic, partition) of this flow, read from the
    target. Every flow from one source to one target writes the one checkpoints topic: this flow's
    are those of its topics (the target name less the policy's prefix, selected by one of its
    connectors)."""
    topic = checkpoints_topic(flow)
    partitions = target.partitions() if partitions is None else partitions  # the target's topics, if read
    if not topic or topic not in partitions:
        return {}
    checkpoints = newest_checkpoints(target.records(topic, partitions[topic]), topic)
    prefix, never = flow["topicPrefix"], flow["excludeTopics"]["source"]
    return {k: v for k, v in checkpoints.items() if k[1].startswith(prefix) and any(
        filters.selects(c, never, k[1][len(prefix):]) for c in flow["connectors"])}
