"""The machines that combine others (a DFA as a machine, unions, differences) and the searches
over them: the shortest name, the shortest pair that Kafka's '.'/'_' unification makes collide,
and a name behind a unified key. Each search is written once, for every kind of machine."""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable
from typing import Any

from infra.filters.jregex.dfa import DFA, accepts
from infra.filters.jregex.limits import MAX_TOPIC, TOPIC_ALPHABET, Budget
from infra.filters.jregex.words import Machine, Wild


def _legal_step(legal: int, c: str) -> int:
    """Whether a name is legal so far: 0 empty, 1 ".", 2 "..", 3 anything else (Topic.validate)."""
    return 1 if legal == 0 and c == "." else 2 if legal == 1 and c == "." else 3


class DFAMachine(Machine):
    """A DFA as a machine; its dead states are those from which no name is accepted."""

    def __init__(self, dfa: DFA) -> None:
        self.dfa = dfa
        back: list[set[int]] = [set() for _ in dfa.table]
        for s, row in enumerate(dfa.table):
            for t in row:
                back[t].add(s)
        live = {s for s, a in enumerate(dfa.accepting) if a}
        stack = list(live)
        while stack:
            for s in back[stack.pop()]:
                if s not in live:
                    live.add(s)
                    stack.append(s)
        self.live = live
        by_column: dict[int, list[str]] = {}
        for c, col in dfa.symbol.items():
            by_column.setdefault(col, []).append(c)
        self._chars = [None if all(t in live for t in row) else
                       frozenset(c for col, t in enumerate(row) if t in live for c in by_column.get(col, []))
                       for row in dfa.table]

    def begin(self) -> int:
        return self.dfa.start

    def step(self, state: int, c: str) -> int:
        return self.dfa.table[state][self.dfa.symbol[c]]

    def accepting(self, state: int) -> bool:
        return self.dfa.accepting[state]

    def dead(self, state: int) -> bool:
        return state not in self.live

    def chars(self, state: int) -> frozenset[str] | None:
        return self._chars[state]

    def klass(self, c: str) -> Hashable:
        return self.dfa.symbol[c]

    def accepts(self, name: str) -> bool:
        return accepts(self.dfa, name)


class Union(Machine):
    """Names any part accepts."""

    def __init__(self, parts: list[Machine]) -> None:
        self.parts = parts
        self.size = sum(p.size for p in parts)

    def begin(self) -> tuple[Any, ...]:
        return tuple(p.begin() for p in self.parts)

    def step(self, state: tuple[Any, ...], c: str) -> tuple[Any, ...]:
        return tuple(p.step(s, c) for p, s in zip(self.parts, state))

    def accepting(self, state: tuple[Any, ...]) -> bool:
        return any(p.accepting(s) for p, s in zip(self.parts, state))

    def dead(self, state: tuple[Any, ...]) -> bool:
        return all(p.dead(s) for p, s in zip(self.parts, state))

    def chars(self, state: tuple[Any, ...]) -> frozenset[str] | None:
        out: frozenset[str] = frozenset()
        for p, s in zip(self.parts, state):
            if not p.dead(s):
                found = p.chars(s)
                if found is None:
                    return None
                out |= found
        return out

    def klass(self, c: str) -> Hashable:
        return tuple(p.klass(c) for p in self.parts)

    def readings(self, name: str) -> list[str]:
        return [r for p in self.parts for r in p.readings(name)]

    def accepts(self, name: str) -> bool:
        return any(p.accepts(name) for p in self.parts)


class Diff(Machine):
    """Names `keep` accepts and `drop` does not."""

    def __init__(self, keep: Machine, drop: Machine) -> None:
        self.keep, self.drop = keep, drop
        self.size = keep.size + drop.size

    def begin(self) -> tuple[Any, Any]:
        return self.keep.begin(), self.drop.begin()

    def step(self, state: tuple[Any, Any], c: str) -> tuple[Any, Any]:
        return self.keep.step(state[0], c), self.drop.step(state[1], c)

    def accepting(self, state: tuple[Any, Any]) -> bool:
        return self.keep.accepting(state[0]) and not self.drop.accepting(state[1])

    def dead(self, state: tuple[Any, Any]) -> bool:
        return self.keep.dead(state[0])

    def chars(self, state: tuple[Any, Any]) -> frozenset[str] | None:
        return self.keep.chars(state[0])

    def klass(self, c: str) -> Hashable:
        return self.keep.klass(c), self.drop.klass(c)

    def readings(self, name: str) -> list[str]:
        return self.keep.readings(name)

    def accepts(self, name: str) -> bool:
        return self.keep.accepts(name) and not self.drop.accepts(name)


