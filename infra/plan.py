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
from infra.connection import (Connection, Entry, SecretValue, Store, docker_config_json, heartbeat_client,
                              source_connection, target_connection, target_objects)
from infra.errors import Problem
from infra.outputs import OUTPUTS_VERSION
from infra.resolution import Direction, Model, PartSpec, SourceSpec
from infra.schema import ConnectorState, ExactlyOnce, Flavour, Flow, Policy, Predicate, StartFrom, Transform
from infra.names import FlowNames
from infra.releases import V1, Release
from infra.topics import DEFAULT_GROUPS_EXCLUDE

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
SMT_FILTER = "org.apache.kafka.connect.transforms.Filter"
SMT_INSERT_HEADER = "org.apache.kafka.connect.transforms.InsertHeader"
PREDICATE_HAS_HEADER_KEY = "org.apache.kafka.connect.transforms.predicates.HasHeaderKey"
AUTH_TYPES = {"PLAIN": "plain", "SCRAM-SHA-256": "scram-sha-256", "SCRAM-SHA-512": "scram-sha-512"}
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
REFERENCE = re.compile(r"\$\{(cfmap|secret):([^/}]+)/([^:}]+):([^}]+)\}")


@dataclass(frozen=True)
class PartPlan:
    """One Connect cluster of a flow (the only one unless the flow is split), in its namespace."""
    spec: PartSpec
    names: FlowNames
    namespace: dict
    access: tuple[dict, ...]      # ConfigMaps and Secrets: clusters, replication, registry
    connect: tuple[dict, ...]     # ResourceQuota, KafkaConnect, Role, RoleBinding
    connectors: tuple[dict, ...]  # KafkaConnectors

    @property
    def objects(self) -> tuple[dict, ...]:
        return (self.namespace, *self.access, *self.connect, *self.connectors)


@dataclass(frozen=True)
class FlowPlan:
    direction: Direction
    parts: tuple[PartPlan, ...]
    outputs: dict

    @property
    def name(self) -> str:
        return self.direction.name

    @property
    def flow(self) -> Flow:
        return self.direction.flow

    @property
    def objects(self) -> tuple[dict, ...]:
        return tuple(o for p in self.parts for o in p.objects)


@dataclass(frozen=True)
class StackPlan:
    release: Release
    flows: tuple[FlowPlan, ...]

    @property
    def flavour(self) -> Flavour:
        return self.release.flavour

    @property
    def objects(self) -> tuple[dict, ...]:
        return tuple(o for f in self.flows for o in f.objects)

    def name_problems(self, more: tuple[dict, ...] = ()) -> list[Problem]:
        """Every object name we write is a name its kind accepts and unique per namespace and
        kind (a user-chosen name, such as the image pull Secret's, could take one of ours)."""
        seen: dict[tuple, str] = {}
        problems = []
        for obj in (*self.objects, *more):
            meta = obj["metadata"]
            key = (meta.get("namespace"), obj["kind"], meta["name"])
            label = obj["kind"] in ("Namespace", "Service")
            if not (DNS_LABEL if label else DNS_SUBDOMAIN).fullmatch(meta["name"]) or len(meta["name"]) > (
                    63 if label else 253):
                problems.append(Problem(f"{obj['kind']} {meta['name']!r}", "name", meta["name"],
                                        "a Kubernetes name (lowercase letters, digits, '-'; at most 63 characters "
                                        "for namespaces and services)"))
            if key in seen:
                problems.append(Problem(f"namespace {key[0]}", f"{obj['kind']} name", meta["name"],
                                        f"a name of its own: the program also writes {obj['kind']} {meta['name']!r} "
                                        f"there ({seen[key]})"))
            seen.setdefault(key, meta.get("labels", {}).get(names.FLOW_LABEL, "the audit"))
        return problems

    def outputs(self) -> dict:
        return {"outputsVersion": OUTPUTS_VERSION, "operatorFlavour": self.flavour.value, "operator": self.release.outputs(),
                "flows": {f.name: f.outputs for f in self.flows}}

    def secret_values(self) -> list[SecretValue]:
        """Every value this stack needs from Pulumi secret config, in plan order."""
        found = []
        for obj in self.objects:
            for section in ("data", "stringData"):
                found += [v for v in obj.get(section, {}).values() if isinstance(v, SecretValue)]
        return found

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
    chosen: dict[tuple[str, str], tuple] = {}
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
    return FlowPlan(d, parts, flow_outputs(model.operator.release, d, parts))


