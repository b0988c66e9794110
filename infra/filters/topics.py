"""Topic filters as languages: do two filters share a topic, and which one?

MirrorMaker 2 joins each `topics` list with `|`, compiles it with Java's `Pattern` and keeps a
topic the include pattern matches whole and the exclude pattern does not (Kafka 3.8.0
`DefaultTopicFilter`, `MirrorUtils.compilePatternList`). A source connector's filter is therefore
the language include minus exclude, and a flow's is the union over its source connectors.
Questions about them (is there a topic both flows write? one that every flow of a cycle
replicates?) are answered on Java-dialect automata (infra/filters/jregex/) within a budget of explored
states; the first topic found is a shortest legal one. Past the budget the answer is `Undecided`,
which the guardrails treat as a refusal unless the flow acknowledges it.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, TypeVar

from infra.filters import jregex

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
# than any we support. States decide; time never makes a check pass. It counts this process's
# CPU time, not the clock's: a machine busy with other work (a CI runner's other jobs) must not
# turn a verdict into "undecided", or `validate` and `pulumi preview` could disagree on one file.
SECONDS = 20.0


class Undecided(Exception):
    """The question could not be answered within the budget."""


class Allowance:
    """What is left of the budget of one validation: it counts states, so the verdict on a
    topology is the same on every machine; the time backstop (SECONDS) can only refuse."""

    def __init__(self, total: int = TOTAL_BUDGET, seconds: float = SECONDS) -> None:
        self.left, self.seconds = total, seconds
        self.deadline = time.process_time() + seconds
        # Minimal automata (or Undecided) per language, and languages per filter.
        self.automata: dict[tuple[object, ...], jregex.DFA | Undecided] = {}
        self.languages: dict[tuple[object, ...], Language] = {}

    def cap(self) -> int:
        """What the next construction may explore."""
        if self.left <= 0:
            raise Undecided(f"the topology's filters used up the {TOTAL_BUDGET} automaton states all checks may explore")
        if time.process_time() > self.deadline:
            self.left = 0
            raise Undecided(f"the topology's filter checks ran out of their {self.seconds:g} s")
        return min(BUDGET, self.left)


def legal(name: str) -> bool:
    """Kafka's Topic.validate: 1-249 characters of [a-zA-Z0-9._-], and not "." or ".."."""
    return 0 < len(name) <= jregex.MAX_TOPIC and name not in (".", "..") and _LEGAL.issuperset(name)


_LEGAL = frozenset(jregex.TOPIC_ALPHABET)
_ORDER = {c: i for i, c in enumerate(jregex.TOPIC_ALPHABET)}


def _key(name: str) -> tuple[int, list[int]]:
    """Shortest first, then in the order examples prefer characters (as the automata search)."""
    return len(name), [_ORDER[c] for c in name]


def unify(name: str) -> str:
    """Kafka's Topic.unifyCollisionChars: '.' and '_' are one character for collisions, since
    metric names replace '.' with '_' (Topic.hasCollision; apache/kafka,
    clients/src/main/java/org/apache/kafka/common/internals/Topic.java)."""
    return name.replace(".", "_")


