"""Report rules: thresholds, statuses, exit codes, Pushgateway metrics, client configuration."""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from spark import report
from spark.clusters import librdkafka_config, spark_kafka_options
from spark.offsets import Unverifiable

THRESHOLDS = {"maxLag": 10, "maxMissing": 0, "maxUnexpected": 0, "maxDuplicates": None,
              "maxHeartbeatAgeSeconds": 300}


def _row(**values):
    row = {"missing": 0, "unexpected": 0, "duplicate": 0, "lag": 0, "lost": 0, "unverifiable": None}
    row.update(values)
    return row


def test_thresholds():
    assert report.judge_partition(_row(duplicate=1000, lag=10), THRESHOLDS, False) == []
    assert report.judge_partition(_row(missing=1, lag=11), THRESHOLDS, False) == [
        "1 missing record(s)", "lag of 11 record(s)"]
    assert report.judge_partition(_row(duplicate=3), {**THRESHOLDS, "maxDuplicates": 2}, False) == [
        "3 duplicate record(s)"]
    # Fan-in flows: other flows' records in the shared target topic are expected.
    assert report.judge_partition(_row(unexpected=7), THRESHOLDS, True) == []
    assert report.judge_partition(_row(unexpected=7), THRESHOLDS, False) == ["7 unexpected record(s)"]


def test_run_status_and_exit_codes():
    assert report.run_status([{"status": "ok"}, {"status": "deferred"}]) == "ok"
    assert report.run_status([{"status": "findings"}, {"status": "deferred"}]) == "findings"
    assert report.run_status([{"status": "findings"}, {"status": "error"}]) == "error"
    assert report.EXIT == {"ok": 0, "findings": 1, "error": 2}


