"""infra/filters/jregex/ against the JDK: Kafka's filters are java.util.regex patterns, so Java is the
oracle (tests/support/java/RegexCheck.java). Random patterns over the dialect (and just outside it)
with names likely to match, their near misses and line-terminator cases, thousands per run:

- a pattern we accept, Java accepts, and every name gets the same verdict;
- a pattern we call invalid (RegexError), Java rejects too (or, for a list, one of its items);
- a pattern we refuse as unsupported may go either way (we never model it).

Set JREGEX_SEED to explore other cases; a failure prints the seed and the pattern.
"""

from __future__ import annotations

import os
import random
import time

import pytest

from infra.filters import jregex, topics
from tests.support import jregex_gen as gen

SEED = int(os.environ.get("JREGEX_SEED", "20261121"))
CASES = 3000


def ours(patterns: list[str], names: list[str]):
    try:
        nfa = jregex.compile_filter(tuple(patterns))
    except jregex.RegexError as exc:
        return "invalid", str(exc)
    except jregex.Unsupported as exc:
        return "unsupported", str(exc)
    return "ok", "".join("1" if jregex.matches(nfa, n) else "0" for n in names)


@pytest.fixture(scope="module")
def differential():
    rng = random.Random(SEED)
    cases = []
    for _ in range(CASES):
        patterns = [gen.pattern(rng) for _ in range(rng.choice([1, 1, 1, 2]))]
        try:
            names = gen.names(jregex.parse_list(patterns), rng)
        except (jregex.RegexError, jregex.Unsupported):
            names = []
        cases.append((patterns, names))
    # Each item alone too: Kafka joins the list with '|', and an item invalid alone can be valid
    # joined (`\` then `|`); we refuse the item.
    singles = [([p], []) for patterns, _ in cases for p in patterns]
    verdicts = gen.java_verdicts(cases + singles)
    alone = {p[0]: v for (p, _), v in zip(singles, verdicts[len(cases):])}
    return cases, verdicts[:len(cases)], alone


def test_every_accepted_pattern_matches_exactly_as_java_does(differential):
    cases, java, _ = differential
    accepted = names = 0
    for (patterns, candidates), (kind, bits) in zip(cases, java):
        verdict, detail = ours(patterns, candidates)
        if verdict != "ok":
            continue
        accepted += 1
        names += len(candidates)
        assert kind == "M", f"seed {SEED}: we accept {patterns!r}, Java rejects it: {bits}"
        assert detail == bits, f"seed {SEED}: {patterns!r} on {candidates!r}: ours {detail}, Java {bits}"
    # The generator must keep most cases inside the dialect, or this test proves little.
    assert accepted > CASES // 2 and names > 5 * accepted, (accepted, names)


def test_every_pattern_called_invalid_is_rejected_by_java(differential):
    cases, java, alone = differential
    invalid = 0
    for (patterns, candidates), (kind, description) in zip(cases, java):
        verdict, detail = ours(patterns, candidates)
        if verdict != "invalid":
            continue
        invalid += 1
        assert kind == "E" or any(alone[p][0] == "E" for p in patterns), \
            f"seed {SEED}: we call {patterns!r} invalid ({detail}), Java accepts it"
    assert invalid > CASES // 20, invalid


def test_both_sides_match_some_names_and_miss_others(differential):
    cases, java, _ = differential
    bits = "".join(b for kind, b in java if kind == "M")
    assert 0.15 < bits.count("1") / len(bits) < 0.85


