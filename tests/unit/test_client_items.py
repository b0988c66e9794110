"""A Kafka cluster's client items: the one table (spark/clientprops.CLIENT_ITEMS) and each
representation made from it, with their exact keys per security mode; and client values that
would only break at run time (bootstrap addresses that resolve in another Kubernetes cluster)."""

from __future__ import annotations

import copy

import pytest
import yaml

from infra.checks import validation
from infra.checks.rules import service_address
from infra.tools import render
from tests.support.stacks import ROOT

REGIONS = yaml.safe_load(open(ROOT / "stacks" / "regions.yaml"))


# ------------------------------------------------------------------ in-cluster addresses

THREE_LABELS = ("a three-label name whose last label is no top-level domain, read as the pod "
                "`<pod>.<service>.<namespace>` of a headless Service (write it with a final dot, `{name}.`, if it is "
                "a DNS name outside Kubernetes)")


@pytest.mark.parametrize("host", ["kafka-0.kafka-brokers.kafka", "broker-1.kafka-headless.kafka-us-west",
                                  "kafka-0.brokers.ns1", "kafka-0.kafka-brokers.dev", "kafka-0.kafka.test",
                                  "kafka.corp.internal"])
def test_pod_addresses_of_a_headless_service_are_in_cluster(host):
    assert service_address(host) == THREE_LABELS.format(name=host)


@pytest.mark.parametrize("host", ["kafka.example.com", "kafka.eu-central.example.com", "broker-1.example.de",
                                  "kafka.corp.internal.", "kafka-0.kafka-brokers.kafka.", "kafka.xn--p1ai.xn--p1ai",
                                  "10.0.0.1"])
def test_names_that_may_be_public_are_not(host):
    assert service_address(host) is None


def test_a_pod_address_used_from_another_kubernetes_cluster_is_refused():
    data = copy.deepcopy(REGIONS)
    data["clusters"]["us-west"]["bootstrapServers"] = "kafka-0.kafka-brokers.kafka:9094"
    data["flows"] = [f for f in data["flows"] if f["source"] == "us-west"]
    assert problems(data) == [
        "clusters.us-west: bootstrapServers: got 'kafka-0.kafka-brokers.kafka:9094'; expected an address reachable "
        "from Kubernetes cluster k8s-eu-central, where orders-us-west-to-eu runs: kafka-0.kafka-brokers.kafka is "
        f"{THREE_LABELS.format(name='kafka-0.kafka-brokers.kafka')}, which resolves inside Kubernetes cluster "
        "k8s-us-west only (use a LoadBalancer, NodePort, Route or Ingress listener's address, or deploy the flow "
        "beside it)"]
    # Written as a public name, it is taken as one.
    data["clusters"]["us-west"]["bootstrapServers"] = "kafka-0.kafka-brokers.kafka.:9094"
    validation.parse(data)


# ------------------------------------------------------------------ one table, each representation

from contract.audit import CREDENTIAL_FILES  # noqa: E402
from contract.clientprops import CLIENT_ITEMS, INLINE_PEM, STORE_FILES, WORKER_FILE, client_props  # noqa: E402
from infra.core.names import FlowNames  # noqa: E402
from infra.core.releases import WorkerFile  # noqa: E402
from infra.plan.connection import heartbeat_client, source_connection, target_connection  # noqa: E402
from infra.topology.schema import Cluster, TargetConnection  # noqa: E402
from spark.clusters import spark_kafka_options  # noqa: E402
from tests.support.refusals import problems

N = FlowNames("f", "s", "t")
MODES = {
    "sasl-plain-jks": {"protocol": "SASL_SSL", "sasl": {"mechanism": "PLAIN", "username": "u"}, "tls": {"trust": "jks"}},
    "scram-pem": {"protocol": "SASL_SSL", "sasl": {"mechanism": "SCRAM-SHA-512", "username": "u"},
                  "tls": {"trust": "pem"}},
    "mtls-pem": {"protocol": "SSL", "tls": {"trust": "pem", "clientCertificate": True}},
    "plaintext": {"protocol": "PLAINTEXT"},
}
BASE = ["bootstrap.servers", "security.protocol"]
SASL = ["sasl.mechanism", "sasl.jaas.config"]
# The Java client with store files: the documented source.cluster.* and the audit's Spark options.
STORE_FILE_KEYS = {
    "sasl-plain-jks": BASE + SASL + ["ssl.truststore.location", "ssl.truststore.password"],
    "scram-pem": BASE + SASL + ["ssl.truststore.location", "ssl.truststore.type"],
    "mtls-pem": BASE + ["ssl.truststore.location", "ssl.truststore.type", "ssl.keystore.location", "ssl.keystore.type"],
    "plaintext": BASE,
}
# A target's inline PEM (clusterObjects); targets trust PEM only.
INLINE_KEYS = {
    "scram-pem": BASE + SASL + ["ssl.truststore.type", "ssl.truststore.certificates"],
    "mtls-pem": BASE + ["ssl.truststore.type", "ssl.truststore.certificates", "ssl.keystore.type",
                        "ssl.keystore.certificate.chain", "ssl.keystore.key"],
    "plaintext": BASE,
}
# The worker file of Strimzi 0.40-0.45 (workerFile).
WORKER_KEYS = {
    "scram-pem": BASE + SASL + ["ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password"],
    "mtls-pem": BASE + ["ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password",
                        "ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password"],
    "plaintext": BASE,
}


