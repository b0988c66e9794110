"""What a Connect cluster exposes to Prometheus, per operator release: the Prometheus JMX
exporter's rules (the ConfigMap `spec.metricsConfig` names), or Strimzi's metrics reporter, and
what the MirrorMaker 2 connectors need for either. Pure: the plan (infra/plan/stack.py) places the
objects, the rules (infra/checks/rules/) run `problems`.

Every series the rules write carries two constant labels, `flow` (the flow as deployed) and
`connect_cluster` (the KafkaConnect), written into each rule: the rules are generated per
Connect cluster, which is why they live in a ConfigMap of its own namespace. Names are
lowercased and '-' becomes '_', as the exporter does with `lowercaseOutputName`.

The MBeans, from Kafka's sources:
- `kafka.connect.mirror:type=MirrorSourceConnector,[source=S,]target=T,topic=X,partition=P`
  (connect/mirror/.../MirrorSourceMetrics.java): 3.7.0 to 3.9.x add `source` only with
  `add.source.alias.to.metrics=true` (MirrorSourceConfig.ADD_SOURCE_ALIAS_TO_METRICS, an Apache
  key, "Deprecated", default false, at 3.8.0 and 3.9.0); from 4.0 `source` is always there and
  the key is gone. `topic` is the REMOTE topic (`replicationPolicy.formatRemoteTopic`).
- `kafka.connect.mirror:type=MirrorCheckpointConnector,source=S,target=T,group=G,topic=X,
  partition=P` (MirrorCheckpointMetrics.java, the same tags at 3.8.0 and on 4.x).
- Connect's own: `kafka.connect:type=connector-metrics,connector=C` (`status`),
  `connector-task-metrics,connector=C,task=N` (`status` and numbers), `source-task-metrics`,
  `connect-worker-metrics` (ConnectMetricsRegistry.java).
- Connect's rebalances and task errors: `connect-worker-rebalance-metrics` (completed rebalances,
  whether one is under way, the epoch), `task-error-metrics,connector=C,task=N`.
- The tasks' producers: `kafka.producer:type=producer-metrics,client-id=connector-producer-C-N`
  (Worker.taskProducerConfigs' default client.id; exactly-once tasks' too).
- The source task's replication consumer: `kafka.consumer:type=consumer-fetch-manager-metrics,
  client-id=<source>-><target>|<connector>-<task>|replication-consumer,topic=X,partition=P`
  (MirrorConnectorConfig.addClientId / entityLabel, MirrorSourceTask.start: the role is
  `replication-consumer`). The id holds '>' and '|', so Kafka's JmxReporter quotes it
  (Sanitizer.jmxSanitize); the rule reads it with or without quotes.
"""

from __future__ import annotations

from functools import lru_cache

from infra.core import yamltext
from infra.core.errors import Problem
from infra.core.manifests import JSON, ConfigValue
from infra.core.names import METRICS_CONFIG_KEY, FlowNames
from infra.core.releases import Release, find
from infra.topology.resolution import Model
from infra.topology.schema import Exporter, Monitoring

METRICS_PORT = 9404          # Strimzi MetricsModel.METRICS_PORT: the agent's and the reporter's port
METRICS_PORT_NAME = "tcp-prometheus"  # MetricsModel.METRICS_PORT_NAME (0.43.0 to 1.2.0): the container port's name
METRICS_PATH = "/metrics"
FLOW_LABEL = "flow"
CONNECT_LABEL = "connect_cluster"

