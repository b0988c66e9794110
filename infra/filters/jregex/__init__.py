"""Java's regex dialect as finite automata: the part of `java.util.regex.Pattern` (JDK 17) that
Kafka topic and group filters use, parsed as Java parses it and decided without backtracking.

MirrorMaker 2 joins a filter list with `|`, compiles it with `Pattern.compile` and tests each
name with `Matcher.matches()` (Kafka 3.8.0 `MirrorUtils.compilePatternList`,
`DefaultTopicFilter`). This package reads a pattern with Java's grammar (classes with nested
unions, `&&` intersections and whole-class negation; `\\0` octal, `\\x`, `\\u`, `\\c` escapes;
`\\Q...\\E` quoting; `]` first in a class is literal) and builds a Thompson automaton from it.
Whatever the automaton cannot model exactly is refused by name (`Unsupported`): lookarounds,
backreferences, inline flags, possessive quantifiers, atomic groups, word boundaries, Unicode
properties. What Java itself rejects is refused as `RegexError`. tests/conformance/test_jregex.py holds the
automaton to the JDK on thousands of random patterns and names.

Everything here is linear in the pattern and bounded: a pattern length limit, an automaton size
limit and, for the searches, a budget of explored states (`Budget`). No backtracking engine ever
runs on a user's pattern. The package has no dependencies, so the audit job can use it too.

Alternatives that spell out a finite set of names (an allow-list `orders|payments|...`, also
`orders\\.(eu|us)`) are kept as a set of words beside the automaton (`NFA.words`): migrations
list thousands of topics, and a Thompson automaton of thousands of names (or a deterministic one
of their product with other filters) would exceed any budget for a question a set lookup answers.
Names written with an unescaped `.` (`team0.orders.v1`, which Java reads as "any character but a
line terminator" at each dot) are kept likewise, as a trie of wildcard words (`NFA.wild`, `Wild`):
questions about them walk the trie beside the other automata (`search`), never a product built
ahead, so their cost grows with the names, not with the budget.
"""

from infra.filters.jregex.charset import (CLASS_ESCAPES, CONTROL_ESCAPES, DIGIT, DOT, EVERYTHING, HSPACE, NOTHING,
                                          SPACE, UNSUPPORTED_ESCAPES, VSPACE, WORD, Chars, contains, intersect, negate,
                                          union)
from infra.filters.jregex.dfa import DFA, Accept, S, accepts, combine, determinize, word_automaton
from infra.filters.jregex.limits import (LINE_TERMINATORS, MAX_CODE_POINT, MAX_DEPTH, MAX_PATTERN, MAX_REPEAT,
                                         MAX_STATES, MAX_TOPIC, TOPIC_ALPHABET, Budget, RegexError, Unsupported)
from infra.filters.jregex.nfa import NFA, compile_filter, matches
from infra.filters.jregex.parser import Node, check_syntax, literal, literal_prefix, parse, parse_list, pattern_prefix
from infra.filters.jregex.search import DFAMachine, Diff, Union, preimage_in, search, unified_search
from infra.filters.jregex.words import Machine, Wild

__all__ = ["Accept", "Budget", "CLASS_ESCAPES", "check_syntax", "CONTROL_ESCAPES", "Chars", "DFA", "DFAMachine", "DIGIT",
           "DOT", "Diff", "EVERYTHING", "HSPACE", "LINE_TERMINATORS", "MAX_CODE_POINT", "MAX_DEPTH",
           "MAX_PATTERN", "MAX_REPEAT", "MAX_STATES", "MAX_TOPIC", "Machine", "NFA", "NOTHING", "Node",
           "RegexError", "S", "SPACE", "TOPIC_ALPHABET", "UNSUPPORTED_ESCAPES", "Union",
           "Unsupported", "VSPACE", "WORD", "Wild", "accepts", "combine", "compile_filter", "contains",
           "determinize", "intersect", "literal", "literal_prefix", "matches", "negate", "parse",
           "parse_list", "pattern_prefix", "preimage_in", "search", "unified_search", "union",
           "word_automaton"]
