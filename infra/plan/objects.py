"""The objects of one Connect cluster of a flow, one generator per object as Strimzi's model classes
have them: its namespace, the ConfigMaps and Secrets its connectors read, its KafkaConnect (and
ResourceQuota, metrics rules) and the least-privilege Role its config providers read through. The
connectors have theirs in infra/plan/connectors.py."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from infra.core import classes, names, references
from infra.core.manifests import (JSON, Authentication, ConfigMap, ConfigValue, KafkaConnect, KafkaConnectSpec,
                                  Namespace, ObjectMeta, PolicyRule, ResourceQuota, Role, RoleBinding, meta,
                                  opaque_secret)
from infra.core.names import FlowNames
from infra.filters.topics import DEFAULT_GROUPS_EXCLUDE
from infra.plan import metrics
from infra.plan.connection import Entry, Store, kept_truststore, referenced_versions, versioned_references
from infra.plan.connectors import ConnectorPlan, readiness_annotations, topics_configmap
from infra.topology.resolution import Model, PartSpec
from infra.topology.schema import ExactlyOnce, Flow
from infra.plan.types import POLICY_CLASSES, Stored

# Strimzi's authentication types by SASL mechanism (KafkaConnect spec.authentication.type).
AUTH_TYPES = {"PLAIN": "plain", "SCRAM-SHA-256": "scram-sha-256", "SCRAM-SHA-512": "scram-sha-512"}


def object_meta(name: str, n: FlowNames | None, flow: Flow, annotations: dict[str, str] | None = None) -> ObjectMeta:
    return meta(name, n.namespace if n else None, names.flow_labels(flow.flow_name), annotations)


def namespace(flow: Flow, n: FlowNames) -> Namespace:
    labels = {**names.flow_labels(flow.flow_name), names.SOURCE_CLUSTER_LABEL: flow.source,
              names.TARGET_CLUSTER_LABEL: flow.target}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(n.namespace, None, labels)}


def replication_entries(flow: Flow, n: FlowNames, part: PartSpec) -> list[Entry]:
    """Step 6: what the connectors share (the replication policy, set once for all) and each
    source connector's topic filter: in the shared ConfigMap for a single source connector, in a
    ConfigMap of its own for each of several (the documents' multi-instance layout)."""
    entries = []
    for spec in part.sources:
        data = {"topics": ",".join(spec.topics)}
        if spec.topics_exclude:
            data["topics.exclude"] = ",".join(spec.kafka_topics_exclude)
        entries += [Entry(Store.CONFIGMAP, topics_configmap(n, spec), k, v) for k, v in data.items()]
    data = {}
    if flow.with_checkpoints:
        data["groups"] = ",".join(flow.groups)
        if flow.groupsExclude:
            data["groups.exclude"] = ",".join((*flow.groupsExclude, *DEFAULT_GROUPS_EXCLUDE))
    data["replication.policy.class"] = POLICY_CLASSES[flow.policy]
    return entries + [Entry(Store.CONFIGMAP, n.replication_configmap, k, v) for k, v in data.items()]


def stored_objects(entries: list[Entry], n: FlowNames, flow: Flow) -> list[Stored]:
    """The ConfigMaps and Secrets holding every entry, one object per name."""
    grouped: dict[tuple[Store, str], dict[str, Entry]] = defaultdict(dict)
    for e in entries:
        bucket = grouped[(e.store, e.obj)]
        if e.key in bucket and bucket[e.key] != e:
            raise AssertionError(f"{e.obj}: key {e.key} planned twice with different values")
        bucket[e.key] = e
    objects: list[Stored] = []
    for (store, obj), keys in sorted(grouped.items()):
        if store is Store.CONFIGMAP:
            data: dict[str, str] = {}
            for k in sorted(keys):
                value = keys[k].value
                assert isinstance(value, str), "ConfigMaps hold no secret value"
                data[k] = value
            objects.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": object_meta(obj, n, flow), "data": data})
            continue
        objects.append(opaque_secret(object_meta(obj, n, flow), {k: e.value for k, e in keys.items()}))
    return objects


def mounted_files(entries: list[Entry]) -> dict[str, list[str]]:
    files: dict[str, set[str]] = defaultdict(set)
    for e in entries:
        if e.mounted:
            files[e.obj].add(e.key)
    return {obj: sorted(keys) for obj, keys in sorted(files.items())}

# ----------------------------------------------------------------- KafkaConnect

def resource_quota(flow: Flow, n: FlowNames, part: PartSpec) -> ResourceQuota:
    """Namespaced limits for one Connect cluster (the documents' small/high workload split)."""
    assert part.quota is not None
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": object_meta(n.resource_quota, n, flow),
            "spec": {"hard": {k: str(v) for k, v in sorted(part.quota.hard.items())}}}


