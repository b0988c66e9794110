"""The pure plan: from a validated model to the Kubernetes objects of every flow.

No Pulumi here. Manifests are typed dicts with Kubernetes' field names (infra/core/manifests.py),
except that Secret values are `SecretValue`s that the components resolve from Pulumi secret
config; so the plan, its tests and the offline render never hold a secret. One generator per
object, as Strimzi's model classes do; the connectors have theirs in infra/plan/connectors.py.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Union

from contract.outputs import OUTPUTS_VERSION
from infra.core import classes, names, references
from infra.core.errors import Problem
from infra.core.manifests import (JSON, Authentication, ConfigMap, ConfigValue, KafkaConnect, KafkaConnectSpec,
                                  Manifest, Namespace, ObjectMeta, PolicyRule, ResourceQuota, Role, RoleBinding, Secret,
                                  SecretValue, meta, opaque_secret, secret_values as manifest_secret_values)
from infra.core.names import FlowNames
from infra.core.releases import Flavour, Release
from infra.filters.topics import DEFAULT_GROUPS_EXCLUDE
from infra.plan import metrics
from infra.plan.connection import (Connection, Entry, Store, docker_config_json, heartbeat_client, source_connection,
                                   target_connection, target_objects)
from infra.plan.connectors import (CONFIGMAPS_DIGEST, ConnectorKind, ConnectorPlan, Wiring, connectors,
                                   readiness_annotations, topics_configmap, with_digest)
from infra.plan.failover import failover_outputs
from infra.topology.resolution import Direction, Model, PartSpec
from infra.topology.schema import ConnectorState, ExactlyOnce, Flow, Policy

POLICY_CLASSES = {
    Policy.default: "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
    Policy.identity: "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
}
AUTH_TYPES = {"PLAIN": "plain", "SCRAM-SHA-256": "scram-sha-256", "SCRAM-SHA-512": "scram-sha-512"}
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

Stored = Union[ConfigMap, Secret]
ConnectObject = Union[ResourceQuota, KafkaConnect, Role, RoleBinding]


@dataclass(frozen=True)
class PartPlan:
    """One Connect cluster of a flow (the only one unless the flow is split), in its namespace."""
    spec: PartSpec
    names: FlowNames
    namespace: Namespace
    access: tuple[Stored, ...]              # ConfigMaps and Secrets: clusters, replication, metrics, registry
    connect: tuple[ConnectObject, ...]      # ResourceQuota, KafkaConnect, Role, RoleBinding
    connectors: tuple[ConnectorPlan, ...]   # KafkaConnectors

    @property
    def kubernetes(self) -> str | None:
        """The Kubernetes cluster it deploys to; None: the ambient context (no `kubernetes` section)."""
        return self.spec.kubernetes

    @property
    def connector_manifests(self) -> tuple[Manifest, ...]:
        return tuple(c.manifest for c in self.connectors)

    @property
    def objects(self) -> tuple[Manifest, ...]:
        return (self.namespace, *self.access, *self.connect, *self.connector_manifests)

    def connector_names(self, kind: ConnectorKind) -> list[str]:
        return [c.name for c in self.connectors if c.kind is kind]


@dataclass(frozen=True)
class InternalTopics:
    """MirrorMaker 2's own topics of a flow, None where the flow has none (the Connect
    storage topics are per Connect cluster: PartPlan.names)."""
    source_offset_syncs: str | None
    source_heartbeats: str | None
    target_checkpoints: str | None
    target_heartbeats: str | None


@dataclass(frozen=True)
class FlowPlan:
    direction: Direction
    parts: tuple[PartPlan, ...]
    release: Release

    @property
    def name(self) -> str:
        return self.direction.name

    @property
    def flow(self) -> Flow:
        return self.direction.flow

    @property
    def objects(self) -> tuple[Manifest, ...]:
        return tuple(o for p in self.parts for o in p.objects)

    @property
    def policy_class(self) -> str:
        return POLICY_CLASSES[self.flow.policy]

    @property
    def topic_prefix(self) -> str:
        return names.topic_prefix(self.flow.source, self.flow.policy is Policy.default)

    @property
    def loop_headers(self) -> tuple[str, str] | None:
        """Bidirectional pairs: (the header replicated records get, the header of records that
        came from the target and are dropped)."""
        if not self.direction.partner:
            return None
        return names.loop_header(self.flow.source), names.loop_header(self.flow.target)

    @property
    def internal_topics(self) -> InternalTopics:
        flow, first = self.flow, self.parts[0].names
        return InternalTopics(
            # Bidirectional pairs switch offset syncs off where Kafka has the key (3.9+).
            source_offset_syncs=(None if self.direction.partner and self.release.emit_offset_syncs_key
                                 else first.offset_syncs_topic),
            source_heartbeats=names.HEARTBEATS_TOPIC if flow.heartbeats else None,
            target_checkpoints=first.checkpoints_topic if flow.with_checkpoints else None,
            # Both policies prefix replicated heartbeats (IdentityReplicationPolicy defers to the
            # default for heartbeats topics).
            target_heartbeats=(names.replicated_topic(flow.source, names.HEARTBEATS_TOPIC)
                               if flow.heartbeats else None))

    @cached_property
    def outputs(self) -> JSON:
        return flow_outputs(self)


@dataclass(frozen=True)
class StackPlan:
    release: Release
    flows: tuple[FlowPlan, ...]

    @property
    def flavour(self) -> Flavour:
        return self.release.flavour

    @property
    def objects(self) -> tuple[Manifest, ...]:
        return tuple(o for f in self.flows for o in f.objects)

    def placed(self) -> list[tuple[str | None, Manifest]]:
        """Every object with the Kubernetes cluster it goes to."""
        return [(p.kubernetes, o) for f in self.flows for p in f.parts for o in p.objects]

    @property
    def kubernetes_clusters(self) -> tuple[str, ...]:
        """The Kubernetes clusters hosting flows (none without a `kubernetes` section)."""
        return tuple(sorted({p.kubernetes for f in self.flows for p in f.parts if p.kubernetes}))

    def in_cluster(self, kubernetes: str | None) -> StackPlan:
        """The flows (and of a split flow, the Connect clusters) deployed to one Kubernetes cluster."""
        flows = []
        for f in self.flows:
            parts = tuple(p for p in f.parts if p.kubernetes == kubernetes)
            if parts:
                flows.append(f if parts == f.parts else replace(f, parts=parts))
        return StackPlan(self.release, tuple(flows))

    def name_problems(self, more: Iterable[tuple[str | None, Manifest]] = ()) -> list[Problem]:
        """Every object name we write is a name its kind accepts and unique per Kubernetes
        cluster, namespace and kind (a user-chosen name, such as the image pull Secret's, could
        take one of ours)."""
        seen: dict[tuple[str | None, str | None, str, str], str] = {}
        problems = []
        for cluster, obj in (*self.placed(), *more):
            meta_ = obj["metadata"]
            name = meta_["name"]
            key = (cluster, meta_.get("namespace"), obj["kind"], name)
            label = obj["kind"] in ("Namespace", "Service")
            if not (DNS_LABEL if label else DNS_SUBDOMAIN).fullmatch(name) or len(name) > (63 if label else 253):
                problems.append(Problem(f"{obj['kind']} {name!r}", "name", name,
                                        "a Kubernetes name (lowercase letters, digits, '-'; at most 63 characters "
                                        "for namespaces and services)"))
            if key in seen:
                place = f"namespace {key[1]}" + (f" of Kubernetes cluster {cluster}" if cluster else "")
                problems.append(Problem(place, f"{obj['kind']} name", name,
                                        f"a name of its own: the program also writes {obj['kind']} {name!r} "
                                        f"there ({seen[key]})"))
            seen.setdefault(key, meta_["labels"].get(names.FLOW_LABEL, "the audit"))
        return problems

    def outputs(self) -> JSON:
        return {"outputsVersion": OUTPUTS_VERSION, "operatorFlavour": self.flavour.value, "operator": self.release.outputs(),
                "flows": {f.name: f.outputs for f in self.flows}}

    def secret_values(self) -> list[SecretValue]:
        """Every value this stack needs from Pulumi secret config, in plan order."""
        return [v for obj in self.objects for v in manifest_secret_values(obj)]

    def secret_keys(self) -> list[str]:
        return sorted({k for v in self.secret_values() for k in v.config_keys})


def plan(model: Model) -> StackPlan:
    heartbeat_copiers = heartbeat_replicators(model)
    flows = {d.name: plan_flow(model, d, heartbeat_copiers) for d in model.flows}
    for flow_plan in flows.values():
        partner = flow_plan.direction.partner
        if partner and flow_plan.name < partner:
            check_symmetry(flow_plan, flows[partner])
    return StackPlan(model.operator.release, tuple(flows.values()))


def heartbeat_replicators(model: Model) -> dict[tuple[str, str], str]:
    """The one source connector per (source, target) cluster pair that replicates the source's
    heartbeats topics. MirrorSourceConnector copies them whatever its topic filter says
    (`shouldReplicateTopic`), so every connector of a pair would write each heartbeat again;
    from Kafka 4.0 the others switch it off (`heartbeats.replication.enabled`). The first
    running connector by name is chosen, so the choice is stable whatever the file's order."""
    chosen: dict[tuple[str, str], tuple[bool, str]] = {}
    for d in model.flows:
        for part in d.parts:
            n = d.names(part)
            for spec in part.sources:
                rank = (spec.state is not ConnectorState.running, n.source_connector(spec.name))
                pair = (d.flow.source, d.flow.target)
                chosen[pair] = min(chosen.get(pair, rank), rank)
    return {pair: rank[1] for pair, rank in chosen.items()}


