"""`kafka-replication failover` (infra/tools/failover.py) without clusters: what it refuses before
anything runs, when it writes the runbook's change and what it says, the change made on the
user's own lines, and the whole command with the readiness check's report given (the check
itself runs on real Kafka in tests/runtime/test_runtime_failover.py and the drills of
tests/runtime/test_failover_drills.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from infra.core.errors import TopologyError
from infra.deploy.deployment import validate_file
from infra.plan.audit import audit_config
from infra.tools import failover, stackfile
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
            "procedure": procedure, "procedures": ["continuous", "cutoff", "disaster"], "waitSeconds": 10, "checkedAt": 7,
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
        assert failover.decide(d, procedure, False, report("error", procedure, errors=["b (target): down"])) == (
            failover.Decision(False, "could not tell (what could not be read is never judged): nothing written"))


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
    reduced = failover.check_config(config, [d], {"a": "127.0.0.1:19092"}, {FLOW: "http://127.0.0.1:18083/"},
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
    given(monkeypatch, report("error", errors=["b (target): all brokers down"]), code=2)
    assert main(["-C", str(proj), "failover", "--stack", "drill", "--flow", FLOW, "--credentials", creds]) == 2
    assert capsys.readouterr().out.splitlines()[-1] == (
        "could not tell (what could not be read is never judged): nothing written")
    assert path.read_text() == TOPOLOGY


# ----------------------------------------------------------------- the failback


IDENTITY = TOPOLOGY.replace("    failover: {procedure: cutoff}\n",
                            "    replicationPolicy: identity\n    failover: {procedure: cutoff}\n")
ENDS = [{"topic": "orders.eu", "partition": 0, "end": 10}, {"topic": "orders.eu", "partition": 1, "end": 0}]


def stopped_project(tmp_path: Path, text: str) -> Path:
    return project(tmp_path, stackfile.stopped_text(text, 0))


def test_the_reversed_flow_keeps_its_settings_and_leaves_out_what_was_the_old_flow_s():
    entry = {"name": "orders", "source": "a", "target": "b", "topics": ["x"], "kubernetes": "k8s-b",
             "state": dict(stackfile.STOPPED), "acknowledgeReplayedHistory": True, "config": {"source": {"k": "v"}},
             "offsets": [{"connector": "orders-source", "action": "list", "request": "r1"}],
             "sources": [{"name": "one", "topics": ["y"], "state": "stopped"}]}
    assert failover.reversed_entry(entry) == {"source": "b", "target": "a", "topics": ["x"],
                                              "config": {"source": {"k": "v"}},
                                              "sources": [{"name": "one", "topics": ["y"]}]}


def test_a_default_failback_adds_the_reverse_flow_beside_the_stopped_one(tmp_path, capsys):
    proj = stopped_project(tmp_path, TOPOLOGY)
    path = proj / "stacks" / "drill.yaml"
    before = path.read_text()
    assert main(["-C", str(proj), "failback", "--stack", "drill", "--flow", FLOW]) == 0
    expected = yaml.safe_load(before)
    expected["flows"].append({"source": "b", "target": "a", "topics": ["orders.*"], "failover": {"procedure": "cutoff"}})
    assert yaml.safe_load(path.read_text()) == expected
    assert path.read_text().startswith(before.split("\n  # the next section")[0])
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [
        f"wrote {path}: flow repl-b-a added beside the stopped {FLOW}; review it and let your pipeline run "
        "`pulumi preview` and `pulumi up`",
        "then fail over to a again with `kafka-replication failover --flow repl-b-a` (the procedures above)"]
    assert main(["-C", str(proj), "failback", "--stack", "drill", "--flow", FLOW]) == 0
    assert capsys.readouterr().out == f"{path}: flow repl-b-a is there already: nothing to write\n"


def test_a_failback_is_refused_before_the_failover_and_without_its_record(tmp_path, capsys):
    proj = project(tmp_path, IDENTITY)
    assert main(["-C", str(proj), "failback", "--stack", "drill", "--flow", FLOW]) == 2
    record = proj / "stacks" / f"drill.{FLOW}.failover.json"
    assert capsys.readouterr().err.splitlines() == [
        "error: the failback has 1 problem(s):",
        f"  - flows[0] ({FLOW}): state: missing; expected {stackfile.STOPPED_LINE}: fail over first "
        "(`kafka-replication failover`), which stops the flow"]
    (proj / "stacks" / "drill.yaml").write_text(stackfile.stopped_text(IDENTITY, 0))
    assert main(["-C", str(proj), "failback", "--stack", "drill", "--flow", FLOW]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: the failback has 1 problem(s):",
        f"  - {record}: (failover record): missing; expected the record `kafka-replication failover` writes when it "
        f"stops identity flow {FLOW}: each partition's end offset on the old target, where the reversed flow starts. "
        "Without it, note them as docs/operations.md#controlled-failback says and write the reversed flow by hand"]
    record.write_text(json.dumps({"version": 1, "flow": FLOW, "targetEnds": [{"topic": "t", "partition": -1,
                                                                              "end": 3}]}))
    assert main(["-C", str(proj), "failback", "--stack", "drill", "--flow", FLOW]) == 2
    assert capsys.readouterr().err.splitlines()[1] == (
        f"  - {record}: (failover record): missing; expected a failover record of flow {FLOW}, version 1, as "
        "`kafka-replication failover` wrote it")


def record_for(proj: Path) -> None:
    (proj / "stacks" / f"drill.{FLOW}.failover.json").write_text(json.dumps(failover.failover_record(
        {**report(), "replicationPolicy": "identity", "targetEnds": ENDS})))


def test_an_identity_failback_replaces_the_flow_stopped_at_the_record_s_ends_then_resumes(tmp_path, capsys):
    text = IDENTITY.replace("# the drill's topology\n", "# the drill's topology\noperator: {flavour: strimzi, "
                            "version: 1.2.0}\n")
    proj = stopped_project(tmp_path, text)
    record_for(proj)
    path = proj / "stacks" / "drill.yaml"
    assert main(["-C", str(proj), "failback", "--stack", "drill", "--flow", FLOW]) == 0
    reversed_flow = {"source": "b", "target": "a", "topics": ["orders.*"], "replicationPolicy": "identity",
                     "failover": {"procedure": "cutoff"}, "state": {"source": "stopped"},
                     "offsets": [{"connector": "repl-b-a-source", "action": "alter", "request": "failback",
                                  "offsets": [{"topic": "orders.eu", "partition": 0, "offset": 9}]}]}
    expected = yaml.safe_load(text)
    expected["flows"] = [reversed_flow]
    assert yaml.safe_load(path.read_text()) == expected
    assert capsys.readouterr().out.splitlines()[:2] == [
        f"wrote {path}: flows[0] ({FLOW}) replaced by repl-b-a, stopped with its offsets at the failover record's "
        "ends; review it and let your pipeline run `pulumi preview` and `pulumi up`",
        "once the operator has carried out the alter (the KafkaConnector repl-b-a-source without its "
        f"strimzi.io/connector-offsets annotation), `kafka-replication failback --flow {FLOW} --resume` sets it running"]
    assert main(["-C", str(proj), "failback", "--stack", "drill", "--flow", FLOW, "--resume"]) == 0
    del reversed_flow["offsets"]
    reversed_flow["state"] = {"source": "running"}
    assert yaml.safe_load(path.read_text()) == expected
    assert capsys.readouterr().out.splitlines()[:2] == [
        f"wrote {path}: flows[0] (repl-b-a) set running, its failback offsets request removed; review it and let "
        "your pipeline run `pulumi preview` and `pulumi up`",
        f"the failover record {proj / 'stacks' / f'drill.{FLOW}.failover.json'} has served: remove it with this change"]


def test_without_offsets_requests_the_failback_acknowledges_and_prints_the_patch(tmp_path, capsys):
    proj = stopped_project(tmp_path, IDENTITY)  # csm 1.2, the default operator: no offsets requests
    record_for(proj)
    assert main(["-C", str(proj), "failback", "--stack", "drill", "--flow", FLOW, "--dry-run"]) == 0
    assert capsys.readouterr().out == (f"--dry-run: nothing written; without it, flows[0] ({FLOW}) replaced by "
                                       "repl-b-a, stopped with its offsets at the failover record's ends\n")
    assert main(["-C", str(proj), "failback", "--stack", "drill", "--flow", FLOW]) == 0
    flow = yaml.safe_load((proj / "stacks" / "drill.yaml").read_text())["flows"][0]
    assert (flow["state"], flow["acknowledgeReplayedHistory"], "offsets" in flow) == ({"source": "stopped"}, True, False)
    assert capsys.readouterr().out.splitlines()[1:4] == [
        "this release has no offsets requests: once it is deployed stopped, set its offsets through the Connect REST "
        f"API (docs/operations.md#controlled-failback), then `kafka-replication failback --flow {FLOW} --resume` sets "
        "it running:",
        "  kubectl -n repl-b-a port-forward svc/repl-b-a-connect-api 8083:8083 &",
        "  curl -fsS -X PATCH -H 'Content-Type: application/json' http://localhost:8083/connectors/repl-b-a-source/"
        'offsets -d \'{"offsets": [{"partition": {"cluster": "b", "topic": "orders.eu", "partition": 0}, '
        '"offset": {"offset": 9}}]}\'']


def test_failover_keeps_the_record_of_an_identity_flow_it_stops(tmp_path, capsys, monkeypatch):
    proj = project(tmp_path, IDENTITY)
    given(monkeypatch, {**report(), "replicationPolicy": "identity", "checkedAt": 42, "targetEnds": ENDS})
    assert main(["-C", str(proj), "failover", "--stack", "drill", "--flow", FLOW, "--credentials",
                 str(credentials(tmp_path))]) == 0
    record = proj / "stacks" / f"drill.{FLOW}.failover.json"
    assert json.loads(record.read_text()) == {"version": 1, "flow": FLOW, "sourceAlias": "a", "targetAlias": "b",
                                              "procedure": "cutoff", "checkedAt": 42, "targetEnds": ENDS}
    assert (f"wrote {record}: each partition's end offset on b now, where `kafka-replication failback` starts the "
            "reversed flow (commit it with the change)") in capsys.readouterr().out.splitlines()
