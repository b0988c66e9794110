"""`kafka-replication failover`: the failover runbook (docs/operations.md#failover-and-failback)
from the operator's machine. It runs the readiness check the audit's image runs
(`python -m spark.audit failover`, spark/failover.py) in a child process, on the audit
configuration the plan renders for the stack: the same clients and decoding, no Job. It shows
each source partition's lag and each group's translated offsets, and when the check allows the
runbook's topology change (the flow's connectors stopped) it writes it into the stack's topology
file, keeping the file's comments and layout, and prints the offline diff of what it does.
`pulumi preview` and `up` stay with the user's pipeline.

When the change is written, per procedure (the runbook's steps):
- cutoff: the check ready (no lag, nothing left to read, consumers stopped): step 4;
- disaster: the check ready on the target alone: the flow stopped before the source returns,
  so that nothing it had not replicated is copied into topics the clients now write;
- continuous: never on the step-2 check (producers still write on the source, so stopping then
  would strand their records); `--stop` after steps 3 and 4 writes it once every source
  partition is drained (lag 0), whatever the groups now do on the target (step 5).
A bidirectional pair only reroutes clients: nothing is written for it.
"""

from __future__ import annotations

import copy
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from contract.audit import CREDENTIAL_FILES
from infra.core.errors import Problem, TopologyError
from infra.topology.resolution import Direction, Model
from infra.topology.schema.values import BOOTSTRAP

PROCEDURES = ("continuous", "cutoff", "disaster")
# The runbook's change: every connector of the flow stopped (offsets and configuration kept).
STOPPED = {"source": "stopped", "checkpoint": "stopped", "heartbeat": "stopped"}
# The check's own reads are bounded (a topic read 60 s, a REST call 10 s and three attempts, a
# librdkafka request its timeout); this bounds the child as a whole, JVM start included.
CHECK_SECONDS = 600
# The check's exit codes (spark/failover.py EXIT), which the command keeps.
READY, NOT_READY, COULD_NOT_TELL = 0, 1, 2
URL = re.compile(r"https?://[A-Za-z0-9.\-\[\]:]+(?::[0-9]{1,5})?/?")
MAX_OVERRIDES = 100


@dataclass(frozen=True)
class Decision:
    write: bool
    why: str  # what the command says about the change, written or not


def _refused(flag: str, value: object, allowed: str) -> Problem:
    return Problem(flag, "(argument)", value, allowed)


def find_flow(model: Model, name: str) -> Direction:
    for direction in model.flows:
        if direction.name == name:
            return direction
    raise TopologyError([_refused("--flow", name, "a flow of the stack: " + (
        ", ".join(d.name for d in model.flows) or "none deployed"))], "the command line")


def procedure_of(direction: Direction, given: str | None) -> str:
    """The procedure checked: the one given, else the flow's `failover.procedure`, else cutoff
    (as the check chooses)."""
    if given:
        return given
    declared = direction.flow.failover.procedure.value
    return declared if declared in PROCEDURES else "cutoff"


def overrides(values: list[str], flag: str, allowed: dict[str, str], shape: re.Pattern[str],
              shape_text: str) -> tuple[dict[str, str], list[Problem]]:
    """NAME=VALUE arguments: NAME one of `allowed` (name: what it is), VALUE of `shape` (a
    comma-separated list of them); what was given well, and a problem for each of the others."""
    found: dict[str, str] = {}
    if len(values) > MAX_OVERRIDES:
        return found, [_refused(flag, f"{len(values)} arguments", f"at most {MAX_OVERRIDES}")]
    problems = []
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or name not in allowed:
            problems.append(_refused(flag, item[:200], f"NAME={shape_text} with NAME one of: "
                                     + ", ".join(f"{k} ({v})" for k, v in sorted(allowed.items()))))
        elif len(value) > 4096 or not all(shape.fullmatch(v) for v in value.split(",")):
            problems.append(_refused(flag, item[:200], f"{name}={shape_text}"))
        elif name in found:
            problems.append(_refused(flag, item[:200], f"{name} given once"))
        else:
            found[name] = value
    return found, problems


