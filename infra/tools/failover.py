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

from contract import audit as audit_contract
from contract.audit import CREDENTIAL_FILES
from infra.core.errors import Problem, TopologyError
from infra.core.names import default_flow_name
from infra.topology.resolution import Direction, Model
from infra.tools import stackfile
from infra.tools.stackfile import STOPPED
from infra.topology.schema.values import BOOTSTRAP

PROCEDURES = ("continuous", "cutoff", "disaster")
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


def check_config(config: dict[str, Any], directions: list[Direction], bootstraps: dict[str, str],
                 connects: dict[str, str], rest_urls: dict[str, str]) -> dict[str, Any]:
    """The audit configuration of the stack, reduced to the flows and their clusters, with the
    addresses this machine reaches them at (a bootstrap of another listener, a port-forward to a
    Connect cluster's REST API). `rest_urls`: each Connect cluster's name to its in-cluster URL."""
    out = copy.deepcopy(config)
    names = {d.name for d in directions}
    out["flows"] = [f for f in out["flows"] if f["name"] in names]
    keep = {a for d in directions for a in (d.flow.source, d.flow.target)}
    out["clusters"] = {a: c for a, c in out["clusters"].items() if a in keep}
    for alias, servers in bootstraps.items():
        out["clusters"][alias]["bootstrapServers"] = servers
    by_url = {rest_urls[name]: url.rstrip("/") for name, url in connects.items()}
    for flow in out["flows"]:
        for connector in flow["connectors"]:
            connector["restUrl"] = by_url.get(connector["restUrl"], connector["restUrl"])
    return out


def topology_path(stack: str) -> Path:
    """The stack's topology file: its `topology` config, else stacks/<stack>.yaml (as render reads it)."""
    from infra.deploy import config as stack_config
    return stack_config.project_dir() / (stack_config.plain(stack).get(stack_config.TOPOLOGY_KEY)
                                         or f"stacks/{stack}.yaml")


def reach(flows: list[Any], aliases: list[str], bootstrap_args: list[str], connect_args: list[str]
          ) -> tuple[dict[str, str], dict[str, str], dict[str, str], list[Problem]]:
    """The `--bootstrap` and `--connect` overrides for these flows' plans and clusters: the
    bootstraps, the Connect URLs, each Connect cluster's in-cluster REST URL, and what was refused."""
    rest_urls = {part.names.connect: part.names.rest_url for flow in flows for part in flow.parts}
    bootstraps, refused = overrides(bootstrap_args, "--bootstrap", {a: f"clusters.{a}" for a in aliases},
                                    BOOTSTRAP, "HOST:PORT[,HOST:PORT...]")
    connects, more = overrides(connect_args, "--connect", {n: f"the Connect cluster at {u}"
                                                           for n, u in rest_urls.items()},
                               URL, "http://HOST:PORT (a port-forward to its REST API)")
    return bootstraps, connects, rest_urls, refused + more


def credential_problems(model: Model, aliases: list[str], credentials: Path | None) -> list[Problem]:
    """Every file the check reads that is not there: `<credentials>/<alias>/<file>`, the audit's
    layout (contract/audit.py CREDENTIAL_FILES), one per credential of the cluster (a password
    taken by reference too: the files are the audit's, whatever their Secrets)."""
    needed = [(alias, item, CREDENTIAL_FILES[item]) for alias in aliases
              for item in model.clusters[alias].security.client_items]
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
    return run_audit(config, credentials, ["failover", "--flow", flow, "--procedure", procedure,
                                           *[a for g in groups for a in ("--group", g)]], "failover.json", seconds)


def run_audit(config: dict[str, Any], credentials: Path | None, command: list[str], report_file: str,
              seconds: int = CHECK_SECONDS) -> tuple[int, dict[str, Any] | None, str, str]:
    """`python -m spark.audit COMMAND...` in a child process on `config` (written to a private
    folder, removed after): its exit code, the report it wrote (None when it wrote none), its
    standard output and its standard error, or a could-not-tell after `seconds`."""
    with tempfile.TemporaryDirectory(prefix="kafka-replication-") as work:
        os.chmod(work, 0o700)
        path = Path(work) / audit_contract.CONFIG_FILE
        path.write_text(json.dumps(config))
        empty = Path(work) / "no-credentials"
        empty.mkdir()
        argv = [sys.executable, "-m", "spark.audit", command[0], "--config", str(path),
                "--credentials", str(credentials or empty), "--out", str(Path(work) / "out"), *command[1:]]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return COULD_NOT_TELL, None, "", f"`python -m spark.audit {command[0]}` did not finish within {seconds} s"
        written = Path(work) / "out" / report_file
        report = json.loads(written.read_text()) if written.exists() else None
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
    if report["verdict"] == "error":
        return Decision(False, "could not tell (what could not be read is never judged): nothing written")
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


# ----------------------------------------------------------------- the command


