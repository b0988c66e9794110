"""Java's regex dialect as finite automata: the part of `java.util.regex.Pattern` (JDK 17) that
Kafka topic and group filters use, parsed as Java parses it and decided without backtracking.

MirrorMaker 2 joins a filter list with `|`, compiles it with `Pattern.compile` and tests each
name with `Matcher.matches()` (Kafka 3.8.0 `MirrorUtils.compilePatternList`,
`DefaultTopicFilter`). This module reads a pattern with Java's grammar (classes with nested
unions, `&&` intersections and whole-class negation; `\\0` octal, `\\x`, `\\u`, `\\c` escapes;
`\\Q...\\E` quoting; `]` first in a class is literal) and builds a Thompson automaton from it.
Whatever the automaton cannot model exactly is refused by name (`Unsupported`): lookarounds,
backreferences, inline flags, possessive quantifiers, atomic groups, word boundaries, Unicode
properties. What Java itself rejects is refused as `RegexError`. tests/conformance/test_jregex.py holds the
automaton to the JDK on thousands of random patterns and names.

Everything here is linear in the pattern and bounded: a pattern length limit, an automaton size
limit and, for the searches, a budget of explored states (`Budget`). No backtracking engine ever
runs on a user's pattern. The module has no dependencies, so the audit job can use it too.

Alternatives that spell out a finite set of names (an allow-list `orders|payments|...`, also
`orders\\.(eu|us)`) are kept as a set of words beside the automaton (`NFA.words`): migrations
list thousands of topics, and a Thompson automaton of thousands of names (or a deterministic one
of their product with other filters) would exceed any budget for a question a set lookup answers.
Names written with an unescaped `.` (`team0.orders.v1`, which Java reads as "any character but a
line terminator" at each dot) are kept likewise, as a trie of wildcard words (`NFA.wild`, `Wild`):
questions about them walk the trie beside the other automata (`search`), never a product built
ahead, so their cost grows with the names, not with the budget.
"""

from __future__ import annotations

import bisect
import re
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, TypeVar

# Characters in one filter: a topology file's own bound (infra/core/reading.py), since allow-lists
# written as one alternation are as long as the list; the automaton bound below limits the rest.
MAX_PATTERN = 1 << 20
MAX_STATES = 5000           # automaton states of one filter's non-literal part (repetitions expand)
MAX_REPEAT = 1000           # the largest bound of {n,m} we expand
MAX_DEPTH = 50              # nested groups and classes
MAX_TOPIC = 249             # Kafka's longest topic name (Topic.MAX_NAME_LENGTH)
MAX_CODE_POINT = 0x10FFFF

# Kafka's legal topic characters (Topic.LEGAL_CHARS = "[a-zA-Z0-9._-]"), in the order examples
# prefer them.
TOPIC_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789-_.ABCDEFGHIJKLMNOPQRSTUVWXYZ"

# Java's line terminators (Pattern's `.` without DOTALL, and `$`).
LINE_TERMINATORS = "\n\r\u0085\u2028\u2029"


class RegexError(ValueError):
    """Java would reject the pattern (`PatternSyntaxException`)."""


class Unsupported(ValueError):
    """Java accepts the pattern, but it uses a construct our automata do not model exactly."""


class Budget(Exception):
    """A search explored more states than it may: the answer is unknown."""


# ------------------------------------------------------------------ character sets
# A set of code points: a sorted tuple of disjoint, non-adjacent inclusive (low, high) ranges.

Chars = tuple[tuple[int, int], ...]
NOTHING: Chars = ()
EVERYTHING: Chars = ((0, MAX_CODE_POINT),)


def _norm(ranges: Iterable[tuple[int, int]]) -> Chars:
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def union(a: Chars, b: Chars) -> Chars:
    return _norm(a + b)


def negate(a: Chars) -> Chars:
    out: list[tuple[int, int]] = []
    low = 0
    for lo, hi in a:
        if lo > low:
            out.append((low, lo - 1))
        low = hi + 1
    if low <= MAX_CODE_POINT:
        out.append((low, MAX_CODE_POINT))
    return tuple(out)


