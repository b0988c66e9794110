"""Dotted topic names in allowlists matched as java.util.regex matches them: the JDK decides."""

from __future__ import annotations

import random

from infra.filters import jregex
from tests.support import jregex_gen as gen


def test_dotted_names_match_as_java_does():
    rng = random.Random(20261124)
    alphabet = ["a", "b", "_", "-", "0", ".", ".", ".", "\\.", "é"]
    cases = []
    for _ in range(300):
        words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 5))]
        if not any("." in w.replace("\\.", "") for w in words):
            words[0] += "."
        probes = []
        for _ in range(12):
            w = rng.choice(words).replace("\\.", ".")
            chars = [c if c != "." or rng.random() < 0.3 else rng.choice("._xé\n\r\u2028\u0085-") for c in w]
            if rng.random() < 0.2:
                chars.insert(rng.randrange(len(chars) + 1), rng.choice("a."))
            probes.append("".join(chars))
        patterns = words if rng.random() < 0.5 else ["|".join(words)]
        nfa = jregex.compile_filter(tuple(patterns))
        assert not nfa.edges[nfa.start] and nfa.wild  # kept as words, no automaton
        cases.append((patterns, probes, "".join("1" if jregex.matches(nfa, p) else "0" for p in probes)))
    verdicts = gen.java_verdicts([(patterns, probes) for patterns, probes, _ in cases])
    for (patterns, probes, ours), (kind, java) in zip(cases, verdicts):
        assert (kind, java) == ("M", ours), (patterns, probes)
    assert sum(ours.count("1") for _, _, ours in cases) > 300
    assert sum(ours.count("0") for _, _, ours in cases) > 300
