"""An engine-tier run stopped from outside leaves nothing behind (infra/tools/rehearsal/keeper.py,
tests/support/processes.py run_kept): the runtime tier's tests/runtime/test_stopped_run.py for the
Pulumi CLI. A pytest run of its own starts an API server and `pulumi up` of the dev stack, which
waits on the KafkaConnect's readiness (no operator here); while the CLI, the program and the
Kubernetes provider run, the run is stopped as a CI timeout stops `make test` (SIGTERM to its
process group), and every process it had started, the provider in its own process group
included, is gone within the keeper's grace."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from infra.tools.rehearsal import keeper
from tests.support.processes import descendants, left_alive, program, reap
from tests.support.stacks import ROOT

INNER = """
import threading, time
from pathlib import Path
import yaml
from infra.deploy import deployment
from infra.tools.rehearsal.kubeapi import Client
from tests.engine import harness
from tests.engine.test_engine import prepared, secret_values
from tests.support.engine import servers
from tests.support.processes import descendants, program
from tests.support.stacks import ROOT

def test_runs_until_stopped(tmp_path):
    engine = harness.start(tmp_path / "engine")
    topology = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())
    topology["operator"]["readiness"] = {"wait": True, "timeoutSeconds": 600}
    path = tmp_path / "topology.yaml"
    path.write_text(yaml.safe_dump(topology))
    states, ambient, _ = servers("dev", topology, tmp_path, ())
    _, model, stack_plan, audits = deployment.prepare_file(path)
    prepared(Client(states[""]), model.operator.release)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(ambient))
    project = engine.project("dev", "stopped")
    engine.cli("config", "set", "kafka-replication:topology", str(path), "--stack", "dev", cwd=project)
    for key, value in secret_values(deployment.secret_keys(model, stack_plan, audits), {}).items():
        engine.set_secret(project, "dev", key, value)
    threading.Thread(target=engine.run, args=("up", project, "dev"), kwargs={"kubeconfig": kubeconfig},
                     daemon=True).start()
    import os
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if "pulumi-resource-kubernetes" in {program(argv) for _, argv in descendants(os.getpid()).values()}:
            print("RUNNING", flush=True)
            break
        time.sleep(0.5)
    time.sleep(900)
"""


def test_a_run_stopped_mid_update_leaves_no_process(tmp_path):
    (tmp_path / "inner").mkdir()
    test_file = tmp_path / "inner" / "test_inner.py"
    test_file.write_text(textwrap.dedent(INNER))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    inner = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                              "--rootdir", str(tmp_path / "inner"), "--basetemp", str(tmp_path / "base"),
                              str(test_file)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                             cwd=tmp_path, start_new_session=True)
    assert inner.stdout is not None
    seen = []
    try:
        for line in inner.stdout:
            seen.append(line)
            if line.startswith("RUNNING"):
                break
        else:
            pytest.fail("the inner run ended before `pulumi up` ran:\n" + "".join(seen[-60:]))
        below = descendants(inner.pid)
        programs = {program(argv) for _, argv in below.values()}
        # The servers, the keeper, and `pulumi up`: the CLI, the program served to it
        # (tests/engine/driver.py) and the Kubernetes provider it started.
        assert {"etcd", "kube-apiserver", "keeper.py", "pulumi", "pulumi-resource-kubernetes",
                "tests.engine.driver"} <= programs, programs
        os.killpg(inner.pid, signal.SIGTERM)  # as a CI timeout stops `make test`'s process group
        inner.wait(60)
        assert left_alive(below, within=keeper.GRACE + 20) == {}
    finally:
        if inner.poll() is None:
            os.killpg(inner.pid, signal.SIGKILL)
        reap(inner.pid)
