"""The topology's fields as Python types, for programs that write their topology in Python.

Generated from the topology's JSON Schema
by `make python-types` (infra/tools/python_types.py); do not edit: tests/unit/test_python_types.py
holds this file to it.
"""

from __future__ import annotations

import typing as t

__all__ = [
    "Alerts", "Audit", "AuditReports", "AuditThresholds", "AuditWindow", "Cluster",
    "ConnectPart", "ConnectSettings", "ConnectorConfig", "ConnectorState", "ConnectorStates",
    "Converter", "Converters", "ExactlyOnce", "Exporter", "Failover", "FailoverProcedure",
    "Flavour", "Flow", "GrafanaOperator", "ImagePullSecret", "KubernetesCluster", "Mechanism",
    "Monitoring", "OffsetsAction", "OffsetsRequest", "Operator", "PartitionOffset", "Policy",
    "Predicate", "Protocol", "PullPolicy", "Readiness", "ResourceQuota", "Resources", "Sasl",
    "SecretKeyRef", "Security", "SourceInstance", "SparkExecutors", "StartFrom",
    "SyncGroupOffsets", "SyncTopicAcls", "SyncTopicConfigs", "TargetConnection", "TasksMax",
    "Tls", "TlsSecretRef", "Topology", "Transform", "Trust",
]


Flavour: t.TypeAlias = t.Literal["csm", "strimzi"]


TargetConnection: t.TypeAlias = t.Literal["workerFile", "clusterObjects"]


Resources = t.TypedDict("Resources", {
    "requests": t.NotRequired[dict[str, str] | None],
    "limits": t.NotRequired[dict[str, str] | None],
})


ConnectSettings = t.TypedDict("ConnectSettings", {
    "replicas": t.NotRequired[int],
    "version": t.NotRequired[str | None],
    "image": t.NotRequired[str | None],
    "resources": t.NotRequired[Resources | None],
    "rebalanceDelaySeconds": t.NotRequired[int | None],
})


# The registry credentials of the Connect pods: a Secret the program creates (`name`, `server`,
# `username`; the password from secret config `registry.password`), or a
# `kubernetes.io/dockerconfigjson` Secret the team keeps in every flow's namespace (`secretName`),
# which the pods name and the program never reads (docs/topology.md#secrets-by-reference).
ImagePullSecret = t.TypedDict("ImagePullSecret", {
    "name": t.NotRequired[str | None],
    "server": t.NotRequired[str | None],
    "username": t.NotRequired[str | None],
    "secretName": t.NotRequired[str | None],
})


# Whether `pulumi up` waits for each KafkaConnect and KafkaConnector to report Ready (Strimzi's
# `Ready` status condition), and for how long, per resource.
Readiness = t.TypedDict("Readiness", {
    "wait": t.NotRequired[bool],
    "timeoutSeconds": t.NotRequired[int],
})


Operator = t.TypedDict("Operator", {
    "flavour": t.NotRequired[Flavour],
    "version": t.NotRequired[str | None],
    "targetConnection": t.NotRequired[TargetConnection | None],
    "connect": t.NotRequired[ConnectSettings],
    "imagePullSecret": t.NotRequired[ImagePullSecret | None],
    "readiness": t.NotRequired[Readiness],
    "autoRestart": t.NotRequired[bool],
})


Protocol: t.TypeAlias = t.Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]


Mechanism: t.TypeAlias = t.Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


# A key of a Secret the team already keeps (External Secrets, Vault, a CSI driver's sync) in the
# namespace of each flow that reads it: the program references it and never reads it, so its value
# enters neither Pulumi config nor state (docs/topology.md#secrets-by-reference).
SecretKeyRef = t.TypedDict("SecretKeyRef", {
    "secretName": str,
    "key": str,
    "version": t.NotRequired[str | None],
})


Sasl = t.TypedDict("Sasl", {
    "mechanism": Mechanism,
    "username": str,
    "passwordSecret": t.NotRequired[SecretKeyRef | None],
})


Trust: t.TypeAlias = t.Literal["pem", "jks", "pkcs12"]


# The cluster's trust and, for mTLS, its client key pair, from one Secret the team already keeps:
# cert-manager's `kubernetes.io/tls` Secret (`ca.crt`, `tls.crt`, `tls.key`) by default, another's
# keys named here (a Strimzi KafkaUser's are `ca.crt`, `user.crt`, `user.key`); with `trust: jks` or
# `pkcs12`, a truststore file and its password instead of the PEM CA (keys `truststore.jks` or
# `truststore.p12`, as cert-manager names its stores, and `truststore.password`). Referenced, never
# read: nothing of it enters Pulumi config or state (docs/topology.md#secrets-by-reference).
TlsSecretRef = t.TypedDict("TlsSecretRef", {
    "secretName": str,
    "ca": t.NotRequired[str],
    "truststore": t.NotRequired[str | None],
    "truststorePassword": t.NotRequired[str],
    "certificate": t.NotRequired[str],
    "key": t.NotRequired[str],
    "version": t.NotRequired[str | None],
})


