"""The Java Kafka client's connection properties: one description shared by the program (the
connectors' `${cfmap:}`/`${secret:}` references, infra/plan/connection.py) and the audit job (Spark's
Kafka source options, spark/clusters.py).

No dependencies on purpose: the job imports it without the deployer's modules. Mechanisms and
trust kinds are the strings of the topology (`PLAIN`, `pem`); the program's enums have the same
values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
TRUSTSTORE_TYPES = {"pem": "PEM", "pkcs12": "PKCS12"}
KEYSTORE_FILE = "keystore.pem"


def jaas_config(mechanism: str, username: str, password: str) -> str:
    """The `sasl.jaas.config` line; quotes and backslashes are escaped for Kafka's JAAS parser."""
    def quote(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"{LOGIN_MODULES[mechanism]} required username={quote(username)} password={quote(password)};"


def pem_keystore(key: str, certificate: str) -> str:
    """A PEM key store file for `ssl.keystore.type=PEM`: private key then certificate chain."""
    return key.strip() + "\n" + certificate.strip() + "\n"


@dataclass(frozen=True)
class ClientProp:
    """A Java client property and where its value comes from: `item` names a value of the
    cluster (bootstrap, protocol, mechanism, jaas, truststorePassword, caCert, clientCert,
    clientKey), a file (truststore, keystore: their locations) or the worker file's own key
    (worker); `constant` is a fixed value."""
    key: str
    item: str | None = None
    constant: str | None = None


@dataclass(frozen=True)
class Security:
    """A cluster's security as the topology says it (mechanism and trust as its strings)."""
    mechanism: str | None
    trust: str | None
    client_certificate: bool


# The representations of a cluster's connection. STORE_FILES: the Java client with store files,
# as the documents lay out the source cluster (the connectors' source.cluster.* and the audit's
# Spark options). INLINE_PEM: the target's inline PEM (KIP-651) from the objects the KafkaConnect
# uses. WORKER_FILE: the keys Strimzi 0.40-0.45 writes to the worker file, which connectors read
# with ${file:...} (schema.TargetConnection.workerFile).
STORE_FILES, INLINE_PEM, WORKER_FILE = "storeFiles", "inlinePem", "workerFile"
# The heartbeat connector's producer (and exactly-once consumer and admin) reach the SOURCE with
# overrides over the worker's keys for the TARGET, and an override can replace a key but never
# remove one (docs/heartbeats.md). So each store family (trust, key) takes the representation of
# what the worker sets for it: HEARTBEAT_INLINE over a worker with inline PEM (Strimzi 0.47+),
# HEARTBEAT_STORES over one with password-protected store files (Strimzi 0.40-0.45; a PEM CA or
# key pair becomes a JKS store at deploy time), HEARTBEAT_OWN where the worker sets none: the
# source's own files, each with its type (the worker's unprefixed type would apply otherwise).
HEARTBEAT_INLINE, HEARTBEAT_STORES, HEARTBEAT_OWN = "heartbeatInline", "heartbeatStores", "heartbeatOwn"
_STORE_TYPES = {"pem": "PEM", "jks": "JKS", "pkcs12": "PKCS12"}
Origin = Callable[[Security], "str | None"]  # an item, "=<constant>", or None: absent


def _sasl(item: str) -> Origin:
    return lambda s: item if s.mechanism else None


def _trust(item: str) -> Origin:
    return lambda s: item if s.trust else None


def _key(item: str) -> Origin:
    return lambda s: item if s.trust and s.client_certificate else None


@dataclass(frozen=True)
class ClientItem:
    """One client property: what it is, and per representation where its value comes from in a
    given security mode."""
    key: str
    what: str
    origins: Mapping[str, Origin]


def _always(item: str) -> Origin:
    return lambda s: item


def _pem_or(pem: str, other: str) -> Origin:
    return lambda s: (pem if s.trust == "pem" else other) if s.trust else None


def _own_type(s: Security) -> str | None:
    return f"={_STORE_TYPES[s.trust]}" if s.trust else None


# Every representation of the source for the heartbeat's clients reaches it like the documents'.
_HEARTBEAT = (HEARTBEAT_INLINE, HEARTBEAT_STORES, HEARTBEAT_OWN)


# The one table of a cluster's client items, in the order every representation writes them.
CLIENT_ITEMS = (
    ClientItem("bootstrap.servers", "the cluster's bootstrap addresses",
               {STORE_FILES: _always("bootstrap"), INLINE_PEM: _always("bootstrap"), WORKER_FILE: _always("worker"),
                **{h: _always("bootstrap") for h in _HEARTBEAT}}),
    ClientItem("security.protocol", "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
               {STORE_FILES: _always("protocol"), INLINE_PEM: _always("protocol"), WORKER_FILE: _always("worker"),
                **{h: _always("protocol") for h in _HEARTBEAT}}),
    ClientItem("sasl.mechanism", "PLAIN or SCRAM-SHA-256/512",
               {STORE_FILES: _sasl("mechanism"), INLINE_PEM: _sasl("mechanism"), WORKER_FILE: _sasl("worker"),
                **{h: _sasl("mechanism") for h in _HEARTBEAT}}),
    ClientItem("sasl.jaas.config", "the login module line with the user's password",
               {STORE_FILES: _sasl("jaas"), INLINE_PEM: _sasl("jaas"), WORKER_FILE: _sasl("worker"),
                **{h: _sasl("jaas") for h in _HEARTBEAT}}),
    ClientItem("ssl.truststore.location", "the trust store file",
               {STORE_FILES: _trust("truststore"), WORKER_FILE: _trust("worker"),
                HEARTBEAT_STORES: _pem_or("caTruststore", "truststore"), HEARTBEAT_OWN: _trust("truststore")}),
    # Kafka's default truststore type is JKS: the documents set no type for it.
    ClientItem("ssl.truststore.type", "the trust store's format",
               {STORE_FILES: lambda s: f"={TRUSTSTORE_TYPES[s.trust]}" if s.trust in TRUSTSTORE_TYPES else None,
                INLINE_PEM: _trust("=PEM"), WORKER_FILE: _trust("worker"), HEARTBEAT_INLINE: _trust("=PEM"),
                HEARTBEAT_STORES: lambda s: "=JKS" if s.trust == "pem" else _own_type(s), HEARTBEAT_OWN: _own_type}),
    # PEM trust files carry no password.
    ClientItem("ssl.truststore.password", "the trust store's password",
               {STORE_FILES: lambda s: "truststorePassword" if s.trust and s.trust != "pem" else None,
                WORKER_FILE: _trust("worker"), HEARTBEAT_STORES: _pem_or("caTruststorePassword", "truststorePassword"),
                HEARTBEAT_OWN: lambda s: "truststorePassword" if s.trust and s.trust != "pem" else None}),
    ClientItem("ssl.truststore.certificates", "the trusted CA certificates, inline",
               {INLINE_PEM: _trust("caCert"), HEARTBEAT_INLINE: _pem_or("caCertFile", "truststorePem")}),
    ClientItem("ssl.keystore.location", "the client key store file (mTLS)",
               {STORE_FILES: _key("keystore"), WORKER_FILE: _key("worker"), HEARTBEAT_STORES: _key("clientKeystore"),
                HEARTBEAT_OWN: _key("keystore")}),
    ClientItem("ssl.keystore.type", "the client key store's format",
               {STORE_FILES: _key("=PEM"), INLINE_PEM: _key("=PEM"), WORKER_FILE: _key("worker"),
                HEARTBEAT_INLINE: _key("=PEM"), HEARTBEAT_STORES: _key("=JKS"), HEARTBEAT_OWN: _key("=PEM")}),
    ClientItem("ssl.keystore.password", "the client key store's password",
               {WORKER_FILE: _key("worker"), HEARTBEAT_STORES: _key("clientKeystorePassword")}),
    ClientItem("ssl.keystore.certificate.chain", "the client certificate chain, inline",
               {INLINE_PEM: _key("clientCert"), HEARTBEAT_INLINE: _key("keystorePem")}),
    ClientItem("ssl.keystore.key", "the client private key, inline",
               {INLINE_PEM: _key("clientKey"), HEARTBEAT_INLINE: _key("keystorePem")}),
)


def client_props(representation: str, security: Security) -> tuple[ClientProp, ...]:
    """A representation's property set for a security mode, from CLIENT_ITEMS."""
    props = []
    for item in CLIENT_ITEMS:
        origin = item.origins[representation](security) if representation in item.origins else None
        if origin is not None:
            props.append(ClientProp(item.key, constant=origin[1:]) if origin.startswith("=")
                         else ClientProp(item.key, origin))
    return tuple(props)


def heartbeat_props(trust: str, key: str, security: Security) -> tuple[ClientProp, ...]:
    """The heartbeat clients' property set for the source: the connection and SASL keys as the
    source's own, the trust store family in representation `trust` and the key store family in
    `key` (HEARTBEAT_INLINE, HEARTBEAT_STORES or HEARTBEAT_OWN: what the worker sets for each)."""
    def family(prop: ClientProp) -> str:
        return trust if prop.key.startswith("ssl.truststore.") else key
    return tuple(p for p in client_props(HEARTBEAT_OWN, security) if not p.key.startswith("ssl.")) + tuple(
        p for rep in dict.fromkeys((trust, key)) for p in client_props(rep, security)
        if p.key.startswith("ssl.") and family(p) == rep)


def java_client_props(mechanism: str | None, trust: str | None, client_certificate: bool
                      ) -> tuple[ClientProp, ...]:
    """The Java client's connection property set with store files, as the documents lay it out
    for the source cluster (step 5): the connectors' references and the audit's Spark Kafka
    options are both made from it."""
    return client_props(STORE_FILES, Security(mechanism, trust, client_certificate))
