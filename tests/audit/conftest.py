"""The audit tier: the PySpark job (spark/) on a local Spark, with Java 17."""

from tests.support.tiers import mark


def pytest_collection_modifyitems(items):
    mark(items, __file__, "audit")
