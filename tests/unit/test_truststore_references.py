"""A source's JKS or PKCS12 truststore from a Secret the team keeps (`security.tls.secret` with
`trust: jks` or `pkcs12`): the store file mounted into the Connect pods from the team's Secret,
its password and the mTLS key pair read through the config provider, the pods rolled by the
`version`, the audit's projection, and the refusals where a store would have to be converted
(docs/topology.md#tls-material)."""

from __future__ import annotations

import base64

import pytest

from infra.checks import validation
from infra.checks.rules import referenced
from infra.core.errors import TopologyError
from infra.deploy import deployment
from infra.plan.stack import plan
from infra.tools.rehearsal import operator
from infra.tools.rehearsal.credentials import kept_secrets
from tests.support.refusals import problems as refused
from tests.support.stacks import SECRETS, by_kind_name, doc_topology, on_release, render_topology

NS = "repl-us-west-us-east"
STORES = {"secretName": "west-stores", "version": "v1"}  # cert-manager's keys: truststore.jks, tls.crt, tls.key
ONLY_REGISTRY = {"registry.password": SECRETS["registry.password"]}
MOUNT = "/mnt/source-us-west-tls"


def stores(flavour: str = "strimzi", version: str = "1.2.0", trust: str = "jks", secret: dict = STORES,
           target: dict | None = None) -> dict:
    """us-west mTLS, its truststore and key pair from the team's Secret; us-east PLAINTEXT unless given."""
    topo = on_release(doc_topology(), flavour, version)
    topo["clusters"]["us-west"]["security"] = {"protocol": "SSL", "tls": {
        "trust": trust, "clientCertificate": True, "secret": secret}}
    topo["clusters"]["us-east"]["security"] = target or {"protocol": "PLAINTEXT"}
    topo["audit"] = {"image": "reg/audit:1", "schedule": "17 * * * *"}
    return topo


def _objects(tmp_path, topo: dict) -> dict:
    r = render_topology(tmp_path, topo, secrets=ONLY_REGISTRY, placeholder_secrets=False)
    return by_kind_name(r.objects())


def _ssl(config: dict, prefix: str) -> dict:
    return {k.removeprefix(prefix): v for k, v in config.items() if k.startswith(f"{prefix}ssl.")}


def test_a_jks_truststore_by_reference_is_mounted_and_its_password_and_key_pair_referenced(tmp_path):
    objs = _objects(tmp_path, stores())
    # No Secret of the program's holds TLS material: the registry's is its only one.
    assert {name for kind, name in objs if kind == "Secret"} == {"cloudera-registry"}
    spec = objs[("KafkaConnect", NS)]["spec"]
    assert spec["template"] == {
        "pod": {"imagePullSecrets": [{"name": "cloudera-registry"}],
                "metadata": {"annotations": {"kafka-replication.io/referenced-versions": "west-stores:truststore.jks=v1"}},
                "volumes": [{"name": "source-us-west-tls", "secret": {
                    "secretName": "west-stores", "items": [{"key": "truststore.jks", "path": "truststore.jks"}]}}]},
        "connectContainer": {"volumeMounts": [{"name": "source-us-west-tls", "mountPath": MOUNT}]}}
    cm = f"${{cfmap:{NS}/source-us-west"
    secret = f"${{secret:{NS}/west-stores"
    assert objs[("ConfigMap", "source-us-west")]["data"] == {
        "alias": "us-west", "bootstrap.servers": "us-west-kafka-bootstrap.kafka-us-west:9093",
        "security.protocol": "SSL", "ssl.truststore.location": f"{MOUNT}/truststore.jks", "ssl.keystore.type": "PEM",
        "heartbeat.ssl.truststore.location": f"{MOUNT}/truststore.jks", "heartbeat.ssl.truststore.type": "JKS",
        "heartbeat.ssl.keystore.type": "PEM"}
    source = objs[("KafkaConnector", f"{NS}-source")]["spec"]["config"]
    heartbeat = objs[("KafkaConnector", f"{NS}-heartbeat")]["spec"]["config"]
    # The password and the key pair through the provider, under either prefix; each store's
    # location and type from the source ConfigMap (the heartbeat's under its own keys).
    read = {"ssl.truststore.password": f"{secret}:truststore.password}}",
            "ssl.keystore.certificate.chain": f"{secret}:tls.crt}}", "ssl.keystore.key": f"{secret}:tls.key}}"}
    assert _ssl(source, "source.cluster.") == {**read, "ssl.truststore.location": f"{cm}:ssl.truststore.location}}",
                                                "ssl.keystore.type": f"{cm}:ssl.keystore.type}}"}
    assert _ssl(heartbeat, "producer.override.") == {
        **read, **{f"ssl.{k}": f"{cm}:heartbeat.ssl.{k}}}" for k in ("truststore.location", "truststore.type",
                                                                     "keystore.type")}}
    # What the connectors read through the provider restarts them; the mounted store rolls the pods.
    assert source["kafka-replication.referenced.versions"] == (
        "west-stores:tls.crt=v1,west-stores:tls.key=v1,west-stores:truststore.password=v1")
    role = objs[("Role", f"{NS}-connector-configuration")]
    assert role["rules"][0] == {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["west-stores"],
                                "verbs": ["get"]}
    cron = objs[("CronJob", "kafka-replication-audit")]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert next(v for v in cron["volumes"] if v["name"] == "kafka-us-west") == {
        "name": "kafka-us-west", "projected": {"defaultMode": 0o440, "sources": [{"secret": {
            "name": "west-stores", "items": [{"key": "truststore.jks", "path": "truststore"},
                                             {"key": "truststore.password", "path": "truststore.password"},
                                             {"key": "tls.crt", "path": "client.crt"},
                                             {"key": "tls.key", "path": "client.key"}]}}]}}
    assert referenced.kept_keys(validation.parse(stores()))[(None, NS, "west-stores")] == {
        "truststore.jks": ("us-west", "truststore"), "truststore.password": ("us-west", "truststorePassword"),
        "tls.crt": ("us-west", "clientCert"), "tls.key": ("us-west", "clientKey")}


