"""No silent skip: a test that skips fails the run unless tests/skips.toml lists it with a reason.

A skip is counted in a summary line nobody reads, so a test that stopped proving anything (a tool
missing on CI, a condition always true there) goes unnoticed for months. The hook below records
every skipped test of the session and, at its end, turns the exit status into a failure naming
each one that the allow-list does not cover, with the skip's own reason and the file to edit.
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The reason's start of a skip for a tool this machine lacks (tests/support/stacks.py unavailable):
# allowed on a developer's machine, where the Makefile has said which tool is missing; under CI
# (APISERVER_REQUIRED=1) `unavailable` fails instead, and a skip with this start would be a bug.
UNAVAILABLE = "unavailable here: "
ALLOW_LIST = ROOT / "tests" / "skips.toml"


@dataclass(frozen=True)
class Allowed:
    test: str    # an fnmatch pattern over pytest's test ids
    reason: str


def allow_list(path: Path = ALLOW_LIST) -> list[Allowed]:
    """The entries of the allow-list; a malformed one is an error, not an empty list."""
    entries = tomllib.loads(path.read_text()).get("skip", [])
    out = []
    for i, entry in enumerate(entries):
        test, reason = entry.get("test"), entry.get("reason")
        if set(entry) != {"test", "reason"} or not isinstance(test, str) or not isinstance(reason, str) \
                or not test.strip() or len(reason.split()) < 5:
            raise ValueError(f"{path}: skip entry {i + 1} ({entry!r}): expected exactly `test` (a test id pattern) "
                             "and `reason` (a sentence saying why, and where its proof lives)")
        out.append(Allowed(test, reason))
    return out


def unlisted(skipped: list[tuple[str, str]], allowed: list[Allowed], required: bool = True) -> list[tuple[str, str]]:
    """The skips neither the allow-list nor, outside CI (`required` False), a missing tool explains."""
    return [(test, why) for test, why in skipped
            if not any(fnmatch.fnmatchcase(test, a.test) for a in allowed)
            and (required or not why.startswith(UNAVAILABLE))]


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    if hasattr(report, "wasxfail"):
        return f"{'xpass' if report.passed else 'xfail'}: {report.wasxfail}"
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


class SkipGuard:
    """The plugin (registered by tests/conftest.py): every skipped test of the session, checked
    against the allow-list when the session ends."""

    def __init__(self, path: Path = ALLOW_LIST) -> None:
        self.path = path
        self.allowed = allow_list(path)  # a broken allow-list stops the run before any test
        self.skipped: list[tuple[str, str]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Skipped in setup (a fixture, a skipif mark) or in the call (pytest.skip); an xfail
        # counts too, failed or passed: a test whose outcome nobody is told of.
        if report.skipped or hasattr(report, "wasxfail"):
            self.skipped.append((report.nodeid, _reason(report)))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # A module skipped whole (pytest.skip(allow_module_level=True), importorskip): its tests
        # are never collected, so no test report says so.
        if report.skipped:
            self.skipped.append((report.nodeid, _reason(report)))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        bad = unlisted(self.skipped, self.allowed, os.environ.get("APISERVER_REQUIRED") == "1")
        if not bad:
            return
        where = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        lines = [f"{len(bad)} test(s) skipped that {where} does not allow: make them run here, or list them "
                 "there with the reason (reviewed like code)", *(f"  {test}: {why}" for test, why in bad)]
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write("\n")
            reporter.write_sep("=", "unlisted skips", red=True)
            for line in lines:
                reporter.write_line(line)
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
