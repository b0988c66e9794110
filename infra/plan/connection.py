"""Connection properties of a Kafka cluster, built once and reused under every prefix.

A `Connection` says, for each client property (`bootstrap.servers`, `sasl.jaas.config`, ...),
which ConfigMap, Secret or worker-file key holds it. The same description yields both the keys
the flow's ConfigMaps and Secrets must contain (`entries`) and the `${cfmap:}`/`${secret:}`/
`${file:}` references a connector uses under `source.cluster.`, `target.cluster.` or
`producer.override.` (`properties`), so a reference can never point at a key nobody created.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from contract.clientprops import (HEARTBEAT_INLINE, HEARTBEAT_OWN, HEARTBEAT_STORES, INLINE_PEM, KEYSTORE_FILE,
                                  STORE_FILES, WORKER_FILE, Security, client_props, heartbeat_props, jaas_config,
                                  pem_keystore)
from infra.core import names, references, stores
from infra.core.manifests import SecretParts, SecretValue
from infra.core.names import FlowNames, secret_key
from infra.core.releases import WorkerFile
from infra.topology.schema import Cluster, TargetConnection, Trust

TRUSTSTORE_FILES = {Trust.pem: "ca.crt", Trust.jks: "truststore.jks", Trust.pkcs12: "truststore.p12"}


# Where a value lives is named by the config provider that reads it: a ConfigMap (`cfmap`), a
# Secret (`secret`) or the worker's properties file (`file`).
Store = references.Provider


# ----------------------------------------------------------------- secret values


def docker_config_json(server: str, username: str, password: str) -> str:
    auth = base64.b64encode(f"{username}:{password}".encode()).decode()
    return json.dumps({"auths": {server: {"username": username, "password": password, "auth": auth}}},
                      sort_keys=True)


# ----------------------------------------------------------------- connections


@dataclass(frozen=True)
class Entry:
    """One key of a ConfigMap or Secret of the flow namespace."""

    store: Store
    obj: str
    key: str
    value: str | SecretValue
    mounted: bool = False  # a file mounted into the Connect pods


@dataclass(frozen=True)
class Inline:
    """A value written into the connector config itself because it holds a reference inside it:
    a JAAS line whose password is a key of a Secret the team keeps (schema.SecretKeyRef). Kafka
    resolves config-provider references once, so a JAAS line stored in a Secret of ours could
    never reference another; inline, the worker resolves the reference within the line
    (ConfigTransformer replaces every match in a value), as Strimzi's own worker file does from
    0.46. The line holds the username and the reference, never the password."""

    text: str


@dataclass(frozen=True)
class Prop:
    key: str     # the client property, e.g. "ssl.truststore.location"
    store: Store
    obj: str     # ConfigMap/Secret name, or the worker properties file path
    store_key: str
    inline: str | None = None  # Inline.text: the value itself

    def reference(self, namespace: str) -> str:
        if self.inline is not None:
            return self.inline
        if self.store is Store.FILE:
            return references.file(self.obj, self.store_key)
        return references.kubernetes(self.store, namespace, self.obj, self.store_key)


@dataclass(frozen=True)
class Connection:
    namespace: str
    props: tuple[Prop, ...]
    entries: tuple[Entry, ...]

    def properties(self, prefix: str) -> dict[str, str]:
        return {prefix + p.key: p.reference(self.namespace) for p in self.props}


class _Builder:
    def __init__(self, namespace: str):
        self.namespace = namespace
        self.props: list[Prop] = []
        self.entries: list[Entry] = []

    def add(self, key: str, store: Store, obj: str, value: str | SecretValue | Inline | None,
            store_key: str | None = None) -> None:
        if isinstance(value, Inline):
            self.props.append(Prop(key, store, obj, store_key or key, inline=value.text))
            return
        self.props.append(Prop(key, store, obj, store_key or key))
        if value is not None:
            self.entries.append(Entry(store, obj, store_key or key, value))

    def file(self, obj: str, key: str, value: SecretValue) -> None:
        self.entries.append(_file(obj, key, value))

    def build(self) -> Connection:
        return Connection(self.namespace, tuple(self.props), tuple(self.entries))


def _jaas(alias: str, cluster: Cluster, namespace: str) -> SecretValue | Inline:
    """The cluster's JAAS line: from secret config into a Secret of ours, or inline around a
    reference to the team's Secret (`sasl.passwordSecret`)."""
    sasl = cluster.security.sasl
    assert sasl is not None, "a JAAS line is only written for a SASL cluster"
    ref = cluster.security.password_secret
    if ref is not None:
        return Inline(jaas_config(sasl.mechanism.value, sasl.username,
                                  references.kubernetes(Store.SECRET, namespace, ref.secretName, ref.key)))
    return SecretValue((secret_key(alias, "password"),),
                       lambda password: jaas_config(sasl.mechanism.value, sasl.username, password))


