"""Kafka's own collision rule: topic names that differ only by '.' and '_' are one topic
(org.apache.kafka.common.internals.Topic.hasCollision), so two flows writing `orders.eu` and
`orders_eu` into one cluster collide; and filters that can match no legal topic name."""

from __future__ import annotations

from infra.checks import validation
from infra.filters import topics
from tests.support.refusals import accepted, problems
from tests.support.topologies import among as topo

IDENTITY = {"replicationPolicy": "identity", "topicsExclude": ".*heartbeats"}


def test_two_flows_writing_names_that_differ_only_by_dot_and_underscore():
    t = topo({"source": "a", "target": "c", "topics": "orders\\.eu", **IDENTITY},
             {"source": "b", "target": "c", "topics": "orders_eu", **IDENTITY})
    assert problems(t) == [
        "flows[1] (repl-b-c): topics: got ['orders_eu']; expected target topic names that do not collide in Kafka: "
        "flow repl-a-c writes 'orders.eu' and this flow 'orders_eu' into cluster c, and Kafka takes names that "
        "differ only by '.' and '_' for one topic (Topic.hasCollision): the second is never created. Narrow the "
        "filters or rename the topics"]


def collision(first: str, second: str, theirs: str, mine: str) -> list[str]:
    return problems(topo({"source": "a", "target": "c", "topics": first, **IDENTITY},
                         {"source": "b", "target": "c", "topics": second, **IDENTITY})) == [
        f"flows[1] (repl-b-c): topics: got [{second!r}]; expected target topic names that do not collide in "
        f"Kafka: flow repl-a-c writes {theirs!r} and this flow {mine!r} into cluster c, and Kafka takes names "
        "that differ only by '.' and '_' for one topic (Topic.hasCollision): the second is never created. "
        "Narrow the filters or rename the topics"]


def test_regex_filters_that_collide_only_once_unified():
    # Disjoint as strings (one has '.' where the other has '_'), one topic to Kafka: an automaton
    # against listed names, and two automata in lockstep.
    assert collision("orders\\.[a-z]+", "orders_(eu|us)", "orders.eu", "orders_eu")
    assert collision("orders\\.[a-z]+", "orders_[a-z]{2}", "orders.aa", "orders_aa")
    assert collision("orders_.*", "orders\\.eu\\..*", "orders_eu_", "orders.eu.")


def test_a_prefixed_flow_colliding_with_an_identity_one_once_unified():
    # The default policy writes `a.orders`; an identity flow from b writes b's topic `a_orders`.
    t = topo({"source": "a", "target": "c", "topics": "orders"},
             {"source": "b", "target": "c", "topics": "a_orders", **IDENTITY})
    assert problems(t) == [
        "flows[1] (repl-b-c): topics: got ['a_orders']; expected target topic names that do not collide in Kafka: "
        "flow repl-a-c writes 'a.orders' and this flow 'a_orders' into cluster c, and Kafka takes names that "
        "differ only by '.' and '_' for one topic (Topic.hasCollision): the second is never created. Narrow the "
        "filters or rename the topics"]


def test_names_apart_in_kafka_pass():
    accepted(topo({"source": "a", "target": "c", "topics": "orders\\.eu", **IDENTITY},
                  {"source": "b", "target": "c", "topics": ["orders-eu", "orders_us", "orders\\.eu2"], **IDENTITY}))


def test_one_source_cannot_collide_with_itself():
    # Both flows read cluster a, where Kafka already refuses a second name that collides.
    accepted(topo({"source": "a", "target": "c", "topics": "orders\\..*", **IDENTITY},
                  {"source": "a", "target": "c", "topics": "orders_.*", **IDENTITY, "name": "second"}))


# ------------------------------------------------------------------ filters that match nothing


def test_a_filter_that_can_match_no_legal_topic_name_is_warned_about():
    model = validation.parse(topo({"source": "a", "target": "b", "topics": "orders/eu"}))
    assert list(model.warnings) == [
        "flows[0] (repl-a-b): topics ['orders/eu'] can match no legal Kafka topic name (topic names are 1-249 "
        "characters of letters, digits, '.', '_' and '-')"]


def test_a_filter_whose_excludes_cover_it_is_warned_about():
    model = validation.parse(topo({"source": "a", "target": "b", "topics": "orders\\..*",
                                   "topicsExclude": "orders.*"}))
    assert list(model.warnings) == [
        "flows[0] (repl-a-b): topics ['orders\\\\..*'] match no topic that is not excluded (by topicsExclude "
        "['orders.*'] or Kafka's default excludes ['.*[\\\\-\\\\.]internal', '.*\\\\.replica', '__.*']): this source "
        "connector replicates nothing"]


def test_a_topic_a_filter_keeps_is_found_before_any_automaton():
    """The guardrail's shortcut (topics.Filter.witness): a short walk of the include pattern finds
    a name Kafka keeps; where the excludes or the alphabet leave none, it finds none and the
    automata above decide (tests/conformance/test_jregex.py holds it to the JDK)."""
    assert topics.Filter(("orders\\..*",)).witness() == "orders."
    assert topics.Filter(("payments|orders",)).witness() == "orders"
    assert topics.Filter(("t[0-9]+\\.(eu|us)",)).witness() == "t0.eu"
    assert topics.Filter((".*",), ("orders.*",)).witness() == "a"
    assert topics.Filter(("__.*",)).witness() is None  # Kafka's default excludes take every name
    assert topics.Filter(("orders\\..*",), ("orders.*",)).witness() is None
    assert topics.Filter(("orders/eu",)).witness() is None


def test_excludes_too_large_to_compile_with_kafkas_defaults_leave_the_question_to_the_rules():
    """An exclude list within the automaton's limit alone, past it once Kafka's default excludes
    join it: the shortcut answers nothing and the rule passes over it as before (no traceback)."""
    exclude = "x" + "[0-9]{1000}" * 4 + "[0-9]{990}y.*"
    assert topics.Filter(("orders.*",), (exclude,)).witness() is None
    model = validation.parse(topo({"source": "a", "target": "b", "topics": "orders.*", "topicsExclude": exclude}))
    assert list(model.warnings) == []


def test_legal_filters_are_not_warned_about():
    accepted(topo({"source": "a", "target": "b", "topics": ["orders\\.eu", "x{249}", "\\.\\.\\."]}))


def test_hundreds_of_prefix_flows_into_shared_targets_are_decided_without_automata():
    """The program benchmark's 500 flows (prefix filters, identity pairs beside prefixed flows into
    the same targets): every '.'/'_' question is answered on the filters' literal prefixes."""
    import importlib.util

    from tests.support.stacks import ROOT
    spec = importlib.util.spec_from_file_location("bench_program", ROOT / "benchmarks" / "program.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    model = validation.parse(bench.topology(500))
    # Accepted and decided: its only warnings are the heartbeat look-alikes of its identity pairs.
    assert len(model.flows) == 500
    assert model.warnings and all("end in 'heartbeats'" in w for w in model.warnings), model.warnings[:3]
