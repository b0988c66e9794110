"""Offsets audit: committed source offsets against source watermarks, and the REST read."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from spark.audit import java_filters
from spark.offsets import (PAST_END, Status, Unverifiable, audit_partitions, fetch_connect_offsets,
                           parse_connect_offsets)

PAYLOAD = {"offsets": [
    {"partition": {"cluster": "us-west", "partition": 0, "topic": "test.a"}, "offset": {"offset": 41}},
    {"partition": {"cluster": "us-west", "partition": 1, "topic": "test.a"}, "offset": {"offset": 9}},
    {"partition": {"cluster": "us-east", "partition": 0, "topic": "test.a"}, "offset": {"offset": 7}},
    {"partition": {"cluster": "us-west", "partition": 2, "topic": "test.a"}, "offset": None},
]}


def test_parse_keeps_the_source_cluster_partitions():
    assert parse_connect_offsets(PAYLOAD, "us-west") == {("test.a", 0): 41, ("test.a", 1): 9}


def test_parse_refuses_an_unexpected_payload():
    with pytest.raises(Unverifiable, match="unexpected offsets payload"):
        parse_connect_offsets({"offset": []}, "us-west")


def test_audit_rows_per_partition():
    committed = {("test.a", 0): 41, ("test.a", 1): 9, ("test.b", 0): 99}
    watermarks = {("test.a", 0): (0, 42),    # next to replicate 42 = end: caught up
                  ("test.a", 1): (0, 30),    # 20 records pending (10..29)
                  ("test.a", 2): (5, 12),    # no committed offset, 7 records
                  ("test.b", 0): (150, 160),  # 100..149 aged out before replication
                  ("test.c", 0): (3, 3)}     # empty, never replicated: nothing to do
    rows = [r.row() for r in audit_partitions("c1", committed, watermarks, max_lag=10)]
    assert rows == [
        {"connector": "c1", "topic": "test.a", "partition": 0, "earliest": 0, "end": 42, "committed": 41,
         "lag": 0, "lost": 0, "status": "ok"},
        {"connector": "c1", "topic": "test.a", "partition": 1, "earliest": 0, "end": 30, "committed": 9,
         "lag": 20, "lost": 0, "status": "lagging"},
        {"connector": "c1", "topic": "test.a", "partition": 2, "earliest": 5, "end": 12, "committed": None,
         "lag": 7, "lost": 0, "status": "never-replicated"},
        {"connector": "c1", "topic": "test.b", "partition": 0, "earliest": 150, "end": 160, "committed": 99,
         "lag": 10, "lost": 50, "status": "retention-loss"},
        {"connector": "c1", "topic": "test.c", "partition": 0, "earliest": 3, "end": 3, "committed": None,
         "lag": 0, "lost": 0, "status": "ok"},
    ]


def test_an_offset_past_the_partitions_end_is_a_partition_created_again():
    """The topic deleted and created again under a stopped connector: the offset it stored (41)
    is past the new partition's end (3, or 42 exactly), which no copy can reach by itself."""
    rows = audit_partitions("c1", {("t", 0): 41, ("t", 1): 41, ("t", 2): 41},
                            {("t", 0): (0, 3), ("t", 1): (0, 41), ("t", 2): (0, 42)}, max_lag=10)
    assert [(r.partition, r.committed, r.end, r.lag, r.lost, r.status) for r in rows] == [
        (0, 41, 3, 3, 0, Status.offset_past_end), (1, 41, 41, 41, 0, Status.offset_past_end),
        (2, 41, 42, 0, 0, Status.ok)]
    assert PAST_END.format(committed=41, end=3) == (
        "the source connector's stored offset 41 is past the partition's end 3: the topic was deleted and "
        "created again; reset the connector's offsets for it "
        "(docs/operations.md#a-source-topic-deleted-and-created-again)")


def test_lag_within_threshold_is_ok():
    (row,) = audit_partitions("c1", {("t", 0): 89}, {("t", 0): (0, 100)}, max_lag=10)
    assert (row.lag, row.status) == (10, Status.ok)