Tls = t.TypedDict("Tls", {
    "trust": t.NotRequired[Trust],
    "clientCertificate": t.NotRequired[bool],
    "secret": t.NotRequired[TlsSecretRef | None],
})


Security = t.TypedDict("Security", {
    "protocol": t.NotRequired[Protocol],
    "sasl": t.NotRequired[Sasl | None],
    "tls": t.NotRequired[Tls | None],
})


Cluster = t.TypedDict("Cluster", {
    "bootstrapServers": str,
    "security": t.NotRequired[Security],
    "kubernetes": t.NotRequired[str | None],
})


# One step of a Single Message Transform chain (`transforms.<name>.*`).
Transform = t.TypedDict("Transform", {
    "name": str,
    "type": str,
    "config": t.NotRequired[dict[str, str | int | bool]],
    "predicate": t.NotRequired[str | None],
    "negate": t.NotRequired[bool],
    "keepsTopic": t.NotRequired[bool],
})


# A predicate transforms refer to by name (`predicates.<name>.*`).
Predicate = t.TypedDict("Predicate", {
    "name": str,
    "type": str,
    "config": t.NotRequired[dict[str, str | int | bool]],
})


Converter = t.TypedDict("Converter", {
    "type": str,
    "config": t.NotRequired[dict[str, str | int | bool]],
})


# The source connector's converters; ByteArrayConverter (records copied as bytes) when unset.
Converters = t.TypedDict("Converters", {
    "key": t.NotRequired[Converter | None],
    "value": t.NotRequired[Converter | None],
})


ConnectorState: t.TypeAlias = t.Literal["running", "paused", "stopped"]


# One of several MirrorSourceConnectors of a flow, with its own topic filter and settings.
SourceInstance = t.TypedDict("SourceInstance", {
    "name": str,
    "topics": str | list[str],
    "topicsExclude": t.NotRequired[str | list[str]],
    "tasksMax": t.NotRequired[int | None],
    "config": t.NotRequired[dict[str, str | int | bool]],
    "transforms": t.NotRequired[list[Transform] | None],
    "predicates": t.NotRequired[list[Predicate] | None],
    "converters": t.NotRequired[Converters | None],
    "state": t.NotRequired[ConnectorState | None],
})


# `spec.hard` of a ResourceQuota for the Connect cluster's namespace, e.g. {requests.cpu: "4"}. The
# program checks compute resources and pod counts against the Connect pods; any other key (object
# counts, storage) needs `acknowledgeUnchecked`: no tier here admits a pod or counts the objects the
# operator creates.
ResourceQuota = t.TypedDict("ResourceQuota", {
    "hard": dict[str, str | int],
    "acknowledgeUnchecked": t.NotRequired[bool],
})


# One of the Connect clusters a flow is split over, in a namespace of its own.
ConnectPart = t.TypedDict("ConnectPart", {
    "name": str,
    "kubernetes": t.NotRequired[str | None],
    "connect": t.NotRequired[ConnectSettings],
    "resourceQuota": t.NotRequired[ResourceQuota | None],
    "topics": t.NotRequired[str | list[str] | None],
    "topicsExclude": t.NotRequired[str | list[str]],
    "sources": t.NotRequired[list[SourceInstance] | None],
})


Policy: t.TypeAlias = t.Literal["default", "identity"]


SyncGroupOffsets = t.TypedDict("SyncGroupOffsets", {
    "enabled": t.NotRequired[bool],
    "intervalSeconds": t.NotRequired[int | None],
})


# MirrorMaker 2's topic configuration sync: each replicated topic's configuration copied to its
# remote topic, except the properties `exclude` matches (Java regexes, beside MirrorMaker 2's own
# exclusions, infra/plan/connectors.py TOPIC_CONFIG_EXCLUDES). On, as Kafka has it.
SyncTopicConfigs = t.TypedDict("SyncTopicConfigs", {
    "enabled": t.NotRequired[bool],
    "exclude": t.NotRequired[str | list[str]],
    "intervalSeconds": t.NotRequired[int | None],
})


# MirrorMaker 2's topic ACL sync (the source's ALLOW ACLs of replicated topics, as READ ACLs on the
# remote topics). Off unless asked, unlike Kafka: Strimzi's User Operator owns the ACLs of the users
# it manages and removes the ones it did not write, and Strimzi's own MirrorMaker 2 example turns it
# off; on, the connector needs to describe the source's ACLs and to create ACLs on the target.
SyncTopicAcls = t.TypedDict("SyncTopicAcls", {
    "enabled": t.NotRequired[bool],
    "intervalSeconds": t.NotRequired[int | None],
})