# ----------------------------------------------------------------- per flow


def plan_flow(model: Model, d: Direction, heartbeat_copiers: dict[tuple[str, str], str]) -> FlowPlan:
    parts = tuple(plan_part(model, d, spec, heartbeat_copiers) for spec in d.parts)
    return FlowPlan(d, parts, model.operator.release)


def plan_part(model: Model, d: Direction, part: PartSpec, heartbeat_copiers: dict[tuple[str, str], str]) -> PartPlan:
    flow = d.flow
    wiring, heartbeat_conn = part_wiring(model, d, part)
    n, source_conn, target_conn, target = wiring.n, wiring.source, wiring.target, model.clusters[flow.target]
    entries = [
        Entry(Store.CONFIGMAP, n.source_configmap, "alias", flow.source),
        *source_conn.entries,
        *(heartbeat_conn.entries if heartbeat_conn else ()),
        *target_objects(flow.target, target, n),
        *target_conn.entries,
        *replication_entries(flow, n, part),
    ]
    source_access = tuple(sorted({e.obj for e in entries if e.store is Store.SECRET}
                                 - {n.target_password_secret, n.target_ca_secret, n.target_client_secret}))
    planned = tuple(replace(with_digest(c, entries), restart_with=source_access) for c in
                    connectors(wiring, part, heartbeat_conn, heartbeat_copiers[(flow.source, flow.target)]))
    access: list[Stored] = [*stored_objects(entries, n, flow)]
    rules = metrics_configmap(model, flow, n)
    if rules:
        # Among the objects the KafkaConnect reads, created before it: the operator refuses a
        # metricsConfig whose ConfigMap is missing (MetricsModel.metricsJson).
        access.append(rules)
    pull = model.operator.imagePullSecret
    if pull:
        server, username = pull.server, pull.username
        access.append({"apiVersion": "v1", "kind": "Secret", "metadata": _meta(pull.name, n, flow),
                       "type": "kubernetes.io/dockerconfigjson",
                       "stringData": {".dockerconfigjson": SecretValue(
                           (names.REGISTRY_PASSWORD_KEY,),
                           lambda password: docker_config_json(server, username, password))}})
    connect: tuple[ConnectObject, ...] = (
        *([resource_quota(flow, n, part)] if part.quota else []),
        kafka_connect(model, flow, n, part, entries, planned),
        role(flow, n, planned),
        role_binding(flow, n),
    )
    return PartPlan(part, n, namespace(flow, n), tuple(access), connect, planned)


