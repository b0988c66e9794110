"""Topic filters as languages: do two filters share a topic, and which one?

MirrorMaker 2 joins each `topics` list with `|`, compiles it with Java's `Pattern` and keeps a
topic the include pattern matches whole and the exclude pattern does not (Kafka 3.8.0
`DefaultTopicFilter`, `MirrorUtils.compilePatternList`). A source connector's filter is therefore
the language include minus exclude, and a flow's is the union over its source connectors.
Questions about them (is there a topic both flows write? one that every flow of a cycle
replicates?) are answered on Java-dialect automata (infra/jregex.py) within a budget of explored
states; the first topic found is a shortest legal one. Past the budget the answer is `Undecided`,
which the guardrails treat as a refusal unless the flow acknowledges it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from infra import jregex

# Kafka's defaults (DefaultTopicFilter / DefaultGroupFilter): setting `topics.exclude` or
# `groups.exclude` replaces them, so the plan appends them to any exclude a flow sets.
DEFAULT_TOPICS_EXCLUDE = (r".*[\-\.]internal", r".*\.replica", r"__.*")
DEFAULT_GROUPS_EXCLUDE = (r"console-consumer-.*", r"connect-.*", r"__.*")
# Automaton states one question may explore, and all questions about one topology: enough for
# any realistic filter set (hundreds of literal topics, nested groups), small enough that
# `validate` answers within seconds whatever the input (docs/performance.md has the figures).
BUDGET = 20_000
TOTAL_BUDGET = 120_000


class Undecided(Exception):
    """The question could not be answered within the budget."""


class Allowance:
    """What is left of the budget of one validation: counts states, never time, so the verdict
    on a topology is the same on every machine."""

    def __init__(self, total: int = TOTAL_BUDGET) -> None:
        self.left = total


@dataclass(frozen=True)
class Filter:
    """One source connector's filter (Kafka's default excludes included), optionally behind the
    fixed prefix a replication policy adds."""
    include: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    prefix: str = ""

    @cached_property
    def _include(self) -> jregex.NFA:
        return jregex.compile_filter(self.include, self.prefix)

    @cached_property
    def _exclude(self) -> jregex.NFA:
        return jregex.compile_filter(self.exclude + DEFAULT_TOPICS_EXCLUDE, self.prefix)

    def expression(self):
        return ("and", [("nfa", self._include), ("not", ("nfa", self._exclude))])

    def matches(self, topic: str) -> bool:
        return jregex.matches(self._include, topic) and not jregex.matches(self._exclude, topic)

    @property
    def guaranteed_prefix(self) -> str:
        """A prefix every accepted topic has (possibly empty): a cheap disjointness test."""
        return self.prefix + _common([jregex.literal_prefix(jregex.parse(p)) for p in self.include])


@dataclass(frozen=True)
class Topics:
    """What a flow (or a set of source connectors) replicates: the union of their filters."""
    filters: tuple[Filter, ...]

    def expression(self):
        return ("or", [f.expression() for f in self.filters])

    def matches(self, topic: str) -> bool:
        return any(f.matches(topic) for f in self.filters)

    @property
    def guaranteed_prefix(self) -> str:
        return _common([f.guaranteed_prefix for f in self.filters])

    @property
    def include(self) -> list[str]:
        return [p for f in self.filters for p in f.include]

    def with_prefix(self, prefix: str) -> Topics:
        return Topics(tuple(Filter(f.include, f.exclude, prefix) for f in self.filters))


def _common(prefixes: list[str]) -> str:
    common = prefixes[0] if prefixes else ""
    for other in prefixes[1:]:
        while not other.startswith(common):
            common = common[:-1]
    return common


def common_topic(*languages: Filter | Topics, allowance: Allowance | None = None) -> str | None:
    """A shortest topic every language accepts, or None when they share none. Raises Undecided."""
    prefixes = [lang.guaranteed_prefix for lang in languages]
    for a in prefixes:
        for b in prefixes:
            if not (a.startswith(b) or b.startswith(a)):
                return None  # no automaton needed: their topics start differently
    return search(("and", [lang.expression() for lang in languages]), allowance)


def search(expression, allowance: Allowance | None = None) -> str | None:
    """A shortest topic of the language expression (see jregex.find). Raises Undecided."""
    allowance = allowance or Allowance()
    if allowance.left <= 0:
        raise Undecided(f"the topology's filters used up the {TOTAL_BUDGET} automaton states all checks may explore")
    cap = min(BUDGET, allowance.left)
    try:
        found, spent = jregex.find(expression, cap)
    except jregex.Budget:
        allowance.left -= cap
        raise Undecided(f"more than {cap} automaton states") from None
    allowance.left -= spent
    return found
