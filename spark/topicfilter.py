"""Which source topics a MirrorSourceConnector replicates, decided as Kafka decides it: by
java.util.regex in the job's own JVM (the Spark driver's), never by a Python reading of Java's
dialect.

Kafka's DefaultTopicFilter (connect/mirror, 3.8.0) compiles `topics` and `topics.exclude` with
MirrorUtils.compilePatternList: the list joined with `|`, `Pattern.compile`, whole-name
`matcher(topic).matches()`; an empty list matches nothing. The audit configuration carries both
lists as the connector runs them (Kafka's default excludes included, contract/audit.py).
"""

from __future__ import annotations

from typing import Any


class TopicFilters:
    """Compiled include/exclude patterns per connector, answered by the JVM behind `jvm` (a py4j
    view, such as `SparkSession.sparkContext._jvm`)."""

    def __init__(self, jvm: Any) -> None:
        self._pattern = jvm.java.util.regex.Pattern
        self._compiled: dict[tuple[str, ...], Any] = {}

    def _compile(self, patterns: list[str]) -> Any:
        key = tuple(patterns)
        if key not in self._compiled:
            self._compiled[key] = self._pattern.compile("|".join(key)) if key else None
        return self._compiled[key]

    def _matches(self, patterns: list[str], topic: str) -> bool:
        compiled = self._compile(patterns)
        return compiled is not None and bool(compiled.matcher(topic).matches())

    def selects(self, connector: dict, never: list[str], topic: str) -> bool:
        """Whether `connector` (of the audit configuration) replicates `topic`; `never` are
        MirrorMaker 2's own topics of the source cluster (offset syncs, heartbeats)."""
        return (topic not in never and self._matches(connector["topics"], topic)
                and not self._matches(connector["topicsExclude"], topic))
