"""Fixtures and hooks for every tier; the helpers themselves are in tests/support/."""

from __future__ import annotations

import os

import pytest

from infra.deploy import deployment
from infra.tools.render import Render
from tests.support import cputime, skips
from tests.support.stacks import (APISERVER_COUNTS, DOC_TOPOLOGY, RUNTIME_COUNTS, by_kind_name, render_topology,
                                  started_apiserver)


def pytest_configure(config):
    # No silent skip (tests/skips.toml lists the only tests allowed to skip, with their reasons).
    config.pluginmanager.register(skips.SkipGuard(), "skip-guard")
    cputime.register(config)  # each test's CPU time, where KAFKA_REPLICATION_CPU_LEDGER asks for it


@pytest.fixture(autouse=True)
def _fresh_preparations():
    """Each test prepares its documents anew: a test may patch what a plan reads (a release
    row, a name) between two renders of one document (infra/deploy/deployment.py prepare)."""
    deployment._PREPARED.clear()


@pytest.fixture(autouse=True)
def _same_directory():
    """Every test ends where it began: `kafka-replication -C DIR` enters DIR as git does, and a
    test that runs it in-process must not leave the next test reading stacks/ from DIR."""
    here = os.getcwd()
    yield
    os.chdir(here)


@pytest.fixture
def doc_render(tmp_path) -> Render:
    return render_topology(tmp_path, DOC_TOPOLOGY, placeholder_secrets=False)


@pytest.fixture
def doc_objects(doc_render) -> dict[tuple[str, str], dict]:
    return by_kind_name(doc_render.objects())


@pytest.fixture
def cds_cache(tmp_path, monkeypatch):
    """A cache of this test's own for the class-data archives (infra/tools/rehearsal/process.py
    archive_for), none given by the environment: the folder the archives go to."""
    monkeypatch.setenv("KAFKA_REPLICATION_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KAFKA_REPLICATION_CDS", raising=False)
    return tmp_path / "cache" / "cds"


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for every PySpark test (starting one takes seconds)."""
    from spark.job import spark_session
    session = spark_session("local[2]")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def apiserver(tmp_path_factory):
    """The API-server tier's server for the session."""
    yield from started_apiserver(tmp_path_factory, "apiserver")


def pytest_terminal_summary(terminalreporter):
    if RUNTIME_COUNTS:
        terminalreporter.write_sep("-", "runtime tier (Kafka, Connect and MirrorMaker 2 for real)")
        for what, n in sorted(RUNTIME_COUNTS.items()):
            terminalreporter.write_line(f"{n:>7}  {what}")
    if APISERVER_COUNTS:
        from infra.tools.rehearsal.apiserver import version
        terminalreporter.write_sep("-", f"API server tier (kube-apiserver {version()})")
        for what, n in sorted(APISERVER_COUNTS.items()):
            terminalreporter.write_line(f"{n:>7}  {what}")
