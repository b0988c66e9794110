"""The operator releases we support: one table, and everything that depends on the release.

A configuration is right when the Connect worker of the release the user runs would run it, so
each row records what that release's worker does, with the file and tag it comes from:

- which Kafka versions its `KafkaConnect.spec.version` accepts (Strimzi `kafka-versions.yaml` at
  the tag; CSM releases from Cloudera's component pages);
- the CRD API version it serves;
- how it writes the worker's connection to `/tmp/strimzi-connect.properties` (`WorkerFile`);
- the features the plan relies on.

Nothing else in the program compares release or Kafka versions: it asks the row.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from contract.output_types import OutputsOperator

GROUP = "kafka.strimzi.io"


class Flavour(str, Enum):
    csm = "csm"          # Cloudera Streams Messaging Operator: kafka.strimzi.io/v1beta2
    strimzi = "strimzi"  # Strimzi >= 1.0: kafka.strimzi.io/v1, group id and topics as spec fields


class WorkerFile(str, Enum):
    """How a release writes the worker's own connection to the Connect worker's properties file.

    literalStores: Strimzi 0.40-0.45 (`docker-images/kafka-based/kafka/scripts/
    kafka_connect_config_generator.sh`, tags 0.43.0 and 0.45.0): literal values, the password in
    `sasl.jaas.config`, PKCS12 store files under /tmp/kafka with a random password per pod. The
    `producer.`/`consumer.`/`admin.` copies carry no `ssl.truststore.type`.

    pemReferences: Strimzi 0.47 and later (`cluster-operator/.../model/
    KafkaConnectConfigurationBuilder.java`, tags 0.48.0 and 1.2.0): trust and key material as
    inline PEM behind `${strimzisecrets:...}` references, the JAAS password behind
    `${strimzidir:...}`; no store location or password keys at all. The worker resolves them for
    itself, but a connector reading the file through `${file:...}` gets the references verbatim.
    """
    literalStores = "literalStores"
    pemReferences = "pemReferences"

    @property
    def readable_by_connectors(self) -> bool:
        """Whether `${file:<worker file>:KEY}` yields a usable value (Kafka resolves once)."""
        return self is WorkerFile.literalStores


@dataclass(frozen=True)
class Release:
    flavour: Flavour
    version: str                   # as users write it: CSM `1.2`, Strimzi `0.48.0`
    strimzi: str                   # the Strimzi release it is (or ships): its CRDs validate the objects
    kafka: str                     # upstream Kafka version of the default Connect image
    connect_versions: tuple[str, ...]  # accepted `KafkaConnect.spec.version`s, the default last
    api_version: str               # the version the program writes its objects in
    worker_file: WorkerFile
    served: tuple[str, ...] = ()   # every version its CRDs serve, when more than `api_version`

    # Kafka Connect / MirrorMaker 2 features, by the Kafka line every accepted version belongs to.
    @property
    def kafka_line(self) -> tuple[int, int]:
        major, minor, *_ = self.kafka.split(".")
        return int(major), int(minor)

    @property
    def plugin_discovery_key(self) -> bool:
        """`plugin.discovery` of the Connect worker exists from Kafka 3.6.0 (KIP-898), with every
        plugin Kafka ships carrying a ServiceLoader manifest."""
        return self.kafka_line >= (3, 6)

    @property
    def emit_offset_syncs_key(self) -> bool:
        """`emit.offset-syncs.enabled` exists from Kafka 3.9.0 (KIP-1031); 3.8 ignores it."""
        return self.kafka_line >= (3, 9)

    @property
    def heartbeats_replication_key(self) -> bool:
        """`heartbeats.replication.enabled` of MirrorSourceConnector exists from Kafka 4.0."""
        return self.kafka_line >= (4, 0)

    @property
    def source_tag_optional(self) -> bool:
        """Whether MirrorSource MBeans may come without the `source` tag (Kafka before 4.0)."""
        return self.kafka_line < (4, 0)

    # Strimzi features (CRD fields), by the Strimzi release.
    @property
    def strimzi_line(self) -> tuple[int, int]:
        major, minor, *_ = self.strimzi.split(".")
        return int(major), int(minor)

    @property
    def pod_volumes(self) -> bool:
        """`template.pod.volumes` / `connectContainer.volumeMounts` from Strimzi 0.43."""
        return self.strimzi_line >= (0, 43)

    @property
    def auto_restart(self) -> bool:
        """KafkaConnector `spec.autoRestart` from 0.33 (unlimited restarts by default from 0.37)."""
        return self.strimzi_line >= (0, 33)

    @property
    def connector_state(self) -> bool:
        """KafkaConnector `spec.state` from 0.38."""
        return self.strimzi_line >= (0, 38)

    @property
    def creates_connectors_in_state(self) -> bool:
        """From 1.2.0 a KafkaConnector whose `spec.state` is stopped or paused is created in that
        state (KafkaConnectApiImpl.createConnector: `POST /connectors` with `initial_state`;
        CHANGELOG 1.2.0). Before, the operator PUTs its config, which starts it, and stops or
        pauses it only after its status reads RUNNING (AbstractConnectOperator
        createOrUpdateConnector, then updateState): a new connector runs first."""
        return self.strimzi_line >= (1, 2)

    @property
    def offset_management(self) -> bool:
        """KafkaConnector `spec.listOffsets` / `spec.alterOffsets` from 0.44."""
        return self.strimzi_line >= (0, 44)

    @property
    def strimzi_reporter(self) -> bool:
        """KafkaConnect `spec.metricsConfig.type: strimziMetricsReporter` from Strimzi 0.48.0 (its
        KafkaConnect CRD; 0.47.0's enum has jmxPrometheusExporter only)."""
        return self.strimzi_line >= (0, 48)

    @property
    def metrics_enabled_env(self) -> str:
        """The environment variable that turns the JMX exporter on in the Connect container
        (KafkaConnectCluster at 0.43.0/0.45.0; renamed in 0.48.0)."""
        return "KAFKA_CONNECT_METRICS_ENABLED" if self.strimzi_line < (0, 48) else "KAFKA_CONNECT_JMX_EXPORTER_ENABLED"

    @property
    def connect_identity_fields(self) -> bool:
        """Whether a KafkaConnect carries its group id and storage topics as spec fields
        (`groupId`, `*StorageTopic`) rather than `spec.config` keys: in both API versions from 0.49
        (their CRDs at 0.49.0 and 0.51.0; the operator takes the field first, KafkaConnectCluster.
        fromCrd), and the only way in v1 (1.x forbids the keys)."""
        return self.strimzi_line >= (0, 49)

    @property
    def connect_identity_in_config(self) -> bool:
        """Whether a KafkaConnect carries its group id and storage topics as `spec.config` keys:
        the only way before 0.49, and on the bridge releases (0.49 to 0.51) beside the spec fields,
        which the operator takes first (KafkaConnectCluster.fromCrd, extractAndRemoveValueFromConfig
        at 0.51.0), so that a Cluster Operator rolled back to 0.48.0 keeps each Connect cluster on
        its group and topics: 0.48.0's CRD has no such fields (the API server prunes them) and its
        operator reads the keys alone (docs/operations.md#rolling-back-the-operator). Not from 1.0,
        which forbids the keys."""
        return not self.v1_semantics

    @property
    def v1_semantics(self) -> bool:
        """Strimzi 1.0 and later: the metrics reporter's client package, the group id and storage
        topics forbidden in `spec.config`, the service account token as a volume of its own."""
        return self.strimzi_line >= (1, 0)

    @property
    def certificates_in_one_key(self) -> bool:
        """From 0.49 the operator copies every trusted certificate into one `ca.crt` key
        (AbstractConnectOperator.tlsTrustedCertsSecret at 0.49.0, 0.51.0;
        KAFKA_CONNECT_CERTIFICATES_KEY at 1.2.0); 0.48.0 copies every `.crt` key as it is."""
        return self.strimzi_line >= (0, 49)

    @property
    def connector_plugin_version(self) -> bool:
        """From 0.49 a KafkaConnector's `spec.version` is sent, and compared, as
        `connector.plugin.version` (AbstractConnectOperator.asJson and needsReconfiguring at
        0.51.0 and 1.2.0)."""
        return self.strimzi_line >= (0, 49)

    @property
    def plugin_version_dropped(self) -> bool:
        """From 0.50 `connector.plugin.version` is one of the config keys the operator drops
        (AbstractConnectorSpec.FORBIDDEN_PARAMETERS at 0.51.0; 0.49.0 only warned)."""
        return self.strimzi_line >= (0, 50)

    # AbstractConnectorSpec.FORBIDDEN_PARAMETERS: what the operator drops of a KafkaConnector's
    # config (by prefix where `connector_options_by_prefix`, else these exact keys).
    CONNECTOR_OPTIONS_DROPPED = ("name", "connector.class", "tasks.max")

    @property
    def connector_options_by_prefix(self) -> bool:
        """Whether the operator drops a KafkaConnector's `name*`, `connector.class*` and
        `tasks.max*` config keys by prefix (0.43.0: KafkaConnectorConfiguration's
        FORBIDDEN_PREFIXES through AbstractConfiguration.filterForbidden, `startsWith`); from
        0.45.0 only the exact keys (FORBIDDEN_OPTIONS)."""
        return self.strimzi_line < (0, 45)

    @property
    def connect_config_forbidden_prefixes(self) -> tuple[str, ...]:
        """What the operator drops from `KafkaConnect.spec.config` (KafkaConnectSpec.FORBIDDEN_PREFIXES
        through AbstractConfiguration.filterForbidden: `startsWith` on the lowercased key, but for
        the ssl exceptions below): 0.43.0's list, `prometheus.metrics.reporter.` from 0.48.0, and
        the group id and storage topics from 1.0 (they are spec fields there)."""
        found: tuple[str, ...] = ("ssl.", "sasl.", "security.", "listeners", "plugin.path", "rest.",
                                  "bootstrap.servers", "consumer.interceptor.classes", "producer.interceptor.classes")
        if self.strimzi_reporter:
            found += ("prometheus.metrics.reporter.",)
        if self.v1_semantics:
            found += ("group.id", "config.storage.topic", "offset.storage.topic", "status.storage.topic")
        return found

    # KafkaConnectSpec.FORBIDDEN_PREFIX_EXCEPTIONS (0.43.0 to 1.2.0): kept despite `ssl.`.
    CONNECT_CONFIG_EXCEPTIONS = ("ssl.endpoint.identification.algorithm", "ssl.cipher.suites", "ssl.protocol",
                                 "ssl.enabled.protocols")

    @property
    def connect_role_always(self) -> bool:
        """Whether the operator creates the Connect pods' `<name>-connect` Role even when the worker
        reads no Secret through it: 0.48.0 (AbstractConnectOperator.connectRole, unconditional),
        whose rule then has no resourceNames, `get` on every Secret of the namespace. From 0.50
        there is none then (KafkaConnectCluster.generateRole returns null at 0.51.0;
        AuthenticationUtils.generateAuthenticationSecretsRole at 1.2.0); 0.43.0 and 0.45.0 have no
        such Role (the worker reads mounted files)."""
        return self.worker_file is WorkerFile.pemReferences and self.strimzi_line < (0, 50)

    @property
    def password_through_provider(self) -> bool:
        """From 1.1 the worker reads a SASL password through `${strimzisecrets:...}`
        (KafkaConnectConfigurationBuilder at 1.2.0); before, from a file the operator mounts."""
        return self.strimzi_line >= (1, 1)

    @property
    def failed_connector_stops(self) -> bool:
        """From 1.1 a FAILED connector is stopped when its state asks for it (updateState)."""
        return self.strimzi_line >= (1, 1)

    @property
    def api_versions(self) -> tuple[str, ...]:
        """The CRD versions the release serves (its CRDs; the bridge releases serve two)."""
        return self.served or (self.api_version,)

    @property
    def storage_version(self) -> str:
        """The version its CRDs store: the oldest served (v1beta2 up to 0.51; 1.x stores v1)."""
        return self.api_versions[0]

    @property
    def bridge(self) -> bool:
        """A release that serves both API versions: passed through on the way to 1.x."""
        return len(self.api_versions) > 1

    @property
    def default_connect_version(self) -> str:
        return self.connect_versions[-1]

    @staticmethod
    def apache_kafka(connect_version: str) -> str:
        """The Apache Kafka release a Connect version is: itself, or for a CSM build (3.8.0.1.2)
        the Apache release of its line (3.8.0), which stands in for it (pom.xml: Cloudera's
        builds are not published)."""
        return ".".join(connect_version.split(".")[:3])

    @property
    def name(self) -> str:
        return f"{self.flavour.value} {self.version}"

    def outputs(self) -> OutputsOperator:
        return {"flavour": self.flavour.value, "version": self.version, "strimziVersion": self.strimzi,
                "kafkaVersion": self.kafka}


V1BETA2 = f"{GROUP}/v1beta2"
V1 = f"{GROUP}/v1"
# Every version of the group a supported release writes, oldest first. pulumi-kubernetes puts the
# version in a custom resource's type token (`kubernetes:<apiVersion>:<Kind>`), so an object
# written in one and then the other is aliased from the first (components/kube.py): Pulumi updates
# it instead of creating the new one and deleting the old.
API_VERSIONS = (V1BETA2, V1)

SUPPORTED: tuple[Release, ...] = (
    # CSM 1.2 ships Strimzi 0.43.0 and Kafka 3.8.0 (Connect image 3.8.0.1.2).
    Release(Flavour.csm, "1.2", "0.43.0", "3.8.0", ("3.8.0.1.2",), V1BETA2, WorkerFile.literalStores),
    # CSM 1.4 ships Strimzi 0.45 and Kafka 3.9.0 (Connect images 3.9.0.1.3, 3.9.0.1.4).
    Release(Flavour.csm, "1.4", "0.45.0", "3.9.0", ("3.9.0.1.3", "3.9.0.1.4"), V1BETA2,
            WorkerFile.literalStores),
    # Strimzi kafka-versions.yaml at 0.48.0: 4.0.0 and 4.1.0 (default).
    Release(Flavour.strimzi, "0.48.0", "0.48.0", "4.1.0", ("4.0.0", "4.1.0"), V1BETA2,
            WorkerFile.pemReferences),
    # Strimzi 0.51.0, the last bridge release (0.49-0.51 serve both kafka.strimzi.io/v1beta2,
    # stored, and v1): the way from 0.48.0 to 1.x (docs/operations.md#operator-upgrades). Its
    # objects stay v1beta2 but carry the group id and storage topics as the spec fields v1
    # requires (`connect_identity_fields`), so that 1.x can move them to v1 in place: an object
    # written at 0.48.0 is no valid v1 object (no `groupId`), and pulumi-kubernetes' update first
    # writes the live object back unchanged through the new version (a field-manager JSON patch,
    # fixCSAFieldManagers in await.go), which the API server refuses for it (as
    # tests/engine/test_upgrade_runbook.py found). kafka-versions.yaml at 0.51.0: 4.1.0, 4.1.1 and 4.2.0.
    Release(Flavour.strimzi, "0.51.0", "0.51.0", "4.2.0", ("4.1.0", "4.1.1", "4.2.0"), V1BETA2,
            WorkerFile.pemReferences, served=(V1BETA2, V1)),
    # Strimzi kafka-versions.yaml at 1.2.0: 4.2.0-4.3.1 (4.3.1 default); kafka.strimzi.io/v1 only.
    Release(Flavour.strimzi, "1.2.0", "1.2.0", "4.3.1", ("4.2.0", "4.2.1", "4.3.0", "4.3.1"), V1,
            WorkerFile.pemReferences),
)
DEFAULT_VERSION = {Flavour.csm: "1.2", Flavour.strimzi: "1.2.0"}

# Releases users may know and that we refuse, with the reason.
REFUSED = {
    (Flavour.csm, "1.0"): "CSM 1.0 ships Strimzi 0.40, which has no pod volumes (template.pod.volumes from "
                          "0.43): the source cluster's trust and key stores could never be mounted",
    (Flavour.csm, "1.1"): "CSM 1.1 ships Strimzi 0.41, which has no pod volumes (template.pod.volumes from "
                          "0.43): the source cluster's trust and key stores could never be mounted",
}


# The operator moves a deployed stack may make in one `pulumi up` (docs/operations.md#operator-
# upgrades, each proven by tests/engine/test_upgrade_runbook.py): the next release of the line. Any other
# move is refused against the stack's previous outputs (infra/checks/rules/transitions.py): 0.48.0
# serves v1beta2 only and 1.x v1 only, so a jump over the bridge, a move back from v1, or CSM
# (Strimzi 0.43/0.45, v1beta2) to Strimzi 1.x leaves objects stored in a version the next operator
# cannot read; the other moves (back, or across flavours) are not what the runbook covers.
UPGRADES: dict[tuple[Flavour, str], tuple[Flavour, str]] = {
    (Flavour.csm, "1.2"): (Flavour.csm, "1.4"),
    (Flavour.strimzi, "0.48.0"): (Flavour.strimzi, "0.51.0"),
    (Flavour.strimzi, "0.51.0"): (Flavour.strimzi, "1.2.0"),
}


# How a connector is restarted with its tasks by annotation: `strimzi.io/restart=true` restarts the
# connector instance only on every release (AbstractConnectOperator's restart with includeTasks
# false at 0.43.0 and 0.45.0, where the annotation is a boolean; KafkaConnectAssemblyOperator
# reads `includeTasks`/`onlyFailed` arguments from 0.48.0, 1.2.0 the same).
RESTART_WITH_TASKS = ("strimzi.io/restart=includeTasks from Strimzi 0.48; on CSM, strimzi.io/restart=true and "
                      "strimzi.io/restart-task=<id> for each task")


def upgrade_path(start: Release, end: Release) -> list[Release] | None:
    """The releases from `start` to `end` by supported steps (`end` last), None when there is none."""
    path, here = [], (start.flavour, start.version)
    while here in UPGRADES:
        here = UPGRADES[here]
        step = find(*here)
        if step is None:
            return None
        path.append(step)
        if step == end:
            return path
    return None


def find(flavour: Flavour, version: str | None) -> Release | None:
    wanted = version or DEFAULT_VERSION[flavour]
    return next((r for r in SUPPORTED if r.flavour is flavour and r.version == wanted), None)


def supported_versions(flavour: Flavour) -> list[str]:
    return [r.version for r in SUPPORTED if r.flavour is flavour]
