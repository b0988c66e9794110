"""The stack topology: Kafka clusters by alias, replication flows between them, operator settings.

This is the only place user input is parsed. Everything downstream (plan, components, outputs)
receives a validated `Topology` and may assume it is consistent. Field names are the ones users
see in `stacks/<stack>.yaml`; `docs/topology.md` documents each of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, ValidationError,
                      field_validator, model_validator)

from infra import guardrails, jregex, reading
from infra.cron import shortest_period_seconds
from infra.errors import Problem, TopologyError, in_file_order
from infra.names import (DEFAULT_FLOW_BASE, LOOP_FILTER_TRANSFORM, LOOP_HEADER_TRANSFORM, LOOP_PREDICATE,
                         FlowNames, bidirectional_flow_name, default_flow_name)
from infra.releases import REFUSED, Flavour, Release, find, supported_versions
from infra.topics import DEFAULT_TOPICS_EXCLUDE

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# A flow's name becomes its namespace, its Connect cluster name and a prefix of the Connect
# group id and internal topics; Strimzi derives longer names from it (`<name>-connect-api`,
# pod names with a hash), so it stays well under the 63 characters of a label.
MAX_FLOW_NAME = 40
# Aliases end up in topic names (`<alias>.<topic>`) and in Kubernetes object names.
MAX_ALIAS = 30
BOOTSTRAP = re.compile(r"^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$")
# Connector properties the program owns: set by the plan, never by `config` overrides.
# Under these prefixes only the connection keys are owned (compression, batch sizes... are free).
MANAGED_PREFIXES = ("source.cluster.", "target.cluster.", "producer.override.")
CONNECTION_KEYS = ("bootstrap.servers", "security.protocol", "sasl.", "ssl.")
MANAGED_KEYS = frozenset({
    "connector.class", "tasks.max", "topics", "topics.exclude", "groups", "groups.exclude",
    "replication.policy.class", "source.cluster.alias", "target.cluster.alias",
    "source.consumer.auto.offset.reset", "source.consumer.isolation.level",  # startFrom, exactlyOnce
})
# Set by the typed fields, not as raw properties.
SMT_PREFIXES = ("transforms.", "predicates.")
CONVERTER_PREFIXES = ("key.converter", "value.converter", "header.converter")
# Set by the program in bidirectional pairs (the loop filter needs them).
BIDIRECTIONAL_KEYS = frozenset({"emit.offset-syncs.enabled"})
MAX_FILTERS = 500  # regexes in one topics/groups list
SECRET_LIKE = re.compile(r"(password|jaas|secret|\.key$|credentials)", re.IGNORECASE)


# Values the platform reads, refused here in the platform's terms rather than at deploy time.
INT32 = 2**31 - 1  # Kubernetes and Kafka integer fields are 32-bit


def _integer(low: int, high: int):
    """An integer in [low, high], said in those words (YAML may hand over 1e30 or true)."""
    def check(value):
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(f"an integer from {low} to {high}")
        try:
            number = int(value) if not isinstance(value, float) or value.is_integer() else None
        except (ValueError, OverflowError):
            number = None
        if number is None or not low <= number <= high:
            raise ValueError(f"an integer from {low} to {high}")
        return number
    return BeforeValidator(check)


def _shaped(pattern: str, description: str, longest: int):
    """A string of a given shape, refused with a description users read (never the regex)."""
    compiled = re.compile(pattern)

    def check(value):
        if not isinstance(value, str) or not value or len(value) > longest or not compiled.fullmatch(value):
            raise ValueError(f"{description} (at most {longest} characters)")
        return value
    return BeforeValidator(check)


Count = Annotated[int, _integer(1, INT32)]
Amount = Annotated[int, _integer(0, INT32)]
DnsSubdomain = Annotated[str, _shaped(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
                                      "a Kubernetes object name: lowercase letters, digits, '-' and '.'", 253)]
# An OCI image reference as the container runtime parses it (registry[:port]/path[:tag][@digest]).
ImageRef = Annotated[str, _shaped(
    r"(?:[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]{1,5})?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?",
    "an image reference such as registry.example.com/team/image:1.0 (lowercase path, optional tag and digest)",
    512)]
# A JVM / Spark memory size (JavaUtils.byteStringAs): one token, never split into arguments.
MemorySize = Annotated[str, _shaped(r"[1-9][0-9]{0,8}([kmgtpKMGTP][bB]?|[bB])?",
                                    "a JVM memory size such as 512m or 2g", 12)]
# A SASL username lands inside a JAAS line `username="..."`: no quote, backslash or control character.
Username = Annotated[str, _shaped(r'[^"\\\x00-\x1f\x7f]+',
                                  "a username without quotes, backslashes or control characters (line breaks)", 256)]


class PullPolicy(str, Enum):
    Always = "Always"
    IfNotPresent = "IfNotPresent"
    Never = "Never"


_SUFFIXES = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
             "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")


def quantity(text: str) -> float:
    """A Kubernetes resource quantity (`500m`, `4Gi`, `2`) as a number."""
    match = _QUANTITY.match(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a quantity such as 500m, 2 or 4Gi")
    return float(match.group(1)) * _SUFFIXES[match.group(2) or ""]


def _quantity_value(value: str) -> str:
    quantity(value)  # ValueError with the expected form
    return value


# A Kubernetes resource quantity (`500m`, `2`, `4Gi`), and a resource name (`cpu`, `memory`,
# `example.com/gpu`).
Quantity = Annotated[str, Field(max_length=64), AfterValidator(_quantity_value)]
ResourceName = Annotated[str, _shaped(r"([a-z0-9.-]+/)?[a-z0-9]([-a-z0-9._]*[a-z0-9])?",
                                      "a resource name such as cpu, memory or example.com/gpu", 253)]


class _Strict(BaseModel):
    # Unknown keys are errors: a typo must never be silently ignored.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class TargetConnection(str, Enum):
    # Where connectors read the TARGET cluster's connection properties from.
    workerFile = "workerFile"          # ${file:/tmp/strimzi-connect.properties:...}, as documented
    clusterObjects = "clusterObjects"  # the target ConfigMap/Secrets of the flow namespace


class Protocol(str, Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def tls(self) -> bool:
        return self in (Protocol.SSL, Protocol.SASL_SSL)

    @property
    def sasl(self) -> bool:
        return self in (Protocol.SASL_PLAINTEXT, Protocol.SASL_SSL)


class Mechanism(str, Enum):
    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"


class Trust(str, Enum):
    pem = "pem"        # a PEM CA certificate (secret config `<alias>.caCert`)
    jks = "jks"        # a JKS truststore file (base64 in `<alias>.truststore`) and its password
    pkcs12 = "pkcs12"  # a PKCS12 truststore file (base64 in `<alias>.truststore`) and its password


class Policy(str, Enum):
    default = "default"    # DefaultReplicationPolicy: replicated topics are `<source alias>.<topic>`
    identity = "identity"  # IdentityReplicationPolicy: prefixless, topic names unchanged


class ExactlyOnce(str, Enum):
    # exactly.once.source.support of the flow's Connect workers; an existing Connect cluster goes
    # disabled -> preparing -> enabled (the documents' two-step rollout).
    disabled = "disabled"
    preparing = "preparing"
    enabled = "enabled"


class StartFrom(str, Enum):
    earliest = "earliest"  # MirrorSourceConnector's default: at-least-once from the start
    latest = "latest"      # new partitions from their end: breaks at-least-once


class ConnectorState(str, Enum):
    running = "running"
    paused = "paused"
    stopped = "stopped"


class ConnectorStates(_Strict):
    source: ConnectorState = ConnectorState.running
    checkpoint: ConnectorState = ConnectorState.running
    heartbeat: ConnectorState = ConnectorState.running


class Sasl(_Strict):
    mechanism: Mechanism
    username: Username


class Tls(_Strict):
    trust: Trust = Trust.pem
    clientCertificate: bool = False  # mTLS: `<alias>.clientCert` and `<alias>.clientKey` (PEM)


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
    def secret_items(self) -> list[str]:
        """The secret config items (`<alias>.<item>`, infra/config.py SECRET_ITEMS) a client of
        this cluster needs."""
        tls = self.effective_tls
        items = ["password"] if self.sasl else []
        if tls:
            items += ["caCert"] if tls.trust is Trust.pem else ["truststore", "truststorePassword"]
            items += ["clientCert", "clientKey"] if tls.clientCertificate else []
        return items


class Cluster(_Strict):
    bootstrapServers: Annotated[str, Field(min_length=1, max_length=4096)]
    security: Security = Security()

    @field_validator("bootstrapServers")
    @classmethod
    def _bootstrap(cls, value: str) -> str:
        bad = [s for s in value.split(",") if not BOOTSTRAP.match(s.strip())]
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


class TasksMax(_Strict):
    source: Count = 3
    checkpoint: Count = 3
    heartbeat: Count = 1


def _no_reference(value):
    if isinstance(value, float) or not isinstance(value, (str, int, bool)):
        raise ValueError("a string, an integer or true/false")
    if isinstance(value, str) and "${" in value:
        raise ValueError("a value without ${...}: config-provider references are the program's own (cluster "
                         "connections and secrets); in a connector or SMT setting one could read any file or "
                         "Secret the Connect worker can, and an SMT would stamp it on every record")
    return value


# Connector, SMT, predicate and converter settings: plain values only.
ConfigValue = Annotated[str | int | bool, BeforeValidator(_no_reference)]
DnsLabel = Annotated[str, _shaped(DNS1123_LABEL.pattern.strip("^$"),
                                  "lowercase letters, digits and '-' (DNS-1123), starting and ending alphanumeric", 30)]
# Kafka splits `transforms`/`predicates` on commas and uses the names inside property keys.
SmtName = Annotated[str, _shaped(r"[A-Za-z][A-Za-z0-9_-]*", "a name of letters, digits, '_' and '-', starting "
                                 "with a letter", 60)]
ClassName = Annotated[str, _shaped(r"[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)*",
                                   "a Java class name such as org.apache.kafka.connect.transforms.InsertField$Value",
                                   300)]


class ConnectorConfig(_Strict):
    """Extra connector properties, per connector, merged over the planned ones."""
    source: dict[str, ConfigValue] = {}
    checkpoint: dict[str, ConfigValue] = {}
    heartbeat: dict[str, ConfigValue] = {}


class SyncGroupOffsets(_Strict):
    enabled: bool = True
    intervalSeconds: Count | None = None


def _as_list(value: Any) -> Any:
    # A single regex may be written as a string.
    return [value] if isinstance(value, str) else value


def _check_regexes(value: list[str]) -> list[str]:
    """Each item is a Java regex (Kafka compiles the list joined with '|') that the guardrails'
    automata model exactly (infra/jregex.py); Kafka splits the property on commas and trims
    the whitespace around them."""
    bad = []
    for item in value:
        if "," in item:
            bad.append(f"{item!r}: one regex per list item (Kafka splits the list on commas)")
        elif item != item.strip():
            bad.append(f"{item!r}: no leading or trailing whitespace (Kafka trims it)")
        else:
            try:
                jregex.parse(item)
            except jregex.RegexError as exc:
                bad.append(f"{item!r} is not a valid Java regex ({exc})")
            except jregex.Unsupported as exc:
                bad.append(f"{item!r} uses {exc}, which the topology checks cannot model exactly; "
                           "rewrite it without that construct")
    if not bad:
        try:
            jregex.compile_filter(tuple(value))  # the list as Kafka joins it, within our bounds
        except (jregex.RegexError, jregex.Unsupported) as exc:
            bad.append(f"the list as Kafka joins it: {exc}")
    if len(value) > MAX_FILTERS:
        bad.append(f"{len(value)} filters: at most {MAX_FILTERS} per list")
    if bad:
        raise ValueError("; ".join(bad))
    return value


# Topic and group filters: a single regex may be written as a string; each item must compile.
RegexList = Annotated[list[Annotated[str, Field(min_length=1)]], BeforeValidator(_as_list),
                      AfterValidator(_check_regexes)]
Regexes = Annotated[RegexList, Field(min_length=1)]


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
    """`spec.hard` of a ResourceQuota for the Connect cluster's namespace, e.g. {requests.cpu: "4"}."""
    hard: Annotated[dict[Annotated[str, _shaped(r"[a-z0-9]([-a-z0-9./]*[a-z0-9])?",
                                                "a quota name such as requests.cpu or count/pods", 253)],
                         Quantity | Amount], Field(min_length=1)]


