"""The unit tier: pure code and the program on Pulumi's mock engine. Python only: no Java, no
Spark, no binaries (`make test-unit` runs it on a machine with nothing else)."""

from tests.support.tiers import mark


def pytest_collection_modifyitems(items):
    mark(items, __file__, "unit")
