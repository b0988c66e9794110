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

import time
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

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
# A backstop, not the rule: the state budgets bound the work (validation of the hardest inputs
# measured takes under 2 s, docs/performance.md), so this only fires on a machine far slower
# than any we support. States decide; time never makes a check pass.
SECONDS = 20.0


class Undecided(Exception):
    """The question could not be answered within the budget."""


class Allowance:
    """What is left of the budget of one validation: it counts states, so the verdict on a
    topology is the same on every machine; the time backstop (SECONDS) can only refuse."""

    def __init__(self, total: int = TOTAL_BUDGET, seconds: float = SECONDS) -> None:
        self.left, self.seconds = total, seconds
        self.deadline = time.monotonic() + seconds
        # Minimal automata (or Undecided) per language.
        self.automata: dict[tuple[object, ...], jregex.DFA | Undecided] = {}

    def cap(self) -> int:
        """What the next construction may explore."""
        if self.left <= 0:
            raise Undecided(f"the topology's filters used up the {TOTAL_BUDGET} automaton states all checks may explore")
        if time.monotonic() > self.deadline:
            self.left = 0
            raise Undecided(f"the topology's filter checks ran out of their {self.seconds:g} s")
        return min(BUDGET, self.left)


@dataclass(frozen=True)
class Filter:
    """One source connector's filter (Kafka's default excludes included), optionally behind the
    fixed prefix a replication policy adds."""
    include: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    prefix: str = ""

    @cached_property
    def _include(self) -> jregex.NFA:
        return _compiled(self.include, self.prefix)

    @cached_property
    def _exclude(self) -> jregex.NFA:
        return _compiled(self.exclude + DEFAULT_TOPICS_EXCLUDE, self.prefix)

    @cached_property
    def _matchers(self) -> tuple[frozenset[str], jregex.NFA]:
        """For `matches`: excludes that are plain names as a set (a lookup, however many there
        are, such as the storage topics of a large stack), the others as one automaton."""
        names, regexes = set(), []
        for pattern in self.exclude + DEFAULT_TOPICS_EXCLUDE:
            literal = jregex.literal(pattern)
            (names.add(self.prefix + literal) if literal is not None else regexes.append(pattern))
        return frozenset(names), _compiled(tuple(regexes), self.prefix)

    def matches(self, topic: str) -> bool:
        """Kafka's verdict on one topic: linear in the name, whatever the filters."""
        names, excluded = self._matchers
        return jregex.matches(self._include, topic) and topic not in names and not jregex.matches(excluded, topic)

    def automaton(self, allowance: Allowance) -> jregex.DFA:
        include = _automaton(("nfa", self.include, self.prefix), allowance,
                             lambda left: jregex.determinize(self._include, left))
        exclude = _automaton(("nfa", self.exclude, self.prefix), allowance,
                             lambda left: jregex.determinize(self._exclude, left))
        return _automaton(("filter", self.include, self.exclude, self.prefix), allowance,
                          lambda left: jregex.combine([include, exclude], lambda bits: bits[0] and not bits[1], left))

    @cached_property
    def guaranteed_prefix(self) -> str:
        """A prefix every accepted topic has (possibly empty): a cheap disjointness test."""
        return self.prefix + _common([jregex.literal_prefix(jregex.parse(p)) for p in self.include])


@dataclass(frozen=True)
class Topics:
    """What a flow (or a set of source connectors) replicates: the union of their filters."""
    filters: tuple[Filter, ...]

    def matches(self, topic: str) -> bool:
        return any(f.matches(topic) for f in self.filters)

    def automaton(self, allowance: Allowance) -> jregex.DFA:
        if len(self.filters) == 1:
            return self.filters[0].automaton(allowance)
        parts = [f.automaton(allowance) for f in self.filters]
        return _automaton(("topics", self.filters), allowance, lambda left: jregex.combine(parts, any, left))

    @cached_property
    def guaranteed_prefix(self) -> str:
        return _common([f.guaranteed_prefix for f in self.filters])

    @property
    def include(self) -> list[str]:
        return [p for f in self.filters for p in f.include]

    def with_prefix(self, prefix: str) -> Topics:
        return Topics(tuple(Filter(f.include, f.exclude, prefix) for f in self.filters))


def _compiled(patterns: tuple[str, ...], prefix: str) -> jregex.NFA:
    try:
        return jregex.compile_filter(patterns, prefix)
    except (jregex.Unsupported, jregex.RegexError) as exc:  # the model refuses these; never a crash here
        raise Undecided(str(exc)) from None


def _common(prefixes: list[str]) -> str:
    common = prefixes[0] if prefixes else ""
    for other in prefixes[1:]:
        while not other.startswith(common):
            common = common[:-1]
    return common


def _automaton(key: tuple[object, ...], allowance: Allowance,
               build: Callable[[int], tuple[jregex.DFA, int]]) -> jregex.DFA:
    """A language's minimal automaton, built once per validation (it is asked about many times)
    and charged to the allowance once; a build past the budget stays undecided."""
    if key not in allowance.automata:
        cap = allowance.cap()
        try:
            dfa, spent = build(cap)
            allowance.left -= spent
            allowance.automata[key] = dfa
        except jregex.Budget:
            allowance.left -= cap
            allowance.automata[key] = Undecided(f"more than {cap} automaton states")
    found = allowance.automata[key]
    if isinstance(found, Undecided):
        raise found
    return found


def common_topic(*languages: Filter | Topics, allowance: Allowance | None = None) -> str | None:
    """A shortest topic every language accepts, or None when they share none. Raises Undecided."""
    prefixes = [lang.guaranteed_prefix for lang in languages]
    for a in prefixes:
        for b in prefixes:
            if not (a.startswith(b) or b.startswith(a)):
                return None  # no automaton needed: their topics start differently
    allowance = allowance or Allowance()
    automata = [lang.automaton(allowance) for lang in languages]
    cap = allowance.cap()
    try:
        found, spent = jregex.shortest(automata, all, cap)
    except jregex.Budget:
        allowance.left -= cap
        raise Undecided(f"more than {cap} automaton states") from None
    allowance.left -= spent
    return found
