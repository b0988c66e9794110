"""A target's CA bundle (several certificates in `caCert`): what each release's operator trusts of
a `trustedCertificates` entry, in the stand-in, and how the program makes every release trust
the whole bundle.

0.43.0/0.45.0 (CSM 1.2/1.4) import each file with keytool (first certificate only), 1.2.0 re-encodes
the first certificate of each key (CertificateUtils.x509Certificate), 0.48.0 copies every `.crt`
key raw (AbstractConnectOperator.tlsTrustedCertsSecret). The program therefore writes the bundle
twice into the target CA Secret: whole under `ca.crt` (the connectors' inline PEM) and one
certificate per key under `ca-<i>.crt`, which the KafkaConnect trusts by `pattern`. These tests
prove it on the stand-in's output (tests/runtime/test_replication.py on real TLS)."""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path

import pulumi
import pytest
from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

from components import kube
from infra.core import stores
from infra.core.manifests import SecretParts, SecretValue
from infra.core.releases import Flavour, find
from infra.tools import render
from infra.tools.rehearsal import operator
from tests.support.material import material
from tests.support.stacks import doc_topology, on_release, write_topology

RELEASES = [("csm", "1.2", True), ("csm", "1.4", True), ("strimzi", "0.48.0", False), ("strimzi", "1.2.0", True)]
BUNDLE = material("old-root").ca_pem + material("new-root").ca_pem
FIRST, SECOND = (stores.certificates(material(a).ca_pem)[0] for a in ("old-root", "new-root"))
OTHER_SECRETS = {"target-us-east-password": {"pass": b"pw"}, "source-us-west-tls": {"truststore.jks": b"x"}}


def _render(flavour: str, version: str, secrets: dict[str, str]) -> list[dict]:
    t = on_release(doc_topology(), flavour, version)
    with tempfile.TemporaryDirectory() as folder:
        return render.run("t", {"topology": str(write_topology(Path(folder), t))}, secrets,
                          placeholder_secrets=True).objects()


def _trusted(release, connect: dict, secrets: dict[str, dict[str, bytes]]) -> list[bytes]:
    """The certificates the worker the stand-in starts trusts for the target, DER."""
    setup = operator.worker(release, connect, {**OTHER_SECRETS, **secrets}, "127.0.0.9")
    if release.worker_file.value == "literalStores":
        password = setup.properties["ssl.truststore.password"]
        store = pkcs12.load_pkcs12(setup.files["/tmp/kafka/cluster.truststore.p12"], password.encode())
        return [c.certificate.public_bytes(Encoding.DER) for c in store.additional_certs]
    (internal,) = [o for o in setup.objects if o["kind"] == "Secret"]
    return [der for v in internal["data"].values() for der in stores.certificates(base64.b64decode(v).decode())]


@pytest.mark.parametrize("flavour,version,first_only", RELEASES)
def test_the_stand_in_trusts_what_the_release_trusts_of_one_key_holding_a_bundle(flavour, version, first_only):
    release = find(Flavour(flavour), version)
    connect = next(o for o in _render(flavour, version, {}) if o["kind"] == "KafkaConnect")
    secret = connect["spec"]["tls"]["trustedCertificates"][0]["secretName"]
    entry = {"secretName": secret, "certificate": "ca.crt"}
    connect["spec"]["tls"]["trustedCertificates"] = [entry]
    trusted = _trusted(release, connect, {secret: {"ca.crt": BUNDLE.encode()}})
    assert trusted == ([FIRST] if first_only else [FIRST, SECOND])


@pytest.mark.parametrize("flavour,version,first_only", RELEASES)
def test_every_release_trusts_the_whole_target_bundle_the_program_writes(flavour, version, first_only):
    release = find(Flavour(flavour), version)
    objects = _render(flavour, version, {"us-east.caCert": BUNDLE})
    connect = next(o for o in objects if o["kind"] == "KafkaConnect")
    assert connect["spec"]["tls"] == {"trustedCertificates": [{"secretName": "target-us-east-ca",
                                                               "pattern": "ca-*.crt"}]}
    (ca,) = [o for o in objects if o["kind"] == "Secret" and o["metadata"]["name"] == "target-us-east-ca"]
    assert ca["stringData"] == {"ca-0.crt": stores.pem("CERTIFICATE", FIRST), "ca-1.crt": stores.pem("CERTIFICATE", SECOND),
                                "ca.crt": BUNDLE}
    trusted = _trusted(release, connect, {"target-us-east-ca": {k: v.encode() for k, v in ca["stringData"].items()}})
    # 0.48.0 copies `ca.crt` too: each certificate twice, which a PEM truststore takes.
    assert sorted(set(trusted)) == sorted([FIRST, SECOND])
    assert len(trusted) == (2 if first_only else 4)


