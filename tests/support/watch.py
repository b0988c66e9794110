"""The operator stand-in as a controller: it watches a Kubernetes API server for the
KafkaConnects and KafkaConnectors Pulumi created there, runs them on a rehearsal's Connect
workers, and reports on each object's `status` what the worker's REST API says, as Strimzi's
cluster operator does. Nothing else in the project writes a custom resource's status.

Each pass (about one a second; the operator watches, this polls):

- a new KafkaConnect: its namespace's Secrets and ConfigMaps are read from the server and a
  worker is started for it (`Rehearsal.start_worker`: the pod the release's operator would
  start); a changed one (`metadata.generation`) has its worker rolled and its connectors
  reconciled again; a deleted one has its worker stopped (the pods' owner is gone);
- a new or changed KafkaConnector: reconciled on its KafkaConnect's worker (`Rehearsal.send`:
  the requests the operator sends; its config is PUT only when it differs from what
  `GET /connectors/<name>/config` returns, as Strimzi's needsReconfiguring decides, so a changed
  ConfigMap value alone reaches no running connector); a deleted one is deleted from the worker
  (`DELETE /connectors/<name>`), as the operator does; an object with a `deletionTimestamp` is
  deleted already;
- every status written through the status subresource (`PUT .../status`, field manager
  FIELD_MANAGER), only when it changed (Strimzi's `StatusDiff`, timestamps aside), with
  `observedGeneration` = the object's `metadata.generation`:
  - KafkaConnect: `Ready` True once the worker's REST API answers `GET /`, with `url` (the
    `<name>-connect-api` Service's, `KafkaConnectResources.url`), `connectorPlugins`
    (`GET /connector-plugins`) and `replicas`; NotReady with the failure otherwise;
  - KafkaConnector: the condition `GET /connectors/<name>/status` gives (connector_condition:
    Strimzi's `Ready`, or its `NotReady` when the connector or a task FAILED; the STRICT
    reading where a test asks for it); `connectorStatus` (the REST answer as is), `tasksMax`
    (the spec's, else the number of tasks: `getActualTaskCount`) and `topics` (sorted, from
    `GET /connectors/<name>/topics`).

By default (STRIMZI) a KafkaConnector's condition is Strimzi's: Ready unless the connector or a
task is FAILED, and then Strimzi's `NotReady` condition with its message (connector_condition).
A test may ask for the STRICT reading instead (NotReady until the worker reports every task
running), and says why.
pulumi-kubernetes' `condition=Ready` (provider/pkg/await/condition/kubectl.go) ignores a Ready
condition whose `observedGeneration` (the condition's, else the status's) is older than the
object's generation, so a status of an earlier generation never ends a wait.
"""

from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from infra.core import names
from infra.tools.rehearsal.credentials import secret_data
from infra.tools.rehearsal.kubeapi import ApiError, Client
from infra.tools.rehearsal.operator import REST_PORT, OperatorRefusal
from infra.tools.rehearsal.process import RuntimeStartError
from infra.tools.rehearsal.run import Rehearsal

JSON = dict[str, Any]
Key = tuple[str, str]              # (namespace, name)
ObjectKey = tuple[str, str, str]   # (kind, namespace, name)

FIELD_MANAGER = "strimzi-cluster-operator-stand-in"
# How the provider marks what it created: server-side apply (its default) names a field manager
# `pulumi-kubernetes-<random>`; client-side apply sets the managed-by label.
PULUMI_MANAGER_PREFIX = "pulumi-kubernetes"
MANAGED_BY = ("app.kubernetes.io/managed-by", "pulumi")
RETRY_SECONDS = 10.0               # before a failed worker start or send is tried again
REST_FAILURES = (RuntimeStartError, OSError, ValueError)  # urllib's URLError is an OSError


def created_by_pulumi(obj: JSON) -> bool:
    meta = obj["metadata"]
    if (meta.get("labels") or {}).get(MANAGED_BY[0]) == MANAGED_BY[1]:
        return True
    return any(str(e.get("manager", "")).startswith(PULUMI_MANAGER_PREFIX) for e in meta.get("managedFields") or [])


def now_iso() -> str:
    """Condition timestamps as the CRDs describe them ('yyyy-MM-ddTHH:mm:ssZ', UTC)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def ready(is_ready: bool, reason: str | None = None, message: str | None = None) -> JSON:
    """The condition Strimzi writes, without its timestamp: `Ready` True (no reason or message),
    or, for any failure, `NotReady` True with the exception's class as reason and its message
    (StatusUtils.setStatusConditionAndObservedGeneration, buildConditionFromException: Strimzi
    never writes Ready False)."""
    if is_ready:
        return {"type": "Ready", "status": "True"}
    return {"type": "NotReady", "status": "True", "reason": reason or "Throwable", "message": message or ""}


def not_ready(message: str) -> JSON:
    """Strimzi's condition for a failed connector or task: its Future failed with a Throwable."""
    return ready(False, "Throwable", message)


