"""`python -m infra rehearse <topology>`: the topology replicating on this machine before it is
deployed anywhere (docs/rehearsal.md).

Starts what it needs (a Kafka cluster per alias with its security, a kube-apiserver, a Connect
worker per KafkaConnect), applies what the program renders, produces sample records into a topic
each source connector's filter selects, and prints, per flow, what arrived where and how fast.
Exit 0 when every sample arrived, 1 when one did not (or a connector did not run), 2 for input
the program refuses.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from infra.checks import validation
from infra.core import names, reading
from infra.core.errors import Problem, TopologyError
from infra.core.releases import Release
from infra.deploy import deployment
from infra.filters import jregex, topics
from infra.tools import folders, render
from infra.tools.rehearsal import apiserver, distance, jars, operator, plugins
from infra.tools.rehearsal.distance import Distance
from infra.tools.rehearsal.kube import ApiServerKube
from infra.tools.rehearsal.kubeapi import Client
from infra.tools.rehearsal.process import RuntimeStartError
from infra.tools.rehearsal.local import LOCAL_CHANGES, local_topology, unhonoured
from infra.tools.rehearsal.run import Rehearsal
from infra.topology.resolution import Model
from infra.topology.schema import Policy

TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@dataclass(frozen=True)
class Sample:
    flow: str
    namespace: str
    connector: str
    source: str         # alias
    topic: str
    target: str         # alias
    target_topic: str


def sample_topic(include: tuple[str, ...], exclude: tuple[str, ...]) -> str | None:
    """A topic the filter selects: a readable one where the filter allows it, else the shortest
    one Kafka's regexes accept (infra/filters/topics.py); None when it selects none Kafka could create."""
    selected = topics.Filter(include, exclude)
    for pattern in include:
        prefix = jregex.literal_prefix(jregex.parse(pattern))
        readable = [prefix + "rehearsal"] if prefix.endswith((".", "-", "_")) else [
            f"{prefix}.rehearsal", f"{prefix}-rehearsal", f"{prefix}rehearsal", prefix]
        for name in readable:
            if name and set(name) <= TOPIC_CHARS and not name.endswith("heartbeats") and selected.matches(name):
                return name
    try:
        found = topics.common_topic(selected)
    except topics.Undecided:
        return None
    return found if found and set(found) <= TOPIC_CHARS and len(found) <= 249 else None


def samples(model: Model) -> tuple[list[Sample], list[str]]:
    out, skipped = [], []
    for d in model.flows:
        for part in d.parts:
            for spec in part.sources:
                name = d.names(part).source_connector(spec.name)
                topic = sample_topic(spec.topics, spec.topics_exclude)
                if topic is None:
                    skipped.append(f"{name}: its filter selects no topic name Kafka accepts")
                    continue
                prefix = f"{d.flow.source}." if d.flow.policy is Policy.default else ""
                out.append(Sample(d.name, d.names(part).namespace, name, d.flow.source, topic, d.flow.target,
                                  prefix + topic))
    return out, skipped


