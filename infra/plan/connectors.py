"""The MirrorMaker 2 connectors of one Connect cluster: one kind each, one generator each.

Every connection value is a config-provider reference (infra/core/references.py) to a key the flow's
ConfigMaps and Secrets hold (infra/plan/connection.py), so a connector config holds no secret and
names no key nobody created.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from enum import Enum
from typing import Iterable, Mapping

from infra.core import names, references
from infra.core.manifests import ConfigValue, KafkaConnector, KafkaConnectorSpec, meta
from infra.core.names import FlowNames
from infra.core.releases import Release
from infra.plan import metrics
from infra.plan.connection import Connection, Entry, Store, referenced_versions
from infra.plan.offsets import OffsetsPlan, plan_offsets, request_for
from infra.topology.resolution import Direction, PartSpec, SourceSpec
from infra.topology.schema import (ConnectorState, ExactlyOnce, Flow, Monitoring, Operator, Predicate, StartFrom,
                                   Transform)

BYTE_ARRAY = "org.apache.kafka.connect.converters.ByteArrayConverter"
# Headers are handed over as bytes too: a KafkaConnect worker's default header converter
# (SimpleHeaderConverter) writes the bytes MirrorSourceTask copies as base64 text, so every
# replicated header value would arrive changed (seen on the real worker,
# tests/runtime/test_replication.py). Strimzi's KafkaMirrorMaker2 has the same default
# (KafkaMirrorMaker2Configuration.DEFAULTS, 0.48.0). ByteArrayConverter refuses any typed header,
# though, and InsertHeader and HeaderFrom write typed ones ("Invalid schema type for
# ByteArrayConverter: BOOLEAN", the loop filter on the real worker): a connector whose chain
# writes headers keeps Connect's default, and its copied headers arrive base64-encoded
# (docs/topology.md#headers).
HEADERS_AS_BYTES = {"header.converter": BYTE_ARRAY}
SMT_FILTER = "org.apache.kafka.connect.transforms.Filter"
SMT_INSERT_HEADER = "org.apache.kafka.connect.transforms.InsertHeader"
# Kafka's transforms that write typed header values (their `type` as written, without $Key/$Value).
HEADER_WRITERS = (SMT_INSERT_HEADER, "org.apache.kafka.connect.transforms.HeaderFrom")
PREDICATE_HAS_HEADER_KEY = "org.apache.kafka.connect.transforms.predicates.HasHeaderKey"

Config = dict[str, ConfigValue]


class ConnectorKind(str, Enum):
    source = "source"
    checkpoint = "checkpoint"
    heartbeat = "heartbeat"

    @property
    def connector_class(self) -> str:
        return CONNECTOR_CLASSES[self]


CONNECTOR_CLASSES = {
    ConnectorKind.source: "org.apache.kafka.connect.mirror.MirrorSourceConnector",
    ConnectorKind.checkpoint: "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
    ConnectorKind.heartbeat: "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
}


class Ownership(str, Enum):
    """Whether a key the program writes may come from a flow's `config` overrides."""
    owned = "owned"      # derived from the topology, or needed for the replication to be correct
    default = "default"  # a documented default a user may tune; the user's value wins


