"""The stack outputs contract, for the teams that read our outputs.

Version OUTPUTS_VERSION, described field by field in docs/outputs.md and as a JSON Schema here
(`SCHEMA`, the one definition: docs/outputs.schema.json is written from it by `python -m
contract.outputs`; the tests hold every render to it, and the committed file equal to it).
Within a version, fields are only added; a removal or a change of meaning raises the version,
and `read` refuses a version it does not know rather than misread it.

No dependencies (Pulumi only for `from_stack_reference`), so another team's program can copy or
import it:

    ref = pulumi.StackReference("org/kafka-replication/prod")
    flows = outputs.from_stack_reference(ref).apply(lambda o: o.flows["orders-to-eu"].connect_rest_url)

`read` accepts exactly what the schema accepts in the fields it reads (JSON types, with a bool
never standing for a number, and the schema's nullable fields as None) and refuses anything else
with a ContractError naming the full path of the value, e.g.
`flows.orders-to-eu.internalTopics.target.heartbeats: got an integer; expected a non-empty string
or null`. It raises nothing else, whatever JSON value it is given.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Mapping

OUTPUTS_VERSION: Final = 1


# Parts the schema repeats: a name that may be null, and where a flow's or an audit's objects are.
_NULLABLE_NAME = {"oneOf": [{"type": "null"}, {"$ref": "#/$defs/name"}]}
_HEARTBEATS = {**_NULLABLE_NAME, "description": "null when the flow's heartbeats are off."}
_KUBERNETES_CLUSTER = {"$ref": "#/$defs/name",
                       "description": ("The Kubernetes cluster (under the topology's `kubernetes` section) it is "
                                       "deployed to; absent without that section.")}

# The contract as a JSON Schema (draft 2020-12): what `pulumi stack output --json` returns.
# `read` below accepts exactly what it accepts in the fields it reads.
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": f"kafka-replication/outputs/{OUTPUTS_VERSION}",
    "title": f"kafka-replication stack outputs, contract version {OUTPUTS_VERSION}",
    "description": ("What `pulumi stack output --json` returns for a kafka-replication stack "
                    "(docs/outputs.md). Within one outputsVersion, fields are only ever added; a removal "
                    "or a change of meaning raises the version. contract/outputs.py reads it in Python."),
    "type": "object",
    "required": ["outputsVersion", "operatorFlavour", "operator", "flows"],
    "additionalProperties": False,
    "properties": {
        "outputsVersion": {"const": OUTPUTS_VERSION},
        "operatorFlavour": {"enum": ["csm", "strimzi"]},
        "operator": {
            "type": "object",
            "required": ["flavour", "version", "strimziVersion", "kafkaVersion"],
            "additionalProperties": False,
            "properties": {
                "flavour": {"enum": ["csm", "strimzi"]},
                "version": {"type": "string"},
                "strimziVersion": {"type": "string"},
                "kafkaVersion": {"type": "string"},
            },
        },
        "flows": {"type": "object", "additionalProperties": {"$ref": "#/$defs/flow"}},
        "audit": {"$ref": "#/$defs/audit"},
        "audits": {
            "type": "object",
            "additionalProperties": {"$ref": "#/$defs/audit"},
            "description": ("With a `kubernetes` section: the audit of each Kubernetes cluster hosting "
                            "flows, by cluster name (`audit` is then absent)."),
        },
    },
    "$defs": {
        "name": {"type": "string", "minLength": 1},
        "names": {"type": "array", "items": {"$ref": "#/$defs/name"}},
        "connectors": {
            "type": "object",
            "required": ["source", "checkpoint", "heartbeat"],
            "additionalProperties": False,
            "properties": {
                "source": {"$ref": "#/$defs/names"},
                "checkpoint": {"$ref": "#/$defs/names"},
                "heartbeat": {"$ref": "#/$defs/names"},
            },
        },
        "connectCluster": {
            "type": "object",
            "required": [
                "name",
                "namespace",
                "restService",
                "restUrl",
                "serviceAccount",
                "connectGroupId",
                "connectConfigStorage",
                "connectOffsetStorage",
                "connectStatusStorage",
                "connectors",
                "sources",
            ],
            "additionalProperties": False,
            "properties": {
                "kubernetesCluster": _KUBERNETES_CLUSTER,
                "name": {"$ref": "#/$defs/name"},
                "namespace": {"$ref": "#/$defs/name"},
                "restService": {"$ref": "#/$defs/name"},
                "restUrl": {"type": "string", "pattern": "^http://"},
                "serviceAccount": {"$ref": "#/$defs/name"},
                "connectGroupId": {"$ref": "#/$defs/name"},
                "connectConfigStorage": {"$ref": "#/$defs/name"},
                "connectOffsetStorage": {"$ref": "#/$defs/name"},
                "connectStatusStorage": {"$ref": "#/$defs/name"},
                "connectVersion": {
                    "type": "string",
                    "description": ("The KafkaConnect's `spec.version`: the Kafka version its operator checks "
                                    "(added within version 1; absent in older outputs)."),
                },
                "connectImage": {
                    "type": ["string", "null"],
                    "description": ("The KafkaConnect's `spec.image`, null for the release's own image (added "
                                    "within version 1; absent in older outputs)."),
                },
                "connectors": {"$ref": "#/$defs/connectors"},
                "sources": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["connector", "topics", "topicsExclude"],
                        "additionalProperties": False,
                        "properties": {
                            "connector": {"$ref": "#/$defs/name"},
                            "topics": {"$ref": "#/$defs/names"},
                            "topicsExclude": {"$ref": "#/$defs/names"},
                        },
                    },
                },
            },
        },
        "procedure": {"enum": ["continuous", "cutoff", "disaster"]},
        "failover": {
            "type": "object",
            "required": ["procedure", "procedures", "waitSeconds", "topics"],
            "additionalProperties": False,
            "properties": {
                "procedure": {
                    "$ref": "#/$defs/procedure",
                    "description": "The flow's `failover.procedure`.",
                },
                "procedures": {
                    "type": "array",
                    "items": {"$ref": "#/$defs/procedure"},
                    "description": "The procedures the flow's replication policy and checkpoints allow.",
                },
                "waitSeconds": {
                    "oneOf": [{"type": "null"}, {"type": "integer", "minimum": 0}],
                    "description": ("2 * (emit.checkpoints.interval.seconds + "
                                    "sync.group.offsets.interval.seconds): how long consumers wait after "
                                    "stopping; null when checkpoints or group offset sync are off."),
                },
                "topics": {
                    "$ref": "#/$defs/names",
                    "description": ("Java regexes, matched against whole names, of the topics consumers "
                                    "subscribe to on the target after the flow's procedure."),
                },
            },
        },
        "flow": {
            "type": "object",
            "required": [
                "sourceAlias",
                "targetAlias",
                "namespace",
                "replicationPolicy",
                "replicationPolicyClass",
                "topicPrefix",
                "topics",
                "topicsExclude",
                "exactlyOnce",
                "startFrom",
                "bidirectional",
                "connectCluster",
                "connectRestService",
                "connectRestUrl",
                "connectServiceAccount",
                "connectors",
                "connectClusters",
                "internalTopics",
            ],
            "additionalProperties": False,
            "properties": {
                "kubernetesCluster": _KUBERNETES_CLUSTER,
                "failover": {
                    "$ref": "#/$defs/failover",
                    "description": ("How consumers move to the target (docs/operations.md, Failover and "
                                    "failback); added within version 1, absent from outputs written before"
                                    " it."),
                },
                "sourceAlias": {"$ref": "#/$defs/name"},
                "targetAlias": {"$ref": "#/$defs/name"},
                "namespace": {"$ref": "#/$defs/name"},
                "replicationPolicy": {"enum": ["default", "identity"]},
                "replicationPolicyClass": {"$ref": "#/$defs/name"},
                "topicPrefix": {"type": "string"},
                "topics": {"$ref": "#/$defs/names"},
                "topicsExclude": {"$ref": "#/$defs/names"},
                "exactlyOnce": {"enum": ["disabled", "preparing", "enabled"]},
                "startFrom": {"enum": ["earliest", "latest"]},
                "bidirectional": {
                    "oneOf": [
                        {"type": "null"},
                        {
                            "type": "object",
                            "required": ["partner", "loopHeader", "filteredHeader"],
                            "additionalProperties": False,
                            "properties": {
                                "partner": {"$ref": "#/$defs/name"},
                                "loopHeader": {"$ref": "#/$defs/name"},
                                "filteredHeader": {"$ref": "#/$defs/name"},
                            },
                        },
                    ],
                },
                "connectCluster": {"$ref": "#/$defs/name"},
                "connectRestService": {"$ref": "#/$defs/name"},
                "connectRestUrl": {"type": "string", "pattern": "^http://"},
                "connectServiceAccount": {"$ref": "#/$defs/name"},
                "connectors": {"$ref": "#/$defs/connectors"},
                "connectClusters": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"$ref": "#/$defs/connectCluster"},
                },
                "internalTopics": {
                    "type": "object",
                    "required": ["source", "target"],
                    "additionalProperties": False,
                    "properties": {
                        "source": {
                            "type": "object",
                            "required": ["heartbeats", "offsetSyncs"],
                            "additionalProperties": False,
                            "properties": {
                                "heartbeats": _HEARTBEATS,
                                "offsetSyncs": _NULLABLE_NAME,
                            },
                        },
                        "target": {
                            "type": "object",
                            "required": [
                                "heartbeats",
                                "checkpoints",
                                "connectGroupId",
                                "connectConfigStorage",
                                "connectOffsetStorage",
                                "connectStatusStorage",
                            ],
                            "additionalProperties": False,
                            "properties": {
                                "heartbeats": _HEARTBEATS,
                                "checkpoints": _NULLABLE_NAME,
                                "connectGroupId": {"$ref": "#/$defs/name"},
                                "connectConfigStorage": {"$ref": "#/$defs/name"},
                                "connectOffsetStorage": {"$ref": "#/$defs/name"},
                                "connectStatusStorage": {"$ref": "#/$defs/name"},
                            },
                        },
                    },
                },
            },
        },
        "audit": {
            "type": "object",
            "required": [
                "namespace",
                "cronJob",
                "configMap",
                "serviceAccount",
                "schedule",
                "activeDeadlineSeconds",
                "mode",
                "reports",
            ],
            "additionalProperties": False,
            "properties": {
                "kubernetesCluster": _KUBERNETES_CLUSTER,
                "namespace": {"$ref": "#/$defs/name"},
                "cronJob": {"$ref": "#/$defs/name"},
                "configMap": {"$ref": "#/$defs/name"},
                "serviceAccount": {"$ref": "#/$defs/name"},
                "schedule": {"type": "string"},
                "activeDeadlineSeconds": {"type": "integer", "minimum": 60},
                "mode": {"enum": ["local", "executors"]},
                "reports": {
                    "type": "object",
                    "required": ["path", "latest", "persistentVolumeClaim", "pushgateway"],
                    "additionalProperties": False,
                    "properties": {
                        "path": {"type": "string"},
                        "latest": {"type": "string"},
                        "persistentVolumeClaim": {"$ref": "#/$defs/name"},
                        "pushgateway": {"oneOf": [{"type": "null"}, {"type": "string"}]},
                    },
                },
            },
        },
    },
}


class ContractError(ValueError):
    """Outputs this reader cannot read as the contract says."""


@dataclass(frozen=True)
class ConnectCluster:
    name: str
    namespace: str
    rest_url: str
    group_id: str
    source_connectors: tuple[str, ...]
    # Added within version 1 (the schema always had them): the cluster's other connectors.
    checkpoint_connectors: tuple[str, ...] = ()
    heartbeat_connectors: tuple[str, ...] = ()
    # Added within version 1: the KafkaConnect's `spec.version` and `spec.image` (None: absent, or
    # the release's own image).
    connect_version: str | None = None
    connect_image: str | None = None


@dataclass(frozen=True)
class Failover:
    """How consumers move to the target (docs/operations.md, "Failover and failback")."""
    procedure: str                 # the flow's own: continuous, cutoff or disaster
    procedures: tuple[str, ...]    # those its replication policy and checkpoints allow
    wait_seconds: int | None       # 2 * (emit + sync); None without synced group offsets
    topics: tuple[str, ...]        # Java regexes consumers subscribe to on the target afterwards


@dataclass(frozen=True)
class Flow:
    name: str
    source_alias: str
    target_alias: str
    namespace: str
    replication_policy: str
    topic_prefix: str
    topics: tuple[str, ...]
    connect_rest_url: str
    connect_clusters: tuple[ConnectCluster, ...]
    target_heartbeats_topic: str | None  # None when the flow's heartbeats are off
    target_checkpoints_topic: str | None  # None when its checkpoints are off
    partner: str | None  # the other direction of a bidirectional pair
    kubernetes_cluster: str | None = None  # with a `kubernetes` section: where it is deployed
    failover: Failover | None = None  # added within version 1: None in outputs written before it

    def replicated_topic(self, topic: str) -> str:
        """The target topic a source topic is replicated to."""
        return self.topic_prefix + topic


@dataclass(frozen=True)
class StackOutputs:
    version: int
    operator_flavour: str
    operator_version: str
    kafka_version: str
    flows: dict[str, Flow]
    audit_namespace: str | None
    # With a `kubernetes` section: the audit's namespace per Kubernetes cluster.
    audit_namespaces: dict[str, str] | None = None
    # Added within version 1: each audit CronJob by Kubernetes cluster (None without a
    # `kubernetes` section), as (namespace, CronJob name).
    audit_cron_jobs: dict[str | None, tuple[str, str]] | None = None


# What the schema calls a name ({"type": "string", "minLength": 1}), and plain text.
NAME = "a non-empty string"
TEXT = "a string"


def _describe(value: Any) -> str:
    """A value's JSON type; never the value itself, which may be large."""
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: a bool is an int in Python, not in JSON
        return "true" if value else "false"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "an empty string" if not value else "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return f"a {type(value).__name__}, not a JSON value"


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _wrong(path: str, value: Any, expected: str) -> ContractError:
    return ContractError(f"{path}: got {_describe(value)}; expected {expected}")