def metrics_configmap(model: Model, flow: Flow, n: FlowNames) -> ConfigMap | None:
    """The JMX exporter's rules for this Connect cluster (infra/plan/metrics.py), in its namespace."""
    data = metrics.configmap_data(model.operator.release, model.topology.monitoring, n, flow.source)
    if data is None:
        return None
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": object_meta(n.metrics_configmap, n, flow), "data": data}


def finds_plugins_by_manifest(model: Model, part: PartSpec, entries: list[Entry],
                              planned: Sequence[ConnectorPlan]) -> bool:
    """Whether the Connect cluster's worker may find its plugins by their ServiceLoader manifests
    alone (`plugin.discovery: service_load`) instead of scanning its classpath and plugin path
    reflectively, five of the worker's seven seconds of start-up here (Kafka's default,
    `hybrid_warn`, logs "All plugins have ServiceLoader manifests, consider reconfiguring
    plugin.discovery=service_load"). Strimzi's own MirrorMaker 2 example sets it
    (examples/mirror-maker/kafka-mirror-maker-2.yaml, 1.1.0).

    Only where nothing can be missed: the release's Kafka has the setting, the pods run the
    operator's image (a custom one may hold plugins without manifests, which `service_load`
    would not find), and every class the connectors name is Kafka's own, the replication policy
    read through its ConfigMap reference. Strimzi's config providers carry manifests in every
    release's jar (tests/runtime/test_replication.py starts a worker with it on each)."""
    if not model.operator.release.plugin_discovery_key or part.connect.image is not None:
        return False
    configmaps = {(e.obj, e.key): e.value for e in entries if e.store is Store.CONFIGMAP}

    def resolved(value: object) -> str:
        key = references.configmap_key(value)
        held = configmaps.get(key[1:]) if key else None  # the flow's own ConfigMaps, in its namespace
        return held if isinstance(held, str) else str(value)

    named: list[str] = []
    for c in planned:
        spec = c.manifest["spec"]
        config = {"connector.class": spec["class"], **{k: resolved(v) for k, v in spec.get("config", {}).items()}}
        named += [v for _, v in classes.class_settings(config)]
    # A class still behind a reference is one this plan cannot read: not Kafka's by construction.
    return classes.kafka_own(named)


def kafka_connect(model: Model, flow: Flow, n: FlowNames, part: PartSpec, entries: list[Entry],
                  planned: Sequence[ConnectorPlan]) -> KafkaConnect:
    """Step 7: a Connect cluster dedicated to the flow, depending on the TARGET Kafka."""
    release = model.operator.release
    settings = part.connect
    target = model.clusters[flow.target].security
    spec: KafkaConnectSpec = {"version": settings.version or release.default_connect_version,
                              "replicas": settings.replicas,
                              "bootstrapServers": model.clusters[flow.target].bootstrapServers,
                              "config": {}}
    if settings.image:
        spec["image"] = settings.image
    config: dict[str, ConfigValue] = {}
    if release.connect_identity_fields:
        # Spec fields from 0.49 (the bridge releases' both versions), the only way in v1, which
        # forbids them in spec.config (names.CONNECT_STORAGE's fields, spelled here for the
        # typed spec).
        spec["groupId"] = n.group_id
        spec["offsetStorageTopic"] = n.offset_storage_topic
        spec["configStorageTopic"] = n.config_storage_topic
        spec["statusStorageTopic"] = n.status_storage_topic
    if release.connect_identity_in_config:
        # Before 0.49 the only way; on the bridge releases the same values beside the fields, for
        # an operator rolled back to 0.48.0, which reads only these (releases.py).
        config.update({s.key: s.of(n) for s in names.CONNECT_STORAGE})
    tls = target.effective_tls
    kept = target.tls_secret
    if tls:
        # The team's Secret names its CA key whole: the program never sees how many certificates it
        # holds, so none is split into keys of its own (names.TARGET_CA_CERTIFICATES).
        spec["tls"] = {"trustedCertificates": [{"secretName": kept.secretName, "certificate": kept.ca} if kept else
                                               {"secretName": n.target_ca_secret, "pattern": n.TARGET_CA_CERTIFICATES}]}
    authentication: Authentication | None = None
    if target.sasl:
        ref = target.password_secret
        authentication = {"type": AUTH_TYPES[target.sasl.mechanism.value], "username": target.sasl.username,
                          "passwordSecret": {"secretName": ref.secretName, "password": ref.key} if ref else
                          {"secretName": n.target_password_secret, "password": "pass"}}
    elif tls and tls.clientCertificate:
        authentication = {"type": "tls", "certificateAndKey": {
            "secretName": kept.secretName, "certificate": kept.certificate, "key": kept.key} if kept else {
            "secretName": n.target_client_secret, "certificate": "tls.crt", "key": "tls.key"}}
    if authentication:
        spec["authentication"] = authentication
    if settings.resources:
        spec["resources"] = settings.resources.model_dump(exclude_none=True)
    source = model.clusters[flow.source]
    store = kept_truststore(source)
    template = connect_template(model, n, entries, store)
    version = referenced_versions([*target.referenced_items.values(), *([store[:2]] if store else [])],
                                  versioned_references([model.clusters[flow.target], source]))
    if version is not None:
        # The team's Secrets the pods authenticate with, at their declared versions: a new one rolls
        # them at once (names.REFERENCED_SECRETS_ANNOTATION) instead of at the operator's next
        # periodic reconciliation, which sees the changed material in its auth hash. And a source
        # truststore mounted from the team's Secret: a running pod would see it changed only once
        # the kubelet projects it (connection.kept_truststore).
        pod = template.setdefault("pod", {})
        pod["metadata"] = {"annotations": {names.REFERENCED_SECRETS_ANNOTATION: version}}
    if template:
        spec["template"] = template
    metrics_config = metrics.metrics_config(model.topology.monitoring, n)
    if metrics_config:
        spec["metricsConfig"] = metrics_config
    if flow.exactlyOnce is not ExactlyOnce.disabled:
        config["exactly.once.source.support"] = flow.exactlyOnce.value
    if settings.rebalanceDelaySeconds is not None:
        config[names.REBALANCE_DELAY] = settings.rebalanceDelaySeconds * 1000
    config.update({"config.storage.replication.factor": -1, "offset.storage.replication.factor": -1,
                   "status.storage.replication.factor": -1, **references.WORKER_CONFIG})
    if finds_plugins_by_manifest(model, part, entries, planned):
        config[names.PLUGIN_DISCOVERY] = "service_load"
    spec["config"] = config
    return {"apiVersion": release.api_version, "kind": "KafkaConnect",
            "metadata": object_meta(n.connect, n, flow, {names.USE_CONNECTOR_RESOURCES: "true", names.PATCH_FORCE: "true",
                                                  **(readiness_annotations(model.operator) or {})}),
            "spec": spec}