# The connection of a Kafka client: the keys that say which cluster it reaches and as whom.
CONNECTION_FAMILY = ("bootstrap.servers", "security.protocol", "sasl.", "ssl.")
# Every client prefix a connector's config can hold, with the client it configures. Each of
# these clients reaches a cluster of the topology with the connection the program builds (the
# cluster prefixes directly; MirrorMaker 2 layers `consumer.`, `source.consumer.`... over them,
# MirrorConnectorConfig.sourceConsumerConfig; the Connect framework layers `*.override.` over the
# worker's keys, which hold the program's KafkaConnect connection, Worker.baseProducerConfigs).
# So their connection families are owned on every connector, written or not: a key there would
# send a client to another cluster, or as another principal. The heartbeat connector's consumer
# and admin overrides are written with exactly-once only, yet owned always: a user key there
# would otherwise turn live the day exactly-once is enabled.
CLIENT_PREFIXES: dict[str, str] = {
    "source.cluster.": "MirrorMaker 2's clients of the source cluster",
    "target.cluster.": "MirrorMaker 2's clients of the target cluster",
    "source.consumer.": "MirrorMaker 2's source consumer",
    "source.producer.": "MirrorMaker 2's source producer",
    "source.admin.": "MirrorMaker 2's source admin client",
    "target.consumer.": "MirrorMaker 2's target consumer",
    "target.producer.": "MirrorMaker 2's target producer",
    "target.admin.": "MirrorMaker 2's target admin client",
    "consumer.": "MirrorMaker 2's consumers",
    "producer.": "MirrorMaker 2's producers",
    "admin.": "MirrorMaker 2's admin clients",
    "producer.override.": "the Connect framework's producer",
    "consumer.override.": "the Connect framework's offsets consumer",
    "admin.override.": "the Connect framework's admin client",
}
# What the flow decides for every connector it runs, whichever kind reads them: its filters, its
# policy, its pair of aliases, its start offsets and isolation (startFrom, exactlyOnce), and the
# class and tasks Strimzi sets from the KafkaConnector's spec.
# The policy's separator too, left at Kafka's `.`: remote topic names (`<alias>.<topic>`), the
# guardrails, the audit and the stack outputs all read names with it.
# The digest of the ConfigMap values a connector reads (`with_digest`) is the program's too.
CONFIGMAPS_DIGEST = "kafka-replication.configmaps.digest"
FLOW_KEYS = ("connector.class", "tasks.max", "topics", "topics.exclude", "groups", "groups.exclude",
             "replication.policy.class", "replication.policy.separator",
             "replication.policy.internal.topic.separator.enabled", "source.cluster.alias", "target.cluster.alias",
             "source.consumer.auto.offset.reset", "source.consumer.isolation.level", CONFIGMAPS_DIGEST,
             names.SOURCE_ACCESS_UID, names.REFERENCED_SECRETS)
# Connect worker settings (WorkerConfig, DistributedConfig) that a connector's config does not read:
# a key here would be accepted and do nothing. The worker's are set through the topology's typed
# fields (the rebalance delay: `connect.rebalanceDelaySeconds`) or by the program and the operator.
# Those a connector or its clients also read (session and heartbeat timeouts, metrics) are not
# listed. tests/conformance/test_mirror_defaults.py reads each release's jars for them.
WORKER_KEYS = (names.REBALANCE_DELAY, "group.id", "config.storage.topic", "config.storage.replication.factor",
               "offset.storage.topic", "offset.storage.partitions", "offset.storage.replication.factor",
               "status.storage.topic", "status.storage.partitions", "status.storage.replication.factor",
               "offset.flush.interval.ms", "offset.flush.timeout.ms", "exactly.once.source.support",
               "connect.protocol", "plugin.discovery", "plugin.path", "task.shutdown.graceful.timeout.ms",
               "worker.sync.timeout.ms", "worker.unsync.backoff.ms", "connector.client.config.override.policy",
               "topic.creation.enable", "config.providers")
# The classes that would decide a flow's topics and groups in place of its typed lists
# (MirrorSourceConfig/MirrorCheckpointConfig TOPIC_FILTER_CLASS, GROUP_FILTER_CLASS; the defaults,
# DefaultTopicFilter and DefaultGroupFilter, read `topics`/`groups` and their exclude lists).
FILTER_CLASSES = {"topic.filter.class": "topics", "group.filter.class": "groups"}
# MirrorMaker 2's own exclusions from the topic configuration sync
# (DefaultConfigPropertyFilter.CONFIG_PROPERTIES_EXCLUDE_DEFAULT: Kafka 3.8.0 to 4.1.0 the six
# without `log.`, 4.3.1 adds the two `log.message.timestamp.*.max.ms`). Writing
# `config.properties.exclude` replaces that default, so it is written whole, the union of every
# supported line's, before the flow's own: a flow excludes the same properties whichever Kafka
# its worker runs (tests/conformance/test_mirror_defaults.py reads each release's constant).
TOPIC_CONFIG_EXCLUDES = ("follower\\.replication\\.throttled\\.replicas", "leader\\.replication\\.throttled\\.replicas",
                         "message\\.timestamp\\.difference\\.max\\.ms", "log\\.message\\.timestamp\\.before\\.max\\.ms",
                         "log\\.message\\.timestamp\\.after\\.max\\.ms", "message\\.timestamp\\.type",
                         "unclean\\.leader\\.election\\.enable", "min\\.insync\\.replicas")