def _reps(machines: list[Machine], alphabet: str = TOPIC_ALPHABET) -> list[str]:
    """One character per joint class, in TOPIC_ALPHABET's order of preference."""
    seen: dict[tuple[Hashable, ...], str] = {}
    for c in alphabet:
        seen.setdefault(tuple(m.klass(c) for m in machines), c)
    return list(seen.values())


def _following(reps: list[str], order: dict[str, int], allowed: list[frozenset[str]]) -> Iterable[str]:
    """The characters a search follows from a state: one per class, those every machine allows."""
    if not allowed:
        return reps
    fewest = min(allowed, key=len)
    return sorted((c for c in fewest if c in order and all(c in a for a in allowed)), key=order.__getitem__)


def search(machines: list[Machine], budget: int, shortest: bool = True) -> tuple[str | None, int]:
    """A shortest legal name every machine accepts (a DFA searched as a `DFAMachine`), or None;
    and the states explored. Only characters that keep every machine alive are followed.
    Unless `shortest`, the walk goes depth first: a name, soon, when only whether there is one
    matters (a None from it is not final: names near the length bound may be missed)."""
    for i, m in enumerate(machines):
        if isinstance(m, Union) and any(_wild_root(p) is not None for p in _parts(m)):
            return _search_parts(machines, i, budget, shortest)
    for i, m in enumerate(machines):
        rooted = _wild_root(m)
        if rooted is not None:
            return _WildWalk(rooted[0], rooted[1], machines[:i] + machines[i + 1:], budget, shortest).run()
    reps = _reps(machines)
    order = {c: i for i, c in enumerate(reps)}
    start = (tuple(m.begin() for m in machines), 0)
    if any(m.dead(s) for m, s in zip(machines, start[0])):
        return None, 1
    parents: dict[tuple[tuple[Any, ...], int], tuple[tuple[tuple[Any, ...], int], str] | None] = {start: None}
    queue = deque([(start, 0)])
    while queue:
        state, depth = queue.popleft() if shortest else queue.pop()
        states, legal = state
        if legal == 3 and all(m.accepting(s) for m, s in zip(machines, states)):
            out: list[str] = []
            step = parents[state]
            while step is not None:
                state, c = step
                out.append(c)
                step = parents[state]
            return "".join(reversed(out)), len(parents)
        if depth == MAX_TOPIC:
            continue
        allowed = [a for a in (m.chars(s) for m, s in zip(machines, states)) if a is not None]
        for c in _following(reps, order, allowed):
            moved = tuple(m.step(s, c) for m, s in zip(machines, states))
            if any(m.dead(s) for m, s in zip(machines, moved)):
                continue
            nxt = (moved, _legal_step(legal, c))
            if nxt in parents:
                continue
            if len(parents) >= budget:
                raise Budget(f"more than {budget} automaton states")
            parents[nxt] = (state, c)
            queue.append((nxt, depth + 1))
    return None, len(parents)


def _parts(m: Machine) -> list[Machine]:
    return [q for p in m.parts for q in _parts(p)] if isinstance(m, Union) else [m]


def _wild_root(m: Machine) -> tuple[Wild, list[Machine]] | None:
    """The trie of a machine that is wildcard words less other languages (`Diff`s of a `Wild`),
    and those languages; None for any other machine."""
    if isinstance(m, Wild):
        return m, []
    if isinstance(m, Diff):
        found = _wild_root(m.keep)
        if found is not None:
            return found[0], [*found[1], m.drop]
    return None


def _order(name: str) -> tuple[int, list[int]]:
    return len(name), [_PREFERENCE[c] for c in name]


_PREFERENCE = {c: i for i, c in enumerate(TOPIC_ALPHABET)}


def _search_parts(machines: list[Machine], i: int, budget: int, shortest: bool) -> tuple[str | None, int]:
    """`search` with the union at `i` taken part by part (a name of the union is one of a part):
    parts that are wildcard words are then walked as words, not as a product with the rest."""
    found: list[str] = []
    spent = 0
    for part in _parts(machines[i]):
        name, used = search([*machines[:i], part, *machines[i + 1:]], budget - spent, shortest)
        spent += used
        if name is not None:
            if not shortest:
                return name, spent
            found.append(name)
    return min(found, key=_order, default=None), spent


