"""Failover and failback: the plan's outputs and guardrails (infra/plan/failover.py) and the readiness
check's decoding and verdicts (spark/failover.py). Checkpoint bytes come from Kafka's own
Checkpoint class of every supported release line, run on the JDK; the readiness check on real
clusters is tests/runtime/test_runtime_failover.py."""

from __future__ import annotations

import base64
import copy
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from infra.checks import validation
from infra.core.releases import SUPPORTED
from infra.plan import failover
from infra.plan.stack import plan
from infra.tools.rehearsal import jars
from infra.topology.resolution import resolve
from infra.topology.schema import FailoverProcedure, Topology
from spark import checkpoints as ckpt, failover as readiness, live
from spark.checkpoints import Checkpoint, Stamped, decode_checkpoint, newest_checkpoints
from spark.failover import CheckpointConnector, Observed, judge
from spark.live import GroupState
from spark.offsets import PartitionAudit, Status, Unverifiable
from tests.support.jregex_gen import java_verdicts
from tests.support.stacks import unavailable
from tests.support.topologies import pair as topo

# ------------------------------------------------------------------ checkpoints, as Kafka writes them

# Kafka's Checkpoint (connect/mirror-client) serialises itself in package-private methods: a class
# of the same package, on the same class path, calls them.
ORACLE = """
package org.apache.kafka.connect.mirror;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.apache.kafka.common.TopicPartition;

public class CheckpointBytes {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Base64.Decoder d = Base64.getDecoder();
        Base64.Encoder e = Base64.getEncoder();
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\\t", -1);
            Checkpoint c = new Checkpoint(new String(d.decode(f[0]), StandardCharsets.UTF_8),
                new TopicPartition(new String(d.decode(f[1]), StandardCharsets.UTF_8), Integer.parseInt(f[2])),
                Long.parseLong(f[3]), Long.parseLong(f[4]), new String(d.decode(f[5]), StandardCharsets.UTF_8));
            System.out.println(e.encodeToString(c.recordKey()) + "\\t" + e.encodeToString(c.recordValue()));
        }
    }
}
"""

CASES = [
    Checkpoint("test.readers", "us-west.test.orders", 0, 5, 5, ""),
    Checkpoint("g", "t", 2147483647, 9223372036854775807, 0, "meta"),
    Checkpoint("gruppe-ü-☃-😀", "a.b_c-d", 7, 0, 0, "ünïcode 😀"),
    Checkpoint("", "x" * 249, 1, 123456789012, 123456789000, "m" * 300),
]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def kafka_bytes(release, cases: list[Checkpoint], tmp_path: Path) -> list[tuple[bytes, bytes]]:
    if shutil.which("javac") is None:
        unavailable("no JDK (javac): Kafka's Checkpoint class is the oracle")
    try:
        classpath = jars.classpath(release)
    except jars.JarsError as exc:
        unavailable(str(exc))
    src = tmp_path / "src" / "CheckpointBytes.java"
    src.parent.mkdir(parents=True)
    src.write_text(ORACLE)
    out = tmp_path / "classes"
    subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", classpath, str(src)], check=True,
                   capture_output=True, timeout=300)
    lines = "".join(f"{_b64(c.group)}\t{_b64(c.topic)}\t{c.partition}\t{c.upstream}\t{c.downstream}\t"
                    f"{_b64(c.metadata)}\n" for c in cases)
    done = subprocess.run(["java", "-cp", f"{out}:{classpath}", "org.apache.kafka.connect.mirror.CheckpointBytes"],
                          input=lines, capture_output=True, text=True, check=True, timeout=300)
    return [(base64.b64decode(k), base64.b64decode(v)) for k, v in
            (line.split("\t") for line in done.stdout.splitlines())]


@pytest.mark.parametrize("release", SUPPORTED, ids=lambda r: f"{r.flavour.value}-{r.version}-kafka-{r.kafka}")
def test_checkpoints_decode_as_kafka_writes_them(release, tmp_path):
    written = kafka_bytes(release, CASES, tmp_path)
    assert [decode_checkpoint(k, v) for k, v in written] == CASES
    # The key carries no version; the value starts with version 0 (INT16).
    key, value = written[0]
    assert key == b"\x00\x0ctest.readers\x00\x13us-west.test.orders\x00\x00\x00\x00"
    assert value == b"\x00\x00" + (5).to_bytes(8, "big") * 2 + b"\x00\x00"


@pytest.mark.parametrize("key, value, message", [
    (b"\x00\x05ab", b"", "checkpoint key: 4 byte(s) end inside group (at byte 2, 5 needed)"),
    (b"\xff\xfe", b"", "checkpoint key: group has a negative length (-2)"),
    (b"\x00\x01g\x00\x01t\x00\x00", b"", "checkpoint key: 8 byte(s) end inside partition (at byte 6, 4 needed)"),
    (b"\x00\x01g\x00\x01t\x00\x00\x00\x01", b"\x00\x01" + bytes(18),
     "checkpoint value: version 1; this reader knows version 0 (Kafka 3.8 to 4.x)"),
    (b"\x00\x01g\x00\x01t\x00\x00\x00\x01", b"\x00\x00" + bytes(12),
     "checkpoint value: 14 byte(s) end inside offset (at byte 10, 8 needed)"),
])
def test_malformed_checkpoints_are_refused_exactly(key, value, message):
    with pytest.raises(ValueError) as exc:
        decode_checkpoint(key, value)
    assert str(exc.value) == message


def test_the_newest_checkpoint_per_key_wins_and_bad_records_are_unverifiable():
    old, new = Checkpoint("g", "a.t", 0, 3, 3, ""), Checkpoint("g", "a.t", 0, 9, 8, "")
    assert newest_checkpoints([_record(1, new, 20), _record(0, old, 10), (0, 2, 30, None, None)], "a.checkpoints.internal") \
        == {("g", "a.t", 0): Stamped(new, 20)}
    with pytest.raises(Unverifiable) as exc:
        newest_checkpoints([(0, 4, 1, b"\x00", b"")], "a.checkpoints.internal")
    assert str(exc.value) == ("a.checkpoints.internal[0] offset 4: checkpoint key: 1 byte(s) end inside the length "
                              "of group (at byte 0, 2 needed)")


