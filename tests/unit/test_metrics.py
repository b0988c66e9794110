"""infra/plan/metrics.py and its place in the plan: the JMX exporter's rules per release, the
KafkaConnect's metricsConfig and its ConfigMap, what the connectors need, the refusals, and
`metrics: false`. The rules are proven against the real worker in the dev stack's runtime test
(tests/support/worker_metrics.py); here they are held exactly, and run through a model of the exporter's matching."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from infra.checks import validation
from infra.core.names import FlowNames
from infra.core.releases import SUPPORTED, Flavour, find
from infra.plan import metrics, stack as plan
from infra.topology.resolution import resolve
from infra.topology.schema import Topology
from tests.support.material import material
from tests.support.stacks import RELEASES, doc_topology, on_release

FLOW = "repl-us-west-us-east"
N = FlowNames(FLOW, "us-west", "us-east")
RULES = N.metrics_configmap
STATIC = {"flow": FLOW, "connect_cluster": FLOW}
CSM_12 = find(Flavour.csm, "1.2")
STRIMZI_120 = find(Flavour.strimzi, "1.2.0")
assert CSM_12 is not None and STRIMZI_120 is not None
SOURCE_ATTRS = ("(replication-latency-ms-min|replication-latency-ms-max|replication-latency-ms-avg|"
                "replication-latency-ms|record-age-ms-min|record-age-ms-max|record-age-ms-avg|record-age-ms|"
                "record-count|record-rate|byte-count|byte-rate)")


def _model(flavour: str, version: str, **monitoring):
    topo = on_release(doc_topology(), flavour, version)
    if monitoring:
        topo["monitoring"] = monitoring
    # The model as resolved, before the rules: the refusals of infra/plan/metrics.py are tested as such.
    return resolve(Topology.model_validate(topo))


def _objects(flavour: str, version: str, **monitoring) -> list[dict]:
    return list(plan.plan(_model(flavour, version, **monitoring)).objects)


def _rule(pattern, name, labels, help_, value=None):
    out = {"pattern": pattern, "name": name}
    if value is not None:
        out["value"] = value
    return {**out, "labels": {**labels, **STATIC}, "help": help_, "type": "GAUGE"}


def _numbers(bean, name, labels, help_):
    return [{**_rule(f"{bean}><>([a-z-]+-total):", name, labels, help_), "type": "COUNTER"},
            _rule(f"{bean}><>([a-z-]+):", name, labels, help_)]


TASK = {"connector": "$1", "task": "$2"}
COMMON_HEAD = [
    _rule("kafka.connect<type=connector-metrics, connector=(.+)><>status: ([a-z-]+)", "kafka_connect_connector_status",
          {"connector": "$1", "status": "$2"}, "Kafka Connect connector status (1 for the current status)", 1),
    _rule("kafka.connect<type=connector-task-metrics, connector=(.+), task=([0-9]+)><>status: ([a-z-]+)",
          "kafka_connect_connector_task_status", {"connector": "$1", "task": "$2", "status": "$3"},
          "Kafka Connect task status (1 for the current status)", 1),
    *_numbers("kafka.connect<type=connector-task-metrics, connector=(.+), task=([0-9]+)",
              "kafka_connect_connector_task_$3", TASK, "Kafka Connect connector-task-metrics"),
    *_numbers("kafka.connect<type=source-task-metrics, connector=(.+), task=([0-9]+)",
              "kafka_connect_source_task_$3", TASK, "Kafka Connect source-task-metrics"),
    *_numbers("kafka.connect<type=connect-worker-metrics, connector=(.+)", "kafka_connect_worker_$2",
              {"connector": "$1"}, "Kafka Connect connect-worker-metrics per connector"),
    *_numbers("kafka.connect<type=connect-worker-metrics", "kafka_connect_worker_$1", {},
              "Kafka Connect connect-worker-metrics"),
    *_numbers("kafka.connect<type=connect-worker-rebalance-metrics", "kafka_connect_worker_rebalance_$1", {},
              "Kafka Connect connect-worker-rebalance-metrics: this worker's view of the group's rebalances"),
    *_numbers("kafka.connect<type=task-error-metrics, connector=(.+), task=([0-9]+)", "kafka_connect_task_error_$3",
              TASK, "Kafka Connect task-error-metrics"),
    _rule("kafka.connect.mirror<type=MirrorSourceConnector, source=(.+), target=(.+), topic=(.+), "
          f"partition=([0-9]+)><>{SOURCE_ATTRS}:", "kafka_connect_mirror_mirrorsourceconnector_$5",
          {"source": "$1", "target": "$2", "topic": "$3", "partition": "$4"},
          "MirrorMaker 2 MirrorSourceConnector metrics per replicated partition"),
]
NO_SOURCE_TAG = _rule(
    f"kafka.connect.mirror<type=MirrorSourceConnector, target=(.+), topic=(.+), partition=([0-9]+)><>{SOURCE_ATTRS}:",
    "kafka_connect_mirror_mirrorsourceconnector_$4",
    {"source": "us-west", "target": "$1", "topic": "$2", "partition": "$3"},
    "MirrorMaker 2 MirrorSourceConnector metrics per replicated partition")
COMMON_TAIL = [
    _rule("kafka.connect.mirror<type=MirrorCheckpointConnector, source=(.+), target=(.+), group=(.+), topic=(.+), "
          "partition=([0-9]+)><>(checkpoint-latency-ms-min|checkpoint-latency-ms-max|checkpoint-latency-ms-avg|"
          "checkpoint-latency-ms):", "kafka_connect_mirror_mirrorcheckpointconnector_$6",
          {"source": "$1", "target": "$2", "group": "$3", "topic": "$4", "partition": "$5"},
          "MirrorMaker 2 MirrorCheckpointConnector metrics per group and partition"),
    _rule('kafka.consumer<type=consumer-fetch-manager-metrics, client-id="?([^"]+\\|replication-consumer)"?, '
          'topic=(.+), partition=([0-9]+)><>(records-lag-max|records-lag):', "kafka_consumer_fetch_manager_$4",
          {"client_id": "$1", "topic": "$2", "partition": "$3"},
          "The source connector's replication consumer: lag per source partition"),
    {**_rule('kafka.consumer<type=consumer-metrics, client-id="?([^"]+\\|replication-consumer)"?><>'
             "(failed-reauthentication-total|failed-authentication-total|incoming-byte-total):", "kafka_consumer_$2",
             {"client_id": "$1"},
             "The source connector's replication consumer: authentications the source refused, bytes read"),
     "type": "COUNTER"},
    {**_rule("kafka.producer<type=producer-metrics, client-id=connector-producer-(.+)-([0-9]+)><>"
             "(failed-reauthentication-total|failed-authentication-total|outgoing-byte-total|record-error-total|"
             "record-retry-total|record-send-total):", "kafka_producer_$3", TASK,
             "The task's producer: its writes to the target"), "type": "COUNTER"},
    _rule("kafka.producer<type=producer-metrics, client-id=connector-producer-(.+)-([0-9]+)><>"
          "(produce-throttle-time-avg|produce-throttle-time-max|buffer-available-bytes|bufferpool-wait-ratio|"
          "request-latency-avg|request-latency-max|buffer-total-bytes|outgoing-byte-rate|record-error-rate|"
          "record-retry-rate|record-send-rate):", "kafka_producer_$3", TASK,
          "The task's producer: its writes to the target"),
]
INCLUDE = ["kafka.connect:*", "kafka.connect.mirror:*", "kafka.consumer:type=consumer-fetch-manager-metrics,*",
           "kafka.consumer:type=consumer-metrics,*", "kafka.producer:type=producer-metrics,*"]


@pytest.mark.parametrize("release", SUPPORTED, ids=lambda r: r.name)
def test_exact_rules_per_release(release):
    """Kafka 3.x (CSM 1.2, 1.4) may emit MirrorSource MBeans without `source`: a second rule
    puts the flow's source alias there; Kafka 4 always has it."""
    expected = COMMON_HEAD + ([NO_SOURCE_TAG] if release.kafka_line < (4, 0) else []) + COMMON_TAIL
    assert metrics.exporter_config(release, N, "us-west") == {
        "lowercaseOutputName": True, "lowercaseOutputLabelNames": True, "includeObjectNames": INCLUDE,
        "rules": expected}