class _WildWalk:
    """`search` for wildcard words (`trie`, less the `drops`) and other machines: each word is
    walked through the others with the set of their joint states it can reach (a `.` takes
    every character, so it steps to the states of all of them), memoised per trie node and set.
    Since words share their prefixes in the trie and the other machines are read as a set of
    states, not branched into, a walk explores about one pair per trie node (the sets rarely
    differ), however many heads the words have and wherever their dots are: a question about a
    suffix (`.*[^.]heartbeats`) is decided per word in its length. Exact: the shortest name, in
    the order `search` prefers, is spelled from the walk."""

    def __init__(self, trie: Wild, drops: list[Machine], others: list[Machine], budget: int, shortest: bool) -> None:
        self.trie, self.drops, self.others, self.budget, self.shortest = trie, drops, others, budget, shortest
        self.machines = [*drops, *others]
        # One character per joint class of the other machines ('.' apart: legality), for the dots.
        seen: dict[tuple[Hashable, ...], str] = {}
        for c in TOPIC_ALPHABET:
            seen.setdefault((c == ".", *(m.klass(c) for m in self.machines)), c)
        self.reps = list(seen.values())
        self.memo: dict[tuple[int, frozenset[tuple[tuple[Any, ...], int]]], int] = {}
        self.moves: dict[tuple[tuple[tuple[Any, ...], int], str], frozenset[tuple[tuple[Any, ...], int]]] = {}

    def _alive(self, joint: tuple[tuple[Any, ...], int]) -> bool:
        k = len(self.drops)
        return not any(m.dead(s) for m, s in zip(self.others, joint[0][k:]))

    def _accepting(self, node: int, joint: tuple[tuple[Any, ...], int]) -> bool:
        states, legal = joint
        k = len(self.drops)
        return (node in self.trie.ends and legal == 3
                and not any(m.accepting(s) for m, s in zip(self.drops, states[:k]))
                and all(m.accepting(s) for m, s in zip(self.others, states[k:])))

    def _step(self, joint: tuple[tuple[Any, ...], int], c: str) -> tuple[tuple[Any, ...], int]:
        return tuple(m.step(s, c) for m, s in zip(self.machines, joint[0])), _legal_step(joint[1], c)

    def _move(self, joint: tuple[tuple[Any, ...], int], key: str) -> frozenset[tuple[tuple[Any, ...], int]]:
        found = self.moves.get((joint, key))
        if found is None:
            chars = self.reps if key == "" else [key] if key in _PREFERENCE else []
            found = self.moves[joint, key] = frozenset(
                t for c in chars for t in (self._step(joint, c),) if self._alive(t))
        return found

    def _moved(self, joints: frozenset[tuple[tuple[Any, ...], int]], key: str) -> frozenset[tuple[tuple[Any, ...], int]]:
        if len(joints) == 1:
            for joint in joints:
                return self._move(joint, key)
        return frozenset().union(*(self._move(j, key) for j in joints))

    def remaining(self, node: int, depth: int, joints: frozenset[tuple[tuple[Any, ...], int]]) -> int:
        """The fewest characters that end a name from `node` reached with `joints` (MAX_TOPIC+1: none)."""
        key = (node, joints)
        found = self.memo.get(key)
        if found is not None:
            return found
        if len(self.memo) >= self.budget:
            raise Budget(f"more than {self.budget} automaton states")
        self.memo[key] = best = 0 if any(self._accepting(node, j) for j in joints) else MAX_TOPIC + 1
        if best and depth < MAX_TOPIC:
            for edge, child in self.trie.children[node].items():
                moved = self._moved(joints, edge)
                if moved:
                    best = min(best, 1 + self.remaining(child, depth + 1, moved))
                    if not self.shortest and best <= MAX_TOPIC:
                        break  # whether there is a name, not the shortest
            self.memo[key] = best
        return best

    def _ends(self, found: int, left: int) -> bool:
        return found == left if self.shortest else found <= MAX_TOPIC

    def run(self) -> tuple[str | None, int]:
        start = ((tuple(m.begin() for m in self.machines), 0))
        if not self._alive(start):
            return None, 1
        length = self.remaining(0, 0, frozenset({start}))
        if length > MAX_TOPIC:
            return None, len(self.memo)
        # The first name in preference order among the shortest: one character at a time, the
        # first that leaves some (node, joint state) pair a way to end in the rest of the length.
        frontier = {(0, start)}
        out: list[str] = []
        for depth in range(length if self.shortest else MAX_TOPIC):
            if not self.shortest and any(self._accepting(n, j) for n, j in frontier):
                break
            for c in TOPIC_ALPHABET:
                nxt = {(child, t) for node, j in frontier
                       for key, child in self.trie.children[node].items() if key in ("", c)
                       for t in (self._step(j, c),)
                       if self._alive(t) and self._ends(self.remaining(child, depth + 1, frozenset({t})),
                                                        length - depth - 1)}
                if nxt:
                    frontier = nxt
                    out.append(c)
                    break
        return "".join(out), len(self.memo)


