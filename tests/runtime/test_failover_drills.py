"""Failover and failback drills on the runtime tier, for each replication policy: a consumer group
reads on the source while the dev flow replicates; the source is lost (its broker stopped); the
failover command runs as on-call would run it (`kafka-replication failover`: the readiness check,
and the flow stopped in the stack's topology file); the group moves to the target at the offsets
MirrorMaker 2 synced there and resumes; producers move too; then the failback the runbook
documents (docs/operations.md#controlled-failback), with the old source back, written by
`kafka-replication failback` (and `--resume` under identity) and deployed as it wrote it. Before
the loss the link fails (the source connector paused) and the source takes a record on each
partition that never reaches the target: once it returns, the check's replication rows name
exactly those records (docs/operations.md, "When the source returns"), and after the failback
they are still there, between its history and what is copied back. Heartbeats run throughout,
as a deployed flow runs them (replicated as `us-west.heartbeats` before the loss; the default
policy's reverse flow brings us-east's back as `us-east.heartbeats`). Every record is
accounted for by key: none skipped, and the duplicates exactly those the group read after the
last offset sync (the checkpoint connector is paused before the group's last reads, so that
window is the drill's own and not a race with the sync interval).

Real Kafka brokers, Connect workers with MirrorMaker 2 and the readiness command, on every
runtime release (what the drills hold is MirrorMaker 2's checkpoints, group offset sync and
offset management, each release's own Kafka). CSM 1.2 has no offsets requests: its identity
failback sets the reversed flow's offsets through the Connect REST API, as the runbook says."""

from __future__ import annotations

import copy
import json
import os
import shlex
import subprocess
import sys

import pytest
import yaml

from infra.core.errors import TopologyError
from infra.plan.offsets import SOURCE, alter_body
from infra.tools.rehearsal import offsets, operator
from infra.tools.rehearsal.operator import REST_PORT
from infra.topology.schema import PartitionOffset
from tests.support import runbooks
from tests.support.portforward import forwarded
from tests.support.replication import (HAND_MADE_STATES, STACK, dev_for_runtime, eventually, failover_command,
                                       rehearsal, running, stack_project)
from tests.support.stacks import RELEASE_ENDS, RELEASES_BY_OFFSETS_PATH, ROOT

pytestmark = pytest.mark.runtime

FLOW, REVERSE = "repl-us-west-us-east", "repl-us-east-us-west"
GROUP, TOPIC = "test.readers", "test.orders"
HISTORY = 20    # records on the source before the failover, 10 per partition
READ_FIRST = 10  # the first half, read by the group and synced (read to the end: translated exactly)
READ_LATE = 4    # what it reads of the second half after the last sync: read again on the target
DIVERGED = 2     # taken by the source after the link failed, never copied: one per partition
# Kafka's Heartbeat key (serializeKey): the two aliases, int16-length-prefixed.
BEAT, BEAT_BACK = "\x00\x07us-west\x00\x07us-east", "\x00\x07us-east\x00\x07us-west"


def keyed(tag: str, n: int, start: int = 0) -> list[dict]:
    return [{"key": f"{tag}{i}", "value": f"{tag}-value-{i}", "partition": i % 2} for i in range(start, start + n)]


def keys(records: list[dict]) -> list[str]:
    return sorted(r["key"] for r in records)


# The Default policy's drill on each Kafka major line and generator; the Identity policy's on each
# path of its offsets (by hand on the REST API, or the operator's requests on either generator).
DRILLS = [("default", *p) for p in RELEASE_ENDS] + [("identity", *p) for p in RELEASES_BY_OFFSETS_PATH]


