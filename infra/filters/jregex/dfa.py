"""Languages of topic names as deterministic automata over the joint character classes:
determinizing, combining and minimizing."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from infra.filters.jregex.charset import Chars, contains
from infra.filters.jregex.limits import TOPIC_ALPHABET, Budget
from infra.filters.jregex.nfa import NFA
from infra.filters.jregex.words import Wild

# ------------------------------------------------------------------ languages of topic names
# Questions about topic names are answered on minimal deterministic automata over Kafka's topic
# alphabet: each filter is determinized once and boolean combinations are products; the
# searches walk them as machines (search.py, `DFAMachine`). Every construction counts the states it creates against a budget and raises Budget past it.


S = TypeVar("S", bound=Hashable)


# A verdict over each automaton's acceptance of a name (any, all, include-and-not-exclude...).
Accept = Callable[[tuple[bool, ...]], object]


# Breadth-first search: each state's parent state and the character that led to it.


@dataclass(frozen=True)
class DFA:
    """A complete deterministic automaton over TOPIC_ALPHABET. `symbol[c]` is the column of
    character c (characters no transition tells apart share one); `accepting[s]` tells whether a
    name of at least one character that ends in s is accepted."""
    symbol: dict[str, int]
    table: tuple[tuple[int, ...], ...]
    accepting: tuple[bool, ...]
    start: int


def _partition(charsets: Iterable[Chars]) -> dict[str, int]:
    """Column per topic character: characters in exactly the same sets share a column."""
    sets = sorted(set(charsets))
    columns: dict[tuple[bool, ...], int] = {}
    symbol: dict[str, int] = {}
    for c in TOPIC_ALPHABET:
        signature = tuple(contains(chars, ord(c)) for chars in sets)
        symbol[c] = columns.setdefault(signature, len(columns))
    return symbol


def _representatives(symbol: dict[str, int]) -> list[str]:
    """One character per column, in TOPIC_ALPHABET's order of preference."""
    seen: dict[int, str] = {}
    for c in TOPIC_ALPHABET:
        seen.setdefault(symbol[c], c)
    return list(seen.values())


def determinize(nfa: NFA, budget: int, words: bool = True) -> tuple[DFA, int]:
    """The minimal DFA of a filter automaton (without its `words` and `wild` unless `words`:
    callers that keep names as lists ask about them by lookup and walks), and the states its
    construction explored."""
    # The listed names and wildcard words as a trie beside the subsets.
    listed = Wild([*((w, 0) for w in nfa.words), *nfa.wild] if words else ())
    symbol = _partition([chars for out in nfa.edges for chars, _ in out]
                        + [((ord(c), ord(c)),) for c in listed.literals])
    reps = _representatives(symbol)
    moves = [[tuple(t for chars, t in out if contains(chars, ord(c))) for out in nfa.edges] for c in reps]

    def step(state: tuple[frozenset[int], frozenset[int]]) -> list[tuple[frozenset[int], frozenset[int]]]:
        subset, nodes = state
        out: list[tuple[frozenset[int], frozenset[int]]] = []
        for c, column in zip(reps, moves):
            moved = [t for s in subset for t in column[s]]
            out.append((nfa.closure(moved, False, False) if moved else frozenset(), listed.step(nodes, c)))
        return out
    sets, table = _explore((nfa.closure([nfa.start], True, False), listed.begin()), step, budget)
    accepting = [nfa.accept in nfa.closure(subset, False, True) or listed.accepting(nodes) for subset, nodes in sets]
    return _minimal(symbol, table, accepting, 0), len(sets)


def combine(dfas: list[DFA], accept: Accept, budget: int) -> tuple[DFA, int]:
    """The minimal DFA of names whose acceptance by each automaton satisfies `accept(bits)`."""
    symbol, reps, columns = _joint(dfas)
    def step(state: tuple[int, ...]) -> list[tuple[int, ...]]:
        return [tuple(d.table[s][col] for d, s, col in zip(dfas, state, cols)) for cols in columns]
    states, table = _explore(tuple(d.start for d in dfas), step, budget)
    accepting = [bool(accept(tuple(d.accepting[s] for d, s in zip(dfas, state)))) for state in states]
    return _minimal(symbol, table, accepting, 0), len(states)


def _explore(start: S, step: Callable[[S], Iterable[S]], budget: int) -> tuple[list[S], list[list[int]]]:
    """Every state reachable from `start` (numbered in discovery order) and the transition table;
    `step(state)` gives a state's successor per column. Raises Budget past `budget` states."""
    ids = {start: 0}
    states = [start]
    table: list[list[int]] = []
    i = 0
    while i < len(states):
        row: list[int] = []
        for nxt in step(states[i]):
            found = ids.get(nxt)
            if found is None:
                if len(states) >= budget:
                    raise Budget(f"more than {budget} automaton states")
                found = ids[nxt] = len(states)
                states.append(nxt)
            row.append(found)
        table.append(row)
        i += 1
    return states, table


def _joint(dfas: list[DFA]) -> tuple[dict[str, int], list[str], list[tuple[int, ...]]]:
    """The joint columns of several automata: per column, each automaton's own column."""
    joint: dict[tuple[int, ...], int] = {}
    symbol: dict[str, int] = {}
    for c in TOPIC_ALPHABET:
        symbol[c] = joint.setdefault(tuple(d.symbol[c] for d in dfas), len(joint))
    reps = _representatives(symbol)
    return symbol, reps, [tuple(d.symbol[c] for d in dfas) for c in reps]


def _minimal(symbol: dict[str, int], table: list[list[int]], accepting: list[bool], start: int) -> DFA:
    """Moore's partition refinement (every state is reachable by construction)."""
    block = [0] * len(table)
    count = 0
    while True:
        signatures: dict[tuple[int, ...], int] = {}
        refined = [signatures.setdefault((accepting[s], block[s], *(block[t] for t in row)), len(signatures))
                   for s, row in enumerate(table)]
        if len(signatures) == count:
            break
        block, count = refined, len(signatures)
    rows: dict[int, tuple[int, ...]] = {}
    accepts: dict[int, bool] = {}
    for s, row in enumerate(table):
        rows.setdefault(block[s], tuple(block[t] for t in row))
        accepts.setdefault(block[s], accepting[s])
    return DFA(symbol, tuple(rows[b] for b in range(count)), tuple(accepts[b] for b in range(count)), block[start])


def accepts(dfa: DFA, name: str) -> bool:
    """Whether the automaton accepts a name of topic characters."""
    state = dfa.start
    for c in name:
        state = dfa.table[state][dfa.symbol[c]]
    return bool(name) and dfa.accepting[state]


def word_automaton(words: Iterable[str], budget: int) -> tuple[DFA, int]:
    """The minimal DFA of a finite set of names (those of topic characters)."""
    return determinize(NFA(((),), ((),), ((),), ((),), 0, -1, frozenset(words)), budget)