def part_wiring(model: Model, d: Direction, part: PartSpec) -> tuple[Wiring, Connection | None]:
    """What a Connect cluster's connectors share, and the heartbeat's client connection where the
    heartbeat connector runs; the rules read the connectors' ownership from the same wiring."""
    flow = d.flow
    n = d.names(part)
    release = model.operator.release
    source, target = model.clusters[flow.source], model.clusters[flow.target]
    source_conn = source_connection(flow.source, source, n)
    target_conn = target_connection(flow.target, target, n, model.operator.target_connection)
    heartbeat_conn = (heartbeat_client(flow.source, source, target, n, release.worker_file)
                      if part.heartbeat else None)
    return Wiring(release, d, n, source_conn, target_conn, model.operator, model.topology.monitoring), heartbeat_conn


def _meta(name: str, n: FlowNames | None, flow: Flow, annotations: dict[str, str] | None = None) -> ObjectMeta:
    return meta(name, n.namespace if n else None, names.flow_labels(flow.flow_name), annotations)


def namespace(flow: Flow, n: FlowNames) -> Namespace:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(n.namespace, None, flow)}


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
            objects.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(obj, n, flow), "data": data})
            continue
        objects.append(opaque_secret(_meta(obj, n, flow), {k: e.value for k, e in keys.items()}))
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
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": _meta(n.resource_quota, n, flow),
            "spec": {"hard": {k: str(v) for k, v in sorted(part.quota.hard.items())}}}


