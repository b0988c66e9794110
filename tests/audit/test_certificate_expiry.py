"""When the stack's certificates expire, as the audit reads them (contract/certificates.py, no
X.509 library) and pushes them for KafkaReplicationCertificateExpiring: held to `cryptography`'s
reading on certificates of both time encodings, to the JDK's keytool for stores, and refusing what
is not a certificate."""

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from contract.certificates import CertificateError, not_after, pem_certificates
from spark import audit
from spark.clusters import certificate_expiries
from spark.offsets import Unverifiable

UTC = datetime.timezone.utc


def certificate(name: str, until: datetime.datetime) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(datetime.datetime(1990, 1, 1, tzinfo=UTC))
            .not_valid_after(until).sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


# UTCTime up to 2049, GeneralizedTime from 2050 (RFC 5280 4.1.2.5): both encodings, and the edges.
@pytest.mark.parametrize("until", [datetime.datetime(2027, 1, 31, 23, 59, 59, tzinfo=UTC),
                                   datetime.datetime(2049, 12, 31, 23, 59, 59, tzinfo=UTC),
                                   datetime.datetime(2050, 1, 1, tzinfo=UTC),
                                   datetime.datetime(1999, 6, 30, 12, 0, 1, tzinfo=UTC),
                                   datetime.datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)])
def test_not_after_reads_what_cryptography_reads(until):
    (der,) = pem_certificates(certificate("ca", until))
    assert not_after(der) == int(x509.load_der_x509_certificate(der).not_valid_after_utc.timestamp())
    assert not_after(der) == int(until.timestamp())


def test_a_bundle_gives_each_certificate_and_ignores_keys_and_text():
    first = certificate("old", datetime.datetime(2026, 12, 20, tzinfo=UTC))
    second = certificate("new", datetime.datetime(2027, 12, 20, tzinfo=UTC))
    bundle = "Bag Attributes\n    friendlyName: old\n" + first + "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n" + second
    assert [not_after(d) for d in pem_certificates(bundle)] == [1_797_724_800, 1_829_260_800]


@pytest.mark.parametrize("der, message", [
    (b"", "truncated DER"),
    (b"\x02\x01\x05", "not a certificate (no SEQUENCE)"),
    (b"\x30\x80\x00\x00", "a DER length that is not definite"),
    (b"\x30\x05\x30\x03\x02\x01", "truncated DER"),
    (b"\x30\x03\x02\x01\x05", "not a certificate (no tbsCertificate)"),
])
def test_what_is_not_a_certificate_is_refused(der, message):
    with pytest.raises(CertificateError) as refused:
        not_after(der)
    assert str(refused.value) == message


def test_a_block_that_is_not_base64_is_refused():
    with pytest.raises(CertificateError) as refused:
        pem_certificates("-----BEGIN CERTIFICATE-----\nnot*base64\n-----END CERTIFICATE-----\n")
    assert str(refused.value) == "a CERTIFICATE block that is not base64"


CLUSTER = {"bootstrapServers": "b:9093", "securityProtocol": "SSL", "saslMechanism": None, "saslUsername": None,
           "trust": "pem", "clientCertificate": True}


def test_a_trust_list_expires_with_its_last_certificate_a_client_certificate_with_its_own(tmp_path: Path):
    (tmp_path / "ca.crt").write_text(certificate("old-ca", datetime.datetime(2026, 12, 20, tzinfo=UTC))
                                     + certificate("new-ca", datetime.datetime(2027, 12, 20, tzinfo=UTC)))
    (tmp_path / "client.crt").write_text(certificate("client", datetime.datetime(2027, 3, 1, tzinfo=UTC))
                                         + certificate("intermediate", datetime.datetime(2030, 1, 1, tzinfo=UTC)))
    assert certificate_expiries(CLUSTER, tmp_path) == {"caCert": 1_829_260_800, "clientCert": 1_803_859_200}
    assert certificate_expiries({**CLUSTER, "trust": None, "clientCertificate": False}, tmp_path) == {}


@pytest.mark.parametrize("store_type", ["PKCS12", "JKS"])
def test_a_truststore_is_read_through_the_jdks_keytool(tmp_path: Path, store_type):
    for i, until in enumerate((datetime.datetime(2027, 5, 1, tzinfo=UTC), datetime.datetime(2026, 12, 31, tzinfo=UTC))):
        (tmp_path / f"ca{i}.pem").write_text(certificate(f"ca{i}", until))
        subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", f"ca{i}", "-file", str(tmp_path / f"ca{i}.pem"),
                        "-keystore", str(tmp_path / "truststore"), "-storetype", store_type, "-storepass", "changeit"],
                       check=True, capture_output=True)
    (tmp_path / "truststore.password").write_text("changeit")
    assert certificate_expiries({**CLUSTER, "trust": store_type.lower(), "clientCertificate": False}, tmp_path) == \
        {"truststore": 1_809_129_600}


def test_what_cannot_be_read_is_said_and_left_out(tmp_path: Path, capsys):
    (tmp_path / "us-east").mkdir()
    (tmp_path / "us-east" / "ca.crt").write_text(certificate("ca", datetime.datetime(2027, 12, 20, tzinfo=UTC)))
    (tmp_path / "us-west").mkdir()
    (tmp_path / "us-west" / "ca.crt").write_text("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    config = {"clusters": {"us-east": {**CLUSTER, "clientCertificate": False}, "us-west": CLUSTER}}
    assert audit.certificates(config, tmp_path) == [{"cluster": "us-east", "item": "caCert", "notAfter": 1_829_260_800_000}]
    assert capsys.readouterr().err == (f"warning: cluster us-west: credentials: caCert ({tmp_path}/us-west/ca.crt) "
                                       "holds no certificate\n")
    with pytest.raises(Unverifiable) as refused:
        certificate_expiries(CLUSTER, tmp_path / "nowhere")
    assert str(refused.value) == (f"credentials: cannot read caCert ({tmp_path}/nowhere/ca.crt): "
                                  "No such file or directory")