# ------------------------------------------------------------------ the plan: wait, procedures, topics


def flow_plan(**flow):
    model = validation.parse(topo({}, {}, **flow))
    (fp,) = plan(model).flows
    return fp


@pytest.mark.parametrize("flow, wait", [
    ({}, 240),                                               # Kafka's defaults, 60 s and 60 s
    ({"syncGroupOffsets": {"intervalSeconds": 5}, "config": {"checkpoint": {
        "emit.checkpoints.interval.seconds": 10}}}, 30),
    ({"config": {"checkpoint": {"emit.checkpoints.interval.seconds": "15"}}}, 150),
    ({"checkpoints": False}, None),
    ({"syncGroupOffsets": {"enabled": False}}, None),
    ({"config": {"checkpoint": {"emit.checkpoints.enabled": False}}}, None),
    ({"config": {"checkpoint": {"emit.checkpoints.interval.seconds": -1}}}, None),
])
def test_the_failover_wait_is_twice_emit_plus_sync(flow, wait):
    assert failover.failover_outputs(flow_plan(**flow).direction)["waitSeconds"] == wait


def test_outputs_of_a_default_flow():
    fp = flow_plan(failover={"procedure": "continuous"}, topicsExclude=["orders\\.tmp.*"])
    assert failover.failover_outputs(fp.direction) == {
        "procedure": "continuous", "procedures": ["continuous", "cutoff", "disaster"], "waitSeconds": 240,
        "topics": [r"a\.(?!(?:orders\.tmp.*|.*[\-\.]internal|.*\.replica|__.*)$)(?:orders.*)",
                   r"(?!(?:orders\.tmp.*|.*[\-\.]internal|.*\.replica|__.*)$)(?:orders.*)"]}
    # After a cutoff the old data is read already: the active topics alone.
    assert failover.subscriptions(fp.direction, FailoverProcedure.cutoff) == [
        r"(?!(?:orders\.tmp.*|.*[\-\.]internal|.*\.replica|__.*)$)(?:orders.*)"]


def test_outputs_of_an_identity_flow():
    fp = flow_plan(replicationPolicy="identity", topics=["orders", "pay.*"])
    out = failover.failover_outputs(fp.direction)
    assert (out["procedure"], out["procedures"], out["waitSeconds"]) == ("cutoff", ["cutoff", "disaster"], 240)
    storage = r"repl-a-b-config-topic|repl-a-b-offsets-topic|repl-a-b-status-topic"
    assert out["topics"] == [rf"(?!(?:{storage}|.*[\-\.]internal|.*\.replica|__.*)$)(?:orders|pay.*)"]


def test_subscriptions_select_what_the_connector_writes_as_java_reads_them():
    """The JDK decides: a consumer subscribing with the regexes gets the replica and active topics
    of exactly the topics the connector replicates."""
    fp = flow_plan(failover={"procedure": "continuous"}, topics=["orders.*", "pay"], topicsExclude=["orders\\.tmp.*"])
    replica, active = failover.subscriptions(fp.direction, FailoverProcedure.continuous)
    names = ["a.orders.eu", "a.pay", "a.orders.tmp1", "a.payx", "orders.eu", "pay", "orders.tmp1", "b.orders",
             "a.orders-internal", "a.checkpoints.internal", "orders.replica", "a.heartbeats", "__consumer_offsets"]
    try:
        verdicts = java_verdicts([([replica], names), ([active], names)])
    except RuntimeError as exc:
        unavailable(str(exc))
    assert verdicts == [("M", "1100000000000"), ("M", "0000110000000")]


# ------------------------------------------------------------------ guardrails


@pytest.mark.parametrize("flow, message", [
    ({"replicationPolicy": "identity", "failover": {"procedure": "continuous"}},
     "flows[0] (repl-a-b): failover.procedure: got 'continuous'; expected cutoff or disaster: continuous failover "
     "works with the default replication policy only (consumers read the prefixed replica and the active topic side "
     "by side); this flow uses the identity policy. Set `failover.procedure: cutoff`, or `replicationPolicy: default`"),
    ({"checkpoints": False, "failover": {"procedure": "continuous"}},
     "flows[0] (repl-a-b): failover.procedure: got 'continuous'; expected cutoff or disaster: continuous failover "
     "relies on checkpoints and group offset sync, and checkpoints are off for this flow. Set `failover.procedure: "
     "cutoff`, or turn them on (`checkpoints`, `syncGroupOffsets.enabled`)"),
    ({"syncGroupOffsets": {"enabled": False}, "failover": {"procedure": "continuous"}},
     "flows[0] (repl-a-b): failover.procedure: got 'continuous'; expected cutoff or disaster: continuous failover "
     "relies on checkpoints and group offset sync, and group offset sync is off for this flow. Set "
     "`failover.procedure: cutoff`, or turn them on (`checkpoints`, `syncGroupOffsets.enabled`)"),
    ({"config": {"checkpoint": {"emit.checkpoints.interval.seconds": "soon"}}},
     "flows[0] (repl-a-b): config.checkpoint.emit.checkpoints.interval.seconds: got 'soon'; expected a whole number "
     "of seconds (Kafka reads it as a long)"),
])
def test_the_guardrails_refuse_what_the_documents_forbid(flow, message):
    # The model as the validation pipeline resolves it, before any rule (which wires these in).
    model = resolve(Topology.model_validate(topo({}, {}, **flow)))
    assert [str(p) for p in failover.problems(model)] == [message]


def test_the_guardrails_accept_what_the_documents_allow():
    for flow in ({}, {"failover": {"procedure": "continuous"}},
                 {"replicationPolicy": "identity", "failover": {"procedure": "disaster"}},
                 {"bidirectional": True, "failover": {"procedure": "cutoff"}}):
        assert failover.problems(validation.parse(topo({}, {}, **flow))) == [], flow


