"""The protocol between the rehearsal and its Clients JVMs (clients.py), against a stand-in
server: a Python process that speaks Clients.java's protocol (one JSON request a line in, one
`{"answer": ...}` or `{"error": trace}` line out, anything else on stdout ignored). No Java here:
the real server is exercised by every runtime test; this holds the paths those rarely take (a stray
line, an error, a hang, a changed hosts file)."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from infra.core.releases import SUPPORTED
from infra.tools.rehearsal.clients import Clients
from infra.tools.rehearsal.process import Network

# Answers each request by its op: `echo` its fields and the server's pid, `noisy` after a stray
# stdout line (a logging backend's console output), `fail` with a trace, `hang` never.
STAND_IN = r"""
import json, os, sys, time
for line in sys.stdin:
    request = json.loads(line)
    op = request.pop("op")
    if op == "noisy":
        print("[main] INFO org.apache.kafka.Whatever - not an answer", flush=True)
        print('{"answers": "not one either"}', flush=True)
    if op in ("echo", "noisy"):
        print(json.dumps({"answer": {"pid": os.getpid(), **request}}), flush=True)
    elif op == "fail":
        print(json.dumps({"error": "org.apache.kafka.common.errors.TopicExistsException: bench\n\tat Clients"}),
              flush=True)
    elif op == "hang":
        time.sleep(600)
"""


@pytest.fixture
def clients(tmp_path, monkeypatch):
    monkeypatch.setattr(Clients, "_argv", lambda self: [sys.executable, "-c", STAND_IN])
    c = Clients(SUPPORTED[0], Network(tmp_path))
    yield c
    c.close()


def test_one_server_answers_call_after_call(clients):
    first = clients.call("echo", {"bootstrap.servers": "a:9092"}, topic="t")
    second = clients.call("echo", {}, n=2)
    assert first == {"pid": first["pid"], "config": {"bootstrap.servers": "a:9092"}, "topic": "t"}
    assert second == {"pid": first["pid"], "config": {}, "n": 2}  # the same process


def test_stray_stdout_lines_are_not_answers(clients):
    assert clients.call("noisy", {}, x=1)["x"] == 1


def test_an_error_reply_is_raised_with_its_trace_and_the_server_kept(clients):
    pid = clients.call("echo", {})["pid"]
    with pytest.raises(RuntimeError) as exc:
        clients.call("fail", {})
    assert str(exc.value) == ("Kafka client `fail` failed:\n"
                              "org.apache.kafka.common.errors.TopicExistsException: bench\n\tat Clients")
    assert clients.call("echo", {})["pid"] == pid


def test_a_server_that_does_not_answer_in_time_is_killed_and_replaced(clients, tmp_path):
    pid = clients.call("echo", {})["pid"]
    with pytest.raises(RuntimeError) as exc:
        clients.call("hang", {}, timeout=1)
    assert str(exc.value).startswith("Kafka client `hang` gave no answer in 1 s (exit -9):")
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed, not left behind
    assert clients.call("echo", {})["pid"] != pid


def test_a_changed_hosts_file_starts_a_new_server(clients):
    pid = clients.call("echo", {})["pid"]
    assert clients.call("echo", {})["pid"] == pid
    clients.network.map("kafka-a", clients.network.address())
    fresh = clients.call("echo", {})["pid"]
    assert fresh != pid
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the stale server was stopped
    assert clients.call("echo", {})["pid"] == fresh


def test_concurrent_calls_get_servers_of_their_own(clients):
    # One call hangs on its server (until its timeout); the other must not queue behind it.
    failures: list[str] = []

    def hang():
        try:
            clients.call("hang", {}, timeout=3)
        except RuntimeError as exc:
            failures.append(str(exc).splitlines()[0])
    waiting = threading.Thread(target=hang)
    waiting.start()
    answer = clients.call("echo", {}, timeout=2)
    waiting.join()
    assert answer["config"] == {}
    assert failures == ["Kafka client `hang` gave no answer in 3 s (exit -9):"]


def test_close_stops_every_idle_server(clients):
    pids = [clients.call("echo", {})["pid"]]
    clients.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