def _field(values: Mapping[str, Any], key: str, path: str, expected: str, nullable: bool = False) -> Any:
    if key not in values:
        if nullable:
            # A StackReference read by the Python SDK leaves out every null inside an output
            # (`pulumi stack output --json` keeps them): absent is null (tests/engine/test_engine.py).
            return None
        raise ContractError(f"{_join(path, key)}: missing; expected {expected}")
    return values[key]


def _text(value: Any, path: str, expected: str = NAME, nullable: bool = False) -> Any:
    if value is None and nullable:
        return None
    if not isinstance(value, str) or (expected == NAME and not value):
        raise _wrong(path, value, expected + (" or null" if nullable else ""))
    return value


def _string(values: Mapping[str, Any], key: str, path: str, expected: str = NAME,
            nullable: bool = False) -> Any:
    described = expected + (" or null" if nullable else "")
    return _text(_field(values, key, path, described, nullable), _join(path, key), expected, nullable)


def _mapping(values: Mapping[str, Any], key: str, path: str, nullable: bool = False) -> Any:
    expected = "a mapping" + (" or null" if nullable else "")
    value = _field(values, key, path, expected, nullable)
    if value is None and nullable:
        return None
    if not isinstance(value, Mapping):
        raise _wrong(_join(path, key), value, expected)
    _keys(value, _join(path, key))
    return value


