"""Series recorded from real faults, for the alert rules' false-page matrix.

A recording is what Prometheus would have stored of a flow's Connect pods (one per Connect
cluster, two where a scenario kills one) during one scenario on the runtime tier: each pod's
exporter scraped every `every_seconds` (tests/runtime/test_alert_recordings.py), the series the
alert rules and the dashboard read kept, with the labels the Prometheus Operator adds to a
PodMonitor's targets (monitoring.target_labels). It is stored as promtool's `input_series`
(run-length encoded: `1x9` is ten 1s, `_` a scrape without the series, `_x3` three of them; every
series exactly `scrapes` long as promtool reads it) in tests/data/recordings/<release>/
<scenario>.json, beside the scenario's phases, so that a reviewer reads it like code.

promtool replays a recording one scrape per minute: the rules' windows and `for` durations see
60 / `every_seconds` times more time than passed (a `for: 10m` is ten scrapes), while every value
(ages, latencies, lags, counts) is the one the worker reported.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.plan import monitoring
from infra.plan.monitoring.dashboard import BYTES_READ, BYTES_WRITTEN, NOT_ACKNOWLEDGED, OFFSET_COMMIT_TIME
from tests.support.monitoring import exposition, groups_of
from infra.checks import validation
from tests.support import stacks
from tests.support.stacks import ROOT, RUNTIME_RELEASES, render_topology

RECORDINGS = ROOT / "tests" / "data" / "recordings"

def series_read(exprs: Iterable[str]) -> set[str]:
    """The metric names the expressions read: Kafka's and Connect's (`kafka_...`), and the JVM's
    and the process's the exporter agent adds (`jvm_...`, `process_...`)."""
    return {name for expr in exprs for name in re.findall(r"\b((?:kafka|jvm|process)_[a-z0-9_]+)\b", expr)}


def read_by(topology: dict[str, Any]) -> set[str]:
    """What the topology's alert rules and the dashboard read."""
    return series_read([rule["expr"] for group in groups_of(topology) for rule in group["rules"]]
                       + monitoring.dashboard_queries())


def configuration(topology: dict[str, Any]) -> dict[str, Any]:
    """What a recording's worker ran, as today's render gives it for the recording's topology:
    each KafkaConnect's Kafka version and worker configuration, each KafkaConnector's class, tasks
    and configuration (secrets are references there, never values)."""
    with tempfile.TemporaryDirectory(prefix="recording-render-") as tmp:
        objects = render_topology(Path(tmp), topology).objects()
    out: dict[str, Any] = {}
    for obj in objects:
        spec, key = obj.get("spec", {}), f"{obj['kind']}/{obj['metadata']['name']}"
        if obj["kind"] == "KafkaConnect":
            out[key] = {"version": spec.get("version"), "config": spec.get("config")}
        elif obj["kind"] == "KafkaConnector":
            out[key] = {k: spec.get(k) for k in ("class", "tasksMax", "state", "config")}
    return dict(sorted(out.items()))


