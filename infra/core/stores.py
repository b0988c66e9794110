"""Trust and key stores built at deploy time, in the representation a Connect worker expects.

The heartbeat connector's producer inherits the worker's `producer.*` store settings for the
TARGET and can only override them (docs/heartbeats.md). So the source's trust and key material
must be handed over in the worker's own representation: a password-protected store file where
the worker has one (Strimzi 0.40-0.45), inline PEM where it has that (Strimzi 0.47+). These pure
functions convert between the two; they run inside Pulumi `apply`s on secret config values.

Everything here is deterministic: the same material gives the same bytes, so `pulumi preview`
shows no change when nothing changed. The stores' passwords are derived from their material: a
trust store holds only public certificates, and a key store's password lives in the same Secret
as the store, so a random password would protect nothing more and would change on every run.

Formats: JKS as `sun.security.provider.JavaKeyStore` reads it (the JDK's `keytool` and
`KeyStore.getInstance("JKS")` are the tests' oracle); PKCS12 read with `cryptography`.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import re
import struct
from collections.abc import Sequence

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----\s*(.*?)\s*-----END \1-----", re.DOTALL)
JKS_MAGIC = 0xFEEDFEED
JKS_VERSION = 2
_PRIVATE_KEY_ENTRY, _TRUSTED_CERT_ENTRY = 1, 2
# The integrity check of a JKS file: SHA-1 over the password (UTF-16BE), this phrase and the body.
_JKS_WHITENER = b"Mighty Aphrodite"
# Sun's proprietary key protection (sun.security.provider.KeyProtector), OID 1.3.6.1.4.1.42.2.17.1.1.
_KEY_PROTECTOR_OID = bytes.fromhex("060a2b060104012a021101010500")
# PKCS#8 PrivateKeyInfo: SEQUENCE { INTEGER 0, AlgorithmIdentifier SEQUENCE, ... }.
_PKCS8_PREFIX = re.compile(rb"^\x30(?:[\x00-\x7f]|\x81.|\x82..)\x02\x01\x00\x30", re.DOTALL)


class StoreError(ValueError):
    """Material that cannot be turned into the store Kafka needs; says what and why."""


# ----------------------------------------------------------------- PEM


def pem_blocks(text: str, label: str) -> list[bytes]:
    """The DER bytes of every `-----BEGIN <label>-----` block."""
    found = []
    for kind, body in PEM_BLOCK.findall(text):
        if kind == label:
            try:
                found.append(base64.b64decode("".join(body.split()), validate=True))
            except ValueError as exc:
                raise StoreError(f"a {label} block is not valid base64 ({exc})") from None
    return found


def pem(label: str, der: bytes) -> str:
    body = base64.b64encode(der).decode()
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n"


def private_key_problem(text: str) -> str | None:
    """Why a PEM private key would not load in Kafka (PemStore reads unencrypted PKCS#8 only,
    `-----BEGIN PRIVATE KEY-----`), or None when it is one."""
    kinds = [kind for kind, _ in PEM_BLOCK.findall(text)]
    keys = [k for k in kinds if k.endswith("PRIVATE KEY")]
    if not keys:
        return "no PEM private key block (-----BEGIN PRIVATE KEY-----)"
    if len(keys) > 1:
        return f"{len(keys)} private key blocks; exactly one is expected"
    if keys[0] == "ENCRYPTED PRIVATE KEY":
        return ("an encrypted PKCS#8 key; Kafka needs it unencrypted "
                "(openssl pkcs8 -topk8 -nocrypt -in key.pem -out key-pkcs8.pem)")
    if keys[0] != "PRIVATE KEY":
        return (f"a {keys[0]} (PKCS#1/SEC1) key; Kafka reads PKCS#8 only: convert it with "
                "openssl pkcs8 -topk8 -nocrypt -in key.pem -out key-pkcs8.pem")
    try:
        der = pem_blocks(text, "PRIVATE KEY")[0]
    except StoreError as exc:
        return str(exc)
    if not _PKCS8_PREFIX.match(der):
        return "the PRIVATE KEY block is not a PKCS#8 PrivateKeyInfo structure"
    return None


def certificates(text: str) -> list[bytes]:
    found = pem_blocks(text, "CERTIFICATE")
    if not found:
        raise StoreError("no PEM certificate (-----BEGIN CERTIFICATE-----)")
    return found


def certificates_only(text: str) -> list[bytes]:
    """`parse_certificates` for a field that holds certificates and nothing else (a CA bundle, a
    client certificate chain): a private key pasted with them (a "combined PEM") would be written
    wherever the certificates go. Text outside the blocks (openssl's `Bag Attributes`) is left, as
    Kafka's PEM reader leaves it."""
    others = sorted({kind for kind, _ in PEM_BLOCK.findall(text) if kind != "CERTIFICATE"})
    if others:
        raise StoreError(f"{' and '.join(others)} block(s) beside the certificates: this holds certificates only "
                         "(a private key goes in clientKey; here it would be written wherever the certificates go)")
    return parse_certificates(text)


def expiry_problem(ders: Sequence[bytes], what: str, now: datetime.datetime | None = None) -> str | None:
    """Certificates that cannot work any more, or None. A client certificate chain whose first
    certificate (the client's own) has expired: the brokers refuse the handshake. A trust list
    (a CA bundle, a truststore) whose every certificate has expired: nothing it trusts can be
    verified. An expired CA beside a valid one (a bundle during a CA rotation) is harmless."""
    when = now or datetime.datetime.now(datetime.timezone.utc)
    ends = []
    for der in ders:
        try:
            ends.append(x509.load_der_x509_certificate(der).not_valid_after_utc)
        except ValueError:
            return None  # not X.509: the store's own check says so, not this one
    expired = [end for end in ends if end <= when]
    if what == "client" and ends and ends[0] <= when:
        return (f"expired: the client certificate was valid until {ends[0]:%Y-%m-%dT%H:%M:%SZ}; the brokers refuse "
                "it. Set the renewed certificate (and its key) in the stack")
    if what == "trust" and ends and len(expired) == len(ends):
        latest = max(ends)
        return (f"expired: {'its one certificate' if len(ends) == 1 else f'all {len(ends)} certificates'} "
                f"expired, the last on {latest:%Y-%m-%dT%H:%M:%SZ}; nothing it trusts can be verified. Set the "
                "cluster's current CA certificate in the stack")
    return None


def split_certificates(text: str) -> list[str]:
    """Each PEM certificate of a bundle as a PEM of its own, in the bundle's order."""
    return [pem("CERTIFICATE", der) for der in certificates(text)]


def placeholder_certificate(name: str) -> str:
    """A self-signed X.509 certificate whose subject is `name`, the same bytes every time: an
    Ed25519 key derived from the name (Ed25519 signatures are deterministic) and fixed dates.
    It stands in for a real certificate in offline renders; nothing trusts it."""
    import datetime

    from cryptography.hazmat.primitives.asymmetric import ed25519
    from cryptography.x509.oid import NameOID
    key = ed25519.Ed25519PrivateKey.from_private_bytes(hashlib.sha256(name.encode()).digest())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name[:64])])
    start = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") | 1)
            .not_valid_before(start).not_valid_after(start.replace(year=2100)).sign(key, None))
    return cert.public_bytes(Encoding.PEM).decode()