def plan_part(model: Model, d: Direction, part: PartSpec, heartbeat_copiers: dict[tuple[str, str], str]) -> PartPlan:
    topo, flow = model, d.flow
    n = d.names(part)
    source, target = topo.clusters[flow.source], topo.clusters[flow.target]
    source_conn = source_connection(flow.source, source, n)
    target_conn = target_connection(flow.target, target, n, topo.operator.target_connection)
    heartbeat_conn = (heartbeat_client(flow.source, source, target, n, topo.operator.release.worker_file)
                      if part.heartbeat else None)
    entries = [
        Entry(Store.CONFIGMAP, n.source_configmap, "alias", flow.source),
        *source_conn.entries,
        *(heartbeat_conn.entries if heartbeat_conn else ()),
        *target_objects(flow.target, target, n),
        *target_conn.entries,
        *replication_entries(flow, n, part),
    ]
    connectors = connector_manifests(model, d, n, part, source_conn, target_conn, heartbeat_conn,
                                     heartbeat_copiers[(flow.source, flow.target)])
    access = [*stored_objects(entries, n, flow)]
    pull = topo.operator.imagePullSecret
    if pull:
        access.append(_manifest("v1", "Secret", pull.name, n, flow, type="kubernetes.io/dockerconfigjson",
                                stringData={".dockerconfigjson": SecretValue(
                                    (names.REGISTRY_PASSWORD_KEY,),
                                    lambda password: docker_config_json(pull.server, pull.username, password))}))
    connect = (
        *([resource_quota(flow, n, part)] if part.quota else []),
        kafka_connect(topo, flow, n, part, entries),
        role(flow, n, connectors),
        role_binding(flow, n),
    )
    return PartPlan(part, n, namespace(flow, n), tuple(access), connect, tuple(connectors))


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


def topics_configmap(n: FlowNames, spec: SourceSpec) -> str:
    return n.instance_configmap(spec.name) if spec.name else n.replication_configmap


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
    files: dict[str, set[str]] = defaultdict(set)
    for e in entries:
        if e.mounted:
            files[e.obj].add(e.key)
    return {obj: sorted(keys) for obj, keys in sorted(files.items())}


# ----------------------------------------------------------------- KafkaConnect


def resource_quota(flow: Flow, n: FlowNames, part: PartSpec) -> dict:
    """Namespaced limits for one Connect cluster (the documents' small/high workload split)."""
    return _manifest("v1", "ResourceQuota", n.resource_quota, n, flow,
                     spec={"hard": {k: str(v) for k, v in sorted(part.quota.hard.items())}})


def kafka_connect(topo: Model, flow: Flow, n: FlowNames, part: PartSpec, entries: list[Entry]) -> dict:
    """Step 7: a Connect cluster dedicated to the flow, depending on the TARGET Kafka."""
    release = topo.operator.release
    settings = part.connect
    target = topo.clusters[flow.target].security
    spec: dict = {"version": settings.version or release.default_connect_version}
    spec["replicas"] = settings.replicas
    if settings.image:
        spec["image"] = settings.image
    spec["bootstrapServers"] = topo.clusters[flow.target].bootstrapServers
    internal = {"group.id": n.group_id, "offset.storage.topic": n.offset_storage_topic,
                "config.storage.topic": n.config_storage_topic, "status.storage.topic": n.status_storage_topic}
    v1 = release.api_version == V1
    if v1:
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
    config = {} if v1 else dict(internal)
    if flow.exactlyOnce is not ExactlyOnce.disabled:
        config["exactly.once.source.support"] = flow.exactlyOnce.value
    config.update({"config.storage.replication.factor": -1, "offset.storage.replication.factor": -1,
                   "status.storage.replication.factor": -1, **CONFIG_PROVIDERS})
    spec["config"] = config
    return _manifest(release.api_version, "KafkaConnect", n.connect, n, flow,
                     annotations={names.USE_CONNECTOR_RESOURCES: "true"}, spec=spec)


def connect_template(topo: Model, n: FlowNames, entries: list[Entry]) -> dict:
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


