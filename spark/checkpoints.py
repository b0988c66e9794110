"""MirrorMaker 2's checkpoints as Kafka writes them: decoding the records of a flow's
`<source>.checkpoints.internal` topic, the newest of each group and partition, and how stale a
group's checkpoints are (which the audit judges on its schedule, and the failover readiness
check reads: spark/failover.py)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable

from spark.offsets import Unverifiable


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint record (apache/kafka connect/mirror-client Checkpoint.java, 3.8.0 to 4.x):
    key = group (STRING), topic (STRING, the target's name), partition (INT32); value = version
    (INT16, 0), upstreamOffset (INT64, the group's offset on the source), offset (INT64, its
    translation on the target), metadata (STRING). Kafka's protocol types: big-endian, a STRING is
    an INT16 length then that many UTF-8 bytes (Type.STRING); the key has no version."""
    group: str
    topic: str
    partition: int
    upstream: int
    downstream: int
    metadata: str


class _Reader:
    def __init__(self, data: bytes, what: str):
        self.data, self.pos, self.what = data, 0, what

    def take(self, size: int, field_name: str) -> bytes:
        if self.pos + size > len(self.data):
            raise ValueError(f"checkpoint {self.what}: {len(self.data)} byte(s) end inside {field_name} "
                             f"(at byte {self.pos}, {size} needed)")
        chunk = self.data[self.pos:self.pos + size]
        self.pos += size
        return chunk

    def int16(self, name: str) -> int:
        return int(struct.unpack(">h", self.take(2, name))[0])

    def int32(self, name: str) -> int:
        return int(struct.unpack(">i", self.take(4, name))[0])

    def int64(self, name: str) -> int:
        return int(struct.unpack(">q", self.take(8, name))[0])

    def string(self, name: str) -> str:
        length = self.int16(f"the length of {name}")
        if length < 0:  # Type.STRING refuses a negative length (a nullable string would be -1)
            raise ValueError(f"checkpoint {self.what}: {name} has a negative length ({length})")
        # Utils.utf8 decodes with the JDK's replacement of malformed input.
        return self.take(length, name).decode("utf-8", "replace")


CHECKPOINT_VERSION = 0


def decode_checkpoint(key: bytes, value: bytes) -> Checkpoint:
    """A checkpoint record's key and value, as Checkpoint.deserializeRecord reads them (trailing
    bytes are ignored there too: Schema.read reads the fields and stops)."""
    k = _Reader(key, "key")
    group, topic, partition = k.string("group"), k.string("topic"), k.int32("partition")
    v = _Reader(value, "value")
    version = v.int16("version")
    if version != CHECKPOINT_VERSION:
        raise ValueError(f"checkpoint value: version {version}; this reader knows version {CHECKPOINT_VERSION} "
                         "(Kafka 3.8 to 4.x)")
    upstream, downstream = v.int64("upstreamOffset"), v.int64("offset")
    return Checkpoint(group, topic, partition, upstream, downstream, v.string("metadata"))


@dataclass(frozen=True)
class Stamped:
    """The newest checkpoint of one (group, target topic, partition), with its record's timestamp
    (MirrorCheckpointTask stamps each record with the time it was emitted)."""
    checkpoint: Checkpoint
    timestamp_ms: int


def newest_checkpoints(records: list[tuple[int, int, int, bytes | None, bytes | None]], topic: str
                       ) -> dict[tuple[str, str, int], Stamped]:
    """(partition, offset, timestamp ms, key, value) records of the checkpoints topic -> the newest
    checkpoint per key, in offset order (the topic is compacted by that key)."""
    newest: dict[tuple[str, str, int], Stamped] = {}
    for partition, offset, stamp, key, value in sorted(records, key=lambda r: (r[0], r[1])):
        if key is None or value is None:
            continue  # not a checkpoint Kafka writes; a tombstone would only drop a key it never had
        try:
            c = decode_checkpoint(key, value)
        except ValueError as exc:
            raise Unverifiable(f"{topic}[{partition}] offset {offset}: {exc}") from None
        newest[(c.group, c.topic, c.partition)] = Stamped(c, stamp)
    return newest


def checkpoints_topic(flow: dict) -> str | None:
    """The flow's checkpoints topic on the target: Kafka names it `<source alias>.checkpoints.internal`
    under both policies (DefaultReplicationPolicy.checkpointsTopic; IdentityReplicationPolicy
    inherits it). The program lists it among the target's own topics of the audit configuration
    exactly when the flow runs checkpoints (infra/core/names.py FlowNames.checkpoints_topic is its home
    there; tests hold the two equal)."""
    if flow.get("checkpointsTopic"):
        return str(flow["checkpointsTopic"])
    name = f"{flow['sourceAlias']}.checkpoints.internal"
    return name if name in flow["excludeTopics"]["target"] else None


def checkpoint_staleness(flow: dict, checkpoints: dict[tuple[str, str, int], Stamped],
                         source_offsets: dict[str, dict[tuple[str, int], int]], now_ms: int,
                         max_age_seconds: int | None, offset_lag_max: Callable[[str], int]) -> list[dict]:
    """Per group with checkpoints of this flow: the age of its newest checkpoint and how far the
    group's commits on the source are past its checkpoints (the records a consumer failing over
    now would read again). The audit runs this on its schedule; `kafka-replication status` and the
    CheckpointsStale alert read what it found.

    MirrorCheckpointTask writes a checkpoint only when the translated offset moves
    (checkpointIsMoreRecent, 3.8.0 to 4.x), so an old checkpoint of a group that commits nothing
    new is exact, not stale; and a translation moves only at an offset sync, written at most every
    `offset.lag.max` records (fewer once the source task commits its pending syncs), so a group
    may be that many records past its checkpoint with nothing wrong. A group is stale when both
    hold: its newest checkpoint is older than `max_age_seconds` (None: not judged) and a partition
    of it is committed more than its connector's offset.lag.max past the checkpoint
    (`offset_lag_max(source topic)`)."""
    prefix = flow["topicPrefix"]
    groups: dict[str, list[tuple[tuple[str, int], Stamped]]] = {}
    for (group, topic, partition), stamped in checkpoints.items():
        groups.setdefault(group, []).append(((topic[len(prefix):], partition), stamped))
    out = []
    for group, items in sorted(groups.items()):
        committed = source_offsets.get(group, {})
        # Per partition: how far the group committed past its checkpoint, and what its connector's
        # offset.lag.max tolerates; `over`, the partitions past it.
        behind = [(max(0, committed[tp] - s.checkpoint.upstream), offset_lag_max(tp[0]))
                  for tp, s in items if tp in committed]
        gaps = [gap for gap, _ in behind]
        over = sorted((gap, tolerated) for gap, tolerated in behind if gap > tolerated)
        # A checkpoint written after the run's clock was read is fresh, not from the future.
        age = max(0.0, round((now_ms - max(s.timestamp_ms for _, s in items)) / 1000, 3))
        row = {"group": group, "partitions": len(items), "ageSeconds": age, "behindRecords": sum(gaps),
               "behindMax": max(gaps, default=0), "findings": []}
        if max_age_seconds is not None and age > max_age_seconds and over:
            gap, tolerance = over[-1]
            row["findings"].append(
                f"group {group}: its newest checkpoint is {age:.0f} s old (threshold {max_age_seconds} s) and its "
                f"commits on {flow['sourceAlias']} are up to {gap} record(s) of a partition past it "
                f"(offset.lag.max {tolerance}): consumers failing over now would read {sum(gaps)} record(s) again")
        out.append(row)
    return out