def intersect(a: Chars, b: Chars) -> Chars:
    return negate(union(negate(a), negate(b)))


def contains(a: Chars, cp: int) -> bool:
    i = bisect.bisect_right(a, (cp, MAX_CODE_POINT + 1)) - 1
    return i >= 0 and a[i][0] <= cp <= a[i][1]


def _of(text: str) -> Chars:
    return _norm((ord(c), ord(c)) for c in text)


DIGIT = ((48, 57),)
WORD = _of("_") + ((48, 57), (65, 90), (97, 122))
WORD = _norm(WORD)
SPACE = _of(" \t\n\x0b\f\r")
HSPACE = _norm(_of(" \t\xa0\u1680\u180e\u202f\u205f\u3000") + ((0x2000, 0x200A),))
VSPACE = _of("\n\x0b\f\r\x85\u2028\u2029")
DOT = negate(_of(LINE_TERMINATORS))
CLASS_ESCAPES = {"d": DIGIT, "D": negate(DIGIT), "w": WORD, "W": negate(WORD), "s": SPACE,
                 "S": negate(SPACE), "h": HSPACE, "H": negate(HSPACE), "v": VSPACE, "V": negate(VSPACE)}
CONTROL_ESCAPES = {"t": 9, "n": 10, "r": 13, "f": 12, "a": 7, "e": 27}
# Escapes Java knows and we refuse, with the name users read in the message.
UNSUPPORTED_ESCAPES = {
    "b": "a word boundary \\b", "B": "a non-word boundary \\B", "A": "the input anchor \\A",
    "G": "the match anchor \\G", "z": "the input anchor \\z", "Z": "the input anchor \\Z",
    "R": "the linebreak matcher \\R", "X": "the grapheme matcher \\X", "N": "a named character \\N{...}",
    "k": "a named backreference \\k<...>", "p": "a character property \\p{...}",
    "P": "a character property \\P{...}", "Q": "quoting \\Q...\\E inside a character class",
}

# ------------------------------------------------------------------ syntax tree
# ("chars", Chars) | ("cat", [nodes]) | ("alt", [nodes]) | ("rep", node, min, max|None)
# | ("bol",) | ("eol",)
Node = tuple[Any, ...]


def parse(pattern: str) -> Node:
    """The pattern's syntax tree. Raises RegexError (Java rejects it) or Unsupported."""
    return _parse(pattern)[0]


def _parse(pattern: str) -> tuple[Node, list[str]]:
    if len(pattern) > MAX_PATTERN:
        raise Unsupported(f"a pattern of {len(pattern)} characters (at most {MAX_PATTERN})")
    listed = _listed_alternatives(pattern)
    if listed is not None:
        branches: list[Node] = [("cat", [_DOT_NODE if mask >> i & 1 else _char_node(c) for i, c in enumerate(word)])
                                for word, mask in listed]
        return (branches[0] if len(branches) == 1 else ("alt", branches)), []
    parser = _Parser(pattern)
    tree = parser.alternation(0)
    if parser.i < len(parser.p):
        raise RegexError("Unmatched closing ')'")  # the only thing that stops a top-level alternation
    return tree, parser.names


@lru_cache(maxsize=None)
def _char_node(c: str) -> Node:
    """One node per character, shared: an allow-list of thousands of names is a large tree."""
    return ("chars", ((ord(c), ord(c)),))


_DOT_NODE: Node = ("chars", DOT)
_META = frozenset("^$*+?{}[]()\\")


