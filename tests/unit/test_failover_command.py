"""`kafka-replication failover` (infra/tools/failover.py) without clusters: what it refuses before
anything runs, when it writes the runbook's change and what it says, the change made on the
user's own lines, and the whole command with the readiness check's report given (the check
itself runs on real Kafka in tests/runtime/test_runtime_failover.py and the drills of
tests/runtime/test_failover_drills.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from infra.core.errors import TopologyError
from infra.deploy.deployment import validate_file
from infra.plan.audit import audit_config
from infra.tools import failover
from infra.tools.cli import main
from tests.support.stacks import ROOT

TOPOLOGY = """\
# the drill's topology
clusters:
  a: {bootstrapServers: "a-kafka:9092"}
  b:
    bootstrapServers: b-kafka:9093
    security:
      protocol: SASL_PLAINTEXT
      sasl: {mechanism: PLAIN, username: mm2}

flows:
  - source: a   # the old region
    target: b
    topics: ["orders.*"]
    failover: {procedure: cutoff}

  # the next section
audit:
  schedule: "17 * * * *"
  image: registry.example.com/audit:1
"""
STOPPED_LINE = "    state: {source: stopped, checkpoint: stopped, heartbeat: stopped}\n"
FLOW = "repl-a-b"
URL = "http://repl-a-b-connect-api.repl-a-b.svc:8083"


def project(tmp_path: Path, text: str = TOPOLOGY) -> Path:
    (tmp_path / "stacks").mkdir()
    (tmp_path / "Pulumi.yaml").write_text("name: kafka-replication\nruntime: python\n")
    (tmp_path / "Pulumi.drill.yaml").write_text("config: {}\n")
    (tmp_path / "stacks" / "drill.yaml").write_text(text)
    return tmp_path


def credentials(tmp_path: Path) -> Path:
    (tmp_path / "creds" / "b").mkdir(parents=True)
    (tmp_path / "creds" / "b" / "password").write_text("pw")
    return tmp_path / "creds"


def report(verdict: str = "ready", procedure: str = "cutoff", lag: int = 0, errors: list[str] | None = None) -> dict:
    return {"version": 1, "flow": FLOW, "sourceAlias": "a", "targetAlias": "b", "replicationPolicy": "default",
            "procedure": procedure, "procedures": ["continuous", "cutoff", "disaster"], "waitSeconds": 10,
            "errors": errors or [], "findings": [], "verdict": verdict,
            "replication": [{"connector": f"{FLOW}-source", "topic": "orders.eu", "partition": 0, "earliest": 0,
                             "end": 5, "committed": 4 - lag, "lag": lag, "lost": 0,
                             "status": "ok" if lag == 0 else "lagging"},
                            {"connector": f"{FLOW}-source", "topic": "orders.eu", "partition": 1, "earliest": 0,
                             "end": 0, "committed": None, "lag": 0, "lost": 0, "status": "ok"}],
            "groups": [{"group": "readers", "source": {"state": "EMPTY", "members": 0}, "target": None,
                        "findings": [], "partitions": [
                            {"topic": "orders.eu", "targetTopic": "a.orders.eu", "partition": 0, "sourceCommitted": 5,
                             "sourceEnd": 5, "targetCommitted": 5, "findings": [],
                             "checkpoint": {"upstream": 5, "translated": 5, "metadata": "", "timestamp": 1,
                                            "ageSeconds": 3.4}},
                            {"topic": "orders.eu", "targetTopic": "a.orders.eu", "partition": 1,
                             "sourceCommitted": None, "sourceEnd": 0, "targetCommitted": None, "findings": [],
                             "checkpoint": None}]}]}


def direction(tmp_path: Path, text: str = TOPOLOGY, name: str = FLOW):
    path = tmp_path / "t.yaml"
    path.write_text(text)
    model, plan, _ = validate_file(path)
    return model, plan, failover.find_flow(model, name)


# ----------------------------------------------------------------- the change, on the user's lines


def test_the_flow_is_stopped_on_one_line_added_after_its_last_and_nothing_else_moves():
    lines = TOPOLOGY.splitlines(keepends=True)
    at = lines.index("    failover: {procedure: cutoff}\n") + 1
    assert failover.stopped_text(TOPOLOGY, 0) == "".join(lines[:at] + [STOPPED_LINE] + lines[at:])


def test_states_already_written_are_rewritten_where_they_are_their_comments_kept():
    text = """\
