"""The runtime conformance tier: every connector of every render, on every supported operator
release, held to what the Connect worker would really do with it (tests/support/worker.py), with
the JDK judging each resulting client configuration (tests/support/java/ClientCheck.java).

A client passes when, after the worker's merge and Kafka's single-pass variable resolution, it
holds no unresolved variable, reaches the cluster it must (bootstrap, protocol, SASL identity),
passes Kafka's store rules, loads its stores with the JDK, trusts exactly that cluster's CA and
presents that cluster's client certificate (or none). Without a worker: every variant on every
release, quickly; tests/runtime/test_replication.py runs the stacks on real workers and brokers.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from infra.checks import validation
from infra.core import releases, stores
from infra.core.releases import Flavour, WorkerFile
from infra.tools import render
from infra.topology.resolution import Model
from tests.support import worker as runtime
from tests.support.material import material
from tests.support.stacks import RELEASES, ROOT, on_release, write_topology
from tests.support.variants import renders

JAVA = ROOT / "tests" / "support" / "java" / "ClientCheck.java"
HEARTBEAT = "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"
WORKER_STORE_PASSWORD = "worker-store-pw-9f1c"  # Strimzi draws one per pod at random


def secrets_for(topo: Model) -> dict[str, str]:
    secrets = {"registry.password": "reg-pw"}
    for alias, cluster in topo.clusters.items():
        m = material(alias)
        tls = cluster.security.effective_tls
        password = f"tsp-{alias}"
        store = m.truststore_pkcs12(password) if tls and tls.trust.value == "pkcs12" else m.truststore_jks(password)
        secrets.update({f"{alias}.password": f"pw-{alias}-7e1", f"{alias}.caCert": m.ca_pem,
                        f"{alias}.truststore": store, f"{alias}.truststorePassword": password,
                        f"{alias}.clientCert": m.client_cert_pem, f"{alias}.clientKey": m.client_key_pem})
    return secrets


def fingerprint(pem: str) -> str:
    return hashlib.sha256(stores.certificates(pem)[0]).hexdigest()


def cluster_of(topo: Model, alias: str, secrets: dict) -> runtime.Cluster:
    c = topo.clusters[alias]
    sec = c.security
    tls = sec.effective_tls
    m = material(alias)
    return runtime.Cluster(alias, c.bootstrapServers, sec.protocol.value,
                           sec.sasl.mechanism.value if sec.sasl else None, sec.sasl.username if sec.sasl else None,
                           secrets[f"{alias}.password"] if sec.sasl else None, m.ca_pem if tls else None,
                           m.client_cert_pem if tls and tls.clientCertificate else None,
                           m.client_key_pem if tls and tls.clientCertificate else None)


def expectation(cluster: runtime.Cluster) -> dict[str, str]:
    out = {"expect.bootstrap.servers": cluster.bootstrap, "expect.security.protocol": cluster.protocol}
    if cluster.mechanism:
        out.update({"expect.sasl.mechanism": cluster.mechanism, "expect.sasl.username": cluster.username,
                    "expect.sasl.password": cluster.password})
    if cluster.ca_pem:
        out["expect.ca.sha256"] = fingerprint(cluster.ca_pem)
        out["expect.client.sha256"] = fingerprint(cluster.client_cert_pem) if cluster.client_cert_pem else "none"
    return out


def _escape(text: str) -> str:
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch in "=:#!" or ord(ch) > 126 or ord(ch) < 32:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def write_case(path: Path, client: dict, expect: dict) -> None:
    lines = [f"{_escape(k)}={_escape(str(v))}" for k, v in sorted({**client, **expect}.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def cases(name: str, data: dict, out: Path, release: releases.Release | None = None,
          heartbeat_override=None, tmp: Path | None = None) -> dict[str, str]:
    """Write every client case of one render; returns {case: what it is}. `release` evaluates
    the render under another release's worker (the render's own by default);
    `heartbeat_override(config)` rewrites heartbeat configs before evaluation."""
    topo = validation.parse(data)
    secrets = secrets_for(topo)
    result = render.run("runtime", {"topology": str(write_topology(tmp or out, data, f"{name}.yaml"))}, secrets)
    release = release or topo.operator.release
    objects = result.objects()
    stored = {}
    for o in objects:
        if o["kind"] in ("ConfigMap", "Secret"):
            meta = o["metadata"]
            values = dict(o.get("data", {}) if o["kind"] == "ConfigMap" else {})
            if o["kind"] == "Secret":
                values.update({k: base64.b64decode(v) for k, v in o.get("data", {}).items()})
                values.update(o.get("stringData", {}))
            stored[(o["kind"], meta["namespace"], meta["name"])] = values
    flows = {c["namespace"]: (f["sourceAlias"], f["targetAlias"])
             for f in result.outputs["flows"].values() for c in f["connectClusters"]}
    written = {}
    for connect in (o for o in objects if o["kind"] == "KafkaConnect"):
        ns = connect["metadata"]["namespace"]
        source_alias, target_alias = flows[ns]
        source, target = cluster_of(topo, source_alias, secrets), cluster_of(topo, target_alias, secrets)
        root = out / "fs" / f"{name}-{ns}"
        file_text, worker = runtime.worker_file(release, target, ns, connect["metadata"]["name"], WORKER_STORE_PASSWORD)
        _pod_files(root, connect, stored, target, release)

        def lookup(provider: str, path: str, key: str, ns=ns, file_text=file_text):
            if provider in ("cfmap", "secret"):
                obj_ns, obj = path.split("/")
                kind = "ConfigMap" if provider == "cfmap" else "Secret"
                value = stored.get((kind, obj_ns, obj), {}).get(key)
                return value.decode() if isinstance(value, bytes) else value
            if provider == "file" and path == runtime.WORKER_FILE:
                return file_text.get(key)
            return None

        eos = connect["spec"]["config"].get("exactly.once.source.support") == "enabled"
        for c in (o for o in objects if o["kind"] == "KafkaConnector" and o["metadata"]["namespace"] == ns):
            raw = dict(c["spec"]["config"])
            heartbeat = c["spec"]["class"] == HEARTBEAT
            if heartbeat and heartbeat_override:
                raw = heartbeat_override(raw)
            config = runtime.resolve_once(raw, lookup)
            produce_to = source if heartbeat else target
            clients = {f"framework-{k}": (v, produce_to)
                       for k, v in runtime.framework_clients(worker, config, eos).items()}
            for side, client in runtime.mirror_clients(config).items():
                clients[f"mirror-{side}"] = (client, source if heartbeat or side == "source" else target)
            for client_name, (client, expected) in clients.items():
                case = f"{name}__{c['metadata']['name']}__{client_name}"
                write_case(out / f"{case}.properties", _rooted(runtime.connection_only(client), root),
                           expectation(expected))
                written[case] = c["spec"]["class"]
    return written


def _rooted(client: dict, root: Path) -> dict:
    """File locations point into the pod's file system, laid out under `root`."""
    return {k: (str(root) + v if k.endswith(".location") and v.startswith("/") else v) for k, v in client.items()}


