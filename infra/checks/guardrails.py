"""Rules across flows: unsafe topologies are refused before anything is deployed.

Each rule compares only what can interact (flows of one source or target cluster, connectors of
one flow, cycles within one strongly connected component), so the cost grows with the flows
that share a cluster, not with the square of all flows. docs/guardrails.md lists every rule,
why it exists and the message it prints.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations

from infra.core.errors import Problem, in_file_order
from infra.core.names import broker_address, topic_prefix
from infra.filters import topics
from infra.topology.resolution import Direction, Model
from infra.topology.schema import Policy


def check(model: Model) -> tuple[list[Problem], list[str]]:
    """Problems that refuse the topology, and warnings (undecided checks a flow acknowledged,
    filters that replicate nothing, topics identity flows rename)."""
    problems = _bootstrap_aliases(model) + _uniqueness(model)
    ctx = _Context(model)
    for rule in (_policy_chains, _overlaps_within_flows, _target_collisions, _loops):
        problems += rule(ctx)
    _heartbeat_lookalikes(ctx)
    _filters_that_match_nothing(ctx)
    return in_file_order(problems + list(ctx.undecided.values())), sorted(set(ctx.warnings))


class _Context:
    """The topology, one budget for every automaton question about it, and what was undecided."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.allowance = topics.Allowance()
        self.paths = 0  # identity paths the loop rule has followed (bounded by MAX_PATHS)
        # One undecided question may be met by several rules and cycle walks: kept once per
        # flow and question (and a spent budget once per flow).
        self.undecided: dict[tuple[str, str], Problem] = {}
        self.warnings: list[str] = []
        self.last_undecided = False  # whether the last question was undecided (said once, not per rule)
        self._topics: dict[tuple[str, bool], topics.Topics] = {}

    def flow_topics(self, flow: Direction, prefixed: bool = False) -> topics.Topics:
        """A flow's topics (as named in the target when `prefixed`), built once per validation."""
        key = (flow.name, prefixed)
        if key not in self._topics:
            self._topics[key] = _prefixed(flow) if prefixed else _flow_topics(flow)
        return self._topics[key]

    def common(self, flow: Direction, what: str, *languages: topics.Filter | topics.Topics) -> str | None:
        """A topic every language accepts; None when there is none, or when the question is
        undecided (then the topology is refused unless `flow` acknowledges undecided checks)."""
        self.last_undecided = False
        try:
            return topics.common_topic(*languages, allowance=self.allowance)
        except topics.Undecided as exc:
            self.last_undecided = True
            if self.allowance.left <= 0:
                # Spent: every later question is undecided; said once per flow, not per pair.
                what = "topic checks"
            self.undecided_rule(flow, what, str(exc), sorted({p for lang in languages for p in lang.include}))
            return None

    def unified(self, flow: Direction, what: str, a: topics.Topics, b: topics.Topics) -> tuple[str, str] | None:
        """Two different names, of `a` and of `b`, that Kafka takes for one topic; None as for
        `common`."""
        try:
            return topics.unified_pair(a, b, allowance=self.allowance)
        except topics.Undecided as exc:
            if self.allowance.left <= 0:
                what = "topic checks"
            self.undecided_rule(flow, what, str(exc), sorted({p for lang in (a, b) for p in lang.include}))
            return None

    def undecided_rule(self, flow: Direction, what: str, why: str, filters: list[str] | None = None) -> None:
        """A rule that could not decide: refused, unless the flow acknowledges undecided checks."""
        where = flow.where
        if flow.flow.acknowledgeUndecidedFilters:
            self.warnings.append(f"{where}: {what} was not checked ({why}; acknowledged by "
                                 "acknowledgeUndecidedFilters): check it by hand")
        else:
            self.undecided.setdefault((where, what), Problem(
                where, "topics", _shown(filters if filters is not None else self.flow_topics(flow).include),
                f"filters whose {what} can be decided: it needs {why}. Simplify the filters (literal "
                "names or prefixes such as `orders\\..*` rather than nested repetitions such as "
                "`(a|b)*a(a|b){15}`), or set `acknowledgeUndecidedFilters: true` on this flow to deploy "
                "without this check"))


class _Shown(str):
    """A value as a message shows it (its own text, not a repr)."""

    def __repr__(self) -> str:
        return str(self)


def _shown(patterns: list[str] | tuple[str, ...]) -> object:
    """Filters as a message quotes them: allow-lists of thousands of names are cut to their first
    names and their count, so that a message stays readable."""
    items = list(patterns)
    if len(repr(items)) <= 300:
        return items
    cut = [p if len(p) <= 80 else p[:80] + f"...({len(p)} characters)" for p in items[:3]]
    more = f", ... {len(items)} filters in all" if len(items) > 3 else ""
    return _Shown(repr(cut)[:-1] + more + "]")