# -- the exporter's matching, modelled: each rule unanchored against `domain<k=v, ...><>attr: value`,
# the first match wins, `$n` replaced, names lowercased with '-' as '_'.

def exported(config: dict, mbean: str, attribute: str, value: object) -> tuple[str, dict[str, str], float] | None:
    domain, _, props = mbean.partition(":")
    line = f"{domain}<{', '.join(props.split(','))}><>{attribute}: {value}"
    for rule in config["rules"]:
        match = re.match(f"^.*(?:{rule['pattern']}).*$", line)
        if match is None:
            continue

        def sub(text: str) -> str:
            return re.sub(r"\$(\d+)", lambda m: match.group(int(m.group(1))), text)
        number = rule.get("value", value)
        if not isinstance(number, (int, float)):
            return None  # a string the rule gives no value for: dropped
        name = re.sub(r"[^a-zA-Z0-9_:]", "_", sub(rule["name"])).lower()
        if rule["type"] == "GAUGE" and name.endswith("_total"):
            name = name[:-len("_total")]  # client_java 1.x: `_total` is a counter's suffix only
        return name, {k: sub(v) for k, v in rule["labels"].items()}, float(number)
    return None


@pytest.mark.parametrize("release", SUPPORTED, ids=lambda r: r.name)
def test_rules_turn_the_mbeans_into_the_contract_series(release):
    config = metrics.exporter_config(release, N, "us-west")
    source = f"{FLOW}-source"
    mirror = {"source": "us-west", "target": "us-east", "topic": "us-west.orders", "partition": "0", **STATIC}
    assert exported(config, f"kafka.connect:type=connector-metrics,connector={source}", "status", "running") == (
        "kafka_connect_connector_status", {"connector": source, "status": "running", **STATIC}, 1.0)
    assert exported(config, f"kafka.connect:type=connector-task-metrics,connector={source},task=0", "status",
                    "failed") == ("kafka_connect_connector_task_status",
                                  {"connector": source, "task": "0", "status": "failed", **STATIC}, 1.0)
    assert exported(config, f"kafka.connect:type=connector-task-metrics,connector={source},task=0",
                    "offset-commit-avg-time-ms", 2.5) == (
        "kafka_connect_connector_task_offset_commit_avg_time_ms", {"connector": source, "task": "0", **STATIC}, 2.5)
    assert exported(config, f"kafka.connect:type=source-task-metrics,connector={source},task=1",
                    "source-record-poll-total", 6) == (
        "kafka_connect_source_task_source_record_poll_total", {"connector": source, "task": "1", **STATIC}, 6.0)
    assert exported(config, "kafka.connect:type=connect-worker-metrics", "connector-count", 3) == (
        "kafka_connect_worker_connector_count", STATIC, 3.0)
    # Kafka's cumulative `*-total` attributes keep their name, as counters.
    assert exported(config, "kafka.connect:type=connect-worker-metrics", "task-startup-failure-total", 1) == (
        "kafka_connect_worker_task_startup_failure_total", STATIC, 1.0)
    assert exported(config, f"kafka.connect:type=source-task-metrics,connector={source},task=0",
                    "source-record-write-total", 6)[0] == "kafka_connect_source_task_source_record_write_total"
    assert exported(config, f"kafka.connect:type=connect-worker-metrics,connector={source}",
                    "connector-failed-task-count", 0) == (
        "kafka_connect_worker_connector_failed_task_count", {"connector": source, **STATIC}, 0.0)
    # The source tag, and (Kafka 3.x without add.source.alias.to.metrics) the alias standing in.
    tagged = "kafka.connect.mirror:type=MirrorSourceConnector,source=us-west,target=us-east,topic=us-west.orders,partition=0"
    untagged = "kafka.connect.mirror:type=MirrorSourceConnector,target=us-east,topic=us-west.orders,partition=0"
    for attribute in metrics.MIRROR_SOURCE_ATTRIBUTES:
        name = "kafka_connect_mirror_mirrorsourceconnector_" + attribute.replace("-", "_")
        assert exported(config, tagged, attribute, 7) == (name, mirror, 7.0)
        assert exported(config, untagged, attribute, 7) == (
            (name, mirror, 7.0) if release.kafka_line < (4, 0) else None)
    checkpoint = ("kafka.connect.mirror:type=MirrorCheckpointConnector,source=us-west,target=us-east,group=g1,"
                  "topic=orders,partition=1")
    for attribute in metrics.MIRROR_CHECKPOINT_ATTRIBUTES:
        assert exported(config, checkpoint, attribute, 12) == (
            "kafka_connect_mirror_mirrorcheckpointconnector_" + attribute.replace("-", "_"),
            {"source": "us-west", "target": "us-east", "group": "g1", "topic": "orders", "partition": "1", **STATIC},
            12.0)
    # The replication consumer (its id quoted by JmxReporter): lag and max lag, never the average.
    client = f"us-west->us-east|{source}-0|replication-consumer"
    lag = f'kafka.consumer:type=consumer-fetch-manager-metrics,client-id="{client}",topic=orders,partition=0'
    assert exported(config, lag, "records-lag", 4) == (
        "kafka_consumer_fetch_manager_records_lag", {"client_id": client, "topic": "orders", "partition": "0", **STATIC},
        4.0)
    assert exported(config, lag, "records-lag-max", 9)[0] == "kafka_consumer_fetch_manager_records_lag_max"
    assert exported(config, lag, "records-lag-avg", 4) is None
    # Other consumers of the worker (its storage topics, the offset syncs) are not ours to watch.
    other = "kafka.consumer:type=consumer-fetch-manager-metrics,client-id=connect-1,topic=x-status-topic,partition=0"
    assert exported(config, other, "records-lag", 0) is None
    # Authentications the source refused the replication consumer; not the worker's other consumers'.
    auth = f'kafka.consumer:type=consumer-metrics,client-id="{client}"'
    assert exported(config, auth, "failed-authentication-total", 3) == (
        "kafka_consumer_failed_authentication_total", {"client_id": client, **STATIC}, 3.0)
    assert exported(config, auth, "failed-reauthentication-total", 1)[0] == "kafka_consumer_failed_reauthentication_total"
    assert exported(config, auth, "connection-count", 1) is None
    assert exported(config, "kafka.consumer:type=consumer-metrics,client-id=connect-1", "failed-authentication-total",
                    1) is None
    # The group's rebalances as this worker saw them, and the tasks' error counts.
    assert exported(config, "kafka.connect:type=connect-worker-rebalance-metrics", "completed-rebalances-total",
                    4) == ("kafka_connect_worker_rebalance_completed_rebalances_total", STATIC, 4.0)
    assert exported(config, "kafka.connect:type=connect-worker-rebalance-metrics", "rebalancing", 0) == (
        "kafka_connect_worker_rebalance_rebalancing", STATIC, 0.0)
    assert exported(config, f"kafka.connect:type=task-error-metrics,connector={source},task=0",
                    "total-record-failures", 2) == (
        "kafka_connect_task_error_total_record_failures", {"connector": source, "task": "0", **STATIC}, 2.0)
    # The task's producer: errors and retries (counters), throttling and the buffer; not the
    # worker's other producers (its storage topics').
    producer = f"kafka.producer:type=producer-metrics,client-id=connector-producer-{source}-2"
    assert exported(config, producer, "record-error-total", 3) == (
        "kafka_producer_record_error_total", {"connector": source, "task": "2", **STATIC}, 3.0)
    assert exported(config, producer, "produce-throttle-time-max", 120) == (
        "kafka_producer_produce_throttle_time_max", {"connector": source, "task": "2", **STATIC}, 120.0)
    assert exported(config, producer, "bufferpool-wait-ratio", 0.5)[0] == "kafka_producer_bufferpool_wait_ratio"
    assert exported(config, producer, "failed-authentication-total", 2) == (
        "kafka_producer_failed_authentication_total", {"connector": source, "task": "2", **STATIC}, 2.0)
    assert exported(config, producer, "io-wait-time-ns-avg", 5) is None
    assert exported(config, "kafka.producer:type=producer-metrics,client-id=connect-cluster-statuses", "record-error-total",
                    0) is None
    # Strings without a rule of their own are dropped.
    assert exported(config, f"kafka.connect:type=connector-metrics,connector={source}", "connector-class",
                    "org.apache.kafka.connect.mirror.MirrorSourceConnector") is None