def _pod_files(root: Path, connect: dict, stored: dict, target: runtime.Cluster, release: releases.Release) -> None:
    ns = connect["metadata"]["namespace"]
    template = connect["spec"].get("template", {})
    mounts = {m["name"]: m["mountPath"] for m in template.get("connectContainer", {}).get("volumeMounts", [])}
    for volume in template.get("pod", {}).get("volumes", []):
        values = stored[("Secret", ns, volume["secret"]["secretName"])]
        for item in volume["secret"]["items"]:
            path = root / mounts[volume["name"]].lstrip("/") / item["path"]
            path.parent.mkdir(parents=True, exist_ok=True)
            value = values[item["key"]]
            path.write_bytes(value if isinstance(value, bytes) else value.encode())
    if release.worker_file is WorkerFile.literalStores and target.ca_pem:
        # kafka_connect_tls_prepare_certificates.sh: the target's CA (and client key) as PKCS12.
        store_dir = root / runtime.STORE_DIR.lstrip("/")
        store_dir.mkdir(parents=True, exist_ok=True)
        encryption = serialization.BestAvailableEncryption(WORKER_STORE_PASSWORD.encode())
        ca = x509.load_pem_x509_certificate(target.ca_pem.encode())
        (store_dir / "cluster.truststore.p12").write_bytes(pkcs12.serialize_java_truststore(
            [pkcs12.PKCS12Certificate(ca, b"ca")], encryption))
        if target.client_cert_pem:
            key = serialization.load_pem_private_key(target.client_key_pem.encode(), None)
            cert = x509.load_pem_x509_certificate(target.client_cert_pem.encode())
            (store_dir / "cluster.keystore.p12").write_bytes(pkcs12.serialize_key_and_certificates(
                b"client", key, cert, None, encryption))


