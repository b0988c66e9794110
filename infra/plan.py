"""The pure plan: from a validated topology to the Kubernetes objects of every flow.

No Pulumi here. Manifests are plain dicts, except that Secret values are `SecretValue`s that
the components resolve from Pulumi secret config; so the plan, its tests and the offline render
never hold a secret. One generator per object, as Strimzi's model classes do.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from infra import names
from infra.connection import (Connection, Entry, SecretValue, Store, docker_config_json, source_connection,
                              target_connection, target_objects)
from infra.model import ConnectorState, ExactlyOnce, Flavour, Flow, Policy, StartFrom, Topology
from infra.names import FlowNames

GROUP = "kafka.strimzi.io"
API_VERSIONS = {Flavour.csm: f"{GROUP}/v1beta2", Flavour.strimzi: f"{GROUP}/v1"}
POLICY_CLASSES = {
    Policy.default: "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
    Policy.identity: "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
}
CONNECTOR_CLASSES = {
    "source": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
    "checkpoint": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
    "heartbeat": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
}
CONFIG_PROVIDERS = {
    "config.providers": "cfmap,secret,file",
    "config.providers.cfmap.class": "io.strimzi.kafka.KubernetesConfigMapConfigProvider",
    "config.providers.secret.class": "io.strimzi.kafka.KubernetesSecretConfigProvider",
    "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
}
BYTE_ARRAY = "org.apache.kafka.connect.converters.ByteArrayConverter"
AUTH_TYPES = {"PLAIN": "plain", "SCRAM-SHA-256": "scram-sha-256", "SCRAM-SHA-512": "scram-sha-512"}
REFERENCE = re.compile(r"\$\{(cfmap|secret):([^/}]+)/([^:}]+):([^}]+)\}")


@dataclass(frozen=True)
class FlowPlan:
    flow: Flow
    names: FlowNames
    namespace: dict
    access: tuple[dict, ...]      # ConfigMaps and Secrets: clusters, replication, registry
    connect: tuple[dict, ...]     # KafkaConnect, Role, RoleBinding
    connectors: tuple[dict, ...]  # KafkaConnectors
    outputs: dict

    @property
    def objects(self) -> tuple[dict, ...]:
        return (self.namespace, *self.access, *self.connect, *self.connectors)


@dataclass(frozen=True)
class StackPlan:
    flavour: Flavour
    flows: tuple[FlowPlan, ...]

    @property
    def objects(self) -> tuple[dict, ...]:
        return tuple(o for f in self.flows for o in f.objects)

    def outputs(self) -> dict:
        return {"operatorFlavour": self.flavour.value,
                "flows": {f.names.flow: f.outputs for f in self.flows}}

    def secret_values(self) -> list[SecretValue]:
        """Every value this stack needs from Pulumi secret config, in plan order."""
        found = []
        for obj in self.objects:
            for section in ("data", "stringData"):
                found += [v for v in obj.get(section, {}).values() if isinstance(v, SecretValue)]
        return found

    def secret_keys(self) -> list[str]:
        return sorted({k for v in self.secret_values() for k in v.config_keys})


def plan(topo: Topology) -> StackPlan:
    return StackPlan(topo.operator.flavour, tuple(plan_flow(topo, f) for f in topo.sorted_flows()))


# ----------------------------------------------------------------- per flow


def plan_flow(topo: Topology, flow: Flow) -> FlowPlan:
    n = FlowNames(flow.flow_name, flow.source, flow.target)
    source, target = topo.clusters[flow.source], topo.clusters[flow.target]
    source_conn = source_connection(flow.source, source, n)
    target_conn = target_connection(flow.target, target, n, topo.operator.target_connection)
    entries = [
        Entry(Store.CONFIGMAP, n.source_configmap, "alias", flow.source),
        *source_conn.entries,
        *target_objects(flow.target, target, n),
        *target_conn.entries,
        *replication_entries(flow, n),
    ]
    connectors = connector_manifests(topo, flow, n, source_conn, target_conn)
    access = [*stored_objects(entries, n, flow)]
    pull = topo.operator.imagePullSecret
    if pull:
        access.append(_manifest("v1", "Secret", pull.name, n, flow, type="kubernetes.io/dockerconfigjson",
                                stringData={".dockerconfigjson": SecretValue(
                                    (names.REGISTRY_PASSWORD_KEY,),
                                    lambda password: docker_config_json(pull.server, pull.username, password))}))
    connect = (
        kafka_connect(topo, flow, n, entries),
        role(flow, n, connectors),
        role_binding(flow, n),
    )
    return FlowPlan(flow, n, namespace(flow, n), tuple(access), connect, tuple(connectors), flow_outputs(flow, n))


def _labels(flow: Flow) -> dict:
    return {**names.PART_OF, names.FLOW_LABEL: flow.flow_name}


def _manifest(api_version: str, kind: str, name: str, n: FlowNames | None, flow: Flow, *,
              labels: dict | None = None, annotations: dict | None = None, **body) -> dict:
    metadata = {"name": name}
    if n is not None:
        metadata["namespace"] = n.namespace
    metadata["labels"] = {**_labels(flow), **(labels or {})}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **body}


def namespace(flow: Flow, n: FlowNames) -> dict:
    return _manifest("v1", "Namespace", n.namespace, None, flow)


def replication_entries(flow: Flow, n: FlowNames) -> list[Entry]:
    """Step 6: what the flow's connectors share, the replication policy set once for all."""
    cm = n.replication_configmap
    data = {"topics": ",".join(flow.topics)}
    if flow.topicsExclude:
        data["topics.exclude"] = ",".join(flow.topicsExclude)
    if flow.checkpoints:
        data["groups"] = ",".join(flow.groups)
        if flow.groupsExclude:
            data["groups.exclude"] = ",".join(flow.groupsExclude)
    data["replication.policy.class"] = POLICY_CLASSES[flow.replicationPolicy]
    return [Entry(Store.CONFIGMAP, cm, k, v) for k, v in data.items()]


