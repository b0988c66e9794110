"""Every derived name: one home, nothing else concatenates names.

Names of Kubernetes objects, Kafka Connect internals and Pulumi resources are part of the public
contract: changing one replaces live objects (and, for the Connect group id and internal topics,
loses the Connect cluster's state). Change them only with `aliases` and a migration note.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contract import audit as audit_contract

# The project: the Pulumi project name and the prefix of its config keys.
PROJECT = "kafka-replication"

# The properties file Strimzi writes for every Connect worker (read through the `file` provider).
WORKER_PROPERTIES = "/tmp/strimzi-connect.properties"
CONNECT_REST_PORT = 8083
USE_CONNECTOR_RESOURCES = "strimzi.io/use-connector-resources"
# pulumi-kubernetes' await annotations: what `pulumi up` waits for, and for how long.
WAIT_FOR = "pulumi.com/waitFor"
TIMEOUT_SECONDS = "pulumi.com/timeoutSeconds"
# Server-side apply with force (pulumi-kubernetes' patchForce, await.go): a field of a Strimzi
# resource changed by hand (`kubectl patch`, `kubectl scale`) belongs to that field manager, and
# without force the next `pulumi up` fails on the conflict instead of putting the program's value back.
PATCH_FORCE = "pulumi.com/patchForce"
# A connector config key holding the uids of the Secrets of the source's access material it reads
# (ConnectorPlan.restart_with): rotated material is a replaced Secret, a new uid, a changed
# config, which Strimzi sends and on which Connect restarts the connector and its tasks; they
# then resolve their `${secrets:...}` again (mounted files: SOURCE_FILES_UID). A uid, not a digest of the
# material: nothing in it can be checked against a guessed password.
SOURCE_ACCESS_UID = "kafka-replication.source-access.uid"
# A pod template annotation of the KafkaConnect holding the uids of the Secrets of the target's
# access material (PartPlan.roll_with). The operator watches custom resources, not Secrets: a
# Secret-only change is seen at its next periodic reconciliation (120 s by default), after
# `pulumi up` has returned. A replaced target Secret changes the KafkaConnect instead, which the
# operator reconciles at once, rolling the pods onto the new material.
TARGET_ACCESS_UID = "kafka-replication.io/target-access-uid"
# A pod template annotation of the KafkaConnect holding the uid of the Secret of the source's
# store files (FlowNames.source_files_secret, PartPlan.files_from). Those reach the worker as a
# mounted Secret volume, and the kubelet projects a replaced Secret into a running pod only at its
# next sync (its sync period and cache TTL, a minute or more): connectors restarted at once by
# SOURCE_ACCESS_UID would reopen the old stores and keep them. A replaced files Secret changes the
# KafkaConnect instead, and the operator rolls the pods, which mount the new Secret as they start.
SOURCE_FILES_UID = "kafka-replication.io/source-files-uid"
# A connector config key and a pod template annotation of the KafkaConnect holding the versions of
# the Secrets the team keeps that they read (`sasl.passwordSecret.version`, `tls.secret.version`, as
# `<secret>:<key>=<version>`, comma-separated). The program never reads those Secrets, so it has no
# uid to follow: a changed version changes the connector's config (Strimzi sends it, Connect
# restarts the connector and its tasks, which resolve the Secret afresh) or the pod template (the
# operator rolls the pods at once). No `secret` in the key: the policy pack reads such keys as secrets.
REFERENCED_SECRETS = "kafka-replication.referenced.versions"
REFERENCED_SECRETS_ANNOTATION = "kafka-replication.io/referenced-versions"
CLUSTER_LABEL = "strimzi.io/cluster"
FLOW_LABEL = "kafka-replication.io/flow"
# On a flow's namespace: the aliases of the clusters its connectors read, so that a team's secret
# tooling can select the namespaces a cluster's Secret must reach (a ClusterExternalSecret's
# namespaceSelectors, docs/topology.md#secrets-by-reference).
SOURCE_CLUSTER_LABEL = "kafka-replication.io/source-cluster"
TARGET_CLUSTER_LABEL = "kafka-replication.io/target-cluster"
PART_OF = {"app.kubernetes.io/part-of": "kafka-replication", "app.kubernetes.io/managed-by": "pulumi"}


def flow_labels(flow: str) -> dict[str, str]:
    """The labels of every object of a flow."""
    return {**PART_OF, FLOW_LABEL: flow}


@dataclass(frozen=True)
class ConnectStorage:
    """One of a Connect cluster's identity settings (Kafka DistributedConfig): a new value is a new
    cluster, with empty connector configurations, offsets and statuses."""

    key: str        # the worker property (kafka.strimzi.io/v1beta2 writes it in `spec.config`)
    field: str      # the kafka.strimzi.io/v1 spec field that replaces it (Strimzi 1.x)
    label: str      # as messages say it
    default: str    # what Strimzi sets when a KafkaConnect leaves it out (KafkaConnectConfiguration.DEFAULTS)
    attribute: str  # the FlowNames property holding a Connect cluster's own value

    def of(self, n: FlowNames) -> str:
        value: str = getattr(n, self.attribute)
        return value


CONNECT_STORAGE = (
    ConnectStorage("group.id", "groupId", "group id", "connect-cluster", "group_id"),
    ConnectStorage("config.storage.topic", "configStorageTopic", "config storage topic", "connect-cluster-configs",
                   "config_storage_topic"),
    ConnectStorage("offset.storage.topic", "offsetStorageTopic", "offset storage topic", "connect-cluster-offsets",
                   "offset_storage_topic"),
    ConnectStorage("status.storage.topic", "statusStorageTopic", "status storage topic", "connect-cluster-status",
                   "status_storage_topic"),
)


def connect_identity(spec: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, str]:
    """A KafkaConnect's group id and storage topics as the operator hands them to the worker, by
    worker property: the v1 spec field, else the `config` key, else Strimzi's default
    (KafkaConnectCluster.fromCrd, extractAndRemoveValueFromConfig, 0.49.0 to 0.51.0; before
    0.49 there is no field, and from 1.0 the key is forbidden and the field required). `config`
    is the KafkaConnect's `spec.config` as the operator keeps it (its forbidden keys dropped)."""
    return {s.key: str(spec.get(s.field) or config.get(s.key) or s.default) for s in CONNECT_STORAGE}


