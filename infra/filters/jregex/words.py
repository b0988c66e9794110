"""Languages of names read one character at a time (`Machine`), and the trie of wildcard words
(`Wild`): listed names and names written with an unescaped `.`, never built into an automaton."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from infra.filters.jregex.limits import LINE_TERMINATORS

# ------------------------------------------------------------------ wildcard words
# Listed names and names written with an unescaped `.` are read one character at a time by
# machines that are never built ahead: a trie of wildcard words (`Wild`), a DFA (`DFAMachine`)
# and their unions and differences. Searches over them (`search`, `unified_search`,
# `preimage_in`) follow only the characters that lead on to a name, so a trie of thousands of
# words costs about one explored state per trie node, whatever the budget.


class Machine:
    """A language of names read one character at a time. `chars(state)` holds the characters
    after which the state may still lead to a name (None: any); characters with one `klass`
    lead every state to the same state; `dead(state)` states lead to no name; `size` counts the
    states that are listed words' own (what a search explores for them without charge)."""

    size = 0

    def begin(self) -> Any:
        raise NotImplementedError

    def step(self, state: Any, c: str) -> Any:
        raise NotImplementedError

    def accepting(self, state: Any) -> bool:
        raise NotImplementedError

    def dead(self, state: Any) -> bool:
        raise NotImplementedError

    def chars(self, state: Any) -> frozenset[str] | None:
        return None

    def klass(self, c: str) -> Hashable:
        raise NotImplementedError

    def readings(self, name: str) -> list[str]:
        """The listed words, as written, of which `name` is a match."""
        return []

    def accepts(self, name: str) -> bool:
        state = self.begin()
        for c in name:
            if self.dead(state):
                return False
            state = self.step(state, c)
        return bool(name) and self.accepting(state)


class Wild(Machine):
    """Wildcard words (text, mask of the positions that are an unescaped `.`) as a trie whose
    edges are a character or the `.` (key ""), which Java matches with any character but a line
    terminator: every topic character. A state is the set of trie nodes a name so far reaches."""

    def __init__(self, words: Iterable[tuple[str, int]]) -> None:
        children: list[dict[str, int]] = [{}]
        ends: dict[int, str] = {}
        for text, mask in words:
            if not text:
                continue
            node = 0
            for i, c in enumerate(text):
                key = "" if mask >> i & 1 else c
                row = children[node]
                nxt = row.get(key)
                if nxt is None:
                    nxt = row[key] = len(children)
                    children.append({})
                node = nxt
            ends[node] = text
        self.children, self.ends = children, ends
        self.literals = frozenset(k for row in children for k in row if k)
        self.size = len(children)
        self._steps: dict[tuple[frozenset[int], str], frozenset[int]] = {}
        self._chars: dict[frozenset[int], frozenset[str] | None] = {}

    def _nodes(self, nodes: Iterable[int], c: str) -> set[int]:
        dot = c not in LINE_TERMINATORS
        out: set[int] = set()
        for n in nodes:
            row = self.children[n]
            found = row.get(c)
            if found is not None:
                out.add(found)
            if dot:
                found = row.get("")
                if found is not None:
                    out.add(found)
        return out

    def matches(self, text: str) -> bool:
        """`Matcher.matches()` of the words joined with `|`."""
        nodes: set[int] = {0}
        for c in text:
            nodes = self._nodes(nodes, c)
            if not nodes:
                return False
        return any(n in self.ends for n in nodes)

    def readings(self, name: str) -> list[str]:
        nodes: set[int] = {0}
        for c in name:
            nodes = self._nodes(nodes, c)
        return [self.ends[n] for n in nodes if n in self.ends]

    def begin(self) -> frozenset[int]:
        return _ROOT

    def step(self, state: frozenset[int], c: str) -> frozenset[int]:
        key = (state, self.klass(c))
        found = self._steps.get(key)
        if found is None:
            found = self._steps[key] = frozenset(self._nodes(state, c))
        return found

    def accepting(self, state: frozenset[int]) -> bool:
        return any(n in self.ends for n in state)

    def dead(self, state: frozenset[int]) -> bool:
        return not state  # every trie node leads to a word

    def chars(self, state: frozenset[int]) -> frozenset[str] | None:
        if state not in self._chars:
            rows = [self.children[n] for n in state]
            self._chars[state] = None if any("" in row for row in rows) else frozenset(k for row in rows for k in row)
        return self._chars[state]

    def klass(self, c: str) -> str:
        return c if c in self.literals else "" if c not in LINE_TERMINATORS else "\n"

    def accepts(self, name: str) -> bool:
        return bool(name) and self.matches(name)


_ROOT = frozenset({0})
