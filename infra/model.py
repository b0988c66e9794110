"""The stack topology: Kafka clusters by alias, replication flows between them, operator settings.

This is the only place user input is parsed. Everything downstream (plan, components, outputs)
receives a validated `Topology` and may assume it is consistent. Field names are the ones users
see in `stacks/<stack>.yaml`; `docs/topology.md` documents each of them.
"""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from infra.errors import Problem, TopologyError
from infra.names import default_flow_name

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
    "key.converter", "value.converter",
    "source.consumer.auto.offset.reset", "source.consumer.isolation.level",  # startFrom, exactlyOnce
})
SECRET_LIKE = re.compile(r"(password|jaas|secret|\.key$|credentials)", re.IGNORECASE)


class _Strict(BaseModel):
    # Unknown keys are errors: a typo must never be silently ignored.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Flavour(str, Enum):
    csm = "csm"          # CSM Operator 1.x: kafka.strimzi.io/v1beta2, worker keys in spec.config
    strimzi = "strimzi"  # Strimzi >= 1.0: kafka.strimzi.io/v1, group id and topics as spec fields


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
    username: Annotated[str, Field(min_length=1)]


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


class Cluster(_Strict):
    bootstrapServers: Annotated[str, Field(min_length=1)]
    security: Security = Security()

    @field_validator("bootstrapServers")
    @classmethod
    def _bootstrap(cls, value: str) -> str:
        bad = [s for s in value.split(",") if not BOOTSTRAP.match(s.strip())]
        if bad:
            raise ValueError(f"{bad!r} is not a comma-separated list of host:port")
        return ",".join(s.strip() for s in value.split(","))


class Resources(_Strict):
    requests: dict[str, str] | None = None
    limits: dict[str, str] | None = None


class ConnectSettings(_Strict):
    replicas: Annotated[int, Field(ge=1)] = 3
    version: str | None = None   # Kafka version of the Connect image; operator default when unset
    image: str | None = None     # a custom image; operator default when unset
    resources: Resources | None = None


class TasksMax(_Strict):
    source: Annotated[int, Field(ge=1)] = 3
    checkpoint: Annotated[int, Field(ge=1)] = 3
    heartbeat: Annotated[int, Field(ge=1)] = 1


ConfigValue = str | int | bool


class ConnectorConfig(_Strict):
    """Extra connector properties, per connector, merged over the planned ones."""
    source: dict[str, ConfigValue] = {}
    checkpoint: dict[str, ConfigValue] = {}
    heartbeat: dict[str, ConfigValue] = {}


class SyncGroupOffsets(_Strict):
    enabled: bool = True
    intervalSeconds: Annotated[int, Field(ge=1)] | None = None


Regexes = Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]


class Flow(_Strict):
    source: str
    target: str
    name: str | None = None  # default repl-<source>-<target>
    topics: Regexes
    topicsExclude: list[str] = []
    groups: Regexes = [".*"]
    groupsExclude: list[str] = []
    replicationPolicy: Policy = Policy.default
    heartbeats: bool = True
    checkpoints: bool = True
    syncGroupOffsets: SyncGroupOffsets = SyncGroupOffsets()
    exactlyOnce: ExactlyOnce = ExactlyOnce.disabled
    startFrom: StartFrom = StartFrom.earliest
    state: ConnectorStates = ConnectorStates()
    tasksMax: TasksMax = TasksMax()
    config: ConnectorConfig = ConnectorConfig()
    connect: ConnectSettings = ConnectSettings()

    @field_validator("topics", "topicsExclude", "groups", "groupsExclude", mode="before")
    @classmethod
    def _list(cls, value: Any) -> Any:
        # A single regex may be written as a string.
        return [value] if isinstance(value, str) else value

    @field_validator("topics", "topicsExclude", "groups", "groupsExclude")
    @classmethod
    def _regex(cls, value: list[str]) -> list[str]:
        bad = []
        for item in value:
            if "," in item:
                bad.append(f"{item!r}: one regex per list item (Kafka joins them with commas)")
                continue
            try:
                re.compile(item)
            except re.error as exc:
                bad.append(f"{item!r} is not a valid regex ({exc})")
        if bad:
            raise ValueError("; ".join(bad))
        return value

    @property
    def flow_name(self) -> str:
        return self.name or default_flow_name(self.source, self.target)