def check_config(config: dict[str, Any], direction: Direction, bootstraps: dict[str, str],
                 connects: dict[str, str], rest_urls: dict[str, str]) -> dict[str, Any]:
    """The audit configuration of the stack, reduced to the flow and its two clusters, with the
    addresses this machine reaches them at (a bootstrap of another listener, a port-forward to a
    Connect cluster's REST API). `rest_urls`: each Connect cluster's name to its in-cluster URL."""
    out = copy.deepcopy(config)
    out["flows"] = [f for f in out["flows"] if f["name"] == direction.name]
    keep = {direction.flow.source, direction.flow.target}
    out["clusters"] = {a: c for a, c in out["clusters"].items() if a in keep}
    for alias, servers in bootstraps.items():
        out["clusters"][alias]["bootstrapServers"] = servers
    by_url = {rest_urls[name]: url.rstrip("/") for name, url in connects.items()}
    for flow in out["flows"]:
        for connector in flow["connectors"]:
            connector["restUrl"] = by_url.get(connector["restUrl"], connector["restUrl"])
    return out


def credential_problems(model: Model, aliases: list[str], credentials: Path | None) -> list[Problem]:
    """Every file the check reads that is not there: `<credentials>/<alias>/<file>`, the audit's
    layout (contract/audit.py CREDENTIAL_FILES), one per secret item of the cluster."""
    needed = [(alias, item, CREDENTIAL_FILES[item]) for alias in aliases
              for item in model.clusters[alias].security.secret_items]
    if credentials is None:
        return [_refused("--credentials", None, "a folder holding " + ", ".join(
            f"{alias}/{name}" for alias, _, name in needed) + " (the audit's Secrets' layout: "
            "docs/operations.md#the-failover-command)")] if needed else []
    return [_refused("--credentials", str(credentials / alias / name), f"a file: {item} of clusters.{alias}")
            for alias, item, name in needed if not (credentials / alias / name).is_file()]


def missing_runtime() -> list[Problem]:
    """The check runs the audit's clients: librdkafka (confluent-kafka) and Java's regex engine
    through py4j (PySpark's jar) for the topic filters."""
    problems = [_refused("(environment)", f"no module {module}", "the audit's libraries: pip install "
                         "'kafka-replication[audit]'") for module in ("confluent_kafka", "pyspark")
                if importlib.util.find_spec(module) is None]
    java_home = os.environ.get("JAVA_HOME")
    if not shutil.which("java") and not (java_home and (Path(java_home) / "bin" / "java").exists()):
        problems.append(_refused("(environment)", "no java on the PATH or in JAVA_HOME",
                                 "a Java 17 runtime (the topic filters are Java regexes, read by Java)"))
    return problems


def run_check(config: dict[str, Any], credentials: Path | None, flow: str, procedure: str, groups: list[str],
              seconds: int = CHECK_SECONDS) -> tuple[int, dict[str, Any] | None, str, str]:
    """The readiness check in a child process: its exit code, its report (None when it could not
    run), its summary (standard output: the verdict and every finding, spark/failover.py
    `summary`) and what it printed on standard error."""
    with tempfile.TemporaryDirectory(prefix="kafka-replication-failover-") as work:
        os.chmod(work, 0o700)
        path = Path(work) / "audit.json"
        path.write_text(json.dumps(config))
        empty = Path(work) / "no-credentials"
        empty.mkdir()
        argv = [sys.executable, "-m", "spark.audit", "failover", "--config", str(path), "--flow", flow,
                "--procedure", procedure, "--credentials", str(credentials or empty), "--out", str(Path(work) / "out"),
                *[a for g in groups for a in ("--group", g)]]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return COULD_NOT_TELL, None, "", f"the readiness check did not finish within {seconds} s"
        report_file = Path(work) / "out" / "failover.json"
        report = json.loads(report_file.read_text()) if report_file.exists() else None
        return done.returncode, report, done.stdout.strip(), done.stderr.strip()


