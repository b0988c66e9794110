"""Security variants, both replication policies and both operator flavours, on exact values."""

from __future__ import annotations

import pytest

from contract.clientprops import jaas_config
from infra.core.errors import TopologyError
from infra.topology.schema import Mechanism
from tests.support.material import material
from tests.support.stacks import SECRETS, by_kind_name, doc_topology, render_topology
from tests.support.topologies import pair as topo

NS = "repl-a-b"


def render(tmp_path, t, secrets=None):
    return by_kind_name(render_topology(tmp_path, t, secrets=secrets or {}, placeholder_secrets=True).objects())


def cfg(objects, kind):
    return objects[("KafkaConnector", f"{NS}-{kind}")]["spec"]["config"]


def test_plaintext_both_sides(tmp_path):
    o = render(tmp_path, topo({}, {}))
    assert o[("ConfigMap", "source-a")]["data"] == {"alias": "a", "bootstrap.servers": "a:9092",
                                                   "security.protocol": "PLAINTEXT"}
    assert ("Secret", "source-a") not in o
    source = cfg(o, "source")
    assert {k: v for k, v in source.items() if k.startswith(("source.cluster.", "target.cluster."))} == {
        "source.cluster.alias": f"${{cfmap:{NS}/source-a:alias}}",
        "source.cluster.bootstrap.servers": f"${{cfmap:{NS}/source-a:bootstrap.servers}}",
        "source.cluster.security.protocol": f"${{cfmap:{NS}/source-a:security.protocol}}",
        "target.cluster.alias": f"${{cfmap:{NS}/target-b:alias}}",
        "target.cluster.bootstrap.servers": "${file:/tmp/strimzi-connect.properties:bootstrap.servers}",
        "target.cluster.security.protocol": "${file:/tmp/strimzi-connect.properties:security.protocol}",
    }
    spec = o[("KafkaConnect", NS)]["spec"]
    assert "tls" not in spec and "authentication" not in spec and "template" not in spec
    assert o[("Role", f"{NS}-connector-configuration")]["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["replication", "source-a", "target-b"],
         "verbs": ["get"]}]


@pytest.mark.parametrize("mechanism,module,auth", [
    ("PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule", "plain"),
    ("SCRAM-SHA-256", "org.apache.kafka.common.security.scram.ScramLoginModule", "scram-sha-256"),
    ("SCRAM-SHA-512", "org.apache.kafka.common.security.scram.ScramLoginModule", "scram-sha-512"),
])
def test_sasl_plaintext_login_modules(tmp_path, mechanism, module, auth):
    sasl = {"protocol": "SASL_PLAINTEXT", "sasl": {"mechanism": mechanism, "username": "u1"}}
    o = render(tmp_path, topo(sasl, sasl), {"a.password": "pa", "b.password": "pb"})
    assert o[("Secret", "source-a")]["stringData"] == {
        "sasl.jaas.config": f'{module} required username="u1" password="pa";'}
    assert o[("ConfigMap", "source-a")]["data"]["sasl.mechanism"] == mechanism
    assert o[("KafkaConnect", NS)]["spec"]["authentication"] == {
        "type": auth, "username": "u1", "passwordSecret": {"secretName": "target-b-password", "password": "pass"}}
    assert o[("Secret", "target-b-password")]["stringData"] == {"pass": "pb"}


