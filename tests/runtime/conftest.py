"""The runtime tier (Kafka, Connect and MirrorMaker 2 for real): its API server for the session."""

from __future__ import annotations

import pytest

from tests.support import shared_queue
from tests.support.stacks import started_apiserver
from tests.support.tiers import mark

# make test runs this tier in three processes that share its tests (tests/support/shared_queue.py).
pytest_runtestloop = shared_queue.pytest_runtestloop
pytest_terminal_summary = shared_queue.pytest_terminal_summary


@pytest.fixture(scope="session")
def runtime_api(tmp_path_factory):
    """A kube-apiserver of the runtime tier's own: its objects are created for real, and must not
    meet the API-server tier's dry runs."""
    yield from started_apiserver(tmp_path_factory, "runtime-apiserver")


def pytest_collection_modifyitems(items):
    mark(items, __file__, "runtime")
