"""The replication audit's components.

    ReplicationAudit                kafka-replication:audit:ReplicationAudit   (name: audit)
      Namespace, ServiceAccount, Role + RoleBinding (executors only), ConfigMap (the audit
      configuration), Secrets (Kafka credentials per cluster), PersistentVolumeClaim (reports),
      CronJob; and in each flow's namespace a NetworkPolicy admitting the audit to the Connect
      REST API.

Type tokens and names are part of every URN: change them only with `aliases`.
"""

from __future__ import annotations

import pulumi

from components.kube import SecretResolver, create, name_of
from infra.core import names
from infra.plan.audit import AuditPlan

AUDIT_COMPONENT = "audit"


class ReplicationAudit(pulumi.ComponentResource):
    def __init__(self, plan: AuditPlan, secrets: SecretResolver, opts: pulumi.ResourceOptions | None = None,
                 provider: pulumi.ProviderResource | None = None) -> None:
        # One audit per Kubernetes cluster hosting flows, named after it; the one audit of a
        # stack without a `kubernetes` section keeps its historic name.
        name = f"{AUDIT_COMPONENT}-{plan.kubernetes}" if plan.kubernetes else AUDIT_COMPONENT
        super().__init__(names.component_type("audit", "ReplicationAudit"), name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        k = plan.kubernetes
        namespace = create(plan.namespace, child, secrets, kubernetes=k)
        ns = name_of(namespace)
        created: dict[tuple[str, str], pulumi.CustomResource] = {}
        for obj in plan.objects:
            # The CronJob's first run needs everything it mounts and the RBAC it uses.
            after = list(created.values()) if obj["kind"] == "CronJob" else []
            created[(obj["kind"], obj["metadata"]["name"])] = create(
                obj, pulumi.ResourceOptions(parent=self, depends_on=after, provider=provider), secrets, ns,
                kubernetes=k)
        self.rest_policies = [create(p, child, secrets, kubernetes=k) for p in plan.rest_policies]
        self.cronjob = created[("CronJob", names.AuditNames.cronjob)]
        self.register_outputs(plan.outputs)
