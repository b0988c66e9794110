"""The stack outputs contract, for the teams that read our outputs.

Version OUTPUTS_VERSION, described field by field in docs/outputs.md and as a JSON Schema in
docs/outputs.schema.json (the tests hold every render to it). Within a version, fields are only
added; a removal or a change of meaning raises the version, and `read` refuses a version it does
not know rather than misread it.

No dependencies (Pulumi only for `from_stack_reference`), so another team's program can copy or
import it:

    ref = pulumi.StackReference("org/kafka-replication/prod")
    flows = outputs.from_stack_reference(ref).apply(lambda o: o.flows["orders-to-eu"].connect_rest_url)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

OUTPUTS_VERSION = 1


class ContractError(ValueError):
    """Outputs this reader cannot read as the contract says."""


@dataclass(frozen=True)
class ConnectCluster:
    name: str
    namespace: str
    rest_url: str
    group_id: str
    source_connectors: tuple[str, ...]


@dataclass(frozen=True)
class Flow:
    name: str
    source_alias: str
    target_alias: str
    namespace: str
    replication_policy: str
    topic_prefix: str
    topics: tuple[str, ...]
    connect_rest_url: str
    connect_clusters: tuple[ConnectCluster, ...]
    target_heartbeats_topic: str
    target_checkpoints_topic: str | None
    partner: str | None  # the other direction of a bidirectional pair
    kubernetes_cluster: str | None = None  # with a `kubernetes` section: where it is deployed

    def replicated_topic(self, topic: str) -> str:
        """The target topic a source topic is replicated to."""
        return self.topic_prefix + topic


@dataclass(frozen=True)
class StackOutputs:
    version: int
    operator_flavour: str
    operator_version: str
    kafka_version: str
    flows: dict[str, Flow]
    audit_namespace: str | None
    # With a `kubernetes` section: the audit's namespace per Kubernetes cluster.
    audit_namespaces: dict[str, str] | None = None


def _get(values: Mapping[str, Any], key: str, where: str, kind: type | tuple[type, ...] = str) -> Any:
    if not isinstance(values, Mapping) or key not in values:
        raise ContractError(f"{where}.{key}: missing")
    value = values[key]
    if not isinstance(value, kind):
        raise ContractError(f"{where}.{key}: expected {kind}, got {type(value).__name__}")
    return value


def _optional(values: Mapping[str, Any], key: str, where: str, kind: type | tuple[type, ...] = str) -> Any:
    """A field added within the version: absent is None, present must have its type."""
    return _get(values, key, where, kind) if isinstance(values, Mapping) and key in values else None


def read(values: Mapping[str, Any]) -> StackOutputs:
    """The outputs of `pulumi stack output --json` (or a StackReference's), checked and typed."""
    version = values.get("outputsVersion") if isinstance(values, Mapping) else None
    if version != OUTPUTS_VERSION:
        raise ContractError(f"outputsVersion {version!r}: this reader knows version {OUTPUTS_VERSION} "
                            "(outputs without it predate the contract)")
    operator = _get(values, "operator", "outputs", Mapping)
    flows = {}
    for name, flow in _get(values, "flows", "outputs", Mapping).items():
        where = f"outputs.flows.{name}"
        internal = _get(flow, "internalTopics", where, Mapping)
        target = _get(internal, "target", f"{where}.internalTopics", Mapping)
        pair = _get(flow, "bidirectional", where, (Mapping, type(None)))
        clusters = tuple(
            ConnectCluster(name=_get(c, "name", f"{where}.connectClusters"),
                           namespace=_get(c, "namespace", f"{where}.connectClusters"),
                           rest_url=_get(c, "restUrl", f"{where}.connectClusters"),
                           group_id=_get(c, "connectGroupId", f"{where}.connectClusters"),
                           source_connectors=tuple(_get(_get(c, "connectors", where, Mapping), "source", where, list)))
            for c in _get(flow, "connectClusters", where, list))
        flows[name] = Flow(
            name=name, source_alias=_get(flow, "sourceAlias", where), target_alias=_get(flow, "targetAlias", where),
            namespace=_get(flow, "namespace", where), replication_policy=_get(flow, "replicationPolicy", where),
            topic_prefix=_get(flow, "topicPrefix", where), topics=tuple(_get(flow, "topics", where, list)),
            connect_rest_url=_get(flow, "connectRestUrl", where), connect_clusters=clusters,
            target_heartbeats_topic=_get(target, "heartbeats", where),
            target_checkpoints_topic=_get(target, "checkpoints", where, (str, type(None))),
            partner=pair["partner"] if pair else None,
            kubernetes_cluster=_optional(flow, "kubernetesCluster", where))
    audit = values.get("audit")
    audits = _optional(values, "audits", "outputs", Mapping)
    per_cluster = {k: _get(a, "namespace", f"outputs.audits.{k}") for k, a in audits.items()} if audits else None
    return StackOutputs(version=version, operator_flavour=_get(operator, "flavour", "outputs.operator"),
                        operator_version=_get(operator, "version", "outputs.operator"),
                        kafka_version=_get(operator, "kafkaVersion", "outputs.operator"), flows=flows,
                        audit_namespace=_get(audit, "namespace", "outputs.audit") if audit else None,
                        audit_namespaces=per_cluster)


def from_stack_reference(ref: Any) -> Any:
    """`pulumi.Output[StackOutputs]` of a StackReference to a kafka-replication stack."""
    import pulumi
    keys = ("outputsVersion", "operatorFlavour", "operator", "flows", "audit", "audits")
    return pulumi.Output.all(*(ref.get_output(k) for k in keys)).apply(
        lambda values: read({k: v for k, v in zip(keys, values) if v is not None}))