def run(stack: str, flow_name: str, given: str | None, stop: bool, groups: list[str], credentials: Path | None,
        bootstrap_args: list[str], connect_args: list[str], dry_run: bool, as_json: bool) -> int:
    from infra.deploy import deployment
    from infra.plan.audit import audit_config
    from infra.tools import diff

    path = topology_path(stack)
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
    bootstraps, connects, rest_urls, refused = reach([f for f in stack_plan.flows if f.name == flow_name],
                                                     [source, target], bootstrap_args, connect_args)
    problems += refused
    problems += credential_problems(model, aliases, credentials)
    problems += missing_runtime()
    if problems:
        raise TopologyError(problems, "the command line")
    config = check_config(audit_config(model, stack_plan), [direction], bootstraps, connects, rest_urls)
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
        if stackfile.already_stopped(entry):
            lines.append(f"{path}: flows[{direction.declared}] ({flow_name}) is already stopped: nothing to write")
        elif dry_run:
            lines.append(f"--dry-run: nothing written; without it, flows[{direction.declared}] ({flow_name}) of {path} "
                         f"is set to state {STOPPED}")
        else:
            new = stackfile.stopped_text(text, direction.declared)
            before = diff.render_here(stack)
            with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix=".failover-", dir=path.parent) as after_file:
                after_file.write(new)
                after_file.flush()
                after = diff.render_here(stack, Path(after_file.name))  # the change renders, or nothing is written
            stackfile.write_atomically(path, new)
            written = True
            lines.append(f"wrote {path}: flows[{direction.declared}] ({flow_name}) stopped; review it and let your "
                         "pipeline run `pulumi preview` and `pulumi up`")
            if report.get("targetEnds") is not None:
                record = record_path(path, flow_name)
                stackfile.write_atomically(record, json.dumps(failover_record(report), indent=2) + "\n")
                lines.append(f"wrote {record}: each partition's end offset on {target} now, where `kafka-replication "
                             "failback` starts the reversed flow (commit it with the change)")
            lines += ["", diff.text([diff.compare(stack, before, after)], f"{path.name} before", "after")]
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



# ----------------------------------------------------------------- the failover record and the failback

RECORD_VERSION = 1
RECORD_KEYS = ("flow", "sourceAlias", "targetAlias", "procedure", "checkedAt", "targetEnds")


def record_path(topology: Path, flow: str) -> Path:
    """Beside the topology file: what an identity flow's failback starts from, kept with the change
    that stopped the flow (docs/operations.md#controlled-failback)."""
    return topology.with_name(f"{topology.stem}.{flow}.failover.json")


def failover_record(report: dict[str, Any]) -> dict[str, Any]:
    return {"version": RECORD_VERSION, **{k: report[k] for k in RECORD_KEYS}}


def read_record(path: Path, flow: str) -> dict[str, Any]:
    """The failover record of `flow`, checked whole; a problem names the file and what to do."""
    def refused(allowed: str) -> TopologyError:
        return TopologyError([Problem(str(path), "(failover record)", None, allowed)], "the failback")
    if not path.is_file():
        raise refused(f"the record `kafka-replication failover` writes when it stops identity flow {flow}: each "
                      "partition's end offset on the old target, where the reversed flow starts. Without it, note "
                      "them as docs/operations.md#controlled-failback says and write the reversed flow by hand")
    try:
        if path.stat().st_size > 10_000_000:
            raise ValueError("too large")
        record = json.loads(path.read_text())
        ends = record["targetEnds"]
        good = (record["version"] == RECORD_VERSION and record["flow"] == flow and isinstance(ends, list)
                and all(isinstance(e["topic"], str) and type(e["partition"]) is int and type(e["end"]) is int
                        and e["partition"] >= 0 and e["end"] >= 0 for e in ends))
    except (ValueError, KeyError, TypeError):
        good = False
    if not good:
        raise refused(f"a failover record of flow {flow}, version {RECORD_VERSION}, as `kafka-replication failover` "
                      "wrote it")
    return dict(record)


def reversed_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """The flow in the other direction, as the runbook's failback deploys it: its settings kept,
    source and target swapped; its name, state, offsets requests, Kubernetes cluster and
    acknowledgements left out (the reversed flow is a flow of its own, on the new target's)."""
    back = copy.deepcopy(entry)
    back["source"], back["target"] = entry["target"], entry["source"]
    for key in ("name", "state", "offsets", "kubernetes", "acknowledgeReplayedHistory"):
        back.pop(key, None)
    for instance in [*(back.get("sources") or []),
                     *(s for part in back.get("connectClusters") or [] for s in (part or {}).get("sources") or [])]:
        if isinstance(instance, dict):
            instance.pop("state", None)
    return back