Located = tuple[Store, str, "str | SecretValue | Inline | None"]


def _referenced(cluster: Cluster) -> dict[str, tuple[Store, str, None, str]]:
    """Per client item the cluster takes from the team's Secret (`tls.secret`): where a
    `${secret:...}` reference reads it, (store, Secret, no value of ours, key)."""
    # A password is read inside the JAAS line (`_jaas`), a truststore from its mounted file
    # (`kept_truststore`): neither through a reference of its own.
    return {item: (Store.SECRET, name, None, key) for item, (name, key) in cluster.security.referenced_items.items()
            if item not in ("password", "truststore")}


def kept_truststore(cluster: Cluster) -> tuple[str, str, str] | None:
    """A JKS or PKCS12 truststore from the team's Secret (`tls.secret` with `trust: jks` or
    `pkcs12`): (Secret, key, file name) of the file the Connect pods mount from it, at the path a
    truststore from secret config has (FlowNames.source_file). A store file has no inline form:
    Kafka reads it from a file only, so it is mounted, and the pods roll when its `version`
    changes (objects.kafka_connect), since the kubelet projects a changed Secret into a running
    pod only at its next sync."""
    tls, ref = cluster.security.effective_tls, cluster.security.tls_secret
    if tls is None or ref is None or tls.trust is Trust.pem:
        return None
    return ref.secretName, ref.truststore_key(tls.trust), TRUSTSTORE_FILES[tls.trust]


def _source_files(alias: str, cluster: Cluster, n: FlowNames) -> tuple[list[Entry], dict[str, Located]]:
    """The source's store files (mounted from the source Secret) and, per item of
    `java_client_props`, where its value lives: (store, object, value)."""
    cm, sec, mounted = n.source_configmap, n.source_secret, n.source_files_secret
    sec_ = cluster.security
    tls = sec_.effective_tls
    trust = tls.trust if tls else None
    store_file = TRUSTSTORE_FILES[trust] if trust else None
    files = []
    if trust is Trust.pem:
        files.append(_file(mounted, TRUSTSTORE_FILES[trust], SecretValue((secret_key(alias, "caCert"),))))
    elif trust:
        files.append(_file(mounted, TRUSTSTORE_FILES[trust], SecretValue((secret_key(alias, "truststore"),),
                                                                      binary=True)))
    if tls and tls.clientCertificate:
        files.append(_file(mounted, KEYSTORE_FILE, SecretValue(
            (secret_key(alias, "clientKey"), secret_key(alias, "clientCert")), pem_keystore)))
    values: dict[str, Located] = {
        "bootstrap": (Store.CONFIGMAP, cm, cluster.bootstrapServers),
        "protocol": (Store.CONFIGMAP, cm, sec_.protocol.value),
        "mechanism": (Store.CONFIGMAP, cm, sec_.sasl.mechanism.value if sec_.sasl else None),
        "jaas": (Store.SECRET, sec, _jaas(alias, cluster, n.namespace) if sec_.sasl else None),
        "truststore": (Store.CONFIGMAP, cm, n.source_file(store_file) if store_file else None),
        "truststorePassword": (Store.SECRET, sec, SecretValue((secret_key(alias, "truststorePassword"),))),
        "keystore": (Store.CONFIGMAP, cm, n.source_file(KEYSTORE_FILE)),
    }
    return files, values


def _file(obj: str, key: str, value: SecretValue) -> Entry:
    return Entry(Store.SECRET, obj, key, value, mounted=True)


