"""A flow as users write it: its clusters' connections and security, its Connect clusters, source
connectors and SMT chains, offsets requests and failover settings."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator, model_validator

from infra.core.names import default_flow_name
from infra.topology.schema.values import (BOOTSTRAP, INT32, INT64, Amount, ClassName, ConfigValue, ConnectorState,
                                          Count, DnsLabel, ExactlyOnce, FailoverProcedure, GroupName, ImageRef,
                                          Mechanism, OffsetsAction, OffsetsRequestId, Policy, PropertyRegexList,
                                          Protocol, Quantity, Regexes, RegexList, ResourceName, SecretKey, SecretName,
                                          SecretVersion, SmtName, StartFrom, TopicName, Trust, Username, _integer,
                                          _shaped, _Strict)


class ConnectorStates(_Strict):
    source: ConnectorState = ConnectorState.running
    checkpoint: ConnectorState = ConnectorState.running
    heartbeat: ConnectorState = ConnectorState.running


class SecretKeyRef(_Strict):
    """A key of a Secret the team already keeps (External Secrets, Vault, a CSI driver's sync) in
    the namespace of each flow that reads it: the program references it and never reads it, so
    its value enters neither Pulumi config nor state (docs/topology.md#secrets-by-reference)."""
    secretName: SecretName
    key: SecretKey
    # A label of the value the Secret holds now, changed with each rotation: the next `pulumi up`
    # then restarts the connectors that read it and rolls the Connect pods that authenticate with it
    # (names.REFERENCED_SECRETS). Without it, nothing the program deploys changes when the value
    # does (docs/operations.md#rotating-a-secret-you-keep).
    version: SecretVersion | None = None


class Sasl(_Strict):
    mechanism: Mechanism
    username: Username
    # The password from an existing Secret instead of secret config `<alias>.password`.
    passwordSecret: SecretKeyRef | None = None


class TlsSecretRef(_Strict):
    """The cluster's trust and, for mTLS, its client key pair, from one Secret the team already
    keeps: cert-manager's `kubernetes.io/tls` Secret (`ca.crt`, `tls.crt`, `tls.key`) by default,
    another's keys named here (a Strimzi KafkaUser's are `ca.crt`, `user.crt`, `user.key`); with
    `trust: jks` or `pkcs12`, a truststore file and its password instead of the PEM CA (keys
    `truststore.jks` or `truststore.p12`, as cert-manager names its stores, and
    `truststore.password`). Referenced, never read: nothing of it enters Pulumi config or state
    (docs/topology.md#secrets-by-reference)."""
    secretName: SecretName
    ca: SecretKey = "ca.crt"            # read with `trust: pem` only
    truststore: SecretKey | None = None  # read with `trust: jks`/`pkcs12` only (None: TRUSTSTORE_KEYS)
    truststorePassword: SecretKey = "truststore.password"  # likewise
    certificate: SecretKey = "tls.crt"  # read with `clientCertificate` only
    key: SecretKey = "tls.key"          # read with `clientCertificate` only
    # As SecretKeyRef.version: a label of the material the Secret holds now, changed with each
    # rotation so that `pulumi up` restarts the connectors and rolls the pods that read it.
    version: SecretVersion | None = None

    def truststore_key(self, trust: Trust) -> str:
        return self.truststore or TRUSTSTORE_KEYS[trust]


# The keys cert-manager writes a certificate's truststore under (its `keystores.jks`/`pkcs12`).
TRUSTSTORE_KEYS = {Trust.jks: "truststore.jks", Trust.pkcs12: "truststore.p12"}
# The keys of `tls.secret` each trust reads; another set there is a setting nothing would read.
_READ_WITH = {"ca": {Trust.pem}, "truststore": {Trust.jks, Trust.pkcs12},
              "truststorePassword": {Trust.jks, Trust.pkcs12}}


class Tls(_Strict):
    trust: Trust = Trust.pem
    clientCertificate: bool = False  # mTLS: `<alias>.clientCert` and `<alias>.clientKey` (PEM)
    # The trust (and the client key pair) from a Secret the team keeps instead of secret config.
    secret: TlsSecretRef | None = None

    @model_validator(mode="after")
    def _read_keys(self) -> "Tls":
        unread = sorted(k for k, trusts in _READ_WITH.items()
                        if self.secret is not None and k in self.secret.model_fields_set and self.trust not in trusts)
        if unread:
            raise ValueError(f"only the `secret` keys `trust: {self.trust.value}` reads (`ca` with `pem`; "
                             "`truststore` and `truststorePassword` with `jks` or `pkcs12`): remove "
                             + ", ".join(f"`{k}`" for k in unread))
        return self


class Security(_Strict):
    protocol: Protocol = Protocol.PLAINTEXT
    sasl: Sasl | None = None
    tls: Tls | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "Security":
        problems = []
        if self.protocol.sasl and self.sasl is None:
            problems.append(f"protocol {self.protocol.value} needs `sasl` (mechanism and username)")
        if not self.protocol.sasl and self.sasl is not None:
            problems.append(f"`sasl` is set but protocol {self.protocol.value} does not use SASL")
        if not self.protocol.tls and self.tls is not None:
            problems.append(f"`tls` is set but protocol {self.protocol.value} does not use TLS")
        if self.tls and self.tls.clientCertificate and self.protocol is not Protocol.SSL:
            problems.append("`tls.clientCertificate` (mTLS) is only used with protocol SSL; "
                            "with SASL_SSL the client authenticates through SASL")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def effective_tls(self) -> Tls | None:
        # TLS protocols without a `tls` block trust a PEM CA certificate, the commonest setup.
        return (self.tls or Tls()) if self.protocol.tls else None

    @property
    def client_items(self) -> list[str]:
        """The credential items (infra/deploy/config.py SECRET_ITEMS) a client of this cluster
        reads, from secret config or by reference: the files the audit and the failover command
        are given (contract/audit.py CREDENTIAL_FILES)."""
        tls = self.effective_tls
        items = ["password"] if self.sasl else []
        if tls:
            items += ["caCert"] if tls.trust is Trust.pem else ["truststore", "truststorePassword"]
            items += ["clientCert", "clientKey"] if tls.clientCertificate else []
        return items

    @property
    def secret_items(self) -> list[str]:
        """The secret config items (`<alias>.<item>`) a client of this cluster needs: those not taken
        by reference."""
        referenced = self.referenced_items
        return [i for i in self.client_items if i not in referenced]

    @property
    def password_secret(self) -> SecretKeyRef | None:
        """The team's Secret the SASL password is read from (`sasl.passwordSecret`), if any."""
        return self.sasl.passwordSecret if self.sasl else None

    @property
    def tls_secret(self) -> TlsSecretRef | None:
        """The team's Secret the TLS material is read from (`tls.secret`), if any."""
        tls = self.effective_tls
        return tls.secret if tls else None

    def _references(self) -> list[tuple[str, SecretKeyRef | TlsSecretRef, str]]:
        """(item, the reference that holds it, its key) of each item taken by reference."""
        out: list[tuple[str, SecretKeyRef | TlsSecretRef, str]] = []
        if self.password_secret is not None:
            out.append(("password", self.password_secret, self.password_secret.key))
        ref, tls = self.tls_secret, self.effective_tls
        if ref is not None and tls is not None:
            if tls.trust is Trust.pem:
                out.append(("caCert", ref, ref.ca))
            else:
                out += [("truststore", ref, ref.truststore_key(tls.trust)),
                        ("truststorePassword", ref, ref.truststorePassword)]
            if tls.clientCertificate:
                out += [("clientCert", ref, ref.certificate), ("clientKey", ref, ref.key)]
        return out

    @property
    def referenced_items(self) -> dict[str, tuple[str, str]]:
        """Per secret config item taken by reference instead, the team's (Secret, key) holding it."""
        return {item: (ref.secretName, key) for item, ref, key in self._references()}

    @property
    def referenced_versions(self) -> dict[tuple[str, str], str]:
        """(Secret, key) -> the declared `version` of each key taken by reference that has one."""
        return {(ref.secretName, key): ref.version for _, ref, key in self._references() if ref.version is not None}


class Cluster(_Strict):
    bootstrapServers: Annotated[str, Field(min_length=1, max_length=4096)]
    security: Security = Security()
    # The Kubernetes cluster (a name under `kubernetes`) this Kafka runs in, if any: flows into
    # it deploy there, and its in-cluster addresses resolve only there.
    kubernetes: DnsLabel | None = None

    @field_validator("bootstrapServers")
    @classmethod
    def _bootstrap(cls, value: str) -> str:
        bad = [s for s in value.split(",") if not BOOTSTRAP.fullmatch(s.strip())]
        if bad:
            raise ValueError(f"{bad!r} is not a comma-separated list of host:port")
        ports = [s.strip() for s in value.split(",") if not 1 <= int(s.strip().rpartition(":")[2]) <= 65535]
        if ports:
            raise ValueError(f"{ports!r}: a port is 1-65535")
        return ",".join(s.strip() for s in value.split(","))


class Resources(_Strict):
    requests: dict[ResourceName, Quantity] | None = None
    limits: dict[ResourceName, Quantity] | None = None


class ConnectSettings(_Strict):
    replicas: Count = 3
    version: Annotated[str, Field(max_length=40)] | None = None  # Kafka version of the Connect image
    image: ImageRef | None = None     # a custom image; operator default when unset
    resources: Resources | None = None
    # The worker's `scheduled.rebalance.max.delay.ms`, in seconds: how long the tasks of a worker
    # that left (a pod removed by a scale-down, restarted, lost) wait for it before the group gives
    # them to the others. Unset: Kafka's 300 s. At most a day.
    rebalanceDelaySeconds: Annotated[int, _integer(0, 86_400)] | None = None


class TasksMax(_Strict):
    source: Count = 3
    checkpoint: Count = 3
    heartbeat: Count = 1


class ConnectorConfig(_Strict):
    """Extra connector properties, per connector, merged over the planned ones."""
    source: dict[str, ConfigValue] = {}
    checkpoint: dict[str, ConfigValue] = {}
    heartbeat: dict[str, ConfigValue] = {}


class SyncGroupOffsets(_Strict):
    enabled: bool = True
    intervalSeconds: Count | None = None


class SyncTopicConfigs(_Strict):
    """MirrorMaker 2's topic configuration sync: each replicated topic's configuration copied to
    its remote topic, except the properties `exclude` matches (Java regexes, beside MirrorMaker
    2's own exclusions, infra/plan/connectors.py TOPIC_CONFIG_EXCLUDES). On, as Kafka has it."""
    enabled: bool = True
    exclude: PropertyRegexList = []
    intervalSeconds: Count | None = None


class SyncTopicAcls(_Strict):
    """MirrorMaker 2's topic ACL sync (the source's ALLOW ACLs of replicated topics, as READ ACLs
    on the remote topics). Off unless asked, unlike Kafka: Strimzi's User Operator owns the ACLs
    of the users it manages and removes the ones it did not write, and Strimzi's own MirrorMaker 2
    example turns it off; on, the connector needs to describe the source's ACLs and to create
    ACLs on the target."""
    enabled: bool = False
    intervalSeconds: Count | None = None


class Transform(_Strict):
    """One step of a Single Message Transform chain (`transforms.<name>.*`)."""
    name: SmtName
    type: ClassName
    config: dict[str, ConfigValue] = {}
    predicate: SmtName | None = None
    negate: bool = False
    keepsTopic: bool = False  # the user's statement that a transform unknown to us keeps the topic


class Predicate(_Strict):
    """A predicate transforms refer to by name (`predicates.<name>.*`)."""
    name: SmtName
    type: ClassName
    config: dict[str, ConfigValue] = {}


class Converter(_Strict):
    type: ClassName
    config: dict[str, ConfigValue] = {}


class Converters(_Strict):
    """The source connector's converters; ByteArrayConverter (records copied as bytes) when unset."""
    key: Converter | None = None
    value: Converter | None = None


class SourceInstance(_Strict):
    """One of several MirrorSourceConnectors of a flow, with its own topic filter and settings."""
    name: DnsLabel
    topics: Regexes
    topicsExclude: RegexList = []
    tasksMax: Count | None = None  # the flow's tasksMax.source when unset
    config: dict[str, ConfigValue] = {}                   # over the flow's config.source
    transforms: list[Transform] | None = None             # the flow's when unset
    predicates: list[Predicate] | None = None
    converters: Converters | None = None
    state: ConnectorState | None = None                   # the flow's state.source when unset


class ResourceQuota(_Strict):
    """`spec.hard` of a ResourceQuota for the Connect cluster's namespace, e.g. {requests.cpu: "4"}.
    The program checks compute resources and pod counts against the Connect pods; any other key
    (object counts, storage) needs `acknowledgeUnchecked`: no tier here admits a pod or counts
    the objects the operator creates."""
    hard: Annotated[dict[Annotated[str, _shaped(r"[a-z0-9]([-a-z0-9./]*[a-z0-9])?",
                                                "a quota name such as requests.cpu or count/pods", 253)],
                         Quantity | Amount], Field(min_length=1)]
    acknowledgeUnchecked: bool = False


class ConnectPart(_Strict):
    """One of the Connect clusters a flow is split over, in a namespace of its own."""
    name: DnsLabel
    kubernetes: DnsLabel | None = None  # where this Connect cluster deploys: the flow's when unset
    connect: ConnectSettings = ConnectSettings()
    resourceQuota: ResourceQuota | None = None
    topics: Regexes | None = None
    topicsExclude: RegexList = []
    sources: Annotated[list[SourceInstance], Field(min_length=1)] | None = None


class Alerts(_Strict):
    """Alert thresholds (infra/plan/monitoring/alerts.py). A flow's `alerts` override the stack's
    `monitoring.alerts` field by field; unset everywhere, the defaults of infra/plan/monitoring/alerts.py."""
    replicationLatencySeconds: Count | None = None  # record produced at the source until acked by the target
    recordAgeSeconds: Count | None = None           # record's age when the source connector reads it
    sourceLagRecords: Amount | None = None          # the source connector's consumer lag per partition
    heartbeatAgeSeconds: Count | None = None        # no heartbeat replicated for this long
    forMinutes: Annotated[int, _integer(1, 1440)] | None = None  # how long a condition holds before it fires


class PartitionOffset(_Strict):
    """One partition's offset to set. Source connectors: `topic` (the source topic), `partition`,
    and `offset` the last source offset already replicated (replication resumes after it); the
    checkpoint connector: also `group`, and `topic` as the target cluster names it (`<source>.<topic>`
    under the default policy). `offset: null` deletes the partition's offset."""
    topic: TopicName
    partition: Annotated[int, _integer(0, INT32)]
    group: GroupName | None = None
    offset: Annotated[int, _integer(0, INT64)] | None


class OffsetsRequest(_Strict):
    """A one-shot operation on a connector's offsets, run by the operator (Strimzi 0.44 and newer,
    CSM 1.4): changing `request` asks again; the connector must be stopped to alter or reset."""
    connector: Annotated[str, Field(min_length=1, max_length=253)]  # a KafkaConnector of this flow, by name
    action: OffsetsAction
    request: OffsetsRequestId
    offsets: Annotated[list[PartitionOffset], Field(max_length=10_000)] = []  # alter only


class Failover(_Strict):
    procedure: FailoverProcedure = FailoverProcedure.cutoff


class Flow(_Strict):
    source: str
    target: str
    name: str | None = None  # default repl-<source>-<target>
    # The topic filter: `topics` (one MirrorSourceConnector), `sources` (several in one Connect
    # cluster) or `connectClusters` (split over several Connect clusters): exactly one of them.
    topics: Regexes | None = None
    topicsExclude: RegexList = []
    sources: Annotated[list[SourceInstance], Field(min_length=1)] | None = None
    connectClusters: Annotated[list[ConnectPart], Field(min_length=1)] | None = None
    groups: Regexes = [".*"]
    groupsExclude: RegexList = []
    replicationPolicy: Policy | None = None  # default, or identity for bidirectional pairs
    bidirectional: bool = False  # also replicate target -> source, prefixless, with the loop filter
    aggregation: bool = False    # identity fan-in: may write the same target topics as other such flows
    # Deploy even if a topic-filter guardrail cannot decide within its budget (docs/guardrails.md).
    acknowledgeUndecidedFilters: bool = False
    # Start an identity flow that reverses a deployed one from the earliest offsets anyway,
    # copying the old target's retained history back (docs/operations.md#controlled-failback).
    acknowledgeReplayedHistory: bool = False
    heartbeats: bool = True
    # How many times the operator restarts a failed connector or task of the flow before it stops
    # trying (KafkaConnector spec.autoRestart.maxRestarts, every supported release); unset:
    # without limit, on its back-off (docs/operations.md#a-failed-task).
    maxRestarts: Annotated[int, _integer(1, INT32)] | None = None
    checkpoints: bool | None = None  # true, or false for bidirectional pairs
    syncGroupOffsets: SyncGroupOffsets = SyncGroupOffsets()
    syncTopicConfigs: SyncTopicConfigs = SyncTopicConfigs()
    syncTopicAcls: SyncTopicAcls = SyncTopicAcls()
    exactlyOnce: ExactlyOnce = ExactlyOnce.disabled
    startFrom: StartFrom = StartFrom.earliest
    state: ConnectorStates = ConnectorStates()
    tasksMax: TasksMax = TasksMax()
    config: ConnectorConfig = ConnectorConfig()
    transforms: list[Transform] = []
    predicates: list[Predicate] = []
    converters: Converters | None = None
    connect: ConnectSettings = ConnectSettings()
    resourceQuota: ResourceQuota | None = None
    alerts: Alerts = Alerts()
    offsets: Annotated[list[OffsetsRequest], Field(max_length=100)] = []
    failover: Failover = Failover()
    # Where the flow deploys (a name under `kubernetes`): the target Kafka's when unset.
    kubernetes: DnsLabel | None = None

    @property
    def flow_name(self) -> str:
        return self.name or default_flow_name(self.source, self.target)

    @property
    def policy(self) -> Policy:
        if self.replicationPolicy is not None:
            return self.replicationPolicy
        return Policy.identity if self.bidirectional else Policy.default

    @property
    def with_checkpoints(self) -> bool:
        return (not self.bidirectional) if self.checkpoints is None else self.checkpoints

    def instances(self) -> list[tuple[str, SourceInstance]]:
        """(field path, instance) of every named source connector, in declaration order."""
        found = [(f"sources[{j}]", s) for j, s in enumerate(self.sources or [])]
        found += [(f"connectClusters[{i}].sources[{j}]", s) for i, part in enumerate(self.connectClusters or [])
                  for j, s in enumerate(part.sources or [])]
        return found
