"""The audit's last run in a few kilobytes: what the job (spark/audit.py) writes to its container's
termination message and `kafka-replication status` (infra/tools/status) reads back from the
finished pod, so that on-call sees each flow's lag and findings with no access to the report's
volume.

Kubernetes keeps at most MAX_BYTES of a container's termination message
(`/dev/termination-log`, the kubelet's limit); `encode` always fits in it, dropping detail in a
fixed order when it must (per-topic lag first, then per-group checkpoints, then the flows, then
the certificates' expiry) and saying so (`truncated`).
`decode` reads what `encode` wrote and returns None for anything else (a message of another
writer, the log tail Kubernetes puts there when the job crashed), never raising.

No dependencies: the job imports nothing of the program's but the contract.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeGuard

from contract.audit import JOB

VERSION = 1
MAX_BYTES = 4096  # the kubelet's limit of one container's termination message
# finishedAt, epoch milliseconds: a date a reader can print (up to 9999-12-31T23:59:59.999Z, as
# Python's datetime and Java's Instant formatting both can); anything else is not our summary.
MAX_FINISHED_MS = 253_402_300_799_999
KIND = JOB
# Kubernetes' default terminationMessagePath, which the CronJob's container names (infra/plan/
# audit.py) and the job writes (spark/audit.py): the kubelet mounts it into the container and
# keeps what it holds on the pod's status.
TERMINATION_LOG = "/dev/termination-log"


@dataclass(frozen=True)
class GroupCheckpoints:
    age_seconds: int                # the age of the group's newest checkpoint
    behind: int                     # records the group committed on the source past its checkpoints
    stale: bool                     # the audit's finding (spark/checkpoints.py checkpoint_staleness)


@dataclass(frozen=True)
class FlowRun:
    status: str                     # ok, findings, deferred or error
    findings: int                   # partitions with findings
    lag: dict[str, int] | None      # lag in records per source topic (None: dropped to fit)
    lag_total: int
    # Per consumer group (None: not read, the flow runs no checkpoints, or dropped to fit);
    # `stale_groups` is kept whatever is dropped.
    checkpoints: dict[str, GroupCheckpoints] | None = None
    stale_groups: int = 0


@dataclass(frozen=True)
class LastRun:
    status: str                     # ok, findings or error
    finished_at: int                # ms since the epoch
    error: str | None
    flows: dict[str, FlowRun] | None  # None: dropped to fit
    truncated: bool
    # When each certificate item the stack holds for a cluster expires, epoch seconds, by
    # "<alias>/<item>" (caCert, truststore or clientCert; spark/clusters.py certificate_expiries);
    # None: not read (a local run, an older job) or dropped to fit, after the flows.
    certificates: dict[str, int] | None = None


def _flow(flow: dict[str, Any]) -> dict[str, Any]:
    lag: dict[str, int] = {}
    findings = 0
    for topic in flow.get("topics", []):
        parts = topic.get("partitions", [])
        lag[topic["source"]] = sum(p.get("lag") or 0 for p in parts)
        findings += sum(1 for p in parts if p.get("status") == "findings")
    groups = flow.get("checkpoints")
    checkpoints = None if groups is None else {
        g["group"]: {"age": int(g["ageSeconds"]), "behind": g["behindRecords"], "stale": bool(g["findings"])}
        for g in groups}
    return {"status": flow.get("status"), "findings": findings, "lagTotal": sum(lag.values()), "lag": lag,
            "checkpoints": checkpoints, "staleGroups": sum(1 for g in groups or [] if g["findings"])}


def encode(report: dict[str, Any]) -> str:
    """The summary of a report (spark/report.py's shape), at most MAX_BYTES of UTF-8."""
    body: dict[str, Any] = {"kind": KIND, "v": VERSION, "status": report.get("status"),
                            "finishedAt": report.get("finishedAt"),
                            "error": (report.get("error") or None) and str(report["error"])[:500],
                            "flows": {f["name"]: _flow(f) for f in report.get("flows", [])}, "truncated": False,
                            "certificates": {f"{c['cluster']}/{c['item']}": int(c["notAfter"]) // 1000
                                             for c in report.get("certificates") or []} or None}

    def text() -> str:
        return json.dumps(body, sort_keys=True, separators=(",", ":"))
    if len(text().encode()) > MAX_BYTES:
        body["truncated"] = True
        for flow in body["flows"].values():
            flow["lag"] = None
    if len(text().encode()) > MAX_BYTES:
        for flow in body["flows"].values():
            flow["checkpoints"] = None
    if len(text().encode()) > MAX_BYTES:
        body["flows"] = None
    if len(text().encode()) > MAX_BYTES:
        body["certificates"] = None
    return text()


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _checkpoints(value: Any) -> dict[str, GroupCheckpoints] | None:
    """The groups' checkpoints as `encode` wrote them; None when absent; ValueError when malformed."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(value)
    out = {}
    for group, g in value.items():
        if not (isinstance(group, str) and isinstance(g, dict) and _count(g.get("age")) and _count(g.get("behind"))
                and isinstance(g.get("stale"), bool)):
            raise ValueError(g)
        out[group] = GroupCheckpoints(g["age"], g["behind"], g["stale"])
    return out


def decode(text: Any) -> LastRun | None:
    """What `encode` wrote, or None."""
    if not isinstance(text, str) or len(text.encode()) > MAX_BYTES:
        return None
    try:
        body = json.loads(text)
    except ValueError:
        return None
    if not isinstance(body, dict) or body.get("kind") != KIND or body.get("v") != VERSION:
        return None
    status, finished = body.get("status"), body.get("finishedAt")
    if status not in ("ok", "findings", "error") or not isinstance(finished, int) or isinstance(finished, bool) \
            or not 0 <= finished <= MAX_FINISHED_MS:
        return None
    flows: dict[str, FlowRun] | None = None
    if isinstance(body.get("flows"), dict):
        flows = {}
        for name, f in body["flows"].items():
            if not isinstance(f, dict):
                return None
            lag = f.get("lag")
            if lag is not None and not (isinstance(lag, dict) and all(
                    isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in lag.items())):
                return None
            findings, total, stale = f.get("findings"), f.get("lagTotal"), f.get("staleGroups", 0)
            if not (_count(findings) and _count(total) and _count(stale)) or not isinstance(f.get("status"), str):
                return None
            try:
                checkpoints = _checkpoints(f.get("checkpoints"))
            except ValueError:
                return None
            flows[name] = FlowRun(f["status"], findings, lag, total, checkpoints, stale)
    certificates = body.get("certificates")
    if certificates is not None and not (isinstance(certificates, dict) and all(
            isinstance(k, str) and _count(v) and 0 <= v <= MAX_FINISHED_MS // 1000 for k, v in certificates.items())):
        return None
    error = body.get("error")
    return LastRun(status, finished, error if isinstance(error, str) else None, flows, body.get("truncated") is True,
                   certificates)