# DistributedConfig.SCHEDULED_REBALANCE_MAX_DELAY_MS_CONFIG and its default (5 minutes): how long
# the incremental cooperative assignor holds the tasks of a worker that left (a pod removed or
# restarting) for it; `connect.rebalanceDelaySeconds` sets it.
REBALANCE_DELAY = "scheduled.rebalance.max.delay.ms"
PLUGIN_DISCOVERY = "plugin.discovery"  # the worker's (KIP-898): how it finds its plugins
DEFAULT_REBALANCE_DELAY_MS = 300_000

# Pulumi type tokens of our components: the package is named after the project.
PACKAGE = PROJECT


def component_type(module: str, name: str) -> str:
    return f"{PACKAGE}:{module}:{name}"


# The program's one ReplicationTopology (a URN: change only with `aliases`).
TOPOLOGY_COMPONENT = "replication"


def default_flow_name(source: str, target: str) -> str:
    return f"repl-{source}-{target}"


def resource_name(namespace: str | None, name: str, kubernetes: str | None = None) -> str:
    """Pulumi logical name of a Kubernetes object (kubectl-style `namespace/name`), under its
    Kubernetes cluster's name where the topology names them (the audit's objects repeat in each)."""
    local = f"{namespace}/{name}" if namespace else name
    return f"{kubernetes}/{local}" if kubernetes else local


def kubeconfig_key(kubernetes: str) -> str:
    """The secret config key holding a Kubernetes cluster's kubeconfig (`kubeconfig: secretConfig`)."""
    return f"kubernetes.{kubernetes}.kubeconfig"


def kubeconfig_of(key: str) -> str | None:
    """The Kubernetes cluster whose kubeconfig secret config `key` holds, or None."""
    parts = key.split(".")
    return parts[1] if len(parts) == 3 and key == kubeconfig_key(parts[1]) else None


PROVIDER_PREFIX = "kubernetes-"


def provider_name(kubernetes: str) -> str:
    """The logical name of a Kubernetes cluster's provider (the render reads the cluster back from it)."""
    return PROVIDER_PREFIX + kubernetes


