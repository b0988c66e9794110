"""`kafka-replication status --live` (infra/tools/status, infra/tools/show.py): the Kubernetes
objects read through the scripted reader of test_status_verdicts.py, the lag now given as the lag
reader (spark/lag.py) reports it, `lag.read` standing in for the child process. What is refused
before anything is read, the exact text and JSON, how the live verdict and the objects' decide the
health together, and `--watch` reading both again. The reader itself runs on real Kafka and
Connect in tests/runtime/test_runtime_failover.py (step 5) and tests/audit/test_lag.py."""

from __future__ import annotations

import json

import pytest

from infra.tools import lag
from tests.support.stacks import ROOT
from tests.unit.test_status_verdicts import NS, OUTPUTS, SOURCE, _pulumi_stub, connector, healthy, run_cli

FILES = {"us-west": ("password", "truststore", "truststore.password"), "us-east": ("password", "ca.crt")}


@pytest.fixture
def stack(monkeypatch, tmp_path):
    """`--stack dev` of this project: the outputs from a stand-in `pulumi` (the real CLI reads a
    real stack in tests/engine/test_engine_readiness.py), the topology from stacks/dev.yaml."""
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(OUTPUTS))
    monkeypatch.setenv("PATH", _pulumi_stub(tmp_path / "bin", f"cat {outputs}") + ":" + str(ROOT / ".venv" / "bin"))
    monkeypatch.chdir(ROOT)
    creds = tmp_path / "creds"
    for alias, names in FILES.items():
        (creds / alias).mkdir(parents=True)
        for name in names:
            (creds / alias / name).write_text("x")
    return creds


def row(partition: int, end: int, committed: int | None, lag_: int, status: str = "ok",
        age: float | None = None) -> dict:
    return {"connector": SOURCE, "topic": "test.orders", "partition": partition, "earliest": 0, "end": end,
            "committed": committed, "lag": lag_, "lost": 0, "status": status, "oldestUnreplicatedAgeSeconds": age}


def live_report(verdict: str, lag_: int = 0, errors: list[str] | None = None) -> dict:
    return {"version": 1, "checkedAt": 1796300000000, "verdict": verdict, "flows": [
        {"flow": NS, "sourceAlias": "us-west", "targetAlias": "us-east", "maxLag": 0,
         "replication": [row(0, 9, 9 - lag_, lag_, "lagging" if lag_ else "ok", 125.0 if lag_ else None),
                         row(1, 4, 4, 0)],
         "groups": [{"group": "test.readers", "newestAgeSeconds": 8.0, "partitions": [
             {"topic": "test.orders", "targetTopic": "us-west.test.orders", "partition": 0, "upstream": 5,
              "translated": 5, "ageSeconds": 8.0}]}],
         "errors": errors or [], "findings": [f"test.orders[0]: lagging, lag {lag_}"] if lag_ else []}]}


def reading(monkeypatch, *answers: tuple[dict | None, str]) -> list:
    """`lag.read` answering each round in turn, then Ctrl-C; the calls it was given, returned."""
    calls, left = [], list(answers)

    def read(config, credentials, flows):
        calls.append((config, credentials, flows))
        if not left:
            raise KeyboardInterrupt
        return left.pop(0)
    monkeypatch.setattr(lag, "read", read)
    return calls


def test_the_live_lag_is_shown_under_the_objects_and_decides_the_health(monkeypatch, capsys, stack):
    calls = reading(monkeypatch, (live_report("findings", lag_=2), ""), (live_report("ok"), ""))
    code, out, err = run_cli(monkeypatch, capsys, healthy(), "--stack", "dev", "--live", "--credentials", str(stack),
                             "--bootstrap", "us-west=localhost:19093", "--connect", f"{NS}=http://localhost:8083")
    assert (code, err) == (1, "")
    assert out.split("\n\nlive lag read at", 1)[1] == """ 2026-12-03 12:13:20 UTC

flow repl-us-west-us-east: us-west -> us-east
  replication: 2 record(s) behind on 1 of 2 partition(s), the oldest not replicated 2 min old (the audit's maxLag: 0)
    test.orders[0]: end 9, replicated 7, lag 2, oldest not replicated 2 min old (lagging)
  checkpoints on us-east: 1 group(s), newest checkpoint of each:
    test.readers: 8 s old (1 partition(s), the least recent 8 s old)

degraded (exit 1): 1 flow, 1 healthy; 1 audit, 1 healthy; live lag: 1 partition(s) past the audit's maxLag
"""
    # The reader was given the stack's flows at the addresses given, as `kafka-replication lag` gives them.
    config, credentials, flows = calls[0]
    assert (credentials, flows) == (stack, [NS])
    assert [f["name"] for f in config["flows"]] == [NS]
    assert config["clusters"]["us-west"]["bootstrapServers"] == "localhost:19093"
    assert [c["restUrl"] for c in config["flows"][0]["connectors"]] == ["http://localhost:8083"]
    code, out, _ = run_cli(monkeypatch, capsys, healthy(), "--stack", "dev", "--live", "--credentials", str(stack),
                           "--output", "json")
    got = json.loads(out)
    assert (code, got["health"], got["exitCode"], got["live"], got["liveError"]) == (
        0, "healthy", 0, live_report("ok"), None)
    assert list(got) == ["health", "exitCode", "operator", "flows", "audits", "live", "liveError"]


