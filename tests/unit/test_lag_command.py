"""`kafka-replication lag` (infra/tools/lag.py) without clusters: what it refuses before anything
runs, the configuration its reader is given, its exact text and exit codes for a report given (the
reader, spark/lag.py, runs on real Kafka in tests/runtime/test_runtime_failover.py and is unit
tested in tests/audit/test_lag.py)."""

from __future__ import annotations

import json

import pytest
import yaml

from infra.tools import lag
from infra.tools.cli import main
from tests.unit.test_failover_command import FLOW, TOPOLOGY, credentials, project

# The failover tests' clusters, a third one, and a flow from each of two sources to b.
TWO_FLOWS = yaml.safe_dump({
    "clusters": {**yaml.safe_load(TOPOLOGY)["clusters"], "c": {"bootstrapServers": "c-kafka:9092"}},
    "flows": [{"source": "a", "target": "b", "topics": ["orders.*"]},
              {"source": "c", "target": "b", "topics": ["sales"]}]}, sort_keys=False)


def row(partition: int, end: int, committed: int | None, lag_: int, status: str = "ok",
        age: float | None = None) -> dict:
    return {"connector": f"{FLOW}-source", "topic": "orders.eu", "partition": partition, "earliest": 0, "end": end,
            "committed": committed, "lag": lag_, "lost": 0, "status": status, "oldestUnreplicatedAgeSeconds": age}


def lag_report(verdict: str = "error") -> dict:
    return {"version": 1, "checkedAt": 1796300000000, "verdict": verdict, "flows": [
        {"flow": FLOW, "sourceAlias": "a", "targetAlias": "b", "maxLag": 0,
         "replication": [row(0, 9, 6, 2, "lagging", 3605.2), row(1, 8, 7, 0), row(2, 4, None, 4, "never-replicated", 61)],
         "groups": [{"group": "readers", "newestAgeSeconds": 12.5, "partitions": [
             {"topic": "orders.eu", "targetTopic": "a.orders.eu", "partition": 0, "upstream": 5, "translated": 5,
              "ageSeconds": 12.5},
             {"topic": "orders.eu", "targetTopic": "a.orders.eu", "partition": 1, "upstream": 7, "translated": 7,
              "ageSeconds": 7300}]}],
         "errors": [], "findings": ["orders.eu[0]: lagging, lag 2", "orders.eu[2]: never-replicated, lag 4"]},
        {"flow": "repl-c-b", "sourceAlias": "c", "targetAlias": "b", "maxLag": 0, "replication": None,
         "groups": [], "errors": ["replication: metadata on c (source): all brokers down"], "findings": []}]}


def test_the_text_names_each_lagging_partition_and_each_group_s_age():
    assert lag.text(lag_report()) == """\
replication lag read at 2026-12-03 12:13:20 UTC

flow repl-a-b: a -> b
  replication: 6 record(s) behind on 2 of 3 partition(s), the oldest not replicated 60 min old (the audit's maxLag: 0)
    orders.eu[2]: end 4, replicated none, lag 4, oldest not replicated 61 s old (never-replicated)
    orders.eu[0]: end 9, replicated 6, lag 2, oldest not replicated 60 min old (lagging)
  checkpoints on b: 1 group(s), newest checkpoint of each:
    readers: 12 s old (2 partition(s), the least recent 2 h 1 min old)

flow repl-c-b: c -> b
  checkpoints on b: 0 group(s)
  ! not read: replication: metadata on c (source): all brokers down

unknown (exit 5): not everything could be read
"""
    many = lag_report("ok")
    many["flows"][0]["replication"] = [row(p, 10, 9 - p % 3, p % 3 + 1) for p in range(25)]
    lines = lag.text(many).splitlines()
    assert lines[3] == "  replication: 49 record(s) behind on 25 of 25 partition(s) (the audit's maxLag: 0)"
    assert lines[4] == "    orders.eu[2]: end 10, replicated 7, lag 3, oldest not replicated age not read"
    assert lines[24] == "    and 5 more partition(s) behind (--json lists every one)"
    assert lines[-1] == "within the audit's threshold (exit 0)"


