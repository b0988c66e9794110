"""Config-provider references: the one home of the `${provider:path:key}` syntax.

Connectors never hold a connection value themselves: their configs hold references that the
Connect worker resolves through its config providers (KIP-297), which the KafkaConnect's
`spec.config` declares (`WORKER_CONFIG`). Every reference the program writes is made here and
every reference it reads back (the RBAC rules that let the providers read, the bidirectional
symmetry check) is parsed here, with Kafka's own pattern (`ConfigTransformer.DEFAULT_PATTERN`,
clients/src/main/java/org/apache/kafka/common/config/ConfigTransformer.java, Kafka 3.8.0).
Strimzi's Kubernetes providers take the path `<namespace>/<name>` (strimzi/kafka-kubernetes-
config-provider); Kafka's file provider takes a file path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from enum import Enum


class Provider(str, Enum):
    """The config providers of every Connect cluster we write, by the name references use."""

    CONFIGMAP = "cfmap"
    SECRET = "secret"
    FILE = "file"

    @property
    def provider_class(self) -> str:
        return _CLASSES[self]


_CLASSES = {
    Provider.CONFIGMAP: "io.strimzi.kafka.KubernetesConfigMapConfigProvider",
    Provider.SECRET: "io.strimzi.kafka.KubernetesSecretConfigProvider",
    Provider.FILE: "org.apache.kafka.common.config.provider.FileConfigProvider",
}

# The KafkaConnect `spec.config` keys that install the providers (Kafka WorkerConfig
# `config.providers`, `config.providers.<name>.class`).
WORKER_CONFIG: dict[str, str] = {
    "config.providers": ",".join(p.value for p in Provider),
    **{f"config.providers.{p.value}.class": p.provider_class for p in Provider},
}

# Kafka's ConfigTransformer.DEFAULT_PATTERN: `${provider:path:key}`, path optional.
PATTERN = re.compile(r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}")
# What a user-written value may not contain: anything the worker would try to resolve.
MARKER = "${"


_KUBERNETES = frozenset({Provider.CONFIGMAP.value, Provider.SECRET.value})  # Strimzi's providers


@dataclass(frozen=True)
class Reference:
    provider: str
    path: str
    key: str

    @property
    def kubernetes_object(self) -> tuple[str, str] | None:
        """(namespace, name) of the ConfigMap or Secret a Kubernetes provider reads."""
        if self.provider not in _KUBERNETES or "/" not in self.path:
            return None
        namespace, name = self.path.split("/", 1)
        return namespace, name


def kubernetes(provider: Provider, namespace: str, name: str, key: str) -> str:
    """A key of a ConfigMap (`cfmap`) or Secret (`secret`), read by Strimzi's providers."""
    if provider is Provider.FILE:
        raise ValueError("a Kubernetes reference names a ConfigMap or a Secret")
    return f"${{{provider.value}:{namespace}/{name}:{key}}}"


def cfmap(namespace: str, name: str, key: str) -> str:
    return kubernetes(Provider.CONFIGMAP, namespace, name, key)


def file(path: str, key: str) -> str:
    """A key of a properties file of the worker's pod (Kafka's FileConfigProvider)."""
    return f"${{{Provider.FILE.value}:{path}:{key}}}"


def configmap_key(value: object) -> tuple[str, str, str] | None:
    """(namespace, name, key) when the whole value is one `${cfmap:<namespace>/<name>:<key>}`
    reference (a replication policy's class, read from the flow's replication ConfigMap)."""
    text = str(value).strip()
    if not (text.startswith(MARKER) and text.endswith("}")):
        return None  # before the search: most values hold no reference (a plan asks of every one)
    found = parse(text)
    if len(found) != 1:
        return None
    where = found[0].kubernetes_object if found[0].provider == Provider.CONFIGMAP.value else None
    return (where[0], where[1], found[0].key) if where else None


def parse(value: object) -> list[Reference]:
    """Every reference in a config value, as the worker finds them."""
    text = str(value)
    return list(_parsed(text)) if MARKER in text else []


# A plan reads each connector value several times (its readers' RBAC, its digest, its versions,
# its classes), and the same values recur across a flow's connectors: each is parsed once.
@lru_cache(maxsize=1 << 16)
def _parsed(text: str) -> tuple[Reference, ...]:
    return tuple(Reference(m.group(1), m.group(3) or "", m.group(4)) for m in PATTERN.finditer(text))
