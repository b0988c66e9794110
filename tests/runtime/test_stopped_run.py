"""A run stopped from outside leaves nothing behind (infra/tools/rehearsal/keeper.py).

A pytest run of its own starts what a runtime test starts (the API server's etcd and
kube-apiserver, the dev flow's brokers, its Connect worker with the connectors RUNNING, the
clients' JVM) and, once they run, is stopped as a CI timeout stops `make test`: SIGTERM to its
process group. Every process it had started, in whatever session, is gone within the keeper's
grace. tests/unit/test_keeper.py shows the other ways a run ends (SIGINT, SIGKILL, the keeper
itself signalled) on stand-in servers."""

from __future__ import annotations

import os
import textwrap

import pytest

from tests.support.processes import program, stopped_from_outside
from tests.support.stacks import ROOT, RUNTIME_RELEASES

pytestmark = pytest.mark.runtime

INNER = """
import time
from tests.support.replication import dev_for_runtime, rehearsal, running
from tests.support.stacks import started_apiserver

def test_runs_until_stopped(tmp_path_factory, tmp_path):
    servers = started_apiserver(tmp_path_factory, "api")
    api = next(servers)
    with rehearsal(dev_for_runtime({flavour!r}, {version!r}), tmp_path, api) as r:
        r.deploy()
        running(r)
        r.clients.create_topics(r.client("us-west"), {{"test.orders": 1}})  # the clients' JVM serving
        print("RUNNING", flush=True)
        time.sleep(900)
"""


def test_a_run_stopped_mid_test_leaves_no_process(tmp_path):
    flavour, version = RUNTIME_RELEASES[-1]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("KAFKA_REPLICATION_TEST_QUEUE", None)
    source = textwrap.dedent(INNER.format(flavour=flavour, version=version))
    with stopped_from_outside(tmp_path, source, env, "its servers ran") as below:
        programs = sorted(program(argv) for _, argv in below.values())
        assert programs == ["Clients", "etcd", "kafka.Kafka", "kafka.Kafka", "keeper.py", "kube-apiserver",
                            "org.apache.kafka.connect.cli.ConnectDistributed"]
