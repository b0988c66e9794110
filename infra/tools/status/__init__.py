"""`kafka-replication status`: one screen per stack on what its flows are doing, from what a user
with the stack's kubeconfig can read (docs/status.md).

The stack outputs (`pulumi stack output --json`) say which objects are the stack's; the API
server of each Kubernetes cluster gives each one with the status the operator wrote
(kube.py); assess.py concludes, show.py prints. Exit codes: show.EXIT."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from contract import outputs as contract
from infra.core import reading
from infra.core.errors import Problem, TopologyError
from infra.core.releases import Flavour, find
from infra.tools.status import assess, show
from infra.tools.status.kube import Deadline, KubeconfigError, Reader
from infra.tools.watching import repeat

MAX_STDIN_BYTES = 64 * 1024 * 1024  # a stack's outputs are kilobytes; anything near this is not them


def load_outputs(path: str) -> contract.StackOutputs:
    """The outputs file (`-`: standard input), checked against the contract."""
    if path == "-":
        return _read_outputs(sys.stdin.buffer.read(MAX_STDIN_BYTES + 1), "standard input")
    return _checked(reading.load_json_file(path, "stack outputs file"), path)


# `--stack`: the outputs as `pulumi stack output --json --stack NAME` prints them, in the project's
# folder; a backend that does not answer is the CLI's to report, within this.
STACK_OUTPUT_SECONDS = 120


def stack_outputs(name: str) -> contract.StackOutputs:
    """The outputs of the stack `name` of the project in the current folder, read by the Pulumi CLI."""
    def refused(why: str) -> TopologyError:
        return TopologyError([Problem("--stack", "(argument)", name, f"a stack `pulumi stack output` reads: {why}; "
                                      "or give its outputs with --outputs FILE")], "the command line")
    try:
        done = subprocess.run(["pulumi", "stack", "output", "--json", "--stack", name, "--non-interactive"],
                              capture_output=True, timeout=STACK_OUTPUT_SECONDS)
    except FileNotFoundError:
        raise refused("the Pulumi CLI is not on the PATH") from None
    except subprocess.TimeoutExpired:
        raise refused(f"it did not answer within {STACK_OUTPUT_SECONDS} s") from None
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.decode(errors="replace").splitlines() if line.strip()]
        raise refused(f"it exited {done.returncode}: {(lines or ['(no message)'])[0][:300]}")
    return _read_outputs(done.stdout, f"--stack {name}")


def _read_outputs(data: bytes, where: str) -> contract.StackOutputs:
    if len(data) > MAX_STDIN_BYTES:
        raise TopologyError([Problem("--outputs", "(argument)", where, "a stack's outputs, at most 64 MiB")],
                            "the command line")
    try:
        values = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise TopologyError([Problem("--outputs", "(argument)", where, "the JSON of `pulumi stack output "
                                     f"--json` ({' '.join(str(exc).split())[:200]})")], "the command line") from None
    return _checked(values, where)


def _checked(values: Any, where: str) -> contract.StackOutputs:
    try:
        return contract.read(values)
    except contract.ContractError as exc:
        raise TopologyError([Problem("--outputs", "(argument)", where,
                                     f"kafka-replication stack outputs (docs/outputs.md): {exc}")],
                            "the command line") from None


def _per_cluster(values: dict[str, str], clusters: set[str | None], stack_clusters: set[str | None], flag: str,
                 problems: list[Problem]) -> dict[str | None, str]:
    """`[CLUSTER=]VALUE` arguments: the unnamed one for every cluster not named. A value named for
    another cluster of the stack is left unused (a team's usual `--context` for every cluster, with
    `--flow` choosing one); a name the stack does not have is refused."""
    named = {k: v for k, v in values.items() if k}
    known = sorted(c for c in stack_clusters if c)
    problems += [Problem(flag, "(argument)", f"{u}={named[u]}", "a Kubernetes cluster of the stack: "
                         + (", ".join(known) or "none (the stack has no `kubernetes` section: give the value alone)"))
                 for u in sorted(set(named) - set(known))]
    return {c: named.get(c or "", values.get("", "")) for c in clusters}


CLUSTER_KEY = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # a `kubernetes` cluster's name (a DNS label)


def split_pairs(items: list[str]) -> dict[str, str]:
    """`CLUSTER=VALUE` or `VALUE` (key ""): a value whose text before `=` is no cluster name (a
    path with `=` in it) is a value."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        named = bool(sep) and CLUSTER_KEY.fullmatch(key) is not None
        pairs[key if named else ""] = value if named else item
    return pairs


