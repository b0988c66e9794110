"""A stopped run leaves nothing behind (infra/tools/rehearsal/keeper.py): servers started through
the rehearsal's Process, each in a session of its own, end when the process that started them
ends, by a signal to its group (a CI timeout), a signal to it alone, or SIGKILL; the keeper never
signals a number the kernel gave to another process since. The runtime tier stops a real run the
same way (tests/runtime/test_stopped_run.py)."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infra.tools.rehearsal import keeper
from tests.support.processes import descendants, left_alive, reap, run_kept, started
from tests.support.stacks import ROOT

# A starter: two "servers" through the rehearsal's Process (one of them a group of two, as a
# worker is unshare -> sh -> java), one tool run to completion and released, then a line on
# stdout and a wait for its end.
# The starter takes SIGINT as a terminal's Ctrl-C does, even when the suite runs where SIGINT is
# ignored (a shell's background job inherits SIG_IGN, and Python then keeps it): a process that
# ignores SIGINT does not end on it, which is not what the SIGINT case is about.
STARTER = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from pathlib import Path
from infra.tools.rehearsal.process import Process
d = Path(sys.argv[1])
servers = [Process("one", ["sleep", "600"], d / "one.log"),
           Process("group", ["sh", "-c", "sleep 600 & exec sleep 601"], d / "group.log")]
assert Process("tool", ["true"], d / "tool.log").wait(30) == 0
time.sleep(0.5)  # the group's background sleep forked
print("started", flush=True)
time.sleep(600)
"""


def start(tmp_path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", STARTER, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == "started\n"
    return proc


@pytest.mark.parametrize("how", ["SIGTERM to the group", "SIGINT to the starter", "SIGKILL to the starter"])
def test_servers_end_with_the_process_that_started_them(tmp_path, how):
    proc = start(tmp_path)
    below = descendants(proc.pid)
    argvs = sorted(argv for argv in (a for _, a in below.values()))
    assert [a for a in argvs if a.startswith("sleep")] == ["sleep 600", "sleep 600", "sleep 601"]
    assert sum("keeper.py" in a for a in argvs) == 1, argvs
    if how == "SIGTERM to the group":
        os.killpg(proc.pid, signal.SIGTERM)  # the servers and the keeper are in sessions of their own
    elif how == "SIGINT to the starter":
        proc.send_signal(signal.SIGINT)
    else:
        proc.kill()
    proc.wait(30)
    assert left_alive(below, within=keeper.GRACE + 10) == {}


def test_a_server_stopped_and_reaped_is_forgotten_and_a_reused_number_is_not_signalled(tmp_path):
    # The keeper's rule for numbers: the group's leader alive and the same process, or gone.
    me = os.getpid()
    assert keeper._ours({me: started(me)}) == {me}
    assert keeper._ours({me: "1"}) == set()  # the number now names a process started at another time
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert keeper._ours({gone.pid: "12345"}) == {gone.pid}  # nobody has it: its members, if any, are ours


def test_a_keeper_signalled_ends_what_it_guards(tmp_path):
    proc = start(tmp_path)
    below = descendants(proc.pid)
    (kept,) = [pid for pid, (_, argv) in below.items() if "keeper.py" in argv]
    os.kill(kept, signal.SIGTERM)
    try:
        assert left_alive({p: v for p, v in below.items() if p != kept}, within=keeper.GRACE + 10) == {}
    finally:
        proc.kill()
        reap(proc.pid)


def test_the_servers_of_a_cli_start_outlive_it(monkeypatch):
    # `python -m infra.tools.rehearsal.apiserver start` leaves its servers for a later `stop`.
    told: list[str] = []
    monkeypatch.setattr(keeper, "_tell", told.append)
    monkeypatch.setattr(keeper, "_enabled", True)
    keeper.guard(101)
    keeper.release(101)
    keeper.disable()
    keeper.guard(102)
    keeper.release(102)
    assert told == ["+101", "-101"]


def test_the_keeper_imports_the_standard_library_only():
    # It runs as `python -I -S keeper.py`: nothing of the project, nothing installed.
    tree = ast.parse(Path(keeper.__file__).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert imported == {"__future__", "os", "signal", "subprocess", "sys", "threading", "time"}


def test_the_keeper_spares_a_released_group_and_ends_a_guarded_one():
    # The keeper's own protocol, driven by hand: `+N` guards, `-N` releases, the end of input ends.
    released = subprocess.Popen(["sleep", "600"], start_new_session=True)
    guarded = subprocess.Popen(["sleep", "600"], start_new_session=True)
    kept = subprocess.Popen([sys.executable, "-I", "-S", keeper.__file__], stdin=subprocess.PIPE,
                            start_new_session=True)
    try:
        assert kept.stdin is not None
        kept.stdin.write(f"+{released.pid}\n+{guarded.pid}\n-{released.pid}\n".encode())
        kept.stdin.close()
        assert kept.wait(keeper.GRACE + 10) == 0
        assert guarded.wait(10) == -signal.SIGTERM
        assert released.poll() is None
    finally:
        for p in (released, guarded, kept):
            if p.poll() is None:
                p.kill()
            p.wait()


# A command that starts a process in a process group of its own, as the Pulumi CLI starts each of
# its plugins, prints its pid and either returns (leaving it behind) or runs on.
LEAVER = ("import subprocess, sys, time; p = subprocess.Popen(['sleep', '600'], process_group=0, "
          "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid, flush=True); "
          "time.sleep(600 if sys.argv[1:] == ['stay'] else 0)")


def test_what_a_kept_command_leaves_in_groups_of_its_own_ends_when_it_returns():
    done = run_kept([sys.executable, "-c", LEAVER], timeout=60)
    left = int(done.stdout)
    assert done.returncode == 0
    assert left_alive({left: (started(left) or "gone", "sleep 600")}, within=keeper.GRACE + 5) == {}


def test_a_kept_command_and_its_groups_end_with_the_process_that_ran_it(tmp_path):
    starter = ("import sys; from tests.support.processes import run_kept; "
               f"run_kept([sys.executable, '-c', {LEAVER!r}, 'stay'], timeout=600)")
    proc = subprocess.Popen([sys.executable, "-c", starter], env={**os.environ, "PYTHONPATH": str(ROOT)},
                            start_new_session=True)
    try:
        below = {}
        for _ in range(100):  # the command and the process it started in a group of its own
            below = {pid: v for pid, v in descendants(proc.pid).items() if "keeper.py" not in v[1]}
            if any(argv == "sleep 600" for _, argv in below.values()):
                break
            time.sleep(0.1)
        (leaver,) = [pid for pid, (_, argv) in below.items() if argv == "sleep 600"]
        assert os.getpgid(leaver) == leaver != os.getsid(leaver)  # a group of its own in the command's session
    finally:
        proc.kill()  # SIGKILL: no finally of the starter runs; the keeper alone ends them
        proc.wait(30)
    assert left_alive(below, within=keeper.GRACE + 10) == {}