class ConnectPart(_Strict):
    """One of the Connect clusters a flow is split over, in a namespace of its own."""
    name: DnsLabel
    connect: ConnectSettings = ConnectSettings()
    resourceQuota: ResourceQuota | None = None
    topics: Regexes | None = None
    topicsExclude: RegexList = []
    sources: Annotated[list[SourceInstance], Field(min_length=1)] | None = None


@dataclass(frozen=True)
class SourceSpec:
    """A MirrorSourceConnector as planned: instance settings over the flow's."""
    name: str | None  # None: the flow's only source connector
    topics: tuple[str, ...]
    user_exclude: tuple[str, ...]     # the user's, which the guardrails reason about
    storage_exclude: tuple[str, ...]  # Connect storage topics on the target (identity flows)
    tasks: int
    config: dict
    transforms: tuple[Transform, ...]
    predicates: tuple[Predicate, ...]
    converters: Converters | None
    state: ConnectorState
    where: str  # the field path users wrote it under

    @property
    def topics_exclude(self) -> tuple[str, ...]:
        """The excludes as rendered into `topics.exclude`: the user's, then the storage topics."""
        return self.user_exclude + self.storage_exclude

    @property
    def kafka_topics_exclude(self) -> tuple[str, ...]:
        """The excludes the connector runs with. Setting `topics.exclude` replaces Kafka's
        default excludes, so they are rendered after ours; without it they apply alone."""
        return self.topics_exclude + DEFAULT_TOPICS_EXCLUDE