ExactlyOnce: t.TypeAlias = t.Literal["disabled", "preparing", "enabled"]


StartFrom: t.TypeAlias = t.Literal["earliest", "latest"]


ConnectorStates = t.TypedDict("ConnectorStates", {
    "source": t.NotRequired[ConnectorState],
    "checkpoint": t.NotRequired[ConnectorState],
    "heartbeat": t.NotRequired[ConnectorState],
})


TasksMax = t.TypedDict("TasksMax", {
    "source": t.NotRequired[int],
    "checkpoint": t.NotRequired[int],
    "heartbeat": t.NotRequired[int],
})


# Extra connector properties, per connector, merged over the planned ones.
ConnectorConfig = t.TypedDict("ConnectorConfig", {
    "source": t.NotRequired[dict[str, str | int | bool]],
    "checkpoint": t.NotRequired[dict[str, str | int | bool]],
    "heartbeat": t.NotRequired[dict[str, str | int | bool]],
})


# Alert thresholds (infra/plan/monitoring/alerts.py). A flow's `alerts` override the stack's
# `monitoring.alerts` field by field; unset everywhere, the defaults of
# infra/plan/monitoring/alerts.py.
Alerts = t.TypedDict("Alerts", {
    "replicationLatencySeconds": t.NotRequired[int | None],
    "recordAgeSeconds": t.NotRequired[int | None],
    "sourceLagRecords": t.NotRequired[int | None],
    "heartbeatAgeSeconds": t.NotRequired[int | None],
    "forMinutes": t.NotRequired[int | None],
})


OffsetsAction: t.TypeAlias = t.Literal["list", "alter", "reset"]


# One partition's offset to set. Source connectors: `topic` (the source topic), `partition`, and
# `offset` the last source offset already replicated (replication resumes after it); the checkpoint
# connector: also `group`, and `topic` as the target cluster names it (`<source>.<topic>` under the
# default policy). `offset: null` deletes the partition's offset.
PartitionOffset = t.TypedDict("PartitionOffset", {
    "topic": str,
    "partition": int,
    "group": t.NotRequired[str | None],
    "offset": int | None,
})


# A one-shot operation on a connector's offsets, run by the operator (Strimzi 0.44 and newer, CSM
# 1.4): changing `request` asks again; the connector must be stopped to alter or reset.
OffsetsRequest = t.TypedDict("OffsetsRequest", {
    "connector": str,
    "action": OffsetsAction,
    "request": str,
    "offsets": t.NotRequired[list[PartitionOffset]],
})


# The documents' failover procedures (docs/operations.md).
FailoverProcedure: t.TypeAlias = t.Literal["continuous", "cutoff", "disaster"]


Failover = t.TypedDict("Failover", {
    "procedure": t.NotRequired[FailoverProcedure],
})


Flow = t.TypedDict("Flow", {
    "source": str,
    "target": str,
    "name": t.NotRequired[str | None],
    "topics": t.NotRequired[str | list[str] | None],
    "topicsExclude": t.NotRequired[str | list[str]],
    "sources": t.NotRequired[list[SourceInstance] | None],
    "connectClusters": t.NotRequired[list[ConnectPart] | None],
    "groups": t.NotRequired[str | list[str]],
    "groupsExclude": t.NotRequired[str | list[str]],
    "replicationPolicy": t.NotRequired[Policy | None],
    "bidirectional": t.NotRequired[bool],
    "aggregation": t.NotRequired[bool],
    "acknowledgeUndecidedFilters": t.NotRequired[bool],
    "acknowledgeReplayedHistory": t.NotRequired[bool],
    "heartbeats": t.NotRequired[bool],
    "maxRestarts": t.NotRequired[int | None],
    "checkpoints": t.NotRequired[bool | None],
    "syncGroupOffsets": t.NotRequired[SyncGroupOffsets],
    "syncTopicConfigs": t.NotRequired[SyncTopicConfigs],
    "syncTopicAcls": t.NotRequired[SyncTopicAcls],
    "exactlyOnce": t.NotRequired[ExactlyOnce],
    "startFrom": t.NotRequired[StartFrom],
    "state": t.NotRequired[ConnectorStates],
    "tasksMax": t.NotRequired[TasksMax],
    "config": t.NotRequired[ConnectorConfig],
    "transforms": t.NotRequired[list[Transform]],
    "predicates": t.NotRequired[list[Predicate]],
    "converters": t.NotRequired[Converters | None],
    "connect": t.NotRequired[ConnectSettings],
    "resourceQuota": t.NotRequired[ResourceQuota | None],
    "alerts": t.NotRequired[Alerts],
    "offsets": t.NotRequired[list[OffsetsRequest]],
    "failover": t.NotRequired[Failover],
    "kubernetes": t.NotRequired[str | None],
})


