"""The plan's types: a stack's flows, each flow's Connect clusters (parts) and the objects of each,
with what they say of themselves (names, internal topics, the names they take per namespace).
infra/plan/outputs.py writes the stack outputs from them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Union

from infra.core import names
from infra.core.errors import Problem
from infra.core.manifests import (ConfigMap, KafkaConnect, Manifest, Namespace, ResourceQuota, Role, RoleBinding,
                                  Secret, SecretValue, secret_values as manifest_secret_values)
from infra.core.names import FlowNames
from infra.core.releases import Flavour, Release
from infra.plan.connectors import ConnectorKind, ConnectorPlan
from infra.topology.resolution import Direction, PartSpec
from infra.topology.schema import Flow, Policy


POLICY_CLASSES = {
    Policy.default: "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
    Policy.identity: "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
}
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

Stored = Union[ConfigMap, Secret]
ConnectObject = Union[ResourceQuota, KafkaConnect, Role, RoleBinding]


@dataclass(frozen=True)
class PartPlan:
    """One Connect cluster of a flow (the only one unless the flow is split), in its namespace."""
    spec: PartSpec
    names: FlowNames
    namespace: Namespace
    access: tuple[Stored, ...]              # ConfigMaps and Secrets: clusters, replication, metrics, registry
    connect: tuple[ConnectObject, ...]      # ResourceQuota, KafkaConnect, Role, RoleBinding
    connectors: tuple[ConnectorPlan, ...]   # KafkaConnectors
    # The Secrets of the target's access material whose replacement must roll the Connect pods
    # at once (names.TARGET_ACCESS_UID), in `access`.
    roll_with: tuple[str, ...] = ()
    # The Secret of the source's store files the pods mount, whose replacement must roll them at
    # once too (names.SOURCE_FILES_UID), in `access`; None when nothing is mounted.
    files_from: str | None = None

    @property
    def kubernetes(self) -> str | None:
        """The Kubernetes cluster it deploys to; None: the ambient context (no `kubernetes` section)."""
        return self.spec.kubernetes

    @property
    def connector_manifests(self) -> tuple[Manifest, ...]:
        return tuple(c.manifest for c in self.connectors)

    @property
    def objects(self) -> tuple[Manifest, ...]:
        return (self.namespace, *self.access, *self.connect, *self.connector_manifests)

    def connector_names(self, kind: ConnectorKind) -> list[str]:
        return [c.name for c in self.connectors if c.kind is kind]


@dataclass(frozen=True)
class InternalTopics:
    """MirrorMaker 2's own topics of a flow, None where the flow has none (the Connect
    storage topics are per Connect cluster: PartPlan.names)."""
    source_offset_syncs: str | None
    source_heartbeats: str | None
    target_checkpoints: str | None
    target_heartbeats: str | None


@dataclass(frozen=True)
class FlowPlan:
    direction: Direction
    parts: tuple[PartPlan, ...]
    release: Release

    @property
    def name(self) -> str:
        return self.direction.name

    @property
    def flow(self) -> Flow:
        return self.direction.flow

    @property
    def objects(self) -> tuple[Manifest, ...]:
        return tuple(o for p in self.parts for o in p.objects)

    @property
    def policy_class(self) -> str:
        return POLICY_CLASSES[self.flow.policy]

    @property
    def topic_prefix(self) -> str:
        return names.topic_prefix(self.flow.source, self.flow.policy is Policy.default)

    @property
    def loop_headers(self) -> tuple[str, str] | None:
        """Bidirectional pairs: (the header replicated records get, the header of records that
        came from the target and are dropped)."""
        if not self.direction.partner:
            return None
        return names.loop_header(self.flow.source), names.loop_header(self.flow.target)

    @property
    def internal_topics(self) -> InternalTopics:
        flow, first = self.flow, self.parts[0].names
        return InternalTopics(
            # Bidirectional pairs switch offset syncs off where Kafka has the key (3.9+).
            source_offset_syncs=(None if self.direction.partner and self.release.emit_offset_syncs_key
                                 else first.offset_syncs_topic),
            source_heartbeats=names.HEARTBEATS_TOPIC if flow.heartbeats else None,
            target_checkpoints=first.checkpoints_topic if flow.with_checkpoints else None,
            # Both policies prefix replicated heartbeats (IdentityReplicationPolicy defers to the
            # default for heartbeats topics).
            target_heartbeats=(names.replicated_topic(flow.source, names.HEARTBEATS_TOPIC)
                               if flow.heartbeats else None))


@dataclass(frozen=True)
class StackPlan:
    release: Release
    flows: tuple[FlowPlan, ...]

    @property
    def flavour(self) -> Flavour:
        return self.release.flavour

    @property
    def objects(self) -> tuple[Manifest, ...]:
        return tuple(o for f in self.flows for o in f.objects)

    def placed(self) -> list[tuple[str | None, Manifest]]:
        """Every object with the Kubernetes cluster it goes to."""
        return [(p.kubernetes, o) for f in self.flows for p in f.parts for o in p.objects]

    @property
    def kubernetes_clusters(self) -> tuple[str, ...]:
        """The Kubernetes clusters hosting flows (none without a `kubernetes` section)."""
        return tuple(sorted({p.kubernetes for f in self.flows for p in f.parts if p.kubernetes}))

    def in_cluster(self, kubernetes: str | None) -> StackPlan:
        """The flows (and of a split flow, the Connect clusters) deployed to one Kubernetes cluster."""
        flows = []
        for f in self.flows:
            parts = tuple(p for p in f.parts if p.kubernetes == kubernetes)
            if parts:
                flows.append(f if parts == f.parts else replace(f, parts=parts))
        return StackPlan(self.release, tuple(flows))

    def name_problems(self, more: Iterable[tuple[str | None, Manifest]] = ()) -> list[Problem]:
        """Every object name we write is a name its kind accepts and unique per Kubernetes
        cluster, namespace and kind (a user-chosen name, such as the image pull Secret's, could
        take one of ours)."""
        seen: dict[tuple[str | None, str | None, str, str], str] = {}
        problems = []
        for cluster, obj in (*self.placed(), *more):
            meta_ = obj["metadata"]
            name = meta_["name"]
            key = (cluster, meta_.get("namespace"), obj["kind"], name)
            label = obj["kind"] in ("Namespace", "Service")
            if not (DNS_LABEL if label else DNS_SUBDOMAIN).fullmatch(name) or len(name) > (63 if label else 253):
                problems.append(Problem(f"{obj['kind']} {name!r}", "name", name,
                                        "a Kubernetes name (lowercase letters, digits, '-'; at most 63 characters "
                                        "for namespaces and services)"))
            if key in seen:
                place = f"namespace {key[1]}" + (f" of Kubernetes cluster {cluster}" if cluster else "")
                problems.append(Problem(place, f"{obj['kind']} name", name,
                                        f"a name of its own: the program also writes {obj['kind']} {name!r} "
                                        f"there ({seen[key]})"))
            seen.setdefault(key, meta_["labels"].get(names.FLOW_LABEL, "the audit"))
        return problems

    def secret_values(self) -> list[SecretValue]:
        """Every value this stack needs from Pulumi secret config, in plan order."""
        return [v for obj in self.objects for v in manifest_secret_values(obj)]

    def secret_keys(self) -> list[str]:
        return sorted({k for v in self.secret_values() for k in v.config_keys})