def test_the_job_and_the_plan_allow_the_same_procedures():
    """spark/failover.py judges the running connector, infra/plan/failover.py the topology: one rule."""
    for policy in ("default", "identity"):
        for checkpoints, sync in ((True, True), (True, False), (False, True)):
            fp = flow_plan(replicationPolicy=policy, checkpoints=checkpoints, syncGroupOffsets={"enabled": sync})
            running_connector = ([CheckpointConnector("c", "RUNNING", ("RUNNING",), 60, 60 if sync else None)]
                                 if checkpoints else [])
            assert readiness.allowed(policy, running_connector) == failover.failover_outputs(fp.direction)["procedures"]
            assert readiness.wait_seconds(running_connector) == failover.failover_outputs(fp.direction)["waitSeconds"]


def test_the_job_names_the_checkpoints_topic_as_the_plan_does():
    from infra.plan.audit import audit_config
    for flow in ({}, {"checkpoints": False}, {"replicationPolicy": "identity"}, {"bidirectional": True}):
        model = validation.parse({**topo({}, {}, **flow), "audit": {}})
        stack = plan(model)
        for fp, config in zip(stack.flows, audit_config(model, stack)["flows"], strict=True):
            assert ckpt.checkpoints_topic(config) == fp.internal_topics.target_checkpoints, flow


# ------------------------------------------------------------------ the verdicts

FLOW = {"name": "repl-us-west-us-east", "sourceAlias": "us-west", "targetAlias": "us-east",
        "replicationPolicy": "default", "topicPrefix": "us-west.",
        "excludeTopics": {"source": [], "target": ["us-west.checkpoints.internal"]},
        "connectors": [{"name": "repl-us-west-us-east-source", "restUrl": "http://connect:8083"}]}
NOW = 1_767_225_600_000
RUNNING = CheckpointConnector("repl-us-west-us-east-checkpoint", "RUNNING", ("RUNNING",), 5, 5)
EMPTY = GroupState("EMPTY", 0)


def seen(**changes) -> Observed:
    """A flow ready for a continuous failover: group g read 5 records of each partition on the
    source, checkpointed and synced; replication caught up."""
    base = Observed(
        connectors=[RUNNING],
        checkpoints={("g", "us-west.t", p): Stamped(Checkpoint("g", "us-west.t", p, 5, 5, ""), NOW - 3000)
                     for p in (0, 1)},
        groups=["g"],
        target_offsets={"g": {("us-west.t", 0): 5, ("us-west.t", 1): 5}},
        target_states={"g": EMPTY},
        replication=[PartitionAudit("repl-us-west-us-east-source", "t", p, 0, 5, 4, 0, 0, Status.ok) for p in (0, 1)],
        source_offsets={"g": {("t", 0): 5, ("t", 1): 5}},
        source_states={"g": EMPTY},
        source_ends={("t", 0): 5, ("t", 1): 5})
    for key, value in changes.items():
        setattr(base, key, value)
    return base


def findings(report: dict) -> list[str]:
    """Every finding of a report, each with where it is."""
    out = list(report["findings"])
    for g in report["groups"]:
        out += [f"{g['group']}: {f}" for f in g["findings"]]
        out += [f"{g['group']} {p['topic']}[{p['partition']}]: {f}" for p in g["partitions"] for f in p["findings"]]
    return out


def test_ready_for_a_continuous_failover():
    report = judge(FLOW, "continuous", seen(), NOW, 0)
    assert (report["verdict"], findings(report), report["waitSeconds"]) == ("ready", [], 20)
    assert report["checkpointConnector"] == {"name": "repl-us-west-us-east-checkpoint", "state": "RUNNING",
                                             "tasks": ["RUNNING"], "emitSeconds": 5, "syncSeconds": 5}
    assert report["checkpointConnectors"] == [report["checkpointConnector"]]
    assert report["groups"][0]["partitions"][0] == {
        "topic": "t", "targetTopic": "us-west.t", "partition": 0, "sourceCommitted": 5, "sourceEnd": 5,
        "checkpoint": {"upstream": 5, "translated": 5, "metadata": "", "timestamp": NOW - 3000, "ageSeconds": 3.0},
        "targetCommitted": 5, "findings": []}
    assert readiness.summary(report) == ("failover ready: flow repl-us-west-us-east (us-west -> us-east, default "
                                         "policy), procedure continuous; allowed: continuous, cutoff, disaster; wait "
                                         "after stopping consumers: 20 s")


LAGGING = [PartitionAudit("repl-us-west-us-east-source", "t", 0, 0, 9, 4, 4, 0, Status.lagging),
           PartitionAudit("repl-us-west-us-east-source", "t", 1, 2, 5, None, 3, 0, Status.never_replicated),
           PartitionAudit("repl-us-west-us-east-source", "u", 0, 8, 9, 4, 0, 3, Status.retention_loss),
           PartitionAudit("repl-us-west-us-east-source", "v", 0, 0, 2, 6, 2, 0, Status.offset_past_end)]


