"""The runtime tier's helpers: a rehearsal on real Kafka and Connect, records sent and read back,
polling with a deadline, the stacks as the runtime runs them, and the audit's pod run for real."""

from __future__ import annotations

import base64
import os
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from infra.core import names
from infra.tools.rehearsal import jars, process
from infra.tools.rehearsal.kube import ApiServerKube
from benchmarks.common import DEV, dev_for_runtime  # noqa: F401 - one home, shared with the benchmarks
from infra.tools.rehearsal.local import local_topology
from infra.tools.rehearsal.run import Rehearsal
from tests.support.schemas import release_of, strimzi_crds
from tests.support.stacks import RELEASES, ROOT, RUNTIME_COUNTS, RUNTIME_RELEASES, on_release, unavailable

RELEASE_IDS = [f"{f}-{v}" for f, v in RELEASES]
RUNTIME_IDS = [f"{f}-{v}" for f, v in RUNTIME_RELEASES]


# For a test that sets connector states on the worker by hand to arrange what it proves (a
# connector stopped under the audit, a failed link stood for by a paused connector): the
# operator's periodic reconciliation, which puts every connector back to its KafkaConnector's state
# (Rehearsal.periodic_reconciliation), held off for the test, as STRIMZI_FULL_RECONCILIATION_INTERVAL_MS
# set past its end would hold it. What an apply reconciles is unchanged.
HAND_MADE_STATES: dict = {"reconcile_every": None}


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


def on_brokers(topo: dict, alias: str, brokers: int) -> None:
    """Cluster `alias` of `topo` on `brokers` brokers (a rehearsal's `brokers={alias: n}`): its
    bootstrap lists each broker's own address, on the port it had."""
    port = topo["clusters"][alias]["bootstrapServers"].rsplit(":", 1)[1]
    topo["clusters"][alias]["bootstrapServers"] = ",".join(
        f"{alias}-kafka-{n}.kafka-{alias}:{port}" for n in range(brokers))


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


def halted(worker, connector: str, state: str, timeout: float = 60) -> None:
    """Until `connector` and its tasks are `state` (PAUSED or STOPPED) on the worker. The connector's
    status changes first: its tasks pause or stop after it (a paused connector's tasks report
    PAUSED each; a stopped one has no task left), and a record written between the two may still
    be copied. A test that writes after halting a connector waits for both."""
    def done() -> bool:
        status = worker.status(connector)
        tasks = [t["state"] for t in status.get("tasks", [])]
        return status["connector"]["state"] == state and (
            tasks == [] if state == "STOPPED" else bool(tasks) and all(t == state for t in tasks))
    eventually(f"{connector} and its tasks {state}", done, timeout, 1)


def for_runtime(topology: dict) -> dict:
    """The topology as a rehearsal runs it (infra/tools/rehearsal/local.py local_topology)."""
    return local_topology(topology)


# Record timestamps: recent, or the brokers' time retention (7 days) deletes them as they arrive.
BASE_MS = int(time.time()) // 60 * 60_000


def records(n: int, tag: str, size: int = 0) -> list[dict]:
    """`n` records over two partitions; each value padded to `size` characters when it is shorter."""
    return [{"key": f"{tag}-k{i}", "value": f"{tag}-value-{i}".ljust(size, "."), "partition": i % 2,
             "headers": {"trace": f"{tag}-t{i}", "origin": "test"}, "timestamp": BASE_MS + i}
            for i in range(n)]




def audit_pod(r: Rehearsal, run_dir: Path, objects: list[dict] | None = None) -> tuple[Path, Path, Path]:
    """What the audit's pod holds, under `run_dir`: the rendered audit configuration
    (audit.json), its credential Secrets as files (credentials/<alias>/<key>), and an /etc/hosts
    mapping the topology's host names and each Connect cluster's Service name (its restUrl) to the
    loopback addresses here. Returns (config, credentials, hosts)."""
    import json as _json
    import socket
    from urllib.parse import urlparse
    objects = r.objects if objects is None else objects
    (configmap,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "kafka-replication-audit"]
    config = _json.loads(configmap["data"]["audit.json"])
    creds = run_dir / "credentials"
    for obj in objects:
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


