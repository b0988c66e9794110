"""The whole document: the operator, the Kafka and Kubernetes clusters, the flows, the audit and
monitoring sections, and the JSON Schema editors validate it with."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from contract.release import RELEASE
from infra.core.cron import shortest_period_seconds
from infra.core.releases import Flavour, Release, find
from infra.topology.schema.flow import Alerts, Cluster, ConnectSettings, Flow, Resources
from infra.topology.schema.values import (DNS1123_LABEL, INT32, MAX_ALIAS, Amount, Count, DnsLabel, DnsSubdomain,
                                          Exporter, ImageRef, LabelKey, LabelValue, MemorySize, NamespaceName,
                                          PullPolicy, Quantity, RegistryUsername, SecretName, TargetConnection, _integer,
                                          _shaped, _Strict)


class ImagePullSecret(_Strict):
    """The registry credentials of the Connect pods: a Secret the program creates (`name`,
    `server`, `username`; the password from secret config `registry.password`), or a
    `kubernetes.io/dockerconfigjson` Secret the team keeps in every flow's namespace
    (`secretName`), which the pods name and the program never reads
    (docs/topology.md#secrets-by-reference)."""
    name: DnsSubdomain | None = None
    server: Annotated[str, _shaped(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[^\s]*)?",
                                   "a registry host such as registry.example.com[:port]", 253)] | None = None
    username: RegistryUsername | None = None
    secretName: SecretName | None = None

    @model_validator(mode="after")
    def _ours_or_kept(self) -> "ImagePullSecret":
        ours = {k: getattr(self, k) for k in ("name", "server", "username")}
        if self.secretName is not None:
            given = [k for k, v in ours.items() if v is not None]
            if given:
                raise ValueError(f"`secretName` (a Secret your team keeps) alone, or `name`, `server` and `username` "
                                 f"(a Secret the program creates), not both: remove {', '.join(given)}")
        elif None in ours.values():
            missing = [k for k, v in ours.items() if v is None]
            raise ValueError(f"`name`, `server` and `username` (a Secret the program creates; missing "
                             f"{', '.join(missing)}), or `secretName` alone (a Secret your team keeps)")
        return self

    @property
    def pod_secret(self) -> str:
        """The Secret the pods name in `imagePullSecrets`."""
        name = self.secretName or self.name
        assert name is not None, "one of them, by the model's own check"
        return name

    @property
    def ours(self) -> bool:
        return self.secretName is None


class Readiness(_Strict):
    """Whether `pulumi up` waits for each KafkaConnect and KafkaConnector to report Ready
    (Strimzi's `Ready` status condition), and for how long, per resource."""
    wait: bool = True
    timeoutSeconds: Annotated[int, _integer(60, 86400)] = 900


class Operator(_Strict):
    flavour: Flavour = Flavour.csm
    # The operator release: a CSM Operator release (`1.2`, `1.4`) for csm, a Strimzi release
    # (`0.48.0`, `1.2.0`) for strimzi; infra/core/releases.py lists them. Default: CSM 1.2 / Strimzi 1.2.0.
    version: Annotated[str, Field(min_length=1, max_length=20)] | None = None
    targetConnection: TargetConnection | None = None  # default per release, see target_connection
    connect: ConnectSettings = ConnectSettings()
    imagePullSecret: ImagePullSecret | None = None
    readiness: Readiness = Readiness()
    # Strimzi restarts failed connectors and tasks by itself (KafkaConnector spec.autoRestart).
    autoRestart: bool = True

    @property
    def release(self) -> Release:
        """The release's row; check() has refused any version without one."""
        found = find(self.flavour, self.version)
        if found is None:
            raise ValueError(f"operator {self.flavour.value} {self.version}: no supported release")
        return found

    @property
    def target_connection(self) -> TargetConnection:
        if self.targetConnection is not None:
            return self.targetConnection
        # From Strimzi 0.46 the worker file holds ${strimzi...:...} references (and from 0.47 no
        # store keys at all); Kafka resolves config variables once, so `${file:...}` would hand
        # connectors unresolved references there. Where the file is literal, the documents' way.
        readable = self.release.worker_file.readable_by_connectors
        return TargetConnection.workerFile if readable else TargetConnection.clusterObjects


