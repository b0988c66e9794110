"""The monitoring objects of a stack per Kubernetes cluster: the namespace, the PodMonitor, the
PrometheusRule, kube-state-metrics' configuration of the operator's view, the dashboard's
ConfigMap and its GrafanaDashboard, who owns each object, and the refusals of a monitoring section whose rules would not
fit one object."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, Mapping, TypedDict, Union

from infra.core import names, yamltext
from infra.core.errors import Problem
from infra.core.manifests import JSON, ConfigMap, Manifest, Namespace, ObjectMeta, meta
from infra.plan import metrics
from infra.plan.monitoring.alerts import rule_groups
from infra.plan.monitoring.dashboard import dashboard
from infra.plan.monitoring.operator import KSM_CONFIG_KEY, ksm_config_text
from infra.plan.types import StackPlan
from infra.topology.resolution import Model
from infra.topology.schema import Exporter, GrafanaOperator

API_VERSION: Literal["monitoring.coreos.com/v1"] = "monitoring.coreos.com/v1"


# The PodMonitor scrapes the container port Strimzi gives the exporter of every KafkaConnect pod
# (metrics.METRICS_PORT_NAME; KafkaConnectCluster adds it to the container when metrics are
# configured, and its NetworkPolicy opens it to all).
STRIMZI_KIND_LABEL = "strimzi.io/kind"


DASHBOARD_KEY = "kafka-replication.json"


# A PrometheusRule is one Kubernetes object, stored whole (etcd's request limit is 1.5 MiB) and
# written by the operator into a ConfigMap of at most 1 MiB: ours stays well under both.
MAX_RULE_BYTES = 900_000


# ----------------------------------------------------------------- the Prometheus Operator's objects


class PodMonitor(TypedDict):
    apiVersion: Literal["monitoring.coreos.com/v1"]
    kind: Literal["PodMonitor"]
    metadata: ObjectMeta
    spec: JSON


class PrometheusRule(TypedDict):
    apiVersion: Literal["monitoring.coreos.com/v1"]
    kind: Literal["PrometheusRule"]
    metadata: ObjectMeta
    spec: JSON


GRAFANA_API_VERSION: Literal["grafana.integreatly.org/v1beta1"] = "grafana.integreatly.org/v1beta1"


class GrafanaDashboard(TypedDict):
    apiVersion: Literal["grafana.integreatly.org/v1beta1"]
    kind: Literal["GrafanaDashboard"]
    metadata: ObjectMeta
    spec: JSON


# What grafana-operator's CRD holds immutable (CEL rules on spec, v5.18.0): an update that changes
# one is refused by the API server, so the object is replaced instead (components/monitoring.py).
GRAFANA_DASHBOARD_IMMUTABLE = ("spec.instanceSelector", "spec.uid")


MonitoringObject = Union[PodMonitor, PrometheusRule, ConfigMap, GrafanaDashboard]


@dataclass(frozen=True)
class MonitoringPlan:
    namespace: Namespace
    objects: tuple[MonitoringObject, ...]  # in `namespace`: PodMonitor, PrometheusRule, dashboard
    outputs: JSON
    kubernetes: str | None = None          # None: the ambient context (no `kubernetes` section)

    def placed(self) -> list[tuple[str | None, Manifest]]:
        # The Prometheus Operator's kinds are not core manifests; their metadata is what the
        # name checks read.
        return [(self.kubernetes, o) for o in (self.namespace, *self.objects)]  # type: ignore[misc]

    def kind(self, kind: str) -> MonitoringObject | None:
        return next((o for o in self.objects if o["kind"] == kind), None)


def plan_monitorings(model: Model, stack_plan: StackPlan) -> tuple[MonitoringPlan, ...]:
    """The monitoring objects of every Kubernetes cluster hosting flows (one set without a
    `kubernetes` section); none when neither `prometheusOperator` nor `dashboard` is on."""
    clusters = stack_plan.kubernetes_clusters
    if not clusters:
        single = plan_monitoring(model, stack_plan, None)
        return (single,) if single else ()
    return tuple(m for k in clusters for m in [plan_monitoring(model, stack_plan.in_cluster(k), k, stack_plan)] if m)


# What tells the monitoring objects from the flows' and the audit's (the render's summary reads it).
COMPONENT = {"app.kubernetes.io/component": "monitoring"}


def is_monitoring(labels: Mapping[str, str]) -> bool:
    return COMPONENT.items() <= labels.items()


def owner(labels: Mapping[str, str] | None) -> str:
    """Who an object belongs to, by the labels the program sets: a flow, the audit or the
    monitoring (the render's summary and the diff group objects by it)."""
    labels = dict(labels or {})
    flow = labels.get(names.FLOW_LABEL)
    if flow:
        return f"flow {flow}"
    if names.AUDIT_SELECTOR.items() <= labels.items():
        return "audit"
    return "monitoring" if is_monitoring(labels) else "stack"


def _meta(name: str, namespace: str | None, extra: dict[str, str] | None = None) -> ObjectMeta:
    # The user's labels first: ours cannot be replaced by them.
    return meta(name, namespace, {**(extra or {}), **names.PART_OF, **COMPONENT})


def plan_monitoring(model: Model, stack_plan: StackPlan, kubernetes: str | None = None,
                    whole: StackPlan | None = None) -> MonitoringPlan | None:
    """`stack_plan`: the flows of one Kubernetes cluster (StackPlan.in_cluster); `whole`: the
    stack's, which decides which connector copies each pair's heartbeats (default: the same)."""
    monitoring = model.topology.monitoring
    if not (monitoring.prometheusOperator or monitoring.dashboard or monitoring.grafanaOperator) or not stack_plan.flows:
        return None
    ns = monitoring.namespace
    labels = dict(sorted(monitoring.labels.items()))
    objects: list[MonitoringObject] = []
    if monitoring.prometheusOperator:
        objects.append(pod_monitor(stack_plan, ns, labels))
        objects.append(prometheus_rule(model, stack_plan, ns, labels, whole or stack_plan))
        objects.append(ksm_configmap(model, ns))
    if monitoring.dashboard:
        objects.append(dashboard_configmap(ns))
    if monitoring.grafanaOperator:
        objects.append(grafana_dashboard(monitoring.grafanaOperator, ns, labels))
    outputs: JSON = {"namespace": ns,
                     "podMonitor": names.MONITORING if monitoring.prometheusOperator else None,
                     "prometheusRule": names.MONITORING if monitoring.prometheusOperator else None,
                     "dashboardConfigMap": names.DASHBOARD_CONFIGMAP if monitoring.dashboard else None,
                     "grafanaDashboard": names.GRAFANA_DASHBOARD if monitoring.grafanaOperator else None}
    if kubernetes:
        outputs = {"kubernetesCluster": kubernetes, **outputs}
    namespace: Namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(ns, None)}
    return MonitoringPlan(namespace, tuple(objects), outputs, kubernetes)