def test_shortest_common_topics_are_confirmed_by_java(differential):
    """Shortest common topics of pairs of accepted patterns: every topic found, Java matches with both
    filters; when it says there is none, no sampled topic of the first is matched by the second."""
    cases, java, _ = differential
    good = [p for (p, _), (kind, _b) in zip(cases, java) if kind == "M" and ours(p, [])[0] == "ok"]
    rng = random.Random(SEED + 1)
    checks, samples = [], []
    for _ in range(1000):
        a, b = rng.choice(good), rng.choice(good)
        try:
            # The calls topics.common_topic makes, without Kafka's default excludes.
            dfas = [jregex.determinize(jregex.compile_filter(tuple(p)), 20_000)[0] for p in (a, b)]
            found, _ = jregex.search([jregex.DFAMachine(d) for d in dfas], 20_000)
        except jregex.Budget:
            continue
        if found is not None:
            assert 1 <= len(found) <= 249 and found not in (".", "..")
            assert all(c in jregex.TOPIC_ALPHABET for c in found)
            checks.append((a, b, found))
        else:
            trees, nfa = jregex.parse_list(a), jregex.compile_filter(tuple(a))
            # Samples ignore anchors, so only those the first filter really matches count.
            topic_names = [s for s in (gen.sample(rng.choice(trees), rng) for _ in range(5))
                           if s and s not in (".", "..") and all(c in jregex.TOPIC_ALPHABET for c in s)
                           and jregex.matches(nfa, s)]
            samples.append((b, topic_names))
    verdicts = gen.java_verdicts([(a, [t]) for a, _, t in checks] + [(b, [t]) for _, b, t in checks]
                                 + samples)
    n = len(checks)
    for i, (a, b, topic) in enumerate(checks):
        assert verdicts[i] == ("M", "1") and verdicts[n + i] == ("M", "1"), (a, b, topic)
    for (b, topic_names), (kind, bits) in zip(samples, verdicts[2 * n:]):
        assert kind == "M" and "1" not in bits, (b, topic_names, bits)
    assert len(checks) > 60 and len(samples) > 300, (len(checks), len(samples))


def test_a_filters_witness_is_a_topic_java_keeps_and_the_automata_agree(differential):
    """`Filter.witness` (the guardrails' shortcut before the automata): every name it returns,
    Java matches with the include patterns and not with the excludes (Kafka's defaults
    included), and it is legal; where it returns None the automata decide, and where they find
    the filter keeps nothing it never returned a name."""
    cases, java, _ = differential
    good = [p for (p, _), (kind, _b) in zip(cases, java) if kind == "M" and ours(p, [])[0] == "ok"]
    rng = random.Random(SEED + 2)
    found, empty, undecided = [], 0, 0
    for _ in range(600):
        include, exclude = rng.choice(good), rng.choice([[], rng.choice(good)])
        spec = topics.Filter(tuple(include), tuple(exclude))
        witness = spec.witness()
        try:
            keeps = spec.language(topics.Allowance()).nonempty(topics.Allowance())
        except topics.Undecided:
            undecided += 1
            keeps = None
        if keeps is False:
            empty += 1
            assert witness is None, (include, exclude, witness)
        if witness is not None:
            assert topics.legal(witness), (include, exclude, witness)
            found.append((include, exclude, witness))
    verdicts = gen.java_verdicts([(i, [w]) for i, _, w in found]
                                 + [([*e, *topics.DEFAULT_TOPICS_EXCLUDE], [w]) for _, e, w in found])
    n = len(found)
    for k, (include, exclude, witness) in enumerate(found):
        assert verdicts[k] == ("M", "1"), (include, witness, verdicts[k])
        assert verdicts[n + k] == ("M", "0"), (exclude, witness, verdicts[n + k])
    # The shortcut must answer most filters that keep a topic, or it saves nothing.
    print("WITNESS", len(found), empty, undecided)
    assert len(found) > 300 and empty > 20, (len(found), empty, undecided)


# ------------------------------------------------------------------ the dialect, case by case