def drained(report: dict[str, Any]) -> list[str]:
    """What keeps the flow from being stopped at step 5: any source partition not replicated to
    its end (or never, or lost to retention), or a read that failed. Empty: drained."""
    if report.get("errors"):
        return [f"could not tell: {e}" for e in report["errors"]]
    rows = report.get("replication")
    if rows is None:
        return ["the source was not read (procedure disaster): nothing says replication drained"]
    return [f"{r['topic']}[{r['partition']}]: {r['lag']} record(s) still to replicate ({r['status']})"
            for r in rows if r["lag"] != 0 or r["status"] != "ok"]


def decide(direction: Direction, procedure: str, stop: bool, report: dict[str, Any]) -> Decision:
    """Whether the runbook's change may be written now, and what to say either way. Pure."""
    if direction.partner is not None:
        return Decision(False, "a bidirectional pair only reroutes clients (docs/operations.md#controlled-failback): "
                               "nothing to write")
    if stop:
        left = drained(report)
        if left:
            return Decision(False, "not drained, the flow stays as it is:\n" + "\n".join(f"  {x}" for x in left))
        return Decision(True, "replication drained (every source partition at lag 0): step 5, the flow stopped")
    if report["verdict"] != "ready":
        return Decision(False, "not ready: nothing written")
    if procedure == "continuous":
        return Decision(False, "ready for steps 3 and 4: start the consumers on the target (failover.topics), then "
                               "move the producers; once replication has drained, run this command again with "
                               "--stop to write step 5 (the flow stopped)")
    if procedure == "cutoff":
        return Decision(True, "ready: step 4, the flow stopped")
    return Decision(True, "ready: the flow stopped, so that nothing the source had not replicated is copied into "
                          "the topics the clients now write when it returns")


def show(report: dict[str, Any]) -> str:
    """The report's tables: each source partition's end, replicated offset and lag; each group's
    committed offsets on both sides and its newest checkpoint's translation."""
    lines = []
    rows = report.get("replication")
    if rows:
        lines.append("replication (source end offset, last offset replicated, lag):")
        lines += [f"  {r['topic']}[{r['partition']}]: end {r['end']}, committed "
                  f"{'-' if r['committed'] is None else r['committed']}, lag {r['lag']}, {r['status']}" for r in rows]
    source, target = report["sourceAlias"], report["targetAlias"]
    for group in report.get("groups", []):
        lines.append(f"group {group['group']} (committed on {source}, checkpoint upstream -> translated, committed "
                     f"on {target}):")
        for p in group["partitions"]:
            c = p["checkpoint"]
            stamp = "no checkpoint" if c is None else (f"{c['upstream']} -> {c['translated']} "
                                                        f"({c['ageSeconds']:.0f} s old)")
            committed = "-" if p["sourceCommitted"] is None else p["sourceCommitted"]
            there = "-" if p["targetCommitted"] is None else p["targetCommitted"]
            lines.append(f"  {p['topic']}[{p['partition']}] -> {p['targetTopic']}[{p['partition']}]: "
                         f"{committed}; {stamp}; {there}")
    return "\n".join(lines)


# ----------------------------------------------------------------- the change, in the user's file


def _state_paths(entry: dict[str, Any]) -> list[list[str | int]]:
    """Where a flow's declaration sets connector states: its `state`, and each named source
    connector's own `state`, which overrides the flow's `state.source` (infra/topology/schema/flow.py)."""
    paths: list[list[str | int]] = [["state"]]
    for j, instance in enumerate(entry.get("sources") or []):
        if isinstance(instance, dict) and "state" in instance:
            paths.append(["sources", j, "state"])
    for i, part in enumerate(entry.get("connectClusters") or []):
        for j, instance in enumerate((part or {}).get("sources") or []):
            if isinstance(instance, dict) and "state" in instance:
                paths.append(["connectClusters", i, "sources", j, "state"])
    return paths


def _apply(entry: Any, paths: list[list[str | int]]) -> None:
    for path in paths:
        holder = entry
        for step in path[:-1]:
            holder = holder[step]
        if path == ["state"]:
            if not isinstance(holder.get("state"), dict):
                holder["state"] = {}
            for key, value in STOPPED.items():
                holder["state"][key] = value
        else:
            holder[path[-1]] = "stopped"