# The source connector's sync settings, each decided by a typed field of the flow.
TOPIC_SYNC_KEYS = {"sync.topic.configs.enabled": "syncTopicConfigs", "config.properties.exclude": "syncTopicConfigs",
                   "config.property.filter.class": "syncTopicConfigs",
                   "sync.topic.configs.interval.seconds": "syncTopicConfigs",
                   "sync.topic.acls.enabled": "syncTopicAcls", "sync.topic.acls.interval.seconds": "syncTopicAcls"}
# The checkpoint connector's: the group offsets sync, decided by `syncGroupOffsets`.
GROUP_SYNC_KEYS = {"sync.group.offsets.enabled": "syncGroupOffsets",
                   "sync.group.offsets.interval.seconds": "syncGroupOffsets"}

# Documented defaults of each kind, with their values: the only keys the program writes that
# `config` may replace (docs/topology.md#config-overrides). MirrorMaker 2 refreshes the topic and
# group lists every 10 s; remote topics take the target brokers' default replication factor (-1),
# not MirrorMaker 2's default of 2 (MirrorSourceConfig.REPLICATION_FACTOR_DEFAULT).
#
# The source connector's clients are tuned for a replication stream (docs/performance.md has the
# measures): the Connect framework's producer, which writes to the target, keeps Connect's
# ordering without its one request in flight (Worker.baseProducerConfigs: max.in.flight 1,
# idempotence off): idempotence keeps each partition's order with up to 5 requests in flight
# (KIP-679: brokers from 2.8 need no cluster permission for it), and batches of 256 KiB, which
# 10 ms of linger lets fill, carry many records per request; MirrorMaker 2's consumer returns up
# to 2000 records a poll, so that a task's loop (poll, convert, send) turns over less often.
# Exactly-once flows keep theirs: their transactional producer is idempotent anyway.
SOURCE_CLIENT_TUNING: dict[str, ConfigValue] = {
    "producer.override.enable.idempotence": True, "producer.override.max.in.flight.requests.per.connection": 5,
    "producer.override.linger.ms": 10, "producer.override.batch.size": 262144,
    "source.consumer.max.poll.records": 2000,
}
DEFAULTS: dict[str, dict[str, ConfigValue]] = {
    "source": {"refresh.topics.interval.seconds": 10, "replication.factor": -1, **SOURCE_CLIENT_TUNING},
    "checkpoint": {"refresh.groups.interval.seconds": 10},
    "heartbeat": {},
}


def connection_client(key: str) -> tuple[str, str] | None:
    """(client prefix, connection key) when `key` is a connection key of a client prefix."""
    # The longest prefix names the client: `consumer.override.ssl.x` is the framework's consumer.
    for prefix in sorted(CLIENT_PREFIXES, key=len, reverse=True):
        rest = key[len(prefix):]
        if key.startswith(prefix) and rest.startswith(CONNECTION_FAMILY):
            return prefix, rest
    return None


@dataclass(frozen=True)
class ProgramConfig:
    """A connector's configuration as the program writes it, before the user's `config`, and
    for each key whether it is owned or a default. Owned keys include those the flow decides
    while leaving Kafka's default in place (a startFrom of earliest writes no offset reset)."""
    kind: "ConnectorKind"
    config: Config
    ownership: dict[str, Ownership]

    @property
    def owned(self) -> frozenset[str]:
        return frozenset(k for k, o in self.ownership.items() if o is Ownership.owned)

    @property
    def defaults(self) -> frozenset[str]:
        return frozenset(k for k, o in self.ownership.items() if o is Ownership.default)

    def owns(self, key: str) -> bool:
        """Whether a user's `config` key would replace what the program decides."""
        return self.ownership.get(key) is Ownership.owned or connection_client(key) is not None

    def merged(self, user: Config) -> Config:
        """The program's configuration with the user's keys (validated: defaults or free keys)."""
        return {**self.config, **user}


def program_config(kind: "ConnectorKind", config: Config, decided: tuple[str, ...] = ()) -> ProgramConfig:
    """Every written key is owned unless it is one of the kind's documented defaults; `decided`
    are keys the flow owns without writing them."""
    ownership = {k: Ownership.default if k in DEFAULTS[kind.value] else Ownership.owned for k in config}
    for key in (*FLOW_KEYS, *decided):
        ownership.setdefault(key, Ownership.owned)
    return ProgramConfig(kind, config, ownership)