class AuditThresholds(_Strict):
    """When the audit exits 1 (findings). At-least-once delivery duplicates records, so
    duplicates are counted but tolerated unless a limit is set."""
    maxLag: Amount = 10000        # records per partition (an upper bound, see spark/offsets.py)
    maxMissing: Amount = 0
    maxUnexpected: Amount = 0
    maxDuplicates: Amount | None = None
    maxHeartbeatAgeSeconds: Count = 300
    # A group's checkpoints are stale when the newest is older than this while its commits on the
    # source are past it (spark/checkpoints.py checkpoint_staleness): ten emit intervals by default.
    maxCheckpointAgeSeconds: Count = 600


class AuditWindow(_Strict):
    """The records each run compares: those with timestamps in [now - grace - lookback, now - grace)."""
    lookbackMinutes: Annotated[int, _integer(1, 60 * 24 * 31)] = 60
    graceMinutes: Annotated[int, _integer(0, 60 * 24 * 31)] = 10   # past offset.flush.interval.ms and lag
    bucketSeconds: Annotated[int, _integer(1, 86400)] = 60  # the counting tier's time windows


class SparkExecutors(_Strict):
    instances: Annotated[int, _integer(1, 1000)] = 2
    cores: Annotated[int, _integer(1, 256)] = 1
    memory: MemorySize = "2g"  # spark.executor.memory


class AuditReports(_Strict):
    """Reports land on a PersistentVolumeClaim the audit creates (or an existing one)."""
    claim: DnsLabel | None = None  # an existing claim; unset: the audit creates `<cronjob>-reports`
    size: Quantity = "1Gi"
    storageClassName: DnsSubdomain | None = None