# MirrorSourceConfig.ADD_SOURCE_ALIAS_TO_METRICS (Kafka 3.7.0 - 3.9.x; removed in 4.0).
ADD_SOURCE_ALIAS = "add.source.alias.to.metrics"
# Strimzi's metrics reporter classes, as KafkaMirrorMaker2Connectors puts them into each
# MirrorMaker 2 connector's `metric.reporters` (StrimziMetricsReporterConfig): KAFKA_CLASS at
# 0.48.0 and 0.49.0, CLIENT_CLASS from 1.0.0 (1.2.0 here).
REPORTER_KAFKA_CLASS = "io.strimzi.kafka.metrics.KafkaPrometheusMetricsReporter"
REPORTER_CLIENT_CLASS = "io.strimzi.kafka.metrics.prometheus.ClientMetricsReporter"
REPORTER_LISTENER_ENABLE = "prometheus.metrics.reporter.listener.enable"
METRIC_REPORTERS = "metric.reporters"
# What the reporter keeps: Connect's and MirrorMaker 2's metrics and the consumers' lag.
REPORTER_ALLOW_LIST = ("kafka_connect_.*", "kafka_consumer_.*records_lag.*")

MIRROR_SOURCE_ATTRIBUTES = ("record-count", "record-rate", "record-age-ms", "record-age-ms-min", "record-age-ms-max",
                            "record-age-ms-avg", "replication-latency-ms", "replication-latency-ms-min",
                            "replication-latency-ms-max", "replication-latency-ms-avg", "byte-rate", "byte-count")
MIRROR_CHECKPOINT_ATTRIBUTES = ("checkpoint-latency-ms", "checkpoint-latency-ms-min", "checkpoint-latency-ms-max",
                                "checkpoint-latency-ms-avg")
CONSUMER_LAG_ATTRIBUTES = ("records-lag", "records-lag-max")
# A client's authentications the broker refused (Selector's SelectorMetrics, in the client's own
# `<client>-metrics` group): on a new connection, and when an established one authenticates again
# (`connections.max.reauth.ms`). A credential revoked, expired or rotated on one side only.
AUTH_ATTRIBUTES = ("failed-authentication-total", "failed-reauthentication-total")
# The replication consumer's bytes read from the source, all its connections (Selector's
# SelectorMetrics, the same group): what crosses the link from the source, a counter to rate().
CONSUMER_ATTRIBUTES = (*AUTH_ATTRIBUTES, "incoming-byte-total")
# The task producers' (Worker: client.id `connector-producer-<connector>-<task>`, exactly-once
# tasks too): what the target does to the writes. Errors and retries after the producer's own
# retries, quota throttling, the buffer a blocked send waits on, the request latency, the bytes
# written to the target (a counter to rate(), as Strimzi's MirrorMaker 2 dashboard reads them), and
# the authentications it refused.
PRODUCER_ATTRIBUTES: tuple[str, ...] = (
    "record-error-total", "record-error-rate", "record-retry-total", "record-retry-rate", "record-send-total",
    "record-send-rate", "produce-throttle-time-avg", "produce-throttle-time-max", "buffer-available-bytes",
    "buffer-total-bytes", "bufferpool-wait-ratio", "request-latency-avg", "request-latency-max", "outgoing-byte-rate",
    "outgoing-byte-total", *AUTH_ATTRIBUTES)
TASK_PRODUCER_PREFIX = "connector-producer-"  # Worker.taskProducerConfigs' default client.id
REPLICATION_CONSUMER_ROLE = "replication-consumer"  # MirrorSourceTask's consumer


def _alternation(words: tuple[str, ...]) -> str:
    return "(" + "|".join(sorted(words, key=len, reverse=True)) + ")"


def reporter_class(release: Release) -> str:
    return REPORTER_CLIENT_CLASS if release.v1_semantics else REPORTER_KAFKA_CLASS


def exporter_config(release: Release, n: FlowNames, source_alias: str) -> JSON:
    """The JMX exporter's configuration for one Connect cluster of flow `n.flow` (its YAML goes
    into the ConfigMap; the operator hands the agent its JSON form). The exporter matches each
    rule, unanchored, against `domain<key=value, ...><>attribute: value`, tries them in order and
    keeps the first match, so each status rule stands before its kind's numbers, and every
    attribute ends at its ':' (`records-lag` must not take `records-lag-avg`)."""
    return _exporter_config(release, n.flow, n.connect, source_alias)


