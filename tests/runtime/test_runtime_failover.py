"""The failover readiness check (spark/failover.py) on the runtime tier's real clusters: the dev
flow with checkpoints and group offset sync every 5 s (set through the topology), a consumer group
that read on the source, its checkpoints read from the target's `us-west.checkpoints.internal`
and its offsets synced there. Ready (exit 0) with the exact checkpoint rows; then not ready (exit
1) with the exact finding while a consumer of the group is active on the target, and when the
checkpoint connector is stopped and the group moves on at the source (stale checkpoints)."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from infra.tools.rehearsal.run import Rehearsal
from tests.support import runbooks
from tests.support.replication import (HAND_MADE_STATES, POD_CONFIG, STACK, audit_pod, dev_for_runtime, eventually,
                                       failover_command, in_audit_pod, operator_command, rehearsal, running,
                                       stack_project)
from tests.support.stacks import ROOT

pytestmark = pytest.mark.runtime

FLOW = "repl-us-west-us-east"
GROUP = "test.readers"
CHECKPOINT = f"{FLOW}-checkpoint"
SOURCE = f"{FLOW}-source"


def readiness_run(r: Rehearsal, directory: Path, name: str, *args: str) -> tuple[int, dict, str]:
    """`python -m spark.audit failover` as an operator runs it in the audit's pod: the rendered
    audit configuration and credential files, librdkafka against the brokers, the Connect REST
    API; in a mount namespace whose /etc/hosts maps the topology's host names and each Connect
    cluster's Service name to the loopback addresses here (as test_replication.audit_run does)."""
    run_dir = directory / name
    config, creds, hosts = audit_pod(r, run_dir)
    argv = [sys.executable, "-m", "spark.audit", "failover", "--config", str(config),
            "--credentials", str(creds), "--out", str(run_dir / "out"), "--flow", FLOW, *args]
    quoted = " ".join(f"'{a}'" for a in argv)
    (run_dir / "out" / "failover.json").unlink(missing_ok=True)
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           f"mount --bind '{hosts}' /etc/hosts && exec {quoted}"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=300, cwd=ROOT)
    path = run_dir / "out" / "failover.json"
    assert path.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return done.returncode, json.loads(path.read_text()), done.stdout


def runbook_failover_line(r: Rehearsal, project: Path, topo: dict) -> subprocess.CompletedProcess[str]:
    """docs/operations.md's `kafka-replication failover` line as written, run by bash in `project`
    (Pulumi.prod.yaml, stacks/prod.yaml: the drill's topology; ./failover-creds: the audit's
    credential files), `kafka-replication` the suite's, the worker's REST API at localhost:8083
    (the port-forward it names: tests/support/portforward.py stands in for it), the topology's
    broker names resolved as in the audit's pod (a mount namespace's /etc/hosts)."""
    import shutil
    from infra.tools.rehearsal.operator import REST_PORT
    from tests.support.portforward import forwarded
    line = runbooks.line("The failover command", "kafka-replication failover")
    _, creds, hosts = audit_pod(r, project / "pod")
    shutil.copytree(creds, project / "failover-creds")
    (project / "stacks").mkdir(parents=True, exist_ok=True)
    (project / "Pulumi.yaml").write_text("name: kafka-replication\nruntime: python\n")
    (project / "Pulumi.prod.yaml").write_text("config: {}\n")
    (project / "stacks" / "prod.yaml").write_text(yaml.safe_dump(topo, sort_keys=False))
    tools = project / "bin"
    tools.mkdir()
    (tools / "kafka-replication").write_text(f'#!/bin/sh\nexec {sys.executable} -m infra "$@"\n')
    (tools / "kafka-replication").chmod(0o755)
    with forwarded(REST_PORT, r.workers[(FLOW, FLOW)].host, REST_PORT):
        return subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c",
                               f'mount --bind "{hosts}" /etc/hosts && exec bash -c "$RUNBOOK_LINE"'],
                              capture_output=True, text=True, timeout=600, cwd=project,
                              env={**os.environ, "RUNBOOK_LINE": line, "PYTHONPATH": str(ROOT),
                                   "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"})


