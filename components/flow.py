"""The components of one flow as deployed (one direction of a bidirectional pair).

    FlowDirection                   kafka-replication:flow:ReplicationFlow
      per Connect cluster of the flow (one unless the flow is split; named <connect>, which is
      the flow name for an unsplit flow):
      Namespace
      ClusterAccess <connect>/access          (ConfigMaps, Secrets)
      ConnectCluster <connect>/connect        (ResourceQuota, KafkaConnect, Role, RoleBinding)
      MirrorConnectors <connect>/connectors   (KafkaConnectors; with an offsets request, the
                                              alter ConfigMap and the annotation's patch)

Type tokens and names are part of every URN: change them only with `aliases`. (The token of
FlowDirection is the one its URNs have carried since the first release.) These are the inner
components of ReplicationTopology and ReplicationFlow (components/replication.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import pulumi

from components.kube import SecretResolver, annotate, create, name_of, uid_of
from infra.core import names
from infra.core.manifests import KafkaConnect, KafkaConnector
from infra.plan.connectors import ConnectorPlan
from infra.plan.outputs import flow_outputs
from infra.plan.types import ConnectObject, FlowPlan, Stored


class ClusterAccess(pulumi.ComponentResource):
    """The ConfigMaps and Secrets through which the flow reaches its two clusters (steps 3-6)."""

    def __init__(self, name: str, objects: tuple[Stored, ...], namespace: pulumi.Input[str],
                 secrets: SecretResolver, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(names.component_type("flow", "ClusterAccess"), name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # A loop, not a comprehension (a frame of its own before Python 3.12): the SDK captures
        # the stack of every resource it registers, at a cost that grows with the stack's depth.
        self.resources = []
        for o in objects:
            self.resources.append(create(o, child, secrets, namespace))
        # Each Secret's uid, as the API server gives it: a replaced Secret gets a new one.
        self.uids: dict[str, pulumi.Output[str]] = {
            o["metadata"]["name"]: uid_of(r) for o, r in zip(objects, self.resources) if o["kind"] == "Secret"}
        self.register_outputs({"objects": [o["metadata"]["name"] for o in objects]})


class ConnectCluster(pulumi.ComponentResource):
    """The dedicated KafkaConnect, its namespace quota and the RBAC of its config providers (steps 7-8)."""

    def __init__(self, name: str, objects: tuple[ConnectObject, ...], namespace: pulumi.Input[str],
                 secrets: SecretResolver, opts: pulumi.ResourceOptions | None = None,
                 uids: Mapping[str, pulumi.Output[str]] | None = None, roll_with: tuple[str, ...] = (),
                 files_from: str | None = None) -> None:
        super().__init__(names.component_type("flow", "ConnectCluster"), name, None, opts)
        created: dict[str, pulumi.CustomResource] = {}
        rolls = {**({names.TARGET_ACCESS_UID: _joined(uids, roll_with)} if roll_with else {}),
                 **({names.SOURCE_FILES_UID: _joined(uids, (files_from,))} if files_from else {})}
        for o in objects:
            if o["kind"] == "KafkaConnect" and rolls:
                o = _rolling_with(o, rolls)
            # A quota admits pods created after it: the Connect pods must not slip in before.
            after = [created["ResourceQuota"]] if "ResourceQuota" in created else []
            created[o["kind"]] = create(o, pulumi.ResourceOptions(parent=self, depends_on=after),
                                        secrets, namespace)
        self.kafka_connect = created["KafkaConnect"]
        self.cluster_name = name_of(self.kafka_connect)
        self.register_outputs({"connectCluster": self.cluster_name})


def _joined(uids: Mapping[str, pulumi.Output[str]] | None, secrets: tuple[str, ...]) -> pulumi.Output[str]:
    """The uids of `secrets` (ClusterAccess.uids), comma-joined: what changes when one is replaced."""
    return pulumi.Output.all(*[(uids or {})[s] for s in secrets]).apply(",".join)


def _rolling_with(connect: KafkaConnect, annotations: Mapping[str, pulumi.Output[str]]) -> KafkaConnect:
    """The KafkaConnect with the uids of the Secrets whose replacement rolls its pods in their
    template: the target's access material (names.TARGET_ACCESS_UID), the source's mounted store
    files (names.SOURCE_FILES_UID)."""
    spec = connect["spec"]
    template = dict(spec.get("template") or {})
    pod = dict(template.get("pod") or {})
    metadata = dict(pod.get("metadata") or {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
    template["pod"] = {**pod, "metadata": metadata}
    return cast(KafkaConnect, {**connect, "spec": {**spec, "template": template}})


class MirrorConnectors(pulumi.ComponentResource):
    """The MirrorSource/Checkpoint/Heartbeat KafkaConnectors (steps 9-11), and the offsets
    requests on them (docs/operations.md#offsets-as-code)."""

    def __init__(self, name: str, connectors: tuple[ConnectorPlan, ...], namespace: pulumi.Input[str],
                 cluster: pulumi.Input[str], secrets: SecretResolver,
                 opts: pulumi.ResourceOptions | None = None,
                 uids: Mapping[str, pulumi.Output[str]] | None = None) -> None:
        super().__init__(names.component_type("flow", "MirrorConnectors"), name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.resources: list[pulumi.CustomResource] = []
        self.offsets: list[pulumi.CustomResource] = []
        for c in connectors:
            o = c.manifest
            if c.restart_with:
                # The uids of the Secrets it must restart with (names.SOURCE_ACCESS_UID).
                restart = _joined(uids, c.restart_with)
                o = cast(KafkaConnector, {**o, "spec": {**o["spec"], "config": {
                    **o["spec"]["config"], names.SOURCE_ACCESS_UID: restart}}})
            # The strimzi.io/cluster label comes from the KafkaConnect's Output: connectors are
            # created after their Connect cluster.
            connector = create(o, child, secrets, namespace,
                               metadata={"labels": {**o["metadata"]["labels"], names.CLUSTER_LABEL: cluster}})
            self.resources.append(connector)
            if c.offsets is None:
                continue
            # The operator reads the offsets to set from this ConfigMap when the annotation asks.
            after: list[pulumi.Resource] = [connector]
            if c.offsets.configmap is not None:
                configmap = create(c.offsets.configmap, child, secrets, namespace)
                self.offsets.append(configmap)
                after.append(configmap)
            # The operator's annotation is one-shot: it removes it once it has acted. Set on the
            # KafkaConnector's own inputs, pulumi-kubernetes (v4, server-side apply) would diff the
            # next inputs against the live object pruned to the last inputs (provider.go Diff) and
            # put it back, acting again, on the first `pulumi up` after any refresh, and
            # ignoreChanges there would keep a new request from ever being applied once a refresh
            # has taken the annotation out of the state. So a Patch resource of its own field
            # manager sets it, named after the request: a new request (or action) is a new resource,
            # created once, and the old one is deleted, which only relinquishes its field
            # (ssa.Relinquish). Its inputs are never meant to change, so changes to them are ignored:
            # the live object lacking the annotation after a refresh is no reason to apply it again.
            self.offsets.append(annotate(c.offsets.patch, c.offsets.resource_name, namespace, pulumi.ResourceOptions(
                parent=self, depends_on=after, ignore_changes=["metadata"])))
        self.register_outputs({"connectors": [c.name for c in connectors]})


class FlowDirection(pulumi.ComponentResource):
    """Everything one flow as deployed creates, in its own namespace(s)."""

    def __init__(self, plan: FlowPlan, secrets: SecretResolver, opts: pulumi.ResourceOptions | None = None,
                 providers: Mapping[str, pulumi.ProviderResource] | None = None) -> None:
        super().__init__(names.component_type("flow", "ReplicationFlow"), plan.name, None, opts)
        self.parts: list[tuple[pulumi.CustomResource, ClusterAccess, ConnectCluster, MirrorConnectors]] = []
        for part in plan.parts:
            # Each Connect cluster goes to its own Kubernetes cluster's provider (a split flow may
            # span several); without a `kubernetes` section, to the ambient one, as always.
            provider = (providers or {})[part.kubernetes] if part.kubernetes else None
            child = pulumi.ResourceOptions(parent=self, provider=provider)
            inherited = pulumi.ResourceOptions(parent=self, providers=[provider] if provider else None)
            # An unsplit flow's Connect cluster is named after the flow: its URNs are those of
            # flows before splitting existed.
            name = part.names.connect
            namespace = create(part.namespace, child, secrets)
            ns = name_of(namespace)
            access = ClusterAccess(f"{name}/access", part.access, ns, secrets, inherited)
            # Strimzi reads the target Secrets and mounts the source's files Secret when it creates
            # the pods; the Role must exist before the config providers first ask.
            connect = ConnectCluster(f"{name}/connect", part.connect, ns, secrets,
                                     pulumi.ResourceOptions.merge(inherited, pulumi.ResourceOptions(depends_on=[access])),
                                     access.uids, part.roll_with, part.files_from)
            connectors = MirrorConnectors(f"{name}/connectors", part.connectors, ns, connect.cluster_name,
                                          secrets, pulumi.ResourceOptions.merge(
                                              inherited, pulumi.ResourceOptions(depends_on=[connect])), access.uids)
            self.parts.append((namespace, access, connect, connectors))
        self.outputs = flow_outputs(plan)
        self.register_outputs(self.outputs)