def stored_objects(entries: list[Entry], n: FlowNames, flow: Flow) -> list[dict]:
    """The ConfigMaps and Secrets holding every entry, one object per name."""
    grouped: dict[tuple[Store, str], dict[str, Entry]] = defaultdict(dict)
    for e in entries:
        bucket = grouped[(e.store, e.obj)]
        if e.key in bucket and bucket[e.key] != e:
            raise AssertionError(f"{e.obj}: key {e.key} planned twice with different values")
        bucket[e.key] = e
    objects = []
    for (store, obj), keys in sorted(grouped.items()):
        if store is Store.CONFIGMAP:
            objects.append(_manifest("v1", "ConfigMap", obj, n, flow, data={k: keys[k].value for k in sorted(keys)}))
        else:
            string_data = {k: e.value for k, e in sorted(keys.items()) if not e.value.binary}
            data = {k: e.value for k, e in sorted(keys.items()) if e.value.binary}
            body = {"type": "Opaque"}
            if data:
                body["data"] = data
            if string_data:
                body["stringData"] = string_data
            objects.append(_manifest("v1", "Secret", obj, n, flow, **body))
    return objects


def mounted_files(entries: list[Entry]) -> dict[str, list[str]]:
    files: dict[str, list[str]] = defaultdict(list)
    for e in entries:
        if e.mounted:
            files[e.obj].append(e.key)
    return {obj: sorted(keys) for obj, keys in sorted(files.items())}


# ----------------------------------------------------------------- KafkaConnect


def kafka_connect(topo: Topology, flow: Flow, n: FlowNames, entries: list[Entry]) -> dict:
    """Step 7: a Connect cluster dedicated to the flow, depending on the TARGET Kafka."""
    flavour = topo.operator.flavour
    settings = topo.connect_settings(flow)
    target = topo.clusters[flow.target].security
    spec: dict = {}
    if settings.version:
        spec["version"] = settings.version
    spec["replicas"] = settings.replicas
    if settings.image:
        spec["image"] = settings.image
    spec["bootstrapServers"] = topo.clusters[flow.target].bootstrapServers
    internal = {"group.id": n.group_id, "offset.storage.topic": n.offset_storage_topic,
                "config.storage.topic": n.config_storage_topic, "status.storage.topic": n.status_storage_topic}
    if flavour is Flavour.strimzi:
        # kafka.strimzi.io/v1 makes these spec fields and forbids them in spec.config.
        spec.update(groupId=n.group_id, offsetStorageTopic=n.offset_storage_topic,
                    configStorageTopic=n.config_storage_topic, statusStorageTopic=n.status_storage_topic)
    tls = target.effective_tls
    if tls:
        spec["tls"] = {"trustedCertificates": [{"secretName": n.target_ca_secret, "certificate": "ca.crt"}]}
    if target.sasl:
        spec["authentication"] = {"type": AUTH_TYPES[target.sasl.mechanism.value], "username": target.sasl.username,
                                  "passwordSecret": {"secretName": n.target_password_secret, "password": "pass"}}
    elif tls and tls.clientCertificate:
        spec["authentication"] = {"type": "tls", "certificateAndKey": {
            "secretName": n.target_client_secret, "certificate": "tls.crt", "key": "tls.key"}}
    if settings.resources:
        spec["resources"] = settings.resources.model_dump(exclude_none=True)
    template = connect_template(topo, n, entries)
    if template:
        spec["template"] = template
    config = {} if flavour is Flavour.strimzi else dict(internal)
    if flow.exactlyOnce is not ExactlyOnce.disabled:
        config["exactly.once.source.support"] = flow.exactlyOnce.value
    config.update({"config.storage.replication.factor": -1, "offset.storage.replication.factor": -1,
                   "status.storage.replication.factor": -1, **CONFIG_PROVIDERS})
    spec["config"] = config
    return _manifest(API_VERSIONS[flavour], "KafkaConnect", n.connect, n, flow,
                     annotations={names.USE_CONNECTOR_RESOURCES: "true"}, spec=spec)