@pytest.mark.parametrize("policy,flavour,version", DRILLS, ids=[f"{p}-{f}-{v}" for p, f, v in DRILLS])
def test_failover_on_disaster_then_failback(policy, flavour, version, runtime_api, tmp_path):
    topo = dev_for_runtime(flavour, version)
    flow = topo["flows"][0]
    flow["groups"] = [GROUP]
    flow["failover"] = {"procedure": "disaster"}
    # us-west becomes a target on failback: a KafkaConnect trusts PEM certificates only.
    topo["clusters"]["us-west"]["security"]["tls"] = {"trust": "pem"}
    topo["audit"] = {"thresholds": {"maxLag": 0}, "window": {"graceMinutes": 0}}  # the readiness check's config
    if policy == "identity":
        flow["replicationPolicy"] = "identity"
    replica = f"us-west.{TOPIC}" if policy == "default" else TOPIC
    with rehearsal(topo, tmp_path, runtime_api, **HAND_MADE_STATES) as r:
        source, target = r.client("us-west"), r.client("us-east")
        r.clients.create_topics(source, {TOPIC: 2})
        history = keyed("h", HISTORY)
        r.clients.produce(source, TOPIC, history[:READ_FIRST])
        read_on_source = r.clients.consume(source, [TOPIC], READ_FIRST, 30_000, group=GROUP)
        assert r.clients.group_offsets(source, GROUP) == {f"{TOPIC}:0": 5, f"{TOPIC}:1": 5}
        r.deploy()
        running(r)
        worker = r.workers[(FLOW, FLOW)]
        synced = {f"{replica}:0": 5, f"{replica}:1": 5}
        eventually("the group's offsets synced on us-east", lambda: r.clients.group_offsets(target, GROUP) == synced,
                   120)

        # The checkpoint connector paused (no sync after this), the second half produced and
        # replicated, and the group reads on: four records the target group does not know of.
        # Its tasks too: a task notices the pause only once its poll returns, and a poll that
        # began before (MirrorCheckpointTask.poll waits out the emit interval, then reads the
        # groups' offsets) still checkpoints what the group committed meanwhile (a drill on CSM
        # 1.2 under load saw it).
        worker.request("PUT", f"/connectors/{FLOW}-checkpoint/pause")
        eventually("the checkpoint connector and its tasks PAUSED", lambda: paused(worker, f"{FLOW}-checkpoint"), 60, 1)
        r.clients.produce(source, TOPIC, history[READ_FIRST:])
        eventually("the history replicated", lambda: r.clients.end_offsets(target, [replica]) == {
            f"{replica}:0": 10, f"{replica}:1": 10}, 120)
        # Heartbeats on, as a flow runs by default: written into the source by the heartbeat
        # connector and replicated with the flow's topics, through the loss and the failback;
        # under either policy as `us-west.heartbeats` (IdentityReplicationPolicy prefixes
        # heartbeat topics).
        assert {h["key"] for h in r.clients.consume(target, ["us-west.heartbeats"], 1, 60_000)} == {BEAT}
        read_on_source += r.clients.consume(source, [TOPIC], READ_LATE, 30_000, group=GROUP)
        assert len(read_on_source) == READ_FIRST + READ_LATE
        assert r.clients.group_offsets(target, GROUP) == synced

        # The link fails first (the source connector paused): the source takes a record on each
        # partition that never reaches the target, then it is lost.
        worker.request("PUT", f"/connectors/{FLOW}-source/pause")
        eventually("the source connector and its tasks PAUSED", lambda: paused(worker, f"{FLOW}-source"), 60, 1)
        diverged = keyed("d", DIVERGED)
        r.clients.produce(source, TOPIC, diverged)
        assert r.clients.end_offsets(source, [TOPIC]) == {f"{TOPIC}:0": 11, f"{TOPIC}:1": 11}

        # The source is lost. Under the default policy the consumers move to the active topic too:
        # created on the target first (the readiness check finds it missing otherwise).
        r.clusters["us-west"].stop()
        if policy == "default":
            r.clients.create_topics(target, {TOPIC: 2})
        # On-call runs the failover command: the readiness check on the target alone, and, ready,
        # the runbook's change (the flow stopped) written into the stack's topology file.
        project = stack_project(tmp_path, topo)
        done = failover_command(r, tmp_path / "disaster", project, FLOW, "--procedure", "disaster", "--json")
        result = json.loads(done.stdout) if done.stdout.startswith("{") else {}
        assert (done.returncode, result.get("change", {}).get("written")) == (0, True), done.stdout + done.stderr
        report = result["report"]
        assert report["verdict"] == "ready"
        assert result["change"]["message"] == (
            "ready: the flow stopped, so that nothing the source had not replicated is copied into the topics the "
            "clients now write when it returns")
        written = yaml.safe_load((project / "stacks" / f"{STACK}.yaml").read_text())
        assert written == stopped(topo)
        assert [(g["group"], [(p["targetTopic"], p["partition"], p["targetCommitted"]) for p in g["partitions"]])
                for g in report["groups"]] == [
            (GROUP, [(replica, p, synced[f"{replica}:{p}"]) for p in (0, 1)])]

        # The group moves to the target, at the synced offsets: what it had not read, and the four
        # it read after the last sync again; nothing skipped.
        remaining = HISTORY - READ_FIRST
        read_on_target = r.clients.consume(target, [replica], remaining, 60_000, group=GROUP)
        assert keys(read_on_target) == keys(history[READ_FIRST:])
        assert sorted(set(keys(read_on_source)) | set(keys(read_on_target))) == keys(history)
        assert len(set(keys(read_on_source)) & set(keys(read_on_target))) == READ_LATE

        # Producers move to the target: the active topic, the same name as on the source.
        r.update(r.render(written))  # the pipeline's `pulumi up` of the command's change: the flow stopped
        ends = r.clients.end_offsets(target, [TOPIC]) if policy == "identity" else {}
        after = keyed("t", 4)
        r.clients.produce(target, TOPIC, after)
        assert keys(r.clients.consume(target, [TOPIC] if policy == "identity" else [replica, TOPIC], 4, 60_000,
                                      group=GROUP)) == keys(after)

        # Failback: the old source back, with its data. The records it took but never copied are
        # what the check's replication rows show, the flow stopped (docs/operations.md, "When the
        # source returns"): after the last offset replicated, up to its end.
        r.start_cluster("us-west")
        returned = failover_command(r, tmp_path / "returned", project, FLOW, "--procedure", "cutoff", "--dry-run",
                                    "--json")
        report = json.loads(returned.stdout)["report"] if returned.stdout.startswith("{") else {}
        assert (returned.returncode, report.get("verdict")) == (1, "not-ready"), returned.stdout + returned.stderr
        assert [(row["topic"], row["partition"], row["end"], row["committed"], row["lag"], row["status"])
                for row in report["replication"]] == [(TOPIC, p, 11, 9, 1, "lagging") for p in (0, 1)]
        assert [f for f in report["findings"] if "replication" in f] == [
            f"{TOPIC}[{p}]: replication is 1 record(s) behind the source" for p in (0, 1)]
        # Those rows name them exactly: on each partition, from `committed + 1`, `lag` records.
        rows = {row["partition"]: row for row in report["replication"]}
        held = r.clients.consume(r.client("us-west"), [TOPIC], HISTORY + DIVERGED, 60_000)
        never_copied = sorted((h["partition"], h["key"]) for h in held if rows[h["partition"]]["committed"]
                              < h["offset"] <= rows[h["partition"]]["committed"] + rows[h["partition"]]["lag"])
        assert never_copied == [(0, "d0"), (1, "d1")]
        if policy == "default":
            unread_on_source = [h for h in history if h["key"] not in keys(read_on_source)] + diverged
            failback_default(r, topo, project, unread_on_source)
        else:
            # The command kept, beside the stack's file, each partition's end offset on us-east when
            # it stopped the flow: where the failback starts.
            record = json.loads((project / "stacks" / f"{STACK}.{FLOW}.failover.json").read_text())
            assert record["targetEnds"] == [{"topic": TOPIC, "partition": int(k.rsplit(":", 1)[1]), "end": v}
                                            for k, v in sorted(ends.items())]
            failback_identity(r, topo, project, history + diverged, after, ends)