@pytest.mark.parametrize("pattern, name", [
    ("[]o]rders", "orders"), ("[]o]rders", "]rders"), ("[[o]]rders", "orders"), ("\\0157rders", "orders"),
    ("[a-z&&[^b]]x", "cx"), ("[^a[b]]", "c"), ("\\Qa.b\\E", "a.b"), ("\\x{6f}", "o"), ("\\cJ", "\n"),
    ("[a-]", "-"), ("a$", "a"), ("^a", "a"), ("a$\\n", "a\n"), ("(?<n>a)b", "ab"), ("a{2,}?", "aaa"),
])
def test_java_constructs_python_reads_differently(pattern, name):
    nfa = jregex.compile_filter((pattern,))
    assert jregex.matches(nfa, name)
    assert gen.java_verdicts([([pattern], [name])]) == [("M", "1")]


@pytest.mark.parametrize("pattern, message", [
    ("(?=x).*", "a lookahead (?=...)"), ("(?<!x).*", "a lookbehind (?<!...)"), ("(a)\\1", "a backreference \\1"),
    ("(?i)orders", "inline flags (?i...)"), ("a*+", "a possessive quantifier (*+, ++, ?+, {n}+)"),
    ("(?>a)", "an atomic group (?>...)"), ("\\bx", "a word boundary \\b"), ("\\p{Alpha}", "a character property \\p{...}"),
    ("[a-c-e]", "a '-' right after a range (write \\- for a literal hyphen)"),
    ("a{1001}", "a repetition bound above 1000"), ("\\Qa", "\\Q without its closing \\E"),
    ("x" * (1 << 20) + "y", "a pattern of 1048577 characters (at most 1048576)"),
    ("(" * 60 + ")" * 60, "groups nested more than 50 deep"),
    ("(x{1000}){10}", "a pattern whose automaton exceeds 5000 states (lower the repetition counts)"),
    # A bound that remains names its real cause: a long alternation of what is not names.
    ("|".join(f"o{i}[ab]+" for i in range(2000)),
     "a pattern whose automaton exceeds 5000 states: 2000 alternatives that are not plain names (names, with or "
     "without an unescaped '.', are kept as a list however many there are; join the others under common "
     "prefixes such as `orders\\..*`)"),
])
def test_constructs_we_cannot_model_are_refused_by_name(pattern, message):
    with pytest.raises(jregex.Unsupported) as exc:
        jregex.compile_filter((pattern,))
    assert str(exc.value) == message


@pytest.mark.parametrize("pattern, message", [
    ("a(", "Unclosed group"), ("a)", "Unmatched closing ')'"), ("*a", "Dangling meta character '*'"),
    ("[b-a]", "Illegal character range"), ("a{2,1}", "Illegal repetition range"), ("a{", "Illegal repetition"),
    ("[]", "Unclosed character class"), ("\\0", "Illegal octal escape sequence"), ("\\g", "Illegal/unsupported escape sequence"),
])
def test_invalid_patterns_are_refused_with_javas_words(pattern, message):
    with pytest.raises(jregex.RegexError) as exc:
        jregex.compile_filter((pattern,))
    assert str(exc.value) == message
    assert gen.java_verdicts([([pattern], [])])[0][0] == "E"


def test_duplicate_group_names_across_a_joined_list_are_invalid():
    with pytest.raises(jregex.RegexError) as exc:
        jregex.compile_filter(("(?<a>x)", "(?<a>y)"))
    assert str(exc.value) == "Named capturing group <a> is already defined (Kafka joins the filters with '|')"
    assert gen.java_verdicts([(["(?<a>x)", "(?<a>y)"], [])])[0][0] == "E"


# ------------------------------------------------------------------ bounded work


def test_an_exploding_automaton_stops_at_its_budget():
    start = time.perf_counter()
    with pytest.raises(topics.Undecided) as exc:
        topics.common_topic(topics.Filter(("(a|b)*a(a|b){15}",)), topics.Filter(("b.*",)))
    assert str(exc.value) == "more than 20000 automaton states"
    assert time.perf_counter() - start < 30  # a hang guard, not a benchmark (benchmarks/ measure)


