"""What a process leaves behind: the processes it started, found from /proc, and whether any is
still alive after it was stopped (infra/tools/rehearsal/keeper.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from infra.tools.rehearsal import keeper


def started(pid: int) -> str | None:
    """The process's start time (keeper.started), None when there is none or it is a zombie (it
    has ended): a pid and its start time name one process, whatever the number is lent to later."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return None
    return None if stat[stat.rfind(")") + 2:].startswith("Z") else keeper.started(pid)


def descendants(root: int) -> dict[int, tuple[str, str]]:
    """Every process below `root` (by parent pid, through any session): pid -> (start time, argv)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(errors="replace")
        except OSError:
            continue
        parents[int(entry.name)] = int(stat[stat.rfind(")") + 2:].split()[1])
    found: dict[int, tuple[str, str]] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                when = started(pid)
                if when is None:
                    continue
                try:
                    argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    argv = "?"
                found[pid] = (when, argv.strip())
                frontier.append(pid)
    return found


def program(argv: str) -> str:
    """What a process runs: a Java main class (the word after the classpath), else the
    executable's name, else the script's for an interpreter."""
    words = argv.split()
    if not words:
        return "?"
    if Path(words[0]).name == "java":
        for flag in ("-cp", "-classpath", "--class-path"):
            if flag in words[:-1]:
                return words[words.index(flag) + 2] if words.index(flag) + 2 < len(words) else "?"
    if Path(words[0]).name.startswith("python") and len(words) > 1:
        return Path(next((w for w in words[1:] if not w.startswith("-")), words[0])).name
    return Path(words[0]).name


def left_alive(processes: dict[int, tuple[str, str]], within: float) -> dict[int, str]:
    """Those of `processes` still running after `within` seconds (each the same process: the same
    pid and start time), pid -> argv."""
    deadline = time.monotonic() + within
    while True:
        alive = {pid: argv for pid, (when, argv) in processes.items() if started(pid) == when}
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def reap(pid: int) -> None:
    """Collect a child's exit status, if it is ours, so that it does not stay a zombie."""
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def run_kept(argv: list[str], *, timeout: float, cwd: Path | str | None = None,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`subprocess.run(argv, capture_output=True, text=True, ...)` in a session of its own that the
    keeper guards (keeper.guard_session): what the command leaves running when it returns (a
    Pulumi plugin in a process group of its own, which the CLI did not end) is ended then, and
    everything of it if this process is stopped first. A timeout ends the whole session too."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            text=True, cwd=cwd, env=env, start_new_session=True)
    keeper.guard_session(proc.pid)
    ended = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        keeper.end_session(proc.pid)  # before reading the rest: a stuck plugin holds the pipes open
        ended = True
        proc.communicate()
        raise
    finally:
        if not ended:  # ended once, whatever else stops the wait
            keeper.end_session(proc.pid)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


@contextmanager
def stopped_from_outside(directory: Path, source: str, env: dict[str, str],
                         what: str) -> Iterator[dict[int, tuple[str, str]]]:
    """A pytest run of its own of the module `source` (whose test prints RUNNING once what it
    starts runs), in a session of its own; yields every process below it then. Leaving the block,
    the run is stopped as a CI timeout stops `make test` (SIGTERM to its process group), and every
    one of those processes must be gone within the keeper's grace. `what`: what RUNNING waits for."""
    (directory / "inner").mkdir()
    test_file = directory / "inner" / "test_inner.py"
    test_file.write_text(source)
    inner = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                              "--rootdir", str(directory / "inner"), "--basetemp", str(directory / "base"),
                              str(test_file)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                             cwd=directory, start_new_session=True)
    assert inner.stdout is not None
    seen = []
    try:
        for line in inner.stdout:
            seen.append(line)
            if line.startswith("RUNNING"):
                break
        else:
            pytest.fail(f"the inner run ended before {what}:\n" + "".join(seen[-60:]))
        below = descendants(inner.pid)
        yield below
        os.killpg(inner.pid, signal.SIGTERM)  # as a CI timeout stops `make test`'s process group
        inner.wait(60)
        assert left_alive(below, within=keeper.GRACE + 20) == {}
    finally:
        if inner.poll() is None:
            os.killpg(inner.pid, signal.SIGKILL)
        reap(inner.pid)
