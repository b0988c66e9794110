"""Faults during the copy (docs/faults.md), on real Kafka and a real Connect worker: a flow
replicating while its link to the source is cut, black-holed, slowed, and narrowed until the
target falls behind (the links of infra/tools/rehearsal/links.py), the ledger holding every
record exactly once after each; then,
under steady writes, one of its two workers killed and restarted as the kubelet restarts a
container (every record at least once, in order), both rolled as the operator rolls them (every
record exactly once), and the source's and the target's broker restarted, each onto a newer
Kafka (a rolling upgrade of each cluster under the flow: at least once, in order).

What the proxy changes is the workers' path alone: the test's producers write to the source
throughout, so what the target holds during a fault is what crossed the link."""

from __future__ import annotations

import socket
import ssl
import time
from collections import Counter
from pathlib import Path

import pytest

from infra.core import releases
from tests.support.replication import (DEV_SOURCE as SOURCE, REVOKED, UNCLEAN, Steady, again_at_most, arrived,
                                       dev_for_runtime, drill_pods, eventually, logged, rehearsal, replicating,
                                       running, starts_since, task_lines, task_starts, under_writes)

pytestmark = pytest.mark.runtime

TOPIC = "test.orders"
# Each drill on a Strimzi release with the default policy and on a CSM release with the identity
# policy: two Kafka lines (4.x and 3.8) of Connect's group protocol and task life cycle.
DRILLS = [("default", "strimzi", "1.2.0"), ("identity", "csm", "1.2")]
# The brokers start on the Kafka of the release before, and each restart upgrades one in place to
# the next (its storage kept): Kafka 4.2.0 to 4.3.1 under Strimzi 1.2.0's Connect, and under
# CSM 1.2's Connect (Kafka 3.8) its brokers from CSM 1.2's Kafka to CSM 1.4's (3.9).
UPGRADES = {("strimzi", "1.2.0"): (("strimzi", "0.51.0"), ("strimzi", "1.2.0")),
            ("csm", "1.2"): (("csm", "1.2"), ("csm", "1.4"))}
GROUP = "test.readers"  # the dev flow's groups: test.*
FAULT = 10.0  # seconds a fault lasts: ten times the clients' reconnect back-off (1 s at most)
# The narrow link's drill: 400 records of 4 KB (1.6 MB) through 32 KB/s: far more than 6 s to carry.
NARROW_RECORDS, NARROW_BYTES, NARROW_KB_PER_S = 400, 4096, 32


def handshake_seconds(address: str) -> float:
    """The time a TLS handshake with the source's listener takes from here: a round trip at least."""
    host, port = address.rsplit(":", 1)
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # the time, not the peer, is measured
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=30) as raw, context.wrap_socket(raw):
        return time.monotonic() - started


