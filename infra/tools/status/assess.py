"""What `kafka-replication status` concludes from the objects it read: pure, no I/O.

Its input is the stack outputs (which objects the stack owns, contract/outputs.py) and, for each
object, what the API server returned: the KafkaConnect and each KafkaConnector with the status
the operator writes (Strimzi's KafkaConnectorStatus carries `connectorStatus`, the Connect REST
API's `GET /connectors/<name>/status` answer as it was at the operator's last reconciliation),
and the audit's CronJob with its Jobs.

A flow is
- down when nothing of it replicates: no source connector copying, where copying is a source
  connector of an existing Connect cluster, not FAILED, PAUSED or STOPPED, with a task that is
  not (or no task at all: no topic matches yet);
- degraded when it replicates short of what the stack asks: a connector or task not RUNNING
  (failed, paused or stopped, even when its spec asks for it: nothing of it copies; unassigned
  or restarting), a Connect cluster not Ready or with no replica, an object missing, one the
  operator has not reconciled at its generation yet, the operator's NotReady;
- unknown when an object could not be read (forbidden, the API server unreachable);
- healthy otherwise.
An audit is degraded when its newest finished run failed (findings, or an error), its CronJob is
missing or suspended, or it has not been scheduled for longer than its schedule allows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Mapping

from contract.lastrun import FlowRun, GroupCheckpoints, LastRun, decode
from contract.outputs import Flow, StackOutputs
from infra.core import cron
from infra.plan.monitoring.alerts import CERTIFICATE_WARNING_DAYS

JSON = dict[str, Any]
TRACE_CHARACTERS = 300  # a trace's first line is shown up to this length
NOT_READ = "not read: "
HALTED = ("FAILED", "PAUSED", "STOPPED")              # Connect's states in which nothing is copied
ABSENT = ("MISSING", "UNKNOWN", "NOT REPORTED")       # ours, when there is no state to read


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
    restarts: int = 0         # Strimzi's autoRestart: restarts since the connector last ran well
    last_restart: str | None = None

    @property
    def copying(self) -> bool:
        """Not halted: RUNNING, or on its way to it (UNASSIGNED in a rebalance, RESTARTING)."""
        if self.state in HALTED or self.state in ABSENT:
            return False
        return not self.tasks or any(t.state not in HALTED for t in self.tasks)


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
    audit: FlowRun | None = None        # the flow in its cluster's last audit (its summary)
    audited_at: str | None = None       # when that run finished (UTC)


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
    summary: LastRun | None = None  # what the last finished run wrote to its termination message


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
    if replicas == 0:
        problems.append(f"KafkaConnect {namespace}/{name} has no replica: none of its connectors runs")
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
        # Strimzi drops connectorStatus when it cannot ask Connect (no replica, the REST API
        # unreachable): its NotReady message says why.
        problems.append(f"{name}: the operator reports no Connect status" + (f": {message}" if message else " yet"))
    elif state != "RUNNING":
        problems.append(f"{name} is {state}{asked}" + (f": {first_line(own.get('trace'))}" if own.get("trace") else ""))
    for t in tasks:
        if t.state != "RUNNING":
            problems.append(f"{name} task {t.id} is {t.state}" + (f": {t.trace}" if t.trace else ""))
    if not reconciled and state != "NOT REPORTED":
        problems.append(f"{name}: its current generation is not reconciled yet")
    if ready is False and message and state != "NOT REPORTED":
        problems.append(f"{name}: the operator reports NotReady: {message}")
    elif ready is False and not problems:
        problems.append(f"{name} is not Ready")
    restart = _mapping(status.get("autoRestart"))
    count: int = restart["count"] if isinstance(restart.get("count"), int) else 0
    last = restart.get("lastRestartTimestamp") if isinstance(restart.get("lastRestartTimestamp"), str) else None
    return Connector(name, kind, namespace, wanted, state, own.get("worker_id") if isinstance(own.get("worker_id"), str)
                     else None, first_line(own.get("trace")), tasks, ready, reconciled, message, tuple(problems),
                     count, last)


def utc_text(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


LAG_SHOWN = 5  # topics named in a lag problem, the most lagging first


def _audited(flow: str, summary: LastRun | None) -> tuple[FlowRun | None, str | None, list[str]]:
    """The flow in the last audit's summary, and what it found."""
    run = (summary.flows or {}).get(flow) if summary is not None else None
    if summary is None or run is None:
        return None, None, []
    at = utc_text(summary.finished_at)
    if run.status not in ("findings", "error"):
        return run, at, []
    lagging = sorted(((n, t) for t, n in (run.lag or {}).items() if n > 0), key=lambda i: (-i[0], i[1]))
    lag = "; lag " + ", ".join(f"{t} {n}" for n, t in lagging[:LAG_SHOWN]) + (
        f" and {len(lagging) - LAG_SHOWN} more topic(s)" if len(lagging) > LAG_SHOWN else "") if lagging else (
        f"; lag {run.lag_total} record(s)" if run.lag_total else "")
    found = [f"{run.findings} partition(s) with findings"] if run.findings or not run.stale_groups else []
    if run.stale_groups:
        found.append(f"stale checkpoints of {run.stale_groups} group(s)" + (": " + ", ".join(
            f"{g} ({c.age_seconds} s old, {c.behind} record(s) behind)" for g, c in stale_groups(run)[:LAG_SHOWN])
            if run.checkpoints else ""))
    what = "; ".join(found) if run.status == "findings" else "it could not audit the flow"
    return run, at, [f"the last audit ({at}): {what}{lag} (its report: docs/audit.md)"]


