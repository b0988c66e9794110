"""Allow-lists as migrations write them: thousands of plain topic names, as a YAML list and as one
alternation, validate within seconds and every guardrail still decides exactly; so do names
written with their dots unescaped (`team0.orders`, where each '.' matches any character)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from infra.checks import validation
from infra.filters import topics
from tests.support.refusals import accepted, problems
from tests.support.topologies import among as topo

IDENTITY = {"replicationPolicy": "identity", "topicsExclude": ".*heartbeats"}
N = 10_000


def names(kind: str) -> list[str]:
    """Realistic names (teams, dots written as Kafka needs them, escaped)."""
    return [f"team{i % 7}\\.{kind}-{i:05d}" for i in range(N)]


def as_written(patterns: list[str], form: str) -> list[str] | str:
    return patterns if form == "list" else "|".join(patterns)


@pytest.mark.parametrize("form", ["list", "alternation"])
def test_two_flows_into_one_target_sharing_exactly_one_topic(form):
    a, b = names("orders"), names("payments")
    b[5000] = a[1234]
    t = topo({"source": "a", "target": "c", "topics": as_written(a, form), **IDENTITY},
             {"source": "b", "target": "c", "topics": as_written(b, form), **IDENTITY})
    found = problems(t)
    shown = ("['team0\\\\.payments-00000', 'team1\\\\.payments-00001', 'team2\\\\.payments-00002', "
             "... 10000 filters in all]" if form == "list" else
             "['team0\\\\.payments-00000|team1\\\\.payments-00001|team2\\\\.payments-00002|team3\\\\.payment"
             "...(219997 characters)']")
    assert found == [
        f"flows[1] (repl-b-c): topics: got {shown}; expected target topics of its own: flow repl-a-c also writes "
        "'team2.orders-01234' into cluster c. Narrow the filters, or declare both flows `aggregation: true` "
        "(identity fan-in) if merging is intended"]


@pytest.mark.parametrize("form", ["list", "alternation"])
def test_disjoint_lists_are_valid_and_decided(form):
    t = topo({"source": "a", "target": "c", "topics": as_written(names("orders"), form), **IDENTITY},
             {"source": "b", "target": "c", "topics": as_written(names("payments"), form), **IDENTITY},
             {"source": "c", "target": "a", "topics": as_written(names("refunds"), form), **IDENTITY})
    accepted(t)  # no warning: nothing was left undecided


def test_lists_that_collide_only_once_unified():
    a, b = names("orders"), [n.replace("\\.", "_") for n in names("orders")][:5] + names("payments")
    t = topo({"source": "a", "target": "c", "topics": a, **IDENTITY},
             {"source": "b", "target": "c", "topics": b, **IDENTITY})
    assert problems(t)[0].endswith(
        "expected target topic names that do not collide in Kafka: flow repl-a-c writes 'team0.orders-00000' and "
        "this flow 'team0_orders-00000' into cluster c, and Kafka takes names that differ only by '.' and '_' for "
        "one topic (Topic.hasCollision): the second is never created. Narrow the filters or rename the topics")


@pytest.mark.parametrize("written", ["escaped", "dotted"])
def test_an_identity_loop_through_long_lists_is_found(written):
    listed = names if written == "escaped" else dotted
    a, b = listed("orders"), listed("payments")
    b[9999] = a[42]
    t = topo({"source": "a", "target": "b", "topics": a, "replicationPolicy": "identity"},
             {"source": "b", "target": "a", "topics": b, "replicationPolicy": "identity"})
    assert problems(t) == [
        "flows[0] (repl-a-b): replicationPolicy: got 'identity'; expected no cycle of identity flows that replicate "
        "the same topics: a -> b -> a (repl-a-b -> repl-b-a) would replicate topic 'team0.orders-00042' forever. "
        "Declare a bidirectional pair (one flow with `bidirectional: true`, which adds the loop filter) or use the "
        "default policy"
        "; to fail back under the identity policy, keep one direction: remove the flow you failed over with, then deploy its reverse (docs/operations.md)"]


def test_a_long_list_beside_regex_filters_decides_overlaps_and_heartbeats():
    listed = names("orders") + ["device-heartbeats"]
    t = topo({"source": "a", "target": "b", "replicationPolicy": "identity",
              "sources": [{"name": "listed", "topics": listed}, {"name": "rest", "topics": "team3\\.orders-0999.*"}]})
    assert problems(t) == [
        "flows[0] (repl-a-b): sources[1]: got ['team3\\\\.orders-0999.*']; expected a topic filter disjoint from "
        "sources[0] (['team0\\\\.orders-00000', 'team1\\\\.orders-00001', 'team2\\\\.orders-00002', ... 10001 filters "
        "in all]): both match topic 'team3.orders-09992', which would be replicated twice"]
    t["flows"][0]["sources"][1]["topics"] = "team3\\.orders-1.*"
    model = validation.parse(t)
    assert [w.split(":")[1] for w in model.warnings] == [" topics such as 'device-heartbeats' match this identity flow and end in 'heartbeats'"]


def test_the_command_line_validates_a_file_of_ten_thousand_names(tmp_path):
    t = topo({"source": "a", "target": "c", "topics": "|".join(names("orders")), **IDENTITY},
             {"source": "b", "target": "c", "topics": "|".join(names("payments")), **IDENTITY})
    path = tmp_path / "topology.yaml"
    path.write_text(yaml.safe_dump(t))
    done = subprocess.run([sys.executable, "-m", "infra", "validate", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_listed_names_never_spend_the_budget():
    listed = topics.Filter(tuple(n for n in names("orders")))
    allowance = topics.Allowance(1_000)
    assert topics.common_topic(listed, topics.Filter(tuple(names("orders")[::-1])), allowance=allowance) \
        == "team0.orders-00000"
    assert allowance.left > 0


# ------------------------------------------------------------------ names with unescaped dots


def dotted(kind: str) -> list[str]:
    """The same names as users usually write them: dots unescaped, so each matches any character."""
    return [f"team{i % 7}.{kind}-{i:05d}" for i in range(N)]


@pytest.mark.parametrize("form", ["list", "alternation"])
def test_dotted_lists_sharing_exactly_one_name_are_refused_naming_it(form):
    a, b = dotted("orders"), dotted("payments")
    b[5000] = a[1234]
    t = topo({"source": "a", "target": "c", "topics": as_written(a, form), **IDENTITY},
             {"source": "b", "target": "c", "topics": as_written(b, form), **IDENTITY})
    shown = ("['team0.payments-00000', 'team1.payments-00001', 'team2.payments-00002', ... 10000 filters in all]"
             if form == "list" else
             "['team0.payments-00000|team1.payments-00001|team2.payments-00002|team3.payments-00...(209997 "
             "characters)']")
    assert problems(t) == [
        f"flows[1] (repl-b-c): topics: got {shown}; expected target topics of its own: flow repl-a-c also writes "
        "'team2.orders-01234' into cluster c. Narrow the filters, or declare both flows `aggregation: true` "
        "(identity fan-in) if merging is intended"]


@pytest.mark.parametrize("form", ["list", "alternation"])
def test_disjoint_dotted_lists_are_valid_and_decided(form):
    t = topo({"source": "a", "target": "c", "topics": as_written(dotted("orders"), form), **IDENTITY},
             {"source": "b", "target": "c", "topics": as_written(dotted("payments"), form), **IDENTITY},
             {"source": "c", "target": "a", "topics": as_written(dotted("refunds"), form), **IDENTITY})
    accepted(t)  # no warning: nothing was left undecided


@pytest.mark.parametrize("other", ["orders_eu", "ordersXeu", "orders-eu"])
def test_an_unescaped_dot_matches_any_character_so_the_flows_share_a_topic(other):
    t = topo({"source": "a", "target": "c", "topics": ["orders.eu", "payments"], **IDENTITY},
             {"source": "b", "target": "c", "topics": [other], **IDENTITY})
    assert problems(t) == [
        f"flows[1] (repl-b-c): topics: got [{other!r}]; expected target topics of its own: flow repl-a-c also writes "
        f"{other!r} into cluster c. Narrow the filters, or declare both flows `aggregation: true` (identity fan-in) "
        "if merging is intended"]


def test_escaped_and_unescaped_dots_collide_only_as_kafka_unifies_them():
    t = topo({"source": "a", "target": "c", "topics": ["orders\\.eu"], **IDENTITY},
             {"source": "b", "target": "c", "topics": ["orders_eu"], **IDENTITY})
    assert "flow repl-a-c writes 'orders.eu' and this flow 'orders_eu' into cluster c" in problems(t)[0]
    assert topics.unified_pair(topics.Filter(("a.b",)), topics.Filter(("a_b",))) == ("a.b", "a_b")
    assert topics.unified_pair(topics.Filter(("a.b",), ("a[._]b",)), topics.Filter(("a_b",))) is None


def test_a_dotted_list_beside_regex_filters_decides_overlaps_and_heartbeats():
    listed = dotted("orders") + ["device.heartbeats"]
    t = topo({"source": "a", "target": "b", "replicationPolicy": "identity",
              "sources": [{"name": "listed", "topics": listed}, {"name": "rest", "topics": "team3\\.orders-0999.*"}]})
    assert problems(t) == [
        "flows[0] (repl-a-b): sources[1]: got ['team3\\\\.orders-0999.*']; expected a topic filter disjoint from "
        "sources[0] (['team0.orders-00000', 'team1.orders-00001', 'team2.orders-00002', ... 10001 filters in all]): "
        "both match topic 'team3.orders-09992', which would be replicated twice"]
    t["flows"][0]["sources"][1]["topics"] = "team3\\.orders-1.*"
    model = validation.parse(t)
    # 'device.heartbeats' itself is no look-alike (Kafka's rule needs a character other than '.'
    # before 'heartbeats'), but the pattern also matches 'deviceaheartbeats'.
    assert [w.split(":")[1] for w in model.warnings] == [" topics such as 'deviceaheartbeats' match this identity flow and end in 'heartbeats'"]


def test_excludes_take_what_they_match_out_of_dotted_names():
    common = topics.common_topic
    assert common(topics.Filter(("orders.eu",)), topics.Filter(("orders.*",))) == "orders.eu"
    assert common(topics.Filter(("orders.eu",), ("orders[._]eu",)), topics.Filter(("orders.*",))) == "ordersaeu"
    assert common(topics.Filter(("orders.eu",), ("orders.eu",)), topics.Filter(("orders.*",))) is None
    assert common(topics.Filter(("orders.eu",), ("orders\\.eu", "orders_eu")), topics.Filter(("orders[._]eu",))) is None
    assert common(topics.Filter((".*",), ("a.b",)), topics.Filter(("a[-_.]b",))) is None
    assert common(topics.Filter(("x.internal",)), topics.Filter(("x.*",))) == "xainternal"  # Kafka's default excludes


def test_dotted_names_never_spend_the_budget():
    allowance = topics.Allowance(1_000)
    listed = topics.Filter(tuple(dotted("orders")))
    assert topics.common_topic(listed, topics.Filter(tuple(dotted("orders")[::-1])), allowance=allowance) \
        == "team0.orders-00000"
    assert topics.common_topic(listed, topics.Filter(("team3\\.orders-0999[5-9]",)), allowance=allowance) \
        == "team3.orders-09999"
    assert topics.common_topic(listed, topics.Filter(tuple(dotted("payments"))), allowance=allowance) is None
    # A walk of every name against an automaton that never rejects a prefix: the names' own states.
    assert topics.common_topic(listed, topics.Filter((".*x",)), allowance=allowance) is None
    assert allowance.left > 900  # what is spent is the regex filters' and Kafka's default excludes' automata


def varied(kind: str) -> list[str]:
    """Dotted names whose heads before the dot all differ (`svc0.events`, `svc1.events`, ...)."""
    return [f"svc{i}.{kind}" for i in range(N)]


def test_dotted_names_with_varied_heads_are_decided_exactly():
    # Each flow also asks whether its names can end in 'heartbeats' (`.*[^.]heartbeats`): every
    # word is read through that automaton once, so the rule decides, and no topic is shared.
    t = topo({"source": "a", "target": "c", "topics": varied("events"), **IDENTITY},
             {"source": "b", "target": "c", "topics": [n.replace("svc", "app") for n in varied("events")], **IDENTITY},
             {"source": "c", "target": "a", "topics": varied("refunds"), **IDENTITY})
    accepted(t)  # no warning: nothing was left undecided
    allowance = topics.Allowance(1_000)
    lookalike = topics.Filter((r".*[^.]heartbeats",))
    assert topics.common_topic(topics.Filter(tuple(varied("events")), (".*heartbeats",)), lookalike,
                               allowance=allowance) is None
    assert topics.common_topic(topics.Filter(tuple(varied("heartbeats"))), lookalike, allowance=allowance) \
        == "svc0aheartbeats"  # a real match: the dot is any character, 'svc0.heartbeats' itself is none
    assert allowance.left > 800  # the regex filters' automata, not 20,000 names' worth


def test_dotted_names_with_varied_heads_sharing_one_are_refused_naming_it():
    a, b = varied("events"), [n.replace("svc", "app") for n in varied("events")]
    b[5000] = a[1234]
    t = topo({"source": "a", "target": "c", "topics": a, **IDENTITY},
             {"source": "b", "target": "c", "topics": b, **IDENTITY})
    found = problems(t)
    assert len(found) == 1 and "flow repl-a-c also writes 'svc1234.events' into cluster c" in found[0], found


