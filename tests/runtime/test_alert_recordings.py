"""Recordings of real faults for the alert rules' false-page matrix (tests/conformance/
test_alert_matrix.py): the dev flow on a real worker with its exporter, one scenario per
rehearsal, the worker scraped every EVERY seconds from before the fault to after its end
(tests/support/recordings.py says how the series are stored and replayed).

Recording takes about five minutes a scenario, so `make test` does not record: it replays the
stored recordings (the conformance tier). They are recorded again with

    RECORD_ALERTS=1 .venv/bin/python -m pytest -q tests/runtime/test_alert_recordings.py

(or one, `"...::test_record[<release>-<scenario>]"`), which rewrites tests/data/recordings/
<release>/*.json, reviewed like code.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from infra.tools.rehearsal.links import Link
from infra.tools.rehearsal.local import SINGLE_BROKER
from infra.tools.rehearsal.run import Rehearsal
from tests.runtime.test_links import DRILLS
from tests.support import recordings
from tests.support.monitoring import target_labels
from tests.support.replication import (HAND_MADE_STATES, Repeating, dev_for_runtime, drill_pods, on_brokers,
                                       rehearsal, running, short_rebalance_delay)
from tests.support.stacks import RUNTIME_RELEASES
from tests.support.worker_metrics import with_metrics

pytestmark = pytest.mark.runtime

RECORD = os.environ.get("RECORD_ALERTS") == "1"
# Seconds between scrapes; each is a minute when promtool replays it. Kafka's metric windows are
# its own (MirrorSourceMetrics: `new Metrics()`, two samples of 30 s): a maximum outlives what
# raised it by up to 60 s, 7.5 scrapes here, fewer than a `for: 10m` holds, as in real time.
EVERY = 8.0
FLOW = "repl-us-west-us-east"
TOPIC = "test.orders"
GROUP = "test.readers"
BASELINE, FAULT, AFTER = 8, 25, 12  # scrapes per phase: about six minutes a scenario


class Traffic(Repeating):
    """Producers writing to the source while a scenario runs: four records every few seconds,
    stamped now, or `age_seconds` in the past (producers writing event time)."""

    def __init__(self, r: Rehearsal, age_seconds: int = 0, period: float = 4.0, size: int = 0) -> None:
        super().__init__(period)
        self.r, self.age, self.size = r, age_seconds, size

    def step(self) -> None:
        now = int(time.time() * 1000) - self.age * 1000
        batch = [{"key": f"k{now}-{i}", "value": f"v{i}".ljust(self.size, "x"), "partition": i % 2, "timestamp": now}
                 for i in range(4)]
        try:
            self.r.clients.produce(self.r.client("us-west"), TOPIC, batch)
        except RuntimeError:
            pass  # the source is down in this scenario: producers fail too


def _worker(r: Rehearsal):
    (worker,) = r.workers.values()
    return worker


def start(r: Rehearsal, monkeypatch) -> None:
    """The topic, a group with committed offsets on the source (the checkpoint connector's
    subject), and the stack deployed."""
    with_metrics(monkeypatch, r)
    source = r.client("us-west")
    r.clients.create_topics(source, {TOPIC: 2})
    r.clients.produce(source, TOPIC, [{"key": f"o{i}", "value": "x" * 100, "partition": i % 2} for i in range(4)])
    r.clients.consume(source, [TOPIC], 4, 30_000, group=GROUP)
    r.deploy()
    running(r)


def phases(recorder: recordings.Recorder, fault: str, begin: Callable[[], None], end: Callable[[], None]) -> None:
    recorder.wait(BASELINE)
    recorder.phase(fault)
    begin()
    recorder.wait(FAULT)
    recorder.phase("recovered")
    end()
    recorder.wait(AFTER)


def scenario_healthy(r, recorder):
    recorder.wait(BASELINE + FAULT)


def scenario_target_down(r, recorder):
    phases(recorder, "target brokers stopped", r.clusters["us-east"].stop, lambda: r.start_cluster("us-east"))


def scenario_source_down(r, recorder):
    phases(recorder, "source brokers stopped", r.clusters["us-west"].stop, lambda: r.start_cluster("us-west"))


def scenario_source_paused(r, recorder):
    phases(recorder, "source connector paused by hand, the source growing",
           lambda: _worker(r).request("PUT", f"/connectors/{FLOW}-source/pause"),
           lambda: _worker(r).request("PUT", f"/connectors/{FLOW}-source/resume"))


def scenario_checkpoint_stopped(r, recorder):
    phases(recorder, "checkpoint connector stopped by hand",
           lambda: _worker(r).request("PUT", f"/connectors/{FLOW}-checkpoint/stop"),
           lambda: _worker(r).request("PUT", f"/connectors/{FLOW}-checkpoint/resume"))


def scenario_heartbeats_stopped(r, recorder):
    phases(recorder, "heartbeat connector stopped by hand",
           lambda: _worker(r).request("PUT", f"/connectors/{FLOW}-heartbeat/stop"),
           lambda: _worker(r).request("PUT", f"/connectors/{FLOW}-heartbeat/resume"))


def scenario_task_failed(r, recorder):
    """A record the target refuses: its topic's max.message.bytes lowered under the record's size,
    the task that copies partition 0 fails (a producer error Connect does not retry); then the
    limit put back and the failed task restarted, as on-call would."""
    target, topic = r.client("us-east"), f"us-west.{TOPIC}"

    def begin() -> None:
        r.clients.alter_topic_configs(target, topic, {"max.message.bytes": "1024"})
        r.clients.produce(r.client("us-west"), TOPIC, [{"key": "big", "value": "x" * 4000, "partition": 0}])

    def end() -> None:
        r.clients.alter_topic_configs(target, topic, {"max.message.bytes": "1048588"})
        _worker(r).request("POST", f"/connectors/{FLOW}-source/restart?includeTasks=true&onlyFailed=true")
    phases(recorder, "a record larger than the target topic's max.message.bytes: one source task FAILED", begin, end)


def scenario_connector_failed(r, recorder):
    """The source connector's configuration changed by hand (REST API) to a source bootstrap
    address that does not resolve: the worker restarts the connector, whose start fails creating
    its admin client (no resolvable bootstrap address); then the configuration put back, as
    on-call would. Its tasks are the worker's, not the connector's: what they do is recorded."""
    worker, name = _worker(r), f"{FLOW}-source"
    kept = worker.get(f"/connectors/{name}/config")
    broken = {**kept, "source.cluster.bootstrap.servers": "us-west.unresolvable.invalid:9092"}

    def begin() -> None:
        worker.request("PUT", f"/connectors/{name}/config", broken)

    def end() -> None:
        worker.request("PUT", f"/connectors/{name}/config", kept)
    phases(recorder, "the source connector's configuration given an unresolvable source address: the connector "
           "FAILED", begin, end)


def scenario_credential_revoked(r, recorder):
    """The source user's SCRAM password changed on the broker and not in the stack: the
    connectors' clients fail their next authentication (every REAUTH seconds); then the password
    put back."""
    cluster = r.clusters["us-west"]
    kept = cluster.password

    def set_password(password: str) -> None:
        r.clients.alter_scram(r.client("us-west"), "replicator", "SCRAM-SHA-512", password)
        cluster.password = password  # the test's own producers follow; the stack's secret does not
    phases(recorder, "the source credential revoked on the broker", lambda: set_password(f"revoked-{kept}"),
           lambda: set_password(kept))


def scenario_transform_drops(r, recorder):
    """Steady traffic under a transform that drops it: nothing of the topic reaches the target,
    the heartbeats do (the scenario is what it says, or the recording is not kept)."""
    recorder.wait(BASELINE + FAULT)
    target = r.client("us-east")
    assert sum(r.clients.end_offsets(target, [f"us-west.{TOPIC}"]).values()) == 0
    assert sum(r.clients.end_offsets(target, ["us-west.heartbeats"]).values()) > 0


def scram_source(topo: dict) -> None:
    topo["clusters"]["us-west"]["security"]["sasl"]["mechanism"] = "SCRAM-SHA-512"


def dropping_transform(topo: dict) -> None:
    """A Filter that drops every record of test.orders (heartbeats still copied). A transform sees
    the record as MirrorSourceTask.convertRecord made it, under its target topic's name
    (us-west.test.orders): the pattern matches that."""
    flow = topo["flows"][0]
    flow["transforms"] = [{"name": "DropOrders", "type": "org.apache.kafka.connect.transforms.Filter",
                           "predicate": "IsOrders"}]
    flow["predicates"] = [{"name": "IsOrders", "type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
                           "config": {"pattern": "us-west\\.test\\.orders"}}]


def bidirectional(topo: dict) -> None:
    """The dev flow as a bidirectional prefixless pair (no checkpoints: they do not work there),
    used active/passive: producers write on us-west only, so the us-east -> us-west direction polls
    only records that came from us-west, and its loop filter drops every one."""
    flow = topo["flows"][0]
    flow["bidirectional"] = True
    for key in ("syncGroupOffsets", "groups"):
        flow.pop(key, None)
    flow["config"].pop("checkpoint", None)
    # Its source connectors emit no offset syncs (Kafka 3.9+ refuses their settings there).
    for key in ("offset.lag.max", "offset-syncs.topic.replication.factor"):
        flow["config"]["source"].pop(key, None)
    # us-west is a target too now: Strimzi's KafkaConnect trusts PEM certificates only.
    topo["clusters"]["us-west"]["security"]["tls"]["trust"] = "pem"


def scenario_active_passive(r, recorder):
    """Steady traffic on the active side; the passive direction polls what crossed and writes
    nothing of it (the scenario is what it says, or the recording is not kept)."""
    recorder.wait(BASELINE + FAULT)
    source, target = r.client("us-west"), r.client("us-east")
    crossed = sum(r.clients.end_offsets(target, [TOPIC]).values())
    written = sum(r.clients.end_offsets(source, [TOPIC]).values())
    # What crossed is what producers wrote but the batches in flight; had the passive direction
    # copied it back, the source would hold it twice.
    assert 0 < crossed <= written < 1.5 * crossed, (crossed, written)


def _link(r: Rehearsal, alias: str):
    assert r.links is not None, "a linked rehearsal"
    return r.links[alias]


def link_fault(alias: str, phase: str, act: Callable[[Link], None]) -> Callable[..., None]:
    """A scenario: the worker's link to cluster `alias` faulted by `act` for the fault phase, then
    restored (every toxic removed, the proxy enabled)."""
    def run(r: Rehearsal, recorder: recordings.Recorder) -> None:
        link = _link(r, alias)
        phases(recorder, phase, lambda: act(link), link.restore)
    return run


# Cut: the proxy disabled, connections closed and new ones refused.
scenario_source_link_cut = link_fault("us-west", "the worker's link to the source cut", lambda link: link.cut())
# Black-holed: connections stay open and nothing crosses either way (Toxiproxy's `timeout` toxic
# at 0), so the clients learn of it only from their request timeouts.
scenario_source_link_black_hole = link_fault("us-west", "the worker's link to the source black-holed",
                                             lambda link: link.black_hole())
# Slowed: 150 ms each way, the drill's 300 ms round trip between continents.
scenario_source_link_slow = link_fault("us-west", "the worker's link to the source slowed to a 300 ms round trip",
                                       lambda link: link.slow(latency_ms=150))
# The target's link cut: the Connect group's coordinator and its topics are on the target, so the
# worker revokes its tasks (docs/faults.md).
scenario_target_link_cut = link_fault("us-east", "the worker's link to the target cut", lambda link: link.cut())


# The source link while narrow: 32 KB/s each way, a third of what the traffic's producers write
# (four records of 192 KB every 4 s: about 96 KB/s as the source connector read them before the
# fault, the producers' own pace), so the lag grows and records are read later and later. The
# flow's source consumer fetches at most 256 KB a partition: a fetch answer (one 192 KB batch a
# partition, two partitions) crosses the link in 12 s, inside the consumer's request.timeout.ms
# (30 s). With Kafka's 1 MB an answer would outlast it, be abandoned and be asked again, larger:
# the copy could stop rather than slow, another scenario than this one (not recorded).
NARROW_KB_PER_S = 32
NARROW_RECORD_BYTES = 196_608
NARROW_FETCH_BYTES = 262_144
# The scenario's thresholds, at the recording's scale: a lag of 10 records a partition, records
# read a minute after they were written.
NARROW_LAG, NARROW_AGE_SECONDS = 10, 60


# Narrowed to NARROW_KB_PER_S (and 50 ms each way) while producers write about three times that: the
# flow copies at the link's pace, its lag grows and the records it reads get older; lifted, the
# copy catches up.
scenario_source_link_narrow = link_fault(
    "us-west", f"the worker's link to the source narrowed to {NARROW_KB_PER_S} KB/s, producers writing "
    f"records of {NARROW_RECORD_BYTES // 1024} KB, four every 4 s",
    lambda link: link.slow(latency_ms=50, rate_kb_per_s=NARROW_KB_PER_S))


def scenario_worker_killed(r, recorder):
    """The first of the Connect cluster's two pods killed (SIGKILL) and its container restarted, as
    the kubelet does after an OOM kill; the other pod runs on."""
    (connect,) = r.workers
    phases(recorder, "the first of two Connect pods killed, its container restarted",
           lambda: r.kill_worker(connect, pod=0), lambda: None)


def scenario_workers_rolled(r, recorder):
    """Both Connect pods rolled as the operator rolls them after a change (one at a time, SIGTERM,
    the next once the first answers), while producers write."""
    (connect,) = r.workers
    phases(recorder, "both Connect pods rolled one at a time", lambda: r.roll_pods(connect), lambda: None)


BROKERS = 3  # a cluster whose brokers are rolled: each partition on three, two in sync required
# MirrorMaker 2's own topics on each side of the flow, which a rehearsal makes at replication factor
# 1 (infra/tools/rehearsal/local.py SINGLE_BROKER): on a cluster of three, on every broker, so that
# a roll keeps them in sync. The offset syncs are written to the source (Kafka's default
# `offset-syncs.topic.location`), the heartbeats too (docs/heartbeats.md), the checkpoints to the target.
ITS_OWN_TOPICS = {"us-west": ("source", "heartbeat"), "us-east": ("checkpoint",)}


def three_brokers(alias: str) -> Callable[[dict], None]:
    """The cluster `alias` on three brokers (each a broker and a KRaft voter), its bootstrap
    listing each, as tests/runtime/test_leader_moves.py runs the target."""
    def change(topo: dict) -> None:
        on_brokers(topo, alias, BROKERS)
        for kind in ITS_OWN_TOPICS[alias]:
            topo["flows"][0]["config"][kind].update({key: BROKERS for key in SINGLE_BROKER[kind]})
    return change


three_source_brokers, three_target_brokers = three_brokers("us-west"), three_brokers("us-east")


def brokers_rolled(alias: str, phase: str) -> Callable[..., None]:
    """A scenario: the brokers of cluster `alias` rolled one at a time during the fault phase, as
    their operator rolls them after a change (a controlled shutdown, the same storage and address
    started again). Strimzi's roller restarts no broker whose restart would take a partition it
    holds under min.insync.replicas (KafkaAvailability.canRoll, `wouldAffectAvailability`: ISR
    size equal to min ISR with the broker in it). Every partition here is on all three brokers
    with a min ISR of two, so that is: the next broker once the one before is back in every
    in-sync replica set, which the scenario waits for on the topics the admin client lists. The
    roller reads the internal topics too; the scenario does not wait on `__consumer_offsets`, so
    it may roll sooner than the roller, never later. Each restart moves the stopped broker's
    leaderships to the others, and the controller hands them back once it is in sync
    (leader.imbalance.check.interval.seconds, 5 s in the rehearsal)."""
    def run(r: Rehearsal, recorder: recordings.Recorder) -> None:
        cluster, client = r.clusters[alias], r.client(alias)
        nodes = len(cluster.processes)
        assert nodes == BROKERS, nodes

        def in_sync(when: str) -> None:
            deadline, lagging = time.monotonic() + 120, None
            while time.monotonic() < deadline:
                partitions = r.clients.leaders(client, r.clients.topics(client))
                lagging = {p: v for p, v in partitions.items() if sorted(v["isr"]) != list(range(1, nodes + 1))}
                if partitions and not lagging:
                    return
                time.sleep(1)
            pytest.fail(f"partitions of {alias} not in sync {when} after 120 s: {lagging}")

        def roll() -> None:
            for node in range(nodes):
                in_sync(f"before broker {node + 1} stops")
                cluster.stop_node(node)
                cluster.start_node(node)
            in_sync("after the roll")
        phases(recorder, phase, roll, lambda: None)
    return run


scenario_source_brokers_rolled = brokers_rolled("us-west", "the source's three brokers rolled one at a time")
scenario_target_brokers_rolled = brokers_rolled("us-east", "the target's three brokers rolled one at a time")


def narrow_source(topo: dict) -> None:
    flow = topo["flows"][0]
    flow.setdefault("alerts", {}).update({"sourceLagRecords": NARROW_LAG, "recordAgeSeconds": NARROW_AGE_SECONDS})
    flow["config"]["source"]["source.consumer.max.partition.fetch.bytes"] = NARROW_FETCH_BYTES


REAUTH = 10  # seconds: how often the connectors' clients authenticate again to a SCRAM source


@dataclass(frozen=True)
class Scenario:
    what: str
    run: Callable[..., None]
    age: int = 0                                       # the traffic's records' age, in seconds
    topology: Callable[[dict], None] | None = None     # changes to the dev flow
    fields: dict = field(default_factory=dict)         # Rehearsal fields
    size: int = 0                                      # the traffic's record values, in bytes


SCENARIOS: dict[str, Scenario] = {
    "healthy": Scenario("steady traffic, nothing wrong", scenario_healthy),
    "event-time": Scenario("producers stamping records with an event time 10 minutes old: every record is old when "
                           "it is read, as in a long catch-up", scenario_healthy, age=600),
    "target-down": Scenario("the target's brokers stopped for the fault phase, then started again",
                            scenario_target_down),
    "source-down": Scenario("the source's brokers stopped for the fault phase, then started again",
                            scenario_source_down),
    "source-paused": Scenario("the source connector paused through the REST API while producers write, then resumed",
                              scenario_source_paused, fields=HAND_MADE_STATES),
    "checkpoint-stopped": Scenario("the checkpoint connector stopped through the REST API, then resumed",
                                   scenario_checkpoint_stopped, fields=HAND_MADE_STATES),
    "heartbeats-stopped": Scenario("the heartbeat connector stopped through the REST API, then resumed",
                                   scenario_heartbeats_stopped, fields=HAND_MADE_STATES),
    "task-failed": Scenario("a record larger than the target topic accepts fails the source task copying it; the "
                            "limit put back and the task restarted", scenario_task_failed),
    "connector-failed": Scenario("the source connector's configuration changed by hand to an unresolvable source "
                                 "address, the connector FAILED; then the configuration put back",
                                 scenario_connector_failed, fields=HAND_MADE_STATES),
    "credential-revoked": Scenario("the source user's SCRAM password changed on the broker, not in the stack, then "
                                   "put back", scenario_credential_revoked, topology=scram_source,
                                   fields={"reauthenticate": {"us-west": REAUTH}}),
    "transform-drops": Scenario("a Filter transform drops every record of the replicated topic while producers "
                                "write (heartbeats still copied)", scenario_transform_drops,
                                topology=dropping_transform),
    "active-passive": Scenario("a bidirectional prefixless pair used active/passive: producers write on one side, "
                               "the other direction's loop filter drops every record it polls",
                               scenario_active_passive, topology=bidirectional),
    "source-link-cut": Scenario("the link between the Connect worker and the source cut while producers write to the "
                                "source, then restored", scenario_source_link_cut, fields={"linked": True}),
    "source-link-black-hole": Scenario("the link between the Connect worker and the source black-holed (connections "
                                       "open, nothing answered) while producers write, then restored",
                                       scenario_source_link_black_hole, fields={"linked": True}),
    "source-link-slow": Scenario("the link between the Connect worker and the source slowed to a 300 ms round trip "
                                 "while producers write, then lifted", scenario_source_link_slow,
                                 fields={"linked": True}),
    "target-link-cut": Scenario("the link between the Connect worker and the target (the Connect group's own Kafka) "
                                "cut while producers write, then restored", scenario_target_link_cut,
                                topology=short_rebalance_delay, fields={"linked": True}),
    "source-link-narrow": Scenario(f"the link between the Connect worker and the source narrowed to {NARROW_KB_PER_S} "
                                   "KB/s while producers write about three times that, then lifted",
                                   scenario_source_link_narrow, topology=narrow_source, fields={"linked": True},
                                   size=NARROW_RECORD_BYTES),
    "worker-killed": Scenario("one of the Connect cluster's two pods killed (SIGKILL) and its container restarted "
                              "while producers write", scenario_worker_killed, topology=drill_pods,
                              fields={"scale": True}),
    "workers-rolled": Scenario("the Connect cluster's two pods rolled one at a time, as the operator rolls them, "
                               "while producers write", scenario_workers_rolled, topology=drill_pods,
                               fields={"scale": True}),
    "source-brokers-rolled": Scenario("the source cluster's three brokers rolled one at a time, as their operator "
                                      "rolls them, while producers write", scenario_source_brokers_rolled,
                                      topology=three_source_brokers, fields={"brokers": {"us-west": BROKERS}}),
    "target-brokers-rolled": Scenario("the target cluster's three brokers (the Connect cluster's own Kafka) rolled one "
                                      "at a time, as their operator rolls them, while producers write",
                                      scenario_target_brokers_rolled, topology=three_target_brokers,
                                      fields={"brokers": {"us-east": BROKERS}}),
}


def record(flavour: str, version: str, name: str, runtime_api, tmp_path, monkeypatch) -> dict:
    """One scenario on a rehearsal of its own, the worker scraped from its baseline to its end."""
    scenario = SCENARIOS[name]
    topo = dev_for_runtime(flavour, version)
    if scenario.topology:
        scenario.topology(topo)
    with rehearsal(topo, tmp_path, runtime_api, **scenario.fields) as r:
        start(r, monkeypatch)
        # What the alert rules and the dashboard read (docs/operations.md#dashboard pictures these).
        names = recordings.read_by(r.topology)
        # Every pod of every Connect cluster (one a flow here), labelled as its PodMonitor target.
        recorder = recordings.Recorder([(pod.scrape, {**target_labels(flow), "pod": f"{flow}-connect-{i}"})
                                        for (flow, name) in sorted(r.workers)
                                        for i, pod in enumerate(r.pods_of((flow, name)))], names, EVERY)
        with Traffic(r, scenario.age, size=scenario.size):
            recorder.start("baseline")
            try:
                scenario.run(r, recorder)
            finally:
                recorder.stop()
        return recorder.recording(f"{flavour}-{version}", name, r.topology, scenario.what, r.release.kafka)


# (flavour, version, scenario) of each recording: every release each scenario, the drills' faults
# on the drills' releases (recordings.releases_of).
RECORDINGS = [(f, v, name) for name in SCENARIOS for f, v in RUNTIME_RELEASES
              if f"{f}-{v}" in recordings.releases_of(name)]


@pytest.mark.skipif(not RECORD, reason="records every scenario again: RECORD_ALERTS=1 (the module's docstring)")
@pytest.mark.parametrize("flavour,version,name", RECORDINGS, ids=[f"{f}-{v}-{n}" for f, v, n in RECORDINGS])
def test_record(flavour, version, name, runtime_api, tmp_path, monkeypatch):
    recording = record(flavour, version, name, runtime_api, tmp_path, monkeypatch)
    assert recording["scrapes"] >= BASELINE + FAULT
    recordings.write(recording)


def test_every_scenario_has_its_verdict():
    assert list(SCENARIOS) == list(recordings.MATRIX)
    assert len(RECORDINGS) == len(recordings.recorded_pairs()) == 66


def test_the_faults_are_recorded_on_the_drills_releases():
    """The drills' faults are recorded where the drills run them, with the drills' links and pods."""
    assert set(recordings.FAULT_RELEASES) == {f"{f}-{v}" for _, f, v in DRILLS}
    assert {name for name, s in SCENARIOS.items() if s.fields.get("linked")} == {
        "source-link-cut", "source-link-black-hole", "source-link-slow", "target-link-cut", "source-link-narrow"}
    # The drills' own settings (tests/support/replication.py), which test_links.py runs: the 300 s
    # default rebalance delay would read as 37 minutes in the replay, where each scrape is a minute.
    assert {name: s.topology for name, s in SCENARIOS.items() if name in recordings.FAULTS} == {
        "source-link-cut": None, "source-link-black-hole": None, "source-link-slow": None,
        "target-link-cut": short_rebalance_delay,
        "source-link-narrow": narrow_source, "worker-killed": drill_pods, "workers-rolled": drill_pods,
        "source-brokers-rolled": three_source_brokers, "target-brokers-rolled": three_target_brokers}


def test_the_stored_recordings_ran_the_topology_their_scenario_builds_today():
    """Each stored recording's topology is the one `record` gives its scenario on its release now
    (the dev flow and the scenario's changes): a scenario's builder changed without a new
    recording fails here, not in a replay that still passes."""
    for recording in recordings.load_all():
        flavour, version = recording["release"].split("-", 1)
        topo = dev_for_runtime(flavour, version)
        change = SCENARIOS[recording["scenario"]].topology
        if change:
            change(topo)
        assert recording["topology"] == topo, (recording["release"], recording["scenario"])