@functools.lru_cache(maxsize=None)
def _digest(topology_json: str) -> str:
    body = json.dumps(configuration(json.loads(topology_json)), sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()


def digest(topology: dict[str, Any]) -> str:
    """The digest of `configuration(topology)`: a recording stores the one it was made with, and a
    render default that changes it makes the recording stale (tests/conformance/test_alert_matrix.py)."""
    return _digest(json.dumps(topology, sort_keys=True))


def problems(recording: dict[str, Any]) -> list[str]:
    """Why a stored recording no longer stands for today's workers: made on another worker or
    connector configuration than today's render of its topology, on another Kafka than its
    release's, or missing a series the rules or the dashboard read without a stated reason."""
    where = f"{recording['release']}/{recording['scenario']}"
    out = []
    if recording.get("configuration_digest") != digest(recording["topology"]):
        out.append(f"{where}: recorded on another configuration ({recording.get('configuration_digest')}) than "
                   f"today's render of its topology ({digest(recording['topology'])}): record it again")
    flavour, version = recording["release"].split("-", 1)
    kafka = validation.parse(stacks.on_release(recording["topology"], flavour, version)).operator.release.kafka
    if recording.get("kafka_version") != kafka:
        out.append(f"{where}: recorded on Kafka {recording.get('kafka_version')}, the release runs {kafka}")
    for s in recording["input_series"]:
        held = len(decode(s["values"]))
        if held != recording["scrapes"]:
            out.append(f"{where}: {s['series']} holds {held} scrapes as promtool reads it, the recording "
                       f"{recording['scrapes']}")
    recorded = {s["series"].split("{", 1)[0] for s in recording["input_series"]}
    stated = {**READ_SINCE, **ABSENT.get(recording["scenario"], {})}
    missing = read_by(recording["topology"]) - recorded
    for name in sorted(missing - set(stated)):
        out.append(f"{where}: {name} is read by the rules or the dashboard and was not recorded")
    if recording.get("absent") != {name: stated[name] for name in sorted(missing & set(stated))}:
        out.append(f"{where}: its stated absences {recording.get('absent')} are not what it lacks "
                   f"({sorted(missing)}) with ABSENT's or READ_SINCE's reasons")
    return out


def _key(name: str, labels: dict[str, str]) -> str:
    body = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{name}{{{body}}}"


def parse(text: str, names: set[str], extra: dict[str, str]) -> dict[str, float]:
    """The exposition's samples of `names`, keyed as promtool writes a series, `extra` labels added."""
    return {_key(name, {**dict(labels), **extra}): value for (name, labels), value in exposition(text).items()
            if name in names}


def number(value: float) -> str:
    """A sample as promtool and OpenMetrics write it."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Inf" if value > 0 else "-Inf"
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


def encode(values: list[float | None]) -> str:
    """promtool's values: a run of one value as `vxN` (the value, then N more), a run of missing
    scrapes as `_xN` (N of them: promtool counts blanks unlike values, its series grammar,
    promql/parser/generated_parser.y `BLANK TIMES uint`), one missing as `_`; NaN, which promtool
    reads only alone, once per scrape."""
    out: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:  # NaN equals nothing: never a run
            j += 1
        if values[i] is None:
            out.append("_" if j == i else f"_x{j - i + 1}")
        else:
            text = number(values[i])  # type: ignore[arg-type]
            out.append(text if j == i else f"{text}x{j - i}")
        i = j + 1
    return " ".join(out)


_NUMBERS = {"NaN": math.nan, "Inf": math.inf, "+Inf": math.inf, "-Inf": -math.inf}


def decode(text: str) -> list[float | None]:
    """What promtool reads of `encode`'s values, one entry a scrape (None: missing): `vxN` is N + 1
    samples, `_xN` N missing ones. Another notation (promtool's `a+bxN` series) is refused."""
    out: list[float | None] = []
    for token in text.split():
        value, times, count = token.partition("x")
        if value == "_":
            out += [None] * (int(count) if times else 1)
            continue
        try:
            sample = _NUMBERS[value] if value in _NUMBERS else float(value)
        except ValueError:
            raise ValueError(f"{token!r}: not a sample or a run of one (an expanding series?)") from None
        out += [sample] * (int(count) + 1 if times else 1)
    return out


@dataclass
class Recorder:
    """Scrapes every target (a worker's `scrape` with the labels Prometheus adds to its series)
    every `every` seconds in a thread until stopped; `phase` marks where a scenario's step begins
    (the scrape index it begins at). A target that does not answer leaves its series without a
    sample there, as Prometheus would."""
    targets: list[tuple[Callable[[], str], dict[str, str]]]
    names: set[str]
    every: float = 2.0
    samples: list[dict[str, float] | None] = field(default_factory=list)
    phases: list[tuple[int, str]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self, phase: str) -> None:
        self.phases.append((0, phase))
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        deadline = time.monotonic()
        while not self._stop.is_set():
            sample: dict[str, float] = {}
            for scrape, extra in self.targets:
                try:
                    sample.update(parse(scrape(), self.names, extra))
                except OSError:
                    pass  # the worker did not answer: Prometheus records no sample of it
            self.samples.append(sample or None)
            deadline += self.every
            self._stop.wait(max(0.0, deadline - time.monotonic()))

    def phase(self, name: str) -> None:
        self.phases.append((len(self.samples), name))

    def wait(self, scrapes: int) -> None:
        """Until `scrapes` more scrapes are recorded."""
        target = len(self.samples) + scrapes
        while len(self.samples) < target:
            time.sleep(self.every / 4)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def recording(self, release: str, scenario: str, topology: dict[str, Any], what: str,
                  kafka_version: str) -> dict[str, Any]:
        keys = sorted({k for s in self.samples if s for k in s})
        recorded = {k.split("{", 1)[0] for k in keys}
        return {"release": release, "kafka_version": kafka_version, "scenario": scenario, "what": what,
                "configuration_digest": digest(topology),
                # Read by the rules or the dashboard, never exported in this scenario: the stated
                # reasons are ABSENT's, and a recording holding other gaps is refused.
                "absent": {name: ABSENT.get(scenario, {}).get(name, "not exported in this scenario")
                           for name in sorted(self.names - recorded)},
                "every_seconds": self.every,
                "scrapes": len(self.samples), "phases": [list(p) for p in self.phases], "topology": topology,
                "input_series": [{"series": k, "values": encode([s.get(k) if s else None for s in self.samples])}
                                 for k in keys]}


def write(recording: dict[str, Any]) -> Path:
    path = RECORDINGS / recording["release"] / f"{recording['scenario']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(recording, indent=1, sort_keys=False) + "\n")
    return path


def load_all() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(RECORDINGS.glob("*/*.json"))]


# What a scenario's worker does not export of what the rules and the dashboard read, and why; every
# other series read is in its recording, or read only since it was made (READ_SINCE below;
# tests/conformance/test_alert_matrix.py).
_NO_CHECKPOINT = "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms"
ABSENT: dict[str, dict[str, str]] = {
    # MirrorCheckpointConnector's checkpoint-latency-ms exists per partition once a checkpoint is
    # emitted, and a checkpoint needs an offset sync of a record written to the target.
    "transform-drops": {_NO_CHECKPOINT: "the transform drops every record: no offset sync, so no checkpoint"},
    "active-passive": {_NO_CHECKPOINT: "a bidirectional prefixless pair runs no checkpoint connector"},
}


# Series the rules or the dashboard came to read after recordings were made: a recording made
# before states each absent with this reason, and one made again holds it (a worker that does not
# export it is refused: the recorder gives ABSENT's reason or none). Every name here is absent from
# some recording, or it is dead here (tests/conformance/test_alert_matrix.py).
_SINCE_PANELS = ("read by the dashboard since Strimzi's MirrorMaker 2 panels were added (bytes in and out, offset "
                 "commit time, records not yet acknowledged), after this recording was made; every release's live "
                 "worker exports it (tests/data/scrape)")
READ_SINCE: dict[str, str] = {name: _SINCE_PANELS for name in (
    OFFSET_COMMIT_TIME, NOT_ACKNOWLEDGED, BYTES_READ, BYTES_WRITTEN)}


# The false-page matrix: per recorded scenario, the alerts that must fire at some point of it,
# each with the connector it names where it names one (None: the alert has no connector label),
# and no other alert (tests/conformance/test_alert_matrix.py).
MATRIX: dict[str, set[tuple[str, str | None]]] = {
    "healthy": set(),
    # Old records read late and written at once: the source side, never the target.
    "event-time": {("KafkaReplicationRecordAgeHigh", None)},
    # The Connect group's coordinator and internal topics live on the target: its workers lose
    # every assignment, and the connector and task series go with them.
    "target-down": {("KafkaReplicationConnectGroupDown", None)},
    # Nothing of the source arrives, its heartbeats included: the pair does not replicate.
    "source-down": {("KafkaReplicationHeartbeatsStale", None)},
    # The source connector copies the heartbeats too: paused, the pair replicates nothing.
    "source-paused": {("KafkaReplicationConnectorNotRunning", "repl-us-west-us-east-source"),
                      ("KafkaReplicationHeartbeatsStale", None)},
    "checkpoint-stopped": {("KafkaReplicationConnectorNotRunning", "repl-us-west-us-east-checkpoint")},
    # No heartbeat emitted, none replicated: both say so.
    "heartbeats-stopped": {("KafkaReplicationConnectorNotRunning", "repl-us-west-us-east-heartbeat"),
                           ("KafkaReplicationHeartbeatsStale", None)},
    # The record the target refuses fails the task that copies it. Its producer counted the error,
    # but that count is scraped only by chance (RELEASE_MATRIX): TargetRefusesWrites may not fire.
    "task-failed": {("KafkaReplicationTaskFailed", "repl-us-west-us-east-source")},
    # The connector fails to start (its admin client finds no source address).
    "connector-failed": {("KafkaReplicationConnectorFailed", "repl-us-west-us-east-source")},
    # The source refuses both of the flow's clients that log in to it: the replication consumer
    # (its tasks stay RUNNING) and the heartbeat producer (its task fails); nothing arrives.
    "credential-revoked": {("KafkaReplicationSourceAuthenticationFails", "repl-us-west-us-east-source"),
                           ("KafkaReplicationSourceAuthenticationFails", "repl-us-west-us-east-heartbeat"),
                           ("KafkaReplicationTaskFailed", "repl-us-west-us-east-heartbeat"),
                           ("KafkaReplicationHeartbeatsStale", None)},
    # Every record of the topic dropped by a transform: polled, not written; no fault.
    "transform-drops": set(),
    # The passive direction of a bidirectional pair polls what crossed and its loop filter drops
    # it all: polled, not written; no fault on either side.
    "active-passive": set(),
    # The faults of docs/faults.md (tests/runtime/test_links.py, test_leader_moves.py), recorded on the drills'
    # releases (FAULT_RELEASES). The link from the worker to the source cut while producers write:
    # nothing crosses, the heartbeats included, and the tasks stay RUNNING, their consumers retrying.
    "source-link-cut": {("KafkaReplicationHeartbeatsStale", None)},
    # Black-holed instead: connections open and unanswered, the clients time out their requests
    # and connect again into the same silence; the tasks stay RUNNING as with the cut.
    "source-link-black-hole": {("KafkaReplicationHeartbeatsStale", None)},
    # A 300 ms round trip to the source: each fetch waits on it, the copy keeps up with what
    # producers write, and a record's latency grows by the round trip, far under any threshold.
    "source-link-slow": set(),
    # The link to the target cut: the target is the Connect group's own Kafka, so each worker
    # loses its coordinator and revokes its tasks, as with the target's brokers stopped.
    "target-link-cut": {("KafkaReplicationConnectGroupDown", None)},
    # The link to the source narrower than what producers write: the flow copies at the link's
    # pace, its consumer's lag grows and the records it reads get old (the scenario's thresholds
    # at the recording's scale).
    "source-link-narrow": {("KafkaReplicationSourceLagGrowing", "repl-us-west-us-east-source"),
                           ("KafkaReplicationRecordAgeHigh", None)},
    # One of two pods killed and its container restarted: its tasks move back after the rebalance
    # delay (10 s here); a pause of seconds, no page.
    "worker-killed": set(),
    # Both pods rolled, one at a time: each worker hands its tasks over as it leaves; a pause of
    # seconds, no page.
    "workers-rolled": set(),
    # A three-broker source rolled one broker at a time: the source consumers follow each moved
    # leadership, the copy goes on; no page.
    "source-brokers-rolled": set(),
    # The target's three brokers rolled, the Connect cluster's own Kafka: its topics' leaders and
    # the group's coordinator move and move back; no page.
    "target-brokers-rolled": set(),
}
_HEARTBEAT_FAILED = ("KafkaReplicationTaskFailed", "repl-us-west-us-east-heartbeat")
# Where a release's worker answers a fault otherwise (a consequence, never the cause), the verdict
# of that release's recording.
RELEASE_MATRIX: dict[tuple[str, str], set[tuple[str, str | None]]] = {
    # Kafka 3.8's heartbeat task (CSM 1.2 and 1.4) retries a refused authentication and stays
    # RUNNING, where 4.x's fails: the authentication alerts name the cause on every release.
    **{(release, "credential-revoked"): MATRIX["credential-revoked"] - {_HEARTBEAT_FAILED}
       for release in ("csm-1.2", "csm-1.4")},
    # A race, not a release difference: the failing task's producer metrics end where the task
    # fails (and the operator's autoRestart restarts it with a new producer), so its error count
    # is in a recording only when a scrape fell between the refused write and the failure. The
    # CSM 1.2 and Strimzi 1.2.0 recordings caught it; TaskFailed names the connector in every one.
    **{(release, "task-failed"): MATRIX["task-failed"] | {("KafkaReplicationTargetRefusesWrites",
                                                            "repl-us-west-us-east-source")}
       for release in ("csm-1.2", "strimzi-1.2.0")},
}


def verdict(release: str, scenario: str) -> set[tuple[str, str | None]]:
    """The alerts that must fire in a recording, and no other."""
    return RELEASE_MATRIX.get((release, scenario), MATRIX[scenario])


# Every release the runtime tier runs (tests/support/stacks.py RUNTIME_RELEASES): each has every
# scenario but the drills' faults, which are recorded on the releases the drills run
# (tests/runtime/test_links.py DRILLS: a CSM line on Kafka 3.8 and a Strimzi line on 4.x).
RELEASES = tuple(f"{flavour}-{version}" for flavour, version in RUNTIME_RELEASES)
FAULT_RELEASES = ("csm-1.2", "strimzi-1.2.0")
FAULTS = ("source-link-cut", "source-link-black-hole", "source-link-slow", "target-link-cut", "source-link-narrow",
          "worker-killed", "workers-rolled", "source-brokers-rolled", "target-brokers-rolled")


def releases_of(scenario: str) -> tuple[str, ...]:
    """The releases a scenario is recorded on."""
    return FAULT_RELEASES if scenario in FAULTS else RELEASES


# The scenarios whose alerts have all cleared by the recording's end (AFTER scrapes past the
# fault): the drills' faults, whose alerts must say when the flow is well again.
CLEARED = frozenset(FAULTS)


def recorded_pairs() -> list[tuple[str, str]]:
    """(release, scenario) of every recording the matrix holds."""
    return [(release, scenario) for scenario in MATRIX for release in releases_of(scenario)]
