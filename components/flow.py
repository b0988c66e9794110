"""The components of one replication flow.

    ReplicationFlow                 kafka-replication:flow:ReplicationFlow
      Namespace
      ClusterAccess                 kafka-replication:flow:ClusterAccess      (ConfigMaps, Secrets)
      ConnectCluster                kafka-replication:flow:ConnectCluster     (KafkaConnect, Role, RoleBinding)
      MirrorConnectors              kafka-replication:flow:MirrorConnectors   (KafkaConnectors)

Type tokens and names are part of every URN: change them only with `aliases`.
"""

from __future__ import annotations

import pulumi

from components.kube import SecretResolver, create
from infra import names
from infra.plan import FlowPlan


class ClusterAccess(pulumi.ComponentResource):
    """The ConfigMaps and Secrets through which the flow reaches its two clusters (steps 3-6)."""

    def __init__(self, name: str, objects: tuple[dict, ...], namespace: pulumi.Input[str],
                 secrets: SecretResolver, opts: pulumi.ResourceOptions | None = None):
        super().__init__(names.component_type("flow", "ClusterAccess"), name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.resources = [create(o, child, secrets, namespace) for o in objects]
        self.register_outputs({"objects": [o["metadata"]["name"] for o in objects]})


class ConnectCluster(pulumi.ComponentResource):
    """The dedicated KafkaConnect and the RBAC of its config providers (steps 7-8)."""

    def __init__(self, name: str, objects: tuple[dict, ...], namespace: pulumi.Input[str],
                 secrets: SecretResolver, opts: pulumi.ResourceOptions | None = None):
        super().__init__(names.component_type("flow", "ConnectCluster"), name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        created = {o["kind"]: create(o, child, secrets, namespace) for o in objects}
        self.kafka_connect = created["KafkaConnect"]
        self.cluster_name: pulumi.Output[str] = self.kafka_connect.metadata["name"]
        self.register_outputs({"connectCluster": self.cluster_name})


class MirrorConnectors(pulumi.ComponentResource):
    """The MirrorSource/Checkpoint/Heartbeat KafkaConnectors (steps 9-11)."""

    def __init__(self, name: str, objects: tuple[dict, ...], namespace: pulumi.Input[str],
                 cluster: pulumi.Input[str], secrets: SecretResolver, opts: pulumi.ResourceOptions | None = None):
        super().__init__(names.component_type("flow", "MirrorConnectors"), name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # The strimzi.io/cluster label comes from the KafkaConnect's Output: connectors are
        # created after their Connect cluster.
        self.resources = [create(o, child, secrets, namespace,
                                 metadata={"labels": {**o["metadata"]["labels"], names.CLUSTER_LABEL: cluster}})
                          for o in objects]
        self.register_outputs({"connectors": [o["metadata"]["name"] for o in objects]})


class ReplicationFlow(pulumi.ComponentResource):
    """Everything one replication flow deploys, in its own namespace."""

    def __init__(self, plan: FlowPlan, secrets: SecretResolver, opts: pulumi.ResourceOptions | None = None):
        name = plan.names.flow
        super().__init__(names.component_type("flow", "ReplicationFlow"), name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.namespace = create(plan.namespace, child, secrets)
        ns = self.namespace.metadata["name"]
        self.access = ClusterAccess(f"{name}/access", plan.access, ns, secrets, child)
        # Strimzi reads the target Secrets and mounts the source Secret when it creates the
        # pods; the Role must exist before the config providers first ask.
        self.connect = ConnectCluster(f"{name}/connect", plan.connect, ns, secrets,
                                      pulumi.ResourceOptions(parent=self, depends_on=[self.access]))
        self.connectors = MirrorConnectors(f"{name}/connectors", plan.connectors, ns, self.connect.cluster_name,
                                           secrets, pulumi.ResourceOptions(parent=self, depends_on=[self.connect]))
        self.outputs = plan.outputs
        self.register_outputs(plan.outputs)