def connect_template(topo: Topology, n: FlowNames, entries: list[Entry]) -> dict:
    pod: dict = {}
    pull = topo.operator.imagePullSecret
    if pull:
        pod["imagePullSecrets"] = [{"name": pull.name}]
    files = mounted_files(entries)
    if files:
        # Only the store files are mounted; passwords stay behind the secret config provider.
        # One flow mounts files of the source Secret only (see connection.py).
        (secret, keys), = files.items()
        pod["volumes"] = [{"name": n.source_volume, "secret": {
            "secretName": secret, "items": [{"key": k, "path": k} for k in keys]}}]
    template: dict = {}
    if pod:
        template["pod"] = pod
    if files:
        template["connectContainer"] = {"volumeMounts": [{"name": n.source_volume, "mountPath": n.source_mount}]}
    return template


# ----------------------------------------------------------------- connectors


def connector_manifests(topo: Topology, flow: Flow, n: FlowNames,
                        source: Connection, target: Connection) -> list[dict]:
    ns = n.namespace
    repl = n.replication_configmap

    def cfmap(obj: str, key: str) -> str:
        return f"${{cfmap:{ns}/{obj}:{key}}}"

    converters = {"key.converter": BYTE_ARRAY, "value.converter": BYTE_ARRAY}
    policy = {"replication.policy.class": cfmap(repl, "replication.policy.class")}
    aliases = {"source.cluster.alias": cfmap(n.source_configmap, "alias"),
               "target.cluster.alias": cfmap(n.target_configmap, "alias")}
    topics = {"topics": cfmap(repl, "topics")}
    if flow.topicsExclude:
        topics["topics.exclude"] = cfmap(repl, "topics.exclude")

    # Source and checkpoint connectors reach both clusters in the same way (steps 9-10).
    both_clusters = {
        "source.cluster.alias": aliases["source.cluster.alias"], **source.properties("source.cluster."),
        "target.cluster.alias": aliases["target.cluster.alias"], **target.properties("target.cluster."),
    }
    manifests = []
    source_config = {**converters, "refresh.topics.interval.seconds": 10, **topics, **policy, **both_clusters}
    if flow.startFrom is StartFrom.latest:
        source_config["source.consumer.auto.offset.reset"] = "latest"
    if flow.exactlyOnce is not ExactlyOnce.disabled:
        # Records of aborted transactions must not be replicated as if committed.
        source_config["source.consumer.isolation.level"] = "read_committed"
    manifests.append(connector(topo, flow, n, n.source_connector, "source", flow.tasksMax.source, source_config))
    if flow.checkpoints:
        groups = {"groups": cfmap(repl, "groups")}
        if flow.groupsExclude:
            groups["groups.exclude"] = cfmap(repl, "groups.exclude")
        sync = {"sync.group.offsets.enabled": flow.syncGroupOffsets.enabled}
        if flow.syncGroupOffsets.intervalSeconds:
            sync["sync.group.offsets.interval.seconds"] = flow.syncGroupOffsets.intervalSeconds
        checkpoint_config = {**converters, "refresh.groups.interval.seconds": 10, **sync, **topics, **groups,
                             **policy, **both_clusters}
        manifests.append(connector(topo, flow, n, n.checkpoint_connector, "checkpoint",
                                   flow.tasksMax.checkpoint, checkpoint_config))
    if flow.heartbeats:
        # Step 11: heartbeats are produced into the SOURCE cluster, so the source connection
        # stands in for the "target" and for the producer.
        heartbeat_config = {
            **converters, **policy, **aliases,
            **source.properties("target.cluster."), **source.properties("producer.override."),
        }
        manifests.append(connector(topo, flow, n, n.heartbeat_connector, "heartbeat",
                                   flow.tasksMax.heartbeat, heartbeat_config))
    return manifests