@dataclass(frozen=True)
class PartSpec:
    """A Connect cluster of a flow as planned."""
    name: str | None  # None: the flow is not split
    connect: ConnectSettings
    quota: ResourceQuota | None
    sources: tuple[SourceSpec, ...]
    heartbeat: bool  # the flow's heartbeat connector runs here
    where: str


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
    heartbeats: bool = True
    checkpoints: bool | None = None  # true, or false for bidirectional pairs
    syncGroupOffsets: SyncGroupOffsets = SyncGroupOffsets()
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

    # Set on the two directions a bidirectional declaration expands into (Topology._expand).
    _partner: str | None = PrivateAttr(None)
    _declared: int | None = PrivateAttr(None)

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

    @property
    def partner(self) -> str | None:
        """The other direction's flow name, for a direction of a bidirectional pair."""
        return self._partner

    def source_spec(self, instance: SourceInstance | None, topics: list[str], exclude: list[str],
                    where: str, storage: tuple[str, ...] = ()) -> SourceSpec:
        pick = (lambda attr, default: default if instance is None or getattr(instance, attr) is None
                else getattr(instance, attr))
        return SourceSpec(
            name=instance.name if instance else None,
            topics=tuple(topics), user_exclude=tuple(exclude),
            storage_exclude=tuple(t for t in storage if t not in exclude),
            tasks=pick("tasksMax", self.tasksMax.source),
            config={**self.config.source, **(instance.config if instance else {})},
            transforms=tuple(pick("transforms", self.transforms)),
            predicates=tuple(pick("predicates", self.predicates)),
            converters=pick("converters", self.converters),
            state=pick("state", self.state.source),
            where=where)

    def instances(self) -> list[tuple[str, SourceInstance]]:
        """(field path, instance) of every named source connector, in declaration order."""
        found = [(f"sources[{j}]", s) for j, s in enumerate(self.sources or [])]
        found += [(f"connectClusters[{i}].sources[{j}]", s) for i, part in enumerate(self.connectClusters or [])
                  for j, s in enumerate(part.sources or [])]
        return found


class ImagePullSecret(_Strict):
    name: DnsSubdomain
    server: Annotated[str, _shaped(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[^\s]*)?",
                                   "a registry host such as registry.example.com[:port]", 253)]
    username: Username
    # the password comes from secret config `registry.password`


class Operator(_Strict):
    flavour: Flavour = Flavour.csm
    # The operator release: a CSM Operator release (`1.2`, `1.4`) for csm, a Strimzi release
    # (`0.48.0`, `1.2.0`) for strimzi; infra/releases.py lists them. Default: CSM 1.2 / Strimzi 1.2.0.
    version: Annotated[str, Field(min_length=1, max_length=20)] | None = None
    targetConnection: TargetConnection | None = None  # default per release, see target_connection
    connect: ConnectSettings = ConnectSettings()
    imagePullSecret: ImagePullSecret | None = None

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
    namespace: DnsLabel = "replication-audit"
    image: ImageRef = "kafka-replication-audit:0.1.0"
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