class _Gateway(BaseHTTPRequestHandler):
    received: list[tuple[str, str, bytes]] = []

    def do_PUT(self):  # noqa: N802 (http.server API)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(("PUT", self.path, body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_metrics_pushed_to_a_pushgateway():
    server = HTTPServer(("127.0.0.1", 0), _Gateway)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    result = {"status": "findings", "finishedAt": 1_767_225_660_000, "certificates": [
        {"cluster": "us-west", "item": "caCert", "notAfter": 1_798_761_600_000},
        {"cluster": "us-west", "item": "clientCert", "notAfter": 1_767_225_600_000}], "flows": [
        {"name": "f1", "freshness": {"ageSeconds": 12.5}, "checkpoints": [
            {"group": "readers", "ageSeconds": 900.5, "behindRecords": 401, "findings": ["stale"]},
            {"group": "idle", "ageSeconds": 5000.0, "behindRecords": 0, "findings": []}], "topics": [
            {"source": "orders", "partitions": [
                {"sourceRecords": 10, "targetRecords": 8, "missing": 2, "duplicate": 0, "unexpected": 0, "lag": 3},
                {"sourceRecords": 5, "targetRecords": 5, "missing": 0, "duplicate": 1, "unexpected": 0,
                 "lag": None}]}]}]}
    try:
        report.push_metrics(result, f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
    ((method, path, body),) = _Gateway.received
    text = body.decode()
    assert (method, path) == ("PUT", "/metrics/job/kafka-replication-audit")
    for line in ('kafka_replication_audit_status 1.0', 'kafka_replication_audit_missing_records{flow="f1",topic="orders"} 2.0',
                 'kafka_replication_audit_source_records{flow="f1",topic="orders"} 15.0',
                 'kafka_replication_audit_lag_records{flow="f1",topic="orders"} 3.0',
                 'kafka_replication_audit_heartbeat_age_seconds{flow="f1"} 12.5',
                 'kafka_replication_audit_checkpoint_age_seconds{flow="f1",group="readers"} 900.5',
                 'kafka_replication_audit_checkpoint_behind_records{flow="f1",group="readers"} 401.0',
                 'kafka_replication_audit_checkpoint_stale{flow="f1",group="readers"} 1.0',
                 'kafka_replication_audit_checkpoint_stale{flow="f1",group="idle"} 0.0',
                 'kafka_replication_audit_certificate_expiry_timestamp_seconds{cluster="us-west",item="caCert"} 1.7987616e+09',
                 'kafka_replication_audit_certificate_expiry_timestamp_seconds{cluster="us-west",item="clientCert"} 1.7672256e+09',
                 'kafka_replication_audit_last_run_timestamp_seconds 1.76722566e+09'):
        assert line in text.splitlines(), line


CLUSTER = {"bootstrapServers": "b:9093", "securityProtocol": "SASL_SSL", "saslMechanism": "SCRAM-SHA-512",
           "saslUsername": "audit", "trust": "pem", "clientCertificate": False}


def test_client_configs_read_credentials_from_mounted_files(tmp_path: Path):
    (tmp_path / "password").write_text("s3cret\n")
    assert librdkafka_config(CLUSTER, tmp_path) == {
        "bootstrap.servers": "b:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "audit", "sasl.password": "s3cret", "ssl.ca.location": str(tmp_path / "ca.crt")}
    assert spark_kafka_options(CLUSTER, tmp_path) == {
        "kafka.bootstrap.servers": "b:9093", "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                  'username="audit" password="s3cret";',
        "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location": str(tmp_path / "ca.crt")}


def test_missing_credentials_are_unverifiable(tmp_path: Path):
    with pytest.raises(Unverifiable, match="cannot read .*password"):
        librdkafka_config(CLUSTER, tmp_path)


def test_a_jks_truststore_becomes_pem_for_librdkafka(tmp_path: Path):
    import shutil
    import subprocess
    if shutil.which("keytool") is None:
        pytest.fail("keytool (Java 17, which the suite needs for Spark) is missing")
    subprocess.run(["keytool", "-genkeypair", "-keystore", str(tmp_path / "truststore"), "-storetype", "JKS",
                    "-storepass", "changeit", "-alias", "ca", "-dname", "CN=audit-test-ca", "-keyalg", "RSA",
                    "-keysize", "2048"], check=True, capture_output=True)
    (tmp_path / "truststore.password").write_text("changeit")
    conf = librdkafka_config({**CLUSTER, "saslMechanism": None, "trust": "jks"}, tmp_path)
    pem = Path(conf["ssl.ca.location"]).read_text()
    assert pem.startswith("-----BEGIN CERTIFICATE-----\n") and pem.endswith("-----END CERTIFICATE-----\n")
    assert pem.count("BEGIN CERTIFICATE") == 1 and "Alias" not in pem and "entr" not in pem


def test_spark_options_for_mtls_and_a_jks_truststore(tmp_path: Path):
    for name, text in (("truststore", "JKS-BYTES"), ("truststore.password", "changeit\n"),
                       ("client.crt", "-----BEGIN CERTIFICATE-----\nC\n-----END CERTIFICATE-----\n"),
                       ("client.key", "-----BEGIN PRIVATE KEY-----\nK\n-----END PRIVATE KEY-----\n")):
        (tmp_path / name).write_text(text)
    opts = spark_kafka_options({**CLUSTER, "securityProtocol": "SSL", "saslMechanism": None, "trust": "jks",
                                "clientCertificate": True}, tmp_path)
    keystore = Path(opts.pop("kafka.ssl.keystore.location"))
    assert opts == {"kafka.bootstrap.servers": "b:9093", "kafka.security.protocol": "SSL",
                    "kafka.ssl.truststore.location": str(tmp_path / "truststore"),
                    "kafka.ssl.truststore.password": "changeit", "kafka.ssl.keystore.type": "PEM"}
    # The connectors' key store layout: private key, then the certificate chain; owner-only.
    assert keystore.read_text() == ("-----BEGIN PRIVATE KEY-----\nK\n-----END PRIVATE KEY-----\n"
                                    "-----BEGIN CERTIFICATE-----\nC\n-----END CERTIFICATE-----\n")
    assert keystore.stat().st_mode & 0o077 == 0


def test_the_key_store_made_from_the_mounted_key_goes_with_the_process(tmp_path: Path):
    """The PEM key store (a private key) is made in a folder of the process's own, owner-only,
    and removed when the process exits: the audit leaves no key behind in the machine's /tmp."""
    import subprocess
    import sys
    for name, text in (("client.crt", "-----BEGIN CERTIFICATE-----\nC\n-----END CERTIFICATE-----\n"),
                       ("client.key", "-----BEGIN PRIVATE KEY-----\nK\n-----END PRIVATE KEY-----\n"),
                       ("ca.crt", "-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n")):
        (tmp_path / name).write_text(text)
    program = ("import os, sys; from pathlib import Path; from spark.clusters import spark_kafka_options; "
               "o = spark_kafka_options({'bootstrapServers': 'b:9093', 'securityProtocol': 'SSL', "
               "'saslMechanism': None, 'trust': 'pem', 'clientCertificate': True}, Path(sys.argv[1])); "
               "k = Path(o['kafka.ssl.keystore.location']); "
               "print(k, oct(k.parent.stat().st_mode & 0o777), oct(k.stat().st_mode & 0o777), k.read_text().count('KEY'))")
    done = subprocess.run([sys.executable, "-c", program, str(tmp_path)], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert done.returncode == 0, done.stderr
    keystore, folder_mode, file_mode, keys = done.stdout.split()
    assert (folder_mode, file_mode, keys) == ("0o700", "0o600", "2")
    assert Path(keystore).parent.name.startswith("audit-credentials-")
    assert not Path(keystore).parent.exists()


@pytest.mark.parametrize("security", [
    {"protocol": "SASL_SSL", "sasl": {"mechanism": "PLAIN", "username": "u"}, "tls": {"trust": "jks"}},
    {"protocol": "SASL_SSL", "sasl": {"mechanism": "SCRAM-SHA-512", "username": "u"}, "tls": {"trust": "pem"}},
    {"protocol": "SSL", "tls": {"trust": "pkcs12", "clientCertificate": True}},
    {"protocol": "PLAINTEXT"},
], ids=["sasl-jks", "scram-pem", "mtls-pkcs12", "plaintext"])
def test_audit_and_connectors_use_one_property_set(tmp_path: Path, security):
    """The audit's Spark Kafka options are the connectors' source.cluster.* properties: same keys,
    same constants (both come from contract.clientprops.java_client_props)."""
    from infra.checks import validation
    from infra.plan.audit import audit_config
    from infra.plan.stack import plan
    topo = validation.parse({"clusters": {"a": {"bootstrapServers": "a:9093", "security": security},
                                     "b": {"bootstrapServers": "b:9093"}},
                        "flows": [{"source": "a", "target": "b", "topics": ["t"]}]})
    stack = plan(topo)
    source = next(o for o in stack.objects if o["kind"] == "KafkaConnector"
                  and o["spec"]["class"].endswith("MirrorSourceConnector"))
    connector = {k.removeprefix("source.cluster."): v for k, v in source["spec"]["config"].items()
                 if k.startswith("source.cluster.") and k != "source.cluster.alias"}
    for item in ("password", "truststore.password", "client.crt", "client.key", "ca.crt", "truststore"):
        (tmp_path / item).write_text("x")
    cluster = audit_config(topo, stack)["clusters"]["a"]
    audit = {k.removeprefix("kafka."): v for k, v in spark_kafka_options(cluster, tmp_path).items()}
    assert set(audit) == set(connector)
    # Values that do not depend on where files are mounted must be equal: resolve the
    # connectors' ${cfmap:} references against the planned ConfigMaps.
    configmaps = {o["metadata"]["name"]: o["data"] for o in stack.objects if o["kind"] == "ConfigMap"}
    compared = 0
    for key, value in connector.items():
        ref = re.fullmatch(r"\$\{cfmap:[^/]+/([^:]+):([^}]+)\}", value)
        if ref and not key.endswith(".location"):
            assert audit[key] == configmaps[ref[1]][ref[2]], key
            compared += 1
    assert compared >= 2  # at least bootstrap.servers and security.protocol
