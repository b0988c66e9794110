"""The engine tier: the Pulumi CLI and its Kubernetes provider against real API servers, and the
workflows' checkers (docs/engine.md, docs/workflow.md)."""

from tests.support.tiers import mark


def pytest_collection_modifyitems(items):
    mark(items, __file__, "engine")