def audit_run(r: Rehearsal, directory: Path, start_ms: int, name: str,
              objects: list[dict] | None = None) -> tuple[int, dict, str]:
    """The audit job (spark/audit.py) as its CronJob runs it: the rendered audit configuration and
    credential files, Spark's own Kafka source (the jars of spark/pom.xml, given as local jars),
    librdkafka for metadata, the Connect REST API for offsets. It runs in a mount namespace whose
    /etc/hosts maps the topology's host names and each Connect cluster's Service name (its
    restUrl) to the loopback addresses here. `objects`: the audit's ConfigMap and Secrets where
    they are not the rehearsal's (read from an API server). Returns the exit code, the report and
    the run's summary as the kubelet would keep it (its termination log, contract/lastrun.py)."""
    import json as _json
    import sys
    run_dir = directory / name
    config, creds, hosts = audit_pod(r, run_dir, objects)
    termination = run_dir / "termination-log"
    termination.write_text("")  # the kubelet creates it; the job writes its summary only into one that exists
    now = int(time.time() * 1000)
    argv = [sys.executable, "-m", "spark.audit", "--config", str(config), "--credentials", str(creds),
            "--out", str(run_dir / "out"), "--from-ms", str(start_ms), "--until-ms", str(now), "--now-ms", str(now),
            "--master", "local[2]", "--termination-log", str(termination)]
    quoted = " ".join(f"'{a}'" for a in argv)
    submit, archive = spark_submit_args()
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(ROOT), "PYSPARK_SUBMIT_ARGS": submit}
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           f"mount --bind '{hosts}' /etc/hosts && exec {quoted}"],
                          capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    if archive is not None:
        # The run's output closed once every process holding it ended, the driver's JVM too, which
        # wrote its dump as it exited; the job's own ends (0, 1: findings) leave a whole one.
        archive.settle(0 if done.returncode in (0, 1) else done.returncode)
    report_path = run_dir / "out" / "report.json"
    assert report_path.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return done.returncode, _json.loads(report_path.read_text()), termination.read_text()


# The audit's Spark driver runs here with the JVM profile of the rehearsal's brokers and workers
# (process.QUICK_JIT_AND_GC: the JIT's first tier, the serial collector; the heap left to Spark)
# and a class-data archive of its own (process.archive_for), as its CronJob's image does not: the
# job's work and results are the same, and each of the tier's audit runs starts a driver, whose start was most of its CPU
# (docs/performance.md, the ledger's tests/runtime/test_replication.py::test_audit_on_real_kafka).
# KAFKA_REPLICATION_CDS=0 leaves the archive out, as for every other JVM of the tier.
SPARK_QUICK = process.QUICK_JIT_AND_GC


def spark_submit_args() -> tuple[str, process.ClassArchive | None]:
    """PYSPARK_SUBMIT_ARGS for the audit's driver: the Kafka source's jars, the quick profile and
    the archive's options; and the archive to settle once the driver ended (None: none)."""
    import shlex
    import pyspark
    audit_jars = [str(j) for j in jars.audit_jars()]
    options, archive = list(SPARK_QUICK), None
    if os.environ.get("KAFKA_REPLICATION_CDS") != "0":
        spark_jars = f"{Path(pyspark.__file__).parent / 'jars'}/*"
        archive = process.archive_for("spark-driver", Path(process.java()), [spark_jars, *audit_jars],
                                      ["org.apache.spark.deploy.SparkSubmit", *SPARK_QUICK])
        options += archive.options()
    return f"--driver-java-options {shlex.quote(' '.join(options))} --jars {','.join(audit_jars)} pyspark-shell", archive


# Where the audit's pod mounts its configuration and credentials (the CronJob's volumes).
POD_CONFIG, POD_CREDENTIALS = names.AUDIT_CONFIG_DIR, names.AUDIT_CREDENTIALS_DIR


