"""What follows from a topology document: the flows as deployed (a bidirectional declaration is
two), each one's Connect clusters and source connectors with the settings that apply to them,
and the Connect storage topics per Kafka cluster.

Pure and computed once (`resolve`); the result is immutable and holds no user input that was
not validated by infra/topology/schema/. The rules (infra/checks/rules/, infra/checks/guardrails.py) and the plan
read these views, never the raw declarations' defaults and overrides.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from infra.core.names import DEFAULT_FLOW_BASE, FlowNames, bidirectional_flow_name
from infra.filters.topics import DEFAULT_TOPICS_EXCLUDE
from infra.topology.schema import (Audit, Cluster, ConnectorState, ConnectPart, ConnectSettings, Converters, Flow,
                                   Operator, Policy, Predicate, ResourceQuota, SourceInstance, Topology, Transform)


@dataclass(frozen=True)
class SourceSpec:
    """A MirrorSourceConnector as planned: instance settings over the flow's."""
    name: str | None  # None: the flow's only source connector
    topics: tuple[str, ...]
    user_exclude: tuple[str, ...]     # the user's, which the guardrails reason about
    storage_exclude: tuple[str, ...]  # Connect storage topics on the target (identity flows)
    tasks: int
    config: dict[str, str | int | bool]
    transforms: tuple[Transform, ...]
    predicates: tuple[Predicate, ...]
    converters: Converters | None
    state: ConnectorState
    where: str  # the field path users wrote it under

    @property
    def topics_exclude(self) -> tuple[str, ...]:
        """The excludes as rendered into `topics.exclude`: the user's, then the storage topics."""
        return self.user_exclude + self.storage_exclude

    @property
    def kafka_topics_exclude(self) -> tuple[str, ...]:
        """The excludes the connector runs with. Setting `topics.exclude` replaces Kafka's
        default excludes, so they are rendered after ours; without it they apply alone."""
        return self.topics_exclude + DEFAULT_TOPICS_EXCLUDE


@dataclass(frozen=True)
class PartSpec:
    """A Connect cluster of a flow as planned."""
    name: str | None  # None: the flow is not split
    connect: ConnectSettings
    quota: ResourceQuota | None
    sources: tuple[SourceSpec, ...]
    heartbeat: bool  # the flow's heartbeat connector runs here
    where: str
    # The Kubernetes cluster it deploys to (a name under `kubernetes`); None without that section
    # (the ambient context) or where the topology does not say (a rule refuses that).
    kubernetes: str | None = None


@dataclass(frozen=True)
class Direction:
    """A flow as deployed: a declared flow, or one direction of a bidirectional declaration."""
    flow: Flow        # with this direction's own name, source and target
    declared: int     # the index of its declaration in `flows`
    partner: str | None  # the other direction's name, in a bidirectional pair
    parts: tuple[PartSpec, ...]  # its Connect clusters, sorted by name
    where: str        # how problems name it: its place in the file and its name

    @property
    def name(self) -> str:
        return self.flow.flow_name

    def names(self, part: PartSpec) -> FlowNames:
        return FlowNames(self.name, self.flow.source, self.flow.target, part.name)


@dataclass(frozen=True)
class Model:
    """A topology and its resolved views. `warnings` are valid but risky choices, filled in by
    the validation pipeline (infra/checks/validation.py) once every rule has passed."""
    topology: Topology
    flows: tuple[Direction, ...]  # every flow as deployed, sorted by name: output bytes do not
    # depend on the order of flows in the file
    storage: dict[str, tuple[str, ...]]  # Connect storage topics per target Kafka alias
    warnings: tuple[str, ...] = field(default=())

    @property
    def operator(self) -> Operator:
        return self.topology.operator

    @property
    def clusters(self) -> dict[str, Cluster]:
        return self.topology.clusters

    @property
    def audit(self) -> Audit | None:
        return self.topology.audit

    def storage_topics(self, alias: str) -> tuple[str, ...]:
        """The storage topics of every Connect cluster the topology runs against Kafka `alias`."""
        return self.storage.get(alias, ())


def resolve(topology: Topology) -> Model:
    directed = sorted(_directions(topology), key=lambda d: d[0].flow_name)
    found: dict[str, list[str]] = {}
    for flow, _, _ in directed:
        for part in (*flow.connectClusters,) if flow.connectClusters else (None,):
            n = FlowNames(flow.flow_name, flow.source, flow.target, part.name if part else None)
            found.setdefault(flow.target, []).extend(
                (n.offset_storage_topic, n.config_storage_topic, n.status_storage_topic))
    storage = {alias: tuple(sorted(ts)) for alias, ts in sorted(found.items())}
    flows = tuple(Direction(flow, index, partner, _parts(topology, flow, storage), _where(topology, flow, index))
                  for flow, index, partner in directed)
    return Model(topology, flows, storage)