def _exporter_config(release: Release, flow: str, connect: str, source_alias: str) -> JSON:
    static = {FLOW_LABEL: flow, CONNECT_LABEL: connect}

    def rule(pattern: str, name: str, labels: dict[str, str], help_: str, value: int | None = None,
             kind: str = "GAUGE") -> JSON:
        out: JSON = {"pattern": pattern, "name": name}
        if value is not None:
            out["value"] = value
        out.update({"labels": {**labels, **static}, "help": help_, "type": kind})
        return out

    def numbers(bean: str, name: str, attribute: str, labels: dict[str, str], help_: str) -> list[JSON]:
        """A family's numeric attributes: Kafka's cumulative `*-total` ones as counters (the
        exporter 1.x drops a `_total` from a gauge's name, client_java's naming), the rest gauges."""
        return [rule(f"{bean}><>([a-z-]+-total):", name + attribute, labels, help_, kind="COUNTER"),
                rule(f"{bean}><>([a-z-]+):", name + attribute, labels, help_)]

    source_attrs = _alternation(MIRROR_SOURCE_ATTRIBUTES)
    task = {"connector": "$1", "task": "$2"}
    rules = [
        rule("kafka.connect<type=connector-metrics, connector=(.+)><>status: ([a-z-]+)",
             "kafka_connect_connector_status", {"connector": "$1", "status": "$2"},
             "Kafka Connect connector status (1 for the current status)", 1),
        rule("kafka.connect<type=connector-task-metrics, connector=(.+), task=([0-9]+)><>status: ([a-z-]+)",
             "kafka_connect_connector_task_status", {"connector": "$1", "task": "$2", "status": "$3"},
             "Kafka Connect task status (1 for the current status)", 1),
        *numbers("kafka.connect<type=connector-task-metrics, connector=(.+), task=([0-9]+)",
                 "kafka_connect_connector_task_", "$3", task, "Kafka Connect connector-task-metrics"),
        *numbers("kafka.connect<type=source-task-metrics, connector=(.+), task=([0-9]+)",
                 "kafka_connect_source_task_", "$3", task, "Kafka Connect source-task-metrics"),
        *numbers("kafka.connect<type=connect-worker-metrics, connector=(.+)", "kafka_connect_worker_", "$2",
                 {"connector": "$1"}, "Kafka Connect connect-worker-metrics per connector"),
        *numbers("kafka.connect<type=connect-worker-metrics", "kafka_connect_worker_", "$1", {},
                 "Kafka Connect connect-worker-metrics"),
        *numbers("kafka.connect<type=connect-worker-rebalance-metrics", "kafka_connect_worker_rebalance_", "$1", {},
                 "Kafka Connect connect-worker-rebalance-metrics: this worker's view of the group's rebalances"),
        *numbers("kafka.connect<type=task-error-metrics, connector=(.+), task=([0-9]+)", "kafka_connect_task_error_",
                 "$3", task, "Kafka Connect task-error-metrics"),
        rule("kafka.connect.mirror<type=MirrorSourceConnector, source=(.+), target=(.+), topic=(.+), "
             f"partition=([0-9]+)><>{source_attrs}:",
             "kafka_connect_mirror_mirrorsourceconnector_$5",
             {"source": "$1", "target": "$2", "topic": "$3", "partition": "$4"},
             "MirrorMaker 2 MirrorSourceConnector metrics per replicated partition"),
    ]
    if release.source_tag_optional:
        # Without `add.source.alias.to.metrics` (Kafka 3.x) the MBean has no `source`: the
        # Connect cluster replicates one source cluster, so its alias is a constant here.
        rules.append(rule(
            f"kafka.connect.mirror<type=MirrorSourceConnector, target=(.+), topic=(.+), partition=([0-9]+)><>"
            f"{source_attrs}:",
            "kafka_connect_mirror_mirrorsourceconnector_$4",
            {"source": source_alias, "target": "$1", "topic": "$2", "partition": "$3"},
            "MirrorMaker 2 MirrorSourceConnector metrics per replicated partition"))
    rules += [
        rule("kafka.connect.mirror<type=MirrorCheckpointConnector, source=(.+), target=(.+), group=(.+), "
             f"topic=(.+), partition=([0-9]+)><>{_alternation(MIRROR_CHECKPOINT_ATTRIBUTES)}:",
             "kafka_connect_mirror_mirrorcheckpointconnector_$6",
             {"source": "$1", "target": "$2", "group": "$3", "topic": "$4", "partition": "$5"},
             "MirrorMaker 2 MirrorCheckpointConnector metrics per group and partition"),
        rule(f"kafka.consumer<type=consumer-fetch-manager-metrics, client-id=\"?([^\"]+\\|{REPLICATION_CONSUMER_ROLE})"
             f"\"?, topic=(.+), partition=([0-9]+)><>{_alternation(CONSUMER_LAG_ATTRIBUTES)}:",
             "kafka_consumer_fetch_manager_$4", {"client_id": "$1", "topic": "$2", "partition": "$3"},
             "The source connector's replication consumer: lag per source partition"),
        rule(f"kafka.consumer<type=consumer-metrics, client-id=\"?([^\"]+\\|{REPLICATION_CONSUMER_ROLE})\"?><>"
             f"{_alternation(CONSUMER_ATTRIBUTES)}:", "kafka_consumer_$2", {"client_id": "$1"},
             "The source connector's replication consumer: authentications the source refused, bytes read",
             kind="COUNTER"),
        *[rule(f"kafka.producer<type=producer-metrics, client-id={TASK_PRODUCER_PREFIX}(.+)-([0-9]+)><>"
               f"{_alternation(attributes)}:", "kafka_producer_$3", task,
               "The task's producer: its writes to the target", kind=kind)
          for attributes, kind in ((tuple(a for a in PRODUCER_ATTRIBUTES if a.endswith("-total")), "COUNTER"),
                                   (tuple(a for a in PRODUCER_ATTRIBUTES if not a.endswith("-total")), "GAUGE"))],
    ]
    return {
        "lowercaseOutputName": True,
        "lowercaseOutputLabelNames": True,
        # Only the MBeans the rules read: the agent walks nothing else.
        "includeObjectNames": ["kafka.connect:*", "kafka.connect.mirror:*",
                               "kafka.consumer:type=consumer-fetch-manager-metrics,*",
                               "kafka.consumer:type=consumer-metrics,*",
                               "kafka.producer:type=producer-metrics,*"],
        "rules": rules,
    }


