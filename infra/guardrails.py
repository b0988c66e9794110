"""Rules across flows: unsafe topologies are refused before anything is deployed.

Each rule compares only what can interact (flows of one source or target cluster, connectors of
one flow, cycles within one strongly connected component), so the cost grows with the flows
that share a cluster, not with the square of all flows. docs/guardrails.md lists every rule,
why it exists and the message it prints.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import TYPE_CHECKING

from infra import topics
from infra.errors import Problem, in_file_order
from infra.names import FlowNames, topic_prefix

if TYPE_CHECKING:
    from infra.model import Flow, Topology

IDENTITY = "identity"


def check(topo: Topology) -> tuple[list[Problem], list[str]]:
    """Problems that refuse the topology, and warnings where a rule could not decide."""
    problems = _bootstrap_aliases(topo) + _uniqueness(topo)
    warnings: list[str] = []
    # Rules on topic filters may be undecidable for some regexes: they also return warnings.
    for rule in (_policy_chains, _overlaps_within_flows, _target_collisions, _loops):
        found, undecided = rule(topo)
        problems += found
        warnings += undecided
    return in_file_order(problems), warnings


def _filters(topo: Topology, flow: Flow) -> list[tuple[str, topics.Filter]]:
    """Each source connector's filter, with the field path users wrote it under."""
    return [(f"{part.where}/{spec.where}" if part.name and spec.where != part.where else spec.where,
             topics.Filter(spec.topics, spec.topics_exclude))
            for part in topo.parts(flow) for spec in part.sources]


def _flow_filter(topo: Topology, flow: Flow) -> topics.Filter:
    """Everything a flow replicates, as one filter (only meaningful where sources are disjoint)."""
    specs = [spec for part in topo.parts(flow) for spec in part.sources]
    if len(specs) == 1:
        return topics.Filter(specs[0].topics, specs[0].topics_exclude)
    # Several disjoint sources: the union of what each keeps. Excludes are per source, so a
    # topic excluded from one may be included by another; keep only excludes that all share.
    shared = set(specs[0].topics_exclude).intersection(*(s.topics_exclude for s in specs[1:]))
    return topics.Filter(tuple(t for s in specs for t in s.topics), tuple(sorted(shared)))


def _undecided(where: str, what: str, exc: topics.Undecided) -> str:
    return f"{where}: {what} could not be decided ({exc}); check it by hand"


def _common(a: topics.Filter, b: topics.Filter, warnings: list[str], where: str, what: str) -> str | None:
    """A topic both filters accept; None when disjoint or undecidable (then a warning is added)."""
    try:
        return topics.common_topic(a, b)
    except topics.Undecided as exc:
        warnings.append(_undecided(where, what, exc))
        return None


# ------------------------------------------------------------------ clusters


def _bootstrap_aliases(topo: Topology) -> list[Problem]:
    """One alias per Kafka cluster: two aliases for the same brokers break replication policies
    (topics get the wrong prefix) and loop detection."""
    owner: dict[str, str] = {}
    problems = []
    for alias in sorted(topo.clusters):
        for server in topo.clusters[alias].bootstrapServers.split(","):
            key = server.strip().lower()
            if key in owner and owner[key] != alias:
                problems.append(Problem(f"clusters.{alias}", "bootstrapServers", server,
                                        f"servers of this cluster only: {server} is also a bootstrap server of "
                                        f"cluster {owner[key]}; one Kafka cluster must have exactly one alias"))
            owner.setdefault(key, alias)
    return problems


# ------------------------------------------------------------------ policies