def test_the_total_budget_is_shared_by_every_question():
    allowance = topics.Allowance(25_000)
    exploding = topics.Filter(("(a|b)*a(a|b){15}",))
    with pytest.raises(topics.Undecided):
        topics.common_topic(exploding, topics.Filter(("b.*",)), allowance=allowance)
    with pytest.raises(topics.Undecided) as exc:  # the same language again: known undecided, nothing spent
        topics.common_topic(exploding, topics.Filter(("a.*",)), allowance=allowance)
    assert str(exc.value) == "more than 20000 automaton states" and allowance.left == 5000
    with pytest.raises(topics.Undecided) as exc:
        topics.common_topic(topics.Filter(("(a|b)*b(a|b){15}",)), topics.Filter(("a.*",)), allowance=allowance)
    assert str(exc.value) == "more than 5000 automaton states"
    with pytest.raises(topics.Undecided) as exc:
        topics.common_topic(topics.Filter(("x",)), topics.Filter(("x",)), allowance=allowance)
    assert str(exc.value) == "the topology's filters used up the 120000 automaton states all checks may explore"


def test_matching_is_linear_on_patterns_that_make_backtracking_engines_explode():
    nfa = jregex.compile_filter(("(a+)+b",))
    assert not jregex.matches(nfa, "a" * 5000)  # Python's re takes exponential time here


def test_examples_are_shortest_legal_topic_names():
    assert topics.common_topic(topics.Filter(("\\.*",)), topics.Filter((".*",))) == "..."
    assert topics.common_topic(topics.Filter(("x?",)), topics.Filter((".*",))) == "x"
    assert topics.common_topic(topics.Filter(("x{250}",)), topics.Filter((".*",))) is None
    assert topics.common_topic(topics.Filter(("__.*",)), topics.Filter((".*",))) is None  # Kafka's default excludes


def test_the_time_backstop_refuses_rather_than_passes():
    allowance = topics.Allowance(seconds=0)
    spent = time.process_time() + 0.01  # the backstop counts CPU time: spend some
    while time.process_time() < spent:
        pass
    with pytest.raises(topics.Undecided) as exc:
        topics.common_topic(topics.Filter(("x.*",)), topics.Filter(("x1",)), allowance=allowance)
    assert str(exc.value) == "the topology's filter checks ran out of their 0 s"


# ------------------------------------------------------------------ names listed, not built


@pytest.mark.parametrize("pattern, words", [
    ("orders|payments", {"orders", "payments"}), ("orders\\.eu|\\Qa.b\\E", {"orders.eu", "a.b"}),
    ("^orders$|(x|y)", {"orders", "x", "y"}), ("orders\\.(eu|us)", {"orders.eu", "orders.us"}), ("x?", {"", "x"}),
    ("a|b.*", {"a"}), ("a$b", set()), ("[ab]", {"a", "b"}),
])
def test_alternatives_that_spell_out_names_are_kept_as_a_list(pattern, words):
    nfa = jregex.compile_filter((pattern,))
    assert nfa.words == words
    assert all(jregex.matches(nfa, w) for w in words)


def test_ten_thousand_names_compile_as_a_list_and_decide_as_java_does():
    names = [f"team{i % 7}.topic-{i:05d}" for i in range(10_000)]
    escaped = [n.replace(".", "\\.") for n in names]
    start = time.perf_counter()
    for patterns in (tuple(escaped), ("|".join(escaped),)):
        nfa = jregex.compile_filter(patterns)
        assert nfa.words == set(names) and len(nfa.edges) == 2  # a start and an unreachable end
        assert jregex.matches(nfa, names[1234]) and not jregex.matches(nfa, "team1_topic-01234")
    assert time.perf_counter() - start < 5  # a hang guard; benchmarks/guardrails.py measures
    probes = [names[0], names[9999], "team0.topic-1", "team0Xtopic-00000", ""]
    assert [jregex.matches(jregex.compile_filter(("|".join(escaped),)), p) for p in probes] == [True, True, False, False, False]
    assert gen.java_verdicts([(["|".join(escaped[:2000])], probes[:1] + probes[2:])]) == [("M", "1000")]
    assert gen.java_verdicts([(escaped[:2000], probes[:1])]) == [("M", "1")]