@lru_cache(maxsize=64)
def _listed_alternatives(pattern: str) -> tuple[tuple[str, int], ...] | None:
    """The wildcard words a pattern of names lists (`orders|payments`, `orders\\.eu`, also
    `team0.orders`, whose unescaped `.` matches any character but a line terminator): each as its
    text and the bit mask of the positions that are an unescaped `.` (the text has '.' there).
    None when any other construct appears. Cached: a list is read by the schema, the parser and
    the rules, and an alternation of thousands of names is long."""
    if "\\" not in pattern:
        return None if _META.intersection(pattern) else tuple((word, _dots(word)) for word in pattern.split("|"))
    words: list[tuple[str, int]] = []
    pieces: list[str] = []
    length = mask = at = 0
    for token in _TOKENS.finditer(pattern):
        text = pattern[at:token.start()]
        pieces.append(text)
        length += len(text)
        at = token.end()
        quoted, bar, dot = token.group(1), token.group(2), token.group(3)
        if quoted is not None:
            # A backslash before a non-alphanumeric character quotes it (Pattern's rule); before a
            # letter or digit it is a construct.
            if quoted.isascii() and quoted.isalnum():
                return None
            pieces.append(quoted)
            length += 1
        elif bar is not None:
            words.append(("".join(pieces), mask))
            pieces, length, mask = [], 0, 0
        elif dot is not None:
            pieces.append(".")
            mask |= 1 << length
            length += 1
        else:
            return None
    pieces.append(pattern[at:])
    words.append(("".join(pieces), mask))
    return tuple(words)


def _dots(word: str) -> int:
    """The mask of a word's '.' positions."""
    mask = 0
    at = word.find(".")
    while at >= 0:
        mask |= 1 << at
        at = word.find(".", at + 1)
    return mask


# What a names pattern may hold besides its names' characters: quotes, bars and dots; another
# metacharacter, or a backslash that ends the pattern, makes it something else.
_TOKENS = re.compile(r"\\(.)|(\|)|(\.)|[\^$*+?{}\[\]()]|\\", re.DOTALL)