def test_jaas_escapes_quotes_and_backslashes():
    assert jaas_config(Mechanism.PLAIN.value, 'u"1', 'p\\"w') == (
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="u\\"1" password="p\\\\\\"w";')


def test_pkcs12_truststore_and_pem_trust(tmp_path):
    source = {"protocol": "SSL", "tls": {"trust": "pkcs12"}}
    target = {"protocol": "SSL"}  # TLS without a tls block: PEM CA certificate
    o = render(tmp_path, topo(source, target))
    assert o[("ConfigMap", "source-a")]["data"] == {
        "alias": "a", "bootstrap.servers": "a:9092", "security.protocol": "SSL",
        "ssl.truststore.location": "/mnt/source-a-tls/truststore.p12", "ssl.truststore.type": "PKCS12",
        # The heartbeat producer's own: a PKCS12 store is already what a CSM worker has.
        "heartbeat.ssl.truststore.location": "/mnt/source-a-tls/truststore.p12",
        "heartbeat.ssl.truststore.type": "PKCS12"}
    # The store file in the mounted Secret of its own, its password behind the config provider.
    assert (sorted(o[("Secret", "source-a-tls")]["data"]), "stringData" in o[("Secret", "source-a-tls")]) == (
        ["truststore.p12"], False)
    assert (sorted(o[("Secret", "source-a")]["stringData"]), "data" in o[("Secret", "source-a")]) == (
        ["ssl.truststore.password"], False)
    assert o[("KafkaConnect", NS)]["spec"]["tls"] == {
        "trustedCertificates": [{"secretName": "target-b-ca", "pattern": "ca-*.crt"}]}


def test_source_pem_trust_has_no_password(tmp_path):
    ca = material("a").ca_pem
    o = render(tmp_path, topo({"protocol": "SSL", "tls": {"trust": "pem"}}, {}), {"a.caCert": ca})
    # Nothing but a file: no source Secret for the config provider, the files Secret mounted.
    assert o[("Secret", "source-a-tls")]["stringData"] == {"ca.crt": ca} and ("Secret", "source-a") not in o
    assert o[("ConfigMap", "source-a")]["data"]["ssl.truststore.type"] == "PEM"
    assert "source.cluster.ssl.truststore.password" not in cfg(o, "source")
    assert o[("KafkaConnect", NS)]["spec"]["template"]["pod"]["volumes"] == [
        {"name": "source-a-tls", "secret": {"secretName": "source-a-tls", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]


def test_mtls_source_and_target(tmp_path):
    mtls = {"protocol": "SSL", "tls": {"trust": "pem", "clientCertificate": True}}
    a, b = material("a"), material("b")
    secrets = {"a.clientKey": a.client_key_pem, "a.clientCert": a.client_cert_pem, "a.caCert": a.ca_pem,
               "b.clientKey": b.client_key_pem, "b.clientCert": b.client_cert_pem}
    o = render(tmp_path, topo(mtls, mtls), secrets)
    assert o[("Secret", "source-a-tls")]["stringData"]["keystore.pem"] == a.client_key_pem + a.client_cert_pem
    data = o[("ConfigMap", "source-a")]["data"]
    assert data["ssl.keystore.location"] == "/mnt/source-a-tls/keystore.pem"
    assert data["ssl.keystore.type"] == "PEM"
    items = o[("KafkaConnect", NS)]["spec"]["template"]["pod"]["volumes"][0]["secret"]["items"]
    # With the heartbeat producer's deploy-time JKS stores (CSM 1.2 worker: password stores).
    assert items == [{"key": k, "path": k} for k in ("ca-truststore.jks", "ca.crt", "keystore.jks", "keystore.pem")]
    assert o[("KafkaConnect", NS)]["spec"]["authentication"] == {
        "type": "tls", "certificateAndKey": {"secretName": "target-b-client", "certificate": "tls.crt",
                                             "key": "tls.key"}}
    assert o[("Secret", "target-b-client")]["stringData"] == {"tls.crt": b.client_cert_pem, "tls.key": b.client_key_pem}
    target_keys = sorted(k for k in cfg(o, "source") if k.startswith("target.cluster."))
    assert target_keys == ["target.cluster.alias", "target.cluster.bootstrap.servers",
                           "target.cluster.security.protocol", "target.cluster.ssl.keystore.location",
                           "target.cluster.ssl.keystore.password", "target.cluster.ssl.keystore.type",
                           "target.cluster.ssl.truststore.location", "target.cluster.ssl.truststore.password",
                           "target.cluster.ssl.truststore.type"]


def test_identity_policy_on_every_connector(tmp_path):
    o = render(tmp_path, topo({}, {}, replicationPolicy="identity"))
    assert o[("ConfigMap", "replication")]["data"]["replication.policy.class"] == \
        "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
    for kind in ("source", "checkpoint", "heartbeat"):
        assert cfg(o, kind)["replication.policy.class"] == f"${{cfmap:{NS}/replication:replication.policy.class}}"


def test_identity_policy_outputs(tmp_path):
    r = render_topology(tmp_path, topo({}, {}, replicationPolicy="identity"), secrets={})
    out = r.outputs["flows"][NS]
    assert out["topicPrefix"] == ""
    assert out["replicationPolicy"] == "identity"
    # IdentityReplicationPolicy still prefixes heartbeats topics.
    assert out["internalTopics"]["target"]["heartbeats"] == "a.heartbeats"


def test_strimzi_flavour_uses_v1_spec_fields_and_cluster_objects(tmp_path):
    sasl_ssl = {"protocol": "SASL_SSL", "sasl": {"mechanism": "SCRAM-SHA-512", "username": "u"}}
    o = render(tmp_path, topo(sasl_ssl, sasl_ssl, flavour="strimzi"),
               {"b.password": "pb", "b.caCert": material("b").ca_pem, "a.caCert": material("a").ca_pem,
                "a.password": "pa"})
    connect = o[("KafkaConnect", NS)]
    assert connect["apiVersion"] == "kafka.strimzi.io/v1"
    spec = connect["spec"]
    assert (spec["groupId"], spec["offsetStorageTopic"], spec["configStorageTopic"], spec["statusStorageTopic"]) == (
        f"{NS}-consumer-group", f"{NS}-offsets-topic", f"{NS}-config-topic", f"{NS}-status-topic")
    assert not {"group.id", "offset.storage.topic", "config.storage.topic", "status.storage.topic"} & set(spec["config"])
    assert all(c["apiVersion"] == "kafka.strimzi.io/v1" for (kind, _), c in o.items() if kind == "KafkaConnector")
    target = {k: v for k, v in cfg(o, "source").items() if k.startswith("target.cluster.")}
    assert target == {
        "target.cluster.alias": f"${{cfmap:{NS}/target-b:alias}}",
        "target.cluster.bootstrap.servers": f"${{cfmap:{NS}/target-b:bootstrap.servers}}",
        "target.cluster.security.protocol": f"${{cfmap:{NS}/target-b:security.protocol}}",
        "target.cluster.sasl.mechanism": f"${{cfmap:{NS}/target-b:sasl.mechanism}}",
        "target.cluster.sasl.jaas.config": f"${{secret:{NS}/target-b-password:sasl.jaas.config}}",
        "target.cluster.ssl.truststore.type": f"${{cfmap:{NS}/target-b:ssl.truststore.type}}",
        "target.cluster.ssl.truststore.certificates": f"${{secret:{NS}/target-b-ca:ca.crt}}",
    }
    assert o[("ConfigMap", "target-b")]["data"] == {
        "alias": "b", "bootstrap.servers": "b:9092", "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512", "ssl.truststore.type": "PEM"}
    assert o[("Secret", "target-b-password")]["stringData"] == {
        "pass": "pb",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="pb";'}
    assert o[("Role", f"{NS}-connector-configuration")]["rules"][0] == {
        "apiGroups": [""], "resources": ["secrets"],
        # The files Secret too: the heartbeat producer's inline PEM reads its ca.crt through the
        # config provider (connection.py heartbeat_client, caCertFile).
        "resourceNames": ["source-a", "source-a-tls", "target-b-ca", "target-b-password"], "verbs": ["get"]}


def test_target_connection_can_be_chosen_explicitly(tmp_path):
    t = topo({}, {})
    t["operator"]["targetConnection"] = "clusterObjects"
    o = render(tmp_path, t)
    assert cfg(o, "source")["target.cluster.bootstrap.servers"] == f"${{cfmap:{NS}/target-b:bootstrap.servers}}"


@pytest.mark.parametrize("flavour,version", [("strimzi", "0.48.0"), ("strimzi", "1.2.0")])
def test_worker_file_is_refused_where_it_holds_references(tmp_path, flavour, version):
    t = topo({}, {}, flavour=flavour, version=version)
    t["operator"]["targetConnection"] = "workerFile"
    with pytest.raises(TopologyError) as exc:
        render(tmp_path, t)
    # Rendered from a file, so the problem says its line.
    assert [str(p) for p in exc.value.problems] == [
        f"line 4: operator: targetConnection: got 'workerFile'; expected clusterObjects (or unset): strimzi {version} "
        f"(Strimzi {version}) writes the worker file with ${{strimzi...:...}} references and no store keys, and "
        "Kafka resolves a config variable only once, so ${file:...} would hand connectors unusable values"]


def test_flow_settings_reach_connectors_and_connect(tmp_path):
    t = topo({}, {}, name="orders", topicsExclude=["orders\\.internal.*"], groupsExclude=["tmp-.*"],
             heartbeats=False, syncGroupOffsets={"enabled": False},
             tasksMax={"source": 6, "checkpoint": 2},
             config={"source": {"offset.lag.max": 50}}, syncTopicConfigs={"enabled": False},
             connect={"replicas": 2, "image": "registry.local/connect:1",
                      "resources": {"requests": {"cpu": "500m", "memory": "2Gi"}, "limits": {"memory": "2Gi"}}})
    o = by_kind_name(render_topology(tmp_path, t, secrets={}).objects())
    assert ("KafkaConnector", "orders-heartbeat") not in o
    source = o[("KafkaConnector", "orders-source")]["spec"]
    assert source["tasksMax"] == 6
    assert source["config"]["topics.exclude"] == "${cfmap:orders/replication:topics.exclude}"
    assert source["config"]["offset.lag.max"] == 50
    assert source["config"]["sync.topic.configs.enabled"] is False
    checkpoint = o[("KafkaConnector", "orders-checkpoint")]["spec"]
    assert checkpoint["tasksMax"] == 2
    assert checkpoint["config"]["sync.group.offsets.enabled"] is False
    # An interval beside a sync switched off is refused (tests/unit/test_topic_sync_settings.py): none written.
    assert "sync.group.offsets.interval.seconds" not in checkpoint["config"]
    assert checkpoint["config"]["groups.exclude"] == "${cfmap:orders/replication:groups.exclude}"
    assert o[("ConfigMap", "replication")]["data"] == {
        # Kafka's default excludes stay in force beside the flow's (setting one replaces them).
        "topics": "orders.*", "topics.exclude": "orders\\.internal.*,.*[\\-\\.]internal,.*\\.replica,__.*",
        "groups": ".*", "groups.exclude": "tmp-.*,console-consumer-.*,connect-.*,__.*",
        "replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"}
    spec = o[("KafkaConnect", "orders")]["spec"]
    assert (spec["replicas"], spec["image"]) == (2, "registry.local/connect:1")
    assert spec["resources"] == {"requests": {"cpu": "500m", "memory": "2Gi"}, "limits": {"memory": "2Gi"}}


def test_no_checkpoints_means_no_groups(tmp_path):
    o = render(tmp_path, topo({}, {}, checkpoints=False))
    assert ("KafkaConnector", f"{NS}-checkpoint") not in o
    assert "groups" not in o[("ConfigMap", "replication")]["data"]


def test_secrets_are_secret_outputs(tmp_path):
    r = render_topology(tmp_path, doc_topology(), placeholder_secrets=False)
    secrets = [x for x in r.resources if x.type == "kubernetes:core/v1:Secret"]
    # Every value field of every Secret (stringData; data, for the binary store files) is secret.
    assert secrets and all({k for k in ("data", "stringData") if k in x.inputs} <= {p.split(".")[0] for p in x.secret_paths}
                           and x.secret_paths for x in secrets)
    assert sorted(x.name for x in secrets if "data" in x.inputs) == ["repl-us-west-us-east/source-us-west-tls"]
    assert SECRETS["us-west.password"] in str([x.inputs for x in secrets])  # the clear values reached Secrets


def test_a_client_key_kafka_cannot_read_is_refused_before_anything_deploys(tmp_path):
    mtls = {"protocol": "SSL", "tls": {"trust": "pem", "clientCertificate": True}}
    a = material("a")
    with pytest.raises(TopologyError) as exc:
        render(tmp_path, topo(mtls, {}), {"a.clientKey": a.client_key_pkcs1_pem, "a.clientCert": a.client_cert_pem})
    assert [str(p) for p in exc.value.problems] == [
        "clusters.a: secret config kafka-replication:a.clientKey: got the secret value (not shown); expected the "
        "PEM private key, unencrypted PKCS#8 (tls.clientCertificate); this is a EC PRIVATE KEY (PKCS#1/SEC1) key; "
        "Kafka reads PKCS#8 only: convert it with openssl pkcs8 -topk8 -nocrypt -in key.pem -out key-pkcs8.pem"]
    assert a.client_key_pkcs1_pem not in str(exc.value)
