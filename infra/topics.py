"""Topic filters as languages: do two filters share a topic, and which one?

Kafka's MirrorMaker 2 matches a topic against each `topics` regex with Java's `Pattern.matches`
(the whole name), and drops it if any `topics.exclude` regex matches. A filter is therefore the
language (union of includes) minus (union of excludes). Intersections are decided on finite
automata (interegular), never by comparing strings, and every example topic found is confirmed
with Python's `re` before it is shown. Java and Python regexes agree on what topic filters use;
constructs the automaton library cannot model (lookarounds, backreferences, inner anchors) make
the answer "undecided", which callers report as a warning rather than guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import interegular
from interegular.fsm import FSM, anything_else

# Kafka's defaults (DefaultTopicFilter / DefaultGroupFilter): setting `topics.exclude` or
# `groups.exclude` replaces them, so the plan appends them to any exclude a flow sets.
DEFAULT_TOPICS_EXCLUDE = (r".*[\-\.]internal", r".*\.replica", r"__.*")
DEFAULT_GROUPS_EXCLUDE = (r"console-consumer-.*", r"connect-.*", r"__.*")
LOOKAROUND = re.compile(r"\(\?<?[=!]|\\[1-9]|\(\?P=")
EXAMPLES_TRIED = 50


class Undecided(Exception):
    """The automaton library cannot represent one of the regexes."""


@dataclass(frozen=True)
class Filter:
    """A topic filter, optionally behind the fixed prefix a replication policy adds."""
    include: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    prefix: str = ""

    @property
    def guaranteed_prefix(self) -> str:
        """A prefix every accepted topic has (possibly empty): a cheap disjointness test."""
        prefixes = [self.prefix + _literal_prefix(p) for p in self.include]
        common = prefixes[0]
        for other in prefixes[1:]:
            while not other.startswith(common):
                common = common[:-1]
        return common

    def matches(self, topic: str) -> bool:
        if not topic.startswith(self.prefix):
            return False
        name = topic[len(self.prefix):]
        return (any(re.fullmatch(p, name) for p in self.include)
                and not any(re.fullmatch(p, name) for p in self.exclude))


_META = set(".^$*+?{}[]|()\\")


def _literal_prefix(pattern: str) -> str:
    """The literal characters a regex starts with; "" when unsure (alternation, groups, flags)."""
    body = pattern[1:] if pattern.startswith("^") else pattern
    if re.search(r"(?<!\\)\|", body):
        return ""
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body) and not body[i + 1].isalnum():
            out.append(body[i + 1])
            i += 2
            continue
        if c in _META:
            if c in "*?{" and out:
                out.pop()  # the last character is optional
            break
        out.append(c)
        i += 1
    return "".join(out)


def _whole(pattern: str) -> str:
    """`matches` semantics: leading ^ and trailing $ are no-ops; anywhere else we cannot model them."""
    body = pattern[1:] if pattern.startswith("^") else pattern
    if body.endswith("$") and not body.endswith("\\$"):
        body = body[:-1]
    if LOOKAROUND.search(body) or re.search(r"(?<!\\)[\^$](?![^\[]*\])", body):
        raise Undecided(pattern)
    return body


@lru_cache(maxsize=4096)
def _fsm(patterns: tuple[str, ...], prefix: str) -> FSM:
    alternatives = "|".join(f"(?:{_whole(p)})" for p in patterns)
    try:
        return interegular.parse_pattern(re.escape(prefix) + f"(?:{alternatives})").to_fsm()
    except Exception as exc:  # interegular raises its own Unsupported and parse errors
        raise Undecided(f"{patterns!r}: {exc}") from None


@lru_cache(maxsize=4096)
def language(f: Filter) -> FSM:
    fsm = _fsm(f.include, f.prefix)
    if f.exclude:
        fsm = fsm.difference(_fsm(f.exclude, f.prefix))
    return fsm


def common_topic(a: Filter, b: Filter) -> str | None:
    """A topic both filters accept, or None when they are disjoint. Raises Undecided."""
    pa, pb = a.guaranteed_prefix, b.guaranteed_prefix
    if not (pa.startswith(pb) or pb.startswith(pa)):
        return None  # no automaton needed: every topic of one starts differently from the other's
    both = language(a) & language(b)
    return None if both.empty() else example(both, [a, b])


def example(fsm: FSM, filters: list[Filter]) -> str:
    """A topic of the (non-empty) automaton, confirmed with `re` against every filter."""
    for i, symbols in enumerate(fsm.strings()):
        if i >= EXAMPLES_TRIED:
            break
        topic = _spell(symbols, fsm)
        if all(f.matches(topic) for f in filters):
            return topic
    raise Undecided("the automata intersect but no example could be confirmed")


def _spell(symbols: list, fsm: FSM) -> str:
    # `anything_else` stands for any character outside the automaton's explicit alphabet.
    other = next(c for c in "xyzq0123456789abcdefghijklmnoprstuvw_-" if c not in fsm.alphabet)
    return "".join(other if s is anything_else else s for s in symbols)