@pytest.mark.parametrize("procedure, changes, expected", [
    ("continuous", {"connectors": []},
     ["the flow runs no checkpoint connector: consumers have no translated offsets on us-east; fail over with a cutoff "
      "(--procedure cutoff)"]),
    ("continuous", {"connectors": [CheckpointConnector("c", "RUNNING", ("RUNNING",), 5, None)]},
     ["checkpoint connector c: group offset sync is off, so consumers would not find their offsets on us-east; fail "
      "over with a cutoff (--procedure cutoff)"]),
    ("continuous", {"connectors": [CheckpointConnector("c", "STOPPED", (), 5, 5)]},
     ["checkpoint connector c is STOPPED (tasks: none): checkpoints and group offset sync do not run"]),
    ("continuous", {"connectors": [CheckpointConnector("c", "RUNNING", ("RUNNING", "FAILED"), 5, 5)]},
     ["checkpoint connector c is RUNNING (tasks: RUNNING, FAILED): checkpoints and group offset sync do not run"]),
    ("continuous", {"replication": LAGGING},
     ["t[0]: replication is 4 record(s) behind the source (threshold 0)",
      "t[1]: never replicated (3 record(s) on the source)",
      "u[0]: 3 offset(s) aged out of the source before replication",
      "v[0]: the source connector's stored offset 6 is past the partition's end 2: the topic was deleted and created "
      "again; reset the connector's offsets for it (docs/operations.md#a-source-topic-deleted-and-created-again)"]),
    ("cutoff", {"replication": LAGGING[:1]}, ["t[0]: replication is 4 record(s) behind the source"]),
    ("continuous", {"source_states": {"g": GroupState("STABLE", 2)}},
     ["g: still active on us-west (state STABLE, 2 member(s)): stop its consumers first"]),
    ("continuous", {"target_states": {"g": GroupState("PREPARING_REBALANCING", 1)}},
     ["g: active on us-east (state PREPARING_REBALANCING, 1 member(s)): stop its consumers there first (offsets are "
      "synced or reset only into inactive groups)"]),
    ("continuous", {"source_offsets": {"g": {("t", 0): 7, ("t", 1): 5, ("t", 2): 1}}},
     ["g t[0]: the newest checkpoint (3 s old) translates offset 5, the group committed 7 on us-west: checkpoints "
      "have not caught up",
      "g t[2]: no checkpoint yet for offset 1 committed on us-west: on us-east the group would start where its "
      "auto.offset.reset says"]),
    ("continuous", {"target_offsets": {"g": {("us-west.t", 0): 4, ("us-west.t", 1): 6}}},
     ["g t[0]: not synced: committed 4 on us-east, translated offset 5",
      "g t[1]: committed 6 on us-east, past the translated offset 5: the group has read the replica there"]),
    ("continuous", {"target_offsets": {}},
     ["g t[0]: not synced: no committed offset on us-east (translated offset 5)",
      "g t[1]: not synced: no committed offset on us-east (translated offset 5)"]),
    ("continuous", {"groups": ["g", "other"]},
     ["other: no checkpoint on us-east and no committed offset on us-west for the flow's topics"]),
    ("disaster", {"groups": ["other"], "replication": None, "source_offsets": None, "source_states": None},
     ["other: no checkpoint on us-east for the flow's topics"]),
    ("cutoff", {"source_offsets": {"g": {("t", 0): 2, ("t", 1): 5}}},
     ["g t[0]: 3 record(s) left to read on us-west: let the consumers drain first"]),
])
def test_not_ready_names_each_finding(procedure, changes, expected):
    report = judge(FLOW, procedure, seen(**changes), NOW, 0)
    assert (report["verdict"], findings(report)) == ("not-ready", expected)


def test_what_each_procedure_leaves_out():
    # Cutoff: checkpoints and sync are not relied on; a default-policy target group may be active.
    stale = {"connectors": [], "checkpoints": {}, "target_offsets": {}, "target_states": {"g": GroupState("STABLE", 1)}}
    assert judge(FLOW, "cutoff", seen(**stale), NOW, 0)["verdict"] == "ready"
    # ...but under Identity the target groups are reset to the latest, which needs them inactive.
    identity = {**FLOW, "replicationPolicy": "identity", "topicPrefix": ""}
    observed = seen(target_states={"g": GroupState("STABLE", 1)}, checkpoints={}, target_offsets={},
                    source_offsets={"g": {("t", 0): 5}})
    assert findings(judge(identity, "cutoff", observed, NOW, 0)) == [
        "g: active on us-east (state STABLE, 1 member(s)): stop its consumers there first (offsets are synced or "
        "reset only into inactive groups)"]
    # Disaster: the source is never read; the target's synced offsets are what is judged.
    gone = {"replication": None, "source_offsets": None, "source_states": None, "source_ends": None}
    assert judge(FLOW, "disaster", seen(**gone), NOW, 0)["verdict"] == "ready"


def test_continuous_is_refused_under_identity_and_errors_are_errors():
    identity = {**FLOW, "replicationPolicy": "identity", "topicPrefix": ""}
    report = judge(identity, "continuous", seen(checkpoints={}, target_offsets={}), NOW, 0)
    assert report["findings"][0] == ("continuous failover needs the default replication policy; this flow uses "
                                     "identity: fail over with a cutoff (--procedure cutoff)")
    assert report["procedures"] == ["cutoff", "disaster"]
    broken = judge(FLOW, "continuous", Observed([], {}, [], {}, {}, errors=["metadata: timed out"]), NOW, 0)
    assert (broken["verdict"], broken["errors"], broken["findings"]) == ("error", ["metadata: timed out"], [])


def test_the_checkpoint_connector_as_it_runs():
    def info(config, state="RUNNING", tasks=("RUNNING",)):
        return {"info": {"config": config}, "status": {"connector": {"state": state},
                                                       "tasks": [{"id": i, "state": s} for i, s in enumerate(tasks)]}}
    cls = {"connector.class": readiness.CHECKPOINT_CLASS}
    assert readiness.checkpoint_connector("c", info({**cls, "sync.group.offsets.enabled": "true"})) == \
        CheckpointConnector("c", "RUNNING", ("RUNNING",), 60, 60)
    # Kafka's own default leaves group offset sync off.
    assert readiness.checkpoint_connector("c", info(cls)).sync_seconds is None
    assert readiness.checkpoint_connector("c", info({**cls, "emit.checkpoints.enabled": "false",
                                                     "sync.group.offsets.enabled": "true",
                                                     "sync.group.offsets.interval.seconds": "5"})) == \
        CheckpointConnector("c", "RUNNING", ("RUNNING",), None, 5)
    with pytest.raises(Unverifiable) as exc:
        readiness.checkpoint_connector("c", info({**cls, "emit.checkpoints.interval.seconds": "${x}"}))
    assert str(exc.value) == "checkpoint connector c: emit.checkpoints.interval.seconds is '${x}', not a number of seconds"
    listing = {"a-checkpoint": info({**cls}), "a-source": info({"connector.class": "x.MirrorSourceConnector"})}
    assert readiness.find_checkpoint_connectors(FLOW, lambda url, path: listing) == [
        CheckpointConnector("a-checkpoint", "RUNNING", ("RUNNING",), 60, None)]
    assert readiness.find_checkpoint_connectors(FLOW, lambda url, path: {"a-source": listing["a-source"]}) == []
    # A flow split over two Connect clusters runs one checkpoint connector on each: both are read,
    # each from its own REST API.
    split = {**FLOW, "connectors": [{"name": "b-source", "restUrl": "http://connect-b:8083"},
                                    {"name": "a-source", "restUrl": "http://connect-a:8083"}]}
    listings = {"http://connect-a:8083": listing,
                "http://connect-b:8083": {"b-checkpoint": info({**cls, "sync.group.offsets.enabled": "true"},
                                                               "STOPPED", ()),
                                          "b-source": listing["a-source"]}}
    assert readiness.find_checkpoint_connectors(split, lambda url, path: listings[url]) == [
        CheckpointConnector("a-checkpoint", "RUNNING", ("RUNNING",), 60, None),
        CheckpointConnector("b-checkpoint", "STOPPED", (), 60, 60)]