def exporter_yaml(release: Release, n: FlowNames, source_alias: str) -> str:
    """`exporter_config` as YAML. The text differs between Connect clusters only in three
    scalars (the flow, the Connect cluster, the source alias), and writing it is most of what the
    plan costs (PyYAML represents every node in Python: 4 of 7 s at 500 flows). So it is written
    once per release with a stand-in for each, and the stand-ins replaced by the values, where
    each value is written as itself (a plain YAML scalar, as every flow and alias name is unless
    YAML reads it as something else, `on` or `123`); otherwise it is written whole.
    tests/unit/test_metrics.py holds both to the same text."""
    values = (n.flow, n.connect, source_alias)
    # A name holding a stand-in (a flow called `a-connectstandin`) would be replaced twice.
    if not all(map(_plain, values)) or any(s in v for v in values for s in _STANDINS):
        return _yaml(exporter_config(release, n, source_alias))
    text = _template(release)
    for standin, value in zip(_STANDINS, values):
        text = text.replace(standin, value)
    return text


# Written nowhere else in the rules (tests/unit/test_metrics.py): each stands for one value.
_STANDINS = ("flowstandin", "connectstandin", "sourcestandin")


@lru_cache(maxsize=None)
def _template(release: Release) -> str:
    return _yaml(_exporter_config(release, *_STANDINS))


@lru_cache(maxsize=4096)
def _plain(value: str) -> bool:
    # As a mapping's value, where the names stand in the rules (a lone scalar ends with `...`
    # in PyYAML's Python emitter and not in libyaml's).
    return _yaml({"label": value}) == f"label: {value}\n"