flows:
  - source: a   # the west
    target: b
    topics: [x]
    state:
      source: running
      # paused for the migration
      checkpoint: paused
    sources:
      - name: one
        topics: [y]
        state: running  # its own
  - {source: b, target: a, topics: [z]}
"""
    assert failover.stopped_text(text, 0) == """\
flows:
  - source: a   # the west
    target: b
    topics: [x]
    state: {source: stopped, checkpoint: stopped, heartbeat: stopped}
      # paused for the migration
    sources:
      - name: one
        topics: [y]
        state: stopped  # its own
  - {source: b, target: a, topics: [z]}
"""


def test_a_flow_in_flow_style_is_refused_with_what_to_write_by_hand():
    text = "flows:\n  - {source: a, target: b, topics: [x]}\n"
    with pytest.raises(TopologyError) as refused:
        failover.stopped_text(text, 0)
    assert [str(p) for p in refused.value.problems] == [
        "flows[0]: state: missing; expected a flow written in block style, which the command changes on its own "
        "lines; set `state: {source: stopped, checkpoint: stopped, heartbeat: stopped}` there by hand "
        "(docs/operations.md#the-failover-command)"]


@pytest.mark.parametrize("stack,index", [("dev", 0), ("prod", 0), ("prod", 1), ("prod", 3), ("regions", 1)])
def test_every_flow_of_the_shipped_stacks_is_stopped_by_one_added_line(stack, index):
    text = (ROOT / "stacks" / f"{stack}.yaml").read_text()
    new = failover.stopped_text(text, index)
    old_lines, new_lines = text.splitlines(), new.splitlines()
    assert len(new_lines) == len(old_lines) + 1
    added = [i for i, line in enumerate(new_lines) if i >= len(old_lines) or line != old_lines[i]][0]
    assert new_lines[:added] + new_lines[added + 1:] == old_lines
    assert new_lines[added].strip() == STOPPED_LINE.strip()
    expected = yaml.safe_load(text)
    expected["flows"][index]["state"] = dict(failover.STOPPED)
    assert yaml.safe_load(new) == expected


# ----------------------------------------------------------------- when the change is written


def test_what_is_written_per_procedure_and_verdict(tmp_path):
    _, _, d = direction(tmp_path)
    assert failover.decide(d, "cutoff", False, report()) == failover.Decision(True, "ready: step 4, the flow stopped")
    assert failover.decide(d, "disaster", False, report(procedure="disaster")) == failover.Decision(
        True, "ready: the flow stopped, so that nothing the source had not replicated is copied into the topics the "
              "clients now write when it returns")
    assert failover.decide(d, "continuous", False, report(procedure="continuous")) == failover.Decision(
        False, "ready for steps 3 and 4: start the consumers on the target (failover.topics), then move the "
               "producers; once replication has drained, run this command again with --stop to write step 5 (the "
               "flow stopped)")
    for procedure in failover.PROCEDURES:
        assert failover.decide(d, procedure, False, report("not-ready", procedure)) == failover.Decision(
            False, "not ready: nothing written")


def test_stop_waits_for_every_partition_drained_whatever_the_groups_do(tmp_path):
    _, _, d = direction(tmp_path)
    busy = report("not-ready", "continuous")
    busy["groups"][0]["findings"] = ["active on b (state STABLE, 1 member(s))"]
    assert failover.decide(d, "continuous", True, busy) == failover.Decision(
        True, "replication drained (every source partition at lag 0): step 5, the flow stopped")
    assert failover.decide(d, "continuous", True, report("not-ready", "continuous", lag=3)) == failover.Decision(
        False, "not drained, the flow stays as it is:\n  orders.eu[0]: 3 record(s) still to replicate (lagging)")
    assert failover.drained(report("error", errors=["a (source): broker down"])) == [
        "could not tell: a (source): broker down"]
    gone = report(procedure="disaster")
    gone["replication"] = None
    assert failover.drained(gone) == ["the source was not read (procedure disaster): nothing says replication drained"]


def test_a_bidirectional_pair_is_never_rewritten(tmp_path):
    text = TOPOLOGY.replace("    failover: {procedure: cutoff}\n", "    bidirectional: true\n").replace(
        'a: {bootstrapServers: "a-kafka:9092"}', 'a:\n    bootstrapServers: a-kafka:9093\n    security:\n'
        '      protocol: SASL_SSL\n      sasl: {mechanism: PLAIN, username: mm2}')
    _, _, d = direction(tmp_path, text)
    assert failover.decide(d, "cutoff", False, report()) == failover.Decision(
        False, "a bidirectional pair only reroutes clients (docs/operations.md#controlled-failback): nothing to write")


def test_the_tables_show_each_partition_s_lag_and_each_group_s_translation():
    assert failover.show(report(lag=1)) == """\