class _Connect(BaseHTTPRequestHandler):
    calls: list[str] = []
    failures = 0

    def do_GET(self):  # noqa: N802 (http.server API)
        type(self).calls.append(self.path)
        if type(self).failures > 0:
            type(self).failures -= 1
            self.send_response(503)
            self.end_headers()
            return
        if self.path != "/connectors/repl-source/offsets":
            self.send_response(404)
            self.end_headers()
            return
        body = json.dumps(PAYLOAD).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def connect_api():
    server = HTTPServer(("127.0.0.1", 0), _Connect)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Connect.calls, _Connect.failures = [], 0
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_fetch_retries_then_reads(connect_api):
    _Connect.failures = 2
    assert fetch_connect_offsets(connect_api, "repl-source", attempts=3, backoff_seconds=0) == PAYLOAD
    assert _Connect.calls == ["/connectors/repl-source/offsets"] * 3


def test_fetch_gives_up_after_bounded_attempts(connect_api):
    _Connect.failures = 5
    with pytest.raises(Unverifiable, match="HTTP 503 after 3 attempt"):
        fetch_connect_offsets(connect_api, "repl-source", attempts=3, backoff_seconds=0)


def test_fetch_does_not_retry_a_missing_connector(connect_api):
    with pytest.raises(Unverifiable, match="HTTP 404 after 1 attempt"):
        fetch_connect_offsets(connect_api, "nope", attempts=3, backoff_seconds=0)
    assert len(_Connect.calls) == 1


def test_fetch_unreachable_api_is_unverifiable():
    with pytest.raises(Unverifiable, match="after 2 attempt"):
        fetch_connect_offsets("http://127.0.0.1:9", "c", attempts=2, backoff_seconds=0, timeout_seconds=1)


KAFKA_EXCLUDES = [".*[\\-\\.]internal", ".*\\.replica", "__.*"]
FLOW = {"name": "f", "sourceAlias": "us-west",
        "excludeTopics": {"source": ["heartbeats", "mm2-offset-syncs.us-east.internal"]},
        "connectors": [{"name": "f-source-a", "restUrl": "http://a", "topics": ["test.*"],
                        "topicsExclude": KAFKA_EXCLUDES},
                       {"name": "f-source-b", "restUrl": "http://b", "topics": ["prod\\..*"],
                        "topicsExclude": ["prod\\.tmp", *KAFKA_EXCLUDES]}]}


@pytest.mark.parametrize("topics, exclude, topic, expected", [
    (["test.*"], [], "test.a", True),
    (["test"], [], "test.a", False),                       # whole-name matches, not find()
    ([], [], "anything", False),                           # an empty list matches nothing (Kafka)
    (["[a-z&&[^b]]+"], [], "abc", False),                  # Java's class intersection: no `b`
    (["[a-z&&[^b]]+"], [], "acd", True),
    (["(orders", ")\\.v1"], [], "orders.v1", True),      # joined with `|` before compiling, as Kafka does
    (["x++x"], [], "xxx", False),                          # possessive: Java only
    (["\\Qa.b\\E"], [], "a.b", True),
    (["\\Qa.b\\E"], [], "axb", False),
    ([".*"], ["__.*", "tmp"], "__consumer_offsets", False),
    ([".*"], ["__.*", "tmp"], "tmpx", True),
])
def test_topics_are_selected_by_javas_regex_engine(spark, topics, exclude, topic, expected):
    connector = {"topics": topics, "topicsExclude": exclude}
    assert java_filters(spark).selects(connector, [], topic) is expected


def test_the_sources_own_topics_are_never_selected(spark):
    assert not java_filters(spark).selects({"topics": [".*"], "topicsExclude": []}, ["heartbeats"], "heartbeats")


def test_audit_flow_selects_each_connectors_partitions(spark):
    from spark.offsets import audit_flow
    marks = {("test.a", 0): (0, 42), ("test.internal", 0): (0, 5), ("heartbeats", 0): (0, 9),
             ("prod.x", 0): (0, 3), ("prod.tmp", 0): (0, 8), ("other", 0): (0, 1)}
    payloads = {"f-source-a": PAYLOAD, "f-source-b": {"offsets": [
        {"partition": {"cluster": "us-west", "partition": 0, "topic": "prod.x"}, "offset": {"offset": 2}}]}}
    calls = []

    def fetch(url, name):
        calls.append((url, name))
        return payloads[name]

    def watermarks():
        calls.append("watermarks")
        return marks

    rows = audit_flow(FLOW, fetch, watermarks, java_filters(spark))
    # Every connector's offsets first, then the source's ends: an offset is never past an end
    # read after it unless the partition changed.
    assert calls == [("http://a", "f-source-a"), ("http://b", "f-source-b"), "watermarks"]
    # test.internal: MirrorMaker 2's default exclude; heartbeats: the source's own; prod.tmp: excluded.
    assert [(r.connector, r.topic, r.partition, r.status.value, r.lag) for r in rows] == [
        ("f-source-a", "test.a", 0, "ok", 0), ("f-source-b", "prod.x", 0, "ok", 0)]


