"""The status report as text (for a terminal: one block per flow, the problems first) and as JSON
(for tools; docs/status.md describes its fields)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.tools import lag
from infra.tools.status.assess import AuditStatus, Connector, FlowStatus, Health, Report, utc_text, worst

# The exit code of each health: 0 and 1 as `diff` uses them (nothing wrong / something to look
# at), 2 and 3 stay the CLI's (invalid input, internal error).
EXIT = {Health.healthy: 0, Health.degraded: 1, Health.down: 4, Health.unknown: 5}
CHECKPOINTS_SHOWN = 5  # groups on a flow's checkpoints line; JSON has them all
# The live lag's verdict as a health: past maxLag is something to look at; what could not be read
# is unknown, never caught up.
LIVE_HEALTH = {lag.OK: Health.healthy, lag.FINDINGS: Health.degraded, lag.UNKNOWN: Health.unknown}


@dataclass(frozen=True)
class Live:
    """`--live`: the lag reader's report (spark/lag.py; None when it wrote none) and what it said
    on standard error."""
    report: dict[str, Any] | None
    said: str

    @property
    def error(self) -> str | None:
        """Why no report was read, or None."""
        return None if self.report is not None else self.said or lag.NO_REPORT

    @property
    def health(self) -> Health:
        return Health.unknown if self.report is None else LIVE_HEALTH[lag.exit_code(self.report)]


def health(report: Report, live: Live | None) -> Health:
    """The stack's health: the Kubernetes objects' and, with --live, the lag read now."""
    return report.health if live is None else worst([report.health, live.health])


def _tasks(c: Connector) -> str:
    if not c.tasks:
        return "no task"
    states: dict[str, int] = {}
    for t in c.tasks:
        states[t.state] = states.get(t.state, 0) + 1
    return f"{len(c.tasks)} task{'s' if len(c.tasks) != 1 else ''}: " + ", ".join(
        f"{n} {s}" for s, n in sorted(states.items()))


def _flow_text(f: FlowStatus) -> list[str]:
    where = f" (Kubernetes cluster {f.kubernetes_cluster})" if f.kubernetes_cluster else ""
    lines = [f"flow {f.name}: {f.source} -> {f.target}{where}: {f.health.value.upper()}"]
    for k in f.connects:
        ready = {True: "Ready", False: "not Ready", None: "no Ready condition"}[k.ready]
        if k.generation is None:  # missing, or not read: its problem says which
            ready = "-"
        replicas = f", {k.replicas} replica{'s' if k.replicas != 1 else ''}" if k.replicas is not None else ""
        lines.append(f"  KafkaConnect {k.namespace}/{k.name}: {ready}{replicas}")
    width = max((len(c.name) for c in f.connectors), default=0)
    for c in f.connectors:
        wanted = f" (spec: {c.wanted})" if c.wanted not in (None, "running") else ""
        restarted = (f"; restarted {c.restarts} time{'s' if c.restarts != 1 else ''} by the operator"
                     + (f", last at {c.last_restart}" if c.last_restart else "")) if c.restarts else ""
        lines.append(f"  {c.kind:<10} {c.name:<{width}}  {c.state}{wanted}, {_tasks(c)}{restarted}")
    if f.audit is not None:
        lag = f"lag {f.audit.lag_total} record(s)" + (
            " (" + ", ".join(f"{t} {n}" for t, n in sorted(f.audit.lag.items()) if n) + ")"
            if f.audit.lag and f.audit.lag_total else "")
        lines.append(f"  last audit {f.audited_at}: {f.audit.status}, {lag}")
        if f.audit.checkpoints:
            # The stale groups first, then the most records behind; a few, the rest counted.
            groups = sorted(f.audit.checkpoints.items(), key=lambda i: (not i[1].stale, -i[1].behind, i[0]))
            shown = ", ".join(f"{g} {c.age_seconds} s old, {c.behind} behind" + (" (STALE)" if c.stale else "")
                              for g, c in groups[:CHECKPOINTS_SHOWN])
            more = f" and {len(groups) - CHECKPOINTS_SHOWN} more group(s)" if len(groups) > CHECKPOINTS_SHOWN else ""
            lines.append(f"  checkpoints: {shown}{more}")
    for p in f.problems:
        lines.append(f"    ! {p}")
    return lines


def _audit_text(a: AuditStatus) -> list[str]:
    where = f" (Kubernetes cluster {a.kubernetes_cluster})" if a.kubernetes_cluster else ""
    line = f"audit {a.namespace}/{a.cron_job}{where}: {a.health.value.upper()}"
    if a.last_run:
        line += f"; last run {a.last_run}: {a.last_result}" + (f" at {a.last_finished}" if a.last_finished else "")
    elif a.health is Health.healthy:
        line += "; no run yet" + (f" (schedule {a.schedule})" if a.schedule else "")
    if a.suspended:
        line += "; suspended"
    return [line, *(f"    ! {p}" for p in a.problems)]


def _live_text(live: Live) -> list[str]:
    if live.report is None:
        return ["", f"live lag not read: {live.error}"]
    return ["", *lag.report_lines(live.report, "live lag")[:-1]]


def text(report: Report, live: Live | None = None) -> str:
    lines = [f"operator {report.operator}", ""]
    for f in report.flows:
        lines += _flow_text(f)
    for a in report.audits:
        lines += _audit_text(a)
    if live is not None:
        lines += _live_text(live)
    def counted(what: str, healths: list[Health]) -> str:
        return f"{len(healths)} {what}{'s' if len(healths) != 1 else ''}" + "".join(
            f", {n} {h.value}" for h in Health if (n := healths.count(h)))
    audits = f"; {counted('audit', [a.health for a in report.audits])}" if report.audits else ""
    now = "" if live is None else "; live lag: " + (
        "not read" if live.report is None else lag.verdict(live.report))
    overall = health(report, live)
    lines += ["", f"{overall.value} (exit {EXIT[overall]}): "
              f"{counted('flow', [f.health for f in report.flows])}{audits}{now}"]
    return "\n".join(lines) + "\n"


def as_json(report: Report, live: Live | None = None) -> dict[str, Any]:
    """The report; with --live, `live` (the lag reader's report, spark/lag.py, or None with
    `liveError` saying why) and the health both decide."""
    overall = health(report, live)
    return {**_objects_json(report), "health": overall.value, "exitCode": EXIT[overall],
            **({} if live is None else {"live": live.report, "liveError": live.error})}


def _objects_json(report: Report) -> dict[str, Any]:
    def connector(c: Connector) -> dict[str, Any]:
        return {"name": c.name, "kind": c.kind, "namespace": c.namespace, "spec": c.wanted, "state": c.state,
                "workerId": c.worker, "trace": c.trace, "ready": c.ready, "reconciled": c.reconciled,
                "message": c.message, "restarts": c.restarts, "lastRestart": c.last_restart,
                "tasks": [{"id": t.id, "state": t.state, "workerId": t.worker, "trace": t.trace} for t in c.tasks]}
    return {
        "health": report.health.value,
        "exitCode": EXIT[report.health],
        "operator": report.operator,
        "flows": {f.name: {
            "health": f.health.value, "source": f.source, "target": f.target,
            "kubernetesCluster": f.kubernetes_cluster,
            "connectClusters": [{"name": k.name, "namespace": k.namespace, "ready": k.ready, "replicas": k.replicas,
                                 "generation": k.generation, "observedGeneration": k.observed, "message": k.message}
                                for k in f.connects],
            "connectors": [connector(c) for c in f.connectors],
            "lastAudit": None if f.audit is None else {
                "finishedAt": f.audited_at, "status": f.audit.status, "partitionsWithFindings": f.audit.findings,
                "lagTotal": f.audit.lag_total, "lag": f.audit.lag, "staleCheckpointGroups": f.audit.stale_groups,
                "checkpoints": None if f.audit.checkpoints is None else {
                    g: {"ageSeconds": c.age_seconds, "behindRecords": c.behind, "stale": c.stale}
                    for g, c in sorted(f.audit.checkpoints.items())}},
            "problems": list(f.problems)} for f in report.flows},
        "audits": [{"kubernetesCluster": a.kubernetes_cluster, "namespace": a.namespace, "cronJob": a.cron_job,
                    "health": a.health.value, "schedule": a.schedule, "suspended": a.suspended,
                    "lastScheduleTime": a.last_schedule, "lastSuccessfulTime": a.last_successful,
                    "lastRun": a.last_run, "lastResult": a.last_result, "lastFinished": a.last_finished,
                    "lastMessage": a.last_message,
                    "lastSummary": None if a.summary is None else {
                        "status": a.summary.status, "error": a.summary.error, "truncated": a.summary.truncated,
                        "certificatesExpire": None if a.summary.certificates is None else {
                            key: utc_text(until * 1000) for key, until in sorted(a.summary.certificates.items())}},
                    "problems": list(a.problems)} for a in report.audits],
    }
