"""Each test's CPU time, beside its wall time: where the suite's minutes really go.

On two cores the tiers run side by side (Makefile `test`), so a test's wall time is mostly the
other tiers' load: the same test took 48 s alone and 200 s in a full run. Its CPU time does not
depend on what runs beside it. Per test, the hook below takes the pytest process's own CPU
(`RUSAGE_SELF`: its threads, the mock engine, the renders) and that of the children it reaped
meanwhile (`RUSAGE_CHILDREN`: every broker, worker, clients JVM, Spark submit, Pulumi CLI and
`go build` a test starts and stops), and appends a line to `$KAFKA_REPLICATION_CPU_LEDGER/<pid>.tsv`:

    test id <TAB> wall s <TAB> own CPU s <TAB> children's CPU s

A server a session fixture starts (the runtime tier's API server) is charged to the test during
which it is reaped, the last; the process's own start (imports, collection) to none; and a child the process never
waits for (the kernel counts reaped children only) to none: the ledger is a floor. The ledger
is off unless the variable names a folder; `tools/durations.py --cpu FOLDER` sums it.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

import pytest

VARIABLE = "KAFKA_REPLICATION_CPU_LEDGER"


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


class CpuLedger:
    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{os.getpid()}.tsv"

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        wall, own, children = time.monotonic(), _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
        yield
        line = (f"{item.nodeid}\t{time.monotonic() - wall:.2f}\t{_cpu(resource.RUSAGE_SELF) - own:.2f}\t"
                f"{_cpu(resource.RUSAGE_CHILDREN) - children:.2f}\n")
        with open(self.path, "a") as out:  # a line at a time: a run stopped half-way keeps what it measured
            out.write(line)


def register(config: pytest.Config) -> None:
    folder = os.environ.get(VARIABLE)
    if folder:
        config.pluginmanager.register(CpuLedger(Path(folder)), "cpu-ledger")