def test_a_split_flow_is_judged_on_every_checkpoint_connector():
    """One checkpoint connector per Connect cluster of a split flow (connectClusters): continuous
    needs every one running with checkpoints and sync; the wait is the longest of theirs."""
    a = CheckpointConnector("repl-us-west-us-east-a-checkpoint", "RUNNING", ("RUNNING",), 5, 5)
    b = CheckpointConnector("repl-us-west-us-east-b-checkpoint", "RUNNING", ("RUNNING", "RUNNING"), 10, 5)
    report = judge(FLOW, "continuous", seen(connectors=[a, b]), NOW, 0)
    assert (report["verdict"], findings(report), report["procedures"], report["waitSeconds"]) == (
        "ready", [], ["continuous", "cutoff", "disaster"], 30)
    assert (report["checkpointConnector"], report["checkpointConnectors"]) == (None, [
        {"name": "repl-us-west-us-east-a-checkpoint", "state": "RUNNING", "tasks": ["RUNNING"], "emitSeconds": 5,
         "syncSeconds": 5},
        {"name": "repl-us-west-us-east-b-checkpoint", "state": "RUNNING", "tasks": ["RUNNING", "RUNNING"],
         "emitSeconds": 10, "syncSeconds": 5}])
    stopped = CheckpointConnector("repl-us-west-us-east-b-checkpoint", "STOPPED", (), 10, 5)
    report = judge(FLOW, "continuous", seen(connectors=[a, stopped]), NOW, 0)
    assert (report["verdict"], findings(report), report["waitSeconds"]) == ("not-ready", [
        "checkpoint connector repl-us-west-us-east-b-checkpoint is STOPPED (tasks: none): checkpoints and group "
        "offset sync do not run"], 30)
    assert [c["state"] for c in report["checkpointConnectors"]] == ["RUNNING", "STOPPED"]
    # One without group offset sync: continuous is not allowed, and no wait makes offsets appear.
    unsynced = CheckpointConnector("repl-us-west-us-east-b-checkpoint", "RUNNING", ("RUNNING",), 10, None)
    report = judge(FLOW, "continuous", seen(connectors=[a, unsynced]), NOW, 0)
    assert (report["verdict"], findings(report), report["procedures"], report["waitSeconds"]) == ("not-ready", [
        "checkpoint connector repl-us-west-us-east-b-checkpoint: group offset sync is off, so consumers would not "
        "find their offsets on us-east; fail over with a cutoff (--procedure cutoff)"], ["cutoff", "disaster"], None)


# ------------------------------------------------------------------ the command line


def test_the_command_refuses_what_it_cannot_check(tmp_path, capsys):
    from spark import audit
    assert audit.main(["failover", "--config", str(tmp_path / "none.json"), "--flow", "f"]) == 2
    assert capsys.readouterr().err == (f"failover error: could not tell: the audit configuration "
                                       f"{tmp_path / 'none.json'} is not a readable file\n")
    config = json.loads(json.dumps({"version": 2, "clusters": {}, "flows": [], "settings": {
        "window": {"lookbackMinutes": 60, "graceMinutes": 10, "bucketSeconds": 60},
        "thresholds": {"maxLag": 1, "maxMissing": 0, "maxUnexpected": 0, "maxHeartbeatAgeSeconds": 300}}}))
    (tmp_path / "audit.json").write_text(json.dumps(copy.deepcopy(config)))
    assert audit.main(["failover", "--config", str(tmp_path / "audit.json"), "--flow", "f"]) == 2
    assert capsys.readouterr().err == "failover error: could not tell: no flow named f in the configuration ()\n"


# ------------------------------------------------------------------ what is read, and from where


def _record(offset: int, c: Checkpoint, stamp: int) -> tuple:
    """A checkpoint record with the bytes Kafka writes (the layout the JDK test above pins)."""
    key = (len(c.group).to_bytes(2, "big") + c.group.encode() + len(c.topic).to_bytes(2, "big") + c.topic.encode()
           + c.partition.to_bytes(4, "big"))
    return (0, offset, stamp, key, b"\x00\x00" + c.upstream.to_bytes(8, "big") + c.downstream.to_bytes(8, "big")
            + b"\x00\x00")


class FakeCluster:
    def __init__(self, topics=None, marks=None, records=None, offsets=None, states=None):
        self._topics, self._marks, self._records = topics or {}, marks or {}, records or []
        self._offsets, self._states, self.asked = offsets or {}, states or {}, []

    def partitions(self):
        self.asked.append("partitions")
        return {t: n for t, n in self._topics.items()}

    def watermarks(self, topics):
        return dict(self._marks)

    def records(self, topic, partitions):
        self.asked.append(f"records {topic}")
        return list(self._records)

    def group_offsets(self, group):
        self.asked.append(f"offsets {group}")
        return dict(self._offsets.get(group, {}))

    def group_states(self, groups):
        return {g: self._states.get(g, GroupState("DEAD", 0)) for g in groups}

    def groups(self):
        self.asked.append("groups")
        return sorted(self._offsets)


class PythonFilters:
    """A stand-in for the JVM's filters (these patterns mean the same in Python's re)."""

    def selects(self, connector, never, topic):
        import re
        return (topic not in never and any(re.fullmatch(p, topic) for p in connector["topics"])
                and not any(re.fullmatch(p, topic) for p in connector["topicsExclude"]))


