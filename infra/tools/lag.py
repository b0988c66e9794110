"""`kafka-replication lag`: the flows' replication lag now, from the operator's machine
(docs/status.md#live-lag). It runs `python -m spark.audit lag` (spark/lag.py) in a child process
on the audit configuration the plan renders for the stack, reduced to the flows asked for, with
the addresses given here: the audit's clients and decoding, no Job and no Kubernetes. It shows
each lagging source partition (its lag and the age of its oldest record not yet replicated) and
each consumer group's newest checkpoint age; `--watch` shows it again until interrupted.

Exit codes: 0 every partition within the audit's `maxLag`; 1 some partition past it, never
replicated, or with records lost to retention (the audit's offsets findings); 2 invalid input;
5 something could not be read (said, never shown as caught up), as `status` says unknown.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from infra.core.errors import Problem, TopologyError
from infra.tools import failover

OK, FINDINGS, INVALID, UNKNOWN = 0, 1, 2, 5
NO_REPORT = "the reader ended without a report"  # said where the child wrote none and said nothing
SHOWN = 20  # partitions and groups listed a flow in the text; the JSON has every one


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "age not read"
    whole = int(seconds)
    if whole < 120:
        return f"{whole} s old"
    if whole < 7200:
        return f"{whole // 60} min old"
    return f"{whole // 3600} h {whole % 3600 // 60} min old"


def flow_text(flow: dict[str, Any]) -> list[str]:
    """One flow's lines: the replication summary and its lagging partitions (most behind
    first), the groups' checkpoint ages (oldest first), what could not be read."""
    lines = [f"flow {flow['flow']}: {flow['sourceAlias']} -> {flow['targetAlias']}"]
    rows = flow["replication"]
    if rows is not None:
        behind = sorted((r for r in rows if r["lag"] > 0 or r["status"] != "ok"),
                        key=lambda r: (-r["lag"], r["topic"], r["partition"]))
        total = sum(r["lag"] for r in rows)
        ages = [r["oldestUnreplicatedAgeSeconds"] for r in behind if r["oldestUnreplicatedAgeSeconds"] is not None]
        lines.append(f"  replication: {total} record(s) behind on {len(behind)} of {len(rows)} partition(s)"
                     + (f", the oldest not replicated {_age(max(ages))}" if ages else "")
                     + f" (the audit's maxLag: {flow['maxLag']})")
        for r in behind[:SHOWN]:
            committed = "none" if r["committed"] is None else r["committed"]
            lines.append(f"    {r['topic']}[{r['partition']}]: end {r['end']}, replicated {committed}, lag {r['lag']}"
                         + ("" if r["lag"] == 0 else f", oldest not replicated {_age(r['oldestUnreplicatedAgeSeconds'])}")
                         + ("" if r["status"] == "ok" else f" ({r['status']})"))
        if len(behind) > SHOWN:
            lines.append(f"    and {len(behind) - SHOWN} more partition(s) behind (--json lists every one)")
    groups = flow["groups"]
    if groups is not None:
        lines.append(f"  checkpoints on {flow['targetAlias']}: {len(groups)} group(s)"
                     + (", newest checkpoint of each:" if groups else ""))
        for g in sorted(groups, key=lambda g: (-g["newestAgeSeconds"], g["group"]))[:SHOWN]:
            oldest = max(p["ageSeconds"] for p in g["partitions"])
            lines.append(f"    {g['group']}: {_age(g['newestAgeSeconds'])} ({len(g['partitions'])} partition(s), "
                         f"the least recent {_age(oldest)})")
        if len(groups) > SHOWN:
            lines.append(f"    and {len(groups) - SHOWN} more group(s) (--json lists every one)")
    lines += [f"  ! not read: {e}" for e in flow["errors"]]
    return lines


