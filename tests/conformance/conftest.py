"""The conformance tier: what the Connect worker does with our configs, modelled from its sources
(tests/support/worker.py), and the oracles that decide Kafka's dialects (the JDK, promtool)."""

from tests.support.tiers import mark


def pytest_collection_modifyitems(items):
    mark(items, __file__, "conformance")