def _yaml(data: object) -> str:
    return yamltext.dump(data, sort_keys=False, width=1000)


def enabled(monitoring: Monitoring) -> bool:
    return monitoring.metrics


def uses_configmap(monitoring: Monitoring) -> bool:
    """Whether the Connect cluster gets the rules ConfigMap (the JMX exporter only)."""
    return monitoring.metrics and monitoring.exporter is Exporter.jmxPrometheusExporter


def metrics_config(monitoring: Monitoring, n: FlowNames) -> JSON | None:
    """KafkaConnect `spec.metricsConfig`, None without metrics."""
    if not monitoring.metrics:
        return None
    if monitoring.exporter is Exporter.strimziMetricsReporter:
        return {"type": Exporter.strimziMetricsReporter.value, "values": {"allowList": list(REPORTER_ALLOW_LIST)}}
    return {"type": Exporter.jmxPrometheusExporter.value,
            "valueFrom": {"configMapKeyRef": {"name": n.metrics_configmap, "key": METRICS_CONFIG_KEY}}}


def configmap_data(release: Release, monitoring: Monitoring, n: FlowNames, source_alias: str) -> dict[str, str] | None:
    """The rules ConfigMap's data, None where the Connect cluster has none."""
    if not uses_configmap(monitoring):
        return None
    return {METRICS_CONFIG_KEY: exporter_yaml(release, n, source_alias)}


def connector_config(release: Release, monitoring: Monitoring, kind: str) -> dict[str, ConfigValue]:
    """What a MirrorMaker 2 connector of kind `source`, `checkpoint` or `heartbeat` needs for
    the stack's metrics (infra/plan/connectors.py merges it, owned).

    - Kafka 3.x MirrorSourceConnector: `add.source.alias.to.metrics=true`, so that its MBeans
      carry `source` as they do on Kafka 4 (one set of series for every release).
    - strimziMetricsReporter: the MirrorMaker 2 connectors create their own metrics registry
      with the reporters of their own config (MirrorConnectorConfig.metricsReporters), which the
      worker's `metric.reporters` never reaches. For KafkaMirrorMaker2 the operator adds the
      reporter to every connector with its listener off, so that the connector's metrics join
      the worker's registry and endpoint (KafkaMirrorMaker2Connectors, 0.48.0 and 1.2.0); for
      KafkaConnect it does not, so the plan does it here the same way.
    """
    if not monitoring.metrics:
        return {}
    config: dict[str, ConfigValue] = {}
    if kind == "source" and release.source_tag_optional:
        config[ADD_SOURCE_ALIAS] = True
    if monitoring.exporter is Exporter.strimziMetricsReporter:
        config[METRIC_REPORTERS] = reporter_class(release)
        config[REPORTER_LISTENER_ENABLE] = False
    return config


def connector_keys(release: Release, kind: str) -> tuple[str, ...]:
    """The keys `connector_config` may write for a kind, owned whether written or not: a user
    value there would change the series every alert reads, or the reporter's wiring."""
    keys = [ADD_SOURCE_ALIAS] if kind == "source" and release.source_tag_optional else []
    return (*keys, METRIC_REPORTERS, REPORTER_LISTENER_ENABLE)


def problems(model: Model) -> list[Problem]:
    """Refusals: the Strimzi metrics reporter where the release's KafkaConnect has no such type."""
    monitoring, operator = model.topology.monitoring, model.topology.operator
    release = find(operator.flavour, operator.version)
    if release is None:  # the operator rule refuses the version
        return []
    found = []
    if monitoring.metrics and monitoring.exporter is Exporter.strimziMetricsReporter and not release.strimzi_reporter:
        found.append(Problem(
            "topology", "monitoring.exporter", monitoring.exporter.value,
            f"jmxPrometheusExporter on {release.name} (Strimzi {release.strimzi}): its KafkaConnect has no "
            "strimziMetricsReporter metrics type (from Strimzi 0.48.0), or metrics: false"))
    return found