def metrics_configmap(model: Model, flow: Flow, n: FlowNames) -> ConfigMap | None:
    """The JMX exporter's rules for this Connect cluster (infra/plan/metrics.py), in its namespace."""
    data = metrics.configmap_data(model.operator.release, model.topology.monitoring, n, flow.source)
    if data is None:
        return None
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(n.metrics_configmap, n, flow), "data": data}


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
    else:
        config.update({s.key: s.of(n) for s in names.CONNECT_STORAGE})
    tls = target.effective_tls
    if tls:
        spec["tls"] = {"trustedCertificates": [{"secretName": n.target_ca_secret, "pattern": n.TARGET_CA_CERTIFICATES}]}
    authentication: Authentication | None = None
    if target.sasl:
        authentication = {"type": AUTH_TYPES[target.sasl.mechanism.value], "username": target.sasl.username,
                          "passwordSecret": {"secretName": n.target_password_secret, "password": "pass"}}
    elif tls and tls.clientCertificate:
        authentication = {"type": "tls", "certificateAndKey": {
            "secretName": n.target_client_secret, "certificate": "tls.crt", "key": "tls.key"}}
    if authentication:
        spec["authentication"] = authentication
    if settings.resources:
        spec["resources"] = settings.resources.model_dump(exclude_none=True)
    template = connect_template(model, n, entries)
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
            "metadata": _meta(n.connect, n, flow, {names.USE_CONNECTOR_RESOURCES: "true", names.PATCH_FORCE: "true",
                                                  **(readiness_annotations(model.operator) or {})}),
            "spec": spec}


def connect_template(model: Model, n: FlowNames, entries: list[Entry]) -> JSON:
    pod: JSON = {}
    pull = model.operator.imagePullSecret
    if pull:
        pod["imagePullSecrets"] = [{"name": pull.name}]
    files = mounted_files(entries)
    if files:
        # Only the store files are mounted; passwords stay behind the secret config provider.
        # One flow mounts files of the source Secret only (see connection.py).
        (secret, keys), = files.items()
        pod["volumes"] = [{"name": n.source_volume, "secret": {
            "secretName": secret, "items": [{"key": k, "path": k} for k in keys]}}]
    template: JSON = {}
    if pod:
        template["pod"] = pod
    if files:
        template["connectContainer"] = {"volumeMounts": [{"name": n.source_volume, "mountPath": n.source_mount}]}
    return template


# ----------------------------------------------------------------- bidirectional symmetry


def check_symmetry(a: FlowPlan, b: FlowPlan) -> None:
    """The two directions of a bidirectional pair replicate alike: with the names derived from
    the aliases swapped, their connectors (classes, tasks, state, every property but the cluster
    connections, which differ per cluster by nature) and replication ConfigMaps are equal."""
    for part_a, part_b in zip(a.parts, b.parts, strict=True):
        na, nb = part_a.names, part_b.names
        mapping = {na.namespace: nb.namespace, na.source_configmap: nb.source_configmap,
                   na.target_configmap: nb.target_configmap}
        if _swap(_replication_view(part_a), mapping) != _replication_view(part_b):
            raise AssertionError(f"bidirectional pair {a.name} / {b.name} is not symmetric")


def _replication_view(part: PartPlan) -> list[JSON]:
    connection = ("source.cluster.", "target.cluster.", "producer.override.", "consumer.override.", "admin.override.")
    # The storage topics an identity flow excludes are those of every Connect cluster on its
    # target, which other flows of the stack add to: not a property of the pair.
    view: list[JSON] = [
        {k: ",".join(t for t in v.split(",") if not names.is_storage_topic(t)) if k == "topics.exclude" else v
         for k, v in o["data"].items()}
        for o in part.access if o["kind"] == "ConfigMap"
        and o["metadata"]["name"].startswith(part.names.replication_configmap)
        and o["metadata"]["name"] != part.names.metrics_configmap]  # the exporter's rules: not replication
    for c in part.connectors:
        # Which connector of a cluster pair copies the heartbeats is decided across the whole
        # stack (heartbeat_replicators), so the key may differ between the two directions.
        # The digest covers each direction's own ConfigMaps (their aliases differ by nature).
        config = {k: v for k, v in c.config.items()
                  if (not k.startswith(connection) or k.endswith(".cluster.alias"))
                  and k not in ("heartbeats.replication.enabled", CONFIGMAPS_DIGEST)}
        # An offsets request names one connector of one direction (infra/plan/offsets.py).
        spec = {k: v for k, v in c.manifest["spec"].items() if k not in ("listOffsets", "alterOffsets")}
        view.append({**spec, "config": config, "name": c.name})
    return view