def _filters(flow: Direction) -> list[tuple[str, topics.Filter]]:
    """Each source connector's filter, with the field path users wrote it under. The Connect
    storage topics identity flows exclude are left out: there may be thousands, and without
    them a filter only grows, so a rule can only refuse more, never less."""
    return [(f"{part.where}/{spec.where}" if part.name and spec.where != part.where else spec.where,
             topics.Filter(spec.topics, spec.user_exclude))
            for part in flow.parts for spec in part.sources]


def _flow_topics(flow: Direction) -> topics.Topics:
    """Everything a flow replicates: the union of what each source connector keeps."""
    return topics.Topics(tuple(f for _, f in _filters(flow)))


def _prefixed(flow: Direction) -> topics.Topics:
    """The flow's topics as named in the target cluster."""
    return _flow_topics(flow).with_prefix(topic_prefix(flow.flow.source, flow.flow.policy is not Policy.identity))


# ------------------------------------------------------------------ clusters


def _bootstrap_aliases(model: Model) -> list[Problem]:
    """One alias per Kafka cluster: two aliases for the same brokers break replication policies
    (topics get the wrong prefix) and loop detection."""
    owner: dict[tuple[str, int], str] = {}
    problems = []
    for alias in sorted(model.clusters):
        for server in model.clusters[alias].bootstrapServers.split(","):
            key = broker_address(server)
            if key in owner and owner[key] != alias:
                problems.append(Problem(f"clusters.{alias}", "bootstrapServers", server,
                                        f"servers of this cluster only: {server} is also a bootstrap server of "
                                        f"cluster {owner[key]}; one Kafka cluster must have exactly one alias"))
            owner.setdefault(key, alias)
    return problems


# ------------------------------------------------------------------ policies


def _policy_chains(ctx: _Context) -> list[Problem]:
    """Flows that chain (A->B, B->C) use the same replication policy when the second can read
    what the first writes: a replicated topic read back under another policy loses (identity
    after default: `a.t` is taken for a local topic) or never had (default after identity) the
    provenance that remote-topic detection, checkpoints and loop detection rely on."""
    model = ctx.model
    by_source: dict[str, list[Direction]] = defaultdict(list)
    for flow in model.flows:
        by_source[flow.flow.source].append(flow)
    problems = []
    for flow in model.flows:
        for after in by_source.get(flow.flow.target, []):
            if after.flow.policy is flow.flow.policy or after.name == flow.partner:
                continue
            topic = ctx.common(after, f"policy chain after flow {flow.name}",
                               ctx.flow_topics(flow, prefixed=True), ctx.flow_topics(after))
            if topic is not None:
                problems.append(Problem(after.where, "replicationPolicy", after.flow.policy.value,
                                        f"{flow.flow.policy.value}, the policy of flow {flow.name}, which writes "
                                        f"topic {topic!r} into {flow.flow.target} where this flow reads it: flows "
                                        "that chain must use one policy (or filters that keep them apart)"))
    return problems


# ------------------------------------------------------------------ topics


def _overlaps_within_flows(ctx: _Context) -> list[Problem]:
    """A topic is replicated by one MirrorSourceConnector only (the documents): the sources of a
    flow, across its Connect clusters, must be disjoint."""
    model = ctx.model
    problems = []
    for flow in model.flows:
        for (wa, a), (wb, b) in combinations(_filters(flow), 2):
            topic = ctx.common(flow, f"overlap of {wa} and {wb}", a, b)
            if topic is not None:
                problems.append(Problem(flow.where, wb, _shown(b.include),
                                        f"a topic filter disjoint from {wa} ({_shown(a.include)}): both match "
                                        f"topic {topic!r}, which would be replicated twice"))
    return problems


