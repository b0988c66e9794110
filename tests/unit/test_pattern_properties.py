"""Random topologies mixing every pattern: each is planned with every invariant holding on the
output, or rejected with messages — never an unhandled exception.

Topic filters are drawn over a two-letter alphabet so that a brute-force oracle (every topic name
up to a few characters) can check the automaton-based guardrails independently: whenever two
source connectors of a flow, or two flows into one cluster, accept a common topic of the
universe, the topology must have been refused.
"""

from __future__ import annotations

import itertools
import os
import re

from hypothesis import HealthCheck, event, given, settings, strategies as st

from infra.core import names
from infra.topology import schema
from tests.support.references import plan_random
from tests.support.stacks import RELEASES, sometimes

EXAMPLES = int(os.environ.get("PATTERN_EXAMPLES", "2000"))
ALIASES = ["a", "b", "c"]
PEM = {"protocol": "SSL", "tls": {"trust": "pem"}}
REGEXES = ["a.*", "b.*", "a\\.b", "ab", "b\\..*", "(a|b)a.*", "[ab]b", "a\\..*", "ba", "a", "b", "aa", "b\\.a"]
EXCLUDES = ["a\\..*", "ab.*", "b"]
# Every topic of up to 4 characters over the filters' alphabet: the brute-force oracle.
UNIVERSE = ["".join(p) for n in range(5) for p in itertools.product("ab.", repeat=n)]
RENAMING = "org.apache.kafka.connect.transforms.RegexRouter"
INSERT_HEADER = "org.apache.kafka.connect.transforms.InsertHeader"
SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
CHECKPOINT = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
HEARTBEAT = "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"


def filters():
    one_or_two = st.one_of(st.lists(st.sampled_from(REGEXES), min_size=1, max_size=1),
                           st.lists(st.sampled_from(REGEXES), min_size=1, max_size=1),
                           st.lists(st.sampled_from(REGEXES), min_size=2, max_size=2, unique=True))
    return st.fixed_dictionaries({"topics": one_or_two},
                                 optional={"topicsExclude": st.lists(st.sampled_from(EXCLUDES), max_size=1)})


def transforms():
    return st.lists(st.builds(
        lambda name, kind: {"name": name, "type": kind, "config": {"header": "h", "value.literal": "v"}},
        st.sampled_from(["Tag", "InsertHeader", "Mark"]),
        sometimes(st.just(INSERT_HEADER), st.just(RENAMING))), max_size=2, unique_by=lambda t: t["name"])


@st.composite
def source_instances(draw):
    count = draw(st.integers(1, 3))
    found = []
    for i in range(count):
        inst = {"name": draw(sometimes(st.just(f"s{i}"), st.just("dup"))), **draw(filters())}
        inst.update(draw(st.fixed_dictionaries({}, optional={
            "tasksMax": sometimes(st.integers(1, 4), st.just(0)), "transforms": transforms(),
            "state": st.sampled_from(["running", "paused"])})))
        found.append(inst)
    return found


@st.composite
def flows(draw):
    source, target = draw(st.permutations(ALIASES))[:2]
    flow = {"source": source, "target": target}
    shape = draw(st.sampled_from(["topics", "sources", "connectClusters", "bidirectional"]))
    if shape in ("topics", "bidirectional"):
        flow.update(draw(filters()))
        flow["bidirectional"] = shape == "bidirectional"
    elif shape == "sources":
        flow["sources"] = draw(source_instances())
    else:
        parts = []
        for i in range(draw(st.integers(1, 2))):
            part = {"name": draw(sometimes(st.just(f"p{i}"), st.just("part")))}
            part.update(draw(filters()) if draw(st.booleans()) else {"sources": draw(source_instances())})
            if draw(st.booleans()):
                part["connect"] = {"replicas": draw(st.integers(1, 3)),
                                   "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}}
                part["resourceQuota"] = {"hard": {"requests.cpu": str(draw(st.integers(1, 8)))}}
            parts.append(part)
        flow["connectClusters"] = parts
    pair = shape == "bidirectional"
    flow.update(draw(st.fixed_dictionaries({}, optional={
        "name": sometimes(st.sampled_from(["f1", "f2", "f3", "f4"]), st.just("x" * 38)),
        "replicationPolicy": sometimes(st.just("identity") if pair else st.sampled_from(["default", "identity"]),
                                       st.just("default")),
        "heartbeats": st.booleans(),
        "checkpoints": sometimes(st.just(False), st.just(True)) if pair else st.booleans(),
        "aggregation": sometimes(st.just(False), st.just(True)) if pair else st.booleans(),
        "exactlyOnce": st.sampled_from(["disabled", "preparing", "enabled"]),
        "transforms": transforms(),
    })))
    return flow


@st.composite
def topologies(draw):
    return {"operator": dict(zip(("flavour", "version"), draw(st.sampled_from(RELEASES)))),
            "clusters": {a: {"bootstrapServers": f"{a}:9093", "security": PEM} for a in ALIASES},
            "flows": draw(st.lists(flows(), min_size=1, max_size=3))}


def accepts(include, exclude, topic: str) -> bool:
    return any(re.fullmatch(p, topic) for p in include) and not any(re.fullmatch(p, topic) for p in exclude)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topologies())