def test_a_pkcs12_store_under_strimzi_s_cluster_ca_keys(tmp_path):
    """Strimzi's `<cluster>-cluster-ca-cert` Secret holds `ca.p12` and `ca.password`."""
    secret = {"secretName": "west-cluster-ca-cert", "truststore": "ca.p12", "truststorePassword": "ca.password"}
    topo = stores(trust="pkcs12", secret=secret)
    topo["clusters"]["us-west"]["security"]["tls"]["clientCertificate"] = False
    objs = _objects(tmp_path, topo)
    spec = objs[("KafkaConnect", NS)]["spec"]
    assert spec["template"]["pod"]["volumes"] == [{"name": "source-us-west-tls", "secret": {
        "secretName": "west-cluster-ca-cert", "items": [{"key": "ca.p12", "path": "truststore.p12"}]}}]
    assert "metadata" not in spec["template"]["pod"]  # no version: nothing to roll on
    data = objs[("ConfigMap", "source-us-west")]["data"]
    assert (data["ssl.truststore.location"], data["ssl.truststore.type"]) == (f"{MOUNT}/truststore.p12", "PKCS12")
    source = objs[("KafkaConnector", f"{NS}-source")]["spec"]["config"]
    assert source["source.cluster.ssl.truststore.password"] == f"${{secret:{NS}/west-cluster-ca-cert:ca.password}}"


def test_a_new_version_rolls_the_pods_and_restarts_the_connectors(tmp_path):
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    before = _objects(tmp_path / "v1", stores())
    after = _objects(tmp_path / "v2", stores(secret={**STORES, "version": "v2"}))
    annotations = [o[("KafkaConnect", NS)]["spec"]["template"]["pod"]["metadata"]["annotations"]
                   for o in (before, after)]
    assert annotations == [{"kafka-replication.io/referenced-versions": f"west-stores:truststore.jks={v}"}
                           for v in ("v1", "v2")]
    for name in ("source", "checkpoint", "heartbeat"):
        assert after[("KafkaConnector", f"{NS}-{name}")]["spec"]["config"]["kafka-replication.referenced.versions"] == (
            "west-stores:tls.crt=v2,west-stores:tls.key=v2,west-stores:truststore.password=v2")


def test_the_heartbeat_over_a_worker_that_sets_inline_pem_trust_is_refused():
    """Strimzi 0.47 and later set the target's trust as inline PEM in the worker: the heartbeat's
    producer must override it with the source's as PEM, converted from the store's value."""
    tls_target = {"protocol": "SSL", "tls": {"secret": {"secretName": "east-tls"}}}
    expected = (
        "clusters.us-west: security.tls.trust: got 'jks'; expected `trust: pem` (the CA as PEM in Secret west-stores, "
        "key `ca`): flow repl-us-west-us-east's heartbeat connector reads the source's trust as inline PEM over the "
        "strimzi 1.2.0 worker's (its target us-east uses TLS), converted at deploy time from a jks store's value, "
        "which a reference never shows; or the truststore in secret config, or `heartbeats: false` on the flow")
    assert refused(stores(target=tls_target)) == [expected]
    assert refused(stores("strimzi", "0.48.0", target=tls_target)) == [expected.replace("1.2.0", "0.48.0")]
    topo = stores(target=tls_target)
    topo["flows"][0]["heartbeats"] = False
    validation.parse(topo)