class Audit(_Strict):
    """The replication audit CronJob (spark/): off unless this section is present."""
    schedule: str = "17 * * * *"
    namespace: NamespaceName = "replication-audit"
    image: ImageRef = f"kafka-replication-audit:{RELEASE}"  # the image the release built (spark/Dockerfile)
    imagePullPolicy: PullPolicy | None = None
    activeDeadlineSeconds: Annotated[int, _integer(60, INT32)] | None = None  # default: 80% of the shortest period
    window: AuditWindow = AuditWindow()
    thresholds: AuditThresholds = AuditThresholds()
    resources: Resources = Resources(requests={"cpu": "1", "memory": "2Gi"}, limits={"memory": "2Gi"})
    driverMemory: MemorySize = "1g"  # spark.driver.memory, within the pod's memory limit
    executors: SparkExecutors | None = None  # unset: Spark in local mode inside the CronJob's pod
    reports: AuditReports = AuditReports()
    pushgateway: Annotated[str, _shaped(r"https?://[^\s]+", "an http(s) URL", 2048)] | None = None

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        shortest_period_seconds(value)  # ValueError names the field at fault
        return value

    @property
    def period_seconds(self) -> int:
        return shortest_period_seconds(self.schedule)

    @property
    def deadline_seconds(self) -> int:
        return self.activeDeadlineSeconds or max(60, self.period_seconds * 4 // 5)


class KubernetesCluster(_Strict):
    """How Pulumi reaches one Kubernetes cluster: `context` (a context of the kubeconfig of the
    machine running `pulumi up`), or `kubeconfig: secretConfig` (the whole kubeconfig from the
    secret config key `kubernetes.<name>.kubeconfig`, which Pulumi ESC can supply), with
    `context` then picking one of its contexts instead of its current-context."""
    context: Annotated[str, Field(min_length=1, max_length=253)] | None = None
    kubeconfig: Literal["secretConfig"] | None = None

    @model_validator(mode="after")
    def _one_way(self) -> "KubernetesCluster":
        if self.context is None and self.kubeconfig is None:
            raise ValueError("context (a kubeconfig context), kubeconfig: secretConfig, or both")
        return self


class GrafanaOperator(_Strict):
    """The dashboard as grafana-operator's GrafanaDashboard (grafana.integreatly.org/v1beta1),
    beside or instead of the sidecar's ConfigMap (infra/plan/monitoring/objects.py)."""
    # The labels of the Grafana resources to import it into (its spec.instanceSelector.matchLabels).
    # At least one: an empty selector matches every Grafana the operator manages.
    instanceSelector: Annotated[dict[LabelKey, LabelValue], Field(min_length=1, max_length=20)]
    # Grafana resources in namespaces other than monitoring.namespace may import it.
    allowCrossNamespaceImport: bool = False
    # The Grafana folder's title (spec.folder); unset: the operator's default, a folder named after
    # the GrafanaDashboard's namespace (GrafanaDashboardReconciler.GetOrCreateFolder, v5.18.0).
    # Grafana keeps a folder's title in its dashboard table's title column, VARCHAR(189).
    folder: Annotated[str, _shaped(r"[^\x00-\x1f\x7f]+", "a folder title without control characters",
                                   189)] | None = None


class Monitoring(_Strict):
    """Metrics, alerts and dashboards (infra/plan/monitoring/, docs/operations.md)."""
    metrics: bool = True                 # spec.metricsConfig on every KafkaConnect
    exporter: Exporter = Exporter.jmxPrometheusExporter
    namespace: NamespaceName = "replication-monitoring"  # of the PodMonitor, PrometheusRule and dashboard
    prometheusOperator: bool = False     # a PodMonitor and a PrometheusRule: needs the Prometheus Operator's CRDs
    dashboard: bool = False              # a Grafana dashboard ConfigMap (the sidecar's grafana_dashboard label)
    grafanaOperator: GrafanaOperator | None = None  # the dashboard as a GrafanaDashboard too
    labels: Annotated[dict[LabelKey, LabelValue], Field(max_length=20)] = {}  # e.g. what Prometheus selects on
    alerts: Alerts = Alerts()
    # Where the team publishes docs/operations.md: each alert's `runbook_url` is it, then `#` and
    # the alert's section. Unset: a `runbook` annotation with the path in this repository.
    runbookBaseUrl: Annotated[str, _shaped(r"https?://[^\s#]+", "an http(s) URL without a #fragment",
                                           2048)] | None = None


class Topology(_Strict):

    operator: Operator = Operator()
    clusters: Annotated[dict[str, Cluster], Field(min_length=1)]
    flows: Annotated[list[Flow], Field(min_length=1)]
    audit: Audit | None = None
    monitoring: Monitoring = Monitoring()
    # The Kubernetes clusters the stack deploys to, by name. Unset: everything goes to the
    # ambient kubeconfig context, as before the section existed.
    kubernetes: Annotated[dict[DnsLabel, KubernetesCluster], Field(max_length=50)] | None = None


def json_schema() -> dict[str, Any]:
    schema = Topology.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "kafka-replication topology"
    # A cluster's alias, as infra/checks/rules/document.py refuses it (a rule there, for its message).
    schema["properties"]["clusters"]["propertyNames"] = {"pattern": f"^(?:{DNS1123_LABEL.pattern})$",
                                                         "maxLength": MAX_ALIAS}
    # The registry Secret: the team's (`secretName`) or ours (`name`, `server`, `username`), as
    # ImagePullSecret refuses anything else.
    null = {"type": "null"}
    schema["$defs"]["ImagePullSecret"]["oneOf"] = [
        {"required": ["secretName"], "properties": {"name": null, "server": null, "username": null,
                                                    "secretName": {"type": "string"}}},
        {"required": ["name", "server", "username"], "properties": {
            "name": {"type": "string"}, "server": {"type": "string"}, "username": {"type": "string"},
            "secretName": null}}]
    # The keys of `tls.secret` its trust reads, and no other, as schema.Tls refuses them.
    def secret_without(*keys: str) -> dict[str, Any]:
        return {"properties": {"secret": {"anyOf": [null, {"not": {"anyOf": [{"required": [k]} for k in keys]}}]}}}
    schema["$defs"]["Tls"]["if"] = {"required": ["trust"], "properties": {"trust": {"enum": ["jks", "pkcs12"]}}}
    schema["$defs"]["Tls"]["then"] = secret_without("ca")
    schema["$defs"]["Tls"]["else"] = secret_without("truststore", "truststorePassword")
    return schema