def test_what_could_not_be_read_is_unknown_and_down_still_outranks_it(monkeypatch, capsys, stack):
    reading(monkeypatch, (None, "lag error: the reader did not finish within 600 s"),
            (live_report("error", errors=["replication: metadata on us-west (source): all brokers down"]), ""),
            (live_report("ok"), ""))
    args = ("--stack", "dev", "--live", "--credentials", str(stack))
    code, out, _ = run_cli(monkeypatch, capsys, healthy(), *args)
    assert code == 5
    assert out.endswith("\n\nlive lag not read: lag error: the reader did not finish within 600 s\n\n"
                        "unknown (exit 5): 1 flow, 1 healthy; 1 audit, 1 healthy; live lag: not read\n")
    code, out, _ = run_cli(monkeypatch, capsys, healthy(), *args)
    assert code == 5 and "  ! not read: replication: metadata on us-west (source): all brokers down\n" in out
    assert out.endswith("unknown (exit 5): 1 flow, 1 healthy; 1 audit, 1 healthy; live lag: not everything could "
                        "be read\n")
    objects = healthy()
    objects[("KafkaConnector", NS, SOURCE)] = connector(SOURCE, state="FAILED", tasks=())
    code, out, _ = run_cli(monkeypatch, capsys, objects, *args, "--output", "json")
    assert (code, json.loads(out)["health"]) == (4, "down")


def test_live_s_problems_are_said_with_the_others_before_anything_is_read(monkeypatch, capsys, stack, tmp_path):
    monkeypatch.setattr(lag, "read", lambda *a: pytest.fail("the lag was read"))
    code, out, err = run_cli(monkeypatch, capsys, healthy(), "--stack", "dev", "--live", "--flow", "nope",
                             "--bootstrap", "mars=h:1", "--connect", "x")
    assert (code, out) == (2, "")
    assert err == (
        "error: the command line has 4 problem(s):\n"
        "  - --flow: (argument): got 'nope'; expected a flow of the stack's outputs: repl-us-west-us-east\n"
        "  - --bootstrap: (argument): got 'mars=h:1'; expected NAME=HOST:PORT[,HOST:PORT...] with NAME one of: "
        "us-east (clusters.us-east), us-west (clusters.us-west)\n"
        "  - --connect: (argument): got 'x'; expected NAME=http://HOST:PORT (a port-forward to its REST API) with "
        f"NAME one of: {NS} (the Connect cluster at http://{NS}-connect-api.{NS}.svc:8083)\n"
        "  - --credentials: (argument): missing; expected a folder holding us-east/password, us-east/ca.crt, "
        "us-west/password, us-west/truststore, us-west/truststore.password (the audit's Secrets' layout: "
        "docs/operations.md#the-failover-command)\n")
    outputs = tmp_path / "saved.json"
    outputs.write_text(json.dumps(OUTPUTS))
    code, _, err = run_cli(monkeypatch, capsys, healthy(), "--outputs", str(outputs), "--live")
    assert (code, err) == (2, (
        "error: the command line has 1 problem(s):\n  - --live: (argument): got '--outputs " + str(outputs) +
        "'; expected --stack NAME: the live lag is read from the clusters of the stack's topology file "
        "(stacks/NAME.yaml); or run kafka-replication lag --stack NAME\n"))
    code, _, err = run_cli(monkeypatch, capsys, healthy(), "--stack", "dev", "--credentials", str(stack),
                           "--connect", f"{NS}=http://localhost:8083")
    assert (code, err) == (2, (
        "error: the command line has 2 problem(s):\n"
        f"  - --credentials: (argument): got '{stack}'; expected given with --live only (how the live lag reaches "
        "the clusters)\n"
        f"  - --connect: (argument): got '{NS}=http://localhost:8083'; expected given with --live only (how the live "
        "lag reaches the clusters)\n"))


def test_watch_reads_the_objects_and_the_lag_again_each_round(monkeypatch, capsys, stack):
    reading(monkeypatch, (live_report("findings", lag_=3), ""), (live_report("ok"), ""))
    monkeypatch.setattr("infra.tools.watching.time.sleep", lambda s: None)
    monkeypatch.setattr("infra.tools.watching.time.monotonic", iter(range(0, 10**6, 5)).__next__)
    code, out, _ = run_cli(monkeypatch, capsys, healthy(), "--stack", "dev", "--live", "--credentials", str(stack),
                           "--watch", "5", "--output", "json")
    rounds = [json.loads(line) for line in out.splitlines()]
    # Each round one document: the lag read again (past maxLag, then caught up), then Ctrl-C.
    assert ([r["exitCode"] for r in rounds], [r["live"]["verdict"] for r in rounds], code) == (
        [1, 0], ["findings", "ok"], 130)


def test_the_example_of_the_docs_is_what_the_command_prints(monkeypatch, capsys, stack):
    """docs/status.md's `--live` example: the dev stack healthy in Kubernetes, its source
    connector three records behind, the oldest an hour old: degraded by the live read alone."""
    rows = [row(0, 9, 6, 2, "lagging", 3600.4), row(1, 8, 6, 1, "lagging", 3599.0)]
    report = live_report("findings")
    flow = report["flows"][0]
    flow.update(replication=rows, findings=["test.orders[0]: lagging, lag 2", "test.orders[1]: lagging, lag 1"])
    flow["groups"][0].update(newestAgeSeconds=250.0, partitions=[
        {**flow["groups"][0]["partitions"][0], "ageSeconds": 250.0},
        {**flow["groups"][0]["partitions"][0], "partition": 1, "ageSeconds": 251.0}])
    report["checkedAt"] = 1796280011000  # 2026-12-03 06:40:11 UTC
    reading(monkeypatch, (report, ""))
    code, out, _ = run_cli(monkeypatch, capsys, healthy(), "--stack", "dev", "--live", "--credentials", str(stack))
    doc = (ROOT / "docs" / "status.md").read_text()
    (example,) = [block.split("```", 1)[0] for block in doc.split("```text\n")[1:] if "\nlive lag read at" in block]
    assert code == 1 and out.endswith("\n" + example) and example.startswith("audit ")
