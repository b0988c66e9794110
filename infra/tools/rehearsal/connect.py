"""Distributed Kafka Connect workers, one per rendered KafkaConnect, each in a pod of its own:
a mount namespace (util-linux `unshare`) in which /tmp, /opt/kafka and /mnt are the pod's own
folders, so that the paths the operator and our connectors use (/tmp/strimzi-connect.properties,
/tmp/kafka/*.p12, /opt/kafka/connect-password, /mnt/<volume>) are the real ones, with no two
workers sharing them. Needs root, as a container runtime does.

The worker's Kubernetes client (Strimzi's config providers) reads the API server as the pod's
service account: a kubeconfig in the pod with the token the API server minted for it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.plan import metrics
from infra.tools.rehearsal.operator import REST_PORT, WORKER_FILE, WorkerSetup
from infra.tools.rehearsal.plugins import plugin_locations
from infra.tools.rehearsal.process import (Network, Process, RestError, RuntimeStartError, cache_root, class_archive,
                                           java, jvm_options, logging_options)

# The refusal of an exactly-once source task whose task config generation is no longer the latest.
STALE_GENERATION = "as the connector has already generated a new set of task configs"
STALE_GRACE = 30.0

POD_ROOTS = ("/opt/kafka", "/mnt", "/tmp")  # bound in this order: /tmp last, our folders may be under it


def _root_of(path: str) -> str | None:
    return next((root for root in POD_ROOTS if path == root or path.startswith(root + "/")), None)


def _inside(pod: Path, path: str) -> Path:
    root = _root_of(path)
    if root is None:
        raise RuntimeStartError(f"a pod path outside {', '.join(POD_ROOTS)} is not supported here: {path}")
    return pod / root.strip("/").replace("/", "-") / path[len(root):].lstrip("/")


def _quoted(text: str | Path) -> str:
    return "'" + str(text).replace("'", "'\\''") + "'"


def pod_mounts(pod: Path, host: list[Path]) -> str:
    """The shell commands, run in the worker's own mount namespace, that give it the pod's roots
    (POD_ROOTS, each bound from the pod's folder), keeping in sight the host folders in `host`
    that the JVM reads from (the JDK, the jar and class-archive cache): one under a pod root (a
    cache under /tmp, as a HOME or XDG_CACHE_HOME there gives) is bound into the pod's root at its
    own path first, and the roots are bound recursively so that it comes along. A host folder
    that is a pod root, or holds the pod, cannot be kept apart from the pod's own: refused."""
    binds = []
    for folder in host:
        path = str(folder)
        if _root_of(path) is None:
            continue
        if path in POD_ROOTS or pod.is_relative_to(folder):
            raise RuntimeStartError(
                f"{path} (the JDK or the rehearsal's cache, KAFKA_REPLICATION_CACHE) would be hidden by or hold the "
                f"Connect pods' own {', '.join(POD_ROOTS)}: use a folder below them, or elsewhere")
        inside = _inside(pod, path)
        inside.mkdir(parents=True, exist_ok=True)
        binds.append(f"mount --bind {_quoted(path)} {_quoted(inside)}")
    binds += [f"mount --rbind {_quoted(_inside(pod, root))} {_quoted(root)}" for root in POD_ROOTS]
    return " && ".join(binds)


@dataclass
class Worker:
    name: str            # the KafkaConnect's namespace/name
    setup: WorkerSetup
    pod: Path
    host: str            # the pod's loopback address
    classpath: str
    network: Network
    kubeconfig: str      # for the service account
    process: Process | None = None
    log_level: str = "INFO"
    plugins: tuple[Path, ...] = ()  # plugin.path folders of this machine, copied into the pod's
    jvm: str = "quick"  # process.jvm_options
    deleted: bool = False  # the pod, by `stop`: the kubelet syncs it no more

    @property
    def url(self) -> str:
        return f"http://{self.host}:{REST_PORT}"

    @property
    def metrics_url(self) -> str:
        """The exporter agent's endpoint on the pod's address (with `spec.metricsConfig`)."""
        return f"http://{self.host}:{metrics.METRICS_PORT}{metrics.METRICS_PATH}"

    def scrape(self) -> str:
        """The exporter's text exposition, as Prometheus scrapes it."""
        with urllib.request.urlopen(self.metrics_url, timeout=60) as resp:
            text: str = resp.read().decode()
            return text

    def launch(self) -> None:
        """The worker's JVM started; `wait_ready` waits for its REST API."""
        if shutil.which("unshare") is None:
            raise RuntimeStartError("util-linux `unshare` is needed to give each Connect worker its own /tmp")
        for root in POD_ROOTS:
            Path(root).mkdir(parents=True, exist_ok=True)  # bind targets; stay empty outside the pods
            _inside(self.pod, root).mkdir(parents=True, exist_ok=True)
        # plugin.path: the release's jars are on the classpath, as in Strimzi's image; the user's
        # plugins are copied in (a link to this machine's /tmp would lead into the pod's own), each
        # jar or folder one plugin as Connect reads them, named apart by the folder they came from.
        plugin_dir = _inside(self.pod, "/opt/kafka/plugins")
        plugin_dir.mkdir(exist_ok=True)
        for i, folder in enumerate(self.plugins):
            for child in plugin_locations(folder):
                copy = plugin_dir / f"{i}-{child.name}"
                if child.is_dir():
                    shutil.copytree(child, copy, dirs_exist_ok=True)
                else:
                    shutil.copyfile(child, copy)
        files = {**self.setup.files, WORKER_FILE: self.setup.worker_file().encode(),
                 "/tmp/hosts": self.network.pod_hosts(), "/tmp/.kube/config": self.kubeconfig.encode()}
        for path, content in files.items():
            target = _inside(self.pod, path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        logs = logging_options(_inside(self.pod, "/tmp"), self.log_level)
        logs = [o.replace(str(_inside(self.pod, "/tmp")), "/tmp") for o in logs]
        argv = [java(), *jvm_options(self.jvm, (256, 768)),
                "-Djdk.net.hosts.file=/tmp/hosts", "-Djava.io.tmpdir=/tmp", *logs, *self.setup.jvm_options,
                "-cp", self.classpath, "org.apache.kafka.connect.cli.ConnectDistributed", WORKER_FILE]
        argv, archive = class_archive(argv)
        binds = pod_mounts(self.pod, [Path(java()).resolve().parents[1], cache_root()])
        quoted = " ".join(_quoted(a) for a in argv)
        env = {**self.setup.env, "KUBECONFIG": "/tmp/.kube/config", "HOME": "/tmp"}
        self.process = Process(f"Connect worker {self.name}",
                               ["unshare", "-m", "--propagation", "private", "sh", "-c", f"{binds} && exec {quoted}"],
                               self.pod / "worker.log", env, archive)

    @property
    def files(self) -> dict[str, bytes]:
        return self.setup.files

    def project(self, files: dict[str, bytes]) -> None:
        """Files of the pod's Secret volumes replaced as the kubelet swaps them in (kubelet.py):
        each written whole and renamed over the old one; a restarted container sees them."""
        for path, content in files.items():
            target = _inside(self.pod, path)
            written = target.with_name(f"..{target.name}.projected")
            written.write_bytes(content)
            os.replace(written, target)
            self.setup.files[path] = content

    def wait_ready(self) -> None:
        assert self.process is not None, "launch() first"
        self.process.wait_for("its REST API", self._ready, 180)

    def _ready(self) -> bool:
        try:
            return self.get("/connectors") is not None
        except (urllib.error.URLError, OSError, ValueError, RuntimeStartError):
            return False  # Jetty answers 404 until Connect's resources are registered

    def stop(self) -> None:
        """The pod deleted (rolled, scaled down, the rehearsal's end); a container restart is
        `launch` again in the same pod."""
        self.deleted = True
        if self.process is not None:
            self.process.stop()

    def request(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 201, 202, 204)) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                text = resp.read().decode()
                return json.loads(text) if text else None
        except urllib.error.HTTPError as exc:
            if exc.code in ok:
                return None
            raise RestError.answered(f"{self.name}: {method} {path}", exc, 2000) from None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def _retrying(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 201, 202, 204)) -> Any:
        # The REST API may answer 409 while the workers rebalance: the operator retries too
        # (KafkaConnectApiImpl: a BackOff on 409 for the config's GET and PUT). A GET of a
        # connector's config may instead answer 500 with the herder's RebalanceNeededException
        # (as a connector created just before asks for one): the operator's reconciliation fails
        # on it and the next one asks again, which this retry stands in for.
        deadline = time.monotonic() + 120
        while True:
            try:
                return self.request(method, path, body, ok)
            except RestError as exc:
                transient = exc.status == 409 or (exc.status == 500 and "because a rebalance is expected" in exc.body)
                if not transient or time.monotonic() > deadline:
                    raise
                time.sleep(1)

    def connector_config(self, name: str) -> dict[str, str] | None:
        """`GET /connectors/<name>/config`: the config as Connect stores it (with the `name` it
        adds, references unresolved); None when there is no such connector."""
        found: dict[str, str] | None = self._retrying("GET", f"/connectors/{name}/config", ok=(404,))
        return found

    def create_connector_in_state(self, name: str, config: dict[str, str], state: str) -> None:
        """A connector new to the worker, as Strimzi 1.2.0 creates it: `POST /connectors` with
        `initial_state`, so a stopped or paused one never starts (KafkaConnectApiImpl
        .createConnector; Release.creates_connectors_in_state)."""
        self._retrying("POST", "/connectors", {"name": name, "config": config, "initial_state": state.upper()})

    def put_connector(self, name: str, config: dict[str, str]) -> None:
        """`PUT /connectors/<name>/config`: created (and started) when new, else reconfigured."""
        self._retrying("PUT", f"/connectors/{name}/config", config)

    def status(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.get(f"/connectors/{name}/status")
        return found

    def wait_running(self, name: str, timeout: float = 180, min_tasks: int = 0) -> dict[str, Any]:
        """Until the connector and every one of its tasks is RUNNING (at least `min_tasks`);
        a FAILED connector or task ends the wait with its trace.

        A connector reports RUNNING before its tasks exist: the herder starts it, then asks it
        for task configs and writes them, then assigns the tasks (DistributedHerder
        reconfigureConnector). "Every task" is therefore the task configs the connector has
        generated (`GET /connectors/<name>/tasks`), each with a RUNNING status, and never fewer
        than `min_tasks`, which a caller that knows the connector's class sets."""
        deadline = time.monotonic() + timeout
        last: dict[str, Any] = {}
        stale_since: float | None = None
        while time.monotonic() < deadline:
            try:
                last = self.status(name)
                generated = self.get(f"/connectors/{name}/tasks") or []
            except RuntimeStartError:
                time.sleep(1)
                continue
            tasks = last.get("tasks", [])
            states = [last["connector"]["state"], *(t["state"] for t in tasks)]
            failed = [t for t in [last["connector"], *tasks] if t["state"] == "FAILED"]
            if failed and all(STALE_GENERATION in t.get("trace", "") for t in failed):
                # An exactly-once task that started on task configs the connector has since replaced
                # fails its generation check (DistributedHerder.verifyTaskGenerationAndOwnership);
                # the new task configs make its worker stop and start it again
                # (processTaskConfigUpdatesWithIncrementalCooperative). A worker that joins writes new
                # task configs even when they are the same (KAFKA-9228), so a rolling update can show
                # this for a moment; it stays a failure when it outlives STALE_GRACE seconds.
                stale_since = stale_since if stale_since is not None else time.monotonic()
                if time.monotonic() - stale_since < STALE_GRACE:
                    time.sleep(1)
                    continue
            if failed:
                raise RuntimeStartError(f"connector {name} on {self.name} FAILED:\n{failed[0].get('trace', '')[:4000]}")
            stale_since = None
            if all(s == "RUNNING" for s in states) and len(tasks) >= max(min_tasks, len(generated)):
                return last
            time.sleep(1)
        raise RuntimeStartError(f"connector {name} on {self.name} not running after {timeout:.0f} s: {last}")