def connector(topo: Topology, flow: Flow, n: FlowNames, name: str, kind: str, tasks: int, config: dict) -> dict:
    config = {**config, **getattr(flow.config, kind)}
    spec = {"class": CONNECTOR_CLASSES[kind], "tasksMax": tasks, "config": config}
    state = getattr(flow.state, kind)
    if state is not ConnectorState.running:  # absent means running
        spec["state"] = state.value
    return _manifest(API_VERSIONS[topo.operator.flavour], "KafkaConnector", name, n, flow,
                     labels={names.CLUSTER_LABEL: n.connect}, spec=spec)


# ----------------------------------------------------------------- RBAC


def references(connectors: list[dict]) -> dict[str, set[tuple[str, str]]]:
    """Every (namespace, name) a connector config reads through the cfmap/secret providers."""
    found: dict[str, set[tuple[str, str]]] = {"cfmap": set(), "secret": set()}
    for c in connectors:
        for value in c["spec"]["config"].values():
            for provider, ns, obj, _key in REFERENCE.findall(str(value)):
                found[provider].add((ns, obj))
    return found


def role(flow: Flow, n: FlowNames, connectors: list[dict]) -> dict:
    """Step 8, derived from the references: `get` on exactly what the connectors read."""
    refs = references(connectors)
    rules = []
    for provider, resource in (("secret", "secrets"), ("cfmap", "configmaps")):
        assert all(ns == n.namespace for ns, _ in refs[provider]), "connectors read only their own namespace"
        objs = sorted(obj for _, obj in refs[provider])
        if objs:
            rules.append({"apiGroups": [""], "resources": [resource], "resourceNames": objs, "verbs": ["get"]})
    return _manifest("rbac.authorization.k8s.io/v1", "Role", n.role, n, flow, rules=rules)


def role_binding(flow: Flow, n: FlowNames) -> dict:
    return _manifest("rbac.authorization.k8s.io/v1", "RoleBinding", n.role_binding, n, flow,
                     subjects=[{"kind": "ServiceAccount", "name": n.service_account, "namespace": n.namespace}],
                     roleRef={"kind": "Role", "name": n.role, "apiGroup": "rbac.authorization.k8s.io"})


# ----------------------------------------------------------------- outputs


def flow_outputs(flow: Flow, n: FlowNames) -> dict:
    """The per-flow stack output contract (docs/outputs.md)."""
    prefixes = flow.replicationPolicy is Policy.default
    return {
        "namespace": n.namespace,
        "sourceAlias": flow.source,
        "targetAlias": flow.target,
        "connectCluster": n.connect,
        "connectServiceAccount": n.service_account,
        "connectRestService": n.rest_service,
        "connectRestUrl": n.rest_url,
        "connectors": {
            "source": [n.source_connector],
            "checkpoint": [n.checkpoint_connector] if flow.checkpoints else [],
            "heartbeat": [n.heartbeat_connector] if flow.heartbeats else [],
        },
        "replicationPolicy": flow.replicationPolicy.value,
        "replicationPolicyClass": POLICY_CLASSES[flow.replicationPolicy],
        "topicPrefix": names.topic_prefix(flow.source, prefixes),
        "topics": list(flow.topics),
        "topicsExclude": list(flow.topicsExclude),
        "exactlyOnce": flow.exactlyOnce.value,
        "startFrom": flow.startFrom.value,
        "internalTopics": {
            "source": {
                "offsetSyncs": n.offset_syncs_topic,
                "heartbeats": names.HEARTBEATS_TOPIC if flow.heartbeats else None,
            },
            "target": {
                "checkpoints": n.checkpoints_topic if flow.checkpoints else None,
                # Both policies prefix replicated heartbeats (IdentityReplicationPolicy defers
                # to the default for heartbeats topics).
                "heartbeats": (names.replicated_topic(flow.source, names.HEARTBEATS_TOPIC)
                               if flow.heartbeats else None),
                "connectGroupId": n.group_id,
                "connectConfigStorage": n.config_storage_topic,
                "connectOffsetStorage": n.offset_storage_topic,
                "connectStatusStorage": n.status_storage_topic,
            },
        },
    }