def with_metrics(w: "Wiring", kind: "ConnectorKind", config: Config, decided: tuple[str, ...] = ()) -> ProgramConfig:
    """`program_config` with what the stack's metrics need of the connector (infra/plan/metrics.py:
    the source alias on Kafka 3.x MirrorSource MBeans, Strimzi's reporter), owned written or not."""
    config = {**config, **metrics.connector_config(w.release, w.monitoring, kind.value)}
    return program_config(kind, config, (*decided, *metrics.connector_keys(w.release, kind.value)))


@dataclass(frozen=True)
class ConnectorPlan:
    kind: ConnectorKind
    manifest: KafkaConnector
    program: ProgramConfig | None = None  # the program's part of the config, with its ownership
    offsets: OffsetsPlan | None = None  # the flow's offsets request on this connector
    # Secrets whose replacement must restart the connector (names.SOURCE_ACCESS_UID): the
    # source's access material, which its clients read only when they start. The target's is the
    # operator's to act on: it rolls the Connect pods (`strimzi.io/auth-hash`).
    restart_with: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.manifest["metadata"]["name"]

    @property
    def runs(self) -> bool:
        """Whether the topology has it running (not paused or stopped)."""
        return self.manifest["spec"].get("state", ConnectorState.running.value) == ConnectorState.running.value

    @property
    def config(self) -> Config:
        return self.manifest["spec"]["config"]


@dataclass(frozen=True)
class Wiring:
    """What the connectors of one Connect cluster share: the references to the replication
    policy and the cluster aliases, and both cluster connections (steps 9-10)."""

    release: Release
    direction: Direction
    n: FlowNames
    source: Connection
    target: Connection
    operator: Operator
    monitoring: Monitoring  # what the stack's metrics need of each connector (with_metrics)

    @property
    def flow(self) -> Flow:
        return self.direction.flow

    def cfmap(self, obj: str, key: str) -> str:
        return references.cfmap(self.n.namespace, obj, key)

    @property
    def converters(self) -> Config:
        return {"key.converter": BYTE_ARRAY, "value.converter": BYTE_ARRAY, **HEADERS_AS_BYTES}

    @property
    def policy(self) -> Config:
        return {"replication.policy.class": self.cfmap(self.n.replication_configmap, "replication.policy.class")}

    @property
    def aliases(self) -> dict[str, str]:
        return {"source.cluster.alias": self.cfmap(self.n.source_configmap, "alias"),
                "target.cluster.alias": self.cfmap(self.n.target_configmap, "alias")}

    @property
    def both_clusters(self) -> Config:
        # Source and checkpoint connectors reach both clusters in the same way.
        aliases = self.aliases
        return {"source.cluster.alias": aliases["source.cluster.alias"], **self.source.properties("source.cluster."),
                "target.cluster.alias": aliases["target.cluster.alias"], **self.target.properties("target.cluster.")}

    def connector(self, kind: ConnectorKind, name: str, tasks: int, program: ProgramConfig, user: Config,
                  state: ConnectorState) -> ConnectorPlan:
        config = program.merged(user)
        spec: KafkaConnectorSpec = {"class": kind.connector_class, "tasksMax": tasks, "config": config}
        if self.operator.autoRestart and self.release.auto_restart:
            # Failed connectors and tasks are restarted by the operator (unlimited from 0.37).
            spec["autoRestart"] = {"enabled": True}
            if self.flow.maxRestarts is not None:
                spec["autoRestart"]["maxRestarts"] = self.flow.maxRestarts
        # Written even when running (Strimzi's default): a state changed by hand is then a
        # difference `pulumi preview --refresh` shows and `pulumi up --refresh` puts back; absent,
        # the refreshed inputs would drop it and the drift stay unseen (docs/operations.md).
        spec["state"] = state.value
        labels = {**names.flow_labels(self.flow.flow_name), names.CLUSTER_LABEL: self.n.connect}
        # A stopped or paused connector never reports Ready: nothing to wait for.
        ready = {names.PATCH_FORCE: "true",
                 **((readiness_annotations(self.operator, connector=True) or {})
                    if state is ConnectorState.running else {})}
        request = request_for(self.flow, name) if self.release.offset_management else None
        planned = None
        if request is not None:
            planned = plan_offsets(request, kind.value, name, self.n.namespace, self.flow.source,
                                   self.release.api_version, names.flow_labels(self.flow.flow_name))
            if "listOffsets" in planned.spec:
                spec["listOffsets"] = planned.spec["listOffsets"]
            if "alterOffsets" in planned.spec:
                spec["alterOffsets"] = planned.spec["alterOffsets"]
        return ConnectorPlan(kind, {"apiVersion": self.release.api_version, "kind": "KafkaConnector",
                                    "metadata": meta(name, self.n.namespace, labels, ready), "spec": spec}, program,
                             planned)


