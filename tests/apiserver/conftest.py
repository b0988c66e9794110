"""The API-server tier: a real kube-apiserver on loopback (docs/apiserver.md)."""

from tests.support.tiers import mark


def pytest_collection_modifyitems(items):
    mark(items, __file__, "apiserver")