def _target_collisions(ctx: _Context) -> list[Problem]:
    """Two flows must not write the same target topic, unless both are declared `aggregation`
    (identity fan-in from different sources, which the documents allow; rules.check refuses
    `aggregation` anywhere else)."""
    model = ctx.model
    problems = []
    by_target: dict[str, list[Direction]] = defaultdict(list)
    for flow in model.flows:
        by_target[flow.flow.target].append(flow)
    for target, flows in sorted(by_target.items()):
        collided: set[str] = set()
        for a, b in combinations(flows, 2):
            if b.name in collided:
                continue  # one collision per flow says what to fix; every pair would be quadratic
            prefixed = [f.flow.policy is not Policy.identity for f in (a, b)]
            if all(prefixed) and a.flow.source != b.flow.source:
                continue  # `<alias>.` prefixes of two aliases never collide: aliases have no dots or '_'
            if a.flow.aggregation and b.flow.aggregation and a.flow.source != b.flow.source:
                # A declared fan-in shares its topics by intent, whatever their names in each source.
                continue
            fa, fb = ctx.flow_topics(a, prefixed=True), ctx.flow_topics(b, prefixed=True)
            topic = ctx.common(b, f"target topics shared with flow {a.name}", fa, fb)
            if topic is not None:
                collided.add(b.name)
                problems.append(Problem(b.where, "topics", _shown(fb.include),
                                        f"target topics of its own: flow {a.name} also writes {topic!r} "
                                        f"into cluster {target}. Narrow the filters, or declare both flows "
                                        "`aggregation: true` (identity fan-in) if merging is intended"))
                continue
            if ctx.last_undecided or (a.flow.source == b.flow.source and prefixed[0] == prefixed[1]):
                # Said once for the pair; or names of one source cluster, where Kafka already keeps
                # them from colliding.
                continue
            pair = ctx.unified(b, f"target topics colliding with those of flow {a.name}", fa, fb)
            if pair is not None:
                collided.add(b.name)
                theirs, mine = pair
                problems.append(Problem(b.where, "topics", _shown(fb.include),
                                        f"target topic names that do not collide in Kafka: flow {a.name} writes "
                                        f"{theirs!r} and this flow {mine!r} into cluster {target}, and Kafka takes "
                                        "names that differ only by '.' and '_' for one topic (Topic.hasCollision): "
                                        "the second is never created. Narrow the filters or rename the topics"))
    return problems


def _filters_that_match_nothing(ctx: _Context) -> None:
    """A source connector whose filter keeps no legal topic name replicates nothing: a topic
    name is 1-249 characters of [a-zA-Z0-9._-], never "." or ".." (Kafka's Topic.validate), so a
    filter such as `orders/eu` is a typo, and one whose excludes cover all it includes is one too."""
    for flow in ctx.model.flows:
        for where, spec in _filters(flow):
            field = "topics" if where == "topics" else f"{where}.topics"
            if spec.witness() is not None:
                continue  # a topic it keeps, found on the way: nothing to say
            try:
                if not spec.included(ctx.allowance).nonempty(ctx.allowance):
                    ctx.warnings.append(
                        f"{flow.where}: {field} {_shown(spec.include)!r} can match no legal Kafka topic name (topic "
                        "names are 1-249 characters of letters, digits, '.', '_' and '-')")
                elif not spec.language(ctx.allowance).nonempty(ctx.allowance):
                    ctx.warnings.append(
                        f"{flow.where}: {field} {_shown(spec.include)!r} match no topic that is not excluded (by "
                        f"topicsExclude {_shown(spec.exclude)!r} or Kafka's default excludes "
                        f"{list(topics.DEFAULT_TOPICS_EXCLUDE)!r}): this source connector replicates nothing")
            except topics.Undecided:
                continue  # the rules that need these automata say so, with the filters


# A topic that ends in `heartbeats` without being a heartbeats topic (`heartbeats`, or a remote
# one such as `a.heartbeats`): IdentityReplicationPolicy.looksLikeHeartbeat tests the suffix only.
HEARTBEAT_LOOKALIKE = topics.Filter((r".*[^.]heartbeats",))


def _heartbeat_lookalikes(ctx: _Context) -> None:
    """Identity flows keep topic names, except for names ending in `heartbeats`, which Kafka's
    IdentityReplicationPolicy.formatRemoteTopic prefixes like the default policy (Kafka 3.8.0
    and later): `device-heartbeats` lands in the target as `<source>.device-heartbeats`."""
    model = ctx.model
    for flow in model.flows:
        if flow.flow.policy is not Policy.identity:
            continue
        try:
            topic = topics.common_topic(ctx.flow_topics(flow), HEARTBEAT_LOOKALIKE, allowance=ctx.allowance)
        except topics.Undecided as exc:
            ctx.warnings.append(f"{flow.where}: whether this identity flow replicates topics ending in "
                                f"'heartbeats' was not checked ({exc})")
            continue
        if topic is not None:
            ctx.warnings.append(
                f"{flow.where}: topics such as {topic!r} match this identity flow and end in 'heartbeats': "
                f"IdentityReplicationPolicy takes them for heartbeat topics and writes them to {flow.flow.target} as "
                f"'{flow.flow.source}.{topic}', not under their own name. Exclude them (topicsExclude: "
                "'.*heartbeats'; MirrorMaker 2 replicates its own heartbeats topics whatever the filter) or "
                "rename them")


# ------------------------------------------------------------------ loops