def test_every_bad_argument_is_refused_at_once_before_anything_runs(tmp_path, capsys, monkeypatch):
    proj = project(tmp_path, TWO_FLOWS)
    monkeypatch.setattr(lag, "read", lambda *a: pytest.fail("the reader ran"))
    code = main(["-C", str(proj), "lag", "--stack", "drill", "--flow", "repl-b-a", "--bootstrap", "d=x:1",
                 "--connect", "repl-c-b=ftp://x"])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: the command line has 4 problem(s):",
        "  - --flow: (argument): got 'repl-b-a'; expected a flow of the stack: repl-a-b, repl-c-b",
        "  - --bootstrap: (argument): got 'd=x:1'; expected NAME=HOST:PORT[,HOST:PORT...] with NAME one of: "
        "a (clusters.a), b (clusters.b), c (clusters.c)",
        "  - --connect: (argument): got 'repl-c-b=ftp://x'; expected repl-c-b=http://HOST:PORT (a port-forward to "
        "its REST API)",
        "  - --credentials: (argument): missing; expected a folder holding b/password (the audit's Secrets' layout: "
        "docs/operations.md#the-failover-command)"]
    with pytest.raises(SystemExit) as exit_:
        main(["-C", str(proj), "lag", "--stack", "drill", "--watch", "1"])
    assert exit_.value.code == 2
    assert "argument --watch: '1': a whole number of seconds from 2 to 3600" in capsys.readouterr().err


def test_the_reader_is_given_the_flows_asked_for_at_the_addresses_given(tmp_path, capsys, monkeypatch):
    proj = project(tmp_path, TWO_FLOWS)
    seen = {}

    def read(config, creds, chosen):
        seen.update(config=config, chosen=chosen)
        return lag_report(), ""
    monkeypatch.setattr(lag, "read", read)
    creds = credentials(tmp_path)
    assert main(["-C", str(proj), "lag", "--stack", "drill", "--flow", FLOW, "--credentials", str(creds),
                 "--bootstrap", "a=127.0.0.1:19092", "--connect", f"{FLOW}=http://127.0.0.1:18083/"]) == 5
    assert seen["chosen"] == [FLOW]
    assert [f["name"] for f in seen["config"]["flows"]] == [FLOW]
    assert sorted(seen["config"]["clusters"]) == ["a", "b"]
    assert seen["config"]["clusters"]["a"]["bootstrapServers"] == "127.0.0.1:19092"
    assert [c["restUrl"] for c in seen["config"]["flows"][0]["connectors"]] == ["http://127.0.0.1:18083"]
    assert capsys.readouterr().out == lag.text(lag_report())
    # Every flow by default; the verdicts' exit codes; JSON as the reader wrote it.
    for verdict, code in (("ok", 0), ("findings", 1), ("error", 5)):
        monkeypatch.setattr(lag, "read", lambda config, creds, chosen, v=verdict: (
            seen.update(config=config, chosen=chosen) or lag_report(v), ""))
        assert main(["-C", str(proj), "lag", "--stack", "drill", "--credentials", str(creds)]) == code
        assert capsys.readouterr().out.splitlines()[-1].endswith(f"(exit {code})" + (
            ": 2 partition(s)" if code == 1 else ": not everything could be read" if code == 5 else ""))
        assert seen["chosen"] == [FLOW, "repl-c-b"] and sorted(seen["config"]["clusters"]) == ["a", "b", "c"]
    assert main(["-C", str(proj), "lag", "--stack", "drill", "--credentials", str(creds), "--json"]) == 5
    assert json.loads(capsys.readouterr().out) == lag_report("error")
    # No report: could not read, said on standard error.
    monkeypatch.setattr(lag, "read", lambda *a: (None, "lag error: could not read: no flow named x"))
    assert main(["-C", str(proj), "lag", "--stack", "drill", "--credentials", str(creds)]) == 5
    assert capsys.readouterr().err == "lag: could not read: lag error: could not read: no flow named x\n"


def test_watch_reads_again_until_interrupted(tmp_path, capsys, monkeypatch):
    proj = project(tmp_path, TWO_FLOWS)
    rounds = []

    def read(config, creds, chosen):
        rounds.append(1)
        if len(rounds) == 3:
            raise KeyboardInterrupt
        return lag_report("ok"), ""
    monkeypatch.setattr(lag, "read", read)
    monkeypatch.setattr("infra.tools.watching.time.sleep", lambda s: None)
    monkeypatch.setattr("infra.tools.watching.time.monotonic", iter(range(0, 10**6, 5)).__next__)
    assert main(["-C", str(proj), "lag", "--stack", "drill", "--credentials", str(credentials(tmp_path)),
                 "--watch", "2", "--json"]) == 130
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line) for line in lines] == [lag_report("ok"), lag_report("ok")]