def _policy_chains(topo: Topology) -> tuple[list[Problem], list[str]]:
    """Flows that chain (A->B, B->C) use the same replication policy when the second can read
    what the first writes: a replicated topic read back under another policy loses (identity
    after default: `a.t` is taken for a local topic) or never had (default after identity) the
    provenance that remote-topic detection, checkpoints and loop detection rely on."""
    by_source: dict[str, list[Flow]] = defaultdict(list)
    for flow in topo.sorted_flows():
        by_source[flow.source].append(flow)
    problems, warnings = [], []
    for flow in topo.sorted_flows():
        for after in by_source.get(flow.target, []):
            if after.policy is flow.policy or after.flow_name == flow.partner:
                continue
            topic = _common(_prefixed(topo, flow), _flow_filter(topo, after), warnings, topo.where(after),
                            f"policy chain after flow {flow.flow_name}")
            if topic is not None:
                problems.append(Problem(topo.where(after), "replicationPolicy", after.policy.value,
                                        f"{flow.policy.value}, the policy of flow {flow.flow_name}, which writes "
                                        f"topic {topic!r} into {flow.target} where this flow reads it: flows "
                                        "that chain must use one policy (or filters that keep them apart)"))
    return problems, warnings


# ------------------------------------------------------------------ topics


def _overlaps_within_flows(topo: Topology) -> tuple[list[Problem], list[str]]:
    """A topic is replicated by one MirrorSourceConnector only (the documents): the sources of a
    flow, across its Connect clusters, must be disjoint."""
    problems, warnings = [], []
    for flow in topo.sorted_flows():
        for (wa, a), (wb, b) in combinations(_filters(topo, flow), 2):
            topic = _common(a, b, warnings, topo.where(flow), f"overlap of {wa} and {wb}")
            if topic is not None:
                problems.append(Problem(topo.where(flow), wb, list(b.include),
                                        f"a topic filter disjoint from {wa} ({list(a.include)}): both match "
                                        f"topic {topic!r}, which would be replicated twice"))
    return problems, warnings


def _target_collisions(topo: Topology) -> tuple[list[Problem], list[str]]:
    """Two flows must not write the same target topic, unless both are declared `aggregation`
    (identity fan-in, which the documents allow)."""
    problems, warnings = [], []
    by_target: dict[str, list[Flow]] = defaultdict(list)
    for flow in topo.sorted_flows():
        by_target[flow.target].append(flow)
    for target, flows in sorted(by_target.items()):
        for a, b in combinations(flows, 2):
            prefixed = [f.policy.value != IDENTITY for f in (a, b)]
            if all(prefixed) and a.source != b.source:
                continue  # `<alias>.` prefixes of two aliases never collide: aliases have no dots
            if a.aggregation and b.aggregation:
                continue
            fa = _prefixed(topo, a)
            fb = _prefixed(topo, b)
            topic = _common(fa, fb, warnings, topo.where(b), f"target topics shared with flow {a.flow_name}")
            if topic is not None:
                problems.append(Problem(topo.where(b), "topics", list(fb.include),
                                        f"target topics of its own: flow {a.flow_name} also writes {topic!r} "
                                        f"into cluster {target}. Narrow the filters, or declare both flows "
                                        "`aggregation: true` (identity fan-in) if merging is intended"))
    return problems, warnings


def _prefixed(topo: Topology, flow: Flow) -> topics.Filter:
    f = _flow_filter(topo, flow)
    return topics.Filter(f.include, f.exclude, topic_prefix(flow.source, flow.policy.value != IDENTITY))


# ------------------------------------------------------------------ loops