class Topology(_Strict):
    operator: Operator = Operator()
    clusters: Annotated[dict[str, Cluster], Field(min_length=1)]
    flows: Annotated[list[Flow], Field(min_length=1)]
    audit: Audit | None = None

    _directed: list[Flow] = PrivateAttr(default_factory=list)
    _warnings: list[str] = PrivateAttr(default_factory=list)  # from guardrails that could not decide
    # parts() per flow object: a declared bidirectional flow and its forward direction share a
    # name, so the cache is keyed by identity (every flow lives as long as the topology).
    _parts: dict[int, list[PartSpec]] = PrivateAttr(default_factory=dict)
    _storage: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)  # storage_topics per alias

    @model_validator(mode="after")
    def _expand(self) -> "Topology":
        directed = []
        for index, flow in enumerate(self.flows):
            if flow.bidirectional:
                base = flow.name or DEFAULT_FLOW_BASE
                there = bidirectional_flow_name(base, flow.source, flow.target)
                back = bidirectional_flow_name(base, flow.target, flow.source)
                # One declaration, two directions: every setting is shared, so the pair is
                # symmetric by construction (plan.check_symmetry proves it on the output).
                forward = flow.model_copy(update={"name": there})
                reverse = flow.model_copy(update={"name": back, "source": flow.target, "target": flow.source})
                forward._partner, reverse._partner = back, there
                pair = [forward, reverse]
            else:
                pair = [flow.model_copy()]
            for f in pair:
                f._declared = index
                directed.append(f)
        # Everything downstream iterates flows in this order: output bytes do not depend on
        # the order of flows in the file.
        self._directed = sorted(directed, key=lambda f: f.flow_name)
        return self

    def sorted_flows(self) -> list[Flow]:
        """Every flow as deployed (a bidirectional declaration is two), sorted by name."""
        return self._directed

    def where(self, flow: Flow) -> str:
        """How problems name a flow: its place in the file and its name."""
        index = flow._declared
        declared = self.flows[index]
        shown = flow.flow_name if declared.flow_name == flow.flow_name else f"{declared.flow_name}: {flow.flow_name}"
        return f"flows[{index}] ({shown})"

    def connect_settings(self, flow: Flow, part: ConnectPart | None = None) -> ConnectSettings:
        """Connect settings: operator defaults < flow < Connect cluster part (explicit values win)."""
        merged = self.operator.connect.model_dump(exclude_unset=True)
        merged.update(flow.connect.model_dump(exclude_unset=True))
        if part is not None:
            merged.update(part.connect.model_dump(exclude_unset=True))
        return ConnectSettings.model_validate(merged)

    def parts(self, flow: Flow) -> list[PartSpec]:
        """The flow's Connect clusters and their source connectors, sorted by name (stable
        whatever the order in the file). The flow's one heartbeat connector runs in the first:
        a second emitter for the same alias pair would only double the heartbeats."""
        if id(flow) not in self._parts:
            self._parts[id(flow)] = self._plan_parts(flow)
        return self._parts[id(flow)]

    def storage_topics(self, alias: str) -> tuple[str, ...]:
        """The storage topics of every Connect cluster the topology runs against Kafka `alias`."""
        if not self._storage:
            found: dict[str, list[str]] = {}
            for f in self._directed:
                for part in f.connectClusters or [None]:
                    n = FlowNames(f.flow_name, f.source, f.target, part.name if part else None)
                    found.setdefault(f.target, []).extend(
                        (n.offset_storage_topic, n.config_storage_topic, n.status_storage_topic))
            self._storage.update({a: tuple(sorted(ts)) for a, ts in found.items()})
        return self._storage.get(alias, ())

    def _plan_parts(self, flow: Flow) -> list[PartSpec]:
        # An identity flow writes a source topic under its own name: one named like a Connect
        # storage topic on the target would be written into that Connect cluster's state. Those
        # names (literal, dotless, never prefixed) are excluded; Kafka's default excludes already
        # drop MirrorMaker 2's own `.internal` topics.
        storage = self.storage_topics(flow.target) if flow.policy is Policy.identity else ()
        specs = []
        if flow.connectClusters:
            for i, part in sorted(enumerate(flow.connectClusters), key=lambda p: p[1].name):
                where = f"connectClusters[{i}]"
                if part.sources:
                    sources = [flow.source_spec(s, s.topics, s.topicsExclude, f"{where}.sources[{j}]", storage)
                               for j, s in enumerate(part.sources)]
                else:
                    sources = [flow.source_spec(None, part.topics or [], part.topicsExclude, where, storage)]
                specs.append(PartSpec(part.name, self.connect_settings(flow, part),
                                      part.resourceQuota or flow.resourceQuota,
                                      tuple(sorted(sources, key=lambda s: s.name or "")), False, where))
        else:
            if flow.sources:
                sources = [flow.source_spec(s, s.topics, s.topicsExclude, f"sources[{j}]", storage)
                           for j, s in enumerate(flow.sources)]
            else:
                sources = [flow.source_spec(None, flow.topics or [], flow.topicsExclude, "topics", storage)]
            specs.append(PartSpec(None, self.connect_settings(flow), flow.resourceQuota,
                                  tuple(sorted(sources, key=lambda s: s.name or "")), False, "(flow)"))
        if flow.heartbeats:
            specs[0] = replace(specs[0], heartbeat=True)
        return specs


# ---------------------------------------------------------------- cross-field rules

# SMTs and the record's topic. The replication policy maps source topics to target topics by
# name, and offset syncs, checkpoints and loop detection rely on that mapping, so a transform
# must keep the topic. Decided by what a transform does: Kafka's own transforms that only touch
# keys, values, headers or schemas (and the CSM converters of the documents) keep it; routers
# (Kafka's, other vendors', and any class named like one) change it; any other class is refused
# until its user states `keepsTopic: true` (fail closed: we cannot read its code).
TOPIC_KEEPING_SMTS = frozenset({
    *(f"org.apache.kafka.connect.transforms.{name}" for name in (
        "Cast", "DropHeaders", "ExtractField", "Filter", "Flatten", "HeaderFrom", "HoistField", "InsertField",
        "InsertHeader", "MaskField", "ReplaceField", "SetSchemaMetadata", "TimestampConverter", "ValueToKey")),
    "com.cloudera.dim.kafka.connect.transforms.ConvertFromBytes",
    "com.cloudera.dim.kafka.connect.transforms.ConvertToBytes",
})
TOPIC_RENAMING_SMTS = frozenset({
    "org.apache.kafka.connect.transforms.RegexRouter",
    "org.apache.kafka.connect.transforms.TimestampRouter",
    "io.confluent.connect.transforms.MessageTimestampRouter",
    "io.confluent.connect.transforms.ExtractTopic",
    "io.confluent.connect.cloud.transforms.TopicRegexRouter",
    "io.aiven.kafka.connect.transforms.ExtractTopic",
    "io.aiven.kafka.connect.transforms.ExtractTopicFromSchemaName",
    "io.debezium.transforms.ByLogicalTableRouter",
    "io.debezium.transforms.outbox.EventRouter",
    "io.debezium.transforms.partitions.PartitionRouting",
})
# Simple class names that say a transform routes records: refused as renaming whatever the package.
ROUTER_NAME = re.compile(r"(Router|Routing|Route|Topic)", re.IGNORECASE)
# Predicates of Kafka and the property each one needs.
PREDICATE_REQUIRED = {
    "org.apache.kafka.connect.transforms.predicates.TopicNameMatches": "pattern",
    "org.apache.kafka.connect.transforms.predicates.HasHeaderKey": "name",
}
SMT_FIELDS = ("type", "predicate", "negate", "keepsTopic")