def connect_component(connect: str) -> str:
    """Strimzi's KafkaConnectResources.componentName: the name of a KafkaConnect's pods, their
    service account and, with `-api`, its REST Service."""
    return f"{connect}-connect"


@dataclass(frozen=True)
class FlowNames:
    """The names of one flow's objects, derived from the flow name and the two aliases."""

    flow: str
    source: str  # source cluster alias
    target: str  # target cluster alias
    part: str | None = None  # the Connect cluster's name within a flow split over several

    # -- Kubernetes objects in the namespace of the flow (or of one of its Connect clusters)
    @property
    def namespace(self) -> str:
        return self.connect

    @property
    def connect(self) -> str:
        # An unsplit flow keeps the flow name: its namespace, Connect group id and internal
        # topics must not change when flows gain features.
        return f"{self.flow}-{self.part}" if self.part else self.flow

    @property
    def service_account(self) -> str:
        # Created and named by the Strimzi Cluster Operator: the `-connect` suffix is fixed.
        return connect_component(self.connect)

    @property
    def rest_service(self) -> str:
        return f"{connect_component(self.connect)}-api"

    @property
    def rest_url(self) -> str:
        return f"http://{self.rest_service}.{self.namespace}.svc:{CONNECT_REST_PORT}"

    @property
    def source_configmap(self) -> str:
        return f"source-{self.source}"

    @property
    def source_secret(self) -> str:
        return f"source-{self.source}"

    @property
    def source_files_secret(self) -> str:
        """The Secret of the source's store files, mounted into the Connect pods (volume
        `source_volume`), apart from the source Secret the config providers read: its
        replacement rolls the pods (SOURCE_FILES_UID), a password's does not."""
        return f"source-{self.source}-tls"

    @property
    def source_volume(self) -> str:
        return f"source-{self.source}-tls"

    @property
    def source_mount(self) -> str:
        return f"/mnt/{self.source_volume}"

    def source_file(self, file: str) -> str:
        """Where a file of the source Secret is mounted in the Connect pods."""
        return f"{self.source_mount}/{file}"

    @property
    def target_configmap(self) -> str:
        return f"target-{self.target}"

    @property
    def target_password_secret(self) -> str:
        return f"target-{self.target}-password"

    @property
    def target_ca_secret(self) -> str:
        return f"target-{self.target}-ca"

    # Keys of the target CA Secret: the whole bundle (the connectors' inline PEM: Kafka reads every
    # certificate of it) and one key per certificate, which the KafkaConnect trusts by pattern
    # (some releases read one certificate per key: infra/tools/rehearsal/operator.py `worker`).
    TARGET_CA_BUNDLE = "ca.crt"
    TARGET_CA_CERTIFICATES = "ca-*.crt"

    @property
    def target_client_secret(self) -> str:
        return f"target-{self.target}-client"

    @property
    def replication_configmap(self) -> str:
        """What every connector of the Connect cluster shares (policy, groups; topics if one source)."""
        return "replication"

    def instance_configmap(self, instance: str) -> str:
        """The topic filter of one of several MirrorSourceConnectors."""
        return f"replication-{instance}"

    # -- monitoring: the JMX exporter's rules, in the Connect cluster's namespace. Not under
    # `replication-`: a source instance named `metrics` owns `replication-metrics`.
    @property
    def metrics_configmap(self) -> str:
        return "connect-metrics"

    # -- offsets as code (KafkaConnector spec.listOffsets / spec.alterOffsets)
    @staticmethod
    def offsets_list_configmap(connector: str) -> str:
        """Where the operator writes a connector's listed offsets (it creates and owns it)."""
        return f"{connector}-offsets"

    @staticmethod
    def offsets_alter_configmap(connector: str) -> str:
        """The ConfigMap we write with the offsets to set on a connector."""
        return f"{connector}-offsets-alter"

    @property
    def resource_quota(self) -> str:
        return f"{self.connect}-quota"

    @property
    def role(self) -> str:
        return f"{self.connect}-connector-configuration"

    @property
    def role_binding(self) -> str:
        return self.role

    # -- connectors
    def source_connector(self, instance: str | None = None) -> str:
        return f"{self.connect}-source-{instance}" if instance else f"{self.connect}-source"

    @property
    def checkpoint_connector(self) -> str:
        return f"{self.connect}-checkpoint"

    @property
    def heartbeat_connector(self) -> str:
        return f"{self.connect}{HEARTBEAT_CONNECTOR_SUFFIX}"

    # -- Kafka Connect internals (on the TARGET cluster)
    @property
    def group_id(self) -> str:
        return f"{self.connect}-consumer-group"

    @property
    def offset_storage_topic(self) -> str:
        return f"{self.connect}{STORAGE_SUFFIXES[0]}"

    @property
    def config_storage_topic(self) -> str:
        return f"{self.connect}{STORAGE_SUFFIXES[1]}"

    @property
    def status_storage_topic(self) -> str:
        return f"{self.connect}{STORAGE_SUFFIXES[2]}"

    # -- MirrorMaker 2 internal topics
    @property
    def offset_syncs_topic(self) -> str:
        """On the source cluster (offset-syncs.topic.location defaults to source)."""
        return f"mm2-offset-syncs.{self.target}.internal"

    @property
    def checkpoints_topic(self) -> str:
        """On the target cluster, for both replication policies."""
        return f"{self.source}.checkpoints.internal"


