"""The live lag reader (spark/lag.py) on stand-in clusters: each partition's lag with the age of
its oldest record not replicated, each group's checkpoint ages, the source and the target read
apart so that one down leaves the other's figures shown; the reader of the oldest records
(spark/live.py first_timestamps) on a stand-in consumer. On real Kafka:
tests/runtime/test_runtime_failover.py."""

from __future__ import annotations

import json

from spark import audit, lag
from spark.checkpoints import Checkpoint
from spark.live import LiveCluster
from spark.offsets import Unverifiable
from tests.audit.test_failover import FLOW, FakeCluster, PythonFilters, _record

NOW = 1_767_225_600_000
CONNECTOR = {**FLOW["connectors"][0], "topics": ["t"], "topicsExclude": []}
LAG_FLOW = {**FLOW, "connectors": [CONNECTOR]}
OFFSETS = {"offsets": [{"partition": {"cluster": "us-west", "topic": "t", "partition": p}, "offset": {"offset": o}}
                       for p, o in ((0, 4), (1, 6))]}


class Source(FakeCluster):
    def __init__(self, stamps, **kw):
        super().__init__(**kw)
        self.stamps, self.positions = stamps, None

    def first_timestamps(self, positions, deadline_seconds):
        self.positions = positions
        return {tp: self.stamps.get(tp) for tp in positions}


def source() -> Source:
    return Source({("t", 1): NOW - 90_500, ("t", 2): None}, topics={"t": 3, "other": 1},
                  marks={("t", 0): (0, 5), ("t", 1): (0, 9), ("t", 2): (3, 7), ("other", 0): (0, 2)})


def target() -> FakeCluster:
    records = [_record(0, Checkpoint("g", "us-west.t", 0, 5, 5, ""), NOW - 12_000),
               _record(1, Checkpoint("g", "us-west.t", 1, 6, 6, ""), NOW - 40_000),
               _record(2, Checkpoint("h", "us-west.t", 0, 2, 2, ""), NOW - 3_000)]
    return FakeCluster(topics={"us-west.checkpoints.internal": 1}, records=records)


def get(url, path):
    assert (url, path) == ("http://connect:8083", "/connectors/repl-us-west-us-east-source/offsets")
    return OFFSETS


def test_each_partition_s_lag_and_oldest_unreplicated_record_and_each_group_s_checkpoints():
    src = source()
    out = lag.flow_lag(LAG_FLOW, lambda: src, target, get, PythonFilters(), 1, NOW)
    # The oldest record not replicated: past the committed offset, or the earliest when none is.
    assert src.positions == {("t", 1): 7, ("t", 2): 3}
    assert [(r["topic"], r["partition"], r["end"], r["committed"], r["lag"], r["status"],
             r["oldestUnreplicatedAgeSeconds"]) for r in out["replication"]] == [
        ("t", 0, 5, 4, 0, "ok", None), ("t", 1, 9, 6, 2, "lagging", 90.5), ("t", 2, 7, None, 4, "never-replicated", None)]
    assert out["groups"] == [
        {"group": "g", "newestAgeSeconds": 12.0, "partitions": [
            {"topic": "t", "targetTopic": "us-west.t", "partition": 0, "upstream": 5, "translated": 5, "ageSeconds": 12.0},
            {"topic": "t", "targetTopic": "us-west.t", "partition": 1, "upstream": 6, "translated": 6,
             "ageSeconds": 40.0}]},
        {"group": "h", "newestAgeSeconds": 3.0, "partitions": [
            {"topic": "t", "targetTopic": "us-west.t", "partition": 0, "upstream": 2, "translated": 2, "ageSeconds": 3.0}]}]
    assert (out["errors"], out["findings"], out["maxLag"]) == (
        [], ["t[1]: lagging, lag 2", "t[2]: never-replicated, lag 4"], 1)