@dataclass(frozen=True)
class Language:
    """Legal topic names: those listed in `names`, those `dfa` accepts (None: none) and those
    `wild` accepts (None: none). Listed names come from alternatives that spell out names
    (allow-lists): questions about them are set lookups and runs through the other automata,
    never products, so they cost no budget. `wild` holds the names written with an unescaped
    `.` (a trie of wildcard words, less what the excludes take), read by walks that cost about
    one state per trie node, which is not charged either (`jregex.search`)."""
    names: frozenset[str]
    dfa: jregex.DFA | None
    wild: jregex.Machine | None = None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self.names or (legal(name) and (
            (self.dfa is not None and jregex.accepts(self.dfa, name))
            or (self.wild is not None and self.wild.accepts(name)))))

    @property
    def listed_only(self) -> bool:
        return self.dfa is None and self.wild is None

    @property
    def machine(self) -> jregex.Machine | None:
        """What the language accepts beyond `names`, as one machine."""
        parts: list[jregex.Machine] = [jregex.DFAMachine(self.dfa)] if self.dfa is not None else []
        parts += [self.wild] if self.wild is not None else []
        return None if not parts else parts[0] if len(parts) == 1 else jregex.Union(parts)

    def example(self, allowance: Allowance) -> str | None:
        """A shortest name of the language, or None when it has none."""
        return common_topic(self, allowance=allowance)

    def nonempty(self, allowance: Allowance) -> bool:
        """Whether the language has a name: wildcard words are walked depth first (a name soon),
        the rest searched as by `example`."""
        if self.names:
            return True
        wild = self.wild
        if wild is not None and self.dfa is None:
            if _walk(lambda budget: jregex.search([wild], budget, shortest=False), [wild], allowance) is not None:
                return True
        return self.example(allowance) is not None


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

    def matches(self, topic: str) -> bool:
        """Kafka's verdict on one topic: linear in the name, whatever the filters (listed names,
        such as the storage topics of a large stack, are set lookups)."""
        return jregex.matches(self._include, topic) and not jregex.matches(self._exclude, topic)

    def witness(self) -> str | None:
        """A legal topic this filter keeps, found without building an automaton, or None, which
        proves nothing (the automata decide then). Most filters keep some name a few steps
        from their start (`orders\\..*` keeps `orders.`): a breadth-first walk of the include
        pattern's own automaton, a representative character per character class, for at most
        WITNESS_STEPS sets of states. Each name it reaches is put to Kafka's verdict (`matches`:
        the include pattern whole, not the excludes), so a name it returns is one the connector
        replicates; the order of the walk is fixed, so is the answer."""
        try:
            nfa = self._include
            self._exclude  # what `matches` reads: an exclude list too large to compile leaves it to the rules
        except Undecided:
            return None
        for name in heapq.nsmallest(WITNESS_STEPS, nfa.words):  # in a fixed order, whatever the hash seed
            if legal(name) and self.matches(name):
                return name
        first = nfa.closure([nfa.start], True, False)
        queue, seen = [("", first)], {first}
        for word, states in queue:  # grows as it is read: breadth first
            if len(queue) > WITNESS_STEPS:
                return None
            if word and nfa.accept in nfa.closure(states, False, True) and legal(word) and self.matches(word):
                return word
            if len(word) >= jregex.MAX_TOPIC:
                continue
            for c in _representatives(nfa, states):
                moved = nfa.closure({t for s in states for chars, t in nfa.edges[s]
                                     if jregex.contains(chars, ord(c))}, False, False)
                if moved not in seen:
                    seen.add(moved)
                    queue.append((word + c, moved))
        return None

    def included(self, allowance: Allowance) -> Language:
        """The legal names the include filter accepts, before any exclude."""
        include = _automaton(("rest", self.include, self.prefix), allowance,
                             lambda left: jregex.determinize(self._include, left, words=False))
        return Language(frozenset(n for n in self._include.words if legal(n)),
                        include if any(include.accepting) else None,
                        self._include.wild_trie if self._include.wild else None)

    def language(self, allowance: Allowance) -> Language:
        key = ("filter", self.include, self.exclude, self.prefix)
        found = allowance.languages.get(key)
        if found is None:
            found = self._language(allowance)
            allowance.languages[key] = found
        return found

    def _language(self, allowance: Allowance) -> Language:
        included = self.included(allowance)
        excluded_names = self._exclude.words
        exclude = _automaton(("rest", self.exclude, self.prefix), allowance,
                             lambda left: jregex.determinize(self._exclude, left, words=False))
        excluded_wild = self._exclude.wild_trie if self._exclude.wild else None
        names = frozenset(n for n in included.names if n not in excluded_names and not jregex.accepts(exclude, n)
                          and not (excluded_wild is not None and excluded_wild.accepts(n)))
        # Wildcard words less the excludes, read together as they are asked about (never built).
        wild: list[jregex.Machine] = []
        if included.wild is not None:
            drop: list[jregex.Machine] = [jregex.DFAMachine(exclude)]
            drop += [excluded_wild] if excluded_wild is not None else []
            listed = [(n, 0) for n in excluded_names if legal(n) and included.wild.accepts(n)]
            drop += [jregex.Wild(listed)] if listed else []
            wild.append(jregex.Diff(included.wild, drop[0] if len(drop) == 1 else jregex.Union(drop)))
        if included.dfa is None:
            return Language(names, None, _union(wild))
        dfa = included.dfa
        # Only the listed excludes the include automaton accepts change its language: usually few.
        relevant = frozenset(n for n in excluded_names if legal(n) and jregex.accepts(dfa, n))
        parts = [dfa, exclude]
        if relevant:
            parts.append(_automaton(("names", relevant), allowance, lambda left: jregex.word_automaton(relevant, left)))
        dfa = _automaton(("filter", self.include, self.exclude, self.prefix), allowance,
                         lambda left: jregex.combine(parts, lambda bits: bits[0] and not any(bits[1:]), left))
        if not any(dfa.accepting):
            return Language(names, None, _union(wild))
        if excluded_wild is None:
            return Language(names, dfa, _union(wild))
        # Excluded wildcard words are taken out as the automaton is read.
        return Language(names, None, _union([jregex.Diff(jregex.DFAMachine(dfa), excluded_wild), *wild]))

    @cached_property
    def guaranteed_prefix(self) -> str:
        """A prefix every accepted topic has (possibly empty): a cheap disjointness test."""
        return self.prefix + _common([jregex.pattern_prefix(p) for p in self.include])