@pytest.mark.parametrize("flavour,version", RELEASES)
def test_every_kafka_connect_names_its_rules_configmap(flavour, version):
    objects = _objects(flavour, version)
    (connect,) = [o for o in objects if o["kind"] == "KafkaConnect"]
    assert connect["spec"]["metricsConfig"] == {
        "type": "jmxPrometheusExporter",
        "valueFrom": {"configMapKeyRef": {"name": RULES, "key": "metrics-config.yml"}}}
    (rules,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == RULES]
    assert rules["metadata"] == {"name": RULES, "namespace": FLOW, "labels": {
        "app.kubernetes.io/part-of": "kafka-replication", "app.kubernetes.io/managed-by": "pulumi",
        "kafka-replication.io/flow": FLOW}}
    release = find(Flavour(flavour), version)
    assert rules["data"] == {"metrics-config.yml": metrics.exporter_yaml(release, N, "us-west")}
    assert yaml.safe_load(rules["data"]["metrics-config.yml"]) == metrics.exporter_config(release, N, "us-west")
    # Created before the KafkaConnect (the operator refuses a metricsConfig whose ConfigMap is missing).
    assert objects.index(rules) < objects.index(connect)


def test_split_flow_rules_per_connect_cluster():
    topo = doc_topology()
    flow = topo["flows"][0]
    flow.pop("topics")
    flow["connectClusters"] = [{"name": "a", "topics": ["a.*"]}, {"name": "b", "topics": ["b.*"]}]
    objects = list(plan.plan(validation.parse(topo)).objects)
    configs = {o["metadata"]["namespace"]: yaml.safe_load(o["data"]["metrics-config.yml"]) for o in objects
               if o["kind"] == "ConfigMap" and o["metadata"]["name"] == RULES}
    assert sorted(configs) == [f"{FLOW}-a", f"{FLOW}-b"]
    for namespace, config in configs.items():
        assert {(r["labels"]["flow"], r["labels"]["connect_cluster"]) for r in config["rules"]} == {(FLOW, namespace)}
    for connect in (o for o in objects if o["kind"] == "KafkaConnect"):
        assert connect["spec"]["metricsConfig"]["valueFrom"]["configMapKeyRef"]["name"] == RULES