def connector_manifests(topo: Model, d: Direction, n: FlowNames, part: PartSpec, source: Connection,
                        target: Connection, heartbeat: Connection | None, heartbeat_copier: str) -> list[dict]:
    flow = d.flow
    release = topo.operator.release
    ns = n.namespace
    repl = n.replication_configmap

    def cfmap(obj: str, key: str) -> str:
        return f"${{cfmap:{ns}/{obj}:{key}}}"

    converters = {"key.converter": BYTE_ARRAY, "value.converter": BYTE_ARRAY}
    policy = {"replication.policy.class": cfmap(repl, "replication.policy.class")}
    aliases = {"source.cluster.alias": cfmap(n.source_configmap, "alias"),
               "target.cluster.alias": cfmap(n.target_configmap, "alias")}

    # Source and checkpoint connectors reach both clusters in the same way (steps 9-10).
    both_clusters = {
        "source.cluster.alias": aliases["source.cluster.alias"], **source.properties("source.cluster."),
        "target.cluster.alias": aliases["target.cluster.alias"], **target.properties("target.cluster."),
    }
    manifests = []
    for spec in part.sources:
        topics = {"topics": cfmap(topics_configmap(n, spec), "topics")}
        if spec.topics_exclude:
            topics["topics.exclude"] = cfmap(topics_configmap(n, spec), "topics.exclude")
        # Remote topics with the target brokers' default replication factor, not MirrorMaker
        # 2's default of 2 (MirrorSourceConfig.REPLICATION_FACTOR_DEFAULT); `config` may set it.
        source_config = {**source_converters(spec), "refresh.topics.interval.seconds": 10,
                         "replication.factor": -1, **topics, **policy, **both_clusters}
        if release.heartbeats_replication_key and n.source_connector(spec.name) != heartbeat_copier:
            source_config["heartbeats.replication.enabled"] = False
        if flow.startFrom is StartFrom.latest:
            source_config["source.consumer.auto.offset.reset"] = "latest"
        if flow.exactlyOnce is not ExactlyOnce.disabled:
            # Records of aborted transactions must not be replicated as if committed.
            source_config["source.consumer.isolation.level"] = "read_committed"
        chain = list(spec.transforms), list(spec.predicates)
        if d.partner:
            # Bidirectional prefixless pair: no checkpoints, so no offset syncs; and the loop
            # filter first, so records that came from the target are dropped before any transform.
            if release.emit_offset_syncs_key:
                source_config["emit.offset-syncs.enabled"] = False
            loop_transforms, loop_predicates = loop_filter(aliases)
            chain = loop_transforms + chain[0], loop_predicates + chain[1]
        source_config.update(smt_config(*chain))
        manifests.append(connector(topo, flow, n, n.source_connector(spec.name), "source", spec.tasks,
                                   {**source_config, **spec.config}, spec.state))
    if flow.with_checkpoints:
        # The checkpoint connector covers every source connector's topics (the documents join
        # the instances' ConfigMap keys with commas). With several sources their excludes are
        # not joined: groups are only checkpointed for topics that have offset syncs, which
        # excluded topics never get.
        topics = {"topics": ",".join(cfmap(topics_configmap(n, spec), "topics") for spec in part.sources)}
        if len(part.sources) == 1 and part.sources[0].topics_exclude:
            topics["topics.exclude"] = cfmap(topics_configmap(n, part.sources[0]), "topics.exclude")
        groups = {"groups": cfmap(repl, "groups")}
        if flow.groupsExclude:
            groups["groups.exclude"] = cfmap(repl, "groups.exclude")
        sync = {"sync.group.offsets.enabled": flow.syncGroupOffsets.enabled}
        if flow.syncGroupOffsets.intervalSeconds:
            sync["sync.group.offsets.interval.seconds"] = flow.syncGroupOffsets.intervalSeconds
        checkpoint_config = {**converters, "refresh.groups.interval.seconds": 10, **sync, **topics, **groups,
                             **policy, **both_clusters, **flow.config.checkpoint}
        manifests.append(connector(topo, flow, n, n.checkpoint_connector, "checkpoint",
                                   flow.tasksMax.checkpoint, checkpoint_config, flow.state.checkpoint))
    if heartbeat is not None:
        # Step 11: heartbeats are produced into the SOURCE cluster, so the source connection
        # stands in for the "target" (MirrorMaker 2's own admin client) and, in the worker's
        # representation, for the Connect framework's producer (docs/heartbeats.md). With
        # exactly-once the framework also gives the task an offsets consumer and an admin
        # client, built from the worker's keys as well, for the producer's cluster.
        clients = ["producer"] + (["consumer", "admin"] if flow.exactlyOnce is not ExactlyOnce.disabled else [])
        heartbeat_config = {
            **converters, **policy, **aliases, **source.properties("target.cluster."),
            **{k: v for c in clients for k, v in heartbeat.properties(f"{c}.override.").items()},
            **flow.config.heartbeat,
        }
        manifests.append(connector(topo, flow, n, n.heartbeat_connector, "heartbeat",
                                   flow.tasksMax.heartbeat, heartbeat_config, flow.state.heartbeat))
    return manifests