def check(topo: Topology) -> list[Problem]:
    """Rules across the fields of each cluster and flow; pydantic has already checked each field.
    The rules across flows are in infra/guardrails.py."""
    problems: list[Problem] = _check_operator(topo)
    for alias in sorted(topo.clusters):
        if not DNS1123_LABEL.match(alias) or len(alias) > MAX_ALIAS:
            problems.append(Problem(f"clusters.{alias}", "alias", alias,
                                    f"lowercase letters, digits and '-' (DNS-1123), at most {MAX_ALIAS} characters"))
    for index, flow in enumerate(topo.flows):
        where = f"flows[{index}] ({flow.flow_name})"
        for role in ("source", "target"):
            alias = getattr(flow, role)
            if alias not in topo.clusters:
                problems.append(Problem(where, role, alias,
                                        f"a cluster alias defined under `clusters`: {', '.join(sorted(topo.clusters))}"))
        if flow.source == flow.target:
            problems.append(Problem(where, "target", flow.target, "a cluster other than the source"))
        problems += _check_shape(where, flow)
        problems += _check_bidirectional(where, flow)
        for alias in sorted({flow.source, flow.target}) if flow.bidirectional else [flow.target]:
            target = topo.clusters.get(alias) if flow.source != flow.target else None
            target_tls = target.security.effective_tls if target else None
            if target_tls and target_tls.trust is not Trust.pem:
                problems.append(Problem(f"clusters.{alias}", "security.tls.trust", target_tls.trust.value,
                                        f"pem: the cluster is the target of flow {flow.flow_name}, and Strimzi's "
                                        "KafkaConnect trusts PEM certificates only (spec.tls.trustedCertificates)"))
        problems.extend(_check_overrides(where, flow))
        problems += _check_heartbeat_identity(topo, where, flow)
    seen: dict[str, str] = {}
    for flow in topo.sorted_flows():
        where, name = topo.where(flow), flow.flow_name
        if not DNS1123_LABEL.match(name) or len(name) > MAX_FLOW_NAME:
            declared = topo.flows[flow._declared]
            hint = ""
            if declared.bidirectional:
                hint = (f"; each direction's name is `<name>-<source>-<target>` ({DEFAULT_FLOW_BASE} without "
                        "`name`): set a shorter `name`")
            elif declared.name is None:
                hint = "; without `name` it is `repl-<source>-<target>`: set a shorter `name`"
            problems.append(Problem(where, "name", name, "lowercase letters, digits and '-' (DNS-1123), at most "
                                                         f"{MAX_FLOW_NAME} characters{hint}"))
        if name in seen:
            problems.append(Problem(where, "name", name, f"a name not used by {seen[name]}"))
        seen.setdefault(name, where)
        for part in topo.parts(flow):
            problems += _check_part(where, flow, part)
    for index, flow in enumerate(topo.flows):
        # Both directions of a pair share their SMTs: checked once, on the declaration.
        for part in topo.parts(flow):
            for spec in part.sources:
                problems += _check_smts(f"flows[{index}] ({flow.flow_name})", flow, spec)
    if topo.audit:
        problems += _check_audit(topo, topo.audit)
    return in_file_order(problems)


def _check_operator(topo: Topology) -> list[Problem]:
    """The operator release exists in infra/releases.py, and what depends on it fits it."""
    operator = topo.operator
    release = find(operator.flavour, operator.version)
    if release is None:
        flavour, version = operator.flavour, operator.version
        supported = ", ".join(supported_versions(flavour))
        if (flavour, version) in REFUSED:
            allowed = f"a supported {flavour.value} release ({supported}): {REFUSED[(flavour, version)]}"
        else:
            other = next((f for f in Flavour if f is not flavour and find(f, version)), None)
            hint = f"; {version} is a {other.value} release: set flavour: {other.value}" if other else ""
            allowed = f"a supported {flavour.value} release: {supported}{hint}"
        return [Problem("operator", "version", version, allowed)]
    problems = []
    places = [("operator", "connect.version", operator.connect.version)]
    for index, flow in enumerate(topo.flows):
        where = f"flows[{index}] ({flow.flow_name})"
        places.append((where, "connect.version", flow.connect.version))
        places += [(where, f"connectClusters[{i}].connect.version", part.connect.version)
                   for i, part in enumerate(flow.connectClusters or [])]
    for where, field, version in places:
        if version is not None and version not in release.connect_versions:
            problems.append(Problem(where, field, version,
                                    f"a Kafka Connect version {release.name} runs: "
                                    f"{', '.join(release.connect_versions)} (unset: {release.default_connect_version})"))
    if operator.targetConnection is TargetConnection.workerFile and not release.worker_file.readable_by_connectors:
        problems.append(Problem("operator", "targetConnection", operator.targetConnection.value,
                                f"clusterObjects (or unset): {release.name} (Strimzi {release.strimzi}) writes the "
                                "worker file with ${strimzi...:...} references and no store keys, and Kafka "
                                "resolves a config variable only once, so ${file:...} would hand connectors "
                                "unusable values"))
    return problems


def _check_heartbeat_identity(topo: Topology, where: str, flow: Flow) -> list[Problem]:
    """The heartbeat connector's producer inherits the worker's producer.* keys (for the TARGET)
    and can only override them (Kafka Worker.baseProducerConfigs). A worker with an mTLS target
    keeps its client key store in every release's worker file; producing to a source that
    authenticates clients by certificate (protocol SSL) without a certificate of its own would
    present the TARGET's identity to the source."""
    source, target = topo.clusters.get(flow.source), topo.clusters.get(flow.target)
    if not (flow.heartbeats and source and target) or source.security.protocol is not Protocol.SSL:
        return []
    source_tls, target_tls = source.security.effective_tls, target.security.effective_tls
    if target_tls and target_tls.clientCertificate and not source_tls.clientCertificate:
        return [Problem(where, "heartbeats", True,
                        f"false, or a client certificate for {flow.source} (clusters.{flow.source}.security.tls."
                        f"clientCertificate): the heartbeat connector produces into {flow.source} over SSL with "
                        f"the Connect worker's producer, which carries {flow.target}'s client key store (mTLS) "
                        f"and would authenticate to {flow.source} as {flow.target}'s client")]
    return []