def parse_certificates(text: str) -> list[bytes]:
    """PEM certificates that are X.509 certificates, as Java's CertificateFactory needs."""
    found = certificates(text)
    for i, der in enumerate(found):
        try:
            x509.load_der_x509_certificate(der)
        except ValueError:
            raise StoreError(f"PEM block {i + 1} is not an X.509 certificate") from None
    return found


# ----------------------------------------------------------------- passwords


def derived_password(*material: str) -> str:
    """A store password that is a pure function of the store's material (see the module doc)."""
    digest = hashlib.sha256(b"kafka-replication store password\0" + "\0".join(material).encode())
    return digest.hexdigest()[:32]


# ----------------------------------------------------------------- JKS


def _utf(text: str) -> bytes:
    data = text.encode("utf-8")  # modified UTF-8 equals UTF-8 for the ASCII aliases we write
    return struct.pack(">H", len(data)) + data


def _der_length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def _der(tag: int, body: bytes) -> bytes:
    return bytes([tag]) + _der_length(len(body)) + body


def _protect_key(pkcs8: bytes, password: str) -> bytes:
    """sun.security.provider.KeyProtector.protect, with a salt derived from key and password
    (the JDK draws it at random; any 20 bytes are valid)."""
    secret = password.encode("utf-16-be")
    salt = hashlib.sha1(b"kafka-replication jks salt\0" + secret + pkcs8).digest()
    stream, digest = bytearray(), salt
    while len(stream) < len(pkcs8):
        digest = hashlib.sha1(secret + digest).digest()
        stream += digest
    encrypted = bytes(a ^ b for a, b in zip(pkcs8, stream))
    check = hashlib.sha1(secret + pkcs8).digest()
    info = _der(0x30, _KEY_PROTECTOR_OID) + _der(0x04, salt + encrypted + check)
    return _der(0x30, info)  # EncryptedPrivateKeyInfo


