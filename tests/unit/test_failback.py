"""An identity failback that would copy history back (docs/operations.md#controlled-failback):
refused against the stack's previous outputs, with what to change, unless it starts where the
failover left or says it means it."""

from __future__ import annotations

import copy

import pytest

from infra.core.errors import TopologyError
from tests.support.stacks import doc_topology, on_release, render_topology

REFUSAL = ("flows[0] (repl-us-east-us-west): startFrom: got 'earliest'; expected a start where the failover left: "
           "this identity flow reverses the deployed flow repl-us-west-us-east (us-west -> us-east), and from the "
           "earliest offsets it would copy every record still retained on us-east back into the same-named topics of "
           "us-west, those that came from us-west included. Deploy it with state.source: stopped and an offsets alter "
           "of repl-us-east-us-west-source at us-east's end offsets when the failover stopped replication, minus one, "
           "then "
           "running (docs/operations.md#controlled-failback); or startFrom: latest if nothing was produced on "
           "us-east since; or acknowledgeReplayedHistory: true to copy it all")


def forward(policy: str = "identity", version: str = "1.4") -> dict:
    t = on_release(doc_topology(), "csm", version)  # offsets as code from CSM 1.4
    t["flows"][0].update({"replicationPolicy": policy, "topicsExclude": [".*heartbeats"]})
    t["clusters"]["us-west"]["security"]["tls"] = {"trust": "pem"}  # a target on failback: PEM trust
    return t


def reversed_of(t: dict, **changes) -> dict:
    back = copy.deepcopy(t)
    flow = back["flows"][0]
    flow["source"], flow["target"] = flow["target"], flow["source"]
    flow.update(changes)
    return back


def at(tmp_path, name: str):
    (tmp_path / name).mkdir(exist_ok=True)
    return tmp_path / name


def deployed(tmp_path, t: dict) -> dict:
    return {"flows": render_topology(at(tmp_path, "before"), t).outputs["flows"]}


def refusal(tmp_path, t: dict, previous: dict) -> list[str]:
    with pytest.raises(TopologyError) as exc:
        render_topology(at(tmp_path, "after"), t, previous_outputs=previous)
    return [str(p) for p in exc.value.problems]


def test_an_identity_failback_from_the_earliest_offsets_is_refused(tmp_path):
    t = forward()
    assert refusal(tmp_path, reversed_of(t), deployed(tmp_path, t)) == [REFUSAL]


def test_without_offsets_requests_the_refusal_gives_the_rest_api_route(tmp_path):
    """CSM 1.2 (Strimzi 0.43) has no offsets requests: the remedy is the Connect REST API, with
    the flow deployed stopped and the acknowledgement, as the runbook and the drill on that
    release do (tests/runtime/test_failover_drills.py)."""
    t = forward(version="1.2")
    assert refusal(tmp_path, reversed_of(t), deployed(tmp_path, t)) == [REFUSAL.replace(
        "Deploy it with state.source: stopped and an offsets alter of repl-us-east-us-west-source at us-east's end "
        "offsets when the failover stopped replication, minus one, then running",
        "Deploy it with state.source: stopped and acknowledgeReplayedHistory: true, set the offsets of "
        "repl-us-east-us-west-source at us-east's end offsets when the failover stopped replication, minus one, "
        "through the Connect REST API (PATCH /connectors/<name>/offsets: csm 1.2 has no offsets requests), then "
        "running")]
    objects = render_topology(at(tmp_path, "acknowledged"), reversed_of(
        t, state={"source": "stopped"}, acknowledgeReplayedHistory=True), previous_outputs=deployed(tmp_path, t)).objects()
    assert [o["spec"]["state"] for o in objects if o["kind"] == "KafkaConnector"
            and o["metadata"]["name"] == "repl-us-east-us-west-source"] == ["stopped"]


@pytest.mark.parametrize("changes", [
    {"startFrom": "latest"},
    {"acknowledgeReplayedHistory": True},
    {"state": {"source": "stopped"},
     "offsets": [{"connector": "repl-us-east-us-west-source", "action": "alter", "request": "failback-1",
                  "offsets": [{"topic": "test.orders", "partition": 0, "offset": 42}]}]},
], ids=["latest", "acknowledged", "offsets-altered"])
def test_a_failback_that_starts_where_the_failover_left_is_accepted(tmp_path, changes):
    t = forward()
    objects = render_topology(at(tmp_path, "after"), reversed_of(t, **changes),
                              previous_outputs=deployed(tmp_path, t)).objects()
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "KafkaConnect"] == ["repl-us-east-us-west"]


def test_what_is_not_a_failback_is_not_judged(tmp_path):
    """Default policy (the reverse flow writes prefixed topics), a first deployment, and the
    forward flow still deployed beside it (refused as a loop, by another rule) are not this rule's."""
    t = forward("default")
    back = reversed_of(t)
    back["flows"][0].pop("topicsExclude")
    for objects in (render_topology(at(tmp_path, "a"), back, previous_outputs=deployed(tmp_path, t)).objects(),
                    render_topology(at(tmp_path, "b"), reversed_of(forward())).objects()):
        assert [o["metadata"]["name"] for o in objects if o["kind"] == "KafkaConnect"] == ["repl-us-east-us-west"]