def connect_template(model: Model, n: FlowNames, entries: list[Entry],
                     kept: tuple[str, str, str] | None = None) -> JSON:
    pod: JSON = {}
    pull = model.operator.imagePullSecret
    if pull:
        pod["imagePullSecrets"] = [{"name": pull.pod_secret}]
    files = mounted_files(entries)
    assert not (files and kept), "a source's truststore is the team's or ours (connection.source_connection)"
    # Only the store files are mounted, from a Secret of their own, or the source's truststore from
    # the team's Secret under the file name of ours; passwords stay behind the secret config
    # provider. One flow mounts files of the source only (see connection.py).
    secret: str | None = None
    if kept:
        secret, items = kept[0], [{"key": kept[1], "path": kept[2]}]
    elif files:
        (secret, keys), = files.items()
        items = [{"key": k, "path": k} for k in keys]
    if secret:
        pod["volumes"] = [{"name": n.source_volume, "secret": {"secretName": secret, "items": items}}]
    template: JSON = {}
    if pod:
        template["pod"] = pod
    if secret:
        template["connectContainer"] = {"volumeMounts": [{"name": n.source_volume, "mountPath": n.source_mount}]}
    return template

# ----------------------------------------------------------------- RBAC

def read_objects(planned: tuple[ConnectorPlan, ...]) -> dict[references.Provider, set[tuple[str, str]]]:
    """Every (namespace, name) the connectors read through the cfmap/secret providers."""
    found: dict[references.Provider, set[tuple[str, str]]] = {
        references.Provider.CONFIGMAP: set(), references.Provider.SECRET: set()}
    for c in planned:
        for value in c.config.values():
            for ref in references.parse(value):
                obj = ref.kubernetes_object
                if obj is not None:
                    found[references.Provider(ref.provider)].add(obj)
    return found


def role(flow: Flow, n: FlowNames, planned: tuple[ConnectorPlan, ...]) -> Role:
    """Step 8, derived from the references: `get` on exactly what the connectors read."""
    refs = read_objects(planned)
    rules: list[PolicyRule] = []
    for provider, resource in ((references.Provider.SECRET, "secrets"), (references.Provider.CONFIGMAP, "configmaps")):
        assert all(ns == n.namespace for ns, _ in refs[provider]), "connectors read only their own namespace"
        objs = sorted(obj for _, obj in refs[provider])
        if objs:
            rules.append({"apiGroups": [""], "resources": [resource], "resourceNames": objs, "verbs": ["get"]})
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": object_meta(n.role, n, flow),
            "rules": rules}


def role_binding(flow: Flow, n: FlowNames) -> RoleBinding:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": object_meta(n.role_binding, n, flow),
            "subjects": [{"kind": "ServiceAccount", "name": n.service_account, "namespace": n.namespace}],
            "roleRef": {"kind": "Role", "name": n.role, "apiGroup": "rbac.authorization.k8s.io"}}