def jks(password: str, trusted: Sequence[bytes] = (), key: tuple[bytes, list[bytes]] | None = None) -> bytes:
    """A JKS store: `trusted` certificates (DER) as trusted entries `ca-0`, `ca-1`...; `key`, a
    PKCS#8 private key with its certificate chain, as the private key entry `client`. Entry
    dates are the epoch, so the bytes depend on the material only."""
    entries = []
    if key is not None:
        pkcs8, chain = key
        body = struct.pack(">I", _PRIVATE_KEY_ENTRY) + _utf("client") + struct.pack(">q", 0)
        protected = _protect_key(pkcs8, password)
        body += struct.pack(">I", len(protected)) + protected + struct.pack(">I", len(chain))
        for cert in chain:
            body += _utf("X.509") + struct.pack(">I", len(cert)) + cert
        entries.append(body)
    for i, cert in enumerate(trusted):
        entries.append(struct.pack(">I", _TRUSTED_CERT_ENTRY) + _utf(f"ca-{i}") + struct.pack(">q", 0)
                       + _utf("X.509") + struct.pack(">I", len(cert)) + cert)
    content = struct.pack(">III", JKS_MAGIC, JKS_VERSION, len(entries)) + b"".join(entries)
    return content + hashlib.sha1(password.encode("utf-16-be") + _JKS_WHITENER + content).digest()


def _jks_trusted(data: bytes, password: str) -> list[bytes]:
    """The trusted certificates of a JKS file, after its integrity check."""
    content, digest = data[:-20], data[-20:]
    if hashlib.sha1(password.encode("utf-16-be") + _JKS_WHITENER + content).digest() != digest:
        raise StoreError("the JKS truststore does not open with its password (integrity check failed)")
    pos = 12
    _magic, version, count = struct.unpack(">III", content[:pos])  # magic checked by the caller
    if version not in (1, 2):
        raise StoreError(f"JKS version {version} is not supported")

    def utf() -> str:
        nonlocal pos
        (n,) = struct.unpack(">H", content[pos:pos + 2])
        pos += 2 + n
        return content[pos - n:pos].decode("utf-8", "replace")

    def blob() -> bytes:
        nonlocal pos
        (n,) = struct.unpack(">I", content[pos:pos + 4])
        pos += 4 + n
        return content[pos - n:pos]

    found = []
    try:
        for _ in range(count):
            (tag,) = struct.unpack(">I", content[pos:pos + 4])
            pos += 4
            utf()
            pos += 8  # date
            if tag == _TRUSTED_CERT_ENTRY:
                if version == 2:
                    utf()
                found.append(blob())
            elif tag == _PRIVATE_KEY_ENTRY:
                blob()
                (chain,) = struct.unpack(">I", content[pos:pos + 4])
                pos += 4
                for _ in range(chain):
                    if version == 2:
                        utf()
                    blob()
            else:
                raise StoreError(f"unknown JKS entry type {tag}")
    except struct.error:
        raise StoreError("the JKS truststore is truncated") from None
    return found


def store_certificates(store: bytes, password: str) -> list[bytes]:
    """Every certificate of a JKS or PKCS12 truststore (DER), opened with its password."""
    if len(store) >= 4 and struct.unpack(">I", store[:4])[0] == JKS_MAGIC:
        found = _jks_trusted(store, password)
    else:
        try:
            _key, cert, extra = pkcs12.load_key_and_certificates(store, password.encode())
        except ValueError as exc:
            raise StoreError(f"the truststore is neither JKS nor a PKCS12 file that opens with its password ({exc})") from None
        found = [c.public_bytes(Encoding.DER) for c in ([cert] if cert else []) + list(extra)]
    if not found:
        raise StoreError("the truststore holds no certificate")
    return found


# ----------------------------------------------------------------- what the plan stores


def truststore_pem(store_b64: str, password: str) -> str:
    """A JKS/PKCS12 truststore (base64, as in secret config) as PEM certificates, for
    `ssl.truststore.certificates`."""
    try:
        store = base64.b64decode(store_b64, validate=True)
    except ValueError as exc:
        raise StoreError(f"the truststore is not base64 ({exc})") from None
    return "".join(pem("CERTIFICATE", der) for der in store_certificates(store, password))


def ca_truststore_jks(ca_pem: str) -> str:
    """A PEM CA bundle as a JKS truststore (base64, for a Secret's `data`) with the password
    `derived_password(ca_pem)`."""
    return base64.b64encode(jks(derived_password(ca_pem), trusted=certificates(ca_pem))).decode()


def client_keystore_jks(key_pem: str, cert_pem: str) -> str:
    """A PKCS#8 PEM key and its PEM certificate chain as a JKS key store (base64), with the
    password `derived_password(key_pem, cert_pem)`."""
    problem = private_key_problem(key_pem)
    if problem:
        raise StoreError(f"the client key is {problem}")
    pkcs8 = pem_blocks(key_pem, "PRIVATE KEY")[0]
    return base64.b64encode(jks(derived_password(key_pem, cert_pem), key=(pkcs8, certificates(cert_pem)))).decode()
