"""Allow-lists as migrations write them: thousands of plain topic names, as a YAML list and as one
alternation, validate within seconds and every guardrail still decides exactly."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from infra import topics, validation
from tests.test_guardrails import accepted, problems, topo

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


def test_an_identity_loop_through_long_lists_is_found():
    a, b = names("orders"), names("payments")
    b[9999] = a[42]
    t = topo({"source": "a", "target": "b", "topics": a, "replicationPolicy": "identity"},
             {"source": "b", "target": "a", "topics": b, "replicationPolicy": "identity"})
    assert problems(t) == [
        "flows[0] (repl-a-b): replicationPolicy: got 'identity'; expected no cycle of identity flows that replicate "
        "the same topics: a -> b -> a (repl-a-b -> repl-b-a) would replicate topic 'team0.orders-00042' forever. "
        "Declare a bidirectional pair (one flow with `bidirectional: true`, which adds the loop filter) or use the "
        "default policy"]


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
