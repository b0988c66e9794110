"""Leaders moved under a running flow (docs/faults.md), on real Kafka and a real Connect worker:
the target cluster runs three brokers (each a broker and a KRaft voter), so that the Connect
cluster's config, offsets and status topics, its group's coordinator and the remote topic are
replicated on all three. Under steady writes, the broker that leads the Connect cluster's config
topic stops (a controlled shutdown: every partition it leads moves to another broker, the Connect
group's coordinator with it when it was there), the flow copies on with two, the broker starts
again, catches up, and the controller hands it back the leaderships it prefers (a second move,
`leader.imbalance.check.interval.seconds`). The ledger: nothing lost, order kept per partition, and
no record copied again unless a source task started again (a task resumes from the offsets last
committed).

Kafka's own anchor: its replication tests bounce the leader of a partition under a producer
(`replication_test.py`, `clean_bounce`) and require every acknowledged record."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from infra.core.names import FlowNames
from tests.support.replication import (DEV_SOURCE, again_at_most, dev_for_runtime, eventually, on_brokers,
                                       rehearsal, replicating, starts_since, task_starts, under_writes)

pytestmark = pytest.mark.runtime

TOPIC = "test.orders"
# As the link drills (tests/runtime/test_links.py): a Strimzi release under the default policy and
# a CSM one under the identity policy, the two Kafka lines (4.x and 3.8) of Connect's clients.
DRILLS = [("default", "strimzi", "1.2.0"), ("identity", "csm", "1.2")]
BROKERS = 3
AWAY = 10.0  # seconds the flow copies on while the broker is down
NAMES = FlowNames("repl-us-west-us-east", "us-west", "us-east")


@pytest.mark.parametrize("policy,flavour,version", DRILLS, ids=[f"{p}-{f}-{v}" for p, f, v in DRILLS])
def test_a_target_broker_restarted_moves_the_connect_topics_leaders_and_nothing_is_lost(policy, flavour, version,
                                                                                        runtime_api, tmp_path):
    topo = dev_for_runtime(flavour, version)
    flow = topo["flows"][0]
    flow["tasksMax"] = {"source": 2}
    # As in the link drills: the heartbeats topic, found by the source connector's next topic
    # refresh, would reconfigure its tasks (a clean restart) at a moment of its own, maybe
    # during the fault; without it every task start in the window is the fault's.
    flow["heartbeats"] = False
    if policy == "identity":
        flow["replicationPolicy"] = "identity"
    remote = f"us-west.{TOPIC}" if policy == "default" else TOPIC
    on_brokers(topo, "us-east", BROKERS)
    with rehearsal(topo, tmp_path, runtime_api, brokers={"us-east": BROKERS}) as r:
        target = r.client("us-east")
        ledger, connect = replicating(r, "us-west", "us-east", TOPIC, remote)
        watched = [NAMES.config_storage_topic, NAMES.offset_storage_topic, NAMES.status_storage_topic, remote]

        def leaders() -> dict[str, dict]:
            return r.clients.leaders(target, watched)

        before = leaders()
        everywhere = list(range(1, BROKERS + 1))
        # The render's replication factor -1: the brokers' default, every broker.
        assert {p: sorted(v["isr"]) for p, v in before.items()} == {p: everywhere for p in before}, before
        assert {p.rsplit(":", 1)[0] for p in before} == set(watched)
        node = before[f"{NAMES.config_storage_topic}:0"]["leader"]
        led = sorted(p for p, v in before.items() if v["leader"] == node)
        pods = r.pods_of(connect)
        copies, started = Counter(s["key"] for s in ledger.sent), task_starts(pods)
        during: dict[str, dict] = {}

        def restart() -> None:
            r.clusters["us-east"].stop_node(node - 1)

            def moved() -> dict[str, dict] | None:
                now = leaders()
                away = all(v["leader"] not in (node, -1) and node not in v["isr"] for v in now.values())
                return now if away else None

            during.update(eventually(f"every leadership off broker {node}", moved, 60, 1))
            crossed = sum(r.clients.end_offsets(target, [remote]).values())
            time.sleep(AWAY)
            # With two brokers of three the flow copies on: what the writers sent meanwhile
            # arrives (waited for, the broker still down: a loaded machine may copy late), and the
            # worker reports every task RUNNING.
            eventually(f"records copied while broker {node} is down", lambda: sum(
                r.clients.end_offsets(target, [remote]).values()) > crossed, 60, 1)
            assert [t["state"] for t in r.workers[connect].status(DEV_SOURCE)["tasks"]] == ["RUNNING"] * 2
            r.clusters["us-east"].start_node(node - 1)

            def back() -> dict[str, dict] | None:
                now = leaders()
                caught_up = all(sorted(v["isr"]) == everywhere for v in now.values())
                return now if caught_up and all(now[p]["leader"] == node for p in led) else None

            eventually(f"broker {node} in every ISR and leading its partitions again", back, 120, 1)

        under_writes(r, ledger, "leader-moves", restart)
        # Each partition it led had another leader while it was down, and has it again.
        assert all(during[p]["leader"] != node for p in led) and led, (led, during)
        print(f"leaders of {len(led)} partition(s) moved off broker {node} and back: "
              + ", ".join(f"{p}: {node} -> {during[p]['leader']} -> {node}" for p in led))
        starts = starts_since(pods, started)
        copies = again_at_most(r, ledger, copies, starts, f"target broker {node} restarted, its leaderships moved "
                               f"away and back; {starts} task start(s) meanwhile")
        assert [t["state"] for t in r.workers[connect].status(DEV_SOURCE)["tasks"]] == ["RUNNING"] * 2
        ledger.produce("after")
        again_at_most(r, ledger, copies, starts_since(pods, started), "after the moves")
