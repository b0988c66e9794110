"""The runtime tier's helpers: a rehearsal on real Kafka and Connect, records sent and read back,
polling with a deadline, the stacks as the runtime runs them, and the audit's pod run for real."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from infra.tools.rehearsal import jars
from infra.tools.rehearsal.kube import ApiServerKube
from infra.tools.rehearsal.run import Rehearsal, local_topology
from tests.support.schemas import release_of, strimzi_crds
from tests.support.stacks import RELEASES, ROOT, RUNTIME_COUNTS, RUNTIME_RELEASES, on_release, unavailable

RELEASE_IDS = [f"{f}-{v}" for f, v in RELEASES]
RUNTIME_IDS = [f"{f}-{v}" for f, v in RUNTIME_RELEASES]


@contextmanager
def rehearsal(topology: dict, directory: Path, api, **fields) -> Iterator[Rehearsal]:
    """A rehearsal of `topology` with its clusters started; `fields` of Rehearsal (authorizers...)."""
    r = Rehearsal(topology, directory, ApiServerKube(api, strimzi_crds(release_of(topology))), **fields)
    try:
        try:
            jars.release_jars(r.release)
        except jars.JarsError as exc:
            unavailable(str(exc))
        r.start_clusters()
        RUNTIME_COUNTS["Kafka clusters started"] += len(r.clusters)
        yield r
    finally:
        RUNTIME_COUNTS["Connect workers started"] += (len(r.workers) + sum(len(ws) for ws in r.pods.values())
                                                      + r.started_before_redeploy)
        RUNTIME_COUNTS[f"rehearsals on {r.release.name}"] += 1
        r.stop()


def running(r: Rehearsal, timeout: float = 180) -> dict:
    """Every connector whose spec says running, RUNNING with every task (counted for the summary)."""
    found = r.wait_running(timeout)
    RUNTIME_COUNTS["connectors seen RUNNING with every task"] += len(found)
    return found


def eventually(what: str, probe, timeout: float = 120, every: float = 2):
    """The probe's first truthy answer; fails with the last answer after `timeout`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(every)
    pytest.fail(f"{what}: not after {timeout:.0f} s (last: {last!r})")


def for_runtime(topology: dict) -> dict:
    """The topology as a rehearsal runs it (infra/tools/rehearsal/run.py local_topology)."""
    return local_topology(topology)


# Record timestamps: recent, or the brokers' time retention (7 days) deletes them as they arrive.
BASE_MS = int(time.time()) // 60 * 60_000


def records(n: int, tag: str) -> list[dict]:
    return [{"key": f"{tag}-k{i}", "value": f"{tag}-value-{i}", "partition": i % 2,
             "headers": {"trace": f"{tag}-t{i}", "origin": "test"}, "timestamp": BASE_MS + i}
            for i in range(n)]


DEV = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())


def dev_for_runtime(flavour: str, version: str) -> dict:
    topo = for_runtime(on_release(DEV, flavour, version))
    flow = topo["flows"][0]
    # Checkpoints and group offsets every few seconds instead of every minute; an offset sync for
    # every record, so that translated offsets are exact (MirrorMaker 2's offset.lag.max).
    flow["syncGroupOffsets"] = {"enabled": True, "intervalSeconds": 5}
    flow["config"]["checkpoint"]["emit.checkpoints.interval.seconds"] = 5
    flow["config"]["source"]["offset.lag.max"] = 0
    return topo


def audit_pod(r: Rehearsal, run_dir: Path) -> tuple[Path, Path, Path]:
    """What the audit's pod holds, under `run_dir`: the rendered audit configuration
    (audit.json), its credential Secrets as files (credentials/<alias>/<key>), and an /etc/hosts
    mapping the topology's host names and each Connect cluster's Service name (its restUrl) to the
    loopback addresses here. Returns (config, credentials, hosts)."""
    import json as _json
    import socket
    from urllib.parse import urlparse
    (configmap,) = [o for o in r.objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "kafka-replication-audit"]
    config = _json.loads(configmap["data"]["audit.json"])
    creds = run_dir / "credentials"
    for obj in r.objects:
        if obj["kind"] == "Secret" and obj["metadata"]["name"].startswith("kafka-replication-audit-"):
            alias = obj["metadata"]["name"].removeprefix("kafka-replication-audit-")
            (creds / alias).mkdir(parents=True, exist_ok=True)
            for key, value in {**{k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()},
                               **{k: v.encode() for k, v in (obj.get("stringData") or {}).items()}}.items():
                (creds / alias / key).write_bytes(value)
    hosts = dict(r.network.names)
    for flow in config["flows"]:
        for connector in flow["connectors"]:
            namespace = flow["name"]
            hosts[urlparse(connector["restUrl"]).hostname] = r.workers[(namespace, namespace)].host
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "audit.json").write_text(_json.dumps(config))
    (run_dir / "hosts").write_text(f"127.0.0.1 localhost {socket.gethostname()}\n"
                                   + "".join(f"{ip} {h}\n" for h, ip in sorted(hosts.items())))
    return run_dir / "audit.json", creds, run_dir / "hosts"


def arrived(r: Rehearsal, alias: str, topic: str, n: int) -> list[dict]:
    got = r.clients.consume(r.client(alias), [topic], n, 90_000)
    return sorted(got, key=lambda rec: (rec["partition"], rec["offset"]))


def expected(sent: list[dict], topic: str) -> list[dict]:
    """What must arrive: the same partition and offset (a new topic, replicated from the start),
    key, value, headers and timestamp."""
    out = []
    for partition in (0, 1):
        mine = [s for s in sent if s["partition"] == partition]
        out += [{"topic": topic, "partition": partition, "offset": i, "timestamp": s["timestamp"], "key": s["key"],
                 "value": s["value"], "headers": s["headers"]} for i, s in enumerate(mine)]
    return out


def user_topics(r: Rehearsal, alias: str) -> list[str]:
    return [t for t in r.clients.topics(r.client(alias)) if not t.startswith("__")]


class Ledger:
    """What a test sent to one source topic, and the check that the target holds it exactly: every
    record in its partition and offset (the remote topic replicated from its start), nothing twice."""

    def __init__(self, r: Rehearsal, topic: str, remote: str, source: str = "us-west", target: str = "us-east"):
        self.r, self.topic, self.remote, self.source, self.target = r, topic, remote, source, target
        self.sent: list[dict] = []

    def produce(self, tag: str, n: int = 4) -> None:
        batch = records(n, tag)
        self.r.clients.produce(self.r.client(self.source), self.topic, batch)
        self.sent.extend(batch)

    def holds_exactly(self) -> None:
        assert arrived(self.r, self.target, self.remote, len(self.sent)) == expected(self.sent, self.remote)
        assert self.r.clients.end_offsets(self.r.client(self.target), [self.remote]) == {
            f"{self.remote}:{p}": sum(1 for s in self.sent if s["partition"] == p) for p in (0, 1)}