STRIMZI, STRICT = "strimzi", "strict"


def connector_condition(rest: JSON, wanted: str = "RUNNING", mode: str = STRIMZI) -> JSON:
    """The Ready condition a `GET /connectors/<name>/status` answer gives.

    STRIMZI (the default, what production reports): Ready unless the connector or a task is
    FAILED; an UNASSIGNED or RESTARTING connector, or one whose tasks have not started, is Ready
    (AbstractConnectOperator.updateConnectorStatusAndConditions, 0.43.0 to 1.2.0: a failure is the
    connector or a task in state FAILED). A failure is Strimzi's one condition: `NotReady` True,
    reason `Throwable` (the failed Future's Throwable, StatusUtils.buildConditionFromException),
    and its message, the connector's if it failed, else the failed tasks' ids. STRICT: Ready only
    when the connector and every task are in the `wanted` state, NotReady with the states
    otherwise; used only where a test says why."""
    connector, tasks = rest["connector"], rest.get("tasks", [])
    if mode == STRIMZI:
        if connector["state"] == "FAILED":
            return not_ready("Connector has failed, see connectorStatus for more details.")
        failed_ids = [str(t["id"]) for t in tasks if t["state"] == "FAILED"]
        if failed_ids:
            return not_ready(f"The following tasks have failed: {', '.join(failed_ids)}, see connectorStatus for "
                             "more details.")
        return ready(True)
    states = ", ".join(f"task {t['id']} {t['state']}" for t in tasks) or "no tasks"
    message = f"connector {connector['state']}; {states}"
    traced = [t for t in [connector, *tasks] if t["state"] == "FAILED" and t.get("trace")]
    if traced:
        message += f"; {traced[0]['trace'].strip().splitlines()[0]}"
    if connector["state"] != wanted:
        return ready(False, connector["state"], message)
    off = [t for t in tasks if t["state"] != wanted]
    if off:
        return ready(False, off[0]["state"], message)
    return ready(True)


def without_times(status: JSON | None) -> JSON:
    if not status:
        return {}
    return {**status, "conditions": [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                                     for c in status.get("conditions", [])]}


@dataclass
class Write:
    """A status the server accepted."""
    at: float        # time.monotonic() just before the PUT was sent
    kind: str
    namespace: str
    name: str
    generation: int
    condition: JSON  # its Ready or NotReady condition, as written
    tasks: int       # how many tasks its connectorStatus lists (0 for a KafkaConnect)