@pytest.mark.parametrize("flavour,version", RELEASES)
def test_metrics_false_renders_nothing_of_it(flavour, version):
    objects = _objects(flavour, version, metrics=False)
    (connect,) = [o for o in objects if o["kind"] == "KafkaConnect"]
    assert "metricsConfig" not in connect["spec"]
    assert [o for o in objects if o["metadata"]["name"] == RULES] == []
    release = find(Flavour(flavour), version)
    monitoring = _model(flavour, version, metrics=False).topology.monitoring
    assert [metrics.connector_config(release, monitoring, k) for k in ("source", "checkpoint", "heartbeat")] == [{}] * 3


@pytest.mark.parametrize("version,reporter", [("0.48.0", "io.strimzi.kafka.metrics.KafkaPrometheusMetricsReporter"),
                                              ("1.2.0", "io.strimzi.kafka.metrics.prometheus.ClientMetricsReporter")])
def test_strimzi_metrics_reporter(version, reporter):
    model = _model("strimzi", version, exporter="strimziMetricsReporter")
    assert metrics.problems(model) == []
    objects = list(plan.plan(model).objects)
    (connect,) = [o for o in objects if o["kind"] == "KafkaConnect"]
    assert connect["spec"]["metricsConfig"] == {
        "type": "strimziMetricsReporter", "values": {"allowList": ["kafka_connect_.*", "kafka_consumer_.*records_lag.*"]}}
    assert [o for o in objects if o["metadata"]["name"] == RULES] == []
    # What KafkaMirrorMaker2Connectors adds to every MirrorMaker 2 connector, for KafkaConnect.
    release = model.operator.release
    for kind in ("source", "checkpoint", "heartbeat"):
        assert metrics.connector_config(release, model.topology.monitoring, kind) == {
            "metric.reporters": reporter, "prometheus.metrics.reporter.listener.enable": False}