def cluster(mode: str) -> Cluster:
    return Cluster.model_validate({"bootstrapServers": "k:9093", "security": MODES[mode]})


def test_every_item_is_written_by_some_representation_and_named_once():
    assert len({i.key for i in CLIENT_ITEMS}) == len(CLIENT_ITEMS)
    assert all(i.origins and i.what for i in CLIENT_ITEMS)


@pytest.mark.parametrize("mode", sorted(STORE_FILE_KEYS))
def test_store_file_representation_keys(mode, tmp_path):
    sec = MODES[mode]
    mechanism, tls = sec.get("sasl", {}).get("mechanism"), sec.get("tls")
    trust, cc = (tls["trust"], tls.get("clientCertificate", False)) if tls else (None, False)
    from contract.clientprops import Security
    assert [p.key for p in client_props(STORE_FILES, Security(mechanism, trust, cc))] == STORE_FILE_KEYS[mode]
    # The documented connector settings, under their prefix.
    assert list(source_connection("s", cluster(mode), N).properties("source.cluster.")) == [
        f"source.cluster.{k}" for k in STORE_FILE_KEYS[mode]]
    # The audit's Spark Kafka options (the job's values read from the mounted credential files).
    for item in ("password", "truststorePassword", "caCert", "clientCert", "clientKey", "truststore"):
        (tmp_path / CREDENTIAL_FILES[item]).write_text("x")
    options = spark_kafka_options({"bootstrapServers": "k:9093", "securityProtocol": sec["protocol"],
                                   "saslMechanism": mechanism, "saslUsername": "u", "trust": trust,
                                   "clientCertificate": cc}, tmp_path)
    assert list(options) == [f"kafka.{k}" for k in STORE_FILE_KEYS[mode]]


@pytest.mark.parametrize("mode", sorted(INLINE_KEYS))
def test_inline_pem_and_worker_file_representation_keys(mode):
    c = cluster(mode)
    objects = target_connection("t", c, N, TargetConnection.clusterObjects)
    assert list(objects.properties("target.cluster.")) == [f"target.cluster.{k}" for k in INLINE_KEYS[mode]]
    worker = target_connection("t", c, N, TargetConnection.workerFile)
    assert list(worker.properties("")) == WORKER_KEYS[mode]
    assert set(worker.properties("").values()) <= {f"${{file:/tmp/strimzi-connect.properties:{k}}}"
                                                   for k in WORKER_KEYS[mode]}
    from infra.plan.connection import security
    assert [p.key for p in client_props(INLINE_PEM, security(c))] == INLINE_KEYS[mode]
    assert [p.key for p in client_props(WORKER_FILE, security(c))] == WORKER_KEYS[mode]


@pytest.mark.parametrize("mode, worker, expected", [
    ("sasl-plain-jks", WorkerFile.literalStores,
     BASE + SASL + ["ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password"]),
    ("sasl-plain-jks", WorkerFile.pemReferences, BASE + SASL + ["ssl.truststore.type", "ssl.truststore.certificates"]),
    ("scram-pem", WorkerFile.literalStores,
     BASE + SASL + ["ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password"]),
    ("mtls-pem", WorkerFile.pemReferences,
     BASE + ["ssl.truststore.type", "ssl.truststore.certificates", "ssl.keystore.location", "ssl.keystore.type"]),
    ("plaintext", WorkerFile.literalStores, BASE),
])
def test_heartbeat_override_keys(mode, worker, expected):
    """The heartbeat's overrides against a TLS target without a client certificate: every store
    key the worker file sets is overridden in the worker's own representation."""
    target = Cluster.model_validate({"bootstrapServers": "t:9093", "security": MODES["scram-pem"]})
    assert list(heartbeat_client("s", cluster(mode), target, N, worker).properties("")) == expected


@pytest.mark.parametrize("representation, expected", [
    ("heartbeatInline", [("ssl.truststore.type", "=PEM"), ("ssl.truststore.certificates", "caCertFile"),
                         ("ssl.keystore.type", "=PEM"), ("ssl.keystore.certificate.chain", "keystorePem"),
                         ("ssl.keystore.key", "keystorePem")]),
    ("heartbeatStores", [("ssl.truststore.location", "caTruststore"), ("ssl.truststore.type", "=JKS"),
                         ("ssl.truststore.password", "caTruststorePassword"), ("ssl.keystore.location", "clientKeystore"),
                         ("ssl.keystore.type", "=JKS"), ("ssl.keystore.password", "clientKeystorePassword")]),
    ("heartbeatOwn", [("ssl.truststore.location", "truststore"), ("ssl.truststore.type", "=PEM"),
                      ("ssl.keystore.location", "keystore"), ("ssl.keystore.type", "=PEM")]),
])
def test_the_heartbeat_representations_come_from_the_table(representation, expected):
    """A PEM-trusting mTLS source, over a worker that sets both store families in each way."""
    from contract.clientprops import Security, heartbeat_props
    props = heartbeat_props(representation, representation, Security(None, "pem", True))
    assert [(p.key, p.item or f"={p.constant}") for p in props] == [
        ("bootstrap.servers", "bootstrap"), ("security.protocol", "protocol"), *expected]
