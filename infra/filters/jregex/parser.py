"""Java's pattern grammar (JDK 17 `java.util.regex.Pattern`) into a syntax tree; finite
alternatives and wildcard words kept aside; a pattern's literal prefix."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from infra.filters.jregex.charset import (CLASS_ESCAPES, CONTROL_ESCAPES, DOT, NOTHING, UNSUPPORTED_ESCAPES, Chars,
                                          intersect, negate, union)
from infra.filters.jregex.limits import MAX_CODE_POINT, MAX_DEPTH, MAX_PATTERN, MAX_REPEAT, RegexError, Unsupported

# ------------------------------------------------------------------ syntax tree
# ("chars", Chars) | ("cat", [nodes]) | ("alt", [nodes]) | ("rep", node, min, max|None)
# | ("bol",) | ("eol",)
Node = tuple[Any, ...]


def parse(pattern: str) -> Node:
    """The pattern's syntax tree. Raises RegexError (Java rejects it) or Unsupported."""
    return _parse(pattern)[0]


def check_syntax(pattern: str) -> None:
    """Whether Java compiles `pattern`, where nothing needs its language: lookarounds and atomic
    groups are read for their syntax and stand for nothing. Raises RegexError (Java rejects it) or Unsupported (a construct this parser
    does not read at all, such as inline flags: refused, never guessed)."""
    if len(pattern) > MAX_PATTERN:
        raise Unsupported(f"a pattern of {len(pattern)} characters (at most {MAX_PATTERN})")
    parser = _Parser(pattern, lookarounds=True)
    parser.alternation(0)
    if parser.i < len(parser.p):
        raise RegexError("Unmatched closing ')'")


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
    def __init__(self, pattern: str, lookarounds: bool = False) -> None:
        self.p = pattern
        self.lookarounds = lookarounds  # check_syntax: read them, for their syntax only
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
            behind = kind == "<" and self.peek() in ("=", "!")
            if self.lookarounds and (behind or kind in ("=", "!", ">")):
                if behind:
                    self.i += 1
                inner = self.alternation(depth + 1)
                if self.peek() != ")":
                    raise RegexError("Unclosed group")
                self.i += 1
                del inner  # Java 17 compiles a lookbehind of any length (tests/conformance/test_jregex.py)
                return ("cat", [])  # matches nothing of its own: its language is not needed here
            if behind:
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
