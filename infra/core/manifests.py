"""The Kubernetes objects the plan writes, typed with Kubernetes' own field names.

TypedDicts rather than classes: a manifest is exactly the JSON the API server receives (the
render writes it as it stands and the API-server tier applies it), and the type checker holds
every generator to these shapes. Only the fields we write are declared. Secret values are
`SecretValue`s until the components resolve them from Pulumi secret config.

Strimzi's fields follow its CRDs (KafkaConnect and KafkaConnector of kafka.strimzi.io v1beta2 and
v1, generated from each release's published artifacts: infra/tools/rehearsal/crds.py); pod
templates and audit workloads, which no code reads back, are plain JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, NotRequired, TypedDict, Union

JSON = dict[str, Any]
# A Kafka configuration value as Connect takes it (ConfigDef parses strings, ints and booleans).
ConfigValue = str | int | bool


@dataclass(frozen=True)
class SecretValue:
    """A value that exists only at deploy time, built from Pulumi secret config.

    `transform` is a pure function of the config values (in `config_keys` order). `binary`
    values are base64 in config and land in a Secret's `data`; others in `stringData`.
    """

    config_keys: tuple[str, ...]
    transform: Callable[..., str] | None = field(default=None, compare=False)
    binary: bool = False

    def build(self, *values: str) -> str:
        return self.transform(*values) if self.transform else values[0]


@dataclass(frozen=True)
class SecretParts(SecretValue):
    """A Secret value that lands under as many keys as it has parts, known only at deploy time:
    planned under a key pattern with one `*` (`ca-*.crt`), part i of `split(value)` lands under
    the pattern with `*` replaced by i. A CA bundle is one such value: operators that trust one
    certificate per key (keytool's import, Strimzi 1.x's re-encoding) then trust every part
    (each release's reading: infra/tools/rehearsal/operator.py `worker`)."""

    split: Callable[[str], list[str]] | None = field(default=None, compare=False)

    def parts(self, pattern: str, value: str) -> dict[str, str]:
        assert self.split is not None and pattern.count("*") == 1, "a pattern with one * and a split"
        return {pattern.replace("*", str(i)): part for i, part in enumerate(self.split(value))}


class ObjectMeta(TypedDict):
    name: str
    namespace: NotRequired[str]
    labels: dict[str, str]
    annotations: NotRequired[dict[str, str]]


class Namespace(TypedDict):
    apiVersion: Literal["v1"]
    kind: Literal["Namespace"]
    metadata: ObjectMeta


class ConfigMap(TypedDict):
    apiVersion: Literal["v1"]
    kind: Literal["ConfigMap"]
    metadata: ObjectMeta
    data: dict[str, str]


class Secret(TypedDict):
    apiVersion: Literal["v1"]
    kind: Literal["Secret"]
    metadata: ObjectMeta
    type: str
    data: NotRequired[dict[str, str | SecretValue]]
    stringData: NotRequired[dict[str, str | SecretValue]]


class ResourceQuotaSpec(TypedDict):
    hard: dict[str, str]


class ResourceQuota(TypedDict):
    apiVersion: Literal["v1"]
    kind: Literal["ResourceQuota"]
    metadata: ObjectMeta
    spec: ResourceQuotaSpec


class ServiceAccount(TypedDict):
    apiVersion: Literal["v1"]
    kind: Literal["ServiceAccount"]
    metadata: ObjectMeta
    automountServiceAccountToken: bool


class PolicyRule(TypedDict):
    apiGroups: list[str]
    resources: list[str]
    verbs: list[str]
    resourceNames: NotRequired[list[str]]


class Role(TypedDict):
    apiVersion: Literal["rbac.authorization.k8s.io/v1"]
    kind: Literal["Role"]
    metadata: ObjectMeta
    rules: list[PolicyRule]


class Subject(TypedDict):
    kind: str
    name: str
    namespace: str


class RoleRef(TypedDict):
    kind: str
    name: str
    apiGroup: str


class RoleBinding(TypedDict):
    apiVersion: Literal["rbac.authorization.k8s.io/v1"]
    kind: Literal["RoleBinding"]
    metadata: ObjectMeta
    subjects: list[Subject]
    roleRef: RoleRef


class PersistentVolumeClaim(TypedDict):
    apiVersion: Literal["v1"]
    kind: Literal["PersistentVolumeClaim"]
    metadata: ObjectMeta
    spec: JSON


class NetworkPolicy(TypedDict):
    apiVersion: Literal["networking.k8s.io/v1"]
    kind: Literal["NetworkPolicy"]
    metadata: ObjectMeta
    spec: JSON


class CronJob(TypedDict):
    apiVersion: Literal["batch/v1"]
    kind: Literal["CronJob"]
    metadata: ObjectMeta
    spec: JSON


# ----------------------------------------------------------------- Strimzi


class CertSecretSource(TypedDict):
    secretName: str
    certificate: NotRequired[str]   # one key, or
    pattern: NotRequired[str]       # every key the glob matches (CRD: exactly one of the two)


class ClientTls(TypedDict):
    trustedCertificates: list[CertSecretSource]


class PasswordSecret(TypedDict):
    secretName: str
    password: str


class CertAndKey(TypedDict):
    secretName: str
    certificate: str
    key: str


class Authentication(TypedDict):
    type: str
    username: NotRequired[str]
    passwordSecret: NotRequired[PasswordSecret]
    certificateAndKey: NotRequired[CertAndKey]


class KafkaConnectSpec(TypedDict):
    version: str
    replicas: int
    image: NotRequired[str]
    bootstrapServers: str
    # kafka.strimzi.io/v1 only; v1beta2 has them in `config`.
    groupId: NotRequired[str]
    offsetStorageTopic: NotRequired[str]
    configStorageTopic: NotRequired[str]
    statusStorageTopic: NotRequired[str]
    tls: NotRequired[ClientTls]
    authentication: NotRequired[Authentication]
    resources: NotRequired[JSON]
    template: NotRequired[JSON]
    metricsConfig: NotRequired[JSON]  # infra/plan/metrics.py
    config: dict[str, ConfigValue]


class KafkaConnect(TypedDict):
    apiVersion: str  # kafka.strimzi.io/v1beta2 or /v1, by operator release
    kind: Literal["KafkaConnect"]
    metadata: ObjectMeta
    spec: KafkaConnectSpec


# `class` is a Python keyword: the functional form.
class AutoRestart(TypedDict):
    enabled: bool
    maxRestarts: NotRequired[int]


KafkaConnectorSpec = TypedDict("KafkaConnectorSpec", {
    "class": str,
    "tasksMax": int,
    "autoRestart": NotRequired[AutoRestart],
    "config": dict[str, ConfigValue],
    "state": NotRequired[str],
    "listOffsets": NotRequired[JSON],   # {toConfigMap: {name}} (Strimzi 0.44+)
    "alterOffsets": NotRequired[JSON],  # {fromConfigMap: {name}}
})


class KafkaConnector(TypedDict):
    apiVersion: str
    kind: Literal["KafkaConnector"]
    metadata: ObjectMeta
    spec: KafkaConnectorSpec


Manifest = Union[Namespace, ConfigMap, Secret, ResourceQuota, ServiceAccount, Role, RoleBinding,
                 PersistentVolumeClaim, NetworkPolicy, CronJob, KafkaConnect, KafkaConnector]


def meta(name: str, namespace: str | None, labels: dict[str, str],
         annotations: dict[str, str] | None = None) -> ObjectMeta:
    metadata: ObjectMeta = ({"name": name, "namespace": namespace, "labels": labels} if namespace is not None
                            else {"name": name, "labels": labels})
    if annotations:
        metadata["annotations"] = annotations
    return metadata


def opaque_secret(metadata: ObjectMeta, values: Mapping[str, str | SecretValue]) -> Secret:
    """An Opaque Secret: binary values (base64 in secret config) in `data`, the others in
    `stringData`, keys sorted."""
    secret: Secret = {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": "Opaque"}
    binary = {k: v for k, v in sorted(values.items()) if isinstance(v, SecretValue) and v.binary}
    text = {k: v for k, v in sorted(values.items()) if k not in binary}
    if binary:
        secret["data"] = dict(binary)
    if text:
        secret["stringData"] = text
    return secret


def secret_values(manifest: Manifest) -> list[SecretValue]:
    """The values of a Secret that come from Pulumi secret config, in key order."""
    if manifest["kind"] != "Secret":
        return []
    return [v for section in (manifest.get("data", {}), manifest.get("stringData", {}))
            for v in section.values() if isinstance(v, SecretValue)]
