"""Several pytest processes sharing one tier's tests, each test run by exactly one of them.

`make test` runs the runtime tier in three processes: one from the start, the second once the
tiers that need no server are done, the third once the API-server and engine tiers are
(docs/performance.md). A test of this tier waits on brokers and workers for about half of its
time, so several side by side keep the two cores busy where one leaves one idle. Which process runs which test is decided as they go, not split up front: the
tests' lengths differ by minutes, and a process that finishes early takes the next one.

With `KAFKA_REPLICATION_TEST_QUEUE=<dir>` set, a process runs a test only after claiming it: the
file `<dir>/<n>` made with O_EXCL, `n` the test's index in the collection (every process
collects the same tests, in the same order). A process claims the next test before running the
current one, so that pytest tears down after each test only what the next one it runs does not
share (`nextitem`), as a single process does. Unset, this plugin does nothing.

A module whose tests share a costly module-scoped fixture says `CLAIM_TOGETHER = True`: the
process that claims its first test claims them all (one file, the first test's index), so that
the fixture is built once in the tier, not once per process (tests/runtime/test_installed.py's
wheel and virtualenv: a minute of both cores each time).

A test marked `heavy` runs while no other process of the queue runs one (`one_at_a_time`: it
waits for `<dir>/heavy.lock`). The prod stack starts five clusters and seven Connect workers: its
JVMs alone keep both cores busy for minutes, and three of them started side by side (the three
processes reach test_replication.py together) made a worker's initialization take 157 s
instead of one, and every such test overran its wait for the connectors.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

QUEUE = "KAFKA_REPLICATION_TEST_QUEUE"
HEAVY = "heavy"  # the marker (pyproject.toml's markers)
RAN = pytest.StashKey[tuple[int, int]]()  # (tests this process ran, tests in the queue)


def claimed(items: list[pytest.Item], directory: Path) -> Iterator[pytest.Item]:
    """The items this process claims, in order: each one no other process claimed first."""
    directory.mkdir(parents=True, exist_ok=True)
    first: dict[object, int] = {}  # a module claimed together: the index of its first test
    for index, item in enumerate(items):
        module = getattr(item, "module", None)
        if getattr(module, "CLAIM_TOGETHER", False) and module in first:
            if first[module] >= 0:
                yield item  # its module's first test was claimed by this process
            continue
        try:
            os.close(os.open(directory / str(index), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            first[module] = -1
            continue
        first[module] = index
        yield item


@contextmanager
def one_at_a_time(item: pytest.Item, directory: Path) -> Iterator[None]:
    """While `item` runs, if it is marked heavy: no other heavy test of the queue's processes."""
    if item.get_closest_marker(HEAVY) is None:
        yield
        return
    with open(directory / "heavy.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process ends
        yield


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> object:
    directory = os.environ.get(QUEUE)
    if not directory or session.config.option.collectonly:
        return None  # pytest's own loop
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        raise session.Interrupted(f"{session.testsfailed} error(s) during collection")
    queue = Path(directory)
    mine = claimed(list(session.items), queue)
    item, ran = next(mine, None), 0
    session.config.stash[RAN] = (0, len(session.items))
    while item is not None:
        following = next(mine, None)
        ran += 1
        session.config.stash[RAN] = (ran, len(session.items))
        with one_at_a_time(item, queue):
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=following)
        if session.shouldfail:
            raise session.Failed(session.shouldfail)
        if session.shouldstop:
            raise session.Interrupted(session.shouldstop)
        item = following
    return True


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if os.environ.get(QUEUE) and not config.option.collectonly:
        ran, queued = config.stash.get(RAN, (0, 0))
        terminalreporter.write_line(f"shared queue {os.environ[QUEUE]}: this process ran {ran} of its {queued} "
                                    "selected tests; another process ran the others")
