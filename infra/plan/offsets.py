"""Offsets as code: a one-shot list, alter or reset of a KafkaConnector's offsets, run by the
operator (Strimzi 0.44 and newer; CSM 1.4 ships 0.45).

What the operator reads (AbstractConnectOperator.manageConnectorOffsets and
KafkaConnectAssemblyOperator, tags 0.45.0, 0.48.0, 1.2.0):

- the annotation `strimzi.io/connector-offsets: list|alter|reset` on the KafkaConnector, which it
  removes once the operation succeeded (removeConnectorOffsetsAnnotations, a JSON patch) and
  keeps, with a warning condition, to try again at the next reconciliation when it failed;
- for `list`, `spec.listOffsets.toConfigMap.name`: it GETs /connectors/<name>/offsets and writes
  the answer, pretty-printed, under `offsets.json` of that ConfigMap, which it creates and owns;
- for `alter`, `spec.alterOffsets.fromConfigMap.name`: it PATCHes /connectors/<name>/offsets with
  the ConfigMap's `offsets.json` as it stands (the Connect REST API's KIP-875 body);
- for `alter` and `reset` (DELETE /connectors/<name>/offsets), the connector STOPPED first
  (verifyConnectorStopped), or nothing is done.

The offsets of MirrorMaker 2's connectors, as Kafka validates them (MirrorSourceConnector,
MirrorCheckpointConnector and MirrorHeartbeatConnector `alterOffsets`, MirrorUtils, Kafka 3.8.0
and the 3.9.0/4.1.0/4.3.1 jars of the releases):

- MirrorSourceConnector: partition {cluster: <source alias>, topic, partition}, offset
  {offset: <a non-negative integer>}: the last source offset replicated; its task resumes at the
  next one (MirrorSourceTask.initializeConsumer seeks to offset + 1);
- MirrorCheckpointConnector: partition {group, topic, partition}, offset {offset: 0} only; its
  `topic` is the topic as the TARGET cluster names it, not the source topic its filter reads
  (MirrorCheckpointTask.checkpoint builds `new Checkpoint(group, renameTopicPartition(tp), ...)`
  and checkpointRecord writes Checkpoint.connectPartition(), Kafka 3.8.0 and 3.9.0-rc3 tags):
  `us-west.orders` for `orders` of us-west under the default policy, `orders` under the identity
  policy, and `x` for `us-east.x`, a topic that came from the target us-east;
- MirrorHeartbeatConnector: partition {sourceClusterAlias, targetClusterAlias}, offset 0 only;
- a null offset deletes the partition's offset, for every connector.

Pure: the rules (`problems`), the spec fields, the alter ConfigMap and the annotation's patch.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any, Mapping

from infra.core import names
from infra.core.errors import Problem
from infra.core.manifests import JSON, ConfigMap, meta
from infra.core.names import CONNECTOR_OFFSETS_ANNOTATION, FlowNames
from infra.core.releases import find
from infra.filters import jregex
from infra.filters.topics import Filter
from infra.topology.resolution import Model
from infra.topology.schema import ConnectorState, Flow, OffsetsAction, OffsetsRequest, PartitionOffset, Policy
from infra.topology.schema.values import INT64

# pulumi-kubernetes: a Patch resource with this annotation takes a field another field manager
# holds (a previous request's patch the operator has not acted on yet) instead of failing.
PATCH_FORCE = "pulumi.com/patchForce"

SOURCE, CHECKPOINT, HEARTBEAT = "source", "checkpoint", "heartbeat"
WHERE_STOPPED = ("the operator alters and resets the offsets of a STOPPED connector only "
                 "(AbstractConnectOperator.verifyConnectorStopped, Strimzi 0.45.0 to 1.2.0)")


@dataclass(frozen=True)
class Target:
    """A KafkaConnector of a flow, as an offsets request may name it."""
    name: str
    kind: str                    # source, checkpoint or heartbeat
    state: ConnectorState
    state_field: str             # where the topology sets its state
    filters: tuple[Filter, ...]  # the topic filters of the topics it replicates or checkpoints
    source: str                  # the direction's cluster aliases and policy: how a checkpoint
    target: str                  # names its topic
    policy: Policy
    returning: bool = False      # a flow of the topology replicates `target` back to `source`


def targets(model: Model) -> dict[int, dict[str, Target]]:
    """Every KafkaConnector per declared flow (both directions of a bidirectional one), by name."""
    found: dict[int, dict[str, Target]] = {}
    pairs = {(d.flow.source, d.flow.target) for d in model.flows}
    for d in model.flows:
        aliases = (d.flow.source, d.flow.target, d.flow.policy)
        mine = found.setdefault(d.declared, {})
        for part in d.parts:
            n = d.names(part)
            sources = [Filter(s.topics, s.topics_exclude) for s in part.sources]
            for spec, topic_filter in zip(part.sources, sources):
                field = "state.source" if spec.name is None else f"{spec.where}.state"
                mine[n.source_connector(spec.name)] = Target(n.source_connector(spec.name), SOURCE, spec.state,
                                                             field, (topic_filter,), *aliases)
            if d.flow.with_checkpoints:
                mine[n.checkpoint_connector] = Target(n.checkpoint_connector, CHECKPOINT, d.flow.state.checkpoint,
                                                      "state.checkpoint", tuple(sources), *aliases,
                                                      (d.flow.target, d.flow.source) in pairs)
            if part.heartbeat:
                mine[n.heartbeat_connector] = Target(n.heartbeat_connector, HEARTBEAT, d.flow.state.heartbeat,
                                                     "state.heartbeat", (), *aliases)
    return found


def _replicates(target: Target, topic: str) -> bool | None:
    """Whether the connector reads source topic `topic` (None: its filter cannot be read here,
    and the guardrails say why). MirrorSourceConnector copies heartbeats topics whatever its
    filter (MirrorSourceConnector.shouldReplicateTopic); MirrorCheckpointTask.shouldCheckpointTopic
    asks the filter alone (Kafka 3.8.0)."""
    heartbeats = topic == names.HEARTBEATS_TOPIC or topic.endswith("." + names.HEARTBEATS_TOPIC)
    if target.kind == SOURCE and heartbeats:
        return True
    try:
        return any(f.matches(topic) for f in target.filters)
    except (jregex.RegexError, jregex.Unsupported):
        return None


# ----------------------------------------------------------------- a checkpoint's topic name
# How MirrorCheckpointTask.renameTopicPartition names a source topic in its checkpoints, through
# the flow's replication policy (DefaultReplicationPolicy, IdentityReplicationPolicy and
# ReplicationPolicy.originalTopic, connect/mirror-client, Kafka 3.8.0 and 3.9.0-rc3 tags).


def _looks_like_heartbeat(policy: Policy, topic: str) -> bool:
    # IdentityReplicationPolicy.looksLikeHeartbeat: the suffix alone; it defers to the default
    # policy for such names. The default policy treats every name alike.
    return policy is Policy.default or topic.endswith(names.HEARTBEATS_TOPIC)


def _topic_source(policy: Policy, source: str, topic: str) -> str | None:
    """ReplicationPolicy.topicSource: the alias before the first separator (Java's split drops
    trailing empty parts); IdentityReplicationPolicy answers its source alias for other names."""
    if not _looks_like_heartbeat(policy, topic):
        return source
    parts = topic.split(".")
    while parts and parts[-1] == "":
        parts.pop()
    return parts[0] if len(parts) >= 2 else None


def _original_topic(policy: Policy, source: str, topic: str) -> str:
    """ReplicationPolicy.originalTopic: upstreamTopic applied until the name stops changing
    (every `<alias>.` the default policy sees goes: `us-east.orders.eu` gives `eu`)."""
    while True:
        alias = _topic_source(policy, source, topic)
        if alias is None or not _looks_like_heartbeat(policy, topic):
            return topic
        upstream = topic[len(names.topic_prefix(alias)):]
        if upstream == topic:
            return topic
        topic = upstream


def checkpoint_topic(target: Target, topic: str) -> str:
    """The `topic` of a checkpoint of source topic `topic` (MirrorCheckpointTask.renameTopicPartition):
    a topic that came from the target goes back to its original name; any other is named as
    the policy replicates it (names.replicated_topic; identity keeps it, bar heartbeats names)."""
    if _topic_source(target.policy, target.source, topic) == target.target:
        return _original_topic(target.policy, target.source, topic)
    return names.replicated_topic(target.source, topic, _looks_like_heartbeat(target.policy, topic))


def checkpointed_topic(target: Target, topic: str) -> str | None:
    """The source topic a checkpoint's `topic` (as the target names it) stands for, the first
    of these that checkpoint_topic names so: the name without the source's prefix, the name
    itself (identity), a topic that came from the target (`<target>.<topic>`, one hop).
    None: no source topic is checkpointed under that name."""
    candidates = [topic, names.replicated_topic(target.target, topic)]
    prefix = names.topic_prefix(target.source)
    if topic.startswith(prefix):
        candidates.insert(0, topic[len(prefix):])
    return next((c for c in candidates if checkpoint_topic(target, c) == topic), None)


def problems(model: Model) -> list[Problem]:
    """Every offsets request the operator would not carry out, or Kafka would refuse."""
    topo = model.topology
    release = find(topo.operator.flavour, topo.operator.version)
    if release is None:  # the operator rule refuses the version
        return []
    found: list[Problem] = []
    by_flow = targets(model)
    for index, flow in enumerate(topo.flows):
        where = f"flows[{index}] ({flow.flow_name})"
        if not release.offset_management:
            found += [Problem(where, f"offsets[{j}].action", r.action.value,
                              f"no offsets request on {release.name} (Strimzi {release.strimzi}): KafkaConnector "
                              "spec.listOffsets, spec.alterOffsets and the strimzi.io/connector-offsets annotation "
                              "exist from Strimzi 0.44 (CSM 1.4); use the Connect REST API (GET, PATCH or DELETE "
                              "/connectors/<name>/offsets) with the connector stopped, or a newer operator")
                      for j, r in enumerate(flow.offsets)]
            continue
        known = by_flow.get(index, {})
        first: dict[str, int] = {}
        for j, request in enumerate(flow.offsets):
            found += _request_problems(where, f"offsets[{j}]", request, known, first.get(request.connector))
            first.setdefault(request.connector, j)
    return found


def _request_problems(where: str, at: str, request: OffsetsRequest, known: dict[str, Target],
                      earlier: int | None) -> list[Problem]:
    found: list[Problem] = []
    target = known.get(request.connector)
    if target is None:
        close = difflib.get_close_matches(request.connector, list(known), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return [Problem(where, f"{at}.connector", request.connector,
                        f"a KafkaConnector of this flow: {', '.join(sorted(known)) or 'none'}{hint}")]
    if earlier is not None:
        found.append(Problem(where, f"{at}.connector", request.connector,
                             f"one request per connector: offsets[{earlier}] already names it (the operator reads "
                             "one strimzi.io/connector-offsets annotation per KafkaConnector)"))
    action = request.action
    if action is OffsetsAction.alter and target.kind == HEARTBEAT:
        found.append(Problem(where, f"{at}.action", action.value,
                             "list or reset: MirrorHeartbeatConnector's partitions are {sourceClusterAlias, "
                             "targetClusterAlias} and it accepts offset 0 only (MirrorHeartbeatConnector."
                             "alterOffsets), which `offsets[]` (topic, partition) cannot express"))
        return found
    if action is not OffsetsAction.list and target.state is not ConnectorState.stopped:
        found.append(Problem(where, f"{at}.action", action.value,
                             f"list, or {request.connector} stopped first: it is {target.state.value} "
                             f"(set {target.state_field}: stopped in the same change; once the operator has "
                             f"carried the request out, run it again by removing the request in the change that "
                             f"sets it running); {WHERE_STOPPED}"))
    if action is OffsetsAction.alter and not request.offsets:
        found.append(Problem(where, f"{at}.offsets", [], "at least one partition offset to set for alter"))
    if action is not OffsetsAction.alter and request.offsets:
        found.append(Problem(where, f"{at}.offsets", f"{len(request.offsets)} partition offset(s)",
                             f"none for {action.value}: only alter sets offsets"))
        return found
    if action is OffsetsAction.alter and request.offsets:
        size = len(names.OFFSETS_KEY.encode()) + len(alter_text(target.kind, target.source, request.offsets).encode())
        if size > names.CONFIGMAP_MAX_BYTES:
            found.append(Problem(where, f"{at}.offsets", f"{len(request.offsets)} partition offsets ({size} bytes)",
                                 f"at most {names.CONFIGMAP_MAX_BYTES} bytes in the alter ConfigMap (Kubernetes' "
                                 "limit): split the request over several changes, one after the other"))
    seen: dict[tuple[str, int, str | None], int] = {}
    for k, offset in enumerate(request.offsets):
        found += _offset_problems(where, f"{at}.offsets[{k}]", target, offset)
        key = (offset.topic, offset.partition, offset.group)
        if key in seen:
            found.append(Problem(where, f"{at}.offsets[{k}]", f"{offset.topic}:{offset.partition}"
                                 + (f" of group {offset.group}" if offset.group is not None else ""),
                                 f"each partition once: offsets[{seen[key]}] sets it already"))
        seen.setdefault(key, k)
    return found


def _offset_problems(where: str, at: str, target: Target, offset: PartitionOffset) -> list[Problem]:
    found: list[Problem] = []
    if target.kind == SOURCE and offset.offset == INT64:
        found.append(Problem(where, f"{at}.offset", offset.offset,
                             f"at most {INT64 - 1}: the task resumes at offset + 1 (MirrorSourceTask."
                             "loadOffset), which overflows Java's long and falls back to auto.offset.reset"))
    if target.kind == SOURCE and offset.group is not None:
        found.append(Problem(where, f"{at}.group", offset.group,
                             "no group on a source connector's offset: MirrorSourceConnector's partitions are "
                             "{cluster, topic, partition} (MirrorSourceConnector.alterOffsets)"))
    if target.kind == CHECKPOINT:
        if offset.group is None:
            found.append(Problem(where, f"{at}.group", None,
                                 "a consumer group: MirrorCheckpointConnector's partitions are {group, topic, "
                                 "partition} (MirrorCheckpointConnector.alterOffsets)"))
        if offset.offset not in (0, None):
            found.append(Problem(where, f"{at}.offset", offset.offset,
                                 "0 or null: MirrorCheckpointConnector accepts offset 0 only (MirrorUtils."
                                 "validateSourceOffset); its tasks do not read these offsets"))
    if target.kind == CHECKPOINT:
        found += _checkpoint_topic_problems(where, f"{at}.topic", target, offset.topic)
    elif _replicates(target, offset.topic) is False:
        found.append(Problem(where, f"{at}.topic", offset.topic,
                             f"a topic {target.name} reads: its topic filter does not include it"))
    return found


CHECKPOINT_NAMES = ("MirrorCheckpointConnector's partitions name the topic as the target cluster does, as `list` "
                    "shows it (MirrorCheckpointTask.renameTopicPartition)")


def _checkpoint_topic_problems(where: str, at: str, target: Target, topic: str) -> list[Problem]:
    """A checkpoint offset names the topic as the target does; its filter reads the source's name."""
    upstream = checkpointed_topic(target, topic)
    renamed = checkpoint_topic(target, topic)
    # A source topic the connector reads, written by its own name, which its offsets never hold;
    # unless it also names a topic back from the target (`<target>.<topic>` on the source), which
    # exists where a flow of this topology replicates the target to the source.
    source_side = renamed != topic and _replicates(target, topic) is True
    back = upstream == names.replicated_topic(target.target, topic)
    if upstream is not None and _replicates(target, upstream) is not False and not (
            source_side and back and not target.returning):
        return []
    if source_side:
        also = (f" ({topic} is also what {target.target} has for {upstream} of {target.source}, a topic back from "
                f"{target.target}, which no flow of this topology replicates to {target.source})"
                if back and upstream is not None and _replicates(target, upstream) is not False else "")
        return [Problem(where, at, topic, f"{renamed!r}, the name {target.target} has for {topic} of "
                                          f"{target.source}{also}: {CHECKPOINT_NAMES}")]
    if upstream is None:
        return [Problem(where, at, topic, f"a topic named as {target.name} names one on {target.target}: no topic "
                                          f"of {target.source} is checkpointed under it; {CHECKPOINT_NAMES}")]
    return [Problem(where, at, topic, f"a topic {target.name} checkpoints, named as on {target.target}: its topic "
                                      f"filter does not include {upstream}, the topic of {target.source} it names")]