PullPolicy: t.TypeAlias = t.Literal["Always", "IfNotPresent", "Never"]


# The records each run compares: those with timestamps in [now - grace - lookback, now - grace).
AuditWindow = t.TypedDict("AuditWindow", {
    "lookbackMinutes": t.NotRequired[int],
    "graceMinutes": t.NotRequired[int],
    "bucketSeconds": t.NotRequired[int],
})


# When the audit exits 1 (findings). At-least-once delivery duplicates records, so duplicates are
# counted but tolerated unless a limit is set.
AuditThresholds = t.TypedDict("AuditThresholds", {
    "maxLag": t.NotRequired[int],
    "maxMissing": t.NotRequired[int],
    "maxUnexpected": t.NotRequired[int],
    "maxDuplicates": t.NotRequired[int | None],
    "maxHeartbeatAgeSeconds": t.NotRequired[int],
    "maxCheckpointAgeSeconds": t.NotRequired[int],
})


SparkExecutors = t.TypedDict("SparkExecutors", {
    "instances": t.NotRequired[int],
    "cores": t.NotRequired[int],
    "memory": t.NotRequired[str],
})


# Reports land on a PersistentVolumeClaim the audit creates (or an existing one).
AuditReports = t.TypedDict("AuditReports", {
    "claim": t.NotRequired[str | None],
    "size": t.NotRequired[str],
    "storageClassName": t.NotRequired[str | None],
})


# The replication audit CronJob (spark/): off unless this section is present.
Audit = t.TypedDict("Audit", {
    "schedule": t.NotRequired[str],
    "namespace": t.NotRequired[str],
    "image": t.NotRequired[str],
    "imagePullPolicy": t.NotRequired[PullPolicy | None],
    "activeDeadlineSeconds": t.NotRequired[int | None],
    "window": t.NotRequired[AuditWindow],
    "thresholds": t.NotRequired[AuditThresholds],
    "resources": t.NotRequired[Resources],
    "driverMemory": t.NotRequired[str],
    "executors": t.NotRequired[SparkExecutors | None],
    "reports": t.NotRequired[AuditReports],
    "pushgateway": t.NotRequired[str | None],
})


Exporter: t.TypeAlias = t.Literal["jmxPrometheusExporter", "strimziMetricsReporter"]


# The dashboard as grafana-operator's GrafanaDashboard (grafana.integreatly.org/v1beta1), beside or
# instead of the sidecar's ConfigMap (infra/plan/monitoring/objects.py).
GrafanaOperator = t.TypedDict("GrafanaOperator", {
    "instanceSelector": dict[str, str],
    "allowCrossNamespaceImport": t.NotRequired[bool],
    "folder": t.NotRequired[str | None],
})


# Metrics, alerts and dashboards (infra/plan/monitoring/, docs/operations.md).
Monitoring = t.TypedDict("Monitoring", {
    "metrics": t.NotRequired[bool],
    "exporter": t.NotRequired[Exporter],
    "namespace": t.NotRequired[str],
    "prometheusOperator": t.NotRequired[bool],
    "dashboard": t.NotRequired[bool],
    "grafanaOperator": t.NotRequired[GrafanaOperator | None],
    "labels": t.NotRequired[dict[str, str]],
    "alerts": t.NotRequired[Alerts],
    "runbookBaseUrl": t.NotRequired[str | None],
})


# How Pulumi reaches one Kubernetes cluster: `context` (a context of the kubeconfig of the machine
# running `pulumi up`), or `kubeconfig: secretConfig` (the whole kubeconfig from the secret config
# key `kubernetes.<name>.kubeconfig`, which Pulumi ESC can supply), with `context` then picking one
# of its contexts instead of its current-context.
KubernetesCluster = t.TypedDict("KubernetesCluster", {
    "context": t.NotRequired[str | None],
    "kubeconfig": t.NotRequired[t.Literal["secretConfig"] | None],
})


# A topology document: stacks/<stack>.yaml (docs/topology.md).
Topology = t.TypedDict("Topology", {
    "operator": t.NotRequired[Operator],
    "clusters": dict[str, Cluster],
    "flows": list[Flow],
    "audit": t.NotRequired[Audit | None],
    "monitoring": t.NotRequired[Monitoring],
    "kubernetes": t.NotRequired[dict[str, KubernetesCluster] | None],
})