def run_java(folder: Path) -> dict[str, str]:
    java = shutil.which("java")
    if java is None:
        pytest.fail("the runtime tier needs Java 17 (the JDK judges the client configurations)")
    done = subprocess.run([java, str(JAVA), str(folder)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    verdicts = {}
    for line in done.stdout.splitlines():
        status, _, rest = line.partition(" ")
        case, _, why = rest.partition(": ")
        verdicts[case] = "OK" if status == "OK" else why
    return verdicts


@pytest.fixture(scope="session")
def tier(tmp_path_factory) -> tuple[dict, dict]:
    folder = tmp_path_factory.mktemp("runtime")
    written = {}
    for name, data in sorted(renders().items()):
        written[name] = cases(name, data, folder)
    verdicts = run_java(folder)
    return written, verdicts


@pytest.mark.parametrize("name", sorted(renders()))
def test_every_connector_client_runs_on_its_release(tier, name):
    written, verdicts = tier
    assert written[name], "no client was checked"
    failures = {case: verdicts[case] for case in written[name] if verdicts[case] != "OK"}
    assert failures == {}


def test_tier_covers_every_release_and_connector_kind(tier):
    written, verdicts = tier
    for flavour, version in RELEASES:
        for stack, clients in (("prod", {"framework-producer", "mirror-source", "mirror-target"}),
                               ("prod-eos", {"framework-producer", "framework-consumer", "framework-admin",
                                             "mirror-source", "mirror-target"})):
            cases_ = written[f"{stack}-{flavour}-{version}"]
            # prod: 6 heartbeat producers, each source/checkpoint connector with three clients.
            assert sum(1 for c, cls in cases_.items() if cls == HEARTBEAT and c.endswith("framework-producer")) == 6
            assert {c.rsplit("__", 1)[1] for c in cases_} == clients
    assert len(verdicts) == sum(len(w) for w in written.values()) > 500


def _documented_heartbeat(config: dict) -> dict:
    """The documents' heartbeat: the source connection, as laid out for MirrorMaker 2's own
    clients (`target.cluster.*` of the heartbeat), copied under `producer.override.`."""
    kept = {k: v for k, v in config.items() if not k.startswith("producer.override.")}
    kept.update({"producer.override." + k[len("target.cluster."):]: v for k, v in config.items()
                 if k.startswith("target.cluster.") and k != "target.cluster.alias"})
    return kept


@pytest.mark.parametrize("flavour,version,failing", [("csm", "1.2", 3), ("strimzi", "1.2.0", 4)])
def test_the_documents_heartbeat_fails_the_tier(tmp_path, flavour, version, failing):
    """The heartbeat configuration of the documents (and of this program before the release
    table) fails in the worker: prod has 6 heartbeat connectors."""
    data = on_release(yaml.safe_load((ROOT / "stacks" / "prod.yaml").read_text()), flavour, version)
    written = cases("prod", data, tmp_path, heartbeat_override=_documented_heartbeat)
    verdicts = run_java(tmp_path)
    producers = {c: verdicts[c] for c, cls in written.items() if cls == HEARTBEAT and c.endswith("framework-producer")}
    failed = {c: why for c, why in producers.items() if why != "OK"}
    assert (len(producers), len(failed)) == (6, failing), failed
    reasons = set(failed.values())
    if flavour == "csm":
        assert reasons == {"SSL trust store password cannot be specified for PEM format."}
    else:
        assert reasons == {"Both SSL trust store location and separate trust certificates are specified."}


@pytest.mark.parametrize("version", ["0.48.0", "1.2.0"])
def test_the_worker_file_fails_on_later_releases(tmp_path, version):
    """`${file:/tmp/strimzi-connect.properties:...}` as rendered for CSM 1.2, evaluated by a
    Strimzi 0.47+ worker: its file holds references (not resolved twice) and no store keys."""
    data = on_release(yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text()), "csm", "1.2")
    later = releases.find(Flavour.strimzi, version)
    written = cases("dev", data, tmp_path, release=later)
    verdicts = run_java(tmp_path)
    targets = {c: verdicts[c] for c in written if c.endswith("mirror-target") and "heartbeat" not in c}
    assert len(targets) == 2 and all(v != "OK" for v in targets.values()), targets
    assert all("unresolved variable" in v or "trust" in v for v in targets.values()), targets


def test_the_jdk_refuses_a_pkcs1_client_key_as_the_key_check_does(tmp_path):
    """A key in PKCS#1/SEC1 form (cert-manager's default) fails in the JDK as in Kafka, and the
    program's check before deployment says so too."""
    m = material("k")
    assert stores.private_key_problem(m.client_key_pem) is None
    assert "PKCS#8" in stores.private_key_problem(m.client_key_pkcs1_pem)
    ca = fingerprint(m.ca_pem)
    for name, key in (("pkcs8", m.client_key_pem), ("sec1", m.client_key_pkcs1_pem)):
        write_case(tmp_path / f"{name}.properties",
                   {"bootstrap.servers": "k:9093", "security.protocol": "SSL", "ssl.truststore.type": "PEM",
                    "ssl.truststore.certificates": m.ca_pem, "ssl.keystore.type": "PEM",
                    "ssl.keystore.certificate.chain": m.client_cert_pem, "ssl.keystore.key": key},
                   {"expect.bootstrap.servers": "k:9093", "expect.security.protocol": "SSL",
                    "expect.ca.sha256": ca, "expect.client.sha256": fingerprint(m.client_cert_pem)})
    verdicts = run_java(tmp_path)
    assert verdicts["pkcs8"] == "OK"
    assert verdicts["sec1"].startswith("the key store needs exactly one unencrypted PKCS#8 key")


def test_deploy_time_stores_open_in_the_jdk(tmp_path):
    """The JKS stores built at deploy time (infra/core/stores.py) load with the JDK's own reader."""
    m = material("s")
    store = base64.b64decode(stores.client_keystore_jks(m.client_key_pem, m.client_cert_pem))
    trust = base64.b64decode(stores.ca_truststore_jks(m.ca_pem))
    (tmp_path / "k.jks").write_bytes(store)
    (tmp_path / "t.jks").write_bytes(trust)
    write_case(tmp_path / "jks.properties",
               {"bootstrap.servers": "s:9093", "security.protocol": "SSL",
                "ssl.truststore.location": str(tmp_path / "t.jks"), "ssl.truststore.type": "JKS",
                "ssl.truststore.password": stores.derived_password(m.ca_pem),
                "ssl.keystore.location": str(tmp_path / "k.jks"), "ssl.keystore.type": "JKS",
                "ssl.keystore.password": stores.derived_password(m.client_key_pem, m.client_cert_pem)},
               {"expect.bootstrap.servers": "s:9093", "expect.security.protocol": "SSL",
                "expect.ca.sha256": fingerprint(m.ca_pem), "expect.client.sha256": fingerprint(m.client_cert_pem)})
    write_case(tmp_path / "wrong-password.properties",
               {"bootstrap.servers": "s:9093", "security.protocol": "SSL",
                "ssl.truststore.location": str(tmp_path / "t.jks"), "ssl.truststore.type": "JKS",
                "ssl.truststore.password": "not-it"},
               {"expect.bootstrap.servers": "s:9093", "expect.security.protocol": "SSL",
                "expect.ca.sha256": fingerprint(m.ca_pem), "expect.client.sha256": "none"})
    verdicts = run_java(tmp_path)
    assert verdicts["jks"] == "OK"
    assert verdicts["wrong-password"].startswith("Failed to load SSL keystore")
    # And the same material gives the same bytes (no diff on the next preview).
    assert base64.b64decode(stores.client_keystore_jks(m.client_key_pem, m.client_cert_pem)) == store