def _check_audit(topo: Topology, audit: Audit) -> list[Problem]:
    problems = []
    period = audit.period_seconds
    if audit.deadline_seconds >= period:
        problems.append(Problem("audit", "activeDeadlineSeconds", audit.activeDeadlineSeconds,
                                f"less than the schedule's shortest period ({period} s): a run must end before "
                                "the next one is due"))
    if audit.namespace in {FlowNames(f.flow_name, f.source, f.target, p.name).namespace
                           for f in topo.sorted_flows() for p in topo.parts(f)}:
        problems.append(Problem("audit", "namespace", audit.namespace, "a namespace no flow uses"))
    for field, text in (("reports.size", audit.reports.size),
                        *((f"resources.{k}.{r}", v) for k, d in audit.resources.model_dump(exclude_none=True).items()
                          for r, v in d.items())):
        try:
            quantity(text)
        except ValueError as exc:
            problems.append(Problem("audit", field, text, str(exc)))
    return problems


def _check_shape(where: str, flow: Flow) -> list[Problem]:
    problems = []
    given = [f for f in ("topics", "sources", "connectClusters") if getattr(flow, f) is not None]
    if len(given) != 1:
        problems.append(Problem(where, " / ".join(given) or "topics", None if not given else ", ".join(given),
                                "exactly one of `topics` (one MirrorSourceConnector), `sources` (several) or "
                                "`connectClusters` (the flow split over several Connect clusters)"))
    if flow.topicsExclude and flow.topics is None:
        problems.append(Problem(where, "topicsExclude", flow.topicsExclude,
                                "topicsExclude next to the `topics` it narrows (in `sources[]` or `connectClusters[]`)"))
    # Instance names name ConfigMaps and connectors: unique in the flow, across its Connect clusters.
    problems += _unique(where, [(f"{path}.name", s.name) for path, s in flow.instances()])
    for i, part in enumerate(flow.connectClusters or []):
        if (part.topics is None) == (part.sources is None):
            problems.append(Problem(where, f"connectClusters[{i}]", part.name,
                                    "exactly one of `topics` or `sources` in each Connect cluster"))
        if part.topicsExclude and part.topics is None:
            problems.append(Problem(where, f"connectClusters[{i}].topicsExclude", part.topicsExclude,
                                    "topicsExclude next to the `topics` it narrows"))
    problems += _unique(where, [(f"connectClusters[{i}].name", p.name) for i, p in enumerate(flow.connectClusters or [])])
    return problems


def _unique(where: str, named: list[tuple[str, str]]) -> list[Problem]:
    """(field, name) pairs: every repeated name is a problem at its field."""
    seen, problems = set(), []
    for field, name in named:
        if name in seen:
            problems.append(Problem(where, field, name, "a name not used by another entry of the list"))
        seen.add(name)
    return problems


def _check_bidirectional(where: str, flow: Flow) -> list[Problem]:
    if flow.aggregation and not flow.bidirectional and flow.policy is not Policy.identity:
        # Default-policy flows of two sources never collide (the prefixes differ), and one
        # source's flows must not write the same topics: nothing is left to aggregate.
        return [Problem(where, "aggregation", True,
                        "false (or unset): aggregation declares an identity fan-in (replicationPolicy: "
                        "identity); this flow uses the default policy")]
    if not flow.bidirectional:
        return []
    problems = []
    if flow.replicationPolicy is Policy.default:
        problems.append(Problem(where, "replicationPolicy", "default",
                                "identity (or unset) for a bidirectional pair; prefixed replication both ways is "
                                "two ordinary flows, whose DefaultReplicationPolicy detects loops by itself"))
    if flow.checkpoints:
        problems.append(Problem(where, "checkpoints", True,
                                "false (or unset): checkpointing and group offset sync do not work in a "
                                "bidirectional prefixless setup (the documents)"))
    if flow.aggregation:
        problems.append(Problem(where, "aggregation", True, "false: a bidirectional pair is not a fan-in"))
    return problems


def _check_part(where: str, flow: Flow, part: PartSpec) -> list[Problem]:
    problems = []
    label = part.where if part.name else "(flow)"
    if part.name:
        connect = f"{flow.flow_name}-{part.name}"
        if len(connect) > MAX_FLOW_NAME:
            problems.append(Problem(where, f"{part.where}.name", part.name,
                                    f"a shorter name: the Connect cluster and namespace `{connect}` "
                                    f"must be at most {MAX_FLOW_NAME} characters"))
    if part.quota:
        problems += _check_quota(where, label, part)
    return problems


def _check_quota(where: str, label: str, part: PartSpec) -> list[Problem]:
    """A quota that the Connect pods cannot satisfy makes Strimzi's pods fail admission, long
    after `pulumi up` reported success: catch it here."""
    problems = []
    field = "resourceQuota.hard" if label == "(flow)" else f"{label}.resourceQuota.hard"
    resources = part.connect.resources
    for key, hard in sorted(part.quota.hard.items()):
        kind, _, resource = key.partition(".")
        if kind not in ("requests", "limits") or resource not in ("cpu", "memory"):
            continue
        declared = getattr(resources, kind, None) if resources else None
        if not declared or resource not in declared:
            problems.append(Problem(where, f"{field}.{key}", hard,
                                    f"connect.resources.{kind}.{resource} set as well: with this quota, pods "
                                    f"without a {resource} {kind[:-1]} are refused by the API server"))
            continue
        try:
            need = part.connect.replicas * quantity(str(declared[resource]))
            have = quantity(str(hard))
        except ValueError as exc:
            problems.append(Problem(where, f"{field}.{key}", hard, f"a Kubernetes quantity ({exc})"))
            continue
        if need > have:
            problems.append(Problem(where, f"{field}.{key}", hard,
                                    f"at least {part.connect.replicas} replicas x {declared[resource]} = "
                                    f"{_fmt(need)} (connect.replicas x connect.resources.{kind}.{resource})"))
    return problems


def _fmt(value: float) -> str:
    return f"{value:g}"