def parse_list(patterns: Iterable[str]) -> list[Node]:
    """Kafka's filter list: each item valid alone, and together as Java compiles the `|`-join."""
    trees: list[Node] = []
    names: set[str] = set()
    for pattern in patterns:
        tree, own = _parse(pattern)
        for name in own:
            if name in names:
                raise RegexError(f"Named capturing group <{name}> is already defined "
                                 "(Kafka joins the filters with '|')")
            names.add(name)
        trees.append(tree)
    return trees


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.was_class = False   # did the last escape stand for a class (\\d, \\w, ...)?
        self.names: list[str] = []  # named groups, which Java requires to be unique

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.p[j] if j < len(self.p) else ""

    def take(self) -> str:
        if self.i >= len(self.p):
            raise RegexError("Unexpected end of pattern")
        c = self.p[self.i]
        self.i += 1
        return c

    # -- outside classes

    def alternation(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise Unsupported(f"groups nested more than {MAX_DEPTH} deep")
        branches = [self.sequence(depth)]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence(depth))
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def sequence(self, depth: int) -> Node:
        items: list[Node] = []
        while self.i < len(self.p) and self.peek() not in "|)":
            atoms = self.atom(depth)
            if self.peek() and self.peek() in "*+?{":
                if not atoms:
                    raise Unsupported("a quantifier after an empty \\Q\\E")
                if atoms[-1][0] in ("bol", "eol"):
                    raise Unsupported("a quantifier on an anchor (^ or $)")
                atoms[-1] = self.quantified(atoms[-1])
            items.extend(atoms)
        return items[0] if len(items) == 1 else ("cat", items)

    def atom(self, depth: int) -> list[Node]:
        c = self.take()
        if c == "(":
            return [self.group(depth)]
        if c == "[":
            return [("chars", self.char_class(depth + 1))]
        if c == ".":
            return [("chars", DOT)]
        if c == "^":
            return [("bol",)]
        if c == "$":
            return [("eol",)]
        if c in "*+?":
            raise RegexError(f"Dangling meta character '{c}'")
        if c == "{":
            raise Unsupported("a '{' with nothing to repeat (write \\{ for a literal brace)")
        if c == "\\":
            if self.peek() == "Q":
                self.i += 1
                return self.quoted()
            return [("chars", self.escape(in_class=False))]
        return [("chars", ((ord(c), ord(c)),))]

    def quoted(self) -> list[Node]:
        end = self.p.find("\\E", self.i)
        if end < 0:
            # Kafka joins the filters with '|': an open quote would swallow the next filters.
            raise Unsupported("\\Q without its closing \\E")
        text, self.i = self.p[self.i:end], end + 2
        return [("chars", ((ord(c), ord(c)),)) for c in text]

    def group(self, depth: int) -> Node:
        if self.peek() == "?":
            self.i += 1
            kind = self.take()
            if kind == "<" and self.peek() in ("=", "!"):
                raise Unsupported(f"a lookbehind (?<{self.peek()}...)")
            if kind in "=!":
                raise Unsupported(f"a lookahead (?{kind}...)")
            if kind == ">":
                raise Unsupported("an atomic group (?>...)")
            if kind == "<":
                start = self.i
                while self.peek().isascii() and self.peek().isalnum():
                    self.i += 1
                name = self.p[start:self.i]
                if not name or not name[0].isalpha():
                    raise RegexError("capturing group name does not start with a Latin letter")
                if self.peek() != ">":
                    raise RegexError("named capturing group is missing trailing '>'")
                self.names.append(name)
                self.i += 1
            elif kind != ":":
                raise Unsupported(f"inline flags (?{kind}...)")
        inner = self.alternation(depth + 1)
        if self.peek() != ")":
            raise RegexError("Unclosed group")
        self.i += 1
        return inner

    def quantified(self, node: Node) -> Node:
        c = self.take()
        if c == "*":
            low, high = 0, None
        elif c == "+":
            low, high = 1, None
        elif c == "?":
            low, high = 0, 1
        else:
            low, high = self.counted()
        if self.peek() == "+":
            raise Unsupported("a possessive quantifier (*+, ++, ?+, {n}+)")
        if self.peek() == "?":
            self.i += 1  # lazy: the same language under matches()
        if self.peek() and self.peek() in "*+?{":
            raise Unsupported("a quantifier applied to a quantifier")
        return ("rep", node, low, high)

    def counted(self) -> tuple[int, int | None]:
        low = self.number()
        if low is None:
            raise RegexError("Illegal repetition")
        high: int | None = low
        if self.peek() == ",":
            self.i += 1
            high = self.number()
        if self.peek() != "}":
            raise RegexError("Unclosed counted closure")
        self.i += 1
        if high is not None and high < low:
            raise RegexError("Illegal repetition range")
        if low > MAX_REPEAT or (high or 0) > MAX_REPEAT:
            raise Unsupported(f"a repetition bound above {MAX_REPEAT}")
        return low, high

    def number(self) -> int | None:
        start = self.i
        while self.peek() and self.peek() in "0123456789":
            self.i += 1
        # Long digit strings overflow in Java (an error) and are above our bound anyway.
        return int(self.p[start:self.i][:12]) if self.i > start else None

    # -- escapes

    def escape(self, in_class: bool) -> Chars:
        if self.i >= len(self.p):
            # Java says "Unexpected internal error" here, which reads like a crash of ours.
            raise RegexError("a trailing backslash, which escapes nothing")
        c = self.take()
        if c == "0":
            return self.single(self.octal())
        if c in "123456789":
            raise Unsupported(f"a backreference \\{c}")
        if c in CLASS_ESCAPES:
            self.was_class = True
            return CLASS_ESCAPES[c]
        if c in CONTROL_ESCAPES:
            return self.single(CONTROL_ESCAPES[c])
        if c == "c":
            if self.i >= len(self.p):
                raise RegexError("Illegal control escape sequence")
            return self.single(ord(self.take()) ^ 64)
        if c == "x":
            return self.single(self.hexadecimal())
        if c == "u":
            return self.single(self.unicode())
        if c in UNSUPPORTED_ESCAPES and (in_class or c != "Q"):
            raise Unsupported(UNSUPPORTED_ESCAPES[c])
        if c.isascii() and c.isalpha():
            raise RegexError("Illegal/unsupported escape sequence")
        return self.single(ord(c))

    @staticmethod
    def single(cp: int) -> Chars:
        if 0xD800 <= cp <= 0xDFFF:
            raise Unsupported("a surrogate code unit escape")
        return ((cp, cp),)

    def octal(self) -> int:
        digits = ""
        while len(digits) < 3 and self.peek() and self.peek() in "01234567":
            if len(digits) == 2 and digits[0] not in "0123":
                break
            digits += self.take()
        if not digits:
            raise RegexError("Illegal octal escape sequence")
        return int(digits, 8)

    def hexadecimal(self) -> int:
        if self.peek() == "{":
            self.i += 1
            value, digits = 0, 0
            while self.peek() and self.peek() in "0123456789abcdefABCDEF":
                value, digits = value * 16 + int(self.take(), 16), digits + 1
                if value > MAX_CODE_POINT:
                    raise RegexError("Hexadecimal codepoint is too big")
            if not digits:
                raise RegexError("Illegal hexadecimal escape sequence")
            if self.peek() != "}":
                raise RegexError("Unclosed hexadecimal escape sequence")
            self.i += 1
            return value
        pair = self.p[self.i:self.i + 2]
        if len(pair) < 2 or any(d not in "0123456789abcdefABCDEF" for d in pair):
            raise RegexError("Illegal hexadecimal escape sequence")
        self.i += 2
        return int(pair, 16)

    def unicode(self) -> int:
        digits = self.p[self.i:self.i + 4]
        if len(digits) < 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
            raise RegexError("Illegal Unicode escape sequence")
        self.i += 4
        return int(digits, 16)

    # -- classes (Java 9+: nested classes are unions, && intersects, ^ negates the whole class)

    def char_class(self, depth: int) -> Chars:
        if depth > MAX_DEPTH:
            raise Unsupported(f"character classes nested more than {MAX_DEPTH} deep")
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        operands: list[Chars] = []
        current: Chars = NOTHING
        items = 0      # items since the last && (or the start)
        first = True   # a ']' right after '[' or '[^' is a literal
        while True:
            if self.i >= len(self.p):
                raise RegexError("Unclosed character class")
            c = self.peek()
            if c == "]" and not first:
                self.i += 1
                break
            if c == "[":
                self.i += 1
                current = union(current, self.char_class(depth + 1))
            elif c == "&" and self.peek(1) == "&":
                if items == 0 or self.peek(2) in ("&", "]"):
                    raise Unsupported("'&&' without a class on both sides")
                self.i += 2
                operands.append(current)
                current, items, first = NOTHING, 0, False
                continue
            else:
                current = union(current, self.class_item(first))
            items += 1
            first = False
        if items == 0:
            raise Unsupported("'&&' without a class on both sides")
        for operand in operands:
            current = intersect(current, operand)
        return negate(current) if negated else current

    def class_item(self, first: bool) -> Chars:
        """One character, range or escaped class inside [...]."""
        start_at = self.i
        low = self.class_char()
        if isinstance(low, tuple):
            if self.peek() == "-" and self.peek(1) != "]":
                raise Unsupported("a '-' after a class escape (write \\- for a literal hyphen)")
            return low
        if self.p[start_at] == "-" and not first and self.peek() != "]":
            raise Unsupported("a '-' that is not part of a range (write \\- for a literal hyphen)")
        if self.peek() == "-" and self.peek(1) not in ("]", ""):
            self.i += 1
            if self.peek() in ("[", "-") or (self.peek() == "&" and self.peek(1) == "&"):
                raise Unsupported("a '-' before a class or an operator (write \\- for a literal hyphen)")
            high = self.class_char()
            if isinstance(high, tuple) or high < low:
                raise RegexError("Illegal character range")
            if self.peek() == "-" and self.peek(1) != "]":
                raise Unsupported("a '-' right after a range (write \\- for a literal hyphen)")
            return ((low, high),)
        return ((low, low),)

    def class_char(self) -> int | Chars:
        c = self.take()
        if c != "\\":
            return ord(c)
        self.was_class = False
        chars = self.escape(in_class=True)
        return chars if self.was_class else chars[0][0]


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


