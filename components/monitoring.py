"""The monitoring objects' component.

    ReplicationMonitoring           kafka-replication:monitoring:ReplicationMonitoring   (name: monitoring)
      Namespace (monitoring.namespace), and in it a PodMonitor and a PrometheusRule
      (monitoring.prometheusOperator), the Grafana dashboard ConfigMap (monitoring.dashboard) and
      grafana-operator's GrafanaDashboard (monitoring.grafanaOperator).

One per Kubernetes cluster hosting flows, named `monitoring-<cluster>` there. Type tokens and
names are part of every URN: change them only with `aliases`.
"""

from __future__ import annotations

from typing import cast

import pulumi

from components.kube import SecretResolver, create, name_of
from infra.core import names
from infra.core.manifests import Manifest
from infra.plan.monitoring import GRAFANA_DASHBOARD_IMMUTABLE, MonitoringPlan

MONITORING_COMPONENT = "monitoring"


class ReplicationMonitoring(pulumi.ComponentResource):
    def __init__(self, plan: MonitoringPlan, secrets: SecretResolver, opts: pulumi.ResourceOptions | None = None,
                 provider: pulumi.ProviderResource | None = None) -> None:
        name = f"{MONITORING_COMPONENT}-{plan.kubernetes}" if plan.kubernetes else MONITORING_COMPONENT
        super().__init__(names.component_type("monitoring", "ReplicationMonitoring"), name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)
        k = plan.kubernetes
        namespace = create(plan.namespace, child, secrets, kubernetes=k)
        ns = name_of(namespace)
        # PodMonitor, PrometheusRule and GrafanaDashboard are custom resources (components/kube.py
        # creates any kind it does not know as one); they hold no secret value.
        self.resources = [create(cast(Manifest, o), _options(o["kind"], child), secrets, ns, kubernetes=k)
                          for o in plan.objects]
        self.register_outputs(plan.outputs)


def _options(kind: str, child: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
    """A GrafanaDashboard whose immutable fields change is replaced (deleted, then created under
    its fixed name), not updated: the API server refuses that update (its CRD's CEL rules)."""
    if kind != "GrafanaDashboard":
        return child
    return pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
        replace_on_changes=list(GRAFANA_DASHBOARD_IMMUTABLE), delete_before_replace=True))