HEARTBEATS_TOPIC = "heartbeats"
# The heartbeat connector's name ends so (FlowNames.heartbeat_connector): its producer writes into
# the source, and what reads "writes to the target" leaves it out by this.
HEARTBEAT_CONNECTOR_SUFFIX = "-heartbeat"

# The loop filter of bidirectional prefixless pairs, named as in the documents.
LOOP_FILTER_TRANSFORM = "FilterReplicatedFromTarget"
LOOP_HEADER_TRANSFORM = "InsertHeader"
LOOP_PREDICATE = "ReplicatedFromTarget"


def loop_header(alias: str) -> str:
    """The header a bidirectional flow puts on every record it copies out of cluster `alias`."""
    return f"replicated-from-{alias}"


def bidirectional_flow_name(base: str, source: str, target: str) -> str:
    """One direction of a bidirectional pair declared once under the name `base`."""
    return f"{base}-{source}-{target}"


DEFAULT_FLOW_BASE = "repl"


# Kafka Connect storage topics: `<connect>` + suffix (offsets, configs, status).
STORAGE_SUFFIXES = ("-offsets-topic", "-config-topic", "-status-topic")


def is_storage_topic(name: str) -> bool:
    return name.endswith(STORAGE_SUFFIXES)


def broker_address(server: str) -> tuple[str, int]:
    """One broker however it is spelled, as the client would connect to it:
    `Host.Example.:09093` and `host.example:9093` are the same (DNS names are case-insensitive,
    a trailing dot is the root, the port is a number), and so are `[::1]:9092`,
    `[0:0:0:0:0:0:0:1]:9092` and `[::FFFF:127.0.0.1]:9092` against `127.0.0.1:9092` (one IP
    address, however written: an IPv4-mapped IPv6 address is the IPv4 address to Java)."""
    host, _, port = server.strip().rpartition(":")
    host = host.lower().rstrip(".")
    literal = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        address = ipaddress.ip_address(literal)
    except ValueError:
        pass
    else:
        mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
        host = str(mapped or address)
    # Kafka's Utils.getPort reads ASCII digits only ([0-9]+).
    return host, int(port) if port.isascii() and port.isdigit() else -1


def topic_prefix(source_alias: str, policy_prefixes: bool = True) -> str:
    """What the replication policy puts before a source topic's name in the target."""
    return f"{source_alias}." if policy_prefixes else ""


def replicated_topic(source_alias: str, topic: str, policy_prefixes: bool = True) -> str:
    """The target topic name of a source topic under the flow's replication policy."""
    return topic_prefix(source_alias, policy_prefixes) + topic


def secret_key(alias: str, item: str) -> str:
    """Pulumi config key (without the project namespace) of a cluster's secret material."""
    return f"{alias}.{item}"


REGISTRY_PASSWORD_KEY = "registry.password"