def source_converters(spec: SourceSpec) -> dict:
    """MirrorSourceConnector hands records over as bytes: ByteArrayConverter unless the SMT
    chain produces structured values (the documents' JsonConverter example)."""
    config = {}
    for side in ("key", "value"):
        converter = getattr(spec.converters, side, None) if spec.converters else None
        config[f"{side}.converter"] = converter.type if converter else BYTE_ARRAY
        for key, value in (converter.config if converter else {}).items():
            config[f"{side}.converter.{key}"] = value
    return config


def loop_filter(aliases: dict) -> tuple[list[Transform], list[Predicate]]:
    """The documents' loop filter: drop records that carry the target's replicated-from header,
    mark the others with the source's. Aliases come through the ConfigMaps, as documented."""
    source_alias = aliases["source.cluster.alias"]
    target_alias = aliases["target.cluster.alias"]
    # Built, not validated: these are the program's own references, which user settings may
    # not carry (schema.ConfigValue).
    transforms = [
        Transform.model_construct(name=names.LOOP_FILTER_TRANSFORM, type=SMT_FILTER, predicate=names.LOOP_PREDICATE,
                                  config={}, negate=False),
        Transform.model_construct(name=names.LOOP_HEADER_TRANSFORM, type=SMT_INSERT_HEADER, predicate=None,
                                  negate=False,
                                  config={"header": names.loop_header(source_alias), "value.literal": "true"}),
    ]
    predicates = [Predicate.model_construct(name=names.LOOP_PREDICATE, type=PREDICATE_HAS_HEADER_KEY,
                                            config={"name": names.loop_header(target_alias)})]
    return transforms, predicates


def smt_config(transforms: list[Transform], predicates: list[Predicate]) -> dict:
    """A typed SMT chain as Kafka Connect properties (`transforms.<name>.*`, `predicates.<name>.*`)."""
    config: dict = {}
    if transforms:
        config["transforms"] = ",".join(t.name for t in transforms)
    for t in transforms:
        config[f"transforms.{t.name}.type"] = t.type
        config.update({f"transforms.{t.name}.{k}": v for k, v in t.config.items()})
        if t.predicate:
            config[f"transforms.{t.name}.predicate"] = t.predicate
        if t.negate:
            config[f"transforms.{t.name}.negate"] = True
    if predicates:
        config["predicates"] = ",".join(p.name for p in predicates)
    for p in predicates:
        config[f"predicates.{p.name}.type"] = p.type
        config.update({f"predicates.{p.name}.{k}": v for k, v in p.config.items()})
    return config


def connector(topo: Model, flow: Flow, n: FlowNames, name: str, kind: str, tasks: int, config: dict,
              state: ConnectorState) -> dict:
    spec = {"class": CONNECTOR_CLASSES[kind], "tasksMax": tasks, "config": config}
    if state is not ConnectorState.running:  # absent means running
        spec["state"] = state.value
    return _manifest(topo.operator.release.api_version, "KafkaConnector", name, n, flow,
                     labels={names.CLUSTER_LABEL: n.connect}, spec=spec)


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