def report_lines(report: dict[str, Any], heading: str = "replication lag") -> list[str]:
    """The heading with the time of the read, then each flow's block (`status --live` shows the
    same under its own heading)."""
    at = datetime.fromtimestamp(report["checkedAt"] / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    lines = [f"{heading} read at {at} UTC", ""]
    for flow in report["flows"]:
        lines += [*flow_text(flow), ""]
    return lines


def _findings(report: dict[str, Any]) -> int:
    return sum(len(flow["findings"]) for flow in report["flows"])


def verdict(report: dict[str, Any]) -> str:
    """The report's verdict in words, without its exit code (`status --live`'s summary)."""
    code = exit_code(report)
    if code == UNKNOWN:
        return "not everything could be read"
    if code == FINDINGS:
        return f"{_findings(report)} partition(s) past the audit's maxLag"
    return "every partition within the audit's maxLag"


def text(report: dict[str, Any]) -> str:
    lines = report_lines(report)
    code = exit_code(report)
    if code == UNKNOWN:
        lines.append(f"unknown (exit {UNKNOWN}): not everything could be read")
    elif code == FINDINGS:
        lines.append(f"past the audit's threshold (exit {FINDINGS}): {_findings(report)} partition(s)")
    else:
        lines.append(f"within the audit's threshold (exit {OK})")
    return "\n".join(lines) + "\n"


def exit_code(report: dict[str, Any]) -> int:
    said = report.get("verdict")
    return OK if said == "ok" else FINDINGS if said == "findings" else UNKNOWN


def prepare(stack: str, flow_names: list[str], credentials: Path | None, bootstrap_args: list[str],
            connect_args: list[str]) -> tuple[dict[str, Any], list[str]]:
    """The child's audit configuration and the flows' names, or every problem of the command line
    at once (TopologyError)."""
    from infra.deploy import deployment
    from infra.plan.audit import audit_config

    model, stack_plan, _ = deployment.validate_file(failover.topology_path(stack))
    known = [f.name for f in stack_plan.flows]
    problems = [Problem("--flow", "(argument)", name, "a flow of the stack: " + (", ".join(known) or "(none)"))
                for name in flow_names if name not in known]
    if len(flow_names) > failover.MAX_OVERRIDES:
        problems.append(Problem("--flow", "(argument)", f"{len(flow_names)} flows",
                                f"at most {failover.MAX_OVERRIDES} (give none for every flow)"))
    chosen = [n for n in known if n in flow_names] or known
    directions = [failover.find_flow(model, name) for name in chosen]
    aliases = sorted({a for d in directions for a in (d.flow.source, d.flow.target)})
    bootstraps, connects, rest_urls, refused = failover.reach(
        [f for f in stack_plan.flows if f.name in chosen], aliases, bootstrap_args, connect_args)
    problems += refused
    problems += failover.credential_problems(model, aliases, credentials)
    problems += failover.missing_runtime()
    if problems:
        raise TopologyError(problems, "the command line")
    return failover.check_config(audit_config(model, stack_plan), directions, bootstraps, connects, rest_urls), chosen


def read(config: dict[str, Any], credentials: Path | None, chosen: list[str]) -> tuple[dict[str, Any] | None, str]:
    """The child's report (None when it wrote none) and what it said on standard error."""
    _, report, _, said = failover.run_audit(config, credentials, ["lag", *[a for n in chosen for a in ("--flow", n)]],
                                            "lag.json")
    return report, said


def run(stack: str, flow_names: list[str], credentials: Path | None, bootstrap_args: list[str],
        connect_args: list[str], watch: int | None, as_json: bool) -> int:
    config, chosen = prepare(stack, flow_names, credentials, bootstrap_args, connect_args)

    def once() -> int:
        report, said = read(config, credentials, chosen)
        if report is None:
            print(f"lag: could not read: {said or NO_REPORT}", file=sys.stderr)
            sys.stdout.flush()
            return UNKNOWN
        if as_json:
            print(json.dumps(report, indent=None if watch else 2, sort_keys=True))
        else:
            if watch is not None:  # a terminal's screen cleared; a pipe's rounds told apart by their heading
                sys.stdout.write("\x1b[H\x1b[2J" if sys.stdout.isatty() else "")
                sys.stdout.write(f"every {watch} s (Ctrl-C stops)\n")
            sys.stdout.write(text(report))
        sys.stdout.flush()
        return exit_code(report)

    if watch is None:
        return once()
    from infra.tools.watching import repeat
    repeat(watch, once)