def rehearse(path: Path, records: int = 10, keep: Path | None = None, plugin_paths: tuple[Path, ...] = (),
             allow_missing: bool = False, distances: tuple[str, ...] = ()) -> int:
    check_keep(keep)
    check_plugin_paths(plugin_paths)
    # Everything `validate` (and so `render` and `pulumi preview`) refuses on the topology itself
    # exits 2 before anything starts.
    deployment.validate_file(path)
    topology: dict[str, Any] = reading.load_yaml_file(path, "topology file")
    local = local_topology(topology)
    links = check_distances(distances, sorted(validation.parse(local).clusters))
    release = validation.parse(local).operator.release
    # So do the classes no jar here provides, unless the user asks for the connectors that can run.
    cannot_run = unloadable(local, release, plugin_paths, allow_missing)
    # A kept folder is replaced whole at each run, and only when it is ours (infra/tools/folders.py).
    work = folders.REHEARSAL.replace(keep) if keep else Path(tempfile.mkdtemp(prefix="kafka-replication-rehearsal-"))
    print(f"rehearsing {path} in {work}; changed for this machine: " + "; ".join(LOCAL_CHANGES), flush=True)
    for line in unhonoured(topology, release):
        print(f"not honoured here: {line}", flush=True)
    for (_, connector), why in sorted(cannot_run.items()):
        print(f"not run here: {connector}: {_why(why)}", flush=True)
    for alias, link in sorted(links.items()):
        print(f"at a distance: {alias}, {link.rtt_ms:g} ms round trip" + (f", {link.mbit:g} Mbit/s each way" if link.mbit
              else "") + ", from everything else (the kernel's TCP through a delaying relay)", flush=True)
    if apiserver.apiserver_binary() is None:
        print("building the kube-apiserver once (Go, tools/engine/build.sh, several minutes)...", flush=True)
        apiserver.build()
    try:
        state = apiserver.start(work / "apiserver")
        r = Rehearsal(local, work / "rehearsal", ApiServerKube(Client(state)), plugin_paths=plugin_paths,
                      not_sent=frozenset(cannot_run), keep_going=True, distances=links)
    except BaseException:
        if keep is None:  # nothing of the run to keep: the folder goes too
            shutil.rmtree(work, ignore_errors=True)
        raise
    failed: list[str] = []
    try:
        started = time.monotonic()
        r.start_clusters()
        print(f"{len(r.clusters)} Kafka cluster(s) up in {time.monotonic() - started:.0f} s", flush=True)
        planned, skipped = samples(r.model)
        failed += skipped
        not_run = [s for s in planned if (s.namespace, s.connector) in cannot_run]
        planned = [s for s in planned if s not in not_run]
        by_source: dict[str, set[str]] = {}
        for s in planned:
            by_source.setdefault(s.source, set()).add(s.topic)
        for alias, wanted in sorted(by_source.items()):
            existing = set(r.clients.topics(r.client(alias)))
            r.clients.create_topics(r.client(alias), {t: 1 for t in sorted(wanted - existing)})
            for t in sorted(wanted):
                r.clients.produce(r.client(alias), t, [{"key": f"{alias}-rehearsal-{i}", "value": f"sample {i} of {t}",
                                                         "headers": {"rehearsal": str(i)}} for i in range(records)])
        try:
            r.deploy()
            ready = time.monotonic()
            running = r.wait_running()
            print(f"{len(r.workers)} Connect worker(s), {len(running)} connector(s) running "
                  f"{ready - started:.0f} s after the start", flush=True)
        except RuntimeStartError as exc:
            failed.append(str(exc).splitlines()[0])
            return _report(planned, {}, failed, records, not_run, cannot_run)
        failed += [reason for _, reason in sorted(r.refused.items())]
        arrived: dict[Sample, tuple[int, float]] = {}
        for s in planned:
            if (s.namespace, s.connector) in r.refused:
                continue  # the worker refused or failed it: nothing to wait for
            t0 = time.monotonic()
            got = r.clients.consume(r.client(s.target), [s.target_topic], records, 60_000)
            mine = [g for g in got if g["key"] and g["key"].startswith(f"{s.source}-rehearsal-")]
            if len(mine) < records:  # the target's own samples came first (a bidirectional pair)
                got = r.clients.consume(r.client(s.target), [s.target_topic], 2 * records, 20_000)
                mine = [g for g in got if g["key"] and g["key"].startswith(f"{s.source}-rehearsal-")]
            arrived[s] = (len(mine), time.monotonic() - ready if mine else time.monotonic() - t0)
        return _report(planned, arrived, failed, records, not_run, cannot_run)
    finally:
        r.stop()
        apiserver.stop(work / "apiserver")
        if keep is None:  # brokers' logs and stores, some tens of MB a run: kept only when asked
            shutil.rmtree(work, ignore_errors=True)


def _why(needs: list[plugins.Need]) -> str:
    """Why a connector cannot run here: the classes it, or its whole Connect cluster, loads."""
    parts = [f"{who} loads " + ", ".join(f"{n.name} ({n.key})" for n in these)
             for who, these in (("its Connect cluster", [n for n in needs if n.connector is None]),
                                ("it", [n for n in needs if n.connector is not None])) if these]
    return "; ".join(parts) + ", which no jar here provides (--plugin-path adds a folder of plugins)"


def _report(planned: list[Sample], arrived: dict[Sample, tuple[int, float]], failed: list[str],
            records: int = 0, not_run: list[Sample] | None = None,
            cannot_run: dict[tuple[str, str], list[plugins.Need]] | None = None) -> int:
    """One line per sample: ok, MISSING, or NOT RUN (its connector needs a class no jar here
    provides, with --allow-missing: said, and not a failure of the rehearsal)."""
    for s in not_run or []:
        print(f"NOT RUN  {s.flow}: {s.source}/{s.topic} -> {s.target}/{s.target_topic}: "
              f"{s.connector} not run here: {_why((cannot_run or {})[(s.namespace, s.connector)])}")
    for s in planned:
        count, seconds = arrived.get(s, (0, 0.0))
        verdict = "ok" if count >= records and records else "MISSING"
        print(f"{verdict:>7}  {s.flow}: {s.source}/{s.topic} -> {s.target}/{s.target_topic}: "
              f"{count}/{records} records" + (f", all within {seconds:.1f} s of the connectors running" if count else ""))
        if verdict != "ok":
            failed.append(f"{s.connector}: {count} of {records} sample records arrived in {s.target}/{s.target_topic}")
    for reason in failed:
        print(f"  error: {reason}")
    return 1 if failed else 0