def test_observe_reads_the_flows_checkpoints_and_groups():
    flow = {**FLOW, "connectors": [{**FLOW["connectors"][0], "topics": ["t"], "topicsExclude": []}]}
    mine, other = Checkpoint("g", "us-west.t", 0, 5, 5, ""), Checkpoint("h", "us-west.other", 0, 1, 1, "")
    target = FakeCluster(topics={"us-west.checkpoints.internal": 1},
                         records=[_record(0, mine, NOW - 1000), _record(1, other, NOW - 1000)],
                         offsets={"g": {("us-west.t", 0): 5}}, states={"g": EMPTY})
    source = FakeCluster(topics={"t": 1, "other": 1}, marks={("t", 0): (0, 5), ("other", 0): (0, 2)},
                         offsets={"g": {("t", 0): 5, ("other", 0): 2}}, states={"g": GroupState("STABLE", 1)})
    listing = {"c": {"info": {"config": {"connector.class": readiness.CHECKPOINT_CLASS,
                                         "sync.group.offsets.enabled": "true"}},
                     "status": {"connector": {"state": "RUNNING"}, "tasks": [{"id": 0, "state": "RUNNING"}]}}}
    offsets = {"offsets": [{"partition": {"cluster": "us-west", "topic": "t", "partition": 0}, "offset": {"offset": 4}}]}

    def get(url, path):
        return offsets if path.endswith("/offsets") else listing
    observed = readiness.observe(flow, "continuous", {"us-west": source, "us-east": target}, get, PythonFilters(),
                                 [], 0)
    # Group h checkpoints a topic of another flow from us-west: not this flow's.
    assert (observed.groups, list(observed.checkpoints)) == (["g"], [("g", "us-west.t", 0)])
    # The group's offsets on topics the flow does not replicate are left out.
    assert observed.source_offsets == {"g": {("t", 0): 5}}
    assert observed.source_ends == {("t", 0): 5}
    assert [(r.topic, r.partition, r.committed, r.lag) for r in observed.replication] == [("t", 0, 4, 0)]
    assert findings(judge(flow, "continuous", observed, NOW, 0)) == [
        "g: still active on us-west (state STABLE, 1 member(s)): stop its consumers first"]
    # A group reading the flow's topics on the source with no checkpoint is checked too, and not
    # ready: on the target it would start where its auto.offset.reset says. One that reads only
    # other topics is not the flow's.
    source._offsets.update({"late": {("t", 0): 3}, "elsewhere": {("other", 0): 1}})
    wider = readiness.observe(flow, "continuous", {"us-west": source, "us-east": target}, get, PythonFilters(), [], 0)
    assert (wider.groups, wider.source_offsets) == (["g", "late"], {"g": {("t", 0): 5}, "late": {("t", 0): 3}})
    assert findings(judge(flow, "continuous", wider, NOW, 0)) == [
        "g: still active on us-west (state STABLE, 1 member(s)): stop its consumers first",
        "late t[0]: no checkpoint yet for offset 3 committed on us-west: on us-east the group would start where its "
        "auto.offset.reset says"]
    # Groups named: only those.
    named = readiness.observe(flow, "continuous", {"us-west": source, "us-east": target}, get, PythonFilters(),
                              ["g"], 0)
    assert named.groups == ["g"]
    # On disaster the source is never asked anything.
    untouched = FakeCluster()
    gone = readiness.observe(flow, "disaster", {"us-west": untouched, "us-east": target}, get, PythonFilters(), ["g"], 0)
    assert (untouched.asked, gone.replication, gone.source_offsets) == ([], None, None)


def test_under_identity_the_target_s_ends_of_the_flow_s_topics_are_reported():
    """Where an identity failback starts (docs/operations.md#controlled-failback): each partition's
    end offset on the old target, of the flow's topics only; nothing read under a prefixing policy."""
    flow = {**FLOW, "replicationPolicy": "identity", "topicPrefix": "",
            "excludeTopics": {"source": ["heartbeats"], "target": ["us-west.checkpoints.internal", "heartbeats"]},
            "connectors": [{**FLOW["connectors"][0], "topics": ["t", "heartbeats", ".*\\.internal"], "topicsExclude": []}]}
    marks = {("t", 0): (0, 7), ("t", 1): (2, 9), ("other", 0): (0, 3), ("heartbeats", 0): (0, 40),
             ("us-west.checkpoints.internal", 0): (0, 4)}
    asked = []

    class Target(FakeCluster):
        def watermarks(self, topics):
            asked.append(dict(topics))
            return {tp: m for tp, m in marks.items() if tp[0] in topics}
    target = Target(topics={"t": 2, "other": 1, "heartbeats": 1, "us-west.checkpoints.internal": 1})
    seen = readiness.observe(flow, "disaster", {"us-west": FakeCluster(), "us-east": target}, lambda u, p: {},
                             PythonFilters(), [], 0)
    assert asked == [{"t": 2}]
    assert judge(flow, "disaster", seen, NOW, 0)["targetEnds"] == [
        {"topic": "t", "partition": 0, "end": 7}, {"topic": "t", "partition": 1, "end": 9}]
    prefixed = readiness.observe(FLOW | {"connectors": [{**FLOW["connectors"][0], "topics": ["t"], "topicsExclude": []}]},
                                 "disaster", {"us-west": FakeCluster(), "us-east": target}, lambda u, p: {},
                                 PythonFilters(), [], 0)
    assert (len(asked), judge(FLOW, "disaster", prefixed, NOW, 0)["targetEnds"]) == (1, None)