def unified_search(a: Machine, b: Machine, budget: int) -> tuple[tuple[str, str] | None, int]:
    """A shortest pair of different legal names, one each machine accepts, that are equal once
    '.' and '_' are unified (Kafka's Topic.hasCollision), or None; and the states explored. Both
    names are spelled in lockstep: equal characters, except '.' against '_'. A DFA is searched
    as a `DFAMachine`."""
    reps = [c for c in _reps([a, b]) if c not in "._"]
    pairs = [*((c, c) for c in reps), *((x, y) for x in "_." for y in "_.")]
    start = (a.begin(), b.begin(), 0, 0, 0)
    if a.dead(start[0]) or b.dead(start[1]):
        return None, 1
    parents: dict[tuple[Any, Any, int, int, int], tuple[tuple[Any, Any, int, int, int], str, str] | None] = {
        start: None}
    queue = deque([(start, 0)])
    while queue:
        state, depth = queue.popleft()
        sa, sb, differ, la, lb = state
        if differ and la == 3 and lb == 3 and a.accepting(sa) and b.accepting(sb):
            left: list[str] = []
            right: list[str] = []
            step = parents[state]
            while step is not None:
                state, x, y = step
                left.append(x)
                right.append(y)
                step = parents[state]
            return ("".join(reversed(left)), "".join(reversed(right))), len(parents)
        if depth == MAX_TOPIC:
            continue
        allowed_a, allowed_b = a.chars(sa), b.chars(sb)
        for x, y in pairs:
            if (allowed_a is not None and x not in allowed_a) or (allowed_b is not None and y not in allowed_b):
                continue
            na, nb = a.step(sa, x), b.step(sb, y)
            if a.dead(na) or b.dead(nb):
                continue
            nxt = (na, nb, differ or int(x != y), _legal_step(la, x), _legal_step(lb, y))
            if nxt in parents:
                continue
            if len(parents) >= budget:
                raise Budget(f"more than {budget} automaton states")
            parents[nxt] = (state, x, y)
            queue.append((nxt, depth + 1))
    return None, len(parents)


def preimage_in(machine: Machine, unified: str, avoid: str | None = None) -> str | None:
    """A legal name other than `avoid` that the machine accepts and that Kafka unifies to
    `unified` (each '_' may be '.' or '_'), or None. Linear in the name times the states each
    position reaches; every state kept leads to an accepted name, so the search meets at most
    three refusals (`avoid`, "." and "..") before an answer."""
    choices = [("_", ".") if c == "_" else (c,) for c in unified]
    reach: list[set[Any]] = [{machine.begin()}]
    for options in choices:
        reach.append({t for s in reach[-1] for c in options for t in (machine.step(s, c),) if not machine.dead(t)})
    live: list[set[Any]] = [set() for _ in reach]
    live[-1] = {s for s in reach[-1] if machine.accepting(s)}
    for i in range(len(choices) - 1, -1, -1):
        live[i] = {s for s in reach[i] if any(machine.step(s, c) in live[i + 1] for c in choices[i])}
    stack = [(machine.begin(), "")] if unified and machine.begin() in live[0] else []
    while stack:
        state, text = stack.pop()
        i = len(text)
        if i == len(unified):
            if text != avoid and text not in (".", ".."):
                return text
            continue
        for c in reversed(choices[i]):
            nxt = machine.step(state, c)
            if nxt in live[i + 1]:
                stack.append((nxt, text + c))
    return None