def test_over_csm_s_store_files_the_team_s_store_is_read_as_it_is_and_a_key_pair_refused():
    """CSM 1.2's worker sets the target's PKCS12 stores: the heartbeat's producer overrides the
    trust with the team's store file as it is; a key pair over the worker's key store would have
    to become a JKS store, which is refused."""
    model = validation.parse(stores("csm", "1.2", target={"protocol": "SSL"}))
    heartbeat = next(c for c in plan(model).flows[0].parts[0].connectors
                     if c.manifest["metadata"]["name"].endswith("heartbeat"))
    assert {k: v for k, v in heartbeat.config.items() if k.startswith("producer.override.ssl.truststore")} == {
        "producer.override.ssl.truststore.location": f"${{cfmap:{NS}/source-us-west:heartbeat.ssl.truststore.location}}",
        "producer.override.ssl.truststore.type": f"${{cfmap:{NS}/source-us-west:heartbeat.ssl.truststore.type}}",
        "producer.override.ssl.truststore.password": f"${{secret:{NS}/west-stores:truststore.password}}"}
    mtls_target = {"protocol": "SSL", "tls": {"clientCertificate": True}}
    assert refused(stores("csm", "1.2", target=mtls_target)) == [
        "clusters.us-west: security.tls.secret: got 'west-stores'; expected TLS material in secret config "
        "(`<alias>.caCert`...): flow repl-us-west-us-east's heartbeat connector reads it as a JKS store over the csm "
        "1.2 worker's store files (its target us-east uses TLS), made at deploy time from the value, which a "
        "reference never shows; or a release from Strimzi 0.47, whose worker sets inline PEM"]


def test_a_target_s_store_by_reference_is_refused_as_any_target_store():
    topo = stores()
    topo["flows"][0].update(source="us-east", target="us-west")
    assert "clusters.us-west: security.tls.trust: got 'jks'; expected pem: the cluster is the target of flow " \
           "repl-us-east-us-west, and Strimzi's KafkaConnect trusts PEM certificates only " \
           "(spec.tls.trustedCertificates)" in refused(topo)


def test_a_store_both_referenced_and_in_secret_config_is_refused():
    model = validation.parse(stores())
    given = {**ONLY_REGISTRY, "us-west.truststore": "eA==", "us-west.truststorePassword": "pw"}
    with pytest.raises(TopologyError) as exc:
        deployment.check(model, plan(model), (), given.__contains__, secret_text=given.get)
    assert [str(p) for p in exc.value.problems] == [
        f"clusters.us-west: secret config kafka-replication:us-west.{item}: got the secret value (not shown); "
        f"expected no value: {what} is read from Secret west-stores (key {key}, security.tls.secret), never from "
        f"config; remove it: pulumi config rm kafka-replication:us-west.{item}"
        for item, what, key in (("truststore", "the truststore", "truststore.jks"),
                                ("truststorePassword", "the truststore password", "truststore.password"))]


def test_the_stand_in_mounts_the_team_s_store_into_the_pod(tmp_path):
    """The rehearsal keeps the store file as the team's tooling would (`data`, binary), and the
    operator stand-in projects it at the path the connectors read."""
    from infra.tools.rehearsal.material import for_cluster

    model = validation.parse(stores())

    class Kafka:
        password = None
        material = for_cluster("us-west", ("us-west-kafka-bootstrap.kafka-us-west",))

    (kept,) = [s for s in kept_secrets(model, {"us-west": Kafka(), "us-east": Kafka()})
               if s["metadata"]["namespace"] == NS]
    assert (sorted(kept["stringData"]), sorted(kept["data"])) == (
        ["tls.crt", "tls.key", "truststore.password"], ["truststore.jks"])
    store = base64.b64decode(kept["data"]["truststore.jks"])
    assert store[:4] == b"\xfe\xed\xfe\xed"  # a JKS file's magic number
    r = render_topology(tmp_path, stores(), secrets=ONLY_REGISTRY, placeholder_secrets=False)
    configmaps = {o["metadata"]["name"]: o["data"] for o in r.objects()
                  if o["kind"] == "ConfigMap" and o["metadata"]["namespace"] == NS}
    connect = next(o for o in r.objects() if o["kind"] == "KafkaConnect")
    secrets = {"west-stores": {"truststore.jks": store}}
    setup = operator.worker(model.operator.release, connect, secrets, "127.0.0.9", configmaps, "agent.jar")
    assert setup.files[f"{MOUNT}/truststore.jks"] == store