class ImagePullSecret(_Strict):
    name: Annotated[str, Field(min_length=1)]
    server: Annotated[str, Field(min_length=1)]
    username: Annotated[str, Field(min_length=1)]
    # the password comes from secret config `registry.password`


class Operator(_Strict):
    flavour: Flavour = Flavour.csm
    targetConnection: TargetConnection | None = None  # default per flavour, see target_connection
    connect: ConnectSettings = ConnectSettings()
    imagePullSecret: ImagePullSecret | None = None

    @property
    def target_connection(self) -> TargetConnection:
        if self.targetConnection is not None:
            return self.targetConnection
        # Strimzi >= 0.4x writes secret-bearing worker properties as ${strimzisecrets:...} /
        # ${strimzidir:...} references and PEM trust without a truststore file; Kafka resolves
        # config variables once, so `${file:...}` would hand connectors unresolved references.
        return TargetConnection.workerFile if self.flavour is Flavour.csm else TargetConnection.clusterObjects


class Topology(_Strict):
    operator: Operator = Operator()
    clusters: Annotated[dict[str, Cluster], Field(min_length=1)]
    flows: Annotated[list[Flow], Field(min_length=1)]

    def sorted_flows(self) -> list[Flow]:
        # Everything downstream iterates flows in this order: output bytes do not depend on
        # the order of flows in the file.
        return sorted(self.flows, key=lambda f: f.flow_name)

    def connect_settings(self, flow: Flow) -> ConnectSettings:
        """The flow's Connect settings over the operator defaults (explicit flow values win)."""
        merged = self.operator.connect.model_dump(exclude_unset=True)
        merged.update(flow.connect.model_dump(exclude_unset=True))
        return ConnectSettings.model_validate(merged)


# ---------------------------------------------------------------- cross-field rules


def check(topo: Topology) -> list[Problem]:
    """Rules across clusters and flows; pydantic has already checked each field."""
    problems: list[Problem] = []
    for alias in sorted(topo.clusters):
        if not DNS1123_LABEL.match(alias) or len(alias) > MAX_ALIAS:
            problems.append(Problem(f"clusters.{alias}", "alias", alias,
                                    f"lowercase letters, digits and '-' (DNS-1123), at most {MAX_ALIAS} characters"))
    seen: dict[str, int] = {}
    for index, flow in enumerate(topo.flows):
        where = f"flows[{index}] ({flow.flow_name})"
        for role in ("source", "target"):
            alias = getattr(flow, role)
            if alias not in topo.clusters:
                problems.append(Problem(where, role, alias,
                                        f"a cluster alias defined under `clusters`: {', '.join(sorted(topo.clusters))}"))
        if flow.source == flow.target:
            problems.append(Problem(where, "target", flow.target, "a cluster other than the source"))
        name = flow.flow_name
        if not DNS1123_LABEL.match(name) or len(name) > MAX_FLOW_NAME:
            problems.append(Problem(where, "name", name,
                                    f"lowercase letters, digits and '-' (DNS-1123), at most {MAX_FLOW_NAME} characters"))
        if name in seen:
            problems.append(Problem(where, "name", name, f"a name not used by flows[{seen[name]}]"))
        seen.setdefault(name, index)
        target = topo.clusters.get(flow.target) if flow.source != flow.target else None
        target_tls = target.security.effective_tls if target else None
        if target_tls and target_tls.trust is not Trust.pem:
            problems.append(Problem(f"clusters.{flow.target}", "security.tls.trust", target_tls.trust.value,
                                    f"pem: the cluster is the target of flow {name}, and Strimzi's KafkaConnect "
                                    "trusts PEM certificates only (spec.tls.trustedCertificates)"))
        problems.extend(_check_overrides(where, flow))
    return problems