def _keys(values: Mapping[Any, Any], path: str) -> None:
    """JSON keys are strings; a Python caller's mapping may hold others."""
    for key in values:
        if not isinstance(key, str):
            raise ContractError(f"{path}: got a key that is {_describe(key)}; expected string keys")


def _list(values: Mapping[str, Any], key: str, path: str, expected: str) -> list[Any]:
    value = _field(values, key, path, expected)
    if not isinstance(value, list):
        raise _wrong(_join(path, key), value, expected)
    return value


def _names(values: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    where = _join(path, key)
    return tuple(_text(item, _join(where, i)) for i, item in enumerate(_list(values, key, path, "a list of non-empty strings")))


def _optional_name(values: Mapping[str, Any], key: str, path: str, nullable: bool = False) -> str | None:
    """A field added within the version: absent is None, present must have its type."""
    return _string(values, key, path, nullable=nullable) if key in values else None


def _whole(value: Any) -> int | None:
    """An integer of JSON: an int that is not a bool, or a float with no fraction. A
    StackReference hands every number over as a float (Pulumi's protobuf Struct has doubles
    only): the engine tier reads `outputsVersion` as 1.0 there (tests/engine/test_engine.py)."""
    if isinstance(value, bool):  # `True == 1` in Python
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _seconds(values: Mapping[str, Any], key: str, path: str) -> int | None:
    expected = "a whole number of seconds or null"
    value = _field(values, key, path, expected, nullable=True)
    if value is None:
        return None
    seconds = _whole(value)
    if seconds is None or seconds < 0:
        raise _wrong(_join(path, key), value, expected)
    return seconds


def _failover(flow: Mapping[str, Any], path: str) -> Failover | None:
    """A field added within the version: absent is None, present must have its type."""
    if "failover" not in flow:
        return None
    body = _mapping(flow, "failover", path)
    where = _join(path, "failover")
    return Failover(procedure=_string(body, "procedure", where), procedures=_names(body, "procedures", where),
                    wait_seconds=_seconds(body, "waitSeconds", where), topics=_names(body, "topics", where))


def _connect_cluster(value: Any, path: str) -> ConnectCluster:
    if not isinstance(value, Mapping):
        raise _wrong(path, value, "a mapping")
    _keys(value, path)
    connectors, where = _mapping(value, "connectors", path), _join(path, "connectors")
    return ConnectCluster(name=_string(value, "name", path), namespace=_string(value, "namespace", path),
                          rest_url=_string(value, "restUrl", path), group_id=_string(value, "connectGroupId", path),
                          source_connectors=_names(connectors, "source", where),
                          checkpoint_connectors=_names(connectors, "checkpoint", where),
                          heartbeat_connectors=_names(connectors, "heartbeat", where),
                          connect_version=_optional_name(value, "connectVersion", path),
                          connect_image=_optional_name(value, "connectImage", path, nullable=True))


def _flow(name: str, flow: Any, path: str) -> Flow:
    if not isinstance(flow, Mapping):
        raise _wrong(path, flow, "a mapping")
    _keys(flow, path)
    internal = _join(path, "internalTopics")
    target = _mapping(_mapping(flow, "internalTopics", path), "target", internal)
    pair = _mapping(flow, "bidirectional", path, nullable=True)
    clusters = _list(flow, "connectClusters", path, "a list of Connect clusters")
    if not clusters:
        raise ContractError(f"{_join(path, 'connectClusters')}: got an empty list; expected at least one Connect cluster")
    return Flow(
        name=name, source_alias=_string(flow, "sourceAlias", path), target_alias=_string(flow, "targetAlias", path),
        namespace=_string(flow, "namespace", path), replication_policy=_string(flow, "replicationPolicy", path),
        topic_prefix=_string(flow, "topicPrefix", path, TEXT), topics=_names(flow, "topics", path),
        connect_rest_url=_string(flow, "connectRestUrl", path),
        connect_clusters=tuple(_connect_cluster(c, _join(_join(path, "connectClusters"), i))
                               for i, c in enumerate(clusters)),
        target_heartbeats_topic=_string(target, "heartbeats", _join(internal, "target"), nullable=True),
        target_checkpoints_topic=_string(target, "checkpoints", _join(internal, "target"), nullable=True),
        partner=_string(pair, "partner", _join(path, "bidirectional")) if pair is not None else None,
        kubernetes_cluster=_optional_name(flow, "kubernetesCluster", path),
        failover=_failover(flow, path))


def read(values: Mapping[str, Any]) -> StackOutputs:
    """The outputs of `pulumi stack output --json` (or a StackReference's), checked and typed."""
    if not isinstance(values, Mapping):
        raise _wrong("outputs", values, "a mapping")
    _keys(values, "outputs")
    if "outputsVersion" not in values:
        raise ContractError(f"outputsVersion: missing; expected {OUTPUTS_VERSION} (outputs without it predate the "
                            "contract)")
    version = values["outputsVersion"]
    if _whole(version) != OUTPUTS_VERSION:
        got = str(version) if type(version) is int and abs(version) < 1000 else _describe(version)
        raise ContractError(f"outputsVersion: got {got}; expected {OUTPUTS_VERSION}, the version this reader knows")
    operator = _mapping(values, "operator", "")
    flavour, release, kafka = (_string(operator, key, "operator") for key in ("flavour", "version", "kafkaVersion"))
    flows = {name: _flow(name, flow, _join("flows", name)) for name, flow in _mapping(values, "flows", "").items()}
    # Both optional, neither nullable (the schema's): a StackReference leaves an absent one out.
    audit = _mapping(values, "audit", "") if "audit" in values else None
    audits = _mapping(values, "audits", "") if "audits" in values else None
    per_cluster: dict[str, str] | None = None
    cron_jobs: dict[str | None, tuple[str, str]] = {}
    if audit is not None:
        cron_jobs[None] = (_string(audit, "namespace", "audit"), _string(audit, "cronJob", "audit"))
    if audits is not None:
        per_cluster = {}
        for cluster, body in audits.items():
            if not isinstance(body, Mapping):
                raise _wrong(_join("audits", cluster), body, "a mapping")
            per_cluster[cluster] = _string(body, "namespace", _join("audits", cluster))
            cron_jobs[cluster] = (per_cluster[cluster], _string(body, "cronJob", _join("audits", cluster)))
    return StackOutputs(version=version, operator_flavour=flavour, operator_version=release, kafka_version=kafka,
                        flows=flows,
                        audit_namespace=_string(audit, "namespace", "audit") if audit is not None else None,
                        audit_namespaces=per_cluster, audit_cron_jobs=cron_jobs)


def from_stack_reference(ref: Any) -> Any:
    """`pulumi.Output[StackOutputs]` of a StackReference to a kafka-replication stack."""
    import pulumi
    keys = ("outputsVersion", "operatorFlavour", "operator", "flows", "audit", "audits")
    return pulumi.Output.all(*(ref.get_output(k) for k in keys)).apply(
        lambda values: read({k: v for k, v in zip(keys, values) if v is not None}))


def schema_json() -> str:
    """docs/outputs.schema.json as committed: SCHEMA, indented, one final line break."""
    return json.dumps(SCHEMA, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(schema_json(), end="")