def with_digest(planned: ConnectorPlan, entries: Iterable[Entry]) -> ConnectorPlan:
    """The connector with a digest of the ConfigMap values its `${cfmap:...}` references read.

    The worker resolves references when the connector starts, and Strimzi sends a connector's
    configuration only when the spec differs from what the Connect REST API returns, unresolved
    (AbstractConnectOperator.maybeCreateOrUpdateConnector, Strimzi 1.2.0). A changed topic filter
    or policy in a ConfigMap would therefore never reach a running connector. With the digest in
    the spec, a changed value changes the spec: Strimzi sends it and Connect restarts the connector,
    which reads the new values. Secret values are left out: a digest of a password in a clear
    connector config could be checked against guesses (see docs/operations.md for rotations).
    """
    values = {(e.obj, e.key): e.value for e in entries if e.store is Store.CONFIGMAP}
    read = set()
    for value in planned.config.values():
        for ref in references.parse(value):
            place = ref.kubernetes_object
            if ref.provider == references.Provider.CONFIGMAP.value and place is not None:
                found = values.get((place[1], ref.key))
                assert isinstance(found, str), f"{ref}: a reference to a ConfigMap key the flow writes"
                read.add(f"{place[0]}/{place[1]}:{ref.key}={found}")
    if not read:
        return planned
    digest = hashlib.sha256("\n".join(sorted(read)).encode()).hexdigest()[:16]
    spec: KafkaConnectorSpec = {**planned.manifest["spec"], "config": {**planned.config, CONFIGMAPS_DIGEST: digest}}
    return replace(planned, manifest={**planned.manifest, "spec": spec})


def with_versions(planned: ConnectorPlan, versions: Mapping[tuple[str, str], str]) -> ConnectorPlan:
    """The connector with the versions of the team's Secrets its `${secret:...}` references read
    (names.REFERENCED_SECRETS), so that a rotation declared in the topology restarts it."""
    read = [(ref.kubernetes_object[1], ref.key) for value in planned.config.values() for ref in references.parse(value)
            if ref.provider == references.Provider.SECRET.value and ref.kubernetes_object is not None]
    value = referenced_versions(read, versions)
    if value is None:
        return planned
    spec: KafkaConnectorSpec = {**planned.manifest["spec"], "config": {**planned.config, names.REFERENCED_SECRETS: value}}
    return replace(planned, manifest={**planned.manifest, "spec": spec})


# What a running KafkaConnector's `pulumi up` waits for beyond Strimzi's Ready, which Strimzi
# reports unless the connector or a task FAILED (an UNASSIGNED connector, or one whose tasks have
# not started, is Ready too): the connector's own state, as Connect reports it in the status.
CONNECTOR_RUNNING = "jsonpath={.status.connectorStatus.connector.state}=RUNNING"


def readiness_annotations(operator: Operator, connector: bool = False) -> dict[str, str] | None:
    """`pulumi up` waits for Strimzi's `Ready` condition (pulumi-kubernetes' `pulumi.com/waitFor`,
    4.18+; a JSON array is every condition in it) and, for a running connector, for Connect to
    report it RUNNING (CONNECTOR_RUNNING), up to the stack's timeout; none when the stack says not
    to wait. Tasks are not waited for: a connector may rightly have none yet (no topic or group
    matches), and a failed one makes Strimzi's Ready false."""
    if not operator.readiness.wait:
        return None
    wait = json.dumps(["condition=Ready", CONNECTOR_RUNNING]) if connector else "condition=Ready"
    return {names.WAIT_FOR: wait, names.TIMEOUT_SECONDS: str(operator.readiness.timeoutSeconds)}


def topics_configmap(n: FlowNames, spec: SourceSpec) -> str:
    """The ConfigMap of a source connector's topic filter (its own with several sources)."""
    return n.instance_configmap(spec.name) if spec.name else n.replication_configmap