def test_audit_flow_propagates_what_it_cannot_read(spark):
    from spark.offsets import audit_flow

    def fetch(url, name):
        raise Unverifiable(f"{url}: HTTP 503 after 3 attempt(s)")

    with pytest.raises(Unverifiable, match="HTTP 503"):
        audit_flow(FLOW, fetch, lambda: {("test.a", 0): (0, 1)}, java_filters(spark))


# ----------------------------------------------------------------- against librdkafka's mock cluster


@pytest.fixture(scope="module")
def mock_kafka():
    """librdkafka's built-in mock cluster (test.mock.num.brokers): real brokers on loopback that
    speak the Kafka protocol for produce, metadata and list-offsets. It has no controller, so
    admin requests (DescribeConfigs: cleanup policies) and offsets-for-times cannot be tested
    against it."""
    from confluent_kafka import Producer
    producer = Producer({"test.mock.num.brokers": 1, "log_level": 0})
    broker = next(iter(producer.list_topics(timeout=10).brokers.values()))
    # us-west's topics: test.a gets 42, 30 and 12 records in its partitions 0..2.
    for partition, count in ((0, 42), (1, 30), (2, 12)):
        for i in range(count):
            producer.produce("test.a", key=b"k%d" % i, value=b"v", partition=partition)
    for i in range(5):
        producer.produce("prod.tmp", value=b"x", partition=0)
    assert producer.flush(10) == 0
    yield f"{broker.host}:{broker.port}"
    del producer


def test_watermarks_from_a_kafka_broker(mock_kafka):
    from spark.clusters import KafkaCluster, TopicInfo
    cluster = KafkaCluster(None, {"bootstrap.servers": mock_kafka}, timeout_seconds=10)
    partitions = cluster.partitions()
    assert partitions["test.a"] == 4  # the mock creates topics with four partitions
    assert cluster.watermarks({"test.a": TopicInfo(partitions["test.a"], False)}) == {
        ("test.a", 0): (0, 42), ("test.a", 1): (0, 30), ("test.a", 2): (0, 12), ("test.a", 3): (0, 0)}


def test_offsets_audit_end_to_end_against_broker_and_rest(mock_kafka, connect_api, spark):
    """The REST stand-in serves PAYLOAD for repl-source (test.a: 41, 9 committed; partition 2 reset)."""
    from spark.clusters import KafkaCluster, TopicInfo
    from spark.offsets import audit_flow
    cluster = KafkaCluster(None, {"bootstrap.servers": mock_kafka}, timeout_seconds=10)
    flow = {"name": "f", "sourceAlias": "us-west", "excludeTopics": {"source": ["heartbeats"]},
            "connectors": [{"name": "repl-source", "restUrl": connect_api, "topics": ["test\\..*", "prod\\..*"],
                            "topicsExclude": ["prod\\.tmp"]}]}
    marks = cluster.watermarks({t: TopicInfo(n, False) for t, n in cluster.partitions().items()})
    rows = [(r.topic, r.partition, r.committed, r.lag, r.status.value)
            for r in audit_flow(flow, lambda url, c: fetch_connect_offsets(url, c, backoff_seconds=0), lambda: marks,
                                java_filters(spark), max_lag=5)]
    assert rows == [("test.a", 0, 41, 0, "ok"), ("test.a", 1, 9, 20, "lagging"),
                    ("test.a", 2, None, 12, "never-replicated"), ("test.a", 3, None, 0, "ok")]


def test_an_unreachable_broker_is_unverifiable():
    from spark.clusters import KafkaCluster
    cluster = KafkaCluster(None, {"bootstrap.servers": "127.0.0.1:9", "log_level": 0}, timeout_seconds=2)
    with pytest.raises(Unverifiable, match="metadata"):
        cluster.partitions()
