"""Offsets audit (control plane): a MirrorSourceConnector's committed source offsets against the
source partitions' earliest and end offsets — the documents' "Checking the state of data
replication", automated.

Kafka Connect stores, per source partition, the offset of the last record the connector handed
over (`{"offset": N}`), so the next record to replicate is N + 1. Committed offsets trail the
truth by up to `offset.flush.interval.ms` (60 s by default): lag is an upper bound, compared
against thresholds. Pure functions; the REST read has bounded retries and raises on failure so
that nothing unread is ever reported as ok.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from enum import Enum

from spark.topicfilter import TopicFilters

TopicPartition = tuple[str, int]


class Unverifiable(Exception):
    """Something the audit needs could not be read; the run reports an error, never ok."""


class Status(str, Enum):
    ok = "ok"
    lagging = "lagging"                # more records pending than the threshold allows
    never_replicated = "never-replicated"  # records exist, the connector has no offset for the partition
    retention_loss = "retention-loss"  # records aged out of the source before they were replicated
    # The connector's stored offset is past the partition's end: the partition is not the one it
    # read (the topic deleted and created again). MirrorSourceTask seeks past the stored offset when
    # its task starts (initializeConsumer, Kafka 3.8 to 4.x): below the new end it skips the new
    # records before it; past the end the consumer's auto.offset.reset (earliest) copies from the
    # start. Either way the offset must go (docs/operations.md#a-source-topic-deleted-and-created-again).
    offset_past_end = "offset-past-end"


# What a partition past whose end the connector's offset lies is told as, everywhere the audit says it.
PAST_END = ("the source connector's stored offset {committed} is past the partition's end {end}: the topic was "
            "deleted and created again; reset the connector's offsets for it "
            "(docs/operations.md#a-source-topic-deleted-and-created-again)")


@dataclass(frozen=True)
class PartitionAudit:
    connector: str
    topic: str
    partition: int
    earliest: int
    end: int
    committed: int | None  # last replicated offset, None when the connector has none
    lag: int               # records (upper bound) still to replicate
    lost: int              # offsets aged out unreplicated (an upper bound on records: gaps)
    status: Status

    def row(self) -> dict:
        return {**asdict(self), "status": self.status.value}


def parse_connect_offsets(payload: dict, source_alias: str) -> dict[TopicPartition, int]:
    """`GET /connectors/<name>/offsets` of a MirrorSourceConnector, for one source cluster:
    {"offsets": [{"partition": {"cluster": "us-west", "partition": 0, "topic": "t"},
                  "offset": {"offset": 41}}]}"""
    try:
        entries = payload["offsets"]
        committed = {}
        for entry in entries:
            part, offset = entry["partition"], entry["offset"]
            if part.get("cluster") != source_alias or offset is None:
                continue  # another cluster's partition, or an offset reset to null
            committed[(str(part["topic"]), int(part["partition"]))] = int(offset["offset"])
        return committed
    except (KeyError, TypeError, ValueError) as exc:
        raise Unverifiable(f"unexpected offsets payload ({exc!r}): {json.dumps(payload)[:200]}") from None


def audit_partitions(connector: str, committed: dict[TopicPartition, int],
                     watermarks: dict[TopicPartition, tuple[int, int]], max_lag: int = 0) -> list[PartitionAudit]:
    """One row per source partition the connector should replicate (`watermarks`: the partitions
    of the topics its filter selects, with their earliest and end offsets)."""
    rows = []
    for (topic, partition), (earliest, end) in sorted(watermarks.items()):
        done = committed.get((topic, partition))
        if done is None:
            lag, lost = end - earliest, 0
            status = Status.never_replicated if lag > 0 else Status.ok
        elif done + 1 > end:
            lag, lost, status = end - earliest, 0, Status.offset_past_end  # what the partition holds now
        else:
            following = done + 1
            lost = max(0, earliest - following)
            lag = max(0, end - max(following, earliest))
            status = (Status.retention_loss if lost else
                      Status.lagging if lag > max_lag else Status.ok)
        rows.append(PartitionAudit(connector, topic, partition, earliest, end, done, lag, lost, status))
    return rows


MAX_PAYLOAD = 64 << 20  # bytes of one offsets answer (a connector of ~100,000 partitions)


def _read_within(response, deadline: float, limit: int = MAX_PAYLOAD) -> bytes:
    """The whole body before `deadline` (monotonic): a server that trickles bytes keeps each
    socket read under its timeout, so only a total deadline bounds the read."""
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the answer did not arrive within its deadline")
        sock = getattr(getattr(getattr(response, "fp", None), "raw", None), "_sock", None)
        if sock is not None:
            sock.settimeout(max(left, 0.01))
        chunk = response.read1(65536) if hasattr(response, "read1") else response.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise ValueError(f"an answer larger than {limit} bytes")
        chunks.append(chunk)


def connect_get(rest_url: str, path: str, attempts: int = 3, backoff_seconds: float = 2.0,
                timeout_seconds: float = 10.0):
    """A JSON answer of the Connect REST API (`path` such as `/connectors/<name>/offsets`),
    retrying a bounded number of times; each attempt, connection and body together, ends within
    `timeout_seconds`."""
    url = f"{rest_url.rstrip('/')}{path}"
    last = None
    for attempt in range(attempts):
        try:
            deadline = time.monotonic() + timeout_seconds
            with urllib.request.urlopen(url, timeout=timeout_seconds) as response:
                return json.loads(_read_within(response, deadline))
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}"
            if exc.code == 404:
                break  # no such connector (or path): retrying will not help
        except (urllib.error.URLError, OSError, ValueError) as exc:  # TimeoutError is an OSError
            last = repr(exc)
        if attempt + 1 < attempts:
            time.sleep(backoff_seconds * (2 ** attempt))
    raise Unverifiable(f"{url}: {last} after {attempt + 1} attempt(s)")


def fetch_connect_offsets(rest_url: str, connector: str, attempts: int = 3, backoff_seconds: float = 2.0,
                          timeout_seconds: float = 10.0) -> dict:
    """Read a connector's offsets from the Connect REST API (connect_get's retries and deadline)."""
    return connect_get(rest_url, f"/connectors/{connector}/offsets", attempts, backoff_seconds, timeout_seconds)


def audit_flow(flow: dict, fetch, marks: Callable[[], dict[TopicPartition, tuple[int, int]]],
               filters: TopicFilters, max_lag: int = 0) -> list[PartitionAudit]:
    """The offsets audit of one flow of the audit configuration (infra/plan/audit.py).

    `fetch(rest_url, connector)` returns the REST offsets payload (raising Unverifiable when it
    cannot read); `marks()` gives {(topic, partition): (earliest, end)} of the source's topics. It
    is read after every connector's offsets: an offset the connector stored is then never past an
    end read later, unless the partition itself changed (Status.offset_past_end), not because the
    connector copied on between the two reads."""
    committed = [(c, parse_connect_offsets(fetch(c["restUrl"], c["name"]), flow["sourceAlias"]))
                 for c in flow["connectors"]]
    watermarks = marks()
    rows = []
    for connector, stored in committed:
        mine = {tp: m for tp, m in watermarks.items()
                if filters.selects(connector, flow["excludeTopics"]["source"], tp[0])}
        rows += audit_partitions(connector["name"], stored, mine, max_lag)
    return rows