@dataclass
class Reconciler:
    rehearsal: Rehearsal
    client: Client
    interval: float = 1.0
    started: dict[Key, int] = field(default_factory=dict)                 # KafkaConnect -> generation
    plugins: dict[Key, list[JSON]] = field(default_factory=dict)          # KafkaConnect -> connector plugins
    sent: dict[Key, tuple[int, Key]] = field(default_factory=dict)        # KafkaConnector -> (generation, connect)
    retry_at: dict[ObjectKey, float] = field(default_factory=dict)
    last: dict[ObjectKey, JSON] = field(default_factory=dict)             # the status last written, as stored
    writes: list[Write] = field(default_factory=list)
    ready_since: dict[ObjectKey, float] = field(default_factory=dict)     # before the PUT that made it Ready
    running_at: dict[Key, float] = field(default_factory=dict)            # first seen RUNNING by Connect, per connector
    errors: list[str] = field(default_factory=list)
    workers_started: int = 0
    ready_mode: str = STRIMZI                                              # connector_condition's
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    # ------------------------------------------------------------------ the loop

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="operator-stand-in", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 300) -> None:
        """After the pass under way (a worker may be starting)."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self.errors.append(f"the reconciler did not stop within {timeout:.0f} s")
        self._thread = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                self.reconcile()
            except Exception:  # noqa: BLE001 - kept for the test to report; the loop goes on
                self.errors.append(traceback.format_exc())
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - began)))

    def reconcile(self) -> None:
        """One pass over what the server holds."""
        connects = self._list("KafkaConnect")
        connectors = self._list("KafkaConnector")
        for obj in connects:
            self._connect(obj)
        self._forget_connects({_key(o) for o in connects})
        for obj in connectors:
            self._connector(obj)
        self._forget_connectors({_key(o) for o in connectors})

    # ------------------------------------------------------------------ the server

    def _list(self, kind: str) -> list[JSON]:
        res = self.client.resource(self.rehearsal.release.api_version, kind)
        if res is None:
            self.client.forget()  # not served yet: discovery is asked again next pass
            return []
        status, body = self.client.request("GET", f"{res.path}/{res.plural}")
        if status != 200:
            raise ApiError(status, body, f"list {kind}")
        # One being deleted is gone for the operator (Pulumi deletes in the foreground: the
        # object stays, with a deletionTimestamp and a new generation, until its dependents go).
        return sorted((o for o in body.get("items", []) if created_by_pulumi(o)
                       and not o["metadata"].get("deletionTimestamp")), key=_key)

    def _namespace(self, namespace: str) -> tuple[dict[str, dict[str, bytes]], dict[str, dict[str, str]]]:
        found = []
        for plural in ("secrets", "configmaps"):
            status, body = self.client.request("GET", f"/api/v1/namespaces/{namespace}/{plural}")
            if status != 200:
                raise ApiError(status, body, f"list {plural} in {namespace}")
            found.append(body.get("items", []))
        return ({s["metadata"]["name"]: secret_data(s) for s in found[0]},
                {c["metadata"]["name"]: c.get("data") or {} for c in found[1]})

    def _write(self, obj: JSON, status: JSON) -> None:
        """PUT the status when it differs from the stored one (timestamps aside); a Ready
        condition keeps its lastTransitionTime while its status stays."""
        meta = obj["metadata"]
        key = (obj["kind"], meta["namespace"], meta["name"])
        current = obj.get("status") or {}
        if without_times(current) == without_times(status):
            return
        before = {c["type"]: c for c in current.get("conditions", [])}
        for c in status["conditions"]:
            kept = before.get(c["type"])
            c["lastTransitionTime"] = (kept["lastTransitionTime"] if kept and kept.get("status") == c["status"]
                                       and kept.get("lastTransitionTime") else now_iso())
        res = self.client.resource(obj["apiVersion"], obj["kind"])
        assert res is not None
        path = f"{res.path}/namespaces/{meta['namespace']}/{res.plural}/{meta['name']}/status"
        at = time.monotonic()
        code, answer = self.client.request("PUT", path, {**obj, "status": status}, {"fieldManager": FIELD_MANAGER})
        if code in (404, 409):
            return  # deleted, or changed since listed: the next pass sees it anew
        if code != 200:
            raise ApiError(code, answer, f"status of {obj['kind']} {meta['namespace']}/{meta['name']}")
        stored = answer.get("status") or {}
        self.last[key] = stored
        # Strimzi writes either a Ready or a NotReady condition (not both).
        condition = next(c for c in stored.get("conditions", []) if c["type"] in ("Ready", "NotReady"))
        tasks = len((stored.get("connectorStatus") or {}).get("tasks", []))
        self.writes.append(Write(at, obj["kind"], meta["namespace"], meta["name"], meta["generation"], condition, tasks))
        if condition["type"] == "Ready" and condition["status"] == "True":
            self.ready_since.setdefault(key, at)
        else:
            self.ready_since.pop(key, None)

    # ------------------------------------------------------------------ KafkaConnect

    def _connect(self, obj: JSON) -> None:
        key, generation = _key(obj), obj["metadata"]["generation"]
        workers = self.rehearsal.workers
        if key in self.started and self.started[key] != generation:
            # A changed spec: the operator rolls the pods; every connector is sent again.
            self._stop_worker(key)
            self.sent = {k: v for k, v in self.sent.items() if v[1] != key}
        if key not in self.started:
            if time.monotonic() < self.retry_at.get(("KafkaConnect", *key), 0.0):
                return
            try:
                secrets, configmaps = self._namespace(key[0])
                self.workers_started += 1
                worker = self.rehearsal.start_worker(obj, secrets, configmaps)
                self.plugins[key] = [{"class": p["class"], "type": p["type"], "version": p["version"]}
                                     for p in worker.get("/connector-plugins")]
            except (OperatorRefusal, KeyError, ApiError, *REST_FAILURES) as exc:
                self._stop_worker(key)
                self.retry_at[("KafkaConnect", *key)] = time.monotonic() + RETRY_SECONDS
                self._write(obj, self._connect_status(obj, ready(False, type(exc).__name__, str(exc)[:2000])))
                return
            self.started[key] = generation
        try:
            workers[key].get("/")
            condition = ready(True)
        except REST_FAILURES as exc:
            condition = ready(False, "ConnectRestApiUnavailable", str(exc)[:2000])
        self._write(obj, self._connect_status(obj, condition))

    def _connect_status(self, obj: JSON, condition: JSON) -> JSON:
        meta, key = obj["metadata"], _key(obj)
        status: JSON = {"conditions": [condition], "observedGeneration": meta["generation"],
                        "replicas": 1 if key in self.rehearsal.workers else 0}
        if key in self.rehearsal.workers:
            service = f"{names.connect_component(meta['name'])}-api"
            status["url"] = f"http://{service}.{meta['namespace']}.svc:{REST_PORT}"
            status["connectorPlugins"] = self.plugins.get(key, [])
        return status

    def _stop_worker(self, key: Key) -> None:
        worker = self.rehearsal.workers.pop(key, None)
        if worker is not None:
            worker.stop()
        self.started.pop(key, None)
        self.plugins.pop(key, None)

    def _forget_connects(self, present: set[Key]) -> None:
        for key in [k for k in self.started if k not in present]:
            self._stop_worker(key)
            self.last.pop(("KafkaConnect", *key), None)

    # ------------------------------------------------------------------ KafkaConnector

    def _connector(self, obj: JSON) -> None:
        meta, spec = obj["metadata"], obj["spec"]
        key, generation = _key(obj), meta["generation"]
        connect = (meta["namespace"], (meta.get("labels") or {}).get(names.CLUSTER_LABEL, ""))
        worker = self.rehearsal.workers.get(connect) if connect in self.started else None
        if worker is None:
            self._write(obj, self._connector_status(obj, ready(False, "NoConnectCluster",
                        f"KafkaConnect {connect[0]}/{connect[1]} has no running worker")))
            return
        if self.sent.get(key) != (generation, connect):
            if time.monotonic() < self.retry_at.get(("KafkaConnector", *key), 0.0):
                return
            try:
                self.rehearsal.send(connect, obj)
            except OperatorRefusal as exc:  # KafkaConnectAssemblyOperator.reconcileConnector
                self._write(obj, self._connector_status(obj, ready(False, "NoSuchResourceException", str(exc))))
                return
            except REST_FAILURES as exc:
                self.retry_at[("KafkaConnector", *key)] = time.monotonic() + RETRY_SECONDS
                self._write(obj, self._connector_status(obj, ready(False, "ConnectRestApiError", str(exc)[:2000])))
                return
            self.sent[key] = (generation, connect)
        try:
            rest = worker.status(meta["name"])
        except REST_FAILURES as exc:
            self._write(obj, self._connector_status(obj, ready(False, "ConnectRestApiError", str(exc)[:2000])))
            return
        wanted = str(spec.get("state", "running")).upper()
        condition = connector_condition(rest, wanted, self.ready_mode)
        if rest["connector"]["state"] == "RUNNING" and wanted == "RUNNING":
            self.running_at.setdefault(key, time.monotonic())
        else:
            self.running_at.pop(key, None)
        try:
            topics = sorted(worker.get(f"/connectors/{meta['name']}/topics")[meta["name"]]["topics"])
        except (*REST_FAILURES, KeyError, TypeError):
            topics = []
        self._write(obj, self._connector_status(obj, condition, rest, topics))

    @staticmethod
    def _connector_status(obj: JSON, condition: JSON, rest: JSON | None = None,
                          topics: list[str] | None = None) -> JSON:
        spec = obj["spec"]
        status: JSON = {"conditions": [condition], "observedGeneration": obj["metadata"]["generation"]}
        if rest is not None:
            status["connectorStatus"] = rest
            status["tasksMax"] = spec["tasksMax"] if "tasksMax" in spec else len(rest.get("tasks", []))
            status["topics"] = topics or []
        return status

    def _forget_connectors(self, present: set[Key]) -> None:
        for key in [k for k in self.sent if k not in present]:
            _, connect = self.sent.pop(key)
            self.running_at.pop(key, None)
            self.last.pop(("KafkaConnector", *key), None)
            self.rehearsal.connectors.pop(key, None)
            worker = self.rehearsal.workers.get(connect)
            if worker is not None:
                try:
                    worker.request("DELETE", f"/connectors/{key[1]}", ok=(404,))
                except REST_FAILURES as exc:
                    self.errors.append(f"DELETE connector {key[1]}: {exc}")


def _key(obj: JSON) -> Key:
    return obj["metadata"]["namespace"], obj["metadata"]["name"]