@pytest.mark.parametrize("version", ["1.2", "1.4"])
def test_strimzi_metrics_reporter_refused_on_csm(version):
    model = _model("csm", version, exporter="strimziMetricsReporter")
    strimzi = {"1.2": "0.43.0", "1.4": "0.45.0"}[version]
    assert [str(p) for p in metrics.problems(model)] == [
        f"topology: monitoring.exporter: got 'strimziMetricsReporter'; expected jmxPrometheusExporter on csm {version} "
        f"(Strimzi {strimzi}): its KafkaConnect has no strimziMetricsReporter metrics type (from Strimzi 0.48.0), or "
        "metrics: false"]
    assert metrics.problems(model)[0].steps() == ["monitoring", "exporter"]
    # Without metrics nothing is refused.
    assert metrics.problems(_model("csm", version, metrics=False, exporter="strimziMetricsReporter")) == []


@pytest.mark.parametrize("flavour,version", RELEASES)
def test_connector_config_per_release(flavour, version):
    """Kafka 3.x: the MirrorSourceConnector's MBeans get `source` (add.source.alias.to.metrics,
    an Apache key from 3.7 to 3.9); Kafka 4 has no such key and always tags."""
    model = _model(flavour, version)
    release, monitoring = model.operator.release, model.topology.monitoring
    three = release.kafka_line < (4, 0)
    assert metrics.connector_config(release, monitoring, "source") == (
        {"add.source.alias.to.metrics": True} if three else {})
    assert metrics.connector_config(release, monitoring, "checkpoint") == {}
    assert metrics.connector_keys(release, "source") == (
        (("add.source.alias.to.metrics",) if three else ()) + ("metric.reporters", "prometheus.metrics.reporter.listener.enable"))
    assert metrics.connector_keys(release, "heartbeat") == ("metric.reporters",
                                                            "prometheus.metrics.reporter.listener.enable")


