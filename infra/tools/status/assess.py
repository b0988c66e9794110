"""What `kafka-replication status` concludes from the objects it read: pure, no I/O.

Its input is the stack outputs (which objects the stack owns, contract/outputs.py) and, for each
object, what the API server returned: the KafkaConnect and each KafkaConnector with the status
the operator writes (Strimzi's KafkaConnectorStatus carries `connectorStatus`, the Connect REST
API's `GET /connectors/<name>/status` answer as is), and the audit's CronJob with its Jobs.

A flow is
- down when nothing of it replicates: a Connect cluster of it missing or not Ready, or no source
  connector copying (RUNNING with a RUNNING task, or RUNNING with no task when it has no topic
  to copy);
- degraded when it replicates short of what the stack asks: a connector or task not RUNNING
  (failed, paused or stopped, even when its spec asks for it: nothing of it copies), an object
  missing, or one the operator has not reconciled at its generation yet;
- unknown when an object could not be read (forbidden, the API server unreachable);
- healthy otherwise.
An audit is degraded when its newest finished run failed (findings, or an error) or its CronJob
is missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping

from contract.outputs import Flow, StackOutputs

JSON = dict[str, Any]
TRACE_CHARACTERS = 300  # a trace's first line is shown up to this length
NOT_READ = "not read: "


class Health(str, Enum):
    healthy = "healthy"
    degraded = "degraded"
    unknown = "unknown"
    down = "down"

    @property
    def rank(self) -> int:
        return list(Health).index(self)


def worst(healths: list[Health]) -> Health:
    return max(healths, key=lambda h: h.rank, default=Health.healthy)


class Unreadable(str):
    """What a read that failed says instead of an object (forbidden, unreachable)."""


# What the reader hands over per object: the object, None when the server has none, or why it
# could not be read.
Read = JSON | None | Unreadable


@dataclass(frozen=True)
class Task:
    id: int
    state: str
    worker: str | None
    trace: str | None  # its first line


@dataclass(frozen=True)
class Connector:
    name: str
    kind: str                 # source, checkpoint or heartbeat
    namespace: str
    wanted: str | None        # spec.state: running, paused or stopped (None: not read)
    state: str                # Connect's connector state, or MISSING / UNKNOWN / NOT REPORTED
    worker: str | None
    trace: str | None
    tasks: tuple[Task, ...]
    ready: bool | None        # the operator's Ready (None: no condition yet)
    reconciled: bool          # the status is of the object's current generation
    message: str | None       # the operator's NotReady / Ready=False message
    problems: tuple[str, ...]

    @property
    def copying(self) -> bool:
        running = [t for t in self.tasks if t.state == "RUNNING"]
        return self.state == "RUNNING" and (bool(running) or not self.tasks)


@dataclass(frozen=True)
class Connect:
    name: str
    namespace: str
    ready: bool | None
    replicas: int | None
    generation: int | None
    observed: int | None
    message: str | None
    problems: tuple[str, ...]


@dataclass(frozen=True)
class FlowStatus:
    name: str
    source: str
    target: str
    kubernetes_cluster: str | None
    health: Health
    connects: tuple[Connect, ...]
    connectors: tuple[Connector, ...]
    problems: tuple[str, ...]


@dataclass(frozen=True)
class AuditStatus:
    kubernetes_cluster: str | None
    namespace: str
    cron_job: str
    health: Health
    schedule: str | None
    suspended: bool | None
    last_schedule: str | None
    last_successful: str | None
    last_run: str | None        # the newest Job's name
    last_result: str | None     # succeeded, failed or running
    last_finished: str | None
    last_message: str | None    # the failed Job's condition message
    problems: tuple[str, ...]


@dataclass(frozen=True)
class Report:
    operator: str
    flows: tuple[FlowStatus, ...]
    audits: tuple[AuditStatus, ...]
    health: Health = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "health", worst([f.health for f in self.flows] + [a.health for a in self.audits]))


def first_line(trace: Any) -> str | None:
    if not isinstance(trace, str):
        return None
    line = next((ln.strip() for ln in trace.splitlines() if ln.strip()), "")
    return line if len(line) <= TRACE_CHARACTERS else line[:TRACE_CHARACTERS - 3] + "..."


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _conditions(status: Mapping[str, Any]) -> tuple[bool | None, str | None]:
    """Ready as Strimzi writes it: a `Ready` condition True, or a `NotReady` one True (with the
    failure's message); the stand-in and older objects write `Ready` False instead."""
    ready, message = None, None
    for c in status.get("conditions") or []:
        c = _mapping(c)
        if c.get("type") == "Ready":
            ready = c.get("status") == "True"
            message = message if ready else (c.get("message") or c.get("reason"))
        elif c.get("type") == "NotReady" and c.get("status") == "True":
            ready, message = False, c.get("message") or c.get("reason")
    return ready, first_line(message) if message else None


def _reconciled(obj: Mapping[str, Any]) -> tuple[int | None, int | None, bool]:
    generation = _mapping(obj.get("metadata")).get("generation")
    observed = _mapping(obj.get("status")).get("observedGeneration")
    ok = isinstance(generation, int) and isinstance(observed, int) and observed >= generation
    return (generation if isinstance(generation, int) else None, observed if isinstance(observed, int) else None, ok)


def connect_status(namespace: str, name: str, read: Read) -> Connect:
    if isinstance(read, Unreadable):
        return Connect(name, namespace, None, None, None, None, None, (f"{NOT_READ}{read}",))
    if read is None:
        return Connect(name, namespace, None, None, None, None, None,
                       (f"KafkaConnect {namespace}/{name} is missing from the cluster",))
    status = _mapping(read.get("status"))
    ready, message = _conditions(status)
    generation, observed, reconciled = _reconciled(read)
    replicas = status.get("replicas") if isinstance(status.get("replicas"), int) else None
    problems = []
    if ready is not True:
        problems.append(f"KafkaConnect {namespace}/{name} is not Ready" + (f": {message}" if message else ""))
    if ready is True and not reconciled:
        problems.append(f"KafkaConnect {namespace}/{name}: generation {generation} not reconciled yet "
                        f"(observed {observed})")
    return Connect(name, namespace, ready, replicas, generation, observed, message, tuple(problems))


def connector_status(namespace: str, name: str, kind: str, read: Read) -> Connector:
    if isinstance(read, Unreadable):
        return Connector(name, kind, namespace, None, "UNKNOWN", None, None, (), None, False, None,
                         (f"{NOT_READ}{read}",))
    if read is None:
        return Connector(name, kind, namespace, None, "MISSING", None, None, (), None, False, None,
                         (f"KafkaConnector {namespace}/{name} is missing from the cluster",))
    spec, status = _mapping(read.get("spec")), _mapping(read.get("status"))
    wanted = spec.get("state") if spec.get("state") in ("running", "paused", "stopped") else (
        "paused" if spec.get("pause") is True else "running")
    rest = _mapping(status.get("connectorStatus"))
    own = _mapping(rest.get("connector"))
    state = str(own["state"]) if isinstance(own.get("state"), str) else "NOT REPORTED"
    tasks = tuple(sorted((Task(t["id"] if isinstance(t.get("id"), int) else -1, str(t.get("state", "UNKNOWN")),
                               t.get("worker_id") if isinstance(t.get("worker_id"), str) else None,
                               first_line(t.get("trace")))
                          for t in map(_mapping, rest.get("tasks") or [])), key=lambda t: t.id))
    ready, message = _conditions(status)
    _, _, reconciled = _reconciled(read)
    problems = []
    asked = f" (its spec asks for it: state: {wanted})" if wanted != "running" else ""
    if state == "NOT REPORTED":
        problems.append(f"{name}: the operator reports no Connect status yet")
    elif state != "RUNNING":
        problems.append(f"{name} is {state}{asked}" + (f": {first_line(own.get('trace'))}" if own.get("trace") else ""))
    for t in tasks:
        if t.state != "RUNNING":
            problems.append(f"{name} task {t.id} is {t.state}" + (f": {t.trace}" if t.trace else ""))
    if not reconciled and state != "NOT REPORTED":
        problems.append(f"{name}: its current generation is not reconciled yet")
    if ready is False and not problems:
        problems.append(f"{name} is not Ready" + (f": {message}" if message else ""))
    return Connector(name, kind, namespace, wanted, state, own.get("worker_id") if isinstance(own.get("worker_id"), str)
                     else None, first_line(own.get("trace")), tasks, ready, reconciled, message, tuple(problems))


def flow_status(flow: Flow, objects: Mapping[tuple[str, str, str], Read]) -> FlowStatus:
    connects, connectors = [], []
    for cluster in flow.connect_clusters:
        connects.append(connect_status(cluster.namespace, cluster.name,
                                       objects.get(("KafkaConnect", cluster.namespace, cluster.name))))
        for kind, names in (("source", cluster.source_connectors), ("checkpoint", cluster.checkpoint_connectors),
                            ("heartbeat", cluster.heartbeat_connectors)):
            connectors += [connector_status(cluster.namespace, n, kind,
                                            objects.get(("KafkaConnector", cluster.namespace, n))) for n in names]
    problems = tuple(p for k in connects for p in k.problems) + tuple(p for c in connectors for p in c.problems)
    sources = [c for c in connectors if c.kind == "source"]
    unread = any(p.startswith(NOT_READ) for p in problems)
    connect_down = any(c.ready is not True and not c.problems[0].startswith(NOT_READ) for c in connects if c.problems)
    sources_down = bool(sources) and not any(c.copying or c.state == "UNKNOWN" for c in sources)
    if connect_down or sources_down:
        health = Health.down
    elif unread:
        health = Health.unknown
    elif problems:
        health = Health.degraded
    else:
        health = Health.healthy
    return FlowStatus(flow.name, flow.source_alias, flow.target_alias, flow.kubernetes_cluster, health,
                      tuple(connects), tuple(connectors), problems)


def _job_result(job: Mapping[str, Any]) -> tuple[str, str | None, str | None]:
    status = _mapping(job.get("status"))
    for c in map(_mapping, status.get("conditions") or []):
        if c.get("status") != "True":
            continue
        if c.get("type") == "Complete":
            return "succeeded", status.get("completionTime") or c.get("lastTransitionTime"), None
        if c.get("type") == "Failed":
            return "failed", c.get("lastTransitionTime"), first_line(c.get("message") or c.get("reason"))
    return "running", None, None


def audit_status(cluster: str | None, namespace: str, cron_job: str, read: Read,
                 jobs: list[JSON] | Unreadable) -> AuditStatus:
    if isinstance(read, Unreadable) or isinstance(jobs, Unreadable):
        why = read if isinstance(read, Unreadable) else jobs
        return AuditStatus(cluster, namespace, cron_job, Health.unknown, None, None, None, None, None, None, None,
                           None, (f"{NOT_READ}{why}",))
    if read is None:
        return AuditStatus(cluster, namespace, cron_job, Health.degraded, None, None, None, None, None, None, None,
                           None, (f"CronJob {namespace}/{cron_job} is missing from the cluster",))
    spec, status = _mapping(read.get("spec")), _mapping(read.get("status"))
    newest = max(jobs, key=lambda j: str(_mapping(j.get("metadata")).get("creationTimestamp", "")), default=None)
    run = result = finished = message = None
    problems = []
    if newest is not None:
        run = _mapping(newest.get("metadata")).get("name")
        result, finished, message = _job_result(newest)
        # A run still going says nothing yet: the one before it is the last result.
        done = [j for j in jobs if _job_result(j)[0] != "running"]
        if result == "running" and done:
            last = max(done, key=lambda j: str(_mapping(j.get("metadata")).get("creationTimestamp", "")))
            run, (result, finished, message) = _mapping(last.get("metadata")).get("name"), _job_result(last)
    if result == "failed":
        problems.append(f"audit run {run} failed" + (f": {message}" if message else "") +
                        " (exit 1: findings in its report; another exit: the audit could not run)")
    suspended = spec.get("suspend") if isinstance(spec.get("suspend"), bool) else None
    return AuditStatus(cluster, namespace, cron_job, Health.degraded if problems else Health.healthy,
                       spec.get("schedule") if isinstance(spec.get("schedule"), str) else None, suspended,
                       status.get("lastScheduleTime"), status.get("lastSuccessfulTime"), run, result, finished,
                       message, tuple(problems))


def assess(outputs: StackOutputs, flows: list[str], objects: Mapping[tuple[str, str, str], Read],
           audits: Mapping[str | None, tuple[Read, list[JSON] | Unreadable]]) -> Report:
    """The report on the chosen flows (in the outputs' order) and the audits of their Kubernetes
    clusters; `objects` by (kind, namespace, name), `audits` by Kubernetes cluster."""
    chosen = [outputs.flows[name] for name in outputs.flows if name in flows]
    audit_reports = []
    for cluster, (namespace, cron_job) in sorted((outputs.audit_cron_jobs or {}).items(), key=lambda i: i[0] or ""):
        if cluster in audits:
            read, jobs = audits[cluster]
            audit_reports.append(audit_status(cluster, namespace, cron_job, read, jobs))
    return Report(f"{outputs.operator_flavour} {outputs.operator_version} (Kafka {outputs.kafka_version})",
                  tuple(flow_status(f, objects) for f in chosen), tuple(audit_reports))