@pytest.mark.parametrize("policy,flavour,version", DRILLS, ids=[f"{p}-{f}-{v}" for p, f, v in DRILLS])
def test_a_flow_rides_out_link_faults_killed_and_rolled_workers_and_restarted_brokers(policy, flavour, version,
                                                                                     runtime_api, tmp_path):
    topo = dev_for_runtime(flavour, version)
    topo["flows"][0]["heartbeats"] = False
    if policy == "identity":
        topo["flows"][0]["replicationPolicy"] = "identity"
    remote = f"us-west.{TOPIC}" if policy == "default" else TOPIC
    drill_pods(topo)  # two pods, a source task each, a departed pod's tasks held 10 s
    older, newer = (releases.find(releases.Flavour(f), v) for f, v in UPGRADES[(flavour, version)])
    assert older is not None and newer is not None, UPGRADES[(flavour, version)]
    assert tuple(map(int, older.kafka.split("."))) < tuple(map(int, newer.kafka.split("."))), (older, newer)
    with rehearsal(topo, tmp_path, runtime_api, linked=True, scale=True, brokers_on=older) as r:
        assert r.links is not None
        ledger, connect = replicating(r, "us-west", "us-east", TOPIC, remote)
        assert {alias: broker_version(r, alias) for alias in r.clusters} == {"us-east": older.kafka,
                                                                            "us-west": older.kafka}
        pods = r.pods_of(connect)
        worker = pods[0]

        def balanced() -> bool:
            """A source task on each pod, each RUNNING: the group's assignment settled."""
            tasks = worker.status(SOURCE)["tasks"]
            return (sorted(t["worker_id"].split(":")[0] for t in tasks) == sorted(p.host for p in pods)
                    and {t["state"] for t in tasks} == {"RUNNING"})

        eventually("a source task on each pod", balanced, 60, 1)
        # The worker's pod resolves the source's host name to the link's proxy, the tests' clients
        # to the broker itself.
        host = "us-west-kafka-bootstrap.kafka-us-west"
        pod_hosts = dict(reversed(line.split()) for line in (worker.pod / "tmp" / "hosts").read_text().splitlines())
        assert pod_hosts[host] == r.links["us-west"].listen.split(":")[0] != r.clusters["us-west"].ip
        link = r.links["us-west"]

        def copied() -> int:
            return sum(r.clients.end_offsets(r.client("us-east"), [remote]).values())

        for fault in ("cut", "black_hole"):
            getattr(link, fault)()
            before = copied()
            ledger.produce(f"during-{fault}")  # the test's producer is not behind the link
            time.sleep(FAULT)
            assert copied() == before, fault  # nothing crossed
            assert [t["state"] for t in worker.status(SOURCE)["tasks"]] == ["RUNNING"] * 2
            link.restore()
            assert link.state()["enabled"] is True and link.state()["toxics"] == []
            ledger.holds_exactly()  # everything, once

        # 150 ms each way: a 300 ms round trip, the distance between continents.
        link.slow(latency_ms=150)
        assert sorted(t["type"] for t in link.state()["toxics"]) == ["latency", "latency"]
        direct, linked = handshake_seconds(link.upstream), handshake_seconds(link.listen)
        assert linked >= 0.3 and linked - direct >= 0.25, (direct, linked)
        ledger.produce("slow")
        eventually("the records written over the slow link", lambda: copied() == len(ledger.sent), 120, 0.2)
        link.restore()
        assert handshake_seconds(link.listen) < 0.3

        # A long and narrow link (50 ms each way, 32 KB/s each way) and 1.6 MB written at once:
        # the target stays behind while the link is narrow (records cross a fetch answer at a
        # time, and an answer of hundreds of KB takes the link many seconds: seen here, the
        # target moving in steps of a whole answer); lifted, the copy catches up; no task fails or
        # restarts; nothing lost or doubled. The lag, sampled each second, is printed.
        link.slow(latency_ms=50, rate_kb_per_s=NARROW_KB_PER_S)
        assert sorted(t["type"] for t in link.state()["toxics"]) == ["bandwidth", "bandwidth", "latency", "latency"]
        started = task_starts(pods)
        ledger.produce("narrow", NARROW_RECORDS, size=NARROW_BYTES)
        lag = []
        for _ in range(6):
            time.sleep(1)
            lag.append(len(ledger.sent) - copied())
            # What `status` reads: no task failed while the target is behind.
            assert [t["state"] for t in worker.status(SOURCE)["tasks"]] == ["RUNNING"] * 2
        print(f"narrow link: {NARROW_RECORDS} records of {NARROW_BYTES} B at {NARROW_KB_PER_S} KB/s; lag each second: "
              f"{lag}")
        assert min(lag) > 0, lag  # behind for 6 s: the link cannot carry 1.6 MB sooner
        link.restore()
        eventually("the copy caught up once the link is lifted", lambda: copied() == len(ledger.sent), 60, 0.5)
        assert task_starts(pods) == started  # nothing restarted
        ledger.produce("after")
        ledger.holds_exactly()

        # The first pod's JVM killed (SIGKILL) while producers write, its container restarted as
        # the kubelet restarts it (same pod, address and files); the other pod runs on. Nothing is
        # lost and each partition keeps its order; what the killed worker had copied but not yet
        # committed (offsets are flushed every offset.flush.interval.ms, 60 s) is copied again: the
        # default policy's at-least-once, once more per start of the tasks.
        copies, started = Counter(s["key"] for s in ledger.sent), task_starts(pods)
        under_writes(r, ledger, "kill", lambda: r.kill_worker(connect, pod=0))
        copies = again_at_most(r, ledger, copies, starts_since(pods, started), "since the last offset flush before the kill")

        # Both pods rolled, one after the other, as the operator rolls them (SIGTERM: each worker
        # leaves its group, its tasks stop and commit the offsets of what they copied): nothing
        # is copied again. Kafka's own anchor: connect_distributed_test.py's test_bounce, whose
        # clean bounces must not duplicate a source record.
        started, unclean = task_starts(pods), task_lines(pods, UNCLEAN)
        under_writes(r, ledger, "roll", lambda: r.roll_pods(connect))
        assert all(n > started[task] for task, n in task_starts(pods).items())  # each task stopped and started
        # Unless a task's stop outlasted task.shutdown.graceful.timeout.ms (5 s): Connect then
        # abandons it without its last commit, and says so; the ledger allows that task's re-copy.
        abandoned = max(n - unclean[task] for task, n in task_lines(pods, UNCLEAN).items())
        copies = again_at_most(r, ledger, copies, abandoned, f"after a rolling restart, {abandoned} unclean stop(s)")

        # The link to the target cut past the group's session timeout (10 s): the target is the
        # Connect cluster's own Kafka, so each worker loses its coordinator and, after 3 s
        # (heartbeat.interval.ms: WorkerCoordinator.poll), stops its tasks; nothing crosses. The
        # status topic is on the target too, so the REST API keeps saying RUNNING. Back, the
        # workers rejoin as new members and the leader holds the tasks they held for the rebalance
        # delay (scheduled.rebalance.max.delay.ms: 10 s here, 300 s by default) before it hands
        # them out; they resume from the last committed offsets: once more per start.
        # From a settled group: a worker in the middle of a rebalance when the link goes (the
        # rolled pod just back, taking its share) may wait in its join instead of revoking (seen).
        eventually("a source task on each pod again", balanced, 120, 1)
        target, before, started = r.links["us-east"], copied(), task_starts(pods)
        holding = {t["worker_id"].split(":")[0] for t in worker.status(SOURCE)["tasks"]}
        revoked = {pod.host: logged(pod, REVOKED) for pod in pods if pod.host in holding}
        assert revoked, holding
        with Steady(ledger, "target-cut"):
            target.cut()
            eventually("each worker that holds a source task revoking it", lambda: all(
                logged(pod, REVOKED) > revoked[pod.host] for pod in pods if pod.host in revoked), 60, 1)
            assert [t["state"] for t in worker.status(SOURCE)["tasks"]] == ["RUNNING"] * 2  # what it last wrote
            time.sleep(2 * FAULT)
            assert copied() == before  # nothing crossed
            target.restore()
            eventually("each source task started again", lambda: all(
                n > started[task] for task, n in task_starts(pods).items()), 120, 1)
        running(r)
        copies = again_at_most(r, ledger, copies, starts_since(pods, started), "after the target's link was cut")

        # Each cluster's broker restarted (a controlled shutdown, then the same storage and address)
        # onto the newer Kafka, one cluster after the other, while producers write: the worker's
        # clients reconnect; nothing is lost, order is kept.
        # When the target's broker is down longer than the worker's coordinator may be unreachable
        # (3 s, then Connect revokes its tasks), the tasks' graceful stop cannot commit their
        # offsets and the new tasks start from the last flush: at-least-once, once more per start.
        for alias in ("us-east", "us-west"):
            before, started = len(ledger.sent), task_starts(pods)
            with Steady(ledger, f"restart-{alias}"):
                time.sleep(2)
                r.clusters[alias].stop()
                r.start_cluster(alias, newer)
                time.sleep(3)
            running(r)
            assert len(ledger.sent) > before + 4, alias
            copies = again_at_most(r, ledger, copies, starts_since(pods, started),
                                   f"in all, after the {alias} broker's restart onto Kafka {newer.kafka}")
            assert broker_version(r, alias) == newer.kafka

        # A consumer group of the source fails over after all of this: the offsets the checkpoint
        # connector translated and committed on the target (syncGroupOffsets) leave none of the
        # records it had not read behind, though the target holds copies twice over; translation
        # may go back (records read again), never forward (MirrorCheckpointTask, OffsetSyncStore).
        source, target = r.client("us-west"), r.client("us-east")
        read = r.clients.consume(source, [TOPIC], len(ledger.sent) - 10, 60_000, group=GROUP)
        position = r.clients.group_offsets(source, GROUP)
        assert sum(position.values()) == len(read) == len(ledger.sent) - 10

        def translated() -> dict[str, int] | None:
            """The group's offsets on the target once two reads a sync interval apart agree."""
            first = r.clients.group_offsets(target, GROUP)
            time.sleep(6)  # past the flow's 5 s checkpoint and group-offset sync intervals
            return first if len(first) == 2 and first == r.clients.group_offsets(target, GROUP) else None

        at = eventually("the group's offsets translated on us-east, settled", translated, 120, 1)
        on_source = {(g["partition"], g["offset"]): g["key"] for g in arrived(r, "us-west", TOPIC, len(ledger.sent))}
        on_target = arrived(r, "us-east", remote, sum(r.clients.end_offsets(target, [remote]).values()))
        again = 0
        for partition in (0, 1):
            since, resume = position[f"{TOPIC}:{partition}"], at[f"{remote}:{partition}"]
            unread = [k for (p, o), k in sorted(on_source.items()) if p == partition and o >= since]
            resumed = [g["key"] for g in on_target if g["partition"] == partition and g["offset"] >= resume]
            assert set(unread) <= set(resumed), (partition, at, position, unread, resumed)
            again += len(resumed) - len(unread)
        print(f"group {GROUP} failing over: {sum(position.values())} records read on us-west, "
              f"{sum(at.values())} translated offsets on us-east ({at}); none unread left behind, {again} read again")


def broker_version(r, alias: str) -> str:
    """The Kafka version of the jars the cluster's running broker started on: its command line's
    classpath (the broker logs its version at INFO, which the rehearsal's brokers do not log)."""
    process = r.clusters[alias].process
    assert process is not None, alias
    argv = Path(f"/proc/{process.popen.pid}/cmdline").read_bytes().split(b"\0")
    (server,) = Path(argv[argv.index(b"-cp") + 1].decode().removesuffix("/*")).glob("kafka_2.13-*.jar")
    return server.name.removeprefix("kafka_2.13-").removesuffix(".jar")
