"""A target's CA bundle (several certificates in `caCert`): what each release's operator trusts of
a `trustedCertificates` entry, in the stand-in, and what the program therefore refuses.

0.43.0/0.45.0 (CSM 1.2/1.4) import each file with keytool (first certificate only), 1.2.0 re-encodes
each entry's first certificate (CertificateUtils.x509Certificate), 0.48.0 copies the keys raw
(AbstractConnectOperator.tlsTrustedCertsSecret). The stand-in is proven here on its output; the
program's refusal on the secret config before anything deploys."""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import pkcs12

from infra.core import stores
from infra.core.errors import TopologyError
from infra.core.releases import Flavour, find
from infra.tools import render
from infra.tools.rehearsal import operator
from tests.support.material import material
from tests.support.stacks import doc_topology, on_release, write_topology

RELEASES = [("csm", "1.2", True), ("csm", "1.4", True), ("strimzi", "0.48.0", False), ("strimzi", "1.2.0", True)]
BUNDLE = material("old-root").ca_pem + material("new-root").ca_pem
FIRST, SECOND = (stores.certificates(material(a).ca_pem)[0] for a in ("old-root", "new-root"))


def _connect(flavour: str, version: str) -> dict:
    t = on_release(doc_topology(), flavour, version)
    with tempfile.TemporaryDirectory() as folder:
        objects = render.run("t", {"topology": str(write_topology(Path(folder), t))}, {},
                             placeholder_secrets=True).objects()
    return next(o for o in objects if o["kind"] == "KafkaConnect")


@pytest.mark.parametrize("flavour,version,first_only", RELEASES)
def test_the_stand_in_trusts_what_the_release_trusts_of_a_bundle(flavour, version, first_only):
    release = find(Flavour(flavour), version)
    assert release.first_certificate_per_trusted_entry is first_only
    connect = _connect(flavour, version)
    (entry,) = connect["spec"]["tls"]["trustedCertificates"]
    setup = operator.worker(release, connect, {entry["secretName"]: {entry["certificate"]: BUNDLE.encode()},
                                               "target-us-east-password": {"pass": b"pw"},
                                               "source-us-west": {"truststore.jks": b"x"}}, "127.0.0.9")
    if release.worker_file.value == "literalStores":
        password = setup.properties["ssl.truststore.password"]
        store = pkcs12.load_pkcs12(setup.files["/tmp/kafka/cluster.truststore.p12"], password.encode())
        trusted = [c.certificate.public_bytes(stores_der()) for c in store.additional_certs]
    else:
        (internal,) = [o for o in setup.objects if o["kind"] == "Secret"]
        trusted = [der for v in internal["data"].values() for der in stores.certificates(base64.b64decode(v).decode())]
    assert trusted == ([FIRST] if first_only else [FIRST, SECOND])


def stores_der():
    from cryptography.hazmat.primitives.serialization import Encoding
    return Encoding.DER


@pytest.mark.parametrize("flavour,version,first_only", RELEASES)
def test_a_target_bundle_is_refused_where_the_release_keeps_the_first_certificate(tmp_path, flavour, version,
                                                                                    first_only):
    t = on_release(doc_topology(), flavour, version)
    path = write_topology(tmp_path, t)
    secrets = {"us-east.caCert": BUNDLE}
    if first_only:
        with pytest.raises(TopologyError) as exc:
            render.run("t", {"topology": str(path)}, secrets, placeholder_secrets=True)
        release = find(Flavour(flavour), version)
        assert [str(p) for p in exc.value.problems] == [
            f"clusters.us-east: secret config kafka-replication:us-east.caCert: got the secret value (not shown); "
            f"expected the PEM CA certificate (TLS trust: pem); this is a bundle of 2 certificates: the cluster is a "
            f"flow's target, and {release.name} (Strimzi {release.strimzi}) trusts only the first certificate of each "
            "trusted entry of the Connect worker, so the others would be dropped and TLS fail where the brokers "
            "chain to them; give the one CA certificate the brokers' chain ends at"]
    else:
        assert render.run("t", {"topology": str(path)}, secrets, placeholder_secrets=True).objects()


def test_a_source_bundle_is_accepted_on_every_release(tmp_path):
    """The source's trust is read by the connectors' own clients (all certificates of a PEM)."""
    for flavour, version, _ in RELEASES:
        t = on_release(doc_topology(), flavour, version)
        t["clusters"]["us-west"]["security"]["tls"] = {"trust": "pem"}
        path = write_topology(tmp_path, t, f"{flavour}-{version}.yaml")
        assert render.run("t", {"topology": str(path)}, {"us-west.caCert": BUNDLE}, placeholder_secrets=True).objects()
