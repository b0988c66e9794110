"""Faults during the copy (docs/faults.md), on real Kafka and a real Connect worker: a flow
replicating while its link to the source is cut, black-holed and slowed (the links of
infra/tools/rehearsal/links.py), the ledger holding every record exactly once after each; then
its worker killed under steady writes and restarted as the kubelet restarts a container, and
the source's and the target's broker restarted mid-copy, every record arriving at least once, in
order.

What the proxy changes is the workers' path alone: the test's producers write to the source
throughout, so what the target holds during a fault is what crossed the link."""

from __future__ import annotations

import socket
import ssl
import time
from collections import Counter

import pytest

from tests.support.replication import (Ledger, Repeating, copied_in_order, dev_for_runtime, eventually, rehearsal,
                                       running)

pytestmark = pytest.mark.runtime

TOPIC, REMOTE = "test.orders", "us-west.test.orders"
SOURCE = "repl-us-west-us-east-source"
FAULT = 20.0  # seconds a fault lasts: many times the clients' reconnect back-off (1 s at most)


def handshake_seconds(address: str) -> float:
    """The time a TLS handshake with the source's listener takes from here: a round trip at least."""
    host, port = address.rsplit(":", 1)
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # the time, not the peer, is measured
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=30) as raw, context.wrap_socket(raw):
        return time.monotonic() - started


class Steady(Repeating):
    """Two records every half second into the ledger's topic while the block runs, keyed
    `<name>-<n>-k<i>`."""

    def __init__(self, ledger: Ledger, name: str) -> None:
        super().__init__(0.5)
        self.ledger, self.name, self.written = ledger, name, 0

    def step(self) -> None:
        try:
            self.ledger.produce(f"{self.name}-{self.written}", 2)
        except RuntimeError:
            return  # the source's broker is down: this batch was not written, nor recorded
        self.written += 1


def test_a_flow_rides_out_link_faults_a_killed_worker_and_restarted_brokers(runtime_api, tmp_path):
    topo = dev_for_runtime("strimzi", "1.2.0")
    topo["flows"][0]["heartbeats"] = False
    with rehearsal(topo, tmp_path, runtime_api, linked=True) as r:
        assert r.links is not None
        r.clients.create_topics(r.client("us-west"), {TOPIC: 2})
        ledger = Ledger(r, TOPIC, REMOTE)
        ledger.produce("before")
        r.deploy()
        running(r)
        ledger.holds_exactly()
        (worker,) = r.workers.values()
        # The worker's pod resolves the source's host name to the link's proxy, the tests' clients
        # to the broker itself.
        host = "us-west-kafka-bootstrap.kafka-us-west"
        pod_hosts = dict(reversed(line.split()) for line in (worker.pod / "tmp" / "hosts").read_text().splitlines())
        assert pod_hosts[host] == r.links["us-west"].listen.split(":")[0] != r.clusters["us-west"].ip
        link = r.links["us-west"]

        def copied() -> int:
            return sum(r.clients.end_offsets(r.client("us-east"), [REMOTE]).values())

        for fault in ("cut", "black_hole"):
            getattr(link, fault)()
            before = copied()
            ledger.produce(f"during-{fault}")  # the test's producer is not behind the link
            time.sleep(FAULT)
            assert copied() == before, fault  # nothing crossed
            assert [t["state"] for t in worker.status("repl-us-west-us-east-source")["tasks"]] == ["RUNNING"] * 2
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
        ledger.produce("after")
        ledger.holds_exactly()

        # The worker's JVM killed (SIGKILL) while producers write, its container restarted as the
        # kubelet restarts it (same pod, address and files). Nothing is lost and each partition
        # keeps its order; what the worker had copied but not yet committed (its offsets are
        # flushed every offset.flush.interval.ms) is copied again: the default policy's at-least-once.
        (connect,) = r.workers
        before, copies = len(ledger.sent), Counter(s["key"] for s in ledger.sent)  # each once, just checked
        with Steady(ledger, "kill"):
            time.sleep(3)
            r.kill_worker(connect)
            running(r)
            time.sleep(2)
        assert len(ledger.sent) > before + 8  # writes went on through the kill
        # The log is the new container's: every start in it is one of the fault's.
        copies = again_at_most(r, ledger, copies, task_starts(worker), "since the last offset flush before the kill")

        # Each cluster's broker restarted (a controlled shutdown, then the same storage and address)
        # while producers write: the worker's clients reconnect; nothing is lost, order is kept.
        # When the target's broker is down longer than the worker's coordinator may be unreachable
        # (3 s, then Connect revokes its tasks), the tasks' graceful stop cannot commit their
        # offsets and the new tasks start from the last flush: at-least-once, once more per start.
        for alias in ("us-east", "us-west"):
            before, started = len(ledger.sent), task_starts(worker)
            with Steady(ledger, f"restart-{alias}"):
                time.sleep(2)
                r.clusters[alias].stop()
                r.start_cluster(alias)
                time.sleep(3)
            running(r)
            assert len(ledger.sent) > before + 4, alias
            copies = again_at_most(r, ledger, copies, task_starts(worker) - started,
                                   f"in all, after the {alias} broker's restart")


def task_starts(worker) -> int:
    """How many times the flow's source tasks started in the worker's present container (its
    log since the container started), the most of any one task: each start resumes from the
    offsets last committed."""
    log = (worker.pod / "worker.log").read_text(errors="replace")
    return max(log.count(f"WorkerSourceTask{{id={SOURCE}-{task}}} Source task finished initialization and start")
               for task in (0, 1))


def again_at_most(r, ledger: Ledger, earlier: Counter[str], starts: int, when: str) -> Counter[str]:
    """Every record sent has arrived in order per partition, none lost; each key copied at most
    once more than before the fault for each start of the tasks during it (a task that starts
    re-copies what was copied since the offsets last committed, no more)."""
    copies = copied_in_order(r, "us-east", REMOTE, ledger.sent)
    over = {k: (earlier.get(k, 1), n) for k, n in copies.items() if n > earlier.get(k, 1) + starts}
    assert not over, (f"copied more often than {starts} task start(s) explain ({when}); "
                      f"key: (copies before, copies now): {dict(list(over.items())[:10])}")
    ledger_line(r, ledger, copies, f"{when}; {starts} task start(s)")
    return copies


def ledger_line(r, ledger: Ledger, copies: Counter[str], when: str) -> None:
    ends = r.clients.end_offsets(r.client("us-east"), [REMOTE])
    print(f"ledger {REMOTE}: " + "; ".join(
        f"partition {p}: {sum(1 for s in ledger.sent if s['partition'] == p)} sent, {ends[f'{REMOTE}:{p}']} on "
        f"the target" for p in (0, 1)) + f"; {sum(1 for n in copies.values() if n > 1)} copied more than once, at most {max(copies.values())} times ({when})")