def _swap(value: Any, mapping: dict[str, str]) -> Any:
    """Replace every occurrence of the mapping's keys, in one pass (so a -> b, b -> a swaps).
    Names, and names that start derived ones (`repl-a-b` in `repl-a-b-heartbeat`), but never a
    name inside a word: `source-a` is not in the user's key `offset-syncs-source-admin.retries`."""
    names_ = "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True))
    pattern = re.compile(f"(?<![a-z0-9-])(?:{names_})(?![a-z0-9])")

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        return pattern.sub(lambda m: mapping[m.group(0)], v) if isinstance(v, str) else v
    return walk(value)


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
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(n.role, n, flow),
            "rules": rules}


def role_binding(flow: Flow, n: FlowNames) -> RoleBinding:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": _meta(n.role_binding, n, flow),
            "subjects": [{"kind": "ServiceAccount", "name": n.service_account, "namespace": n.namespace}],
            "roleRef": {"kind": "Role", "name": n.role, "apiGroup": "rbac.authorization.k8s.io"}}


# ----------------------------------------------------------------- outputs


def _by_kind(parts: tuple[PartPlan, ...]) -> dict[str, list[str]]:
    return {kind.value: [name for p in parts for name in p.connector_names(kind)] for kind in ConnectorKind}


def flow_outputs(fp: FlowPlan) -> JSON:
    """The per-flow stack output contract (docs/outputs.md), from the plan's typed fields."""
    flow, parts, first = fp.flow, fp.parts, fp.parts[0].names
    internal = fp.internal_topics
    clusters = []
    # Only with a `kubernetes` section: outputs of stacks without one keep their bytes.
    placed = parts[0].kubernetes is not None
    for part in parts:
        n = part.names
        clusters.append({
            **({"kubernetesCluster": part.kubernetes} if placed else {}),
            "name": n.connect, "namespace": n.namespace, "serviceAccount": n.service_account,
            "restService": n.rest_service, "restUrl": n.rest_url,
            "connectors": _by_kind((part,)),
            "sources": [{"connector": n.source_connector(s.name), "topics": list(s.topics),
                         "topicsExclude": list(s.topics_exclude)} for s in part.spec.sources],
            "connectGroupId": n.group_id, "connectConfigStorage": n.config_storage_topic,
            "connectOffsetStorage": n.offset_storage_topic, "connectStatusStorage": n.status_storage_topic,
        })
    specs = [s for p in parts for s in p.spec.sources]
    single = specs[0] if len(specs) == 1 else None
    loop = fp.loop_headers
    return {
        # Where the flow's first Connect cluster runs (each one's in connectClusters).
        **({"kubernetesCluster": parts[0].kubernetes} if placed else {}),
        # The first Connect cluster: the only one unless the flow is split (see connectClusters).
        "namespace": first.namespace,
        "sourceAlias": flow.source,
        "targetAlias": flow.target,
        "connectCluster": first.connect,
        "connectServiceAccount": first.service_account,
        "connectRestService": first.rest_service,
        "connectRestUrl": first.rest_url,
        "connectors": _by_kind(parts),
        "connectClusters": clusters,
        "replicationPolicy": flow.policy.value,
        "replicationPolicyClass": fp.policy_class,
        "topicPrefix": fp.topic_prefix,
        # With several source connectors: every include; each one's excludes are in connectClusters.
        "topics": list(dict.fromkeys(t for s in specs for t in s.topics)),
        "topicsExclude": list(single.topics_exclude) if single else [],
        "bidirectional": ({"partner": fp.direction.partner, "loopHeader": loop[0], "filteredHeader": loop[1]}
                          if loop else None),
        "exactlyOnce": flow.exactlyOnce.value,
        "startFrom": flow.startFrom.value,
        "internalTopics": {
            "source": {"offsetSyncs": internal.source_offset_syncs, "heartbeats": internal.source_heartbeats},
            "target": {
                "checkpoints": internal.target_checkpoints,
                "heartbeats": internal.target_heartbeats,
                "connectGroupId": first.group_id,
                "connectConfigStorage": first.config_storage_topic,
                "connectOffsetStorage": first.offset_storage_topic,
                "connectStatusStorage": first.status_storage_topic,
            },
        },
        # The documents' failover: its wait, the procedures the policy allows, what consumers read after.
        **failover_outputs(fp.direction),
    }