# -- the replication audit (infra/plan/audit.py, components/audit.py)
# Monitoring (infra/plan/monitoring/): the JMX exporter's rules file, and the stack-level objects
# in `monitoring.namespace` of every Kubernetes cluster hosting flows.
METRICS_CONFIG_KEY = "metrics-config.yml"
MONITORING = "kafka-replication"                   # PodMonitor and PrometheusRule
DASHBOARD_CONFIGMAP = "kafka-replication-dashboard"
KSM_CONFIGMAP = "kafka-replication-kube-state-metrics"  # the operator's view (monitoring/operator.py)
DASHBOARD_LABEL = {"grafana_dashboard": "1"}       # the Grafana sidecar's usual label
GRAFANA_DASHBOARD = "kafka-replication"            # grafana-operator's GrafanaDashboard
CONNECTOR_OFFSETS_ANNOTATION = "strimzi.io/connector-offsets"
# KafkaConnectAssemblyOperator.getConnectorOffsetsConfigMapEntryKey: the key of both offsets ConfigMaps.
OFFSETS_KEY = "offsets.json"
# Which request an offsets patch carries, beside the operator's annotation: it stays on the
# KafkaConnector (the operator removes only its own) until the request leaves the topology, so
# `kubectl get kafkaconnector` shows the last request asked, and the runtime tier acts on each once.
OFFSETS_REQUEST_ANNOTATION = "kafka-replication.io/offsets-request"


def offsets_patch(connector: str, action: str, request: str) -> str:
    """The Pulumi name of an offsets request's patch (under its namespace): one per request, so a
    new request is a new resource and an old one is never applied again."""
    return f"{connector}/offsets-{action}-{request}"

AUDIT = audit_contract.JOB  # the job's one name, shared with spark/ (contract/audit.py)
AUDIT_SELECTOR = {"app.kubernetes.io/name": AUDIT}  # the audit's pods, admitted to Connect REST APIs
# The audit image's interpreter: Spark's python3 images (apache/spark-docker, 4.0.1/scala2.13-
# java17-python3-ubuntu) install Ubuntu's python3 and python3-pip on eclipse-temurin:17-jammy, and
# nothing installs a `python`.
AUDIT_PYTHON = "python3"
AUDIT_CONFIG_DIR = audit_contract.CONFIG_DIR
AUDIT_CONFIG_FILE = audit_contract.CONFIG_FILE
AUDIT_CREDENTIALS_DIR = audit_contract.CREDENTIALS_DIR
AUDIT_REPORTS_DIR = audit_contract.REPORTS_DIR
AUDIT_DRIVER_PORT = 7078
AUDIT_BLOCK_MANAGER_PORT = 7079


@dataclass(frozen=True)
class AuditNames:
    namespace: str

    service_account = AUDIT
    role = AUDIT
    role_binding = AUDIT
    configmap = AUDIT
    cronjob = AUDIT
    reports_claim_default = f"{AUDIT}-reports"

    @staticmethod
    def credentials_secret(alias: str) -> str:
        return f"{AUDIT}-{alias}"

    @staticmethod
    def credentials_dir(alias: str) -> str:
        return f"{AUDIT_CREDENTIALS_DIR}/{alias}"

    @staticmethod
    def rest_policy(connect: str) -> str:
        """The NetworkPolicy, in a flow's namespace, admitting the audit to that Connect REST API."""
        return f"{connect}-audit-rest"


# Namespaces a stack must never create: it owns what it creates, so removing the section or
# destroying the stack would delete them. `default` and the `kube-` prefix are Kubernetes' own
# (Kubernetes docs, Namespaces: "Avoid creating namespaces with the prefix kube-, since it is
# reserved for Kubernetes system namespaces").
SYSTEM_NAMESPACES = ("default",)
SYSTEM_NAMESPACE_PREFIX = "kube-"


def is_system_namespace(name: str) -> bool:
    return name in SYSTEM_NAMESPACES or name.startswith(SYSTEM_NAMESPACE_PREFIX)


# Kubernetes refuses a ConfigMap whose data (keys and values together) exceeds 1 MiB
# (ValidateConfigMap: the sum against core.MaxSecretSize).
CONFIGMAP_MAX_BYTES = 1 << 20