def test_a_source_down_leaves_the_checkpoints_shown_and_a_target_down_the_lag():
    def down():
        raise Unverifiable("metadata on us-west (source): all brokers down")
    out = lag.flow_lag(LAG_FLOW, down, target, get, PythonFilters(), 0, NOW)
    assert (out["replication"], [g["group"] for g in out["groups"]], out["errors"], out["findings"]) == (
        None, ["g", "h"], ["replication: metadata on us-west (source): all brokers down"], [])

    def gone():
        raise Unverifiable("metadata on us-east (target): all brokers down")
    src = source()
    out = lag.flow_lag(LAG_FLOW, lambda: src, gone, get, PythonFilters(), 0, NOW)
    assert (out["groups"], out["errors"]) == (None, ["checkpoints: metadata on us-east (target): all brokers down"])
    assert [r["lag"] for r in out["replication"]] == [0, 2, 4]


class Message:
    def __init__(self, topic, partition, kind, ms, error=None):
        self._t, self._p, self._kind, self._ms, self._error = topic, partition, kind, ms, error

    def topic(self):
        return self._t

    def partition(self):
        return self._p

    def timestamp(self):
        return self._kind, self._ms

    def error(self):
        return self._error


class Consumer:
    def __init__(self, config, batches):
        self.config, self.batches, self.assigned, self.paused, self.closed = config, batches, None, [], False

    def assign(self, partitions):
        self.assigned = [(tp.topic, tp.partition, tp.offset) for tp in partitions]

    def consume(self, n, timeout):
        return self.batches.pop(0) if self.batches else []

    def pause(self, partitions):
        self.paused += [(tp.topic, tp.partition) for tp in partitions]

    def close(self):
        self.closed = True


def test_the_oldest_records_are_read_once_each_within_the_deadline():
    made = []
    batches = [[Message("t", 1, 1, 1000), Message("t", 1, 1, 2000), Message("t", 2, 0, -1)],
               [Message("u", 0, 2, 5000, error="transient")], [Message("u", 0, 2, 6000)]]

    def make(config):
        made.append(Consumer(config, batches))
        return made[-1]
    cluster = LiveCluster(None, {"bootstrap.servers": "x:1"}, "us-west", "source", make)
    clock = iter(range(100)).__next__
    found = cluster.first_timestamps({("t", 1): 7, ("t", 2): 3, ("u", 0): 0, ("v", 0): 1}, 5, clock)
    # The first record of each; none with a timestamp (kind 0: not available) is None; one never
    # delivered within the deadline (v[0]) is None; errors are not records.
    assert found == {("t", 1): 1000, ("t", 2): None, ("u", 0): 6000, ("v", 0): None}
    (consumer,) = made
    assert consumer.assigned == [("t", 1, 7), ("t", 2, 3), ("u", 0, 0), ("v", 0, 1)]
    assert consumer.paused == [("t", 1), ("t", 2), ("u", 0)]
    assert (consumer.config["isolation.level"], consumer.config["enable.partition.eof"], consumer.closed) == (
        "read_uncommitted", False, True)
    assert cluster.first_timestamps({}, 5) == {}


def test_the_command_refuses_what_it_cannot_read(tmp_path, capsys):
    assert audit.main(["lag", "--config", str(tmp_path / "none.json")]) == 2
    assert capsys.readouterr().err == (f"lag error: could not read: the audit configuration "
                                       f"{tmp_path / 'none.json'} is not a readable file\n")
    (tmp_path / "audit.json").write_text(json.dumps({"version": 2, "clusters": {}, "flows": [], "settings": {
        "window": {"lookbackMinutes": 60, "graceMinutes": 10, "bucketSeconds": 60},
        "thresholds": {"maxLag": 1, "maxMissing": 0, "maxUnexpected": 0, "maxHeartbeatAgeSeconds": 300}}}))
    assert audit.main(["lag", "--config", str(tmp_path / "audit.json"), "--flow", "f"]) == 2
    assert capsys.readouterr().err == "lag error: could not read: no flow named f in the configuration ()\n"