def collect(stack: contract.StackOutputs, flows: list[str], readers: dict[str | None, Any],
            now: datetime | None = None) -> assess.Report:
    """Every object of the chosen flows and their clusters' audits, read with `readers` by
    Kubernetes cluster (kube.Reader, or a stand-in with the same methods)."""
    objects: dict[tuple[str, str, str], assess.Read] = {}
    clusters: set[str | None] = set()
    for name in flows:
        flow = stack.flows[name]
        reader = readers[flow.kubernetes_cluster]
        clusters.add(flow.kubernetes_cluster)
        for cluster in flow.connect_clusters:
            objects[("KafkaConnect", cluster.namespace, cluster.name)] = reader.strimzi(
                "KafkaConnect", cluster.namespace, cluster.name)
            for connector in (*cluster.source_connectors, *cluster.checkpoint_connectors,
                              *cluster.heartbeat_connectors):
                objects[("KafkaConnector", cluster.namespace, connector)] = reader.strimzi(
                    "KafkaConnector", cluster.namespace, connector)
    audits = {c: (readers[c].cron_job(ns, job), readers[c].jobs_of(ns, job), readers[c].pods_of(ns))
              for c, (ns, job) in (stack.audit_cron_jobs or {}).items() if c in clusters}
    return assess.assess(stack, flows, objects, audits, now)


@dataclass(frozen=True)
class Reach:
    """`--live`'s flags, `kafka-replication lag`'s: how the lag reader reaches the stack's Kafka
    clusters and Connect REST APIs from this machine."""
    credentials: Path | None = None
    bootstrap: list[str] = field(default_factory=list)
    connect: list[str] = field(default_factory=list)

    def given(self) -> list[tuple[str, str]]:
        """(flag, value) of each one given."""
        return ([("--credentials", str(self.credentials))] if self.credentials else []) + [
            ("--bootstrap", b) for b in self.bootstrap] + [("--connect", c) for c in self.connect]


@dataclass(frozen=True)
class LiveRead:
    """What --live reads each round: the lag reader's configuration for the chosen flows."""
    config: dict[str, Any]
    credentials: Path | None
    flows: list[str]

    def read(self) -> show.Live:
        from infra.tools import lag
        return show.Live(*lag.read(self.config, self.credentials, self.flows))


def _live(stack_name: str | None, outputs: str | None, flows: list[str], reach: Reach,
          problems: list[Problem]) -> LiveRead | None:
    """--live's reader prepared as `kafka-replication lag` prepares it (the stack's topology file,
    the addresses and credentials given), its problems added to the command line's."""
    if stack_name is None:
        problems.append(Problem("--live", "(argument)", f"--outputs {outputs or '-'}",
                                "--stack NAME: the live lag is read from the clusters of the stack's topology file "
                                "(stacks/NAME.yaml); or run kafka-replication lag --stack NAME"))
        return None
    from infra.tools import lag
    try:
        config, chosen = lag.prepare(stack_name, flows, reach.credentials, reach.bootstrap, reach.connect)
    except TopologyError as exc:
        problems += exc.problems
        return None
    return LiveRead(config, reach.credentials, chosen)