def check_path(path: Path) -> None:
    if not path.is_file():
        raise TopologyError([Problem(str(path), "(file)", str(path), "a readable topology file")], "the command line")


def check_plugin_paths(folders: tuple[Path, ...]) -> None:
    """Each `--plugin-path` a folder that can be read, before anything starts."""
    problems = [Problem("--plugin-path", "(argument)", str(f), "a readable folder of plugins, as Connect's "
                        "plugin.path holds them: a jar, or a folder of jars, per plugin")
                for f in folders if not f.is_dir() or not os.access(f, os.R_OK | os.X_OK)]
    if problems:
        raise TopologyError(problems, "the command line")


def unloadable(topology: dict[str, Any], release: Release, plugin_paths: tuple[Path, ...],
               allow_missing: bool) -> dict[tuple[str, str], list[plugins.Need]]:
    """The connectors ((namespace, name)) that need a class no jar here provides: the Connect
    image's (the release's jars for the worker's Kafka version) or the --plugin-path folders'.
    Without `allow_missing`, each such class is a problem (exit 2), with its flow and connector."""
    with tempfile.TemporaryDirectory(prefix="kafka-replication-classes-") as scratch:
        file = Path(scratch) / "rehearsal.yaml"
        file.write_text(yaml.safe_dump(topology, sort_keys=False))
        try:
            objects = render.run("rehearsal", {"topology": str(file)}, {}, placeholder_secrets=True).objects()
        finally:
            render.close_event_loop()
    extra = [e for folder in plugin_paths for e in plugins.plugin_entries(folder)]
    found = {}
    for connect in (o for o in objects if o["kind"] == "KafkaConnect"):
        kafka = Release.apache_kafka(operator.connect_version(release, connect))
        meta = connect["metadata"]
        found[(meta["namespace"], meta["name"])] = plugins.index(
            [*plugins.classpath_entries(jars.classpath(release, kafka)), *extra])
    gaps = plugins.missing(plugins.needs(objects), found)
    if gaps and not allow_missing:
        raise TopologyError([Problem(g.where(), g.key, g.name, f"a class of the jars the workers run here for "
                                     f"{release.name} (Apache Kafka's Connect and MirrorMaker 2, Strimzi's config "
                                     "providers) or of a --plugin-path folder (a jar, or a folder of jars, per "
                                     "plugin); or --allow-missing to rehearse the connectors that can run")
                             for g in gaps], "the rehearsal")
    connectors = [(o["metadata"]["namespace"], o["metadata"]["labels"][names.CLUSTER_LABEL], o["metadata"]["name"])
                  for o in objects if o["kind"] == "KafkaConnector"]
    return plugins.not_runnable(gaps, connectors)


DISTANCE = re.compile(r"([a-z0-9-]+)=([0-9]+(?:\.[0-9]+)?)(?:@([0-9]+(?:\.[0-9]+)?))?")


def check_distances(values: tuple[str, ...], aliases: list[str]) -> dict[str, Distance]:
    """Each `--distance ALIAS=MS[@MBIT]`: a cluster of the topology, once, a round trip and rate
    in bounds, and a machine that can make the link (root, /dev/net/tun), before anything starts."""
    expected = (f"ALIAS=MS or ALIAS=MS@MBIT: a cluster of the topology ({', '.join(aliases)}) once, a round trip "
                "of 0 to 10000 ms, a rate of 0 to 100000 Mbit/s (0: none)")
    problems, links = [], {}
    for value in values:
        m = DISTANCE.fullmatch(value)
        if m is None or m[1] not in aliases or m[1] in links:
            problems.append(Problem("--distance", "(argument)", value, expected))
            continue
        try:
            links[m[1]] = Distance(float(m[2]), float(m[3] or 0))
        except ValueError:
            problems.append(Problem("--distance", "(argument)", value, expected))
    why = distance.available() if links else None
    if why:
        problems.append(Problem("--distance", "(argument)", " ".join(values), f"a machine that can make it: {why}"))
    if problems:
        raise TopologyError(problems, "the command line")
    return links


def check_keep(keep: Path | None) -> None:
    """`--keep DIR` before anything starts: a folder that is there and writable, or one that can be
    made in a folder that is."""
    if keep is None:
        return
    existing = keep if keep.exists() else keep.parent if keep.parent.exists() else None
    if existing is None or not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise TopologyError([Problem("--keep", "(argument)", str(keep),
                                     "a writable folder, or a new one in a writable folder")], "the command line")
    folders.REHEARSAL.check(keep)  # not a folder of the user's own files: it is replaced at each run
