"""A rehearsal: the topology's Kafka clusters started here, the program's render applied to a
Kubernetes API server with real material in its Secrets, one Connect worker per KafkaConnect,
and every KafkaConnector reconciled on its worker as the operator does (its config PUT only
when it differs from what the worker holds, then its state).

The API server is given (`Kube`): the test tier uses a real kube-apiserver on loopback.

Offsets requests (infra/plan/offsets.py) are the render's KafkaConnector patches: each one's
annotations are merged into its connector, as the API server merges the patch, and the
operator's offsets management (infra/tools/rehearsal/offsets.py) is run once per request, as Pulumi
creates each request's patch resource once; after the worker's 409, again at the next reconciliation.
"""

from __future__ import annotations

import itertools
import secrets as random_secrets
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

import yaml

from infra.checks import validation
from infra.core import names
from infra.core.releases import Release
from infra.plan.offsets import is_patch
from infra.tools import render
from infra.tools.rehearsal import jars, offsets as operator_offsets, operator
from infra.tools.rehearsal.clients import Clients
from infra.tools.rehearsal.connect import Worker
from infra.tools.rehearsal.credentials import kept_secrets, secret_data, secret_material
from infra.tools.rehearsal.distance import Distance
from infra.tools.rehearsal.kafka import KafkaCluster
from infra.tools.rehearsal.kubelet import Kubelet
from infra.tools.rehearsal.links import Links
from infra.tools.rehearsal.process import Network, RuntimeStartError, stop_all
from infra.topology.resolution import Model

class Kube(Protocol):
    """What a rehearsal needs of a Kubernetes API server."""

    def apply(self, obj: dict[str, Any]) -> bool:
        """Create the object for real; False when the server does not serve its kind."""

    def token(self, namespace: str, service_account: str) -> str:
        """A token for the service account (TokenRequest)."""

    def kubeconfig(self, token: str, namespace: str) -> str:
        """A kubeconfig reaching the server with that token."""