# ----------------------------------------------------------------- the plan


@dataclass(frozen=True)
class OffsetsPlan:
    """What one request adds to a KafkaConnector's objects: its spec fields, the ConfigMap the
    operator reads for alter, and the patch that sets the operator's annotation."""
    request: OffsetsRequest
    spec: JSON                   # spec.listOffsets or spec.alterOffsets (none for reset)
    configmap: ConfigMap | None  # alter: the offsets to set, in the REST API's body
    patch: JSON                  # the KafkaConnector's metadata with the annotation, nothing else
    resource_name: str           # the patch's Pulumi name: a new request is a new resource

    @property
    def action(self) -> OffsetsAction:
        return self.request.action


def request_for(flow: Flow, connector: str) -> OffsetsRequest | None:
    """The flow's request on this connector (the rules allow one)."""
    return next((r for r in flow.offsets if r.connector == connector), None)


def spec_fields(request: OffsetsRequest, connector: str) -> JSON:
    """The KafkaConnector spec fields the operator reads for this action."""
    if request.action is OffsetsAction.list:
        return {"listOffsets": {"toConfigMap": {"name": FlowNames.offsets_list_configmap(connector)}}}
    if request.action is OffsetsAction.alter:
        return {"alterOffsets": {"fromConfigMap": {"name": FlowNames.offsets_alter_configmap(connector)}}}
    return {}