def failback_change(model: Model, direction: Direction, entry: dict[str, Any], record: dict[str, Any] | None
                    ) -> tuple[dict[str, Any], bool, list[str]]:
    """The reversed flow to write, whether it replaces the flow (identity) or joins it (default),
    and what to do after its `pulumi up`."""
    back = reversed_entry(entry)
    name = default_flow_name(back["source"], back["target"])
    if record is None:
        return back, False, [f"then fail over to {back['target']} again with `kafka-replication failover --flow "
                             f"{name}` (the procedures above)"]
    at = [{"topic": e["topic"], "partition": e["partition"], "offset": e["end"] - 1}
          for e in record["targetEnds"] if e["end"] > 0]  # an empty partition needs none: all it holds is new
    back["state"] = {"source": "stopped"}
    if model.operator.release.offset_management:
        back["offsets"] = [{"connector": f"{name}-source", "action": "alter", "request": "failback", "offsets": at}]
        return back, True, [f"once the operator has carried out the alter (the KafkaConnector {name}-source without "
                            "its strimzi.io/connector-offsets annotation), `kafka-replication failback --flow "
                            f"{direction.name} --resume` sets it running"]
    from infra.plan.offsets import SOURCE, alter_body
    from infra.topology.schema import PartitionOffset
    back["acknowledgeReplayedHistory"] = True
    body = alter_body(SOURCE, back["source"], [PartitionOffset.model_validate(o) for o in at])
    return back, True, [
        f"this release has no offsets requests: once it is deployed stopped, set its offsets through the Connect REST "
        f"API (docs/operations.md#controlled-failback), then `kafka-replication failback --flow {direction.name} "
        "--resume` sets it running:",
        f"  kubectl -n {name} port-forward svc/{name}-connect-api 8083:8083 &",
        f"  curl -fsS -X PATCH -H 'Content-Type: application/json' http://localhost:8083/connectors/{name}-source/"
        f"offsets -d '{json.dumps(body)}'"]


def run_failback(stack: str, flow_name: str, resume: bool, dry_run: bool) -> int:
    from infra.deploy import deployment
    from infra.tools import diff

    path = topology_path(stack)
    model, _, _ = deployment.validate_file(path)
    text = path.read_text()
    flows = (yaml.safe_load(text) or {})["flows"]
    record_file = record_path(path, flow_name)
    lines: list[str] = []
    if resume:
        noted = read_record(record_file, flow_name)
        name = default_flow_name(noted["targetAlias"], noted["sourceAlias"])
        direction = find_flow(model, name)
        entry = flows[direction.declared]
        requests = entry.get("offsets") or []
        if (entry.get("state") or {}).get("source") != "stopped" or any(r.get("request") != "failback"
                                                                         for r in requests):
            raise TopologyError([Problem(direction.where, "state.source / offsets", None, "the reversed flow as "
                                         "`kafka-replication failback` wrote it: stopped, with only its failback "
                                         "offsets request")], "the failback")
        new = stackfile.set_keys(text, direction.declared, {"state": {"source": "running"}}, removed=("offsets",))
        what = f"flows[{direction.declared}] ({name}) set running, its failback offsets request removed"
        after_steps = [f"the failover record {record_file} has served: remove it with this change"]
    else:
        direction = find_flow(model, flow_name)
        entry = flows[direction.declared]
        problems = []
        if direction.partner is not None:
            problems.append(Problem(direction.where, "bidirectional", True, "a one-way flow: a bidirectional pair only "
                                    "reroutes clients, and runs both directions already"))
        if not stackfile.already_stopped(entry):
            problems.append(Problem(direction.where, "state", entry.get("state"), f"{stackfile.STOPPED_LINE}: fail "
                                    "over first (`kafka-replication failover`), which stops the flow"))
        identity = direction.flow.policy.value == "identity"
        if identity and (entry.get("sources") or entry.get("connectClusters")):
            problems.append(Problem(direction.where, "sources / connectClusters", None, "one source connector: the "
                                    "offsets of several are written per connector, by hand (docs/operations.md"
                                    "#controlled-failback)"))
        if problems:
            raise TopologyError(problems, "the failback")
        back, replaces, after_steps = failback_change(
            model, direction, entry, read_record(record_file, flow_name) if identity else None)
        name = default_flow_name(back["source"], back["target"])
        if any(d.name == name for d in model.flows):
            print(f"{path}: flow {name} is there already: nothing to write")
            return READY
        new = stackfile.replaced_text(text, direction.declared if replaces else None, back)
        what = (f"flows[{direction.declared}] ({flow_name}) replaced by {name}, stopped with its offsets at the "
                "failover record's ends" if replaces else f"flow {name} added beside the stopped {flow_name}")
    if dry_run:
        print(f"--dry-run: nothing written; without it, {what}")
        return READY
    before = diff.render_here(stack)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix=".failback-", dir=path.parent) as after_file:
        after_file.write(new)
        after_file.flush()
        after = diff.render_here(stack, Path(after_file.name))  # the change renders, or nothing is written
    stackfile.write_atomically(path, new)
    lines += [f"wrote {path}: {what}; review it and let your pipeline run `pulumi preview` and `pulumi up`",
              *after_steps, "", diff.text([diff.compare(stack, before, after)], f"{path.name} before", "after")]
    print("\n".join(lines).rstrip())
    return READY