@dataclass(frozen=True)
class Topics:
    """What a flow (or a set of source connectors) replicates: the union of their filters."""
    filters: tuple[Filter, ...]

    def matches(self, topic: str) -> bool:
        return any(f.matches(topic) for f in self.filters)

    def language(self, allowance: Allowance) -> Language:
        if len(self.filters) == 1:
            return self.filters[0].language(allowance)
        key = ("topics", self.filters)
        found = allowance.languages.get(key)
        if found is None:
            parts = [f.language(allowance) for f in self.filters]
            dfas = [p.dfa for p in parts if p.dfa is not None]
            dfa = dfas[0] if len(dfas) == 1 else _automaton(
                key, allowance, lambda left: jregex.combine(dfas, any, left)) if dfas else None
            found = allowance.languages[key] = Language(frozenset().union(*(p.names for p in parts)), dfa,
                                                        _union([p.wild for p in parts if p.wild is not None]))
        return found

    @cached_property
    def guaranteed_prefix(self) -> str:
        return _common([f.guaranteed_prefix for f in self.filters])

    @property
    def include(self) -> list[str]:
        return [p for f in self.filters for p in f.include]

    def with_prefix(self, prefix: str) -> Topics:
        return Topics(tuple(Filter(f.include, f.exclude, prefix) for f in self.filters))


# How many sets of states `Filter.witness` visits (and listed names it tries) before it leaves
# the question to the automata.
WITNESS_STEPS = 64


def _representatives(nfa: jregex.NFA, states: frozenset[int]) -> list[str]:
    """The first topic character (in TOPIC_ALPHABET's order) of each character class leaving
    these states, in that order."""
    found = set()
    for s in states:
        for chars, _ in nfa.edges[s]:
            c = next((c for c in jregex.TOPIC_ALPHABET if jregex.contains(chars, ord(c))), None)
            if c is not None:
                found.add(c)
    return sorted(found, key=_ORDER.__getitem__)


def _compiled(patterns: tuple[str, ...], prefix: str) -> jregex.NFA:
    try:
        return jregex.compile_filter(patterns, prefix)
    except (jregex.Unsupported, jregex.RegexError) as exc:  # the model refuses these; never a crash here
        raise Undecided(str(exc)) from None


def _union(machines: list[jregex.Machine]) -> jregex.Machine | None:
    return None if not machines else machines[0] if len(machines) == 1 else jregex.Union(machines)


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


def common_topic(*languages: Filter | Topics | Language, allowance: Allowance | None = None) -> str | None:
    """A shortest topic every language accepts, or None when they share none. Raises Undecided."""
    prefixes = [lang.guaranteed_prefix for lang in languages if not isinstance(lang, Language)]
    for a in prefixes:
        for b in prefixes:
            if not (a.startswith(b) or b.startswith(a)):
                return None  # no automaton needed: their topics start differently
    allowance = allowance or Allowance()
    found = [lang if isinstance(lang, Language) else lang.language(allowance) for lang in languages]
    # A listed name in all of them: when one language is a list alone, only its names can be.
    lists = [lang.names for lang in found if lang.listed_only]
    candidates = min(lists, key=len) if lists else frozenset().union(*(lang.names for lang in found))
    shared = [n for n in candidates if all(n in lang for lang in found)]
    best = min(shared, key=_key) if shared else None
    if lists:
        return best
    # A name in no list: one that every automaton or wildcard word accepts.
    machines = [lang.machine for lang in found]
    cap = allowance.cap()
    if all(lang.wild is None for lang in found):
        try:
            other, spent = jregex.search([jregex.DFAMachine(lang.dfa) for lang in found if lang.dfa is not None], cap)
        except jregex.Budget:
            allowance.left -= cap
            raise Undecided(f"more than {cap} automaton states") from None
        allowance.left -= spent
    else:
        other = _walk(lambda budget: jregex.search([m for m in machines if m is not None], budget), machines, allowance)
        if other is not None:
            # The name as written, when it is one of the shared names ('team0.orders' rather than
            # 'team0aorders'): as short, and the one the user recognizes.
            written = [r for m in machines if m is not None for r in m.readings(other)
                       if all(r in lang for lang in found)]
            other = min(written, key=_key, default=other)
    return min((n for n in (best, other) if n is not None), key=_key, default=None)


