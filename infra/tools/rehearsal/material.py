"""Trust and key material for Kafka clusters started here: a CA per cluster, a broker certificate
for every host name of its bootstrap address, a client certificate for mutual TLS, and the CA as
PEM, JKS and PKCS12 truststores (the three forms a topology may declare).

Elliptic-curve keys (P-256): fast to make, and every Kafka and JDK release here reads them.
Private keys are unencrypted PKCS#8, the only PEM form Kafka loads.
"""

from __future__ import annotations

import base64
import datetime
from dataclasses import dataclass
from functools import lru_cache

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from infra.core import stores

_NOT_BEFORE = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
_NOT_AFTER = datetime.datetime(2045, 1, 1, tzinfo=datetime.timezone.utc)
_PEM = serialization.Encoding.PEM


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(_PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()


@dataclass(frozen=True)
class ClusterMaterial:
    alias: str
    ca_pem: str
    server_cert_pem: str   # the broker's certificate, then the CA: a chain
    server_key_pem: str
    client_cert_pem: str
    client_key_pem: str

    def truststore(self, kind: str, password: str) -> bytes:
        """The CA as a `jks` or `pkcs12` truststore."""
        if kind == "jks":
            return stores.jks(password, trusted=stores.certificates(self.ca_pem))
        cert = x509.load_pem_x509_certificate(self.ca_pem.encode())
        return pkcs12.serialize_java_truststore(
            [pkcs12.PKCS12Certificate(cert, f"{self.alias}-ca".encode())],
            serialization.BestAvailableEncryption(password.encode()))

    def truststore_b64(self, kind: str, password: str) -> str:
        return base64.b64encode(self.truststore(kind, password)).decode()


@lru_cache(maxsize=None)
def for_cluster(alias: str, hosts: tuple[str, ...], generation: int = 0) -> ClusterMaterial:
    """Material for the cluster `alias`, its broker certificate valid for `hosts`. A later
    `generation` is a rotation's: a CA of its own (named apart, so that a bundle of the old and
    the new CA holds two subjects), certificates issued by it, the same client name."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"{alias}-ca" if generation == 0 else f"{alias}-ca-{generation}")
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(_NOT_BEFORE).not_valid_after(_NOT_AFTER)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))

    def issue(cn: str, usage: x509.ObjectIdentifier, sans: tuple[str, ...] = ()
              ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(_NOT_BEFORE).not_valid_after(_NOT_AFTER)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in sans]),
                                            critical=False)
        return builder.sign(ca_key, hashes.SHA256()), key

    server, server_key = issue(f"{alias}-broker", ExtendedKeyUsageOID.SERVER_AUTH, hosts)
    client, client_key = issue(f"{alias}-client", ExtendedKeyUsageOID.CLIENT_AUTH)
    ca_pem = ca.public_bytes(_PEM).decode()
    return ClusterMaterial(alias, ca_pem, server.public_bytes(_PEM).decode() + ca_pem, _key_pem(server_key),
                           client.public_bytes(_PEM).decode(), _key_pem(client_key))