@dataclass
class Rehearsal:
    topology: dict[str, Any]
    directory: Path
    kube: Kube
    stack: str = "rehearsal"
    model: Model = field(init=False)
    release: Release = field(init=False)
    network: Network = field(init=False)
    clusters: dict[str, KafkaCluster] = field(default_factory=dict)
    workers: dict[tuple[str, str], Worker] = field(default_factory=dict)
    connects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # the KafkaConnect of each worker
    objects: list[dict[str, Any]] = field(default_factory=list)
    connectors: dict[tuple[str, str], tuple[tuple[str, str], dict[str, Any]]] = field(default_factory=dict)
    outputs: dict[str, Any] | None = None  # of the last render: the next one's previous outputs
    # Secret config that differs from the clusters' own material (a CA bundle, a rotated
    # password), by key (`<alias>.caCert`): what the next render runs with.
    secret_config: dict[str, str] = field(default_factory=dict)
    authorizers: frozenset[str] = frozenset()  # aliases whose brokers run Kafka's authorizer (KafkaCluster)
    reauthenticate: dict[str, int] = field(default_factory=dict)  # alias -> KafkaCluster.reauthenticate_seconds
    brokers: dict[str, int] = field(default_factory=dict)  # alias -> KafkaCluster.brokers (one where absent)
    auth_hashes: dict[tuple[str, str], str] = field(default_factory=dict)  # each worker's, at its start
    rolled: list[tuple[str, str]] = field(default_factory=list)  # Connect clusters `update` rolled, in order
    uids: render.Uids = field(default_factory=dict)  # the Secrets' uids across renders (RecordingMocks.uid)
    generation: int = 0                    # of the workers: a redeploy starts new pods
    started_before_redeploy: int = 0       # workers of earlier generations
    # Offsets requests carried out, by (namespace, connector, request), those a reconciliation had to
    # repeat (with the worker's last refusal), and the ConfigMaps the operator wrote for `list`.
    offsets_done: set[tuple[str, str, str]] = field(default_factory=set)
    offsets_retried: dict[tuple[str, str, str], str] = field(default_factory=dict)
    listed: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    # Each connector config PUT to a worker, in order, by (namespace, connector): what send
    # created or found changed.
    config_puts: list[tuple[str, str]] = field(default_factory=list)
    # With `scale`, each Connect cluster runs `spec.replicas` pods, as the operator scales them:
    # the first in `workers`, the others here, in order. Without it one pod stands for them all
    # (what a pod does is the same; the tier's cost is not).
    scale: bool = False
    pods: dict[tuple[str, str], list[Worker]] = field(default_factory=dict)
    # Connect's plugin.path folders the workers load besides the release's jars (`--plugin-path`),
    # and the connectors ((namespace, name)) never sent to a worker: those that need a class no jar
    # here provides, left out with `--allow-missing` (cli.unloadable).
    plugin_paths: tuple[Path, ...] = ()
    not_sent: frozenset[tuple[str, str]] = frozenset()
    # With `keep_going` (the rehearse command: one bad connector must not hide what the others
    # do), a connector the worker refuses or fails is recorded here, by (namespace, name), with the
    # reason, and the others go on; without it (the tests that prove a refusal) it raises.
    keep_going: bool = False
    refused: dict[tuple[str, str], str] = field(default_factory=dict)
    jvm: str = "quick"  # the brokers' and workers' JVM settings (process.jvm_options)
    # The operator's periodic reconciliation, every `reconcile_every` seconds once deployed
    # (operator.RECONCILIATION_SECONDS, Strimzi's default; None: none): each connector's
    # `spec.autoRestart` acted on there, as the operator does, and the `status.autoRestart` it
    # would write kept here, by (namespace, connector), with each restart it made.
    reconcile_every: float | None = operator.RECONCILIATION_SECONDS
    auto_restarts: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    auto_restarted: list[tuple[str, str, str]] = field(default_factory=list)  # (namespace, connector, at)
    applied: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # each KafkaConnect `update` applied
    # Connect clusters whose target Secrets changed while the KafkaConnect did not: rolled at the
    # next periodic reconciliation, by (namespace, name), with what they roll onto.
    pending_rolls: dict[tuple[str, str], tuple[dict[str, Any], dict[str, dict[str, bytes]], dict[str, dict[str, str]]]] = \
        field(default_factory=dict)
    # Connect clusters whose StrimziPodSet carries `strimzi.io/manual-rolling-update=true`
    # (annotate_for_rolling), rolled by the next reconciliation of their KafkaConnect.
    manual_rolls: set[tuple[str, str]] = field(default_factory=set)
    # Held by every reconciliation (the operator's lock); a test holds it to see a state it set by hand.
    reconciling: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False)
    _reconciler: threading.Thread | None = field(default=None, init=False, repr=False)
    _stop_reconciling: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    # With `linked`, every worker reaches every cluster through a link of its own that the caller
    # can slow, cut or black-hole (links.py), after the clusters start; the tests' clients do not.
    linked: bool = False
    links: Links | None = field(default=None, init=False)
    # Clusters in another region, by alias: each broker behind a link of its own with the
    # kernel's TCP in between (distance.py), crossed by everything that reaches it from here,
    # the workers and the tests' clients alike. Started with the clusters, stopped after them.
    distances: dict[str, Distance] = field(default_factory=dict)
    # The release whose Kafka the brokers start on (None: the rehearsal's): a drill upgrades them.
    brokers_on: Release | None = None
    # A Secret changed under running pods reaches their mounted files at the kubelet's next sync
    # (kubelet.py: `sync_seconds` later, a minute by default; a test may lower it).
    kubelet: Kubelet = field(default_factory=Kubelet)

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.model = validation.parse(self.topology)
        self.release = self.model.operator.release
        self.network = Network(self.directory)
        self.clients = Clients(self.release, self.network)

    # -------------------------------------------------------------- Kafka

    def start_clusters(self) -> None:
        """Every cluster's broker, started side by side: a broker's start is mostly its JVM's own."""
        unknown = sorted(set(self.distances) - set(self.model.clusters))
        if unknown:
            raise RuntimeStartError(f"a distance for {', '.join(unknown)}, which the topology does not name as a "
                                    f"cluster ({', '.join(sorted(self.model.clusters))})")
        if self.linked and any(n > 1 for n in self.brokers.values()):
            raise RuntimeStartError("a link leads to one broker: a linked rehearsal runs one per cluster")
        classpath = jars.classpath(self.brokers_on or self.release)
        for alias, spec in sorted(self.model.clusters.items()):
            password = f"pw-{alias}-{random_secrets.token_hex(4)}" if spec.security.sasl else None
            self.clusters[alias] = KafkaCluster(alias, spec, password, self.directory / "kafka" / alias, self.network,
                                                authorizer=alias in self.authorizers,
                                                reauthenticate_seconds=self.reauthenticate.get(alias), jvm=self.jvm,
                                                far=self.distances.get(alias), brokers=self.brokers.get(alias, 1))
        for link in self.distances.values():
            link.start()
        with ThreadPoolExecutor(max_workers=max(len(self.clusters), 1)) as pool:
            for started in [pool.submit(k.start, classpath) for k in self.clusters.values()]:
                started.result()
        if self.linked:
            self.links = Links(self.network, self.directory / "links")
            self.links.start()
            for alias, cluster in sorted(self.clusters.items()):
                assert cluster.ip, alias
                self.links.add(alias, [h for h, _ in cluster.hosts], cluster.port, cluster.ip)

    def start_cluster(self, alias: str, release: Release | None = None) -> None:
        """A stopped cluster started again (storage, address, names kept): its Kafka, or `release`'s."""
        cluster = self.clusters[alias]
        cluster.start(jars.classpath(release) if release is not None else cluster.classpath)

    def client(self, alias: str) -> dict[str, str]:
        return self.clusters[alias].client_properties()

    # -------------------------------------------------------------- the program's objects

    def render(self, topology: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The program's objects for `topology` (default: the rehearsal's), in clear, rendered as
        an update of the last render (its outputs are the stack's previous outputs)."""
        path = self.directory / f"{self.stack}.yaml"
        path.write_text(yaml.safe_dump(topology or self.topology, sort_keys=False))
        secrets = {**secret_material(self.model, self.clusters), **self.secret_config}
        result = render.run(self.stack, {"topology": str(path)}, secrets, previous_outputs=self.outputs, uids=self.uids)
        self.outputs = result.outputs
        return [*result.objects(), *kept_secrets(validation.parse(topology) if topology else self.model, self.clusters)]

    def redeploy(self, objects: Iterable[dict[str, Any]]) -> None:
        """A rolling update as the operator does one: the workers stop, new pods start from the
        new objects, and every connector is reconciled again (`send`)."""
        with self.reconciling:  # no periodic reconciliation meanwhile
            for worker in [*self.workers.values(), *(w for ws in self.pods.values() for w in ws)]:
                worker.stop()
            self.started_before_redeploy += len(self.workers) + sum(len(ws) for ws in self.pods.values())
            for held in (self.workers, self.pods, self.applied, self.connectors):
                held.clear()
            self.generation += 1
            self.deploy(objects)

    def deploy(self, objects: Iterable[dict[str, Any]] | None = None) -> None:
        """Apply the render, start a worker per KafkaConnect, reconcile every KafkaConnector
        (`send`), then carry out the offsets requests."""
        self.objects = list(objects) if objects is not None else self.render()
        for obj in sorted(self.objects, key=lambda o: o["kind"] != "Namespace"):
            if not is_patch(obj):
                self.kube.apply(obj)
        secrets, configmaps = self._stores()
        # The Connect clusters' first pods start side by side, as the operator creates them.
        connects = [o for o in self.objects if o["kind"] == "KafkaConnect"]
        started = [self.start_worker(c, secrets.get(c["metadata"]["namespace"], {}),
                                     configmaps.get(c["metadata"]["namespace"], {}), wait=False) for c in connects]
        for worker in started:
            worker.wait_ready()
        for connect in connects:
            namespace = connect["metadata"]["namespace"]
            self._scale(connect, secrets.get(namespace, {}), configmaps.get(namespace, {}))
        for connector in (o for o in self.objects if o["kind"] == "KafkaConnector" and not is_patch(o)):
            meta = connector["metadata"]
            key = (meta["namespace"], meta["labels"][names.CLUSTER_LABEL])
            self.send(key, connector)
        self.manage_offsets()
        if self.reconcile_every and self._reconciler is None:
            self._reconciler = threading.Thread(target=self._reconciling, name="operator-reconciliation", daemon=True)
            self._reconciler.start()

    def _reconciling(self) -> None:
        assert self.reconcile_every
        while not self._stop_reconciling.wait(self.reconcile_every):
            self.periodic_reconciliation()

    def periodic_reconciliation(self, now: datetime | None = None) -> list[tuple[str, str]]:
        """One periodic reconciliation (operator.RECONCILIATION_SECONDS): the pods of each Connect
        cluster rolled where due, then every connector sent reconciled (`reconcile`, on the state
        its worker reports then: a state set by hand is put back), then its `autoRestart`
        (operator.auto_restart): the connectors it restarted. A worker that does not answer fails
        that connector's reconciliation, and the next pass asks again, as the operator's does; a
        failed restart request is counted all the same (autoRestartConnector)."""
        restarted = []
        with self.reconciling:
            for connect_key in sorted(self.manual_rolls):
                self._manual_roll(connect_key)
            for connect_key, (connect_obj, secrets, configmaps) in sorted(self.pending_rolls.items()):
                if connect_key in self.workers:
                    self._roll(connect_key, connect_obj, secrets, configmaps)
            self.pending_rolls.clear()
            if set(self.offsets_retried) - self.offsets_done:
                self.manage_offsets()
            for key, (connect, connector) in sorted(list(self.connectors.items())):
                worker = self.workers.get(connect)
                if worker is None:
                    continue
                try:
                    self.reconcile(connect, connector, settle=0)
                    status = worker.status(key[1])
                except (RuntimeStartError, OSError, operator.OperatorRefusal):
                    continue  # the operator logs the failure; the next pass tries again
                if self._auto_restart(worker, key, connector, status, now or datetime.now(timezone.utc)):
                    restarted.append(key)
        return restarted

    def _auto_restart(self, worker: Worker, key: tuple[str, str], connector: dict[str, Any], status: dict[str, Any],
                      when: datetime) -> bool:
        restart, written = operator.auto_restart(connector["spec"], status, self.auto_restarts.get(key), when)
        if restart:
            try:
                worker.request("POST", f"/connectors/{key[1]}/restart?includeTasks=true&onlyFailed=true")
            except (RuntimeStartError, OSError):
                pass
            self.auto_restarted.append((*key, when.isoformat(timespec="seconds")))
        if written is None:
            self.auto_restarts.pop(key, None)
        else:
            self.auto_restarts[key] = written
        return restart

    def _stores(self) -> tuple[dict[str, dict[str, dict[str, bytes]]], dict[str, dict[str, dict[str, str]]]]:
        """The render's Secrets (their data as bytes) and ConfigMaps, by namespace and name."""
        secrets: dict[str, dict[str, dict[str, bytes]]] = {}
        configmaps: dict[str, dict[str, dict[str, str]]] = {}
        for obj in self.objects:
            if obj["kind"] == "Secret":
                secrets.setdefault(obj["metadata"]["namespace"], {})[obj["metadata"]["name"]] = secret_data(obj)
            elif obj["kind"] == "ConfigMap":
                configmaps.setdefault(obj["metadata"]["namespace"], {})[obj["metadata"]["name"]] = obj.get("data", {})
        return secrets, configmaps

    def update(self, objects: Iterable[dict[str, Any]]) -> None:
        """A render applied as `pulumi up` applies it: the objects replaced; a new Connect cluster
        started; one whose pod template, or target credentials or trust (`strimzi.io/auth-hash`)
        with the KafkaConnect, changed rolled at once, as the operator does on a change of a
        custom resource it watches; one whose credentials changed in its Secrets only, at the next
        periodic reconciliation (`pending_rolls`). The KafkaConnectors the operator's watches see
        reconciled (`send`): those new or changed, and all of a changed KafkaConnect's
        (operator.reconciled_at_apply); the others wait for the periodic reconciliation. Then the
        offsets requests carried out."""
        with self.reconciling:  # the periodic reconciliation waits, as the operator's lock makes it
            self._update(list(objects))

    def _update(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects
        for obj in sorted(self.objects, key=lambda o: o["kind"] != "Namespace"):
            if not is_patch(obj):
                self.kube.apply(obj)
        secrets, configmaps = self._stores()
        reconciled: set[tuple[str, str]] = set()  # the KafkaConnects the apply changed
        for connect in (o for o in self.objects if o["kind"] == "KafkaConnect"):
            meta = connect["metadata"]
            key = (meta["namespace"], meta["name"])
            ns_secrets = secrets.get(meta["namespace"], {})
            if key not in self.workers:  # a new Connect cluster (a flow added): its pods start
                self.start_worker(connect, ns_secrets, configmaps.get(meta["namespace"], {}))
            else:
                before = self.applied.get(key, self.connects[key])
                if connect != before:  # the operator's watch on KafkaConnects sees it
                    reconciled.add(key)
                template_changed = connect["spec"].get("template") != before["spec"].get("template")
                auth_changed = self.auth_hashes.get(key) != operator.auth_hash(connect, ns_secrets)
                if template_changed or (auth_changed and key in reconciled):
                    # The KafkaConnect changed: the operator reconciles it at once (it
                    # watches custom resources) and rolls its pods.
                    self.pending_rolls.pop(key, None)
                    if key in self.manual_rolls:  # rolled as they are first, then onto the change
                        self._manual_roll(key)
                    self._roll(key, connect, ns_secrets, configmaps.get(meta["namespace"], {}))
                elif auth_changed:
                    # Only Secrets it reads changed, which the operator does not watch: it sees the new
                    # auth hash at its next periodic reconciliation, after `pulumi up` has returned.
                    self.pending_rolls[key] = (connect, ns_secrets, configmaps.get(meta["namespace"], {}))
            self._scale(connect, ns_secrets, configmaps.get(meta["namespace"], {}))
            self.applied[key] = connect
        self.kubelet.secrets_changed([(pod, self.connects[key]) for key in self.workers for pod in self.pods_of(key)],
                                     lambda namespace: self._stores()[0].get(namespace, {}))
        # A Connect cluster the render no longer holds is deleted, and its pods with it.
        kept = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in self.objects if o["kind"] == "KafkaConnect"}
        for key in [k for k in self.workers if k not in kept]:
            for pod in [*self.pods.pop(key, []), self.workers.pop(key)]:
                pod.stop()
                self.started_before_redeploy += 1
            self.connectors = {k: v for k, v in self.connectors.items() if v[0] != key}
        for connector in (o for o in self.objects if o["kind"] == "KafkaConnector" and not is_patch(o)):
            meta = connector["metadata"]
            if operator.reconciled_at_apply(connector, self.connectors, reconciled):
                self.send((meta["namespace"], meta["labels"][names.CLUSTER_LABEL]), connector)
        self.manage_offsets()

    def annotate_for_rolling(self, namespace: str, name: str) -> None:
        """`kubectl annotate strimzipodset -n <namespace> <name>-connect strimzi.io/manual-rolling-update=true`.
        The operator watches its custom resources, not its pod sets: the pods roll at the next
        reconciliation of the KafkaConnect (the periodic one, or a change of it), first in it
        (AbstractConnectOperator.manualRollingUpdate, at 0.43.0 and 1.2.0), onto the Secrets as
        they are then; the pod set the operator writes after carries no such annotation."""
        with self.reconciling:
            self.manual_rolls.add((namespace, name))

    def _manual_roll(self, key: tuple[str, str]) -> None:
        self.manual_rolls.discard(key)
        if key in self.workers:
            secrets, configmaps = self._stores()
            self._roll(key, self.connects[key], secrets.get(key[0], {}), configmaps.get(key[0], {}))

    def _roll(self, key: tuple[str, str], connect: dict[str, Any], secrets: dict[str, dict[str, bytes]],
              configmaps: dict[str, dict[str, str]]) -> None:
        """The Connect cluster's pods replaced by new ones, as the operator rolls them."""
        for pod in self.pods.pop(key, []):
            pod.stop()
            self.started_before_redeploy += 1
        self.workers.pop(key).stop()
        self.started_before_redeploy += 1
        self.rolled.append(key)
        self.start_worker(connect, secrets, configmaps)
        self._scale(connect, secrets, configmaps)

    def upgrade(self, topology: dict[str, Any]) -> None:
        """The operator upgraded to the release `topology` names (docs/operations.md#operator-
        upgrades), then the stack deployed on it: every Connect cluster rolls onto the new
        release's images, here its jars (the operator's Connect images are per release), with
        the group id and storage topics the new render gives it, and every connector is
        reconciled again. The Kafka clusters and the clients stay as they are."""
        self.topology = topology
        self.model = validation.parse(topology)
        self.release = self.model.operator.release
        self.redeploy(self.render())

    def manage_offsets(self) -> None:
        """Each offsets request of the render, once carried out: its patch's annotations on the connector, the
        operator's REST calls, the ConfigMap it writes for a list, and the annotation it then removes."""
        with self.reconciling:  # the periodic reconciliation's thread repeats requests too
            configmaps = {(o["metadata"]["namespace"], o["metadata"]["name"]): o["data"]
                          for o in self.objects if o["kind"] == "ConfigMap"}
            configmaps.update({key: cm["data"] for key, cm in self.listed.items()})
            for patch in (o for o in self.objects if is_patch(o)):
                meta = patch["metadata"]
                done = (meta["namespace"], meta["name"], meta["annotations"][names.OFFSETS_REQUEST_ANNOTATION])
                if done in self.offsets_done:
                    continue
                connect, connector = self.connectors[(meta["namespace"], meta["name"])]
                annotated = {**connector, "metadata": {**connector["metadata"], "annotations": {
                    **connector["metadata"].get("annotations", {}), **meta["annotations"]}}}
                # On the server as `pulumi up` leaves it (the patch's annotations on the connector),
                # then as the operator leaves it once the request is carried out (its own annotation
                # removed, ours kept): what `kubectl get` shows at each step.
                self.kube.apply(annotated)
                try:
                    written = operator_offsets.manage(self.workers[connect], annotated, configmaps)
                except RuntimeStartError as exc:
                    if not operator_offsets.retried(exc):
                        raise
                    self.offsets_retried[done] = str(exc)  # its annotation kept
                    continue
                if written is not None:
                    self.kube.apply(written)
                    self.listed[(meta["namespace"], written["metadata"]["name"])] = written
                carried_out = operator_offsets.without_annotation(annotated)
                self.kube.apply(carried_out)
                self.connectors[(meta["namespace"], meta["name"])] = (connect, carried_out)
                self.offsets_done.add(done)

    def _scale(self, connect: dict[str, Any], secrets: dict[str, dict[str, bytes]],
               configmaps: dict[str, dict[str, str]]) -> None:
        """With `scale`, the Connect cluster's pods brought to `spec.replicas` as the operator
        scales them (KafkaConnectAssemblyOperator: the pod set scaled, no pod rolled): new pods
        join the group, pods past the count stop (the last first) and leave it."""
        if not self.scale:
            return
        meta = connect["metadata"]
        key = (meta["namespace"], meta["name"])
        pods = self.pods.setdefault(key, [])
        wanted = max(int(connect["spec"].get("replicas", 1)), 1) - 1
        while len(pods) > wanted:
            pods.pop().stop()
            self.started_before_redeploy += 1
        while len(pods) < wanted:
            pods.append(self.start_worker(connect, secrets, configmaps, first=False))

    def start_worker(self, connect: dict[str, Any], secrets: dict[str, dict[str, bytes]],
                     configmaps: dict[str, dict[str, str]] | None = None, first: bool = True,
                     wait: bool = True) -> Worker:
        """A pod of the Connect cluster: its first (`workers`), or another (`pods`, `_scale`);
        without `wait`, launched only (the caller waits for its REST API: Worker.wait_ready)."""
        meta = connect["metadata"]
        key = (meta["namespace"], meta["name"])
        host = self.network.address()
        # The release's exporter agent where the KafkaConnect asks for it (operator.metrics_json).
        agent = str(jars.jmx_exporter_agent(self.release)) if connect["spec"].get("metricsConfig") else None
        setup = operator.worker(self.release, connect, secrets, host, configmaps or {}, agent)
        self.connects[key] = connect
        self.auth_hashes[key] = operator.auth_hash(connect, secrets)
        self.kube.apply(operator.service_account(connect))
        for obj in setup.objects:
            self.kube.apply(obj)
        token = self.kube.token(meta["namespace"], names.connect_component(meta["name"]))
        pod = self.directory / "pods" / f"{'-'.join(key)}-{self.generation}"
        # A pod rolled alone (`update`) is a new pod: its own folder, the old pod's log kept.
        pod = next(p for p in (pod.with_name(f"{pod.name}-{i}") if i else pod for i in itertools.count())
                   if not p.exists())
        # The Connect image of the KafkaConnect's spec.version (operator.connect_version).
        kafka = Release.apache_kafka(operator.connect_version(self.release, connect))
        worker = Worker(f"{meta['namespace']}/{meta['name']}", setup, pod, host,
                        jars.classpath(self.release, kafka), self.network,
                        self.kube.kubeconfig(token, meta["namespace"]), plugins=self.plugin_paths, jvm=self.jvm)
        if first:
            self.workers[key] = worker
        worker.launch()
        if wait:
            worker.wait_ready()
        return worker

    def pods_of(self, connect: tuple[str, str]) -> list[Worker]:
        """The Connect cluster's pods, in the order of their names: the first, then `pods`."""
        return [self.workers[connect], *self.pods.get(connect, [])]

    def kill_worker(self, connect: tuple[str, str], pod: int = 0) -> None:
        """The Connect cluster's `pod`th pod's JVM killed (SIGKILL) and its container restarted by
        the kubelet, as after an OOM kill: the same pod, address and files. The worker rejoins its
        group."""
        worker = self.pods_of(connect)[pod]
        assert worker.process is not None, "a started worker"
        worker.process.kill()
        self._restart_container(worker)

    def roll_pods(self, connect: tuple[str, str]) -> None:
        """A rolling restart as Strimzi's KafkaConnectRoller makes one (1.2.0,
        cluster-operator/.../assembly/KafkaConnectRoller.java: ready pods in the order of their
        names, one at a time, the next once the one rolled is ready): each pod stopped as the
        kubelet stops a deleted pod (SIGTERM, then SIGKILL past terminationGracePeriodSeconds,
        30 s by default: model/WorkloadUtils.java) and started again. The next is rolled as soon as
        the REST API answers: harsher than the operator, whose readiness probe (/health,
        initialDelaySeconds 60: model/KafkaConnectCluster.java) holds it a minute at least."""
        for worker in self.pods_of(connect):
            assert worker.process is not None, "a started worker"
            worker.process.stop(grace=30)
            self._restart_container(worker)

    @staticmethod
    def _restart_container(worker: Worker) -> None:
        """The pod's container started again; each earlier container's log kept beside it as
        `worker.log.<n>`, the first `.1` (what `kubectl logs --previous` shows is the last)."""
        earlier = sum(1 for _ in worker.pod.glob("worker.log.*"))
        (worker.pod / "worker.log").replace(worker.pod / f"worker.log.{earlier + 1}")
        worker.launch()
        worker.wait_ready()

    def send(self, connect: tuple[str, str], connector: dict[str, Any]) -> None:
        """`reconcile`, with a refusal recorded rather than raised where the rehearsal keeps going."""
        key = (connect[0], connector["metadata"]["name"])
        if key in self.not_sent:
            return
        try:
            self.reconcile(connect, connector)
        except RuntimeStartError as exc:
            if not self.keep_going:
                raise
            self.refused[key] = str(exc).splitlines()[0]
            self.connectors.pop(key, None)

    def reconcile(self, connect: tuple[str, str], connector: dict[str, Any], settle: float = 60) -> None:
        """Reconcile a KafkaConnector on its worker as the operator does
        (AbstractConnectOperator.maybeCreateOrUpdateConnector): GET its config; none, it is
        created; the config PUT only when it differs from what the worker returns
        (operator.needs_reconfiguring: a changed value behind a `${cfmap:...}` reference alone is
        no difference); then the connector brought to the spec's state (updateState).

        A new connector is created as the release creates it: from 1.2.0 in its state
        (Worker.create_connector_in_state); before, started by the config's PUT, then stopped or
        paused once it reads RUNNING. Where the stand-in differs: it waits, up to `settle`
        seconds (none in the periodic reconciliation), for a state updateState acts on, where the
        operator would act on its next reconciliation (a connector still UNASSIGNED runs on until then; a stopped source
        connector of the program's render copies nothing meanwhile, connectors.source_config)."""
        if connect not in self.workers:
            raise RuntimeStartError(f"KafkaConnector {connector['metadata']['name']} names KafkaConnect {connect}, "
                                    "which the render does not hold")
        operator.check_connector_resources(self.connects[connect])  # started with its worker
        name, config, state = operator.connector_requests(self.release, connector)
        self.connectors[(connect[0], name)] = (connect, connector)
        worker = self.workers[connect]
        current = worker.connector_config(name)
        if current is None and self.release.creates_connectors_in_state:
            worker.create_connector_in_state(name, config, state)
            self.config_puts.append((connect[0], name))
            return
        if current is None or operator.needs_reconfiguring(name, config, current):
            # Before 1.2.0 a new connector is created by the config's PUT alone, which starts it
            # (createOrUpdateConnector); its state follows once its status reads (updateState).
            worker.put_connector(name, config)
            self.config_puts.append((connect[0], name))
        change = operator.state_change(self.release, self._settled_state(worker, name, settle), state)
        if change is not None:
            worker.request("PUT", f"/connectors/{name}/{change}")

    @staticmethod
    def _settled_state(worker: Worker, name: str, settle: float = 60) -> str | None:
        """The connector's state once it is one updateState acts on (or the last seen)."""
        deadline = time.monotonic() + settle
        while True:
            try:
                state: str | None = worker.status(name)["connector"]["state"]
            except RuntimeStartError:
                state = None  # no status yet
            if state in operator.SETTLED_STATES or time.monotonic() > deadline:
                return state
            time.sleep(0.5)

    def wait_running(self, timeout: float = 180) -> dict[str, dict[str, Any]]:
        """Every connector whose spec says running: RUNNING with every task."""
        out = {}
        for (namespace, name), (connect, connector) in sorted(self.connectors.items()):
            if connector["spec"].get("state", "running") == "running":
                try:
                    out[name] = self.workers[connect].wait_running(name, timeout, operator.min_tasks(connector["spec"]))
                except RuntimeStartError as exc:
                    if not self.keep_going:
                        raise
                    self.refused[(namespace, name)] = str(exc).splitlines()[0]
        return out

    def stop(self) -> None:
        self.kubelet.stop()
        self._stop_reconciling.set()
        if self._reconciler is not None:
            self._reconciler.join(90)
        # The workers first, all at once, so that none spends its shutdown retrying a broker gone.
        stop_all([w.process for w in [*self.workers.values(), *(w for ws in self.pods.values() for w in ws)]])
        # Every broker of every cluster (a cluster of three has three), not its first alone.
        stop_all([p for kafka in self.clusters.values() for p in kafka.processes])
        for link in self.distances.values():
            link.stop()
        if self.links is not None:
            self.links.stop()
        self.clients.close()
        self.network.close()

