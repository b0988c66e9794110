"""The topology document as users write it (`stacks/<stack>.yaml`): its fields, their types and
the checks of each single value. Nothing derived is stored here: what follows from these fields
(the flows as deployed, their Connect clusters and source connectors) is infra/topology/resolution.py,
the rules across fields are infra/checks/rules.py, and infra/checks/validation.py runs them in that order.
`docs/topology.md` documents every field.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from infra.filters import jregex
from infra.core import references
from infra.core.cron import shortest_period_seconds
from infra.core.names import default_flow_name
from infra.core.releases import Flavour, Release, find

# Matched whole (fullmatch): `$` would let a final line break through.
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
BOOTSTRAP = re.compile(r"[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}")
# Regexes in one topics/groups list: allow-lists of thousands of names are what migrations write
# (the file's own bound, 1 MiB, caps them too).
MAX_FILTERS = 20_000


# Values the platform reads, refused here in the platform's terms rather than at deploy time.
INT32 = 2**31 - 1  # Kubernetes and Kafka integer fields are 32-bit


def _integer(low: int, high: int) -> BeforeValidator:
    """An integer in [low, high], said in those words (YAML may hand over 1e30 or true)."""
    def check(value: Any) -> int:
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


def _shaped(pattern: str, description: str, longest: int) -> BeforeValidator:
    """A string of a given shape, refused with a description users read (never the regex)."""
    compiled = re.compile(pattern)

    def check(value: Any) -> str:
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
# A SASL username lands inside a JAAS line `username="..."`: no quote, backslash or control
# character. Nor `${`: every release writes a target's username literally into the Connect
# worker's file, where the worker resolves `${...}` as a config-provider reference (Kafka's
# ConfigTransformer), and a registry username `user:password` is split at its first ':' (the
# kubelet reads `auth` that way), so neither holds one.
Username = Annotated[str, _shaped(r'(?:(?!\$\{)[^"\\\x00-\x1f\x7f])+',
                                  "a username without quotes, backslashes, control characters (line breaks) or ${ (the "
                                  "Connect worker would resolve it as a config-provider reference)",
                                  256)]
RegistryUsername = Annotated[str, _shaped(r'(?:(?!\$\{)[^"\\\x00-\x1f\x7f:])+',
                                          "a username without ':' (the registry's `auth` is user:password, split at "
                                          "the first ':'), quotes, backslashes, control characters or ${", 256)]


class PullPolicy(str, Enum):
    Always = "Always"
    IfNotPresent = "IfNotPresent"
    Never = "Never"


_SUFFIXES = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
             "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_QUANTITY = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?")


def quantity(text: str) -> float:
    """A Kubernetes resource quantity (`500m`, `4Gi`, `2`) as a number."""
    match = _QUANTITY.fullmatch(text)
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
        """The secret config items (`<alias>.<item>`, infra/deploy/config.py SECRET_ITEMS) a client of
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


class TasksMax(_Strict):
    source: Count = 3
    checkpoint: Count = 3
    heartbeat: Count = 1


def _no_reference(value: Any) -> str | int | bool:
    if isinstance(value, float) or not isinstance(value, (str, int, bool)):
        raise ValueError("a string, an integer or true/false")
    if isinstance(value, str) and references.MARKER in value:
        raise ValueError("a value without ${...}: config-provider references are the program's own (cluster "
                         "connections and secrets); in a connector or SMT setting one could read any file or "
                         "Secret the Connect worker can, and an SMT would stamp it on every record")
    return value