def connectors(w: Wiring, part: PartSpec, heartbeat: Connection | None,
               heartbeat_copier: str) -> tuple[ConnectorPlan, ...]:
    """The connectors of one Connect cluster, sources first (in the order of the flow)."""
    planned = [source_connector(w, spec, heartbeat_copier) for spec in part.sources]
    if w.flow.with_checkpoints:
        planned.append(checkpoint_connector(w, part))
    if heartbeat is not None:
        planned.append(heartbeat_connector(w, heartbeat))
    return tuple(planned)


def source_connector(w: Wiring, spec: SourceSpec, heartbeat_copier: str) -> ConnectorPlan:
    program = source_config(w, spec, heartbeat_copier)
    return w.connector(ConnectorKind.source, w.n.source_connector(spec.name), spec.tasks, program, spec.config,
                       spec.state)


def source_config(w: Wiring, spec: SourceSpec, heartbeat_copier: str) -> ProgramConfig:
    """A MirrorSourceConnector's configuration before the user's `config`."""
    flow, n, release = w.flow, w.n, w.release
    topics: Config = {"topics": w.cfmap(topics_configmap(n, spec), "topics")}
    if spec.topics_exclude:
        topics["topics.exclude"] = w.cfmap(topics_configmap(n, spec), "topics.exclude")
    config: Config = {**source_converters(spec), **DEFAULTS["source"], **topics, **w.policy, **w.both_clusters}
    if release.heartbeats_replication_key and n.source_connector(spec.name) != heartbeat_copier:
        config["heartbeats.replication.enabled"] = False
    config.update(topic_sync(flow))
    if spec.state is not ConnectorState.running and not release.creates_connectors_in_state:
        # Before Strimzi 1.2.0 the operator starts a connector it creates and stops or pauses it
        # only once it reads RUNNING (Release.creates_connectors_in_state): a stopped source
        # connector new to its worker would copy from the earliest offsets meanwhile, a failback's
        # history or a split's topics before their offsets alter. With `none` a partition that has
        # no committed offset is not read: MirrorSourceTask.poll logs the consumer's
        # NoOffsetForPartitionException and returns no record. Set running, the flow's own start
        # applies again, after any offsets alter.
        config["source.consumer.auto.offset.reset"] = "none"
    elif flow.startFrom is StartFrom.latest:
        config["source.consumer.auto.offset.reset"] = "latest"
    if flow.exactlyOnce is not ExactlyOnce.disabled:
        # Records of aborted transactions must not be replicated as if committed.
        config["source.consumer.isolation.level"] = "read_committed"
    transforms, predicates = list(spec.transforms), list(spec.predicates)
    if w.direction.partner:
        # Bidirectional prefixless pair: no checkpoints, so no offset syncs; and the loop
        # filter first, so records that came from the target are dropped before any transform.
        if release.emit_offset_syncs_key:
            config["emit.offset-syncs.enabled"] = False
        loop_transforms, loop_predicates = loop_filter(w.aliases)
        transforms, predicates = loop_transforms + transforms, loop_predicates + predicates
    config.update(header_converter(transforms))
    config.update(smt_config(transforms, predicates))
    # Decided even where Kafka's default is left: the typed SMT and converter fields; which
    # connector of a cluster pair copies heartbeats (the copier's choice is Kafka's default, and
    # the audit expects its copies); offset syncs in a pair (the loop filter) and wherever the
    # checkpoint connector reads them.
    decided = ["header.converter", "transforms", "predicates", *TOPIC_SYNC_KEYS]
    if release.heartbeats_replication_key:
        decided.append("heartbeats.replication.enabled")
    if w.direction.partner or (flow.with_checkpoints and release.emit_offset_syncs_key):
        decided.append("emit.offset-syncs.enabled")
    return with_metrics(w, ConnectorKind.source, config, tuple(decided))


def topic_sync(flow: Flow) -> Config:
    """The source connector's topic configuration and ACL sync, written out whatever Kafka's
    defaults: `config.properties.exclude` MirrorMaker 2's exclusions and the flow's."""
    configs, acls = flow.syncTopicConfigs, flow.syncTopicAcls
    out: Config = {"sync.topic.configs.enabled": configs.enabled,
                   "config.properties.exclude": ",".join((*TOPIC_CONFIG_EXCLUDES, *configs.exclude)),
                   "sync.topic.acls.enabled": acls.enabled}
    if configs.intervalSeconds:
        out["sync.topic.configs.interval.seconds"] = configs.intervalSeconds
    if acls.intervalSeconds:
        out["sync.topic.acls.interval.seconds"] = acls.intervalSeconds
    return out