def partition_key(kind: str, source_alias: str, offset: PartitionOffset) -> JSON:
    """A partition as the connector's offsets name it (MirrorUtils.wrapPartition, Checkpoint)."""
    if kind == CHECKPOINT:
        return {"group": offset.group, "topic": offset.topic, "partition": offset.partition}
    return {"cluster": source_alias, "topic": offset.topic, "partition": offset.partition}


def alter_body(kind: str, source_alias: str, offsets: list[PartitionOffset]) -> JSON:
    """The body of PATCH /connectors/<name>/offsets (KIP-875): each partition with its offset,
    or null to delete it."""
    return {"offsets": [{"partition": partition_key(kind, source_alias, o),
                         "offset": None if o.offset is None else {"offset": o.offset}} for o in offsets]}


def alter_text(kind: str, source_alias: str, offsets: list[PartitionOffset]) -> str:
    """The alter ConfigMap's value, as rendered."""
    return json.dumps(alter_body(kind, source_alias, offsets), indent=2)


def plan_offsets(request: OffsetsRequest, kind: str, connector: str, namespace: str, source_alias: str,
                 api_version: str, labels: dict[str, str]) -> OffsetsPlan:
    configmap: ConfigMap | None = None
    if request.action is OffsetsAction.alter:
        text = alter_text(kind, source_alias, request.offsets)
        configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": meta(FlowNames.offsets_alter_configmap(connector), namespace, dict(labels)),
                     "data": {names.OFFSETS_KEY: text}}
    patch: JSON = {"apiVersion": api_version, "kind": "KafkaConnector",
                   "metadata": meta(connector, namespace, dict(labels),
                                    {CONNECTOR_OFFSETS_ANNOTATION: request.action.value,
                                     names.OFFSETS_REQUEST_ANNOTATION: f"{request.action.value}/{request.request}",
                                     PATCH_FORCE: "true"})}
    name = names.resource_name(namespace, names.offsets_patch(connector, request.action.value, request.request))
    return OffsetsPlan(request, spec_fields(request, connector), configmap, patch, name)


def shown_kind(obj: Mapping[str, Any]) -> str:
    """The kind an object is listed under: an offsets request's patch has its KafkaConnector's
    kind and name, so it is told apart as `KafkaConnectorPatch` (render files, diff)."""
    return str(obj["kind"]) + ("Patch" if is_patch(obj) else "")


def is_patch(obj: Mapping[str, Any]) -> bool:
    """A rendered object that only sets the operator's annotation on a KafkaConnector."""
    return obj.get("kind") == "KafkaConnector" and "spec" not in obj
