"""An executable model of what a Connect worker does with our connector configurations.

Schemas and the API server accept a configuration that the worker may still refuse. Each rule
here cites the Apache Kafka or Strimzi file and tag it comes from; the JDK judges the resulting
client configurations (ClientCheck.java). The model is written from those sources, independently of infra/: the
plan's own reading of them is what it checks.

1. What each release writes to /tmp/strimzi-connect.properties (`worker_file`).
2. Single-pass config-provider resolution (`resolve_once`): Kafka ConfigTransformer.
3. How Connect builds a connector's clients from worker keys plus `*.override.*`
   (`framework_clients`), and MirrorMaker 2's own clients from `source.cluster.*` /
   `target.cluster.*` (`mirror_clients`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from infra.core.releases import Release, WorkerFile

WORKER_FILE = "/tmp/strimzi-connect.properties"
STORE_DIR = "/tmp/kafka"  # kafka_connect_run.sh (Strimzi 0.43.0): stores made in the pod
VARIABLE = re.compile(r"\$\{([^}:]*):(?:([^}]*):)?([^}]*)\}")


@dataclass(frozen=True)
class Cluster:
    """What the model needs of a Kafka cluster: its connection and its real material."""
    alias: str
    bootstrap: str
    protocol: str
    mechanism: str | None
    username: str | None
    password: str | None
    ca_pem: str | None
    client_cert_pem: str | None
    client_key_pem: str | None


def worker_file(release: Release, target: Cluster, namespace: str, connect: str, store_password: str
                ) -> tuple[dict[str, str], dict[str, str]]:
    """(the file as written, the worker's own resolved view). Unprefixed keys plus copies under
    `producer.`, `consumer.`, `admin.`.

    literalStores: Strimzi 0.43.0 and 0.45.0 docker-images/kafka-based/kafka/scripts/
    kafka_connect_config_generator.sh: literal values; PKCS12 stores in /tmp/kafka with a random
    password (kafka_connect_run.sh); `ssl.truststore.type=PKCS12` only unprefixed.
    pemReferences: Strimzi 0.48.0 and 1.2.0 cluster-operator/.../model/
    KafkaConnectConfigurationBuilder.java: `${strimzisecrets:...}` PEM trust and keys, the JAAS
    password behind `${strimzidir:...}`, `ssl.*.type=PEM` under every prefix.
    """
    written: dict[str, str] = {"bootstrap.servers": target.bootstrap}
    resolved: dict[str, str] = {}
    prefixes = ("", "producer.", "consumer.", "admin.")

    def put(key: str, raw: str, value: str | None = None, only_unprefixed: bool = False) -> None:
        for p in ("",) if only_unprefixed else prefixes:
            written[p + key] = raw
            resolved[p + key] = raw if value is None else value

    put("security.protocol", target.protocol)
    tls = target.protocol.endswith("SSL")
    if release.worker_file is WorkerFile.literalStores:
        if tls:
            put("ssl.truststore.location", f"{STORE_DIR}/cluster.truststore.p12")
            put("ssl.truststore.password", store_password)
            put("ssl.truststore.type", "PKCS12", only_unprefixed=True)
            if target.client_cert_pem and target.protocol == "SSL":
                put("ssl.keystore.location", f"{STORE_DIR}/cluster.keystore.p12")
                put("ssl.keystore.password", store_password)
                put("ssl.keystore.type", "PKCS12")
        if target.mechanism:
            put("sasl.mechanism", target.mechanism)
            put("sasl.jaas.config", _jaas(target, target.password))
    else:
        if tls:
            put("ssl.truststore.certificates", f"${{strimzisecrets:{namespace}/{connect}-tls-trusted-certs:ca.crt}}",
                target.ca_pem)
            put("ssl.truststore.type", "PEM")
            if target.client_cert_pem and target.protocol == "SSL":
                put("ssl.keystore.certificate.chain", f"${{strimzisecrets:{namespace}/target-client:tls.crt}}",
                    target.client_cert_pem)
                put("ssl.keystore.key", f"${{strimzisecrets:{namespace}/target-client:tls.key}}",
                    target.client_key_pem)
                put("ssl.keystore.type", "PEM")
        if target.mechanism:
            put("sasl.mechanism", target.mechanism)
            put("sasl.jaas.config", _jaas(target, "${strimzidir:/opt/kafka/connect-password/target:pass}"),
                _jaas(target, target.password))
    resolved["bootstrap.servers"] = target.bootstrap
    return written, resolved


def _jaas(cluster: Cluster, password: str | None) -> str:
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if cluster.mechanism == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    return f'{module} required username="{cluster.username}" password="{password}";'


def resolve_once(config: dict, lookup) -> dict[str, str]:
    """Kafka ConfigTransformer (clients/.../config/ConfigTransformer.java, 3.8.0): every
    `${provider:path:key}` is looked up and substituted in one pass; a substituted value that
    itself holds `${...}` stays as it is. `lookup(provider, path, key)` returns None when the
    provider has no such key, and the variable then stays unresolved too."""
    out = {}
    for k, v in config.items():
        text = str(v).lower() if isinstance(v, bool) else str(v)

        def sub(m: re.Match) -> str:
            found = lookup(m.group(1), m.group(2) or "", m.group(3))
            return m.group(0) if found is None else found
        out[k] = VARIABLE.sub(sub, text)
    return out


def with_prefix(config: dict, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)}


def framework_clients(worker: dict[str, str], connector: dict[str, str], exactly_once: bool) -> dict[str, dict]:
    """The Connect framework's clients of a source connector's task, as Worker.java (3.8.0)
    builds them: `baseProducerConfigs` (worker bootstrap, then `producer.*`, then the connector's
    `producer.override.*`: an override replaces a key, nothing removes one); with
    `exactly.once.source.support=enabled` also the offsets consumer (`baseConsumerConfigs`:
    `consumer.*` then `consumer.override.*`) and the admin (`adminConfigs`: every unprefixed
    worker key, then `admin.*`, then `admin.override.*`). The connector client config override
    policy is Kafka's default, All (WorkerConfig.CONNECTOR_CLIENT_POLICY_CLASS_DEFAULT)."""
    clients = {"producer": {"bootstrap.servers": worker["bootstrap.servers"], **with_prefix(worker, "producer."),
                            **with_prefix(connector, "producer.override.")}}
    if exactly_once:
        clients["consumer"] = {"bootstrap.servers": worker["bootstrap.servers"], **with_prefix(worker, "consumer."),
                               **with_prefix(connector, "consumer.override.")}
        unprefixed = {k: v for k, v in worker.items() if not k.startswith(("producer.", "consumer.", "admin."))}
        clients["admin"] = {**unprefixed, **with_prefix(worker, "admin."), **with_prefix(connector, "admin.override.")}
    return clients


def mirror_clients(connector: dict[str, str]) -> dict[str, dict]:
    """MirrorMaker 2's own clients (connect/mirror/.../MirrorConnectorConfig.java, 3.8.0):
    `source.cluster.*` and `target.cluster.*` of the connector config, nothing of the worker."""
    return {side: with_prefix(connector, f"{side}.cluster.") for side in ("source", "target")
            if any(k.startswith(f"{side}.cluster.") and k != f"{side}.cluster.alias" for k in connector)}


CONNECTION_KEYS = ("bootstrap.servers", "security.protocol", "sasl.", "ssl.")


def connection_only(client: dict) -> dict:
    return {k: v for k, v in client.items() if k.startswith(CONNECTION_KEYS)}