def in_audit_pod(r: Rehearsal, run_dir: Path, line: str, cwd: str = "/") -> subprocess.CompletedProcess[str]:
    """A runbook line typed in the audit's pod, as written: in a mount namespace of its own, /etc
    overlaid with what the pod mounts (audit_pod's files at the CronJob's paths, its /etc/hosts),
    `python3` the suite's interpreter (as in the image, whose `python3` has the job's libraries),
    run by bash from `cwd`. Nothing outside the namespace changes; it needs root (util-linux
    `unshare`, an overlay mount), as the runtime tier does."""
    import shutil
    import sys
    config, creds, hosts = audit_pod(r, run_dir)
    upper, work, image_bin = run_dir / "etc", run_dir / "etc-work", run_dir / "image-bin"
    for d in (upper, work, image_bin):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    (upper / POD_CONFIG.removeprefix("/etc/")).mkdir(parents=True)
    shutil.copy(config, upper / POD_CONFIG.removeprefix("/etc/") / "audit.json")
    shutil.copytree(creds, upper / POD_CREDENTIALS.removeprefix("/etc/"))
    shutil.copy(hosts, upper / "hosts")
    (image_bin / "python3").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (image_bin / "python3").chmod(0o755)
    setup = (f"mount -t overlay overlay -o lowerdir=/etc,upperdir={upper},workdir={work} /etc && cd {cwd} && "
             f'exec bash -c "$RUNBOOK_LINE"')
    return subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c", setup],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "RUNBOOK_LINE": line, "PYTHONPATH": str(ROOT),
                               "PATH": f"{image_bin}{os.pathsep}{os.environ['PATH']}"})


STACK = "drill"


def stack_project(directory: Path, topology: dict) -> Path:
    """A Pulumi project as a team's: Pulumi.yaml, Pulumi.drill.yaml and the drill's topology as
    stacks/drill.yaml, the file `kafka-replication failover` changes."""
    project = directory / "project"
    (project / "stacks").mkdir(parents=True)
    (project / "Pulumi.yaml").write_text("name: kafka-replication\nruntime: python\n")
    (project / f"Pulumi.{STACK}.yaml").write_text("config: {}\n")
    (project / "stacks" / f"{STACK}.yaml").write_text(yaml.safe_dump(topology, sort_keys=False))
    return project


def failover_command(r: Rehearsal, run_dir: Path, project: Path, flow: str, *args: str
                     ) -> subprocess.CompletedProcess[str]:
    """`kafka-replication failover --stack drill --flow FLOW ARGS` (operator_command)."""
    return operator_command(r, run_dir, project, "failover", flow, *args)


def operator_command(r: Rehearsal, run_dir: Path, project: Path, command: str, flow: str, *args: str,
                     stack: str = STACK, objects: list[dict] | None = None, env: dict[str, str] | None = None
                     ) -> subprocess.CompletedProcess[str]:
    """`kafka-replication COMMAND --stack STACK --flow FLOW ARGS` (failover, lag, status --live) as on-call runs it
    from a machine that reaches the clusters: the audit's credential files (audit_pod, from `objects` where they
    are not the rehearsal's), the Connect cluster's REST API through --connect at the worker's own address (a
    port-forward's, as the runbook's PATCH reaches it), the topology's broker names resolved as in the audit's
    pod (a mount namespace's /etc/hosts, without the Services' names: --connect alone leads to the worker);
    `env` added to the environment (a Pulumi backend's)."""
    import sys
    from infra.tools.rehearsal.operator import REST_PORT
    _, creds, hosts = audit_pod(r, run_dir, objects)
    hosts.write_text("".join(line for line in hosts.read_text().splitlines(keepends=True) if ".svc" not in line))
    argv = [sys.executable, "-m", "infra", "-C", str(project), command, "--stack", stack, "--flow", flow,
            "--credentials", str(creds), "--connect", f"{flow}=http://{r.workers[(flow, flow)].host}:{REST_PORT}",
            *args]
    quoted = " ".join(f"'{a}'" for a in argv)
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           f"mount --bind '{hosts}' /etc/hosts && exec {quoted}"],
                          capture_output=True, text=True, env={**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)},
                          timeout=600, cwd=ROOT)


