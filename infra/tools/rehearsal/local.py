"""The topology as a rehearsal runs it on this machine: what it changes to run here
(LOCAL_CHANGES), an operator release put in (as an upgrade's rehearsal runs it), and what it
cannot honour, said before anything starts. Pure: no process is started here."""

from __future__ import annotations

import copy
from typing import Any

from infra.checks import validation
from infra.core.releases import Flavour, Release, find

# Single-broker clusters cannot hold MirrorMaker 2's own topics at its default replication
# factor (3): a rehearsal sets these to 1 through the flows' `config`, as a user of such a cluster
# would (none for offset syncs where a bidirectional pair emits none: Kafka 3.9+ refuses them).
SINGLE_BROKER = {"source": {"offset-syncs.topic.replication.factor": 1},
                 "checkpoint": {"checkpoints.topic.replication.factor": 1},
                 "heartbeat": {"heartbeats.topic.replication.factor": 1}}
LOCAL_CHANGES = ("one Connect replica per Connect cluster (a worker each here)",
                 "no audit CronJob (the audit runs on its own: docs/audit.md)",
                 "MirrorMaker 2's own topics at replication factor 1 (single-broker clusters)")


def on_release(topology: dict[str, Any], flavour: str, version: str | None = None) -> dict[str, Any]:
    """`topology` on an operator release (default: the flavour's default release), as a rehearsal
    of an upgrade runs it: Connect versions that release would refuse are dropped, so its
    default applies."""
    topo = copy.deepcopy(topology)
    release = find(Flavour(flavour), version)
    if release is None:
        raise ValueError(f"no supported release {flavour} {version}")
    topo["operator"] = {**topo.get("operator", {}), "flavour": flavour}
    if version:
        topo["operator"]["version"] = version
    for settings in [topo["operator"], *topo["flows"],
                     *(p for f in topo["flows"] for p in f.get("connectClusters", []))]:
        if settings.get("connect", {}).get("version") not in (None, *release.connect_versions):
            settings["connect"] = {k: v for k, v in settings["connect"].items() if k != "version"}
    return topo


def local_topology(topology: dict[str, Any]) -> dict[str, Any]:
    """The topology as a rehearsal runs it on this machine (LOCAL_CHANGES, nothing else)."""
    topo = copy.deepcopy(topology)
    topo.pop("audit", None)
    operator = topo.setdefault("operator", {})
    operator.setdefault("connect", {})["replicas"] = 1
    release = validation.parse(topo).operator.release
    for flow in topo.get("flows", []):
        flow.get("connect", {}).pop("replicas", None)
        for part in flow.get("connectClusters", []):
            part.get("connect", {}).pop("replicas", None)
        config = flow.setdefault("config", {})
        for kind, settings in SINGLE_BROKER.items():
            if not (kind == "source" and flow.get("bidirectional") and release.emit_offset_syncs_key):
                config[kind] = {**settings, **config.get(kind, {})}
    return topo


def unhonoured(topology: dict[str, Any], release: Release) -> list[str]:
    """What a topology asks of its Connect clusters that the rehearsal cannot honour, said before
    it starts: every worker runs Apache Kafka jars (pom.xml: the Connect version's, a CSM build's
    Apache release) in a JVM of this machine's defaults, whatever image or resources the topology
    names."""
    settings = [("operator.connect", (topology.get("operator") or {}).get("connect") or {})]
    for i, flow in enumerate(topology.get("flows") or []):
        settings.append((f"flows[{i}].connect", flow.get("connect") or {}))
        for j, part in enumerate(flow.get("connectClusters") or []):
            settings.append((f"flows[{i}].connectClusters[{j}].connect", part.get("connect") or {}))
    out = []
    for where, connect in settings:
        if connect.get("image"):
            out.append(f"{where}.image {connect['image']}: not run here; the workers run {release.name}'s jars "
                       f"(Apache Kafka {release.kafka})")
        version = str(connect.get("version") or "")
        if version and Release.apache_kafka(version) != version:
            out.append(f"{where}.version {version}: the workers run Apache Kafka {Release.apache_kafka(version)} "
                       "here (the release of its line)")
        if connect.get("resources"):
            out.append(f"{where}.resources: not enforced here (each worker is one JVM with this machine's defaults)")
    return out