STOPPED_LINE = "state: {" + ", ".join(f"{k}: {v}" for k, v in STOPPED.items()) + "}"


def _is_note(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def stopped_text(text: str, declared: int) -> str:
    """The topology file's text with flow `declared` stopped, changed on the lines that say the
    states alone: its `state` written as one line where it was (or added after the flow's last
    line, above the comments that lead to the next), and a named source connector's own `state`
    set on its line. Every other line is left as the user wrote it (comments, quoting, indentation:
    ruamel.yaml gives where each key is; a full dump would re-indent the file). The result is
    checked against the same change made on the document as the program reads it (PyYAML): a
    layout this cannot change on its lines (a flow written in flow style, say) is refused with
    what to do by hand, never written half-right."""
    from ruamel.yaml import YAML
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    document = YAML().load(text)
    flows = document["flows"]
    entry = flows[declared]
    keys = list(entry)
    # Where the entry ends: the next flow's line, or the next top-level key's, or the end.
    following = [flows.lc.item(declared + 1)[0]] if declared + 1 < len(flows) else []
    top = list(document)
    after_flows = top[top.index("flows") + 1:] if "flows" in top else []
    following += [document.lc.key(after_flows[0])[0]] if after_flows else []
    entry_end = min(following) if following else len(lines)
    edits: list[tuple[int, int, list[str]]] = []  # (first line, lines replaced, new lines)
    for path in _state_paths(entry)[1:]:
        holder = _get(entry, path[:-1])
        line, column = holder.lc.key("state")
        if holder.lc.value("state")[0] != line:
            raise _unwritable(declared)
        comment = lines[line].split("#", 1)[1] if "#" in lines[line].split(":", 1)[1] else None
        edits.append((line, 1, [" " * column + "state: stopped" + (f"  #{comment}" if comment else "\n")]))
    if "state" in entry:
        line, column = entry.lc.key("state")
        later = [entry.lc.key(k)[0] for k in keys[keys.index("state") + 1:]]
        stop = later[0] if later else entry_end
        # Its value's lines (deeper than the key) go; the comments among them stay.
        for i in range(line + 1, stop):
            if not _is_note(lines[i]) and len(lines[i]) - len(lines[i].lstrip(" ")) > column:
                edits.append((i, 1, []))
        edits.append((line, 1, [" " * column + STOPPED_LINE + "\n"]))
    else:
        # After the entry's last line, above the comments and blank lines that lead to the next.
        last, column = entry.lc.key(keys[-1])[0], entry.lc.key(keys[0])[1]
        line = entry_end
        while line - 1 > last and _is_note(lines[line - 1]):
            line -= 1
        edits.append((line, 0, [" " * column + STOPPED_LINE + "\n"]))
    for first, count, new in sorted(edits, reverse=True):
        lines[first:first + count] = new
    changed = "".join(lines)
    expected = yaml.safe_load(text)
    _apply(expected["flows"][declared], _state_paths(expected["flows"][declared]))
    try:
        same = yaml.safe_load(changed) == expected
    except yaml.YAMLError:
        same = False
    if not same:
        raise _unwritable(declared)
    return changed


def _unwritable(declared: int) -> TopologyError:
    return TopologyError([Problem(f"flows[{declared}]", "state", None, "a flow written in block style, which the "
                                  f"command changes on its own lines; set `{STOPPED_LINE}` there by hand "
                                  "(docs/operations.md#the-failover-command)")], "the topology file")


def already_stopped(entry: dict[str, Any]) -> bool:
    states = [entry.get("state") or {}]
    return all((states[0] or {}).get(k) == v for k, v in STOPPED.items()) and all(
        _get(entry, p) == "stopped" for p in _state_paths(entry)[1:])


def _get(entry: Any, path: list[str | int]) -> Any:
    for step in path:
        entry = entry[step]
    return entry


def write_atomically(path: Path, text: str) -> None:
    """Replace the file whole, with its mode: a reader never sees half of it."""
    mode = path.stat().st_mode & 0o777
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# ----------------------------------------------------------------- the command


def run(stack: str, flow_name: str, given: str | None, stop: bool, groups: list[str], credentials: Path | None,
        bootstrap_args: list[str], connect_args: list[str], dry_run: bool, as_json: bool) -> int:
    from infra.deploy import config as stack_config
    from infra.deploy import deployment
    from infra.plan.audit import audit_config
    from infra.tools import diff

    path = stack_config.project_dir() / (stack_config.plain(stack).get(stack_config.TOPOLOGY_KEY)
                                         or f"stacks/{stack}.yaml")
    model, stack_plan, _ = deployment.validate_file(path)
    direction = find_flow(model, flow_name)
    procedure = procedure_of(direction, given)
    source, target = direction.flow.source, direction.flow.target
    problems = []
    if stop and procedure == "disaster":
        problems.append(_refused("--stop", "--procedure disaster", "continuous or cutoff: --stop reads the source "
                                 "for what is left to replicate, and on disaster the source is never read"))
    if len(groups) > MAX_OVERRIDES or any(not g or len(g) > 255 for g in groups):
        problems.append(_refused("--group", ", ".join(g[:50] for g in groups[:5]),
                                 f"at most {MAX_OVERRIDES} group ids of 1 to 255 characters"))
    aliases = [target] if procedure == "disaster" else [source, target]
    (flow_plan,) = [f for f in stack_plan.flows if f.name == flow_name]
    rest_urls = {part.names.connect: part.names.rest_url for part in flow_plan.parts}
    bootstraps, refused = overrides(bootstrap_args, "--bootstrap", {a: f"clusters.{a}" for a in (source, target)},
                                    BOOTSTRAP, "HOST:PORT[,HOST:PORT...]")
    problems += refused
    connects, refused = overrides(connect_args, "--connect", {n: f"the Connect cluster at {u}"
                                                              for n, u in rest_urls.items()},
                                  URL, "http://HOST:PORT (a port-forward to its REST API)")
    problems += refused
    problems += credential_problems(model, aliases, credentials)
    problems += missing_runtime()
    if problems:
        raise TopologyError(problems, "the command line")
    config = check_config(audit_config(model, stack_plan), direction, bootstraps, connects, rest_urls)
    code, report, summary, said = run_check(config, credentials, flow_name, procedure, groups)
    if report is None:
        print(f"failover: could not tell: {said or 'the readiness check ended without a report'}", file=sys.stderr)
        return COULD_NOT_TELL
    decision = decide(direction, procedure, stop, report)
    written = False
    lines = [summary, show(report), "", decision.why]
    if decision.write:
        text = path.read_text()
        entry = (yaml.safe_load(text) or {})["flows"][direction.declared]
        if already_stopped(entry):
            lines.append(f"{path}: flows[{direction.declared}] ({flow_name}) is already stopped: nothing to write")
        elif dry_run:
            lines.append(f"--dry-run: nothing written; without it, flows[{direction.declared}] ({flow_name}) of {path} "
                         f"is set to state {STOPPED}")
        else:
            new = stopped_text(text, direction.declared)
            before = diff.render_here(stack)
            with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix=".failover-", dir=path.parent) as after_file:
                after_file.write(new)
                after_file.flush()
                after = diff.render_here(stack, Path(after_file.name))  # the change renders, or nothing is written
            write_atomically(path, new)
            written = True
            lines += [f"wrote {path}: flows[{direction.declared}] ({flow_name}) stopped; review it and let your "
                      "pipeline run `pulumi preview` and `pulumi up`", "",
                      diff.text([diff.compare(stack, before, after)], f"{path.name} before", "after")]
    if as_json:
        print(json.dumps({"report": report, "change": {"file": str(path), "written": written,
                                                       "message": decision.why}}, indent=2, sort_keys=True))
    else:
        print("\n".join(line for line in lines if line is not None).rstrip())
    if said and code == COULD_NOT_TELL:
        print(said, file=sys.stderr)
    if stop:
        return READY if decision.write else NOT_READY
    return {"ready": READY, "not-ready": NOT_READY}.get(report["verdict"], COULD_NOT_TELL)