def kubectl_line(client, line: str, directory: Path) -> str:
    """A runbook's kubectl line as written (a pipe of them through bash), with kubectl of the API
    server's release and a kubeconfig of `client`'s server; what it printed."""
    import json as _json

    from infra.tools.rehearsal.apiserver import kubeconfig, kubectl_binary
    binary = kubectl_binary()
    if binary is None:
        unavailable("no kubectl: run `tools/engine/build.sh kubectl` or `make kube-apiserver` (docs/engine.md)")
    config = directory / "runbook.kubeconfig"
    config.write_text(_json.dumps(kubeconfig({"runtime": client.state}, "runtime")))
    # A discovery cache of its own: the tier's server serves another release's CRD versions in
    # each test, where kubectl's cache (keyed by the server's address) would remember the last.
    cache = Path(tempfile.mkdtemp(prefix="kube-cache-", dir=directory))
    done = subprocess.run(["bash", "-o", "pipefail", "-c", line], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "KUBECONFIG": str(config), "KUBECACHEDIR": str(cache),
                               "PATH": f"{binary.parent}{os.pathsep}{os.environ['PATH']}"})
    assert done.returncode == 0, (line, done.stdout, done.stderr)
    return done.stdout


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


def replicating(r, source: str, target: str, topic: str = "rot.orders", remote: str | None = None
                ) -> tuple[Ledger, tuple[str, str]]:
    """The drills' start: `topic` on the source (the rotation drills' `rot.orders`), four records,
    the stack deployed and every record on the target once, as `remote` (the topic's own name by
    default). Returns the ledger and the one Connect cluster."""
    r.clients.create_topics(r.client(source), {topic: 2})
    ledger = Ledger(r, topic, remote or topic, source=source, target=target)
    ledger.produce("before")
    r.deploy()
    running(r)
    ledger.holds_exactly()
    (connect,) = r.workers
    return ledger, connect


def copied_at_least_once(r, alias: str, topic: str, sent: list[dict]) -> set[str]:
    """Every record sent is on `alias`, in order per partition, none lost and none more than
    twice (a rotation's at-least-once); the keys copied twice."""
    copies = copied_in_order(r, alias, topic, sent)
    assert all(n <= 2 for n in copies.values()), copies
    return {k for k, n in copies.items() if n > 1}


def copied_in_order(r, alias: str, topic: str, sent: list[dict]) -> Counter[str]:
    """Every record sent is on `alias`, in order per partition (each key's first copy), none
    lost and none that was not sent; how many times each key arrived."""
    seen: dict[int, str] = {}

    def copied() -> list[list[str]] | None:
        ends = r.clients.end_offsets(r.client(alias), [topic])
        got = arrived(r, alias, topic, sum(ends.values()))
        keys = [[g["key"] for g in got if g["partition"] == p] for p in (0, 1)]
        for p in (0, 1):
            firsts, wanted = list(dict.fromkeys(keys[p])), [s["key"] for s in sent if s["partition"] == p]
            missing = [k for k in wanted if k not in set(firsts)]
            unknown = [k for k in firsts if k not in set(wanted)]
            order = next((i for i, (a, b) in enumerate(zip([k for k in firsts if k in set(wanted)], wanted)) if a != b), None)
            seen[p] = (f"partition {p}: {len(keys[p])} on the target, {len(wanted)} sent, missing {missing[:6]}"
                       f"{'...' if len(missing) > 6 else ''}, not sent {unknown[:6]}, first out of order at "
                       f"{order}")
        done = all(list(dict.fromkeys(keys[p])) == [s["key"] for s in sent if s["partition"] == p] for p in (0, 1))
        return keys if done else None
    try:
        keys = eventually("every record sent, in order, on the target", copied, 120, 3)
    except pytest.fail.Exception as exc:
        pytest.fail(f"{exc}: " + "; ".join(seen.values()))
    return Counter(k for part in keys for k in part)