def _loops(ctx: _Context) -> list[Problem]:
    """IdentityReplicationPolicy keeps topic names, so it cannot tell a replicated topic from a
    local one: topics that go round a cycle of identity flows are replicated forever. Refused,
    except for a declared bidirectional pair, whose loop filter drops records coming back.

    Cycles are searched within strongly connected components of the identity flows only, and a
    path is followed only while some topic is accepted by every flow on it, so flows whose
    filters are disjoint are never combined."""
    model = ctx.model
    edges: dict[str, list[Direction]] = defaultdict(list)
    for flow in model.flows:
        if flow.flow.policy is Policy.identity:
            edges[flow.flow.source].append(flow)
    problems = []
    for component in _strongly_connected(edges):
        members = set(component)
        for start in component:
            found: list[tuple[list[Direction], str]] = []
            try:
                _walk(ctx, start, start, [], members, edges, found)
            except _TooManyPaths:
                flow = next(f for f in model.flows if f.flow.source == start and f.flow.policy is Policy.identity)
                ctx.undecided_rule(flow, f"replication loops among clusters {', '.join(component)}",
                                   f"more than {MAX_PATHS} identity paths to follow")
                break
            for cycle, topic in found:
                if len(cycle) == 2 and cycle[0].partner == cycle[1].name:
                    continue  # a declared bidirectional pair, filtered by its SMT chain
                names = " -> ".join(f.name for f in cycle)
                route = " -> ".join([*(f.flow.source for f in cycle), cycle[0].flow.source])
                # Two opposite identity flows are also how a failback under the identity policy is
                # first written: the documents' answer is to remove the flow, then reverse it.
                failback = ("; to fail back under the identity policy, keep one direction: remove the flow you "
                            "failed over with, then deploy its reverse (docs/operations.md)" if len(cycle) == 2 else "")
                problems.append(Problem(
                    cycle[0].where, "replicationPolicy", Policy.identity.value,
                    f"no cycle of identity flows that replicate the same topics: {route} ({names}) would "
                    f"replicate topic {topic!r} forever. Declare a bidirectional pair (one flow with "
                    f"`bidirectional: true`, which adds the loop filter) or use the default policy{failback}"))
    return problems


MAX_PATHS = 5_000  # identity paths followed per topology: the loop rule's own budget


class _TooManyPaths(Exception):
    pass


def _walk(ctx: _Context, start: str, node: str, path: list[Direction], members: set[str],
          edges: dict[str, list[Direction]], found: list[tuple[list[Direction], str]],
          limit: int = 20) -> None:
    """Simple cycles through `start` (its smallest cluster) along which a common topic remains."""
    for flow in edges.get(node, []):
        if len(found) >= limit:
            return
        ctx.paths += 1
        if ctx.paths > MAX_PATHS:
            raise _TooManyPaths
        nxt = flow.flow.target
        if nxt != start and (nxt not in members or nxt < start or any(f.flow.source == nxt for f in path)):
            continue
        on_path = [*path, flow]
        topic = ""
        if len(on_path) > 1:  # one flow alone replicates something; paths are what can be empty
            route = " -> ".join([*(f.flow.source for f in on_path), nxt])
            common = ctx.common(on_path[0], f"identity path {route} (a possible replication loop)",
                                *(ctx.flow_topics(f) for f in on_path))
            if common is None:
                continue
            topic = common
        if nxt == start:
            found.append((on_path, topic))
        else:
            _walk(ctx, start, nxt, on_path, members, edges, found, limit)


def _strongly_connected(edges: dict[str, list[Direction]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative), components of more than one cluster only."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    nodes = sorted(set(edges) | {f.flow.target for fs in edges.values() for f in fs})
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
                nxt = flow.flow.target
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


def _uniqueness(model: Model) -> list[Problem]:
    """Per target Kafka cluster: Connect group ids, the three storage topics and connector
    names are unique (two Connect clusters sharing them would share their state); namespaces
    are unique in the Kubernetes cluster."""
    problems = []
    namespaces: dict[str, str] = {}
    per_target: dict[tuple[str, str, str], str] = {}
    for flow in model.flows:
        where = flow.where
        for part in flow.parts:
            n = flow.names(part)
            if n.namespace in namespaces and namespaces[n.namespace] != where:
                problems.append(Problem(where, "name", n.namespace,
                                        f"a name whose namespace is not also used by {namespaces[n.namespace]}"))
            namespaces.setdefault(n.namespace, where)
            owned = [("Connect group id", n.group_id), ("offset storage topic", n.offset_storage_topic),
                     ("config storage topic", n.config_storage_topic), ("status storage topic", n.status_storage_topic),
                     *(("connector", n.source_connector(s.name)) for s in part.sources),
                     ("connector", n.checkpoint_connector), ("connector", n.heartbeat_connector)]
            for what, value in owned:
                key = (flow.flow.target, what, value)
                if key in per_target and per_target[key] != where:
                    problems.append(Problem(where, "name", flow.name,
                                            f"names that do not collide on cluster {flow.flow.target}: {what} {value!r} "
                                            f"is also used by {per_target[key]}"))
                per_target.setdefault(key, where)
    return problems
