"""An engine-tier run stopped from outside leaves nothing behind (infra/tools/rehearsal/keeper.py,
tests/support/processes.py run_kept): the runtime tier's tests/runtime/test_stopped_run.py for the
Pulumi CLI. A pytest run of its own starts an API server and `pulumi up` of the dev stack, which
waits on the KafkaConnect's readiness (no operator here); while the CLI, the program and the
Kubernetes provider run, the run is stopped as a CI timeout stops `make test` (SIGTERM to its
process group), and every process it had started, the provider in its own process group
included, is gone within the keeper's grace."""

from __future__ import annotations

import os
import textwrap

from tests.support.processes import program, stopped_from_outside
from tests.support.stacks import ROOT

INNER = """
import os, threading, time
import yaml
from tests.engine import harness
from tests.engine.test_engine import stack_project
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
    kubeconfig, project = stack_project(engine, path, states, ambient, "dev", "stopped")
    threading.Thread(target=engine.run, args=("up", project, "dev"), kwargs={"kubeconfig": kubeconfig},
                     daemon=True).start()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if "pulumi-resource-kubernetes" in {program(argv) for _, argv in descendants(os.getpid()).values()}:
            print("RUNNING", flush=True)
            break
        time.sleep(0.5)
    time.sleep(900)
"""


def test_a_run_stopped_mid_update_leaves_no_process(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with stopped_from_outside(tmp_path, textwrap.dedent(INNER), env, "`pulumi up` ran") as below:
        programs = {program(argv) for _, argv in below.values()}
        # The servers, the keeper, and `pulumi up`: the CLI, the program served to it
        # (tests/engine/driver.py) and the Kubernetes provider it started.
        assert {"etcd", "kube-apiserver", "keeper.py", "pulumi", "pulumi-resource-kubernetes",
                "tests.engine.driver"} <= programs, programs