def test_an_active_topic_missing_on_the_target_is_found_on_every_procedure():
    """Under the default policy consumers move to the active topic too (failover.topics):
    missing on the target, a consumer that subscribes before it exists is assigned it late and,
    reading from latest, skips what producers wrote before. Only the flow's own replicas count."""
    flow = {**FLOW, "connectors": [{**FLOW["connectors"][0], "topics": ["t", "u"], "topicsExclude": []}]}
    target = FakeCluster(topics={"us-west.t": 3, "us-west.u": 1, "u": 1, "us-west.other": 2})
    source = FakeCluster(topics={"t": 3, "u": 1}, marks={("t", p): (0, 0) for p in range(3)} | {("u", 0): (0, 0)})
    listing = {"c": {"info": {"config": {"connector.class": readiness.CHECKPOINT_CLASS,
                                         "sync.group.offsets.enabled": "true"}},
                     "status": {"connector": {"state": "RUNNING"}, "tasks": [{"id": 0, "state": "RUNNING"}]}}}

    def get(url, path):
        return {"offsets": []} if path.endswith("/offsets") else listing
    finding = ("active topic t does not exist on us-east: create it (3 partition(s), as its replica us-west.t) before "
               "the consumers move. They subscribe to it (failover.topics), are assigned it only once it exists, and "
               "with auto.offset.reset latest skip what producers write to it before")
    for procedure in ("continuous", "cutoff", "disaster"):
        seen = readiness.observe(flow, procedure, {"us-west": source, "us-east": target}, get, PythonFilters(), [], 0)
        assert seen.missing_active == [("t", 3)]
        report = judge(flow, procedure, seen, NOW, 0)
        assert finding in report["findings"] and report["verdict"] == "not-ready"
    target._topics["t"] = 3
    seen = readiness.observe(flow, "cutoff", {"us-west": source, "us-east": target}, get, PythonFilters(), [], 0)
    assert seen.missing_active == []
    # Identity: the replica is the active topic.
    assert readiness.missing_active_topics({**flow, "topicPrefix": ""}, {"t": 3}, PythonFilters()) == []


# ------------------------------------------------------------------ reading the checkpoints topic

TOPIC = "us-west.checkpoints.internal"


class FakeMessage:
    """A consumed message as confluent_kafka.Message answers: a record, or an event (an error)."""

    def __init__(self, partition, offset, record=None, error=None):
        self._partition, self._offset, self._record, self._error = partition, offset, record, error

    def error(self):
        return self._error

    def partition(self):
        return self._partition

    def offset(self):
        return self._offset

    def timestamp(self):
        return (1, self._record[0])

    def key(self):
        return self._record[1]

    def value(self):
        return self._record[2]


class FakeConsumer:
    """A consumer of the checkpoints topic: watermarks, batches of messages, positions."""

    def __init__(self, marks, batches, positions):
        self.marks, self.batches, self.positions, self.log = marks, list(batches), positions, []

    def get_watermark_offsets(self, tp, timeout):
        return self.marks[tp.partition]

    def assign(self, tps):
        self.log.append(("assign", [(tp.topic, tp.partition, tp.offset) for tp in tps]))

    def consume(self, count, timeout):
        return self.batches.pop(0) if self.batches else []

    def position(self, tps):
        from confluent_kafka import TopicPartition
        return [TopicPartition(tp.topic, tp.partition, self.positions.get(tp.partition, -1001)) for tp in tps]

    def unassign(self):
        self.log.append("unassign")

    def close(self):
        self.log.append("close")


class FakeKafka:
    timeout = 30.0


def _eof(partition, offset):
    from confluent_kafka import KafkaError
    return FakeMessage(partition, offset, error=KafkaError(KafkaError._PARTITION_EOF))


RECORDS = [(0, 0, NOW, b"k0", b"v0"), (0, 1, NOW + 1, b"k1", b"v1")]


def _messages():
    return [FakeMessage(p, o, (stamp, k, v)) for p, o, stamp, k, v in RECORDS]


def test_an_exactly_once_checkpoints_topic_is_read_to_its_end():
    """Under exactly-once the checkpoint connector writes in transactions: the last offset of a
    partition (2 here, high watermark 3) is a commit marker no consumer delivers. The end-of-
    partition event ends the partition, though the position stays at the marker."""
    made = []
    consumer = FakeConsumer({0: (0, 3), 1: (5, 5)}, [_messages(), [_eof(0, 3)]], {0: 2})

    def make(config):
        made.append(config)
        return consumer
    cluster = live.LiveCluster(FakeKafka(), {"bootstrap.servers": "b:9092"}, "us-east", "target", make)
    assert cluster.records(TOPIC, 2) == RECORDS
    # Committed records only, and the end-of-partition event asked for.
    assert made == [{"bootstrap.servers": "b:9092", "group.id": "kafka-replication-audit",
                     "enable.auto.commit": False, "enable.partition.eof": True, "isolation.level": "read_committed",
                     "log_level": 3}]
    assert consumer.log == [("assign", [(TOPIC, 0, 0)]), "unassign", "close"]


def test_a_partition_ends_when_the_position_reaches_the_high_watermark():
    consumer = FakeConsumer({0: (0, 3)}, [_messages()], {0: 3})  # no event: the position passed the marker
    cluster = live.LiveCluster(FakeKafka(), {}, "us-east", "target", lambda config: consumer)
    assert cluster.records(TOPIC, 1) == RECORDS
    assert consumer.batches == [] and consumer.log[-2:] == ["unassign", "close"]


def test_a_topic_not_read_to_its_end_names_each_partition_left():
    consumer = FakeConsumer({0: (0, 3), 1: (4, 9)}, [_messages()], {0: 2})
    cluster = live.LiveCluster(FakeKafka(), {}, "us-east", "target", lambda config: consumer)
    times = iter([0.0, 1.0, 61.0])
    with pytest.raises(live.ClusterUnverifiable) as exc:
        live._read_topic(consumer, cluster, TOPIC, 2, clock=lambda: next(times))
    assert (str(exc.value), exc.value.role) == (
        f"{TOPIC} on us-east (target): not read to its end within 60 s ({TOPIC}[0] position 2, high watermark 3; "
        f"{TOPIC}[1] no position, high watermark 9)", "target")
    assert consumer.log[-1] == "unassign"


def test_a_consumer_error_names_the_partition_and_the_cluster():
    from confluent_kafka import KafkaError
    denied = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "not allowed")
    consumer = FakeConsumer({0: (0, 3)}, [[FakeMessage(0, 0, error=denied)]], {})
    cluster = live.LiveCluster(FakeKafka(), {}, "us-east", "target", lambda config: consumer)
    with pytest.raises(live.ClusterUnverifiable) as exc:
        cluster.records(TOPIC, 1)
    assert str(exc.value) == f"{TOPIC}[0] on us-east (target): {denied}"
    assert consumer.log[-2:] == ["unassign", "close"]


# ------------------------------------------------------------------ what could not be read, and where