def _replication_view(part: PartPlan) -> list:
    connection = ("source.cluster.", "target.cluster.", "producer.override.", "consumer.override.", "admin.override.")
    # The storage topics an identity flow excludes are those of every Connect cluster on its
    # target, which other flows of the stack add to: not a property of the pair.
    view = [{k: ",".join(t for t in v.split(",") if not names.is_storage_topic(t)) if k == "topics.exclude" else v
             for k, v in o["data"].items()} for o in part.access if o["kind"] == "ConfigMap"
            and o["metadata"]["name"].startswith(part.names.replication_configmap)]
    for c in part.connectors:
        # Which connector of a cluster pair copies the heartbeats is decided across the whole
        # stack (heartbeat_replicators), so the key may differ between the two directions.
        config = {k: v for k, v in c["spec"]["config"].items()
                  if (not k.startswith(connection) or k.endswith(".cluster.alias"))
                  and k != "heartbeats.replication.enabled"}
        view.append({**c["spec"], "config": config, "name": c["metadata"]["name"]})
    return view


def _swap(value, mapping: dict):
    """Replace every occurrence of the mapping's keys, in one pass (so a -> b, b -> a swaps)."""
    pattern = re.compile("|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True)))

    def walk(v):
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        return pattern.sub(lambda m: mapping[m.group(0)], v) if isinstance(v, str) else v
    return walk(value)


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


def flow_outputs(release: Release, d: Direction, parts: tuple[PartPlan, ...]) -> dict:
    """The per-flow stack output contract (docs/outputs.md)."""
    flow = d.flow
    prefixes = flow.policy is Policy.default
    first = parts[0].names

    def kinds(connectors) -> dict:
        by_kind = {"source": [], "checkpoint": [], "heartbeat": []}
        for c in connectors:
            kind = next(k for k, cls in CONNECTOR_CLASSES.items() if cls == c["spec"]["class"])
            by_kind[kind].append(c["metadata"]["name"])
        return by_kind

    clusters = []
    for part in parts:
        n = part.names
        clusters.append({
            "name": n.connect, "namespace": n.namespace, "serviceAccount": n.service_account,
            "restService": n.rest_service, "restUrl": n.rest_url,
            "connectors": kinds(part.connectors),
            "sources": [{"connector": n.source_connector(s.name), "topics": list(s.topics),
                         "topicsExclude": list(s.topics_exclude)} for s in part.spec.sources],
            "connectGroupId": n.group_id, "connectConfigStorage": n.config_storage_topic,
            "connectOffsetStorage": n.offset_storage_topic, "connectStatusStorage": n.status_storage_topic,
        })
    specs = [s for p in parts for s in p.spec.sources]
    single = specs[0] if len(specs) == 1 else None
    return {
        # The first Connect cluster: the only one unless the flow is split (see connectClusters).
        "namespace": first.namespace,
        "sourceAlias": flow.source,
        "targetAlias": flow.target,
        "connectCluster": first.connect,
        "connectServiceAccount": first.service_account,
        "connectRestService": first.rest_service,
        "connectRestUrl": first.rest_url,
        "connectors": kinds(c for p in parts for c in p.connectors),
        "connectClusters": clusters,
        "replicationPolicy": flow.policy.value,
        "replicationPolicyClass": POLICY_CLASSES[flow.policy],
        "topicPrefix": names.topic_prefix(flow.source, prefixes),
        # With several source connectors: every include; each one's excludes are in connectClusters.
        "topics": list(dict.fromkeys(t for s in specs for t in s.topics)),
        "topicsExclude": list(single.topics_exclude) if single else [],
        "bidirectional": ({"partner": d.partner, "loopHeader": names.loop_header(flow.source),
                           "filteredHeader": names.loop_header(flow.target)} if d.partner else None),
        "exactlyOnce": flow.exactlyOnce.value,
        "startFrom": flow.startFrom.value,
        "internalTopics": {
            "source": {
                # Bidirectional pairs switch offset syncs off where Kafka has the key (3.9+).
                "offsetSyncs": None if d.partner and release.emit_offset_syncs_key else first.offset_syncs_topic,
                "heartbeats": names.HEARTBEATS_TOPIC if flow.heartbeats else None,
            },
            "target": {
                "checkpoints": first.checkpoints_topic if flow.with_checkpoints else None,
                # Both policies prefix replicated heartbeats (IdentityReplicationPolicy defers
                # to the default for heartbeats topics).
                "heartbeats": (names.replicated_topic(flow.source, names.HEARTBEATS_TOPIC)
                               if flow.heartbeats else None),
                "connectGroupId": first.group_id,
                "connectConfigStorage": first.config_storage_topic,
                "connectOffsetStorage": first.offset_storage_topic,
                "connectStatusStorage": first.status_storage_topic,
            },
        },
    }