def source_connection(alias: str, cluster: Cluster, n: FlowNames) -> Connection:
    """The source cluster as the documents lay it out (step 5): non-secret properties in the
    source ConfigMap, JAAS and store passwords in the source Secret, store files mounted from a
    Secret of their own (FlowNames.source_files_secret)."""
    files, values = _source_files(alias, cluster, n)
    b = _Builder(n.namespace)
    referenced = _referenced(cluster)
    if referenced:
        # TLS material from the team's Secret (`tls.secret`): inline PEM (KIP-651) whose values are
        # references to its keys, resolved by the worker's config provider when a task starts. No
        # PEM file of it is mounted: the pods would need the Secret's keys under the store files'
        # names, and the PEM key store file joins the key and the certificate in one file. A JKS
        # or PKCS12 truststore is the one exception (`kept_truststore`): the store files'
        # representation for the trust, its password a reference, the key pair inline.
        props = client_props(INLINE_PEM, security(cluster))
        if kept_truststore(cluster):
            props = tuple(p for rep in (STORE_FILES, INLINE_PEM) for p in client_props(rep, security(cluster))
                          if (rep == INLINE_PEM) == p.key.startswith("ssl.keystore."))
        for prop in props:
            store, obj, value, store_key = ((Store.CONFIGMAP, n.source_configmap, prop.constant, None)
                                            if prop.item is None else referenced.get(prop.item)
                                            or (*values[prop.item], None))
            b.add(prop.key, store, obj, value, store_key=store_key)
        return b.build()
    b.entries += files
    for prop in client_props(STORE_FILES, security(cluster)):
        store, obj, value = (Store.CONFIGMAP, n.source_configmap, prop.constant) if prop.item is None else values[prop.item]
        b.add(prop.key, store, obj, value)
    return b.build()


# Files and keys of the source's Secrets that only the heartbeat producer's representation needs.
CA_TRUSTSTORE_FILE = "ca-truststore.jks"
CA_TRUSTSTORE_PASSWORD = "ca-truststore.password"
TRUSTSTORE_PEM = "truststore-certificates.pem"
CLIENT_KEYSTORE_FILE = "keystore.jks"
CLIENT_KEYSTORE_PASSWORD = "keystore.password"