def test_a_literal_list_against_an_automaton_decides_exactly_without_budget():
    listed = topics.Filter(tuple(f"orders-{i:05d}" for i in range(10_000)))
    allowance = topics.Allowance(2_000)
    assert topics.common_topic(listed, topics.Filter(("orders-0999[5-9]",)), allowance=allowance) == "orders-09995"
    assert topics.common_topic(listed, topics.Filter(("orders-1.*",)), allowance=allowance) is None
    assert topics.common_topic(listed, topics.Filter(("orders-.*",), ("orders-0.*",)), allowance=allowance) is None


def test_names_kafka_takes_for_one_topic():
    pair = topics.unified_pair
    assert pair(topics.Filter(("orders\\.eu",)), topics.Filter(("orders_eu",))) == ("orders.eu", "orders_eu")
    assert pair(topics.Filter(("orders\\..*",)), topics.Filter(("orders_[a-z]+",))) == ("orders.a", "orders_a")
    assert pair(topics.Filter(("orders\\.eu",)), topics.Filter(("orders\\.eu",))) is None  # the same name
    assert pair(topics.Filter(("orders-eu",)), topics.Filter(("orders_eu",))) is None  # '-' is not unified
    assert pair(topics.Filter(("_",)), topics.Filter(("[._]",))) is None  # "." is no topic name
    assert pair(topics.Filter((".*",), (".*_.*",)), topics.Filter(("x_y",))) == ("x.y", "x_y")


# ------------------------------------------------------------------ syntax only (property names)

SYNTAX_CASES = [
    "(?!retention\\.).*\\.ms", "(?=a)b", "(?<=segment\\.)bytes", "(?<!x)y", "(?<=a{1,3})b", "(?<=a|bc)d",
    "(?>ab)c", "((?=x)x)*", "(?<=(ab){2})c", "retention\\.ms",
    "(?<=a+)b", "(?<=a*)b", "(?<=a{2,})b", "(?<=(a|b+))c", "(?=a", "(?<=a", "(?!)", "a(?=b))",
    "(?=[)", "(?<=\\Qa\\E)b",
]


def test_the_syntax_check_never_accepts_what_java_refuses():
    """jregex.check_syntax (the topic configuration sync's property exclusions, which no guardrail
    reads): every pattern it accepts Java compiles, and every one it calls invalid Java refuses;
    what it cannot read (Unsupported) is refused, never guessed."""
    ours = {}
    for pattern in SYNTAX_CASES:
        try:
            jregex.check_syntax(pattern)
            ours[pattern] = "ok"
        except jregex.RegexError:
            ours[pattern] = "invalid"
        except jregex.Unsupported:
            ours[pattern] = "unsupported"
    java = dict(zip(SYNTAX_CASES, (kind for kind, _ in gen.java_verdicts([([p], []) for p in SYNTAX_CASES]))))
    assert [p for p in SYNTAX_CASES if ours[p] == "ok" and java[p] == "E"] == []
    assert [p for p in SYNTAX_CASES if ours[p] == "invalid" and java[p] != "E"] == []
    # The cases cover both verdicts, lookarounds among the accepted.
    assert {p for p in SYNTAX_CASES if ours[p] == "ok"} >= {"(?!retention\\.).*\\.ms", "(?<=segment\\.)bytes",
                                                            "(?<=a{1,3})b", "(?>ab)c"}
    assert {p for p in SYNTAX_CASES if ours[p] == "invalid"} >= {"(?=a", "(?<=a", "a(?=b))", "(?=[)"}
    # Java 17 compiles a lookbehind of any length; so does the check.
    assert ours["(?<=a+)b"] == "ok" and java["(?<=a+)b"] == "M"