T = TypeVar("T")


def _walk(run: Callable[[int], tuple[T, int]], machines: list[jregex.Machine | None], allowance: Allowance) -> T:
    """A search through wildcard words: the states that are the words' own (one per trie node)
    are free, as listed names are; only what it explores beyond them is charged."""
    free = sum(m.size for m in machines if m is not None)
    cap = allowance.cap()
    try:
        found, spent = run(cap + free)
    except jregex.Budget:
        allowance.left -= cap
        raise Undecided(f"more than {cap} automaton states beyond the listed names' own") from None
    allowance.left -= max(0, spent - free)
    return found


def unified_pair(a: Filter | Topics, b: Filter | Topics, allowance: Allowance | None = None) -> tuple[str, str] | None:
    """Two different names, one of each language, that Kafka takes for the same topic ('.' and
    '_' unified, Topic.hasCollision): a shortest such pair, or None. Raises Undecided."""
    # Every name starts with its filter's guaranteed prefix, so two colliding names have unified
    # prefixes of which one starts the other: no automaton is needed when they do not (flows
    # of prefix filters, hundreds into one target, are decided here).
    pa, pb = unify(a.guaranteed_prefix), unify(b.guaranteed_prefix)
    if not (pa.startswith(pb) or pb.startswith(pa)):
        return None
    allowance = allowance or Allowance()
    la, lb = a.language(allowance), b.language(allowance)
    pairs: list[tuple[str, str]] = []
    for mine, theirs, swap in ((la, lb, False), (lb, la, True)):
        by_key: dict[str, list[str]] = {}
        for name in theirs.names:
            if "." in name or "_" in name:
                by_key.setdefault(unify(name), []).append(name)
        for name in mine.names:
            if "." not in name and "_" not in name:
                continue
            key = unify(name)
            others = [n for n in by_key.get(key, []) if n != name]
            if theirs.dfa is not None:
                other = jregex.preimage_in(jregex.DFAMachine(theirs.dfa), key, avoid=name)
                if other is not None and legal(other):
                    others.append(other)
            if theirs.wild is not None:
                other = jregex.preimage_in(theirs.wild, key, avoid=name)
                if other is not None and legal(other):
                    others.append(other)
            pairs.extend((o, name) if swap else (name, o) for o in others)
    if la.wild is not None or lb.wild is not None:
        ma, mb = la.machine, lb.machine
        if ma is not None and mb is not None:
            found_pair = _walk(lambda budget: jregex.unified_search(ma, mb, budget), [ma, mb], allowance)
            if found_pair is not None:
                pairs.append(found_pair)
    elif la.dfa is not None and lb.dfa is not None:
        cap = allowance.cap()
        try:
            found, spent = jregex.unified_search(jregex.DFAMachine(la.dfa), jregex.DFAMachine(lb.dfa), cap)
        except jregex.Budget:
            allowance.left -= cap
            raise Undecided(f"more than {cap} automaton states") from None
        allowance.left -= spent
        if found is not None:
            pairs.append(found)
    return min(pairs, key=lambda p: (_key(unify(p[0])), _key(p[0]), _key(p[1])), default=None)


def difference(a: Filter | Topics, b: Filter | Topics | None, count: int,
               allowance: Allowance | None = None) -> list[str]:
    """Up to `count` topics `a` accepts and `b` does not (b None: accepts none), shortest first:
    what stops replicating when a flow's filter goes from `a` to `b`. Listed names are set
    lookups; the rest are searched on the automata, each found name added to what is left out
    before the next search. Raises Undecided."""
    allowance = allowance or Allowance()
    la = a.language(allowance)
    lb = b.language(allowance) if b is not None else None
    found = sorted((n for n in la.names if lb is None or n not in lb), key=_key)[:count]
    keep = la.machine
    if keep is None:
        return found
    drop: list[jregex.Machine] = []
    if lb is not None:
        drop += [lb.machine] if lb.machine is not None else []
        listed = [(n, 0) for n in lb.names if legal(n)]
        drop += [jregex.Wild(listed)] if listed else []
    searched: list[str] = []
    while len(searched) < count:
        seen: list[jregex.Machine] = [jregex.Wild([(n, 0) for n in searched + found])] if searched or found else []
        left = _union(drop + seen)
        machine = keep if left is None else jregex.Diff(keep, left)
        name = _walk(lambda budget: jregex.search([machine], budget), [machine], allowance)
        if name is None:
            break
        searched.append(name)
    return sorted(set(found + searched), key=_key)[:count]
