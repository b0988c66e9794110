"""Thompson automata from syntax trees, with the listed words and wildcard words beside them, and
Java's `Matcher.matches()` on one name."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache

from infra.filters.jregex.charset import DOT, Chars, contains
from infra.filters.jregex.limits import MAX_PATTERN, MAX_STATES, Unsupported
from infra.filters.jregex.parser import Node, _listed_alternatives, parse_list
from infra.filters.jregex.words import Wild

# ------------------------------------------------------------------ automata


@dataclass(frozen=True)
class NFA:
    """Thompson automaton. `edges[s]` = ((chars, target), ...); `empty[s]` = epsilon targets;
    `bol[s]`/`eol[s]` = targets reachable only at the start / where `$` holds."""
    edges: tuple[tuple[tuple[Chars, int], ...], ...]
    empty: tuple[tuple[int, ...], ...]
    bol: tuple[tuple[int, ...], ...]
    eol: tuple[tuple[int, ...], ...]
    start: int
    accept: int
    # Names the filter matches that are kept as a set, not states (see the module's docstring).
    words: frozenset[str] = frozenset()
    # Wildcard words (text, mask of its unescaped '.' positions) kept as a trie, not states.
    wild: frozenset[tuple[str, int]] = frozenset()

    @cached_property
    def wild_trie(self) -> Wild:
        return Wild(self.wild)

    @cached_property
    def _plain(self) -> tuple[frozenset[int], ...]:
        """Each state's closure over plain epsilon edges (neither at the start nor at the end),
        the only closure a subset construction needs after its first state."""
        return tuple(self._close([s], False, False) for s in range(len(self.edges)))

    def closure(self, states: Iterable[int], at_start: bool, at_end: bool) -> frozenset[int]:
        if not (at_start or at_end):
            plain = self._plain
            return frozenset[int]().union(*(plain[s] for s in states))
        return self._close(states, at_start, at_end)

    def _close(self, states: Iterable[int], at_start: bool, at_end: bool) -> frozenset[int]:
        seen = set(states)
        stack = list(states)
        while stack:
            s = stack.pop()
            nexts = list(self.empty[s])
            if at_start:
                nexts += self.bol[s]
            if at_end:
                nexts += self.eol[s]
            for t in nexts:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)


class _TooLarge(Exception):
    """The Thompson automaton outgrew MAX_STATES (compile_filter names the cause)."""


class _Builder:
    def __init__(self) -> None:
        self.edges: list[list[tuple[Chars, int]]] = []
        self.empty: list[list[int]] = []
        self.bol: list[list[int]] = []
        self.eol: list[list[int]] = []

    def state(self) -> int:
        if len(self.edges) >= MAX_STATES:
            raise _TooLarge
        self.edges.append([])
        for table in (self.empty, self.bol, self.eol):
            table.append([])
        return len(self.edges) - 1

    def build(self, node: Node, start: int) -> int:
        """Adds `node` after `start`, returns its end state."""
        kind = node[0]
        if kind == "chars":
            end = self.state()
            if node[1]:
                self.edges[start].append((node[1], end))
            return end
        if kind == "cat":
            for item in node[1]:
                start = self.build(item, start)
            return start
        if kind == "alt":
            end = self.state()
            for branch in node[1]:
                s = self.state()
                self.empty[start].append(s)
                self.empty[self.build(branch, s)].append(end)
            return end
        if kind in ("bol", "eol"):
            end = self.state()
            (self.bol if kind == "bol" else self.eol)[start].append(end)
            return end
        _, inner, low, high = node
        for _ in range(low):
            start = self.build(inner, start)
        if high is None:
            loop = self.state()
            self.empty[start].append(loop)
            body_end = self.build(inner, loop)
            self.empty[body_end].append(loop)
            return loop
        end = self.state()
        self.empty[start].append(end)
        for _ in range(high - low):
            start = self.build(inner, start)
            self.empty[start].append(end)
        return end


@lru_cache(maxsize=4096)
def compile_filter(patterns: tuple[str, ...], prefix: str = "") -> NFA:
    """The automaton of `prefix` followed by any of the patterns (Kafka's `|`-joined list); the
    alternatives that spell out a finite set of names are its `words`."""
    words: set[str] = set()
    wild: set[tuple[str, int]] = set()
    rest: list[Node] = []
    for pattern in patterns:
        if len(pattern) > MAX_PATTERN:
            raise Unsupported(f"a pattern of {len(pattern)} characters (at most {MAX_PATTERN})")
    lists = [_listed_alternatives(pattern) for pattern in patterns]
    # Listed names need no parser (allow-lists are long); the rest is checked as Kafka joins it.
    trees = iter(parse_list(p for p, listed in zip(patterns, lists) if listed is None))
    shift = len(prefix)
    for listed in lists:
        if listed is not None:
            for word, mask in listed:
                (wild.add((prefix + word, mask << shift)) if mask else words.add(prefix + word))
            continue
        for branch in _alternatives(next(trees)):
            found = _finite_branch(branch)
            dotted = _wild_branch(branch) if found is None else None
            if found is not None:
                words.update(prefix + w for w in found)
            elif dotted is not None:
                wild.add((prefix + dotted[0], dotted[1] << shift))
            else:
                rest.append(branch)
    b = _Builder()
    try:
        start = b.state()
        s = start
        for c in prefix:
            s = b.build(("chars", ((ord(c), ord(c)),)), s)
        accept = b.build(rest[0] if len(rest) == 1 else ("alt", rest), s)
    except _TooLarge:
        raise Unsupported(_too_large(rest)) from None
    return NFA(tuple(tuple(x) for x in b.edges), tuple(tuple(x) for x in b.empty), tuple(tuple(x) for x in b.bol),
               tuple(tuple(x) for x in b.eol), start, accept, frozenset(words), frozenset(wild))


def _too_large(rest: list[Node]) -> str:
    """Why the automaton is too large, in terms of what the user can change."""
    head = f"a pattern whose automaton exceeds {MAX_STATES} states"
    if any(_expands(branch) for branch in rest):
        return f"{head} (lower the repetition counts)"
    if len(rest) > 1:
        return (f"{head}: {len(rest)} alternatives that are not plain names (names, with or without an "
                "unescaped '.', are kept as a list however many there are; join the others under common prefixes "
                "such as `orders\\..*`)")
    return f"{head}: the pattern is too long (shorten it, or list plain names as alternatives)"


def _wild_branch(tree: Node) -> tuple[str, int] | None:
    """A top-level alternative that is a wildcard word (single characters and `.`, at least one
    `.`; anchors only at its ends, as in `_finite_branch`): its text and the mask of its dots."""
    items = list(tree[1]) if tree[0] == "cat" else [tree]
    while items and items[0][0] == "bol":
        items.pop(0)
    while items and items[-1][0] == "eol":
        items.pop()
    text: list[str] = []
    mask = 0
    for i, item in enumerate(items):
        if item[0] != "chars":
            return None
        if item[1] == DOT:
            text.append(".")
            mask |= 1 << i
        elif len(item[1]) == 1 and item[1][0][0] == item[1][0][1]:
            text.append(chr(item[1][0][0]))
        else:
            return None
    return ("".join(text), mask) if mask else None


def _expands(tree: Node) -> bool:
    """Whether a counted repetition copies its group (`x{n}`, `x{n,m}` with a bound above 1)."""
    kind = tree[0]
    if kind in ("cat", "alt"):
        return any(_expands(item) for item in tree[1])
    if kind == "rep":
        _, inner, low, high = tree
        return low > 1 or (high is not None and high > 1) or _expands(inner)
    return False


def _alternatives(tree: Node) -> list[Node]:
    """The top-level alternatives of a pattern (groups are not nodes: `(a|b)` is an alternation)."""
    if tree[0] != "alt":
        return [tree]
    return [leaf for branch in tree[1] for leaf in _alternatives(branch)]


def _finite_branch(tree: Node) -> set[str] | None:
    """The names a top-level alternative matches, when they are few enough to list: about as
    many characters as the pattern itself spends on them. Anchors count only at its ends, where
    `Matcher.matches()` makes them always true (`^` at the start; `$` at the end, since nothing
    may follow it)."""
    items = list(tree[1]) if tree[0] == "cat" else [tree]
    while items and items[0][0] == "bol":
        items.pop(0)
    while items and items[-1][0] == "eol":
        items.pop()
    core: Node = ("cat", items)
    return _finite(core, 8 * _size(core) + 64)


def _size(tree: Node) -> int:
    kind = tree[0]
    if kind in ("cat", "alt"):
        return 1 + sum(_size(item) for item in tree[1])
    if kind == "rep":
        return 1 + _size(tree[1])
    return 1


def _finite(tree: Node, cap: int) -> set[str] | None:
    """The strings the tree matches if they are finitely many and at most `cap` characters in
    all; otherwise None. Never builds a set larger than `cap` strings."""
    kind = tree[0]
    if kind == "chars":
        count = sum(hi - lo + 1 for lo, hi in tree[1])
        if count > cap:
            return None
        return {chr(c) for lo, hi in tree[1] for c in range(lo, hi + 1)}
    if kind == "cat":
        out: set[str] | None = {""}
        for item in tree[1]:
            part = _finite(item, cap)
            if part is None or out is None or len(out) * len(part) > cap:
                return None
            out = {a + b for a in out for b in part}
            if sum(map(len, out)) > cap:
                return None
        return out
    if kind == "alt":
        union_: set[str] = set()
        total = 0
        for branch in tree[1]:
            part = _finite(branch, cap)
            if part is None:
                return None
            for word in part - union_:
                union_.add(word)
                total += len(word)
            if len(union_) > cap or total > cap:
                return None
        return union_
    if kind == "rep":
        _, inner, low, high = tree
        if high is None:
            return None
        once = _finite(inner, cap)
        if once is None:
            return None
        found: set[str] = set()
        current = {""}
        for k in range(high + 1):
            if k >= low:
                found |= current
                if len(found) > cap or sum(map(len, found)) > cap:
                    return None
            if k < high:
                if len(current) * len(once) > cap:
                    return None
                current = {a + b for a in current for b in once}
                if sum(map(len, current)) > cap:
                    return None
        return found
    return None  # an anchor inside: left to the automaton


def _dollar_at(text: str, i: int) -> bool:
    """Java's `$` without MULTILINE (Pattern.Dollar): at the end, or before a final line
    terminator (a final "\\r\\n" counts as one; no match between its two characters)."""
    n = len(text)
    if i == n:
        return True
    if i == n - 2:
        return text[i:] == "\r\n"
    if i == n - 1:
        c = text[i]
        return c in "\r\u0085\u2028\u2029" or (c == "\n" and not (i > 0 and text[i - 1] == "\r"))
    return False


def matches(nfa: NFA, text: str) -> bool:
    """`Matcher.matches()`: does the whole text match? Linear in len(text) x automaton size."""
    if text in nfa.words or (nfa.wild and nfa.wild_trie.matches(text)):
        return True
    current = nfa.closure([nfa.start], True, _dollar_at(text, 0))
    for i, c in enumerate(text):
        cp = ord(c)
        moved = {t for s in current for chars, t in nfa.edges[s] if contains(chars, cp)}
        if not moved:
            return False
        current = nfa.closure(moved, False, _dollar_at(text, i + 1))
    return nfa.accept in current