def run(outputs: str | None, flows: list[str], kubeconfigs: list[str], contexts: list[str], output: str,
        stack_name: str | None = None, watch: int | None = None, live: bool = False, reach: Reach = Reach()) -> int:
    """One screen, or with `watch` a screen every `watch` seconds until interrupted (each round
    reads everything again, within a deadline of its own). With `live`, each round also reads the
    flows' lag now (`kafka-replication lag`'s reader), which decides the health with the objects."""
    stack = stack_outputs(stack_name) if stack_name is not None else load_outputs(outputs or "-")
    problems = [Problem("--flow", "(argument)", f, "a flow of the stack's outputs: "
                        + (", ".join(stack.flows) or "(the outputs have none)")) for f in flows if f not in stack.flows]
    chosen = [f for f in flows if f in stack.flows] or list(stack.flows)
    flavours = {f.value: f for f in Flavour}
    release = find(flavours[stack.operator_flavour], stack.operator_version) \
        if stack.operator_flavour in flavours else None
    if release is None:
        problems.append(Problem("--outputs", "operator", f"{stack.operator_flavour} {stack.operator_version}",
                                "a release this version of kafka-replication supports"))
    clusters = {stack.flows[f].kubernetes_cluster for f in chosen}
    everywhere = {f.kubernetes_cluster for f in stack.flows.values()}
    configs = _per_cluster(split_pairs(kubeconfigs), clusters, everywhere, "--kubeconfig", problems)
    names = _per_cluster(split_pairs(contexts), clusters, everywhere, "--context", problems)
    reader = None
    if live:
        reader = _live(stack_name, outputs, [f for f in flows if f in stack.flows], reach, problems)
    elif reach.given():
        problems += [Problem(flag, "(argument)", value, "given with --live only (how the live lag reaches the "
                             "clusters)") for flag, value in reach.given()]
    if problems or release is None:
        raise TopologyError(problems, "the command line")
    if watch is None:
        return show.EXIT[_once(stack, chosen, clusters, configs, names, release.api_version, output, watch, reader)]
    repeat(watch, lambda: _once(stack, chosen, clusters, configs, names, release.api_version, output, watch, reader))


def _once(stack: contract.StackOutputs, chosen: list[str], clusters: set[str | None], configs: dict[str | None, str],
          names: dict[str | None, str], api_version: str, output: str, watch: int | None,
          live: LiveRead | None = None) -> assess.Health:
    problems = []
    readers = {}
    deadline = Deadline()  # one for the round: every request of every cluster within it
    for cluster in sorted(clusters, key=lambda c: c or ""):
        path = Path(configs[cluster]).expanduser() if configs[cluster] else None
        try:
            readers[cluster] = Reader(path, names[cluster] or None, api_version, deadline)
        except KubeconfigError as exc:
            about_context = bool(names[cluster]) and names[cluster] in str(exc).split(": ", 2)[-1]
            problems.append(Problem("--context" if about_context else "--kubeconfig", "(argument)",
                                    names[cluster] if about_context else str(path or "(default)"),
                                    ("a context of the kubeconfig" if about_context else
                                     "a kubeconfig the client can use")
                                    + (f" for Kubernetes cluster {cluster}" if cluster else "") + f": {exc}"))
    if problems:
        raise TopologyError(problems, "the command line")
    now = datetime.now(timezone.utc)
    report = collect(stack, chosen, readers, now)
    lagged = live.read() if live is not None else None
    if output == "json":  # watched: one document a line, for a pipe
        print(json.dumps(show.as_json(report, lagged), indent=None if watch else 2))
    else:
        if watch is not None:  # a terminal's screen cleared; a pipe's rounds told apart by their heading
            sys.stdout.write("\x1b[H\x1b[2J" if sys.stdout.isatty() else "")
            sys.stdout.write(f"every {watch} s, {now.strftime('%Y-%m-%d %H:%M:%S')} UTC (Ctrl-C stops)\n")
        sys.stdout.write(show.text(report, lagged))
    sys.stdout.flush()
    return show.health(report, lagged)