# -- the stand-in operator (infra/tools/rehearsal/operator.py): what the release does with metricsConfig


def _connect(flavour: str, version: str, **monitoring) -> tuple[dict, dict[str, dict[str, str]]]:
    objects = _objects(flavour, version, **monitoring)
    (connect,) = [o for o in objects if o["kind"] == "KafkaConnect"]
    maps = {o["metadata"]["name"]: o["data"] for o in objects if o["kind"] == "ConfigMap"}
    return connect, maps


@pytest.mark.parametrize("flavour,version,variable", [
    ("csm", "1.2", "KAFKA_CONNECT_METRICS_ENABLED"), ("csm", "1.4", "KAFKA_CONNECT_METRICS_ENABLED"),
    ("strimzi", "0.48.0", "KAFKA_CONNECT_JMX_EXPORTER_ENABLED"),
    ("strimzi", "1.2.0", "KAFKA_CONNECT_JMX_EXPORTER_ENABLED")])
def test_operator_attaches_the_agent_as_the_release_does(flavour, version, variable):
    from infra.tools.rehearsal import operator
    connect, maps = _connect(flavour, version)
    release = find(Flavour(flavour), version)
    setup = operator.worker(release, connect, {"target-us-east-ca": {"ca.crt": material("us-east").ca_pem.encode(),
                                                                     "ca-0.crt": material("us-east").ca_pem.encode()},
                                               "target-us-east-password": {"pass": b"pw"},
                                               "source-us-west-tls": {"truststore.jks": b"x"}},
                            "127.0.0.9", maps, "/jars/jmx_prometheus_javaagent-1.0.1.jar")
    # kafka_connect_run.sh's -javaagent, on the pod's own address here.
    assert setup.jvm_options == ["-javaagent:/jars/jmx_prometheus_javaagent-1.0.1.jar=127.0.0.9:9404:"
                                 "/opt/kafka/custom-config/metrics-config.json"]
    assert setup.env[variable] == "true"
    # The ConfigMap's YAML as the JSON the operator writes (Jackson: compact, the same document).
    written = setup.files["/opt/kafka/custom-config/metrics-config.json"].decode()
    assert json.loads(written) == yaml.safe_load(maps[RULES]["metrics-config.yml"])
    assert written == json.dumps(json.loads(written), separators=(",", ":"))