def heartbeat_client(alias: str, cluster: Cluster, target: Cluster, n: FlowNames, worker: WorkerFile) -> Connection:
    """The source cluster for the Connect framework's own clients of the heartbeat connector
    (its producer, and with exactly-once its offsets consumer and admin), given as
    `producer.override.*` and the like. Those clients start from the worker's `producer.*` /
    `consumer.*` / `admin.*` keys, which hold the TARGET's connection, and an override can
    replace a key but never remove one (Kafka `Worker.baseProducerConfigs`). So every store key
    the worker sets is overridden in the worker's own representation (docs/heartbeats.md):

    - Strimzi 0.40-0.45 (`literalStores`) sets a PKCS12 store location and password: the
      source's trust (and key) go in as password-protected stores; a PEM CA or PEM key pair is
      turned into a JKS store at deploy time (infra/core/stores.py).
    - Strimzi 0.47+ (`pemReferences`) sets inline PEM certificates (and key): the source's go in
      inline too; a JKS/PKCS12 truststore is turned into PEM certificates at deploy time.

    Keys the worker does not set keep the source connection's own representation. SASL keys of
    a SASL target left on a non-SASL source connection are never read by Kafka (no SASL channel).
    Material from the team's Secret (`tls.secret`) is inline PEM referencing its keys, over any
    worker that sets inline PEM or nothing; over password-protected store files the conversion
    cannot be made from a reference, and the rules refuse it (infra/checks/rules/referenced.py).
    """
    tls, target_tls = cluster.security.effective_tls, target.security.effective_tls
    referenced = _referenced(cluster)
    files, values = _source_files(alias, cluster, n)
    by_name = {e.key: e for e in files}
    cm, sec, files_secret = n.source_configmap, n.source_secret, n.source_files_secret
    keys = (secret_key(alias, "clientKey"), secret_key(alias, "clientCert"))
    b = _Builder(n.namespace)
    mounted: set[str] = set()

    def mount(name: str) -> str:
        # A store file of the source the heartbeat reads: mounted once, its path as the value.
        if name not in mounted:
            mounted.add(name)
            b.entries.append(by_name[name])
        return n.source_file(name)

    def built(name: str, value: SecretValue) -> str:
        b.file(files_secret, name, value)
        return n.source_file(name)

    # Where each item of the client item table (contract/clientprops.py) lives for the heartbeat:
    # (store, object, value, key in the object). Settings sit beside the documented ones in the
    # source ConfigMap under `heartbeat.` keys, so neither can change the other.
    def located(key: str, item: str) -> tuple[Store, str, str | SecretValue | Inline | None, str | None]:
        if referenced and item in ("caCertFile", "keystorePem"):
            return referenced["caCert" if item == "caCertFile" else
                              "clientKey" if key == "ssl.keystore.key" else "clientCert"]
        if kept and item in ("truststore", "truststorePassword", "truststorePem"):
            # The team's store: its mounted file and its password's reference. As PEM (over a
            # worker that sets inline PEM trust) it would need converting, which the rules refuse
            # (infra/checks/rules/referenced.py); the wiring is still read by the other rules.
            if item == "truststorePassword":
                return referenced[item]
            return Store.CONFIGMAP, cm, n.source_file(kept[2]), f"heartbeat.{key}"
        if item == "truststore" and tls:
            return Store.CONFIGMAP, cm, mount(TRUSTSTORE_FILES[tls.trust]), f"heartbeat.{key}"
        if item == "keystore":
            return Store.CONFIGMAP, cm, mount(KEYSTORE_FILE), f"heartbeat.{key}"
        if item == "caCertFile":
            mount(TRUSTSTORE_FILES[Trust.pem])
            return Store.SECRET, files_secret, None, TRUSTSTORE_FILES[Trust.pem]
        if item == "keystorePem":
            mount(KEYSTORE_FILE)
            return Store.SECRET, files_secret, None, KEYSTORE_FILE
        if item == "truststorePem":
            return Store.SECRET, sec, SecretValue((secret_key(alias, "truststore"), secret_key(
                alias, "truststorePassword")), stores.truststore_pem), TRUSTSTORE_PEM
        if item == "caTruststore":
            return Store.CONFIGMAP, cm, built(CA_TRUSTSTORE_FILE, SecretValue(
                (secret_key(alias, "caCert"),), stores.ca_truststore_jks, binary=True)), f"heartbeat.{key}"
        if item == "caTruststorePassword":
            return Store.SECRET, sec, SecretValue((secret_key(alias, "caCert"),), stores.derived_password), \
                CA_TRUSTSTORE_PASSWORD
        if item == "clientKeystore":
            return Store.CONFIGMAP, cm, built(CLIENT_KEYSTORE_FILE, SecretValue(
                keys, stores.client_keystore_jks, binary=True)), f"heartbeat.{key}"
        if item == "clientKeystorePassword":
            return Store.SECRET, sec, SecretValue(keys, stores.derived_password), CLIENT_KEYSTORE_PASSWORD
        store, obj, value = values[item]
        return store, obj, value, None

    def representation(worker_sets: bool, own_file: bool = False) -> str:
        if referenced and not own_file:
            # Over a worker's store files (literalStores) this cannot work, and
            # infra/checks/rules/referenced.py refuses it; the other rules still read this wiring.
            return HEARTBEAT_INLINE
        # The team's truststore file (`kept`) is read as ours is; as inline PEM (over a worker
        # that sets inline PEM trust) it cannot be, and the rules refuse that too.
        if not worker_sets:
            return HEARTBEAT_OWN
        return HEARTBEAT_INLINE if worker is WorkerFile.pemReferences else HEARTBEAT_STORES

    kept = kept_truststore(cluster)
    trust = representation(target_tls is not None, own_file=kept is not None)
    key_rep = representation(bool(target_tls and target_tls.clientCertificate))
    for prop in heartbeat_props(trust, key_rep, security(cluster)):
        if prop.item is None:
            b.add(prop.key, Store.CONFIGMAP, cm, prop.constant, store_key=f"heartbeat.{prop.key}")
        else:
            store, obj, value, store_key = located(prop.key, prop.item)
            b.add(prop.key, store, obj, value, store_key=store_key)
    return b.build()


