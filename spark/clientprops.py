"""The Java Kafka client's connection properties: one description shared by the program (the
connectors' `${cfmap:}`/`${secret:}` references, infra/connection.py) and the audit job (Spark's
Kafka source options, spark/clusters.py).

No dependencies on purpose: the job imports it without the deployer's modules. Mechanisms and
trust kinds are the strings of the topology (`PLAIN`, `pem`); the program's enums have the same
values.
"""

from __future__ import annotations

from dataclasses import dataclass

LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
# Kafka's default truststore type is JKS: the documents set no type for it.
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
    cluster (bootstrap, protocol, mechanism, jaas, truststorePassword) or a file (truststore,
    keystore: their locations); `constant` is a fixed value."""
    key: str
    item: str | None = None
    constant: str | None = None


def java_client_props(mechanism: str | None, trust: str | None, client_certificate: bool
                      ) -> tuple[ClientProp, ...]:
    """The Java client's connection property set with store files, as the documents lay it out
    for the source cluster (step 5). The one description of it: the connectors' references and
    the audit's Spark Kafka options are both made from it."""
    props = [ClientProp("bootstrap.servers", "bootstrap"), ClientProp("security.protocol", "protocol")]
    if mechanism:
        props += [ClientProp("sasl.mechanism", "mechanism"), ClientProp("sasl.jaas.config", "jaas")]
    if trust:
        props.append(ClientProp("ssl.truststore.location", "truststore"))
        if trust in TRUSTSTORE_TYPES:
            props.append(ClientProp("ssl.truststore.type", constant=TRUSTSTORE_TYPES[trust]))
        if trust != "pem":  # PEM trust files carry no password
            props.append(ClientProp("ssl.truststore.password", "truststorePassword"))
        if client_certificate:
            props += [ClientProp("ssl.keystore.location", "keystore"), ClientProp("ssl.keystore.type", constant="PEM")]
    return tuple(props)