def test_the_bundle_keys_are_shown_and_each_part_is_secret():
    """The Secret section a SecretParts value lands in: an Output that is not secret itself (its
    keys stay visible, as `pulumi preview` shows a Secret's keys), holding one secret Output per
    key. (The mock engine folds nested secrets up to the top-level property, `stringData`, as it
    does for every Secret, so the Outputs are read here before they reach it.)"""
    seen: dict[str, object] = {}

    def body():
        resolve = kube.secret_resolver({"us-east.caCert": pulumi.Output.secret(BUNDLE)})
        section = kube._secret_section({"ca.crt": SecretValue(("us-east.caCert",)), "ca-*.crt": SecretParts(
            ("us-east.caCert",), split=stores.split_certificates)}, resolve)

        async def read(section_value):
            seen["section secret"] = await section.is_secret()
            for key, value in section_value.items():
                seen[key] = (await value.future(), await value.is_secret())
        return section.apply(lambda value: pulumi.Output.from_input(read(value)))

    render.under_mocks(body, render.RecordingMocks(), "p", "s", {}, [])
    assert seen == {"section secret": False, "ca-0.crt": (stores.pem("CERTIFICATE", FIRST), True),
                    "ca-1.crt": (stores.pem("CERTIFICATE", SECOND), True), "ca.crt": (BUNDLE, True)}


def test_a_bundle_is_accepted_for_sources_and_targets_on_every_release(tmp_path):
    """The source's trust is read by the connectors' own clients (all certificates of a PEM)."""
    for flavour, version, _ in RELEASES:
        t = on_release(doc_topology(), flavour, version)
        t["clusters"]["us-west"]["security"]["tls"] = {"trust": "pem"}
        path = write_topology(tmp_path, t, f"{flavour}-{version}.yaml")
        objects = render.run("t", {"topology": str(path)}, {"us-west.caCert": BUNDLE, "us-east.caCert": BUNDLE},
                             placeholder_secrets=True).objects()
        secrets = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Secret"}
        assert sorted(secrets["target-us-east-ca"]["stringData"]) == ["ca-0.crt", "ca-1.crt", "ca.crt"]
        assert BUNDLE in secrets["source-us-west-tls"]["stringData"].values()


def test_a_pattern_matching_nothing_leaves_the_csm_worker_without_a_truststore():
    """tls_utils.sh prepare_truststore skips a glob that matches no file (`[ -f "$file" ]`): no
    store is written, while the worker file still names it, so the worker fails to start."""
    release = find(Flavour.csm, "1.2")
    connect = next(o for o in _render("csm", "1.2", {}) if o["kind"] == "KafkaConnect")
    setup = operator.worker(release, connect, {**OTHER_SECRETS, "target-us-east-ca": {"ca.crt": BUNDLE.encode()}},
                            "127.0.0.9")
    assert setup.properties["ssl.truststore.location"] == "/tmp/kafka/cluster.truststore.p12"
    assert "/tmp/kafka/cluster.truststore.p12" not in setup.files


def test_the_auth_hash_changes_with_what_strimzi_hashes_and_nothing_else():
    """operator.auth_hash: the trusted keys the pattern matches, the SASL password (a change rolls
    the Connect pods); another key of the same Secret (the connectors' whole bundle) does not."""
    connect = next(o for o in _render("strimzi", "1.2.0", {}) if o["kind"] == "KafkaConnect")
    one = material("old-root").ca_pem.encode()
    secrets = {"target-us-east-ca": {"ca.crt": BUNDLE.encode(), "ca-0.crt": one},
               "target-us-east-password": {"pass": b"pw"}}
    base = operator.auth_hash(connect, secrets)
    assert operator.auth_hash(connect, {**secrets, "target-us-east-password": {"pass": b"pw2"}}) != base
    assert operator.auth_hash(connect, {**secrets, "target-us-east-ca": {
        "ca.crt": BUNDLE.encode(), "ca-0.crt": one, "ca-1.crt": material("new-root").ca_pem.encode()}}) != base
    assert operator.auth_hash(connect, {**secrets, "target-us-east-ca": {"ca.crt": b"other", "ca-0.crt": one}}) == base