def _directions(topology: Topology) -> list[tuple[Flow, int, str | None]]:
    """(flow, declaration index, partner) of every flow as deployed, in declaration order."""
    out: list[tuple[Flow, int, str | None]] = []
    for index, flow in enumerate(topology.flows):
        if flow.bidirectional:
            base = flow.name or DEFAULT_FLOW_BASE
            there = bidirectional_flow_name(base, flow.source, flow.target)
            back = bidirectional_flow_name(base, flow.target, flow.source)
            # One declaration, two directions: every setting is shared, so the pair is symmetric
            # by construction (plan.check_symmetry proves it on the output).
            out.append((flow.model_copy(update={"name": there}), index, back))
            out.append((flow.model_copy(update={"name": back, "source": flow.target, "target": flow.source}),
                        index, there))
        else:
            out.append((flow, index, None))
    return out


def _where(topology: Topology, flow: Flow, index: int) -> str:
    declared = topology.flows[index]
    shown = flow.flow_name if declared.flow_name == flow.flow_name else f"{declared.flow_name}: {flow.flow_name}"
    return f"flows[{index}] ({shown})"


def kubernetes_of(topology: Topology, flow: Flow, part: ConnectPart | None) -> str | None:
    """Where a Connect cluster deploys: its own choice, else its flow's, else beside its TARGET
    Kafka (the documents' rule: a flow's Connect cluster depends on the target)."""
    if topology.kubernetes is None:
        return None
    target = topology.clusters.get(flow.target)
    return (part.kubernetes if part else None) or flow.kubernetes or (
        target.kubernetes if target else None)


def connect_settings(topology: Topology, flow: Flow, part: ConnectPart | None = None) -> ConnectSettings:
    """Connect settings: operator defaults < flow < Connect cluster part (explicit values win)."""
    merged = topology.operator.connect.model_dump(exclude_unset=True)
    merged.update(flow.connect.model_dump(exclude_unset=True))
    if part is not None:
        merged.update(part.connect.model_dump(exclude_unset=True))
    return ConnectSettings.model_validate(merged)


def _source_spec(flow: Flow, instance: SourceInstance | None, topics: list[str], exclude: list[str], where: str,
                 storage: tuple[str, ...]) -> SourceSpec:
    """A source connector's settings: the instance's where it sets them, the flow's otherwise."""
    i = instance
    return SourceSpec(
        name=i.name if i else None,
        topics=tuple(topics), user_exclude=tuple(exclude),
        storage_exclude=tuple(t for t in storage if t not in exclude),
        tasks=i.tasksMax if i and i.tasksMax is not None else flow.tasksMax.source,
        config={**flow.config.source, **(i.config if i else {})},
        transforms=tuple(i.transforms if i and i.transforms is not None else flow.transforms),
        predicates=tuple(i.predicates if i and i.predicates is not None else flow.predicates),
        converters=i.converters if i and i.converters is not None else flow.converters,
        state=i.state if i and i.state is not None else flow.state.source,
        where=where)


def _parts(topology: Topology, flow: Flow, storage_by_alias: dict[str, tuple[str, ...]]) -> tuple[PartSpec, ...]:
    """The flow's Connect clusters and their source connectors, sorted by name (stable whatever
    the order in the file). The flow's one heartbeat connector runs in the first: a second
    emitter for the same alias pair would only double the heartbeats."""
    # An identity flow writes a source topic under its own name: one named like a Connect
    # storage topic on the target would be written into that Connect cluster's state. Those
    # names (literal, dotless, never prefixed) are excluded; Kafka's default excludes already
    # drop MirrorMaker 2's own `.internal` topics.
    storage = storage_by_alias.get(flow.target, ()) if flow.policy is Policy.identity else ()
    specs = []
    if flow.connectClusters:
        for i, part in sorted(enumerate(flow.connectClusters), key=lambda p: p[1].name):
            where = f"connectClusters[{i}]"
            if part.sources:
                sources = [_source_spec(flow, s, s.topics, s.topicsExclude, f"{where}.sources[{j}]", storage)
                           for j, s in enumerate(part.sources)]
            else:
                sources = [_source_spec(flow, None, part.topics or [], part.topicsExclude, where, storage)]
            specs.append(PartSpec(part.name, connect_settings(topology, flow, part),
                                  part.resourceQuota or flow.resourceQuota,
                                  tuple(sorted(sources, key=lambda s: s.name or "")), False, where,
                                  kubernetes_of(topology, flow, part)))
    else:
        if flow.sources:
            sources = [_source_spec(flow, s, s.topics, s.topicsExclude, f"sources[{j}]", storage)
                       for j, s in enumerate(flow.sources)]
        else:
            sources = [_source_spec(flow, None, flow.topics or [], flow.topicsExclude, "topics", storage)]
        specs.append(PartSpec(None, connect_settings(topology, flow), flow.resourceQuota,
                              tuple(sorted(sources, key=lambda s: s.name or "")), False, "(flow)",
                              kubernetes_of(topology, flow, None)))
    if flow.heartbeats:
        specs[0] = replace(specs[0], heartbeat=True)
    return tuple(specs)