def _check_overrides(where: str, flow: Flow) -> list[Problem]:
    problems = []
    for connector in ("source", "checkpoint", "heartbeat"):
        for key in sorted(getattr(flow.config, connector)):
            field = f"config.{connector}.{key}"
            owned_connection = any(key.startswith(p) and key[len(p):].startswith(CONNECTION_KEYS)
                                   for p in MANAGED_PREFIXES)
            if key in MANAGED_KEYS or owned_connection:
                problems.append(Problem(where, field, key, "a property the program does not set itself "
                                        "(topics, groups, policy and cluster connections come from the flow)"))
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
    return found


def check_transitions(topo: Topology, previous_flows: dict | None) -> list[Problem]:
    """Changes that must not be made in one step, judged against the stack's previous outputs."""
    problems = []
    for index, flow in enumerate(topo.flows):
        before = (previous_flows or {}).get(flow.flow_name) or {}
        if flow.exactlyOnce is ExactlyOnce.enabled and before.get("exactlyOnce") == ExactlyOnce.disabled.value:
            problems.append(Problem(
                f"flows[{index}] ({flow.flow_name})", "exactlyOnce", flow.exactlyOnce.value,
                "preparing first: this flow's running Connect cluster has exactly-once disabled. Deploy "
                "exactlyOnce: preparing, wait until the Connect pods' rolling restart has finished "
                f"(kubectl get pods -n {flow.flow_name} --watch), then deploy exactlyOnce: enabled"))
    return problems


# ---------------------------------------------------------------- loading


def _problems_from(exc: ValidationError, data: Any) -> list[Problem]:
    problems = []
    for err in exc.errors():
        loc = list(err["loc"])
        where, field = _where(loc, data)
        value = err.get("input")
        if err["type"] == "extra_forbidden":
            problems.append(Problem(where, field, loc[-1], "a known key (unknown keys are errors; see docs/topology.md)"))
        elif err["type"] == "missing":
            problems.append(Problem(where, field, None, "a value (required)"))
        else:
            message = err["msg"].removeprefix("Value error, ")
            problems.append(Problem(where, field, _short(value), message))
    return problems


def _where(loc: list, data: Any) -> tuple[str, str]:
    """Name the flow or cluster an error belongs to, and the field path within it."""
    if len(loc) >= 2 and loc[0] == "flows" and isinstance(loc[1], int):
        name = "?"
        try:
            raw = data["flows"][loc[1]]
            name = raw.get("name") or default_flow_name(raw.get("source"), raw.get("target"))
        except (KeyError, IndexError, TypeError, AttributeError):
            pass
        return f"flows[{loc[1]}] ({name})", ".".join(str(p) for p in loc[2:]) or "(flow)"
    if len(loc) >= 2 and loc[0] == "clusters":
        return f"clusters.{loc[1]}", ".".join(str(p) for p in loc[2:]) or "(cluster)"
    return "topology", ".".join(str(p) for p in loc) or "(root)"


class _Abbreviated(str):
    def __repr__(self) -> str:
        return str(self)


def _short(value: Any) -> Any:
    if isinstance(value, (dict, list)) and len(repr(value)) > 160:
        return _Abbreviated(repr(value)[:157] + "...")
    return value


def parse(data: Any, source: str = "topology") -> Topology:
    """Validate raw topology data; raise TopologyError with every problem found."""
    if not isinstance(data, dict):
        raise TopologyError([Problem(source, "(root)", type(data).__name__, "a mapping with clusters and flows")])
    try:
        topo = Topology.model_validate(data)
    except ValidationError as exc:
        raise TopologyError(_problems_from(exc, data)) from None
    problems = check(topo)
    if problems:
        raise TopologyError(problems)
    return topo


def load(path: str | Path) -> Topology:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TopologyError([Problem(str(path), "(file)", None, f"a readable topology file ({exc.strerror})")]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TopologyError([Problem(str(path), "(yaml)", None, f"valid YAML: {exc}")]) from None
    return parse(data, str(path))


def json_schema() -> dict:
    schema = Topology.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "kafka-replication topology"
    return schema