def _check_smts(where: str, flow: Flow, spec: SourceSpec) -> list[Problem]:
    problems = []
    at = "" if spec.where in ("topics", "(flow)") or spec.name is None else f"{spec.where}."
    names_ = [t.name for t in spec.transforms]
    problems += _unique(where, [(f"{at}transforms[{i}].name", n) for i, n in enumerate(names_)])
    problems += _unique(where, [(f"{at}predicates[{i}].name", p.name) for i, p in enumerate(spec.predicates)])
    declared = {p.name for p in spec.predicates}
    if flow.bidirectional:
        reserved = {LOOP_FILTER_TRANSFORM, LOOP_HEADER_TRANSFORM}
        for i, t in enumerate(spec.transforms):
            if t.name in reserved:
                problems.append(Problem(where, f"{at}transforms[{i}].name", t.name,
                                        f"another name: {', '.join(sorted(reserved))} are the loop filter's "
                                        "transforms in a bidirectional pair"))
        for i, p in enumerate(spec.predicates):
            if p.name == LOOP_PREDICATE:
                problems.append(Problem(where, f"{at}predicates[{i}].name", p.name,
                                        f"another name: {LOOP_PREDICATE} is the loop filter's predicate"))
    for i, t in enumerate(spec.transforms):
        base = t.type.split("$")[0]
        if base in TOPIC_RENAMING_SMTS or (base not in TOPIC_KEEPING_SMTS and ROUTER_NAME.search(base.rsplit(".", 1)[-1])):
            problems.append(Problem(where, f"{at}transforms[{i}].type", t.type,
                                    "an SMT that keeps the record's topic: topic-renaming transforms break the "
                                    "replication policy (target topic names, offset syncs, checkpoints and loop "
                                    "detection all derive from the source topic name)"))
        elif base not in TOPIC_KEEPING_SMTS and not t.keepsTopic:
            problems.append(Problem(where, f"{at}transforms[{i}].type", t.type,
                                    "a transform known to keep the record's topic (Kafka's own field, header and "
                                    "schema transforms): the program cannot tell what this class does. If it never "
                                    "changes the record's topic, say so with `keepsTopic: true` on this transform"))
        if t.predicate and t.predicate not in declared:
            problems.append(Problem(where, f"{at}transforms[{i}].predicate", t.predicate,
                                    f"a predicate declared under predicates: {', '.join(sorted(declared)) or 'none'}"))
        if t.negate and not t.predicate:
            problems.append(Problem(where, f"{at}transforms[{i}].negate", True, "a `predicate` to negate"))
        problems += _check_smt_config(where, f"{at}transforms[{i}].config", t.config)
    for i, p in enumerate(spec.predicates):
        problems += _check_smt_config(where, f"{at}predicates[{i}].config", p.config)
        required = PREDICATE_REQUIRED.get(p.type)
        if required and required not in p.config:
            problems.append(Problem(where, f"{at}predicates[{i}].config.{required}", None,
                                    f"a value: {p.type.rsplit('.', 1)[-1]} needs `{required}`"))
        if required == "pattern" and required in p.config:
            # TopicNameMatches compiles it with java.util.regex. No guardrail reasons about it,
            # so constructs the automata cannot model (lookarounds...) are fine here.
            try:
                jregex.parse(str(p.config["pattern"]))
            except jregex.RegexError as exc:
                problems.append(Problem(where, f"{at}predicates[{i}].config.pattern", p.config["pattern"],
                                        f"a valid Java regex ({exc})"))
            except jregex.Unsupported:
                pass
    for conv_name in ("key", "value"):
        conv = getattr(spec.converters, conv_name, None) if spec.converters else None
        if conv:
            problems += _check_smt_config(where, f"{at}converters.{conv_name}.config", conv.config)
    return problems


def _check_smt_config(where: str, field: str, config: dict) -> list[Problem]:
    problems = []
    for key in sorted(config):
        if key in SMT_FIELDS:
            problems.append(Problem(where, f"{field}.{key}", key, f"the `{key}` field beside `config`"))
        elif SECRET_LIKE.search(key):
            problems.append(Problem(where, f"{field}.{key}", key, "no secrets in connector config"))
    return problems


def _check_overrides(where: str, flow: Flow) -> list[Problem]:
    problems = []
    overrides = [(f"config.{c}", getattr(flow.config, c)) for c in ("source", "checkpoint", "heartbeat")]
    overrides += [(f"{path}.config", inst.config) for path, inst in flow.instances()]
    for prefix, config in overrides:
        for key in sorted(config):
            field = f"{prefix}.{key}"
            owned_connection = any(key.startswith(p) and key[len(p):].startswith(CONNECTION_KEYS)
                                   for p in MANAGED_PREFIXES)
            if key in MANAGED_KEYS or owned_connection or (flow.bidirectional and key in BIDIRECTIONAL_KEYS):
                problems.append(Problem(where, field, key, "a property the program does not set itself "
                                        "(topics, groups, policy and cluster connections come from the flow)"))
            elif key.startswith(SMT_PREFIXES) or key in ("transforms", "predicates"):
                problems.append(Problem(where, field, key, "the typed `transforms` and `predicates` lists "
                                        "(docs/topology.md#single-message-transforms)"))
            elif key.startswith(CONVERTER_PREFIXES):
                problems.append(Problem(where, field, key, "the typed `converters` field"))
            elif SECRET_LIKE.search(key):
                problems.append(Problem(where, field, key, "no secrets in connector config: they come from "
                                        "Pulumi secret config (docs/topology.md#secrets)"))
    return problems


def warnings(topo: Topology) -> list[str]:
    """Valid but risky choices, shown by `pulumi preview` and the offline render."""
    found = []
    for flow in topo.sorted_flows():
        if flow.startFrom is StartFrom.latest:
            found.append(f"flow {flow.flow_name}: startFrom latest replicates new partitions from their end "
                         "offset: records written before the connector first reads them are never replicated "
                         "(at-least-once no longer holds)")
    return found + list(topo._warnings)


def check_transitions(topo: Topology, previous_flows: dict | None) -> list[Problem]:
    """Changes that must not be made in one step, judged against the stack's previous outputs."""
    problems = []
    for flow in topo.sorted_flows():
        before = (previous_flows or {}).get(flow.flow_name) or {}
        if flow.exactlyOnce is ExactlyOnce.enabled and before.get("exactlyOnce") == ExactlyOnce.disabled.value:
            watch = " and ".join(f"kubectl get pods -n {FlowNames(flow.flow_name, flow.source, flow.target, p.name).namespace} --watch"
                                 for p in topo.parts(flow))
            problems.append(Problem(
                topo.where(flow), "exactlyOnce", flow.exactlyOnce.value,
                "preparing first: this flow's running Connect cluster has exactly-once disabled. Deploy "
                "exactlyOnce: preparing, wait until the Connect pods' rolling restart has finished "
                f"({watch}), then deploy exactlyOnce: enabled"))
    return problems


