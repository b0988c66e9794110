"""When a certificate stops being valid: the `notAfter` of X.509 certificates in PEM text, read
from their DER with nothing but the standard library (the audit image carries no X.509 library;
the deployer's own checks use `cryptography`, and the tests hold the two to each other).

The audit reads the certificates it is given, the copies the stack keeps of each cluster's CA and
of the client certificates, and pushes their expiry (spark/report.py): a CA that the cluster's own
operator renewed leaves the stack's copy to expire unnoticed otherwise.

Only the path to the validity is parsed (RFC 5280, 4.1): Certificate ::= SEQUENCE { tbsCertificate
SEQUENCE { [0] version OPTIONAL, serialNumber, signature, issuer, validity SEQUENCE { notBefore,
notAfter }, ... }, ... }. Times are UTCTime (YYMMDDHHMMSSZ, years 1950-2049) or GeneralizedTime
(YYYYMMDDHHMMSSZ), both in UTC (4.1.2.5).
"""

from __future__ import annotations

import base64
import binascii
import calendar
import re

PEM_CERTIFICATE = re.compile(r"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", re.DOTALL)
_UTC_TIME, _GENERALIZED_TIME = 0x17, 0x18


class CertificateError(ValueError):
    """Not an X.509 certificate in DER, or one whose validity cannot be read."""


def pem_certificates(text: str) -> list[bytes]:
    """The DER of each CERTIFICATE block of `text`, in order; other blocks and text are left."""
    out = []
    for body in PEM_CERTIFICATE.findall(text):
        try:
            out.append(base64.b64decode("".join(body.split()), validate=True))
        except (binascii.Error, ValueError):
            raise CertificateError("a CERTIFICATE block that is not base64") from None
    return out


def _element(der: bytes, at: int) -> tuple[int, int, int]:
    """(tag, start of its content, end of its content) of the DER element at `at`."""
    if at + 2 > len(der):
        raise CertificateError("truncated DER")
    tag, length = der[at], der[at + 1]
    at += 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or at + count > len(der):
            raise CertificateError("a DER length that is not definite")
        length = int.from_bytes(der[at:at + count], "big")
        at += count
    if at + length > len(der):
        raise CertificateError("truncated DER")
    return tag, at, at + length


def not_after(der: bytes) -> int:
    """The certificate's notAfter, in seconds since the epoch (UTC)."""
    tag, start, _ = _element(der, 0)
    if tag != 0x30:
        raise CertificateError("not a certificate (no SEQUENCE)")
    tag, at, end = _element(der, start)  # tbsCertificate
    if tag != 0x30:
        raise CertificateError("not a certificate (no tbsCertificate)")
    tag, _, after = _element(der, at)
    if tag == 0xA0:  # [0] version
        at = after
    for _ in range(3):  # serialNumber, signature, issuer
        _, _, at = _element(der, at)
    tag, at, _ = _element(der, at)  # validity
    if tag != 0x30 or at >= end:
        raise CertificateError("not a certificate (no validity)")
    _, _, at = _element(der, at)  # notBefore
    tag, start, stop = _element(der, at)
    text = der[start:stop].decode("ascii", "replace")
    if tag == _UTC_TIME and re.fullmatch(r"\d{12}Z", text):
        year = int(text[:2])
        text = f"{1900 + year if year >= 50 else 2000 + year}{text[2:]}"
    elif not (tag == _GENERALIZED_TIME and re.fullmatch(r"\d{14}Z", text)):
        raise CertificateError(f"a notAfter that is not UTC time ({text[:20]!r})")
    fields = [int(text[0:4]), int(text[4:6]), int(text[6:8]), int(text[8:10]), int(text[10:12]), int(text[12:14])]
    if not (1 <= fields[1] <= 12 and 1 <= fields[2] <= 31 and fields[3] < 24 and fields[4] < 60 and fields[5] < 61):
        raise CertificateError(f"a notAfter that is no date ({text})")
    return calendar.timegm((*fields, 0, 0, 0))