def checkpoint_rows(report: dict) -> list[tuple]:
    return [(g["group"], p["targetTopic"], p["partition"], p["checkpoint"]["upstream"], p["checkpoint"]["translated"])
            for g in report["groups"] for p in g["partitions"] if p["checkpoint"]]


def replication_rows(report: dict) -> list[tuple]:
    return [(r["topic"], r["partition"], r["end"], r["committed"], r["lag"], r["status"]) for r in report["replication"]]


# The oldest and the newest Kafka line the releases run (3.8 and 4.3): group states and the
# answers for unknown groups changed between them.
LINES = [("csm", "1.2"), ("strimzi", "1.2.0")]


@pytest.mark.parametrize("flavour,version", LINES, ids=[f"{f}-{v}" for f, v in LINES])
def test_failover_readiness_on_real_kafka(flavour, version, runtime_api, tmp_path):
    topo = dev_for_runtime(flavour, version)  # emit.checkpoints and sync.group.offsets every 5 s
    topo["flows"][0]["failover"] = {"procedure": "continuous"}
    topo["audit"] = {"thresholds": {"maxLag": 0}, "window": {"graceMinutes": 0}}
    with rehearsal(topo, tmp_path, runtime_api, **HAND_MADE_STATES) as r:
        source, target = r.client("us-west"), r.client("us-east")
        r.clients.create_topics(source, {"test.orders": 2})
        r.clients.produce(source, "test.orders", [{"key": f"k{i}", "value": f"v{i}", "partition": i % 2}
                                                  for i in range(10)])
        # The group reads everything on the source and commits: 5 per partition.
        r.clients.consume(source, ["test.orders"], 10, 30_000, group=GROUP)
        assert r.clients.group_offsets(source, GROUP) == {"test.orders:0": 5, "test.orders:1": 5}
        r.deploy()
        running(r)
        worker = r.workers[(FLOW, FLOW)]

        def committed() -> dict[int, int]:
            return {o["partition"]["partition"]: o["offset"]["offset"]
                    for o in worker.get(f"/connectors/{SOURCE}/offsets")["offsets"]
                    if o["partition"].get("topic") == "test.orders"}
        eventually("the source connector's committed offsets", lambda: committed() == {0: 4, 1: 4}, 120)
        synced = {"us-west.test.orders:0": 5, "us-west.test.orders:1": 5}
        eventually("the group's offsets synced on us-east", lambda: r.clients.group_offsets(target, GROUP) == synced, 120)

        # 0. The active topic missing on the target: consumers moved there would subscribe to it
        # before it exists. Not ready until it is created as its replica is.
        code, report, out = readiness_run(r, tmp_path, "no-active-topic", "--procedure", "continuous")
        assert (code, report["verdict"], report["findings"]) == (1, "not-ready", [
            "active topic test.orders does not exist on us-east: create it (2 partition(s), as its replica "
            "us-west.test.orders) before the consumers move. They subscribe to it (failover.topics), are assigned it "
            "only once it exists, and with auto.offset.reset latest skip what producers write to it before"]), out
        r.clients.create_topics(target, {"test.orders": 2})

        # 1. Ready: every checkpoint translates the source's offsets, synced into an inactive group.
        # docs/operations.md's two readiness lines as written, in the audit's pod (in_audit_pod):
        # the first from the directory of audit.json, the flow's procedure by default; the second
        # with the pod's paths, printing the JSON report.
        short = in_audit_pod(r, tmp_path / "pod", runbooks.line("Operating replication", "python3 -m spark.audit"),
                             cwd=POD_CONFIG)
        done = in_audit_pod(r, tmp_path / "pod", runbooks.line("Is the flow ready? The readiness check",
                                                               "python3 -m spark.audit"))
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        report, out = json.loads(done.stdout), short.stdout
        assert (short.returncode, report["verdict"]) == (0, "ready"), short.stdout + short.stderr
        assert (report["procedure"], report["procedures"], report["waitSeconds"]) == (
            "continuous", ["continuous", "cutoff", "disaster"], 20)
        assert report["checkpointConnector"] == {"name": CHECKPOINT, "state": "RUNNING", "tasks": ["RUNNING"],
                                                 "emitSeconds": 5, "syncSeconds": 5}
        assert report["checkpointsTopic"] == "us-west.checkpoints.internal"
        assert replication_rows(report) == [("test.orders", 0, 5, 4, 0, "ok"), ("test.orders", 1, 5, 4, 0, "ok")]
        assert checkpoint_rows(report) == [(GROUP, "us-west.test.orders", 0, 5, 5), (GROUP, "us-west.test.orders", 1, 5, 5)]
        (group,) = report["groups"]
        assert (group["source"], group["target"], group["findings"]) == (
            {"state": "EMPTY", "members": 0}, {"state": "EMPTY", "members": 0}, [])
        for p in group["partitions"]:
            assert (p["sourceCommitted"], p["sourceEnd"], p["targetCommitted"], p["findings"]) == (5, 5, 5, [])
            assert p["checkpoint"]["metadata"] == ""
            assert 0 <= p["checkpoint"]["ageSeconds"] < 600
        assert out.splitlines()[0] == ("failover ready: flow repl-us-west-us-east (us-west -> us-east, default policy), "
                                       "procedure continuous; allowed: continuous, cutoff, disaster; wait after "
                                       "stopping consumers: 20 s")

        # The failover command (`kafka-replication failover`) from on-call's machine: the same
        # verdict, each partition's lag and the group's translation as tables, and for the
        # continuous procedure nothing written at step 2 (producers still write on the source).
        project = stack_project(tmp_path, topo)
        stack_file = project / "stacks" / f"{STACK}.yaml"
        as_written = stack_file.read_text()
        done = failover_command(r, tmp_path / "command", project, FLOW, "--procedure", "continuous")
        assert done.returncode == 0, done.stdout + done.stderr
        shown = [re.sub(r"\(\d+ s old\)", "(N s old)", line) for line in done.stdout.splitlines()]
        assert shown == [
            out.splitlines()[0],
            "replication (source end offset, last offset replicated, lag):",
            "  test.orders[0]: end 5, committed 4, lag 0, ok",
            "  test.orders[1]: end 5, committed 4, lag 0, ok",
            f"group {GROUP} (committed on us-west, checkpoint upstream -> translated, committed on us-east):",
            "  test.orders[0] -> us-west.test.orders[0]: 5; 5 -> 5 (N s old); 5",
            "  test.orders[1] -> us-west.test.orders[1]: 5; 5 -> 5 (N s old); 5",
            "",
            "ready for steps 3 and 4: start the consumers on the target (failover.topics), then move the producers; "
            "once replication has drained, run this command again with --stop to write step 5 (the flow stopped)"]
        assert stack_file.read_text() == as_written
        # docs/operations.md's line as written, from a project whose stack is prod, its credentials
        # in ./failover-creds and the Connect REST API at the port-forward's localhost:8083: the
        # consumers are stopped on the source and nothing is left to replicate, so a cutoff is
        # ready, and --dry-run writes nothing.
        done = runbook_failover_line(r, tmp_path / "as-written", topo)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.splitlines()[0].startswith("failover ready: flow repl-us-west-us-east (us-west -> us-east, "
                                                      "default policy), procedure cutoff;")
        prod_file = tmp_path / "as-written" / "stacks" / "prod.yaml"
        assert done.stdout.splitlines()[-1] == (
            f"--dry-run: nothing written; without it, flows[0] ({FLOW}) of {prod_file} is set to state "
            "{'source': 'stopped', 'checkpoint': 'stopped', 'heartbeat': 'stopped'}")

        # 2. A consumer of the group is active on the target: offsets are no longer synced there.
        reader = threading.Thread(target=lambda: r.clients.consume(target, ["us-west.test.orders"], 1000, 60_000,
                                                                   group=GROUP))
        reader.start()
        try:
            def active():
                code, report, _ = readiness_run(r, tmp_path, "target-active", "--procedure", "continuous")
                return (code, report) if report["groups"][0]["target"]["members"] else None
            code, report = eventually("the target consumer seen in its group", active, 50, every=1)
            assert (code, report["verdict"]) == (1, "not-ready")
            state = report["groups"][0]["target"]["state"]
            assert report["groups"][0]["findings"] == [
                f"active on us-east (state {state}, 1 member(s)): stop its consumers there first (offsets are synced "
                "or reset only into inactive groups)"]
            assert state in ("STABLE", "PREPARING_REBALANCING", "COMPLETING_REBALANCING")
        finally:
            reader.join()

        # 3. Stale checkpoints: the checkpoint connector stopped, the group moves on at the source.
        worker.request("PUT", f"/connectors/{CHECKPOINT}/stop")
        eventually("the checkpoint connector stopped, its tasks gone",
                   lambda: (lambda st: st["connector"]["state"] == "STOPPED" and st["tasks"] == [])(
                       worker.status(CHECKPOINT)), 60)
        # The connector reports STOPPED before its task has finished the poll under way, which
        # may still write a checkpoint (a CI run met one translating the group's next commit):
        # the checkpoints topic is left to settle over two emit intervals (5 s each here).
        checkpoints = ["us-west.checkpoints.internal"]

        def settled() -> bool:
            before = r.clients.end_offsets(target, checkpoints)
            time.sleep(10)
            return r.clients.end_offsets(target, checkpoints) == before
        eventually("no checkpoint written for two emit intervals", settled, 90, every=0)
        r.clients.produce(source, "test.orders", [{"key": f"late{i}", "value": "v", "partition": i % 2}
                                                  for i in range(4)])
        r.clients.consume(source, ["test.orders"], 4, 30_000, group=GROUP)
        assert r.clients.group_offsets(source, GROUP) == {"test.orders:0": 7, "test.orders:1": 7}
        eventually("replication caught up", lambda: committed() == {0: 6, 1: 6}, 120)
        code, report, out = readiness_run(r, tmp_path, "stale", "--procedure", "continuous")
        assert (code, report["verdict"]) == (1, "not-ready"), out
        # Step 5 of the runbook: replication drained (every partition at lag 0), so `--stop`
        # writes the flow stopped, whatever the check now says of the group and its checkpoints.
        done = failover_command(r, tmp_path / "command", project, FLOW, "--procedure", "continuous", "--stop")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "  test.orders[0]: end 7, committed 6, lag 0, ok" in done.stdout.splitlines()
        assert (f"wrote {stack_file}: flows[0] ({FLOW}) stopped; review it and let your pipeline run `pulumi "
                "preview` and `pulumi up`") in done.stdout.splitlines()
        stopped = copy.deepcopy(topo)
        stopped["flows"][0]["state"] = {"source": "stopped", "checkpoint": "stopped", "heartbeat": "stopped"}
        assert yaml.safe_load(stack_file.read_text()) == stopped
        assert stack_file.read_text() == as_written.replace(
            "  failover:\n    procedure: continuous\n",
            "  failover:\n    procedure: continuous\n  state: {source: stopped, checkpoint: stopped, heartbeat: stopped}\n")
        assert report["findings"] == [f"checkpoint connector {CHECKPOINT} is STOPPED (tasks: none): checkpoints and "
                                      "group offset sync do not run"]
        assert checkpoint_rows(report) == [(GROUP, "us-west.test.orders", 0, 5, 5), (GROUP, "us-west.test.orders", 1, 5, 5)]
        (group,) = report["groups"]
        assert group["findings"] == []
        assert [p["findings"] for p in group["partitions"]] == [
            [f"the newest checkpoint ({p['checkpoint']['ageSeconds']:.0f} s old) translates offset 5, the group "
             "committed 7 on us-west: checkpoints have not caught up"] for p in group["partitions"]]
        # The cutoff does not rely on checkpoints: producers stopped, the group drained and
        # stopped, replication caught up — ready.
        code, report, out = readiness_run(r, tmp_path, "cutoff", "--procedure", "cutoff")
        assert (code, report["verdict"], report["findings"]) == (0, "ready", []), out

        # 4. A group outside the checkpoint connector's `groups` (test.*) reads the flow's topic on
        # the source: it has no checkpoint, and on the target would start where its
        # auto.offset.reset says. Found without --group (the source's groups listed), not ready.
        r.clients.consume(source, ["test.orders"], 14, 30_000, group="billing")
        assert r.clients.group_offsets(source, "billing") == {"test.orders:0": 7, "test.orders:1": 7}
        code, report, out = readiness_run(r, tmp_path, "unchecked", "--procedure", "continuous")
        assert (code, report["verdict"]) == (1, "not-ready"), out
        billing = next(g for g in report["groups"] if g["group"] == "billing")
        assert [g["group"] for g in report["groups"]] == ["billing", GROUP]
        assert [(p["topic"], p["partition"], p["sourceCommitted"], p["checkpoint"], p["findings"])
                for p in billing["partitions"]] == [
            ("test.orders", n, 7, None, ["no checkpoint yet for offset 7 committed on us-west: on us-east the group "
                                         "would start where its auto.offset.reset says"]) for n in (0, 1)]

        # 5. Live lag (`kafka-replication lag`, spark/lag.py) from on-call's machine: the source
        # connector stopped, three records written on the source with timestamps an hour old. Each
        # partition's lag past its committed offset, the age of its oldest record not replicated
        # (the first past the committed offset: its own timestamp), the group's checkpoints as the
        # stopped checkpoint connector left them; lag past the audit's maxLag 0 is exit 1.
        worker.request("PUT", f"/connectors/{SOURCE}/stop")
        eventually("the source connector stopped, its tasks gone",
                   lambda: (lambda st: st["connector"]["state"] == "STOPPED" and st["tasks"] == [])(
                       worker.status(SOURCE)), 60)
        hour_ago = int(time.time() * 1000) - 3_600_000
        r.clients.produce(source, "test.orders", [{"key": f"old{i}", "value": "v", "partition": i % 2,
                                                   "timestamp": hour_ago + 1000 * i} for i in range(3)])
        before = time.time() * 1000
        done = operator_command(r, tmp_path / "lag", project, "lag", FLOW, "--json")
        after = time.time() * 1000
        assert done.returncode == 1, done.stdout + done.stderr
        live = json.loads(done.stdout)
        (flow,) = live["flows"]
        assert (live["verdict"], flow["flow"], flow["errors"], flow["findings"], flow["maxLag"]) == (
            "findings", FLOW, [], ["test.orders[0]: lagging, lag 2", "test.orders[1]: lagging, lag 1"], 0)
        assert [(r_["topic"], r_["partition"], r_["end"], r_["committed"], r_["lag"], r_["status"])
                for r_ in flow["replication"]] == [("test.orders", 0, 9, 6, 2, "lagging"),
                                                   ("test.orders", 1, 8, 6, 1, "lagging")]
        for r_, stamp in zip(flow["replication"], (hour_ago, hour_ago + 1000)):
            assert (before - stamp) / 1000 - 1 <= r_["oldestUnreplicatedAgeSeconds"] <= (after - stamp) / 1000 + 1
        (readers,) = flow["groups"]
        assert (readers["group"], [(p["targetTopic"], p["partition"], p["upstream"], p["translated"])
                                   for p in readers["partitions"]]) == (
            GROUP, [("us-west.test.orders", 0, 5, 5), ("us-west.test.orders", 1, 5, 5)])
        assert readers["newestAgeSeconds"] == min(p["ageSeconds"] for p in readers["partitions"]) > 0
        done = operator_command(r, tmp_path / "lag", project, "lag", FLOW)
        assert done.returncode == 1, done.stdout + done.stderr
        shown = [re.sub(r"\d+ (s|min) old", "N old", line) for line in done.stdout.splitlines()]
        assert shown[1:] == [
            "",
            f"flow {FLOW}: us-west -> us-east",
            "  replication: 3 record(s) behind on 2 of 2 partition(s), the oldest not replicated N old (the "
            "audit's maxLag: 0)",
            "    test.orders[0]: end 9, replicated 6, lag 2, oldest not replicated N old (lagging)",
            "    test.orders[1]: end 8, replicated 6, lag 1, oldest not replicated N old (lagging)",
            "  checkpoints on us-east: 1 group(s), newest checkpoint of each:",
            f"    {GROUP}: N old (2 partition(s), the least recent N old)",
            "",
            "past the audit's threshold (exit 1): 2 partition(s)"]
        assert re.fullmatch(r"replication lag read at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", shown[0])