# ---------------------------------------------------------------- loading


def _problems_from(exc: ValidationError, data: Any) -> list[Problem]:
    """Schema errors in user terms: field paths as written (`sources[0].topics`), without
    pydantic's internal steps, one problem per field (a union's alternatives are merged)."""
    merged: dict[tuple[str, str], dict] = {}
    for err in exc.errors():
        loc = _user_loc(list(err["loc"]), data, err["type"] == "extra_forbidden")
        where, field = _where(loc, data)
        entry = merged.setdefault((where, field), {"loc": loc, "errors": []})
        entry["errors"].append(err)
    problems = []
    for (where, field), entry in merged.items():
        errors = entry["errors"]
        first = errors[0]
        if first["type"] == "extra_forbidden":
            problems.append(Problem(where, field, entry["loc"][-1],
                                    "a known key (unknown keys are errors; see docs/topology.md)"))
        elif first["type"] == "missing":
            problems.append(Problem(where, field, None, "a value (required)"))
        else:
            # Our own checks (ValueError) say what is wrong best; otherwise every alternative.
            # A union's first alternative (the one users mean) speaks for our own checks.
            own = [e for e in errors if e["type"] == "value_error"][:1]
            messages = list(dict.fromkeys(e["msg"].removeprefix("Value error, ").removeprefix("Input should be ")
                                          for e in (own or errors)))
            problems.append(Problem(where, field, _short(first.get("input")), " or ".join(messages)))
    return problems


def _user_loc(loc: list, data: Any, extra: bool = False) -> list:
    """An error's location as users wrote it: the steps that exist in their document. Pydantic
    adds steps of its own (union members such as `bool`, validator chains, `[key]`); those are
    the ones the document does not have. An unknown key (`extra`) is kept as the last step."""
    out, node = [], data
    for i, step in enumerate(loc):
        if isinstance(node, dict) and step in node:
            out.append(step)
            node = node[step]
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            out.append(step)
            node = node[step]
        elif extra and i == len(loc) - 1:
            out.append(step)
    return out


def _path(steps: list) -> str:
    out = ""
    for step in steps:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


def _where(loc: list, data: Any) -> tuple[str, str]:
    """Name the flow or cluster an error belongs to, and the field path within it."""
    if len(loc) >= 2 and loc[0] == "flows" and isinstance(loc[1], int):
        name = "?"
        try:
            raw = data["flows"][loc[1]]
            name = raw.get("name") or default_flow_name(raw.get("source"), raw.get("target"))
        except (KeyError, IndexError, TypeError, AttributeError):
            pass
        return f"flows[{loc[1]}] ({name})", _path(loc[2:]) or "(flow)"
    if len(loc) >= 2 and loc[0] == "clusters":
        return f"clusters.{loc[1]}", _path(loc[2:]) or "(cluster)"
    if len(loc) >= 1 and loc[0] == "audit":
        return "audit", _path(loc[1:]) or "(audit)"
    if len(loc) >= 1 and loc[0] == "operator":
        return "operator", _path(loc[1:]) or "(operator)"
    return "topology", _path(loc) or "(root)"


class _Abbreviated(str):
    def __repr__(self) -> str:
        return str(self)


def _short(value: Any) -> Any:
    if isinstance(value, (dict, list)) and len(repr(value)) > 160:
        return _Abbreviated(repr(value)[:157] + "...")
    return value


def _rules_without(exc: ValidationError, data: Any, schema: list[Problem]) -> list[Problem]:
    """The field, cross-field and cross-flow rules on what remains valid: every field the schema
    refused is set back to its default, and the rules run if that validates. Their problems
    about the refused fields themselves are left out (the schema's message says it first)."""
    import copy
    salvaged = copy.deepcopy(data)
    if any(err["type"] == "missing" for err in exc.errors()):
        return []  # a required value is missing: nothing sound to check
    # The fields as users wrote them, each once (a union reports one error per alternative).
    fields = {tuple(_user_loc(list(err["loc"]), data, err["type"] == "extra_forbidden")) for err in exc.errors()}
    for steps in sorted(fields, key=len, reverse=True):
        if not _drop(salvaged, list(steps)):
            return []
    try:
        topo = Topology.model_validate(salvaged)
        found = check(topo) or guardrails.check(topo)[0]
    except (ValidationError, TopologyError, ValueError):
        return []
    refused = {(p.where, p.field) for p in schema}
    return [p for p in found if (p.where, p.field) not in refused
            and not any(p.where == w and (p.field.startswith(f + ".") or p.field.startswith(f + "["))
                        for w, f in refused)]


def _drop(data: Any, steps: list) -> bool:
    """Remove the dict key at the end of `steps` (already gone is fine), so the schema's default
    applies; False when the last step is not a key of a mapping."""
    node = data
    for step in steps[:-1]:
        if isinstance(node, dict) and step in node:
            node = node[step]
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            node = node[step]
        else:
            return True  # a parent was dropped already
    if steps and isinstance(node, dict):
        node.pop(steps[-1], None)
        return True
    return False


def parse(data: Any, source: str = "topology") -> Topology:
    """Validate raw topology data; raise TopologyError with every problem found."""
    if not isinstance(data, dict):
        raise TopologyError([Problem(source, "(root)", type(data).__name__, "a mapping with clusters and flows")])
    try:
        topo = Topology.model_validate(data)
    except ValidationError as exc:
        schema = _problems_from(exc, data)
        raise TopologyError(in_file_order(schema + _rules_without(exc, data, schema))) from None
    problems = check(topo)
    if problems:
        raise TopologyError(problems)
    problems, topo._warnings = guardrails.check(topo)
    if problems:
        raise TopologyError(problems)
    return topo


def load(path: str | Path) -> Topology:
    return parse(reading.load_yaml_file(path, "topology file"), str(path))


def json_schema() -> dict:
    schema = Topology.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "kafka-replication topology"
    return schema