# ------------------------------------------------------------------ languages of topic names
# Questions about topic names are answered on minimal deterministic automata over Kafka's topic
# alphabet: each filter is determinized once, boolean combinations are products, and a search
# is a breadth-first walk of a product, so the first name found is a shortest one. Every
# construction counts the states it creates against a budget and raises Budget past it.


S = TypeVar("S", bound=Hashable)
# A verdict over each automaton's acceptance of a name (any, all, include-and-not-exclude...).
Accept = Callable[[tuple[bool, ...]], object]
# Breadth-first search: each state's parent state and the character that led to it.
Parents = dict[tuple[int, ...], "tuple[tuple[int, ...], str] | None"]


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


def shortest(dfas: list[DFA], accept: Accept, budget: int) -> tuple[str | None, int]:
    """A shortest legal topic name (1-249 characters, not "." or "..") whose acceptance by each
    automaton satisfies `accept(bits)`, or None; and the states explored."""
    _, reps, columns = _joint(dfas)
    # The last component spells out "is this a legal topic name so far": 0 empty, 1 ".", 2 "..",
    # 3 anything else.
    start = (*(d.start for d in dfas), 0)
    parents: Parents = {start: None}
    queue = deque([(start, 0)])
    while queue:
        state, depth = queue.popleft()
        if state[-1] == 3 and accept(tuple(d.accepting[s] for d, s in zip(dfas, state))):
            return _spell(state, parents), len(parents)
        if depth == MAX_TOPIC:
            continue
        for c, cols in zip(reps, columns):
            legal = 1 if state[-1] == 0 and c == "." else 2 if state[-1] == 1 and c == "." else 3
            nxt = (*(d.table[s][col] for d, s, col in zip(dfas, state, cols)), legal)
            if nxt in parents:
                continue
            if len(parents) >= budget:
                raise Budget(f"more than {budget} automaton states")
            parents[nxt] = (state, c)
            queue.append((nxt, depth + 1))
    return None, len(parents)


