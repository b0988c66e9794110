"""Servers that end with the run that started them, however it ends.

Every server a rehearsal or a test starts (Kafka brokers, Connect workers, the clients' JVM,
etcd, kube-apiserver, kube-controller-manager, Prometheus) runs in a session of its own, so that
it is signalled as one group (a worker is `unshare` → `sh` → `java`) and a Ctrl-C meant for the
test runner does not reach it half-way. The price: a run stopped from outside (SIGTERM to
`make test`'s process group, as a CI timeout sends; SIGKILL; its parent dying) never reaches
the `finally` blocks that stop them, and they stay up as orphans, competing with the next run.

So the first server a process starts also starts a keeper: a small Python process in a session
of its own, holding the read end of a pipe whose write end only the starting process holds. The
starter tells it each server's process group as it starts (`+PGID`) and as it is stopped and
reaped (`-PGID`). A number the kernel gave to another process since is never signalled: the
keeper notes each group leader's start time and skips a group whose number now belongs to a
process that started later (Linux reuses no pid still in use as a group's id, so a group with
members left keeps its number). When the pipe closes,
which the kernel does when the starter ends for any reason, the keeper sends SIGTERM to every
group still listed, SIGKILL to those alive after GRACE seconds, and exits. A keeper signalled
itself (SIGTERM, SIGINT, SIGHUP) does the same.

A command that starts processes in process groups of their own (the Pulumi CLI starts each plugin
so, and a CLI stopped from outside leaves them running) is guarded by its session instead
(`+s<SID>`, `-s<SID>`): it runs in a session of its own, which its plugins keep, and every group of
that session is ended with the rest. A session's number is not lent to another process while a
member of it is alive.

Run with `python keeper.py` (the standard library only: it must start in a blink and import
nothing of the project).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

GRACE = 10.0  # seconds between SIGTERM and SIGKILL: a broker's controlled shutdown fits in it

_lock = threading.Lock()
_keeper: subprocess.Popen[bytes] | None = None
_owner = 0  # the pid that started the keeper: a forked child must not write to its pipe
_enabled = True


def disable() -> None:
    """Servers started after this outlive this process (`python -m infra.tools.rehearsal.apiserver
    start`, whose servers a later `stop` ends)."""
    global _enabled
    _enabled = False


def _tell(line: str) -> None:
    global _keeper, _owner
    with _lock:
        if _keeper is None or _owner != os.getpid() or _keeper.poll() is not None:
            if line.startswith("-"):
                return  # nothing to release in a keeper that never knew it
            _keeper = subprocess.Popen([sys.executable, "-I", "-S", __file__], stdin=subprocess.PIPE,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            _owner = os.getpid()
        assert _keeper.stdin is not None
        try:
            _keeper.stdin.write(line.encode() + b"\n")
            _keeper.stdin.flush()
        except OSError:
            pass  # the keeper is gone (killed from outside): the next server starts a new one


def guard(pgid: int) -> None:
    """The process group `pgid` (a server started in a session of its own, so its pid) ends
    with this process."""
    if _enabled:
        _tell(f"+{pgid}")


def release(pgid: int) -> None:
    """The group was stopped and its leader reaped: forget it before the kernel reuses the number."""
    if _enabled:
        _tell(f"-{pgid}")


def guard_session(sid: int) -> None:
    """Every process group of the session `sid` (a command started in a session of its own, so its
    pid) ends with this process."""
    if _enabled:
        _tell(f"+s{sid}")


def end_session(sid: int) -> None:
    """What is left of the session `sid` ended now (its command returned), then forgotten."""
    _end_all({pgid: started(pgid) for pgid in session_groups(sid)})
    if _enabled:
        _tell(f"-s{sid}")


def session_groups(sid: int) -> set[int]:
    """The process groups of the live processes whose session is `sid` (/proc/PID/stat)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # state, ppid, pgrp, session...
        if len(fields) > 3 and fields[0] != "Z" and int(fields[3]) == sid:
            found.add(int(fields[2]))
    return found


def started(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat, field 22); None when
    there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # the name may hold spaces and parentheses
    return fields[19] if len(fields) > 19 else None


def _ours(groups: dict[int, str | None]) -> set[int]:
    """The groups still ours: the leader alive and the same process, or gone with members left."""
    return {pgid for pgid, when in groups.items() if (now := started(pgid)) is None or now == when}


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _end_all(groups: dict[int, str | None]) -> None:
    for pgid in _ours(groups):
        try:
            os.killpg(pgid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and any(_alive(g) for g in _ours(groups)):
        time.sleep(0.1)
    # Looked at again: a group that ended during the grace may have lent its number since.
    for pgid in _ours(groups):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _serve() -> None:
    groups: dict[int, str | None] = {}
    sessions: set[int] = set()

    def stop(*_: object) -> None:
        _end_all({**{pgid: started(pgid) for sid in sessions for pgid in session_groups(sid)}, **groups})
        os._exit(0)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    for raw in sys.stdin.buffer:
        line = raw.strip().decode()
        if line[:1] == "+" and line[1:].isdigit():
            groups[int(line[1:])] = started(int(line[1:]))
            # Forget the groups that are empty now (ended without a `-`, a crash): their numbers
            # may be lent again, and "the leader gone" must only ever mean "members of ours left".
            for gone in [g for g in groups if not _alive(g)]:
                del groups[gone]
        elif line[:1] == "-" and line[1:].isdigit():
            groups.pop(int(line[1:]), None)
        elif line[:2] == "+s" and line[2:].isdigit():
            sessions.add(int(line[2:]))
        elif line[:2] == "-s" and line[2:].isdigit():
            sessions.discard(int(line[2:]))
    stop()  # end of input: the process that started us has ended


if __name__ == "__main__":
    _serve()