def paused(worker, connector: str) -> bool:
    status = worker.status(connector)
    return {status["connector"]["state"], *(t["state"] for t in status["tasks"])} == {"PAUSED"}


def stopped(topo: dict) -> dict:
    t = copy.deepcopy(topo)
    t["flows"][0]["state"] = {"source": "stopped", "checkpoint": "stopped", "heartbeat": "stopped"}
    return t


def reverse(flow: dict) -> dict:
    back = copy.deepcopy(flow)
    back.update(source=flow["target"], target=flow["source"])
    back.pop("state", None)
    return back


def failback_command(project, *args: str) -> tuple[dict, str]:
    """`kafka-replication failback --stack drill --flow FLOW ARGS`: it reads nothing live; the
    topology file as it left it, and what it printed."""
    done = subprocess.run([sys.executable, "-m", "infra", "-C", str(project), "failback", "--stack", STACK, "--flow",
                           FLOW, *args], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout + done.stderr
    return yaml.safe_load((project / "stacks" / f"{STACK}.yaml").read_text()), done.stdout


def failback_default(r, topo: dict, project, unread_on_source: list[dict]) -> None:
    """Default policy: the reverse flow added beside the stopped one; it copies what producers
    wrote on us-east since the failover (`us-east.test.orders` on us-west), never us-west's own
    replica back (MirrorMaker 2's cycle detection), and the group's progress on it is synced, so
    consumers back on us-west read none of it again. What they read on us-east's prefixed replica
    does not map back (docs/operations.md: checkpoints work within one flow): the history they had
    not read on us-west before the loss they read there again, exactly that."""
    source = r.client("us-west")
    back = stopped(topo)
    back["flows"].append(reverse(topo["flows"][0]))
    written, said = failback_command(project)  # the runbook's failback, as the command writes it
    assert written == back
    assert said.splitlines()[1] == (f"then fail over to us-west again with `kafka-replication failover --flow "
                                    f"{REVERSE}` (the procedures above)")
    r.update(r.render(written))
    running(r)
    remote = f"us-east.{TOPIC}"
    eventually("the new records copied back", lambda: r.clients.end_offsets(source, [remote]) == {
        f"{remote}:0": 2, f"{remote}:1": 2}, 120)
    assert f"us-east.us-west.{TOPIC}" not in r.clients.topics(source)
    # The reverse flow's heartbeats, written into us-east, reach us-west as `us-east.heartbeats`.
    assert {h["key"] for h in r.clients.consume(source, ["us-east.heartbeats"], 1, 60_000)} == {BEAT_BACK}
    eventually("the group's offsets synced on us-west",
               lambda: r.clients.group_offsets(source, GROUP).get(f"{remote}:0") == 2
               and r.clients.group_offsets(source, GROUP).get(f"{remote}:1") == 2, 120)
    newest = keyed("w", 2)
    r.clients.produce(source, TOPIC, newest)
    again = r.clients.consume(source, [remote, TOPIC], len(unread_on_source) + 2, 60_000, group=GROUP)
    assert keys(again) == keys(unread_on_source + newest)
    assert r.clients.end_offsets(source, [remote]) == {f"{remote}:0": 2, f"{remote}:1": 2}


def failback_identity(r, topo: dict, project, history: list[dict], after: list[dict], ends: dict[str, int]) -> None:
    """Identity policy, as the runbook says: the flow removed, the reversed one deployed stopped
    with an offsets alter at the old target's end offsets, noted when replication stopped, minus
    one (at the end offsets themselves, as the runbook first said, the first record of each
    partition produced after the failover was never copied: this drill found it), then running.
    From the earliest offsets it is refused (it would copy the old source's own history back); as
    documented it copies exactly what producers wrote on us-east since the failover."""
    source = r.client("us-west")
    back = copy.deepcopy(topo)
    back["flows"] = [reverse(topo["flows"][0])]
    with pytest.raises(TopologyError) as refused:
        r.render(back)
    assert [str(p) for p in refused.value.problems][0].startswith("flows[0] (repl-us-east-us-west)")
    back["flows"][0]["state"] = {"source": "stopped"}
    at = [{"topic": TOPIC, "partition": int(k.rsplit(":", 1)[1]), "offset": v - 1} for k, v in sorted(ends.items())]
    if r.release.offset_management:
        back["flows"][0]["offsets"] = [
            {"connector": f"{REVERSE}-source", "action": "alter", "request": "failback", "offsets": at}]
        written, _ = failback_command(project)  # the flow replaced by the reversed one, as the command writes it
        assert written == back
        r.update(r.render(written))
        # As the runbook says: `--resume` once the operator has carried out the alter (its
        # annotation gone). A worker whose configuration is still settling from the stop answers
        # 409; the operator then keeps the annotation and repeats at its next reconciliation. The
        # drill's timer is held off (HAND_MADE_STATES: its pauses stand for a failed link); no
        # state is set by hand any more, so the drill runs the operator's next passes itself.
        def carried_out() -> bool:
            def done() -> bool:
                return any(d[:2] == (REVERSE, f"{REVERSE}-source") for d in r.offsets_done)
            if not done():
                r.periodic_reconciliation()
            return done()
        eventually("the operator carrying out the alter", carried_out, 3 * operator.RECONCILIATION_SECONDS, 10)
        print(f"alter carried out; repeated after the worker's answer: {r.offsets_retried or 'never'}")
        del back["flows"][0]["offsets"]  # carried out: removed in the change that sets it running
    else:
        # No offsets requests (CSM 1.2): deployed stopped with the acknowledgement the refusal
        # names, and the offsets set through the Connect REST API, as the runbook's PATCH does.
        assert "through the Connect REST API (PATCH /connectors/<name>/offsets" in str(refused.value.problems[0])
        back["flows"][0]["acknowledgeReplayedHistory"] = True
        written, said = failback_command(project)
        assert written == back
        printed = shlex.split(said.splitlines()[3].strip())
        assert json.loads(printed[printed.index("-d") + 1]) == alter_body(
            SOURCE, "us-east", [PartitionOffset.model_validate(o) for o in at])
        r.update(r.render(written))
        worker = r.workers[(REVERSE, REVERSE)]
        offsets.wait_stopped(worker, f"{REVERSE}-source", 60)
        # docs/operations.md's curl line as written: its body is this drill's (each partition's end
        # offset on us-east when replication stopped, 10, minus one), sent to the worker through
        # the port the port-forward before it opens (tests/support/portforward.py stands in for
        # that: no kubelet here).
        line = runbooks.line("Controlled failback", "curl -fsS -X PATCH")
        argv = shlex.split(line)
        body = json.loads(argv[argv.index("-d") + 1])
        assert body == alter_body(SOURCE, "us-east", [PartitionOffset.model_validate(o) for o in at])
        with forwarded(REST_PORT, worker.host, REST_PORT):
            done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (line, done.stdout, done.stderr)
        assert json.loads(done.stdout) == {"message": "The offsets for this connector have been altered successfully"}
    back["flows"][0]["state"] = {"source": "running"}
    written, _ = failback_command(project, "--resume")
    assert written == back
    r.update(r.render(written))
    running(r)
    # After the records us-west took and never copied (in `history` here: they stay between its
    # own history and what the failback copies back; Kafka cannot cut a partition's tail).
    eventually("the new records copied back", lambda: r.clients.end_offsets(source, [TOPIC]) == {
        f"{TOPIC}:0": 13, f"{TOPIC}:1": 13}, 120)
    copied = r.clients.consume(source, [TOPIC], len(history) + len(after), 60_000)
    assert keys(copied) == keys(history + after)