def _spell(state: tuple[int, ...], parents: Parents) -> str:
    out: list[str] = []
    step = parents[state]
    while step is not None:
        state, c = step
        out.append(c)
        step = parents[state]
    return "".join(reversed(out))


def accepts(dfa: DFA, name: str) -> bool:
    """Whether the automaton accepts a name of topic characters."""
    state = dfa.start
    for c in name:
        state = dfa.table[state][dfa.symbol[c]]
    return bool(name) and dfa.accepting[state]


def word_automaton(words: Iterable[str], budget: int) -> tuple[DFA, int]:
    """The minimal DFA of a finite set of names (those of topic characters)."""
    return determinize(NFA(((),), ((),), ((),), ((),), 0, -1, frozenset(words)), budget)


def _legal_step(legal: int, c: str) -> int:
    """Whether a name is legal so far: 0 empty, 1 ".", 2 "..", 3 anything else (Topic.validate)."""
    return 1 if legal == 0 and c == "." else 2 if legal == 1 and c == "." else 3


def preimage(dfa: DFA, unified: str, avoid: str | None = None) -> str | None:
    """A legal name other than `avoid` that the automaton accepts and that Kafka unifies to
    `unified` (each '_' may be '.' or '_'), or None. Linear in the name times the automaton."""
    choices = [("_", ".") if c == "_" else (c,) for c in unified]
    reach = [{dfa.start}]
    for options in choices:
        reach.append({dfa.table[s][dfa.symbol[c]] for s in reach[-1] for c in options})
    live = [set[int]() for _ in reach]
    live[-1] = {s for s in reach[-1] if dfa.accepting[s]}
    for i in range(len(choices) - 1, -1, -1):
        live[i] = {s for s in reach[i] if any(dfa.table[s][dfa.symbol[c]] in live[i + 1] for c in choices[i])}
    # Every state kept leads to an accepted name, so the search meets at most three refusals
    # (`avoid`, "." and "..") before an answer.
    stack = [(dfa.start, "")] if unified and dfa.start in live[0] else []
    while stack:
        state, text = stack.pop()
        i = len(text)
        if i == len(unified):
            if text != avoid and text not in (".", ".."):
                return text
            continue
        for c in reversed(choices[i]):
            nxt = dfa.table[state][dfa.symbol[c]]
            if nxt in live[i + 1]:
                stack.append((nxt, text + c))
    return None