def pod_monitor(stack_plan: StackPlan, namespace: str, labels: dict[str, str]) -> PodMonitor:
    """The Connect pods of our flows. Strimzi copies the KafkaConnect's labels onto its pods
    (Labels.fromResource) except app.kubernetes.io/* other than part-of, and then sets part-of to
    strimzi-<cluster> itself (Labels.generateDefaultLabels, 0.43.0..1.2.0): the flow label and
    strimzi.io/kind are what select them."""
    flows = sorted({f.name for f in stack_plan.flows})
    connects = sorted({p.names.connect for f in stack_plan.flows for p in f.parts})
    namespaces = sorted({p.names.namespace for f in stack_plan.flows for p in f.parts})
    return {"apiVersion": API_VERSION, "kind": "PodMonitor", "metadata": _meta(names.MONITORING, namespace, labels),
            "spec": {
                "selector": {"matchLabels": {STRIMZI_KIND_LABEL: "KafkaConnect"},
                             "matchExpressions": [
                                 {"key": names.FLOW_LABEL, "operator": "In", "values": flows},
                                 {"key": names.CLUSTER_LABEL, "operator": "In", "values": connects}]},
                "namespaceSelector": {"matchNames": namespaces},
                "podMetricsEndpoints": [{"port": metrics.METRICS_PORT_NAME, "path": metrics.METRICS_PATH}]}}


def prometheus_rule(model: Model, stack_plan: StackPlan, namespace: str, labels: dict[str, str],
                    whole: StackPlan | None = None) -> PrometheusRule:
    return {"apiVersion": API_VERSION, "kind": "PrometheusRule", "metadata": _meta(names.MONITORING, namespace, labels),
            "spec": {"groups": rule_groups(model, stack_plan, whole)}}


def ksm_configmap(model: Model, namespace: str) -> ConfigMap:
    """What kube-state-metrics needs to export the operator's view the rules read: mounted as its
    --custom-resource-state-config-file (docs/operations.md, The operator's view)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(names.KSM_CONFIGMAP, namespace),
            "data": {KSM_CONFIG_KEY: ksm_config_text(model.operator.release)}}


def dashboard_text() -> str:
    """The dashboard's JSON as both the ConfigMap and the GrafanaDashboard carry it."""
    return json.dumps(dashboard(), indent=1, sort_keys=True) + "\n"