def test_operator_refuses_a_missing_rules_configmap_or_key():
    from infra.tools.rehearsal import operator
    connect, maps = _connect("csm", "1.2")
    with pytest.raises(operator.OperatorRefusal, match=f"^ConfigMap {RULES} does not exist$"):
        operator.metrics_json(connect, {k: v for k, v in maps.items() if k != RULES})
    with pytest.raises(operator.OperatorRefusal,
                       match=f"^ConfigMap {RULES} does not contain specified key metrics-config.yml$"):
        operator.metrics_json(connect, {**maps, RULES: {"other.yml": "rules: []"}})
    assert operator.metrics_json(connect, {**maps, RULES: {"metrics-config.yml": ""}}) == "{}"
    # No metricsConfig, or Strimzi's reporter: no agent, no file.
    bare, _ = _connect("csm", "1.2", metrics=False)
    assert operator.metrics_json(bare, maps) is None
    reporter, _ = _connect("strimzi", "1.2.0", exporter="strimziMetricsReporter")
    assert operator.metrics_json(reporter, maps) is None


@pytest.mark.parametrize("release", SUPPORTED, ids=lambda r: r.name)
@pytest.mark.parametrize("flow, part, source, plain", [
    (FLOW, None, "us-west", True), ("repl-a-b", "high", "a", True),
    # Names YAML reads as something else (a boolean, a number, null): written whole, quoted.
    ("on", None, "123", False), ("repl-x-y", "null", "yes", False), ("1e3", "no", "off", False),
    # Names that hold a stand-in: written whole too.
    ("a-connectstandin", None, "a", True), ("x-sourcestandin", "sourcestandin", "flowstandin", True)])
def test_the_exporter_yaml_is_the_rules_written_whole(release, flow, part, source, plain):
    """exporter_yaml writes the text once per release and puts each Connect cluster's names in
    (metrics._template): the same text as writing that cluster's rules whole, names that YAML
    would quote included."""
    n = FlowNames(flow, source, "target", part)
    assert all(map(metrics._plain, (n.flow, n.connect, source))) is plain  # YAML writes them as they are, or quoted
    text = metrics.exporter_yaml(release, n, source)
    assert text == yaml.dump(metrics.exporter_config(release, n, source), Dumper=yaml.SafeDumper, sort_keys=False,
                             width=1000)
    assert not any(s in text for s in metrics._STANDINS if not any(s in v for v in (n.flow, n.connect, source)))
    # Each stand-in is a name nothing else in the rules contains.
    template = metrics._template(release)
    rules = len(metrics.exporter_config(release, N, "us-west")["rules"])
    assert [template.count(s) for s in metrics._STANDINS] == [rules, rules, 1 if release.source_tag_optional else 0]