def _loops(topo: Topology) -> tuple[list[Problem], list[str]]:
    """IdentityReplicationPolicy keeps topic names, so it cannot tell a replicated topic from a
    local one: topics that go round a cycle of identity flows are replicated forever. Refused,
    except for a declared bidirectional pair, whose loop filter drops records coming back.

    Cycles are searched within strongly connected components of the identity flows only, and a
    path is followed only while some topic is accepted by every flow on it, so flows whose
    filters are disjoint are never combined."""
    edges: dict[str, list[Flow]] = defaultdict(list)
    languages = {}
    problems, warnings = [], []
    for flow in topo.sorted_flows():
        if flow.policy.value != IDENTITY:
            continue
        try:
            languages[flow.flow_name] = topics.language(_flow_filter(topo, flow))
        except topics.Undecided as exc:
            warnings.append(_undecided(topo.where(flow), "whether its topics can loop through identity flows", exc))
            continue
        edges[flow.source].append(flow)
    for component in _strongly_connected(edges):
        members = set(component)
        for start in component:
            found: list[tuple[list[Flow], object]] = []
            _walk(start, start, [], None, members, edges, languages, found)
            for cycle, language in found:
                if len(cycle) == 2 and cycle[0].partner == cycle[1].flow_name:
                    continue  # a declared bidirectional pair, filtered by its SMT chain
                names = " -> ".join(f.flow_name for f in cycle)
                route = " -> ".join([*(f.source for f in cycle), cycle[0].source])
                try:
                    topic = topics.example(language, [_flow_filter(topo, f) for f in cycle])
                except topics.Undecided as exc:
                    warnings.append(_undecided(topo.where(cycle[0]), f"identity cycle {route}", exc))
                    continue
                problems.append(Problem(
                    topo.where(cycle[0]), "replicationPolicy", IDENTITY,
                    f"no cycle of identity flows that replicate the same topics: {route} ({names}) would "
                    f"replicate topic {topic!r} forever. Declare a bidirectional pair (one flow with "
                    "`bidirectional: true`, which adds the loop filter) or use the default policy"))
    return problems, warnings


def _walk(start: str, node: str, path: list, language, members: set, edges: dict, languages: dict,
          found: list, limit: int = 20) -> None:
    """Simple cycles through `start` (its smallest cluster) along which a common topic remains."""
    for flow in edges.get(node, []):
        if len(found) >= limit:
            return
        nxt = flow.target
        if nxt != start and (nxt not in members or nxt < start or any(f.source == nxt for f in path)):
            continue
        narrowed = languages[flow.flow_name] if language is None else language & languages[flow.flow_name]
        if narrowed.empty():
            continue
        if nxt == start:
            found.append(([*path, flow], narrowed))
        else:
            _walk(start, nxt, [*path, flow], narrowed, members, edges, languages, found, limit)


def _strongly_connected(edges: dict[str, list[Flow]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative), components of more than one cluster only."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    nodes = sorted(set(edges) | {f.target for fs in edges.values() for f in fs})
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(edges.get(root, [])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for flow in it:
                nxt = flow.target
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(edges.get(nxt, []))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


# ------------------------------------------------------------------ names


def _uniqueness(topo: Topology) -> list[Problem]:
    """Per target Kafka cluster: Connect group ids, the three storage topics and connector
    names are unique (two Connect clusters sharing them would share their state); namespaces
    are unique in the Kubernetes cluster."""
    problems = []
    namespaces: dict[str, str] = {}
    per_target: dict[tuple[str, str, str], str] = {}
    for flow in topo.sorted_flows():
        where = topo.where(flow)
        for part in topo.parts(flow):
            n = FlowNames(flow.flow_name, flow.source, flow.target, part.name)
            if n.namespace in namespaces and namespaces[n.namespace] != where:
                problems.append(Problem(where, "name", n.namespace,
                                        f"a name whose namespace is not also used by {namespaces[n.namespace]}"))
            namespaces.setdefault(n.namespace, where)
            owned = [("Connect group id", n.group_id), ("offset storage topic", n.offset_storage_topic),
                     ("config storage topic", n.config_storage_topic), ("status storage topic", n.status_storage_topic),
                     *(("connector", n.source_connector(s.name)) for s in part.sources),
                     ("connector", n.checkpoint_connector), ("connector", n.heartbeat_connector)]
            for what, value in owned:
                key = (flow.target, what, value)
                if key in per_target and per_target[key] != where:
                    problems.append(Problem(where, "name", flow.flow_name,
                                            f"names that do not collide on cluster {flow.target}: {what} {value!r} "
                                            f"is also used by {per_target[key]}"))
                per_target.setdefault(key, where)
    return problems
