"""Sets of code points as sorted ranges: the classes, escapes and negations of Java's grammar."""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from infra.filters.jregex.limits import LINE_TERMINATORS, MAX_CODE_POINT

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