def stale_groups(run: FlowRun) -> list[tuple[str, GroupCheckpoints]]:
    """The stale groups of a flow's last audit, the most records behind first."""
    return sorted(((g, c) for g, c in (run.checkpoints or {}).items() if c.stale), key=lambda i: (-i[1].behind, i[0]))


def flow_status(flow: Flow, objects: Mapping[tuple[str, str, str], Read],
                summary: LastRun | None = None) -> FlowStatus:
    connects, connectors, copying = [], [], []
    for cluster in flow.connect_clusters:
        read = objects.get(("KafkaConnect", cluster.namespace, cluster.name))
        connects.append(connect_status(cluster.namespace, cluster.name, read))
        exists = read is not None  # there, or not read (then not known to be gone)
        for kind, names in (("source", cluster.source_connectors), ("checkpoint", cluster.checkpoint_connectors),
                            ("heartbeat", cluster.heartbeat_connectors)):
            for n in names:
                c = connector_status(cluster.namespace, n, kind, objects.get(("KafkaConnector", cluster.namespace, n)))
                connectors.append(c)
                if kind == "source":
                    # Copying, or not known not to be (not read): only a known halt makes a flow down.
                    copying.append(exists and (c.copying or c.state == "UNKNOWN"))
    audit, audited_at, found = _audited(flow.name, summary)
    problems = tuple(p for k in connects for p in k.problems) + tuple(p for c in connectors for p in c.problems) + \
        tuple(found)
    if copying and not any(copying):
        health = Health.down
    elif any(p.startswith(NOT_READ) for p in problems):
        health = Health.unknown
    elif problems:
        health = Health.degraded
    else:
        health = Health.healthy
    return FlowStatus(flow.name, flow.source_alias, flow.target_alias, flow.kubernetes_cluster, health,
                      tuple(connects), tuple(connectors), problems, audit, audited_at)


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


def _summary(run: Any, pods: list[JSON]) -> LastRun | None:
    """What the run's pod wrote to its termination message (the kubelet keeps it on the pod's
    status), when it is the job's summary (contract/lastrun.py)."""
    for pod in pods:
        labels = _mapping(_mapping(pod.get("metadata")).get("labels"))
        if run is None or run not in (labels.get("batch.kubernetes.io/job-name"), labels.get("job-name")):
            continue
        for container in map(_mapping, _mapping(pod.get("status")).get("containerStatuses") or []):
            found = decode(_mapping(_mapping(container.get("state")).get("terminated")).get("message"))
            if found is not None:
                return found
    return None


