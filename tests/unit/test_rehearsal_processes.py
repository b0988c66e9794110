"""How a rehearsal stops its JVMs, and the JVM settings it starts them with (process.py), on plain
processes: no Java here."""

from __future__ import annotations

import random
import tempfile
import time
from types import SimpleNamespace

import pytest

from infra.tools.rehearsal.process import Network, Process, free_port, free_ports, jvm_options, stop_all


def test_stop_all_signals_every_process_at_once(tmp_path):
    # Each takes 2 s to stop after SIGTERM (as a worker's shutdown takes seconds): stopped one
    # after the other, three would take 6 s.
    slow = "trap 'sleep 2; exit 0' TERM; while :; do sleep 0.05; done"
    procs = [Process(f"p{i}", ["sh", "-c", slow], tmp_path / f"p{i}.log") for i in range(3)]
    time.sleep(0.3)  # the traps are set
    started = time.monotonic()
    stop_all(procs)
    took = time.monotonic() - started
    assert [p.popen.returncode for p in procs] == [0, 0, 0]
    assert 2 <= took < 5, took


def test_stop_all_kills_what_outlives_its_grace(tmp_path):
    stubborn = Process("stubborn", ["sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"], tmp_path / "s.log")
    time.sleep(0.3)
    stop_all([stubborn, None], grace=0.5)
    assert stubborn.popen.returncode == -9  # SIGKILL, after the grace


def test_jvm_profiles():
    assert jvm_options("quick", (128, 384)) == ["-Xms128m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
    assert jvm_options("steady", (128, 384)) == ["-Xms1g", "-Xmx1g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                                                 "-XX:InitiatingHeapOccupancyPercent=35",
                                                 "-XX:+ExplicitGCInvokesConcurrent"]
    with pytest.raises(ValueError) as exc:
        jvm_options("fast", (1, 2))
    assert str(exc.value) == "JVM profile 'fast': one of quick, steady"


def test_a_distance_for_a_cluster_the_topology_lacks_is_refused_before_anything_starts(tmp_path):
    from infra.tools.rehearsal.distance import Distance
    from infra.tools.rehearsal.process import RuntimeStartError
    from infra.tools.rehearsal.run import Rehearsal
    from tests.support.replication import dev_for_runtime
    link = Distance(50)
    r = Rehearsal(dev_for_runtime("strimzi", "1.2.0"), tmp_path, kube=None,  # type: ignore[arg-type]
                  distances={"us-west": link, "eu-north": Distance(20)})
    with pytest.raises(RuntimeStartError) as refused:
        r.start_clusters()
    assert str(refused.value) == ("a distance for eu-north, which the topology does not name as a cluster "
                                  "(us-east, us-west)")
    assert r.clusters == {} and link._thread is None  # no broker, no link


def test_free_ports_are_distinct():
    # Bound and released one at a time, 300 ports collide almost always (the kernel hands a just
    # released port out again); a broker given one port for two listeners does not start.
    ports = free_ports("127.0.0.1", 300)
    assert len(set(ports)) == 300 and all(1024 < p < 65536 for p in ports), ports
    assert free_port("127.0.0.1") > 1024


def test_two_rehearsals_never_share_loopback_addresses(tmp_path, monkeypatch):
    # The random draw gives 127.30.40 twice, then 127.50.60: the second rehearsal, in this process
    # or another, takes the next draw, since the first holds the prefix's lock.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    draws = iter([30, 40, 30, 40, 50, 60, 30, 40])
    monkeypatch.setattr(random, "randint", lambda a, b: next(draws))
    for d in "abc":
        (tmp_path / d).mkdir()
    first, second = Network(tmp_path / "a"), Network(tmp_path / "b")
    assert (first.address(), second.address()) == ("127.30.40.1", "127.50.60.1")
    first.close()  # the first rehearsal is over
    assert Network(tmp_path / "c").address() == "127.30.40.1"
    assert sorted(p.name for p in (tmp_path / "kafka-replication-addresses").iterdir()) == ["127.30.40", "127.50.60"]


def test_a_rehearsal_stops_every_broker_of_every_cluster_and_gives_its_addresses_back(tmp_path, monkeypatch):
    # A cluster of three brokers: all three stopped, not its first alone (KafkaCluster.process).
    from infra.tools.rehearsal.run import Rehearsal
    from tests.support.replication import dev_for_runtime
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    r = Rehearsal(dev_for_runtime("strimzi", "1.2.0"), tmp_path, kube=None)  # type: ignore[arg-type]
    brokers = [Process(f"broker {i}", ["sh", "-c", "while :; do sleep 0.05; done"], tmp_path / f"b{i}.log")
               for i in range(3)]
    r.clusters["us-east"] = SimpleNamespace(process=brokers[0], processes=brokers)  # type: ignore[assignment]
    r.stop()
    assert [b.popen.returncode for b in brokers] == [-15, -15, -15]  # each ended by its SIGTERM
    assert r.network._claim.closed