def checkpoint_connector(w: Wiring, part: PartSpec) -> ConnectorPlan:
    flow = w.flow
    return w.connector(ConnectorKind.checkpoint, w.n.checkpoint_connector, flow.tasksMax.checkpoint,
                       checkpoint_config(w, part), flow.config.checkpoint, flow.state.checkpoint)


def checkpoint_config(w: Wiring, part: PartSpec) -> ProgramConfig:
    # The checkpoint connector covers every source connector's topics (the documents join the
    # instances' ConfigMap keys with commas). With several sources their excludes are not
    # joined: groups are only checkpointed for topics that have offset syncs, which excluded
    # topics never get.
    flow, n = w.flow, w.n
    repl = n.replication_configmap
    topics: Config = {"topics": ",".join(w.cfmap(topics_configmap(n, spec), "topics") for spec in part.sources)}
    if len(part.sources) == 1 and part.sources[0].topics_exclude:
        topics["topics.exclude"] = w.cfmap(topics_configmap(n, part.sources[0]), "topics.exclude")
    groups: Config = {"groups": w.cfmap(repl, "groups")}
    if flow.groupsExclude:
        groups["groups.exclude"] = w.cfmap(repl, "groups.exclude")
    sync: Config = {"sync.group.offsets.enabled": flow.syncGroupOffsets.enabled}
    if flow.syncGroupOffsets.intervalSeconds:
        sync["sync.group.offsets.interval.seconds"] = flow.syncGroupOffsets.intervalSeconds
    config = {**w.converters, **DEFAULTS["checkpoint"], **sync, **topics, **groups,
              **w.policy, **w.both_clusters}
    # The interval has one home, `syncGroupOffsets.intervalSeconds`, even where Kafka's default stands.
    return with_metrics(w, ConnectorKind.checkpoint, config, ("sync.group.offsets.interval.seconds",))


def heartbeat_connector(w: Wiring, heartbeat: Connection) -> ConnectorPlan:
    flow = w.flow
    return w.connector(ConnectorKind.heartbeat, w.n.heartbeat_connector, flow.tasksMax.heartbeat,
                       heartbeat_config(w, heartbeat), flow.config.heartbeat, flow.state.heartbeat)


def heartbeat_config(w: Wiring, heartbeat: Connection) -> ProgramConfig:
    # Step 11: heartbeats are produced into the SOURCE cluster, so the source connection stands
    # in for the "target" (MirrorMaker 2's own admin client) and, in the worker's
    # representation, for the Connect framework's producer (docs/heartbeats.md). With
    # exactly-once the framework also gives the task an offsets consumer and an admin client,
    # built from the worker's keys as well, for the producer's cluster.
    flow = w.flow
    clients = ["producer"] + (["consumer", "admin"] if flow.exactlyOnce is not ExactlyOnce.disabled else [])
    config: Config = {
        **w.converters, **w.policy, **w.aliases, **w.source.properties("target.cluster."),
        **{k: v for c in clients for k, v in heartbeat.properties(f"{c}.override.").items()},
    }
    return with_metrics(w, ConnectorKind.heartbeat, config)


def source_converters(spec: SourceSpec) -> Config:
    """MirrorSourceConnector hands records over as bytes: ByteArrayConverter unless the SMT
    chain produces structured values (the documents' JsonConverter example)."""
    config: Config = {}
    for side in ("key", "value"):
        converter = getattr(spec.converters, side, None) if spec.converters else None
        config[f"{side}.converter"] = converter.type if converter else BYTE_ARRAY
        for key, value in (converter.config if converter else {}).items():
            config[f"{side}.converter.{key}"] = value
    return config


def header_converter(transforms: list[Transform]) -> Config:
    """ByteArrayConverter for headers, unless a transform of the chain writes typed headers."""
    writes_headers = any(t.type.split("$")[0] in HEADER_WRITERS for t in transforms)
    return {} if writes_headers else dict(HEADERS_AS_BYTES)


def loop_filter(aliases: dict[str, str]) -> tuple[list[Transform], list[Predicate]]:
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


def smt_config(transforms: list[Transform], predicates: list[Predicate]) -> Config:
    """A typed SMT chain as Kafka Connect properties (`transforms.<name>.*`, `predicates.<name>.*`)."""
    config: Config = {}
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
