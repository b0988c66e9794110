"""Real trust and key material for tests: a CA per cluster alias, a client key pair signed by
it, and the CA as JKS and PKCS12 truststores. Made once per test run (EC P-256: fast)."""

from __future__ import annotations

import base64
import datetime
from dataclasses import dataclass
from functools import lru_cache

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from infra.core import stores

_NOT_BEFORE = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
_NOT_AFTER = datetime.datetime(2045, 1, 1, tzinfo=datetime.timezone.utc)


@dataclass(frozen=True)
class Material:
    alias: str
    ca_pem: str
    client_cert_pem: str
    client_key_pem: str       # unencrypted PKCS#8
    client_key_pkcs1_pem: str  # the same key as SEC1 (`BEGIN EC PRIVATE KEY`): Kafka refuses it

    def truststore_jks(self, password: str) -> str:
        return base64.b64encode(stores.jks(password, trusted=stores.certificates(self.ca_pem))).decode()

    def truststore_pkcs12(self, password: str) -> str:
        cert = x509.load_pem_x509_certificate(self.ca_pem.encode())
        store = pkcs12.serialize_java_truststore(
            [pkcs12.PKCS12Certificate(cert, f"{self.alias}-ca".encode())],
            serialization.BestAvailableEncryption(password.encode()))
        return base64.b64encode(store).decode()


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


@lru_cache(maxsize=None)
def material(alias: str, until: datetime.datetime = _NOT_AFTER) -> Material:
    """`alias`'s CA and client certificate, valid from 2025 until `until` (an expired pair when past)."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name(f"{alias}-ca")).issuer_name(_name(f"{alias}-ca"))
          .public_key(ca_key.public_key()).serial_number(1).not_valid_before(_NOT_BEFORE).not_valid_after(until)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name(f"{alias}-client")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(2).not_valid_before(_NOT_BEFORE).not_valid_after(until)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return Material(
        alias, ca.public_bytes(pem).decode(), cert.public_bytes(pem).decode(),
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode(),
        key.private_bytes(pem, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()).decode())


def secrets_for(alias: str, truststore_password: str, trust: str = "jks") -> dict[str, str]:
    """Every secret item of `alias` (infra/deploy/config.py SECRET_ITEMS) but its SASL password."""
    m = material(alias)
    store = m.truststore_jks(truststore_password) if trust == "jks" else m.truststore_pkcs12(truststore_password)
    return {f"{alias}.caCert": m.ca_pem, f"{alias}.truststore": store,
            f"{alias}.truststorePassword": truststore_password,
            f"{alias}.clientCert": m.client_cert_pem, f"{alias}.clientKey": m.client_key_pem}
