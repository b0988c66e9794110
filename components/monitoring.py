"""The monitoring objects' component.

    ReplicationMonitoring           kafka-replication:monitoring:ReplicationMonitoring   (name: monitoring)
      Namespace (monitoring.namespace), and in it a PodMonitor and a PrometheusRule
      (monitoring.prometheusOperator) and the Grafana dashboard ConfigMap (monitoring.dashboard).

One per Kubernetes cluster hosting flows, named `monitoring-<cluster>` there. Type tokens and
names are part of every URN: change them only with `aliases`.
"""

from __future__ import annotations

from typing import cast

import pulumi

from components.kube import SecretResolver, create, name_of
from infra.core import names
from infra.core.manifests import Manifest
from infra.plan.monitoring import MonitoringPlan

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
        # PodMonitor and PrometheusRule are custom resources (components/kube.py creates any
        # kind it does not know as one); they hold no secret value.
        self.resources = [create(cast(Manifest, o), child, secrets, ns, kubernetes=k) for o in plan.objects]
        self.register_outputs(plan.outputs)