def target_objects(alias: str, cluster: Cluster, n: FlowNames) -> tuple[Entry, ...]:
    """What the KafkaConnect resource itself needs of the target (step 4): the alias ConfigMap,
    the SASL password Secret, the CA certificate Secret and, for mTLS, the client key pair."""
    entries = [Entry(Store.CONFIGMAP, n.target_configmap, "alias", alias)]
    if cluster.security.sasl and cluster.security.password_secret is None:
        # A referenced password (`sasl.passwordSecret`) is read from the team's Secret instead
        # (objects.connect_spec's passwordSecret).
        entries.append(Entry(Store.SECRET, n.target_password_secret, "pass",
                             SecretValue((secret_key(alias, "password"),))))
    tls = cluster.security.effective_tls
    if tls and tls.secret is None:  # else the team's Secret (objects.kafka_connect's tls)
        entries.append(Entry(Store.SECRET, n.target_ca_secret, n.TARGET_CA_BUNDLE,
                             SecretValue((secret_key(alias, "caCert"),))))
        entries.append(Entry(Store.SECRET, n.target_ca_secret, n.TARGET_CA_CERTIFICATES,
                             SecretParts((secret_key(alias, "caCert"),), split=stores.split_certificates)))
        if tls.clientCertificate:
            entries.append(Entry(Store.SECRET, n.target_client_secret, "tls.crt",
                                 SecretValue((secret_key(alias, "clientCert"),))))
            entries.append(Entry(Store.SECRET, n.target_client_secret, "tls.key",
                                 SecretValue((secret_key(alias, "clientKey"),))))
    return tuple(entries)


def versioned_references(clusters: Iterable[Cluster]) -> dict[tuple[str, str], str]:
    """(Secret, key) -> version of each Secret the team keeps that a cluster references with a
    `version` (names.REFERENCED_SECRETS)."""
    out = {}
    for cluster in clusters:
        out.update(cluster.security.referenced_versions)
    return out


def referenced_versions(read: Iterable[tuple[str, str]], versions: Mapping[tuple[str, str], str]) -> str | None:
    """The REFERENCED_SECRETS value for the (Secret, key) pairs a reader reads: None when none is versioned."""
    found = sorted(f"{name}:{key}={versions[(name, key)]}" for name, key in set(read) if (name, key) in versions)
    return ",".join(found) or None


def security(cluster: Cluster) -> Security:
    """A cluster's security mode, as the client item table (contract/clientprops.py) reads it."""
    sec_, tls = cluster.security, cluster.security.effective_tls
    return Security(sec_.sasl.mechanism.value if sec_.sasl else None, tls.trust.value if tls else None,
                    bool(tls and tls.clientCertificate))


def target_connection(alias: str, cluster: Cluster, n: FlowNames, mode: TargetConnection) -> Connection:
    """The target cluster, for connectors whose Connect cluster depends on it."""
    sec_ = cluster.security
    b = _Builder(n.namespace)
    if mode is TargetConnection.workerFile:
        # Steps 9-10: the worker's own properties file, written by the operator; only where the
        # release writes it with literal values (schema.Operator.target_connection). The store
        # types too: the file's unprefixed keys say PKCS12, Kafka's default is JKS.
        for prop in client_props(WORKER_FILE, security(cluster)):
            b.add(prop.key, Store.FILE, names.WORKER_PROPERTIES, None)
        return b.build()
    # clusterObjects: the same target objects the KafkaConnect uses, plus the connection keys;
    # inline PEM (KIP-651), so no truststore file to mount for the target.
    cm = n.target_configmap
    values: dict[str, tuple[Store, str, str | SecretValue | Inline | None, str | None]] = {
        "bootstrap": (Store.CONFIGMAP, cm, cluster.bootstrapServers, None),
        "protocol": (Store.CONFIGMAP, cm, sec_.protocol.value, None),
        "mechanism": (Store.CONFIGMAP, cm, sec_.sasl.mechanism.value if sec_.sasl else None, None),
        "jaas": (Store.SECRET, n.target_password_secret, _jaas(alias, cluster, n.namespace) if sec_.sasl else None,
                 None),
        "caCert": (Store.SECRET, n.target_ca_secret, None, n.TARGET_CA_BUNDLE),
        "clientCert": (Store.SECRET, n.target_client_secret, None, "tls.crt"),
        "clientKey": (Store.SECRET, n.target_client_secret, None, "tls.key"),
        **_referenced(cluster),
    }
    for prop in client_props(INLINE_PEM, security(cluster)):
        store, obj, value, store_key = (Store.CONFIGMAP, cm, prop.constant, None) if prop.item is None else values[prop.item]
        b.add(prop.key, store, obj, value, store_key=store_key)
    return b.build()