class Repeating:
    """`step` every `period` seconds in a thread of its own while the block runs (the writers a
    drill or a recording keeps going during a fault)."""

    def __init__(self, period: float) -> None:
        self.period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def step(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            self.step()
            self._stop.wait(self.period)

    def __enter__(self) -> Repeating:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(120)


class Ledger:
    """What a test sent to one source topic, and the check that the target holds it exactly: every
    record in its partition and offset (the remote topic replicated from its start), nothing twice."""

    def __init__(self, r: Rehearsal, topic: str, remote: str, source: str = "us-west", target: str = "us-east"):
        self.r, self.topic, self.remote, self.source, self.target = r, topic, remote, source, target
        self.sent: list[dict] = []

    def produce(self, tag: str, n: int = 4, size: int = 0) -> None:
        batch = records(n, tag, size)
        self.r.clients.produce(self.r.client(self.source), self.topic, batch)
        self.sent.extend(batch)

    def holds_exactly(self) -> None:
        assert arrived(self.r, self.target, self.remote, len(self.sent)) == expected(self.sent, self.remote)
        assert self.r.clients.end_offsets(self.r.client(self.target), [self.remote]) == {
            f"{self.remote}:{p}": sum(1 for s in self.sent if s["partition"] == p) for p in (0, 1)}


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


def under_writes(r: Rehearsal, ledger: Ledger, name: str, fault) -> None:
    """`fault()` while Steady writes go to the ledger's source topic (3 s of them before it, 2 s
    after the connectors are RUNNING again); the writes went on through it."""
    before = len(ledger.sent)
    with Steady(ledger, name):
        time.sleep(3)
        fault()
        running(r)
        time.sleep(2)
    assert len(ledger.sent) > before + 8, (name, before, len(ledger.sent))


# The dev flow's source connector (the drills' flow).
def short_rebalance_delay(topo: dict) -> None:
    """A worker that left holds its tasks 10 s before they move (Kafka's default 300 s;
    docs/operations.md says when to lower it): the fault drills' setting."""
    topo["operator"]["connect"]["rebalanceDelaySeconds"] = 10


def drill_pods(topo: dict) -> None:
    """The fault drills' Connect cluster: two pods, a source task each, the short rebalance delay."""
    short_rebalance_delay(topo)
    topo["operator"]["connect"]["replicas"] = 2
    topo["flows"][0]["tasksMax"] = {"source": 2}


DEV_SOURCE = "repl-us-west-us-east-source"
# What the worker logs (Kafka's AbstractWorkerSourceTask, Worker.awaitStopTask, WorkerCoordinator.poll).
STARTED = "WorkerSourceTask{{id={task}}} Source task finished initialization and start"
UNCLEAN = "Graceful stop of task {task} failed"  # no final offset commit
REVOKED = "Broker coordinator was unreachable for 3000ms. Revoking previous assignment"


def logged(pod, line: str) -> int:
    """How many times a pod's worker logged `line`, every container's log read."""
    return sum(path.read_text(errors="replace").count(line) for path in pod.pod.glob("worker.log*"))


def task_lines(pods, line: str, tasks: int = 2, source: str = DEV_SOURCE) -> Counter[int]:
    """How many times each of the flow's `tasks` source tasks logged `line` on the Connect
    cluster's pods, every container's log read (Rehearsal keeps the earlier ones as worker.log.<n>)."""
    return Counter({task: sum(logged(pod, line.format(task=f"{source}-{task}")) for pod in pods)
                    for task in range(tasks)})


def task_starts(pods, tasks: int = 2) -> Counter[int]:
    """Each source task's starts: each resumes from the offsets last committed."""
    return task_lines(pods, STARTED, tasks)


def starts_since(pods, earlier: Counter[int]) -> int:
    """The most starts of one source task since `earlier` (task_starts)."""
    now = task_starts(pods, len(earlier))
    return max(now[task] - earlier[task] for task in now)


def again_at_most(r, ledger: Ledger, earlier: Counter[str], starts: int, when: str) -> Counter[str]:
    """Every record sent has arrived in order per partition, none lost; each key copied at most
    once more than before the fault for each start of the tasks during it (a task that starts
    re-copies what was copied since the offsets last committed, no more)."""
    copies = copied_in_order(r, ledger.target, ledger.remote, ledger.sent)
    over = {k: (earlier.get(k, 1), n) for k, n in copies.items() if n > earlier.get(k, 1) + starts}
    assert not over, (f"copied more often than {starts} restart(s) from the last commit explain ({when}); "
                      f"key: (copies before, copies now): {dict(list(over.items())[:10])}")
    ledger_line(r, ledger, copies, f"{when}; at most {starts} more each")
    return copies


def ledger_line(r, ledger: Ledger, copies: Counter[str], when: str) -> None:
    ends = r.clients.end_offsets(r.client(ledger.target), [ledger.remote])
    print(f"ledger {ledger.remote}: " + "; ".join(
        f"partition {p}: {sum(1 for s in ledger.sent if s['partition'] == p)} sent, {ends[f'{ledger.remote}:{p}']} on "
        f"the target" for p in (0, 1)) + f"; {sum(1 for n in copies.values() if n > 1)} copied more than once, "
        f"at most {max(copies.values())} times ({when})")