class FailingAdmin:
    def __init__(self, error):
        self.error = error

    def list_consumer_group_offsets(self, requests, request_timeout):
        from confluent_kafka import KafkaException

        def fail():
            raise KafkaException(self.error)
        return {r.group_id: type("Future", (), {"result": staticmethod(fail)})() for r in requests}


class FailingMetadata:
    def __init__(self, error):
        self.error = error

    def list_topics(self, topic, timeout):
        from confluent_kafka import KafkaException
        raise KafkaException(self.error)


def test_errors_name_the_cluster_and_the_disaster_hint_follows_the_source_only():
    from confluent_kafka import KafkaError
    timed_out = KafkaError(KafkaError._TIMED_OUT, "timed out")
    kafka = FakeKafka()
    kafka.admin, kafka.consumer = FailingAdmin(timed_out), FailingMetadata(timed_out)
    target = live.LiveCluster(kafka, {}, "us-east", "target")
    with pytest.raises(live.ClusterUnverifiable) as on_target:
        target.group_offsets("g")
    assert str(on_target.value) == f"offsets of group g on us-east (target): {timed_out}"
    source = live.LiveCluster(kafka, {}, "us-west", "source")
    with pytest.raises(live.ClusterUnverifiable) as on_source:
        source.partitions()
    assert str(on_source.value) == f"metadata on us-west (source): {timed_out}"
    hint = " (if the source cluster is gone: --procedure disaster)"
    assert readiness.error_text(on_source.value, "continuous") == f"metadata on us-west (source): {timed_out}{hint}"
    assert readiness.error_text(on_source.value, "disaster") == f"metadata on us-west (source): {timed_out}"
    assert readiness.error_text(on_target.value, "cutoff") == f"offsets of group g on us-east (target): {timed_out}"
    rest = Unverifiable("http://connect:8083/connectors?expand=info&expand=status: HTTP 503")
    assert readiness.error_text(rest, "continuous") == str(rest)


# ----------------------------------------------------------------- checkpoint staleness, on the audit's schedule

STALE_FLOW = {"sourceAlias": "us-west", "topicPrefix": "us-west.", "connectors": [{"offsetLagMax": 100}, {}]}
NOW = 1_000_000


def stamped(group: str, partition: int, upstream: int, age_seconds: float) -> tuple[tuple[str, str, int], Stamped]:
    return ((group, "us-west.orders", partition),
            Stamped(Checkpoint(group, "us-west.orders", partition, upstream, upstream, ""), int(NOW - age_seconds * 1000)))


def test_a_group_is_stale_when_its_checkpoint_is_old_and_its_commits_moved_past_it():
    checkpoints = dict([stamped("busy", 0, 500, 900), stamped("busy", 1, 10, 1200),
                        stamped("idle", 0, 70, 5000),          # old, exact: commits nothing new
                        stamped("gap", 0, 300, 5000),          # within offset.lag.max of its checkpoint
                        stamped("fresh", 0, 0, 30),            # far behind, but checkpointed just now
                        stamped("later", 0, 0, -2)])           # written after the audit read its clock
    committed = {"busy": {("orders", 0): 901, ("orders", 1): 10, ("other", 0): 9999},
                 "idle": {("orders", 0): 70}, "gap": {("orders", 0): 400}, "fresh": {("orders", 0): 5000},
                 "later": {("orders", 0): 9000}}
    rows = ckpt.checkpoint_staleness(STALE_FLOW, checkpoints, committed, NOW, 600, lambda topic: 100)
    assert [(r["group"], r["partitions"], r["ageSeconds"], r["behindRecords"], r["behindMax"]) for r in rows] == [
        ("busy", 2, 900.0, 401, 401), ("fresh", 1, 30.0, 5000, 5000), ("gap", 1, 5000.0, 100, 100),
        ("idle", 1, 5000.0, 0, 0), ("later", 1, 0.0, 9000, 9000)]
    assert {r["group"]: r["findings"] for r in rows} == {
        "busy": ["group busy: its newest checkpoint is 900 s old (threshold 600 s) and its commits on us-west are up "
                 "to 401 record(s) of a partition past it (offset.lag.max 100): consumers failing over now would "
                 "read 401 record(s) again"],
        "fresh": [], "gap": [], "idle": [], "later": []}


def test_staleness_is_not_judged_without_a_threshold_and_each_topic_has_its_connector_s_lag_max():
    checkpoints = dict([stamped("busy", 0, 0, 5000),
                        (("busy", "us-west.payments", 0), Stamped(Checkpoint("busy", "us-west.payments", 0, 0, 0, ""),
                                                                  NOW - 5_000_000))])
    committed = {"busy": {("orders", 0): 50, ("payments", 0): 50}}
    lag_max = {"orders": 100, "payments": 5}.__getitem__
    assert ckpt.checkpoint_staleness(STALE_FLOW, checkpoints, committed, NOW, None, lag_max)[0]["findings"] == []
    (row,) = ckpt.checkpoint_staleness(STALE_FLOW, checkpoints, committed, NOW, 600, lag_max)
    assert row["findings"] == [
        "group busy: its newest checkpoint is 5000 s old (threshold 600 s) and its commits on us-west are up to 50 "
        "record(s) of a partition past it (offset.lag.max 5): consumers failing over now would read 100 record(s) "
        "again"]
    committed["busy"][("payments", 0)] = 5  # within payments' own offset.lag.max, orders' 50 within 100
    assert ckpt.checkpoint_staleness(STALE_FLOW, checkpoints, committed, NOW, 600, lag_max)[0]["findings"] == []


def test_the_audit_finds_the_connector_that_replicates_a_topic():
    from spark import audit

    class Filters:
        def selects(self, connector, never, topic):
            return topic.startswith(connector["prefix"])
    flow = {**STALE_FLOW, "excludeTopics": {"source": []},
            "connectors": [{"prefix": "pay", "offsetLagMax": 5}, {"prefix": "ord"}]}
    assert [audit.selecting(flow, t, Filters()) for t in ("payments", "orders", "other")] == [
        {"prefix": "pay", "offsetLagMax": 5}, {"prefix": "ord"}, None]