def audit_status(cluster: str | None, namespace: str, cron_job: str, read: Read,
                 jobs: list[JSON] | Unreadable, now: datetime | None = None,
                 pods: list[JSON] | Unreadable | None = None) -> AuditStatus:
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
    if suspended:
        problems.append(f"CronJob {namespace}/{cron_job} is suspended: no audit runs")
    schedule = spec.get("schedule") if isinstance(spec.get("schedule"), str) else None
    last_schedule = status.get("lastScheduleTime") if isinstance(status.get("lastScheduleTime"), str) else None
    late = _late(schedule, last_schedule or _mapping(read.get("metadata")).get("creationTimestamp"), now)
    if late and not suspended:
        problems.append(f"CronJob {namespace}/{cron_job} has not been scheduled since "
                        f"{last_schedule or 'it was created'}, more than twice its longest period ({schedule})")
    summary = _summary(run, pods) if result in ("succeeded", "failed") and isinstance(pods, list) else None
    problems += expiring(summary, now)
    if isinstance(pods, Unreadable):
        problems.append(f"{NOT_READ}{pods}")
    health = Health.unknown if isinstance(pods, Unreadable) else Health.degraded if problems else Health.healthy
    return AuditStatus(cluster, namespace, cron_job, health,
                       schedule, suspended, last_schedule, status.get("lastSuccessfulTime"), run, result, finished,
                       message, tuple(problems), summary)


def expiring(summary: LastRun | None, now: datetime | None) -> list[str]:
    """The certificates the last audit read that expire within the alert's warning (or have): the
    stack's copies, which a cluster's operator renewing its CA leaves behind."""
    if summary is None or not summary.certificates or now is None:
        return []
    out = []
    for key, until in sorted(summary.certificates.items(), key=lambda kv: (kv[1], kv[0])):
        alias, _, item = key.partition("/")
        left = until - now.timestamp()
        if left >= CERTIFICATE_WARNING_DAYS * 86400:
            continue
        when = utc_text(until * 1000)
        out.append(f"the stack's {item} of cluster {alias} " + (f"expired at {when}" if left <= 0 else
                   f"expires at {when}, in {int(left // 86400)} day(s)") + ": set the renewed certificate in the stack "
                   "and run pulumi up (docs/operations.md#kafkareplicationcertificateexpiring)")
    return out


def _late(schedule: str | None, since: Any, now: datetime | None) -> bool:
    """No run scheduled for more than twice the schedule's longest period (the controller's
    clock and ours may differ by minutes, a schedule by hours): a CronJob that stopped firing,
    whose finished Jobs `ttlSecondsAfterFinished` has already removed."""
    if now is None or schedule is None or not isinstance(since, str):
        return False
    try:
        longest = cron.longest_period_seconds(schedule)
        began = datetime.fromisoformat(since.replace("Z", "+00:00"))
    except ValueError:
        return False
    return (now - began).total_seconds() > 2 * longest


AuditRead = tuple[Read, "list[JSON] | Unreadable", "list[JSON] | Unreadable"]  # CronJob, its Jobs, their pods


def assess(outputs: StackOutputs, flows: list[str], objects: Mapping[tuple[str, str, str], Read],
           audits: Mapping[str | None, AuditRead], now: datetime | None = None) -> Report:
    """The report on the chosen flows (in the outputs' order) and the audits of their Kubernetes
    clusters; `objects` by (kind, namespace, name), `audits` by Kubernetes cluster; `now` (UTC)
    to judge how long ago the audit last ran. Each flow shows what its cluster's last audit
    found of it."""
    chosen = [outputs.flows[name] for name in outputs.flows if name in flows]
    audit_reports = {}
    for cluster, (namespace, cron_job) in sorted((outputs.audit_cron_jobs or {}).items(), key=lambda i: i[0] or ""):
        if cluster in audits:
            read, jobs, pods = audits[cluster]
            audit_reports[cluster] = audit_status(cluster, namespace, cron_job, read, jobs, now, pods)
    return Report(f"{outputs.operator_flavour} {outputs.operator_version} (Kafka {outputs.kafka_version})",
                  tuple(flow_status(f, objects, audit_reports[f.kubernetes_cluster].summary
                                    if f.kubernetes_cluster in audit_reports else None) for f in chosen),
                  tuple(audit_reports.values()))