# Connector, SMT, predicate and converter settings: plain values only.
ConfigValue = Annotated[str | int | bool, BeforeValidator(_no_reference)]
DnsLabel = Annotated[str, _shaped(DNS1123_LABEL.pattern,
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
    automata model exactly (infra/filters/jregex.py); Kafka splits the property on commas and trims
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
    kubernetes: DnsLabel | None = None  # where this Connect cluster deploys: the flow's when unset
    connect: ConnectSettings = ConnectSettings()
    resourceQuota: ResourceQuota | None = None
    topics: Regexes | None = None
    topicsExclude: RegexList = []
    sources: Annotated[list[SourceInstance], Field(min_length=1)] | None = None


class Alerts(_Strict):
    """Alert thresholds (infra/plan/monitoring.py). A flow's `alerts` override the stack's
    `monitoring.alerts` field by field; unset everywhere, the defaults of infra/plan/monitoring.py."""
    replicationLatencySeconds: Count | None = None  # record produced at the source until acked by the target
    recordAgeSeconds: Count | None = None           # record's age when the source connector reads it
    sourceLagRecords: Amount | None = None          # the source connector's consumer lag per partition
    heartbeatAgeSeconds: Count | None = None        # no heartbeat replicated for this long
    forMinutes: Annotated[int, _integer(1, 1440)] | None = None  # how long a condition holds before it fires


class OffsetsAction(str, Enum):
    list = "list"    # the operator writes the connector's offsets to a ConfigMap
    alter = "alter"  # the operator sets the offsets given here (connector stopped)
    reset = "reset"  # the operator deletes every offset of the connector (connector stopped)


# A topic name as Kafka accepts it; consumer groups are free text, bounded here.
TopicName = Annotated[str, _shaped(r"[A-Za-z0-9._-]+", "a Kafka topic name (letters, digits, '.', '_', '-')", 249)]
GroupName = Annotated[str, _shaped(r"[^\x00-\x1f\x7f]+", "a consumer group name without control characters", 1024)]
OffsetsRequestId = Annotated[str, _shaped(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?",
                                          "a request id such as 2026-11-24-rewind (lowercase letters, digits, '-')",
                                          40)]


class PartitionOffset(_Strict):
    """One partition's offset to set. Source connectors: `topic` (the source topic), `partition`,
    and `offset` the last source offset already replicated (replication resumes after it); the
    checkpoint connector: also `group`, and `topic` as the target cluster names it (`<source>.<topic>`
    under the default policy). `offset: null` deletes the partition's offset."""
    topic: TopicName
    partition: Annotated[int, _integer(0, INT32)]
    group: GroupName | None = None
    offset: Annotated[int, _integer(0, 2**63 - 1)] | None


class OffsetsRequest(_Strict):
    """A one-shot operation on a connector's offsets, run by the operator (Strimzi 0.44 and newer,
    CSM 1.4): changing `request` asks again; the connector must be stopped to alter or reset."""
    connector: Annotated[str, Field(min_length=1, max_length=253)]  # a KafkaConnector of this flow, by name
    action: OffsetsAction
    request: OffsetsRequestId
    offsets: Annotated[list[PartitionOffset], Field(max_length=10_000)] = []  # alter only


class FailoverProcedure(str, Enum):
    """The documents' failover procedures (docs/operations.md)."""
    continuous = "continuous"  # continuous and controlled: consumers move first; Default policy only
    cutoff = "cutoff"          # controlled with a cutoff: producers stopped, consumers drained
    disaster = "disaster"      # the source is gone: clients restart on the target


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


class ImagePullSecret(_Strict):
    name: DnsSubdomain
    server: Annotated[str, _shaped(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[^\s]*)?",
                                   "a registry host such as registry.example.com[:port]", 253)]
    username: RegistryUsername
    # the password comes from secret config `registry.password`


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


class Exporter(str, Enum):
    jmxPrometheusExporter = "jmxPrometheusExporter"    # the Prometheus JMX exporter agent, our rules
    strimziMetricsReporter = "strimziMetricsReporter"  # Strimzi's metrics reporter (Strimzi 0.48 and newer)


LabelKey = Annotated[str, _shaped(r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?",
                                  "a Kubernetes label key such as release or example.com/team", 317)]
LabelValue = Annotated[str, _shaped(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?",
                                    "a Kubernetes label value (letters, digits, '-', '_', '.')", 63)]


class Monitoring(_Strict):
    """Metrics, alerts and dashboards (infra/plan/monitoring.py, docs/operations.md)."""
    metrics: bool = True                 # spec.metricsConfig on every KafkaConnect
    exporter: Exporter = Exporter.jmxPrometheusExporter
    namespace: DnsLabel = "replication-monitoring"  # of the PodMonitor, PrometheusRule and dashboard
    prometheusOperator: bool = False     # a PodMonitor and a PrometheusRule: needs the Prometheus Operator's CRDs
    dashboard: bool = False              # a Grafana dashboard ConfigMap (the sidecar's grafana_dashboard label)
    labels: Annotated[dict[LabelKey, LabelValue], Field(max_length=20)] = {}  # e.g. what Prometheus selects on
    alerts: Alerts = Alerts()


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
    return schema