def test_random_pattern_topologies_plan_with_invariants_or_fail_with_messages(data):
    planned = plan_random(data)
    if planned is None:
        return
    topo, stack = planned
    target_topics: dict[str, list] = {}
    for flow_plan in stack.flows:
        flow = flow_plan.flow
        prefix = names.topic_prefix(flow.source, flow.policy is schema.Policy.default)
        specs = [s for p in flow_plan.parts for s in p.spec.sources]
        # Oracle: no topic of the universe is replicated by two source connectors of a flow.
        for topic in UNIVERSE:
            assert sum(accepts(s.topics, s.topics_exclude, topic) for s in specs) <= 1, (flow.flow_name, topic)
        target_topics.setdefault(flow.target, []).append(
            (flow, {prefix + t for t in UNIVERSE if any(accepts(s.topics, s.topics_exclude, t) for s in specs)}))
        heartbeat_connectors = 0
        for part in flow_plan.parts:
            kinds = [c["spec"]["class"] for c in part.connector_manifests]
            # The planned kind and the class the worker runs agree.
            assert kinds == [c.kind.connector_class for c in part.connectors]
            assert kinds.count(SOURCE) == len(part.spec.sources) >= 1
            heartbeat_connectors += kinds.count(HEARTBEAT)
            assert kinds.count(CHECKPOINT) == (1 if flow.with_checkpoints else 0)
            for c in part.connector_manifests:
                cfg = c["spec"]["config"]
                assert c["spec"]["tasksMax"] >= 1
                assert RENAMING not in cfg.values()
                if c["spec"]["class"] == CHECKPOINT:
                    # The checkpoint connector covers exactly the union of the sources' topics.
                    refs = {s["config"]["topics"] for s in part.connector_manifests
                            if s["spec"]["class"] == SOURCE for s in [s["spec"]]}
                    assert set(cfg["topics"].split(",")) == refs
                if c["spec"]["class"] == SOURCE and flow_plan.direction.partner:
                    # Only where Kafka has the key (3.9+); 3.8 would ignore it.
                    assert cfg.get("emit.offset-syncs.enabled") is (
                        False if topo.operator.release.emit_offset_syncs_key else None)
                    assert cfg["transforms"].startswith("FilterReplicatedFromTarget,InsertHeader")
        assert heartbeat_connectors == (1 if flow.heartbeats else 0)
        event("planned flow: " + ("bidirectional" if flow_plan.direction.partner else "split" if len(flow_plan.parts) > 1
                                  else "several sources" if len(specs) > 1 else "one source"))
        if flow_plan.direction.partner:
            assert not flow.with_checkpoints and flow.policy is schema.Policy.identity
    # Kafka 4.0+: exactly one source connector per cluster pair copies the heartbeats topics;
    # before 4.0 the key does not exist and is never written.
    copiers: dict[tuple[str, str], int] = {}
    for flow_plan in stack.flows:
        for part in flow_plan.parts:
            for c in part.connector_manifests:
                if c["spec"]["class"] == SOURCE:
                    key = c["spec"]["config"].get("heartbeats.replication.enabled")
                    pair = (flow_plan.flow.source, flow_plan.flow.target)
                    copiers[pair] = copiers.get(pair, 0) + (key is None)
                    assert key in ((False, None) if topo.operator.release.heartbeats_replication_key else (None,))
    if topo.operator.release.heartbeats_replication_key:
        assert set(copiers.values()) == {1}, copiers
    # Oracle: two flows write the same target topic only if both declared aggregation.
    for target, written in target_topics.items():
        for (fa, ta), (fb, tb) in itertools.combinations(written, 2):
            if ta & tb:
                assert fa.aggregation and fb.aggregation, (fa.flow_name, fb.flow_name, sorted(ta & tb)[:3])