replication (source end offset, last offset replicated, lag):
  orders.eu[0]: end 5, committed 3, lag 1, lagging
  orders.eu[1]: end 0, committed -, lag 0, ok
group readers (committed on a, checkpoint upstream -> translated, committed on b):
  orders.eu[0] -> a.orders.eu[0]: 5; 5 -> 5 (3 s old); 5
  orders.eu[1] -> a.orders.eu[1]: -; no checkpoint; -"""


# ----------------------------------------------------------------- what the check is given


def test_the_check_reads_the_flow_at_the_addresses_given(tmp_path):
    model, plan, d = direction(tmp_path)
    config = audit_config(model, plan)
    reduced = failover.check_config(config, d, {"a": "127.0.0.1:19092"}, {FLOW: "http://127.0.0.1:18083/"},
                                    {FLOW: URL})
    expected = copy.deepcopy(config)
    expected["clusters"]["a"]["bootstrapServers"] = "127.0.0.1:19092"
    expected["flows"][0]["connectors"][0]["restUrl"] = "http://127.0.0.1:18083"
    assert reduced == expected
    assert config["flows"][0]["connectors"][0]["restUrl"] == URL  # the plan's own is left alone


def test_every_bad_argument_is_refused_at_once_before_anything_runs(tmp_path, capsys, monkeypatch):
    proj = project(tmp_path)
    monkeypatch.setattr(failover, "run_check", lambda *a, **k: pytest.fail("the check ran"))
    code = main(["-C", str(proj), "failover", "--stack", "drill", "--flow", FLOW, "--procedure", "disaster", "--stop",
                 "--bootstrap", "a=no-port", "--bootstrap", "c=x:1", "--connect", f"{FLOW}=ftp://x",
                 "--credentials", str(tmp_path / "none")])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: the command line has 5 problem(s):",
        "  - --stop: (argument): got '--procedure disaster'; expected continuous or cutoff: --stop reads the source "
        "for what is left to replicate, and on disaster the source is never read",
        "  - --bootstrap: (argument): got 'a=no-port'; expected a=HOST:PORT[,HOST:PORT...]",
        "  - --bootstrap: (argument): got 'c=x:1'; expected NAME=HOST:PORT[,HOST:PORT...] with NAME one of: "
        "a (clusters.a), b (clusters.b)",
        f"  - --connect: (argument): got '{FLOW}=ftp://x'; expected {FLOW}=http://HOST:PORT (a port-forward to its "
        "REST API)",
        f"  - --credentials: (argument): got '{tmp_path / 'none' / 'b' / 'password'}'; expected a file: password of "
        "clusters.b"]
    assert main(["-C", str(proj), "failover", "--stack", "drill", "--flow", "repl-b-a"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: the command line has 1 problem(s):",
        "  - --flow: (argument): got 'repl-b-a'; expected a flow of the stack: repl-a-b"]
    assert main(["-C", str(proj), "failover", "--stack", "drill", "--flow", FLOW]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: the command line has 1 problem(s):",
        "  - --credentials: (argument): missing; expected a folder holding b/password (the audit's Secrets' layout: "
        "docs/operations.md#the-failover-command)"]


def test_without_the_audit_s_libraries_or_java_it_says_what_to_install(monkeypatch):
    monkeypatch.setattr(failover.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(failover.shutil, "which", lambda name: None)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert [str(p) for p in failover.missing_runtime()] == [
        "(environment): (argument): got 'no module confluent_kafka'; expected the audit's libraries: pip install "
        "'kafka-replication[audit]'",
        "(environment): (argument): got 'no module pyspark'; expected the audit's libraries: pip install "
        "'kafka-replication[audit]'",
        "(environment): (argument): got 'no java on the PATH or in JAVA_HOME'; expected a Java 17 runtime (the topic "
        "filters are Java regexes, read by Java)"]


# ----------------------------------------------------------------- the whole command


def given(monkeypatch, answer: dict, code: int = 0) -> dict:
    seen: dict = {}

    def check(config, creds, flow, procedure, groups, seconds=failover.CHECK_SECONDS):
        seen.update(config=config, flow=flow, procedure=procedure, groups=groups)
        return code, answer, f"failover {answer['verdict']}: flow {FLOW} (summary)", ""
    monkeypatch.setattr(failover, "run_check", check)
    return seen


def test_a_ready_cutoff_writes_the_stop_and_prints_the_diff(tmp_path, capsys, monkeypatch):
    proj = project(tmp_path)
    seen = given(monkeypatch, report())
    assert main(["-C", str(proj), "failover", "--stack", "drill", "--flow", FLOW, "--credentials",
                 str(credentials(tmp_path)), "--group", "readers"]) == 0
    assert (seen["flow"], seen["procedure"], seen["groups"]) == (FLOW, "cutoff", ["readers"])
    lines = TOPOLOGY.splitlines(keepends=True)
    at = lines.index("    failover: {procedure: cutoff}\n") + 1
    path = proj / "stacks" / "drill.yaml"
    assert path.read_text() == "".join(lines[:at] + [STOPPED_LINE] + lines[at:])
    out = capsys.readouterr().out
    head, diff = out.split("\n\nReplication diff: ", 1)
    assert head.splitlines() == [
        f"failover ready: flow {FLOW} (summary)",
        *failover.show(report()).splitlines(),
        "",
        "ready: step 4, the flow stopped",
        f"wrote {path}: flows[0] ({FLOW}) stopped; review it and let your pipeline run `pulumi preview` and "
        "`pulumi up`"]
    assert diff.splitlines()[:3] == ["drill.yaml before → after", "", "Stack drill: 3 changed"]
    for connector in ("checkpoint", "heartbeat", "source"):
        assert (f"  ! connector state — flow {FLOW}, KafkaConnector {FLOW}/{FLOW}-{connector}: the Mirror"
                f"{connector.capitalize()}Connector goes from running to stopped") in diff.splitlines()
    # Run again: the flow is stopped already, and the file stays as it is.
    written = path.read_text()
    assert main(["-C", str(proj), "failover", "--stack", "drill", "--flow", FLOW, "--credentials",
                 str(credentials(tmp_path / "again"))]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"{path}: flows[0] ({FLOW}) is already stopped: nothing to write")
    assert path.read_text() == written


def test_dry_run_and_not_ready_write_nothing(tmp_path, capsys, monkeypatch):
    proj = project(tmp_path)
    path = proj / "stacks" / "drill.yaml"
    given(monkeypatch, report())
    creds = str(credentials(tmp_path))
    assert main(["-C", str(proj), "failover", "--stack", "drill", "--flow", FLOW, "--credentials", creds,
                 "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"--dry-run: nothing written; without it, flows[0] ({FLOW}) of {path} is set to state "
        "{'source': 'stopped', 'checkpoint': 'stopped', 'heartbeat': 'stopped'}")
    given(monkeypatch, report("not-ready"), code=1)
    assert main(["-C", str(proj), "failover", "--stack", "drill", "--flow", FLOW, "--credentials", creds]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "not ready: nothing written"
    assert path.read_text() == TOPOLOGY