def dashboard_configmap(namespace: str) -> ConfigMap:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": _meta(names.DASHBOARD_CONFIGMAP, namespace, dict(names.DASHBOARD_LABEL)),
            "data": {DASHBOARD_KEY: dashboard_text()}}


def grafana_dashboard(grafana: GrafanaOperator, namespace: str, labels: dict[str, str]) -> GrafanaDashboard:
    """The same dashboard for grafana-operator: imported into the Grafana resources its selector
    matches. The JSON is inline (`spec.json`), not a reference to the sidecar's ConfigMap, so that
    a cluster running both loads it once each way rather than depending on `dashboard: true`."""
    spec: JSON = {"instanceSelector": {"matchLabels": dict(sorted(grafana.instanceSelector.items()))},
                  "json": dashboard_text()}
    if grafana.allowCrossNamespaceImport:
        spec["allowCrossNamespaceImport"] = True
    if grafana.folder is not None:
        spec["folder"] = grafana.folder
    return {"apiVersion": GRAFANA_API_VERSION, "kind": "GrafanaDashboard",
            "metadata": _meta(names.GRAFANA_DASHBOARD, namespace, labels), "spec": spec}


# ----------------------------------------------------------------- refusals


def rules_yaml(groups: list[JSON]) -> str:
    """The groups as a Prometheus rule file (what the operator writes and promtool reads)."""
    return yamltext.dump({"groups": groups}, sort_keys=True, width=4096)


def _set(alerts: Any) -> str:
    """The thresholds a topology sets, as it writes them ('' for none)."""
    return ", ".join(f"{k}: {v}" for k, v in alerts.model_dump(exclude_none=True).items())


def problems(model: Model, stack_plan: StackPlan | None = None) -> list[Problem]:
    """What the monitoring objects refuse: alerts or a dashboard without our exporter's series, a
    `monitoring.namespace` that another object of the stack already is, and a PrometheusRule too
    large for one Kubernetes object. (A checkpoint interval that is no whole number, which the
    checkpoint alert reads, is refused with the rules: infra/plan/failover.py.)"""
    out: list[Problem] = []
    monitoring = model.topology.monitoring
    if not monitoring.prometheusOperator:
        # Thresholds live only in the PrometheusRule: without it they would be dropped unseen.
        unused = "monitoring.prometheusOperator: true (the thresholds are written into its PrometheusRule), or no alerts"
        if given := _set(monitoring.alerts):
            out.append(Problem("monitoring", "alerts", given, unused))
        for index, flow in enumerate(model.topology.flows):
            if given := _set(flow.alerts):
                out.append(Problem(f"flows[{index}] ({flow.flow_name})", "alerts", given, unused))
    if not (monitoring.prometheusOperator or monitoring.dashboard or monitoring.grafanaOperator):
        return out
    if not monitoring.metrics or monitoring.exporter is not Exporter.jmxPrometheusExporter:
        asked = " and ".join(f for f in ("prometheusOperator", "dashboard") if getattr(monitoring, f))
        grafana = monitoring.grafanaOperator is not None
        given = ", ".join([f"metrics: {str(monitoring.metrics).lower()}", f"exporter: {monitoring.exporter.value}"]
                          + ([f"{asked}: true"] if asked else []) + (["grafanaOperator: set"] if grafana else []))
        off = " and ".join(([f"{asked}: false"] if asked else []) + (["no grafanaOperator"] if grafana else []))
        out.append(Problem("monitoring", "exporter" if monitoring.metrics else "metrics", given,
                           "metrics: true with exporter jmxPrometheusExporter for the alerts and the dashboard: "
                           "they read the series and labels of the JMX exporter's rules (flow, connect_cluster), "
                           f"or {off}"))
    taken = {d.names(p).namespace: f"the namespace of flow {d.name}" for d in model.flows for p in d.parts}
    if model.audit is not None:
        taken[model.audit.namespace] = "the audit's namespace (audit.namespace)"
    if monitoring.namespace in taken:
        out.append(Problem("monitoring", "namespace", monitoring.namespace,
                           f"a namespace of its own: it is {taken[monitoring.namespace]}"))
    if out or stack_plan is None or not monitoring.prometheusOperator:
        return out
    whole = stack_plan
    for k in stack_plan.kubernetes_clusters or (None,):
        part = stack_plan.in_cluster(k) if k else stack_plan
        size = len(rules_yaml(rule_groups(model, part, whole)).encode())
        if size > MAX_RULE_BYTES:
            where = f" of Kubernetes cluster {k}" if k else ""
            out.append(Problem("monitoring", "alerts", f"a PrometheusRule{where} of {size} bytes",
                               f"at most {MAX_RULE_BYTES} bytes: fewer distinct thresholds across flows "
                               "(flows sharing thresholds share rules)"))
    return out
