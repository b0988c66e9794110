"""The operator's own view of the flows, as alerts: a KafkaConnect or KafkaConnector that the
operator reports not Ready, with a warning, or using deprecated fields (what the upgrade runbooks
lead through). The worker's metrics cannot say it: a KafkaConnect whose Kafka version the operator
refuses runs on, unreconciled, with every connector RUNNING.

The series come from kube-state-metrics' custom resource state metrics, configured by the
ConfigMap rendered here (`names.KSM_CONFIGMAP`, key `config.yaml`, for its
`--custom-resource-state-config-file`), as Strimzi ships one for its resources
(packaging/examples/metrics/kube-state-metrics/configmap.yaml, from 0.48.0). Ours differs where
Strimzi's does not fit every release a stack runs:
- the API version is the newest the stack's release serves (v1beta2 on CSM and Strimzi 0.48.0,
  v1 from the bridge release 0.51.0 on: releases.Release.api_versions); Strimzi's file names one
  per tag;
- `warnings` is read on every release (0.48.0's file lacks it) and matched as what the path
  gives, the condition's status ("True"): Strimzi 1.2.0's rules match `warnings="Warning"`, which
  that path never yields, so its warning alerts cannot fire;
- the metric names are our own, so that Strimzi's file and ours load side by side in one
  kube-state-metrics without two families of one name.
Labels as Strimzi names them: `exported_namespace` (the scrape's own `namespace` is the
kube-state-metrics pod's), `name`, `ready`, `warnings`, `deprecated`; and `flow`, the object's
flow label, which the rules select on as the worker's rules do.
"""

from __future__ import annotations

from infra.core import names, yamltext
from infra.core.manifests import JSON
from infra.core.releases import Release
from infra.plan.monitoring.rule import alert as _alert, alternatives as _alternatives, q as _q
from infra.plan.types import StackPlan

# Each kind's metric: `<prefix>_<METRIC>` (kube-state-metrics joins metricNamePrefix and name so).
METRIC = "status"
PREFIXES = {"KafkaConnect": "kube_kafka_replication_connect", "KafkaConnector": "kube_kafka_replication_connector"}
CONNECT_INFO, CONNECTOR_INFO = (f"{prefix}_{METRIC}" for prefix in PREFIXES.values())
KSM_CONFIG_KEY = "config.yaml"

# How long a state holds before it pages: Strimzi's rules' 15 minutes, longer than a rolling
# restart of a Connect cluster (each pod's readiness) and a reconciliation's back-off.
OPERATOR_MINUTES = 15

LABELS = {
    "flow": ["metadata", "labels", names.FLOW_LABEL],
    "exported_namespace": ["metadata", "namespace"],
    "ready": ["status", "conditions", "[type=Ready]", "status"],
    "warnings": ["status", "conditions", "[type=Warning]", "status"],
    "deprecated": ["status", "conditions", "[reason=DeprecatedFields]", "type"],
}


def ksm_config(release: Release) -> JSON:
    """kube-state-metrics' CustomResourceStateMetrics for the stack's KafkaConnects and KafkaConnectors."""
    # The newest version the release serves: on the bridge release (0.51.0 serves v1beta2 and v1)
    # that is v1, so that the series stay when the next step's CRDs serve v1 alone, before the
    # `pulumi up` that moves the stack (docs/operations.md, Operator upgrades).
    group, _, version = release.api_versions[-1].partition("/")
    resources = [{
        "groupVersionKind": {"group": group, "version": version, "kind": kind},
        "metricNamePrefix": prefix,
        "metrics": [{
            "name": METRIC,
            "help": f"The operator's status of a {kind} (its Ready, Warning and DeprecatedFields conditions).",
            "each": {"type": "Info", "info": {"labelsFromPath": {"name": ["metadata", "name"]}}},
            # A copy per resource: one dict dumped twice would be a YAML anchor and alias.
            "labelsFromPath": {label: list(path) for label, path in LABELS.items()}}]}
        for kind, prefix in PREFIXES.items()]
    return {"kind": "CustomResourceStateMetrics", "spec": {"resources": resources}}


def ksm_config_text(release: Release) -> str:
    return yamltext.dump(ksm_config(release), sort_keys=False, width=4096)


def operator_rules(stack_plan: StackPlan) -> list[JSON]:
    """NotReady, warnings and deprecated fields of the stack's own KafkaConnects and KafkaConnectors."""
    flows = sorted({f.name for f in stack_plan.flows})
    if not flows:
        return []
    # Every KafkaConnect and KafkaConnector of a flow carries its flow label (names.FLOW_LABEL):
    # the rule lists the stack's flows, as the worker's rules do, not each object (a stack of
    # hundreds of flows keeps its PrometheusRule small).
    selector = f"flow=~{_q(_alternatives(flows))}"

    def either(matchers: str) -> str:
        return " or ".join(
            f'label_replace(max by (flow, exported_namespace, name) ({prefix}_{METRIC}{{{selector}, {matchers}}}), '
            f'"kind", "{kind}", "", "")' for kind, prefix in PREFIXES.items())

    return [
        _alert("KafkaReplicationOperatorNotReady", either('ready!="True"'), OPERATOR_MINUTES, "warning",
               "{{ $labels.kind }} {{ $labels.name }} ({{ $labels.exported_namespace }}) is not Ready",
               "The operator reports {{ $labels.kind }} {{ $labels.name }} not Ready: it does not reconcile it, so "
               "changes deployed since are not applied (a KafkaConnect whose Kafka version the operator refuses "
               "keeps its pods and connectors running as they were). Read the reason in its status "
               "(kubectl -n {{ $labels.exported_namespace }} get {{ $labels.kind }} {{ $labels.name }} -o yaml) "
               "and the operator's log."),
        _alert("KafkaReplicationOperatorWarning", either('warnings="True", deprecated!="Warning"'),
               OPERATOR_MINUTES, "warning",
               "{{ $labels.kind }} {{ $labels.name }} ({{ $labels.exported_namespace }}) has a warning",
               "The operator reports a Warning condition on {{ $labels.kind }} {{ $labels.name }}: a setting it "
               "ignores or changed. Read it in the object's status conditions."),
        _alert("KafkaReplicationOperatorDeprecated", either('deprecated="Warning"'), OPERATOR_MINUTES, "warning",
               "{{ $labels.kind }} {{ $labels.name }} ({{ $labels.exported_namespace }}) uses deprecated fields",
               "The operator reports fields of {{ $labels.kind }} {{ $labels.name }} deprecated: the next operator "
               "release may not accept them. Follow the upgrade runbook for the stack's operator "
               "(docs/operations.md, Operator upgrades) before upgrading it."),
    ]
