"""The engine tier: the Pulumi CLI and its Kubernetes provider against real API servers, and the
workflows' checkers (docs/engine.md, docs/workflow.md)."""

import pytest

from tests.engine import harness
from tests.engine.harness import Engine
from tests.support.stacks import unavailable
from tests.support.tiers import mark


@pytest.fixture(scope="module")
def engine(tmp_path_factory) -> Engine:
    """The Pulumi CLI and provider of the engine tier, with a file backend of the module's own."""
    try:
        return harness.start(tmp_path_factory.mktemp("engine"))
    except LookupError as exc:
        unavailable(f"the engine tier's binaries are missing: {exc}")
        raise


def pytest_collection_modifyitems(items):
    mark(items, __file__, "engine")
