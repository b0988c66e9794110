"""The documents' base flow ("Deploying a replication flow", steps 2-11), object by object.

Expected values are the documents' examples with their replaceables filled by our naming
convention; where the documents' YAML is not valid Kubernetes the valid form is expected
(secret volume items with key/path, a namespace on the ServiceAccount subject).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re

from infra.core.names import SOURCE_ACCESS_UID
from infra.plan.connectors import TOPIC_CONFIG_EXCLUDES
from tests.support.stacks import SECRETS

NS = "repl-us-west-us-east"
UID = f"uid-of-{NS}/source-us-west"  # the offline render's stand-in for the Secret's uid
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
LABELS = {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "kafka-replication",
          "kafka-replication.io/flow": NS}


def cfmap(name, key):
    return f"${{cfmap:{NS}/{name}:{key}}}"


def digest(doc_objects, config):
    """What the connector's digest must be: SHA-256 of the ConfigMap values its `${cfmap:}`
    references read (`<ns>/<name>:<key>=<value>`, sorted, one per line), first 16 hex digits."""
    read = sorted({f"{ns}/{name}:{key}={doc_objects[('ConfigMap', name)]['data'][key]}"
                   for value in config.values() for ns, name, key in
                   re.findall(r"\$\{cfmap:([^/}]+)/([^:}]+):([^}]+)\}", str(value))})
    return hashlib.sha256("\n".join(read).encode()).hexdigest()[:16]


def secret(name, key):
    return f"${{secret:{NS}/{name}:{key}}}"


def worker(key):
    return f"${{file:/tmp/strimzi-connect.properties:{key}}}"


SOURCE_CONNECTION = {
    "bootstrap.servers": cfmap("source-us-west", "bootstrap.servers"),
    "security.protocol": cfmap("source-us-west", "security.protocol"),
    "sasl.mechanism": cfmap("source-us-west", "sasl.mechanism"),
    "sasl.jaas.config": secret("source-us-west", "sasl.jaas.config"),
    "ssl.truststore.location": cfmap("source-us-west", "ssl.truststore.location"),
    "ssl.truststore.password": secret("source-us-west", "ssl.truststore.password"),
}
# The documents' keys, plus the store type: the worker file says PKCS12, Kafka's default is JKS.
TARGET_FROM_WORKER = {k: worker(k) for k in (
    "bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.jaas.config",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type")}
# The heartbeat producer starts from the CSM 1.2 worker's producer.* keys (a PKCS12 truststore
# with a password): the source's JKS truststore overrides them with its type said explicitly.
HEARTBEAT_PRODUCER = {**SOURCE_CONNECTION,
                      "ssl.truststore.location": cfmap("source-us-west", "heartbeat.ssl.truststore.location"),
                      "ssl.truststore.type": cfmap("source-us-west", "heartbeat.ssl.truststore.type")}


def prefixed(prefix, props):
    return {prefix + k: v for k, v in props.items()}


def test_step2_namespace(doc_objects):
    ns = doc_objects[("Namespace", NS)]
    # With the aliases it reads, which a team's secret tooling selects namespaces by
    # (docs/topology.md#secrets-by-reference).
    assert ns == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": {
        **LABELS, "kafka-replication.io/source-cluster": "us-west", "kafka-replication.io/target-cluster": "us-east"}}}


def test_step3_registry_secret(doc_objects):
    pull = doc_objects[("Secret", "cloudera-registry")]
    assert pull["type"] == "kubernetes.io/dockerconfigjson"
    assert pull["metadata"]["namespace"] == NS
    config = json.loads(pull["stringData"][".dockerconfigjson"])
    auth = base64.b64encode(b"replication-bot:" + SECRETS["registry.password"].encode()).decode()
    assert config == {"auths": {"container.repository.cloudera.com": {
        "username": "replication-bot", "password": SECRETS["registry.password"], "auth": auth}}}


def test_step4_target_configmap_and_secrets(doc_objects):
    assert doc_objects[("ConfigMap", "target-us-east")]["data"] == {"alias": "us-east"}
    assert doc_objects[("Secret", "target-us-east-password")]["stringData"] == {"pass": SECRETS["us-east.password"]}
    # The document's `ca.crt`, and the same certificate under `ca-0.crt`: the KafkaConnect trusts
    # `ca-*.crt`, one key per certificate, so that a bundle is trusted whole on every release.
    assert doc_objects[("Secret", "target-us-east-ca")]["stringData"] == {
        "ca-0.crt": SECRETS["us-east.caCert"], "ca.crt": SECRETS["us-east.caCert"]}


def test_step5_source_secret_and_configmap(doc_objects):
    # The document's one source Secret, its truststore file apart in a Secret of its own: the
    # file is mounted, and a replaced files Secret rolls the pods (names.SOURCE_FILES_UID) where a
    # running pod would see the new file only at the kubelet's next sync; a password's rotation
    # rolls nothing.
    files = doc_objects[("Secret", "source-us-west-tls")]
    assert (files["type"], files["data"], "stringData" in files) == (
        "Opaque", {"truststore.jks": SECRETS["us-west.truststore"]}, False)
    sec = doc_objects[("Secret", "source-us-west")]
    assert sec["type"] == "Opaque" and "data" not in sec
    assert sec["stringData"] == {
        "ssl.truststore.password": SECRETS["us-west.truststorePassword"],
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                            f'username="replicator" password="{SECRETS["us-west.password"]}";',
    }
    assert doc_objects[("ConfigMap", "source-us-west")]["data"] == {
        "alias": "us-west",
        "bootstrap.servers": "us-west-kafka-bootstrap.kafka-us-west:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "ssl.truststore.location": "/mnt/source-us-west-tls/truststore.jks",
        "heartbeat.ssl.truststore.location": "/mnt/source-us-west-tls/truststore.jks",
        "heartbeat.ssl.truststore.type": "JKS",
    }


def test_step6_replication_configmap(doc_objects):
    assert doc_objects[("ConfigMap", "replication")]["data"] == {
        "topics": "test.*",
        "groups": "test.*",
        "replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
    }


def test_step7_kafka_connect(doc_objects):
    connect = doc_objects[("KafkaConnect", NS)]
    assert connect["apiVersion"] == "kafka.strimzi.io/v1beta2"
    # `pulumi up` waits until Strimzi reports the Connect cluster Ready (docs/topology.md#operator).
    assert connect["metadata"] == {"name": NS, "namespace": NS, "labels": LABELS,
                                   "annotations": {"strimzi.io/use-connector-resources": "true",
                                                   # A hand-made change is taken back (docs/operations.md#pause-resume-and-drift).
                                                   "pulumi.com/patchForce": "true",
                                                   "pulumi.com/waitFor": "condition=Ready",
                                                   "pulumi.com/timeoutSeconds": "900"}}
    assert connect["spec"] == {
        "version": "3.8.0.1.2",
        "replicas": 3,
        "bootstrapServers": "us-east-kafka-bootstrap.kafka-us-east:9093",
        "tls": {"trustedCertificates": [{"secretName": "target-us-east-ca", "pattern": "ca-*.crt"}]},
        "authentication": {"type": "plain", "username": "replicator",
                           "passwordSecret": {"secretName": "target-us-east-password", "password": "pass"}},
        "template": {
            "pod": {
                # The target Secrets' uids and the source files Secret's (offline, stand-ins named
                # after them): replaced, they roll the pods at once (names.TARGET_ACCESS_UID,
                # names.SOURCE_FILES_UID).
                "metadata": {"annotations": {
                    "kafka-replication.io/target-access-uid": (
                        "uid-of-repl-us-west-us-east/target-us-east-ca,uid-of-repl-us-west-us-east/target-us-east-password"),
                    "kafka-replication.io/source-files-uid": "uid-of-repl-us-west-us-east/source-us-west-tls"}},
                "imagePullSecrets": [{"name": "cloudera-registry"}],
                "volumes": [{"name": "source-us-west-tls", "secret": {
                    "secretName": "source-us-west-tls",
                    "items": [{"key": "truststore.jks", "path": "truststore.jks"}]}}],
            },
            "connectContainer": {"volumeMounts": [{"name": "source-us-west-tls",
                                                   "mountPath": "/mnt/source-us-west-tls"}]},
        },
        # Metrics on by default: the JMX exporter with our rules (tests/unit/test_metrics.py).
        "metricsConfig": {"type": "jmxPrometheusExporter", "valueFrom": {"configMapKeyRef": {
            "name": "connect-metrics", "key": "metrics-config.yml"}}},
        "config": {
            "group.id": f"{NS}-consumer-group",
            "offset.storage.topic": f"{NS}-offsets-topic",
            "config.storage.topic": f"{NS}-config-topic",
            "status.storage.topic": f"{NS}-status-topic",
            "config.storage.replication.factor": -1,
            "offset.storage.replication.factor": -1,
            "status.storage.replication.factor": -1,
            "config.providers": "cfmap,secret,file",
            "config.providers.cfmap.class": "io.strimzi.kafka.KubernetesConfigMapConfigProvider",
            "config.providers.secret.class": "io.strimzi.kafka.KubernetesSecretConfigProvider",
            "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
            # Every class the connectors name is Kafka's and the image the operator's: the worker
            # finds its plugins by their manifests (stack.finds_plugins_by_manifest).
            "plugin.discovery": "service_load",
        },
    }


def test_step8_role_and_binding(doc_objects):
    role = doc_objects[("Role", f"{NS}-connector-configuration")]
    assert role["metadata"]["namespace"] == NS
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["source-us-west"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["configmaps"],
         "resourceNames": ["replication", "source-us-west", "target-us-east"], "verbs": ["get"]},
    ]
    binding = doc_objects[("RoleBinding", f"{NS}-connector-configuration")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": f"{NS}-connect", "namespace": NS}]
    assert binding["roleRef"] == {"kind": "Role", "name": f"{NS}-connector-configuration",
                                  "apiGroup": "rbac.authorization.k8s.io"}


def test_step9_mirror_source_connector(doc_objects):
    c = doc_objects[("KafkaConnector", f"{NS}-source")]
    assert c["metadata"]["labels"]["strimzi.io/cluster"] == NS
    assert c["spec"]["class"] == "org.apache.kafka.connect.mirror.MirrorSourceConnector"
    assert c["spec"]["tasksMax"] == 3
    # Failed connectors and tasks restart by themselves; `pulumi up` waits for Ready.
    assert c["spec"]["autoRestart"] == {"enabled": True}
    assert c["metadata"]["annotations"] == {
        "pulumi.com/patchForce": "true",
        "pulumi.com/waitFor": '["condition=Ready", "jsonpath={.status.connectorStatus.connector.state}=RUNNING"]',
        "pulumi.com/timeoutSeconds": "900"}
    assert c["spec"]["state"] == "running"  # written out: a state changed by hand is drift
    assert c["spec"]["config"] == {
        "key.converter": BYTES,
        "value.converter": BYTES,
        "header.converter": BYTES,  # headers arrive unchanged (seen on the real worker)
        "refresh.topics.interval.seconds": 10,
        "replication.factor": -1,  # the target brokers' default, not MirrorMaker 2's 2
        # Tuned for a replication stream (docs/performance.md#replication): up to 5 requests in
        # flight with order kept by idempotence, 256 KiB batches, 2000 records a poll.
        "producer.override.enable.idempotence": True,
        "producer.override.max.in.flight.requests.per.connection": 5,
        "producer.override.linger.ms": 10,
        "producer.override.batch.size": 262144,
        "source.consumer.max.poll.records": 2000,
        "topics": cfmap("replication", "topics"),
        "replication.policy.class": cfmap("replication", "replication.policy.class"),
        "source.cluster.alias": cfmap("source-us-west", "alias"),
        **prefixed("source.cluster.", SOURCE_CONNECTION),
        "target.cluster.alias": cfmap("target-us-east", "alias"),
        **prefixed("target.cluster.", TARGET_FROM_WORKER),
        # Kafka 3.8: the MirrorSource MBeans carry `source` as on Kafka 4 (infra/plan/metrics.py).
        "add.source.alias.to.metrics": True,
        # Topic configuration sync with MirrorMaker 2's exclusions, ACL sync off (docs/topology.md).
        "sync.topic.configs.enabled": True,
        "config.properties.exclude": ",".join(TOPIC_CONFIG_EXCLUDES),
        "sync.topic.acls.enabled": False,
        # A changed filter or policy changes the spec, so Strimzi sends it (infra/plan/connectors.py).
        "kafka-replication.configmaps.digest": digest(doc_objects, c["spec"]["config"]),
        # A replaced source Secret (rotated material) changes it too: its uid, at deploy time.
        SOURCE_ACCESS_UID: UID,
    }


def test_step10_mirror_checkpoint_connector(doc_objects):
    c = doc_objects[("KafkaConnector", f"{NS}-checkpoint")]
    assert c["spec"]["class"] == "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
    assert c["spec"]["tasksMax"] == 3
    assert c["spec"]["config"] == {
        "key.converter": BYTES,
        "value.converter": BYTES,
        "header.converter": BYTES,  # headers arrive unchanged (seen on the real worker)
        "refresh.groups.interval.seconds": 10,
        "sync.group.offsets.enabled": True,
        "topics": cfmap("replication", "topics"),
        "groups": cfmap("replication", "groups"),
        "replication.policy.class": cfmap("replication", "replication.policy.class"),
        "source.cluster.alias": cfmap("source-us-west", "alias"),
        **prefixed("source.cluster.", SOURCE_CONNECTION),
        "target.cluster.alias": cfmap("target-us-east", "alias"),
        **prefixed("target.cluster.", TARGET_FROM_WORKER),
        "kafka-replication.configmaps.digest": digest(doc_objects, c["spec"]["config"]),
        SOURCE_ACCESS_UID: UID,
    }


def test_step11_mirror_heartbeat_connector_produces_into_the_source(doc_objects):
    c = doc_objects[("KafkaConnector", f"{NS}-heartbeat")]
    assert c["spec"]["class"] == "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"
    assert c["spec"]["tasksMax"] == 1
    assert c["spec"]["config"] == {
        "key.converter": BYTES,
        "value.converter": BYTES,
        "header.converter": BYTES,  # headers arrive unchanged (seen on the real worker)
        "replication.policy.class": cfmap("replication", "replication.policy.class"),
        "source.cluster.alias": cfmap("source-us-west", "alias"),
        "target.cluster.alias": cfmap("target-us-east", "alias"),
        **prefixed("target.cluster.", SOURCE_CONNECTION),
        **prefixed("producer.override.", HEARTBEAT_PRODUCER),
        "kafka-replication.configmaps.digest": digest(doc_objects, c["spec"]["config"]),
        SOURCE_ACCESS_UID: UID,
    }


def test_exactly_the_documented_objects(doc_render):
    kinds = sorted((o["kind"], o["metadata"]["name"]) for o in doc_render.objects())
    assert kinds == sorted([
        ("Namespace", NS), ("Secret", "cloudera-registry"),
        ("ConfigMap", "target-us-east"), ("Secret", "target-us-east-password"), ("Secret", "target-us-east-ca"),
        ("Secret", "source-us-west"), ("Secret", "source-us-west-tls"), ("ConfigMap", "source-us-west"),
        ("ConfigMap", "replication"),
        ("ConfigMap", "connect-metrics"), ("KafkaConnect", NS), ("Role", f"{NS}-connector-configuration"),
        ("RoleBinding", f"{NS}-connector-configuration"),
        ("KafkaConnector", f"{NS}-source"), ("KafkaConnector", f"{NS}-checkpoint"),
        ("KafkaConnector", f"{NS}-heartbeat"),
    ])


def test_components_parent_every_object(doc_render):
    types = sorted(r.type for r in doc_render.resources if r.type.startswith("kafka-replication:"))
    assert types == ["kafka-replication:flow:ClusterAccess", "kafka-replication:flow:ConnectCluster",
                     "kafka-replication:flow:MirrorConnectors", "kafka-replication:flow:ReplicationFlow",
                     "kafka-replication:index:ReplicationTopology"]


def test_stack_outputs_contract(doc_render):
    assert doc_render.outputs["operatorFlavour"] == "csm"
    assert doc_render.outputs["flows"] == {NS: {
        "namespace": NS,
        "sourceAlias": "us-west",
        "targetAlias": "us-east",
        "connectCluster": NS,
        "connectServiceAccount": f"{NS}-connect",
        "connectRestService": f"{NS}-connect-api",
        "connectRestUrl": f"http://{NS}-connect-api.{NS}.svc:8083",
        "connectors": {"source": [f"{NS}-source"], "checkpoint": [f"{NS}-checkpoint"],
                       "heartbeat": [f"{NS}-heartbeat"]},
        "connectClusters": [{
            "name": NS, "namespace": NS, "serviceAccount": f"{NS}-connect", "restService": f"{NS}-connect-api",
            "restUrl": f"http://{NS}-connect-api.{NS}.svc:8083",
            "connectors": {"source": [f"{NS}-source"], "checkpoint": [f"{NS}-checkpoint"],
                           "heartbeat": [f"{NS}-heartbeat"]},
            "sources": [{"connector": f"{NS}-source", "topics": ["test.*"], "topicsExclude": []}],
            "connectGroupId": f"{NS}-consumer-group", "connectConfigStorage": f"{NS}-config-topic",
            "connectOffsetStorage": f"{NS}-offsets-topic", "connectStatusStorage": f"{NS}-status-topic",
            "connectVersion": "3.8.0.1.2", "connectImage": None,  # the release's default, its own image
        }],
        "replicationPolicy": "default",
        "replicationPolicyClass": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
        "topicPrefix": "us-west.",
        "topics": ["test.*"],
        "topicsExclude": [],
        "bidirectional": None,
        "exactlyOnce": "disabled",
        "startFrom": "earliest",
        "internalTopics": {
            "source": {"offsetSyncs": "mm2-offset-syncs.us-east.internal", "heartbeats": "heartbeats"},
            "target": {"checkpoints": "us-west.checkpoints.internal", "heartbeats": "us-west.heartbeats",
                       "connectGroupId": f"{NS}-consumer-group",
                       "connectConfigStorage": f"{NS}-config-topic",
                       "connectOffsetStorage": f"{NS}-offsets-topic",
                       "connectStatusStorage": f"{NS}-status-topic"},
        },
        # The documents' failover: cutoff by default; 2 x (60 s + 60 s); after a cutoff the
        # consumers read the active topics, Kafka's default excludes kept (a Java regex).
        "failover": {"procedure": "cutoff", "procedures": ["continuous", "cutoff", "disaster"], "waitSeconds": 240,
                     "topics": ["(?!(?:.*[\\-\\.]internal|.*\\.replica|__.*)$)(?:test.*)"]},
    }}
