"""Alerts and dashboards of the flows: a PodMonitor, a PrometheusRule, a Grafana dashboard
ConfigMap and a GrafanaDashboard per Kubernetes cluster hosting flows, in `monitoring.namespace`
(docs/operations.md, sections Alerts and Dashboard).

Pure, like the plan: the objects are dicts with the Prometheus Operator's field names
(monitoring.coreos.com/v1, its CRDs pinned in tools/prometheus-operator/go.mod; grafana-operator's
grafana.integreatly.org/v1beta1, pinned in tools/grafana-operator/go.mod), built from the
stack plan so that the rules watch exactly the connectors that were deployed. Every series and
label the rules and the dashboard read is one the exporter rules of infra/plan/metrics.py produce on
the real worker of each release (tests/data/scrape/*.txt; tests/unit/test_monitoring.py holds them to
it), except the audit's: kube-state-metrics' job series and what spark/report.py pushes.

Thresholds: a flow's `alerts`, field by field, over `monitoring.alerts`, over DEFAULTS. Flows
sharing a threshold share one rule (a regex over their names), so the PrometheusRule grows with
the number of distinct thresholds, not of flows; MAX_RULE_BYTES bounds it.
"""

from infra.plan.monitoring.alerts import (ABSENT_WINDOW_MINUTES, AUDIT_STATUS, BYTE_RATE, CHECKPOINT_LATENCY,
                                          CONNECTOR_STATUS, CONSUMER_CONNECTOR, DEFAULTS, KSM_FAILED, KSM_START,
                                          KSM_SUCCEEDED, LATENCY_MAX, PROGRESS_WINDOW_MINUTES, RECORD_AGE_MAX,
                                          RECORD_COUNT, RECORD_RATE, RECORDS_LAG, RECORDS_POLLED,
                                          REPLICATION_CONSUMER, SOURCE, TASK_STATUS, WORKER_CONNECTORS, Named,
                                          Thresholds, audit_rules, checkpoint_rules, checkpoint_threshold_seconds,
                                          connector_rules, heartbeat_rules, replication_rules,
                                          rule_groups, stack_thresholds, thresholds)
from infra.plan.monitoring.operator import (CONNECT_INFO, CONNECTOR_INFO, KSM_CONFIG_KEY, OPERATOR_MINUTES, ksm_config,
                                            ksm_config_text, operator_rules)
from infra.plan.monitoring.rule import DOCS, REGEX_SPECIAL, regex_literal
from infra.plan.monitoring.dashboard import (ALL_VALUES, DASHBOARD_UID, PANELS, VARIABLE_QUERIES, VARIABLES, dashboard,
                                             dashboard_queries)
from infra.plan.monitoring.objects import (API_VERSION, COMPONENT, DASHBOARD_KEY, GRAFANA_API_VERSION,
                                           GRAFANA_DASHBOARD_IMMUTABLE, MAX_RULE_BYTES, STRIMZI_KIND_LABEL,
                                           GrafanaDashboard, MonitoringObject, MonitoringPlan, PodMonitor,
                                           PrometheusRule, dashboard_configmap, dashboard_text, grafana_dashboard, is_monitoring, owner, plan_monitoring, plan_monitorings,
                                           pod_monitor, problems, prometheus_rule, rules_yaml)

__all__ = ["ABSENT_WINDOW_MINUTES", "ALL_VALUES", "API_VERSION", "AUDIT_STATUS", "BYTE_RATE", "CHECKPOINT_LATENCY",
           "COMPONENT", "CONNECTOR_INFO", "CONNECTOR_STATUS", "CONNECT_INFO", "CONSUMER_CONNECTOR", "DASHBOARD_KEY",
           "DASHBOARD_UID", "DEFAULTS", "DOCS", "GRAFANA_API_VERSION", "GRAFANA_DASHBOARD_IMMUTABLE",
           "GrafanaDashboard", "KSM_CONFIG_KEY", "KSM_FAILED", "KSM_START", "KSM_SUCCEEDED",
           "LATENCY_MAX", "MAX_RULE_BYTES", "MonitoringObject", "MonitoringPlan", "Named", "OPERATOR_MINUTES",
           "PANELS", "PROGRESS_WINDOW_MINUTES", "PodMonitor", "PrometheusRule", "RECORDS_LAG", "RECORDS_POLLED",
           "RECORD_AGE_MAX", "RECORD_COUNT", "RECORD_RATE", "REGEX_SPECIAL", "REPLICATION_CONSUMER", "SOURCE",
           "STRIMZI_KIND_LABEL", "TASK_STATUS", "Thresholds", "VARIABLES", "VARIABLE_QUERIES", "WORKER_CONNECTORS",
           "audit_rules", "checkpoint_rules", "checkpoint_threshold_seconds", "connector_rules", "dashboard",
           "dashboard_configmap", "dashboard_queries", "dashboard_text", "grafana_dashboard", "heartbeat_rules", "is_monitoring", "ksm_config",
           "ksm_config_text", "operator_rules", "owner", "plan_monitoring", "plan_monitorings", "pod_monitor",
           "problems", "prometheus_rule", "regex_literal", "replication_rules", "rule_groups", "rules_yaml",
           "stack_thresholds", "thresholds"]