def shortest_unified_pair(a: DFA, b: DFA, budget: int) -> tuple[tuple[str, str] | None, int]:
    """A shortest pair of different legal names, one each automaton accepts, that are equal once
    '.' and '_' are unified (Kafka's Topic.hasCollision), or None; and the states explored. Both
    names are spelled in lockstep: equal characters, except '.' against '_'."""
    steps: dict[tuple[int, int], tuple[str, str]] = {}
    for c in TOPIC_ALPHABET:
        if c not in "._":
            steps.setdefault((a.symbol[c], b.symbol[c]), (c, c))
    pairs = [*steps.values(), *((x, y) for x in "_." for y in "_.")]
    columns = [(a.symbol[x], b.symbol[y]) for x, y in pairs]
    # (state of a, state of b, the names differ yet, legal so far for a, for b)
    start = (a.start, b.start, 0, 0, 0)
    parents: dict[tuple[int, int, int, int, int], tuple[tuple[int, int, int, int, int], str, str] | None] = {start: None}
    queue = deque([(start, 0)])
    while queue:
        state, depth = queue.popleft()
        sa, sb, differ, la, lb = state
        if differ and la == 3 and lb == 3 and a.accepting[sa] and b.accepting[sb]:
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
        for (x, y), (ca, cb) in zip(pairs, columns):
            nxt = (a.table[sa][ca], b.table[sb][cb], differ or int(x != y), _legal_step(la, x), _legal_step(lb, y))
            if nxt in parents:
                continue
            if len(parents) >= budget:
                raise Budget(f"more than {budget} automaton states")
            parents[nxt] = (state, x, y)
            queue.append((nxt, depth + 1))
    return None, len(parents)


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
    """`shortest(..., all, ...)` over machines: a shortest legal name every machine accepts, or
    None; and the states explored. Only characters that keep every machine alive are followed.
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
    """`shortest_unified_pair` over machines."""
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
    """`preimage` over a machine: a legal name other than `avoid` it accepts that Kafka unifies
    to `unified`, or None. Linear in the name times the states each position reaches."""
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


def literal(pattern: str) -> str | None:
    """The one name a pattern matches when it is a plain name (no metacharacter), else None."""
    return pattern if pattern and not any(c in ".^$*+?{}[]|()\\" for c in pattern) else None


def literal_prefix(tree: Node) -> str:
    """Characters every string the tree matches starts with (a cheap disjointness test)."""
    return _prefix(tree)[0]


def pattern_prefix(pattern: str) -> str:
    """`literal_prefix` of a pattern, read without its tree when it lists names."""
    listed = _listed_alternatives(pattern)
    if listed is None:
        return literal_prefix(parse(pattern))
    # A wildcard word's literal prefix ends at its first unescaped '.'.
    return _common_prefix([word[:(mask & -mask).bit_length() - 1] if mask else word for word, mask in listed])


def _common_prefix(texts: list[str]) -> str:
    common = min(texts, key=len, default="")
    for text in texts:
        while not text.startswith(common):
            common = common[:-1]
    return common


def _prefix(tree: Node) -> tuple[str, bool]:
    """(prefix, complete): `complete` when the prefix is the whole of every match."""
    kind = tree[0]
    if kind == "chars":
        chars = tree[1]
        if len(chars) == 1 and chars[0][0] == chars[0][1]:
            return chr(chars[0][0]), True
        return "", False
    if kind == "cat":
        out = ""
        for item in tree[1]:
            text, complete = _prefix(item)
            out += text
            if not complete:
                return out, False
        return out, True
    if kind == "alt":
        found = [_prefix(branch) for branch in tree[1]]
        common = found[0][0]
        for text, _ in found[1:]:
            while not text.startswith(common):
                common = common[:-1]
        return common, all(c and t == common for t, c in found)
    if kind in ("bol", "eol"):
        return "", True  # zero-width: what follows still starts the match
    _, inner, low, high = tree
    if low == 0:
        return "", high == 0
    text, complete = _prefix(inner)
    return text, complete and low == high == 1
