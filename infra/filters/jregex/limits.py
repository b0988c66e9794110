"""The bounds every question about a filter stays within, and the three ways a question ends
without an answer: a pattern Java rejects, a construct the automata do not model, a spent budget."""

from __future__ import annotations

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
