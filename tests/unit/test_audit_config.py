"""The audit configuration is derived from the plan: exactly what was deployed."""

from __future__ import annotations

from infra.checks import validation
from infra.plan.audit import audit_config
from infra.plan.stack import plan
from tests.support import patterns
from tests.support.stacks import DOC_TOPOLOGY

NS = "repl-us-west-us-east"

# The connector runs with Kafka's default excludes when it sets none (contract version 2).
KAFKA_EXCLUDES = [".*[\\-\\.]internal", ".*\\.replica", "__.*"]


def config_of(topology: dict) -> dict:
    topo = validation.parse(topology)
    return audit_config(topo, plan(topo))


def test_documented_flow():
    assert config_of(DOC_TOPOLOGY) == {"version": 2, "clusters": {
        "us-east": {"bootstrapServers": "us-east-kafka-bootstrap.kafka-us-east:9093", "securityProtocol": "SASL_SSL",
                    "saslMechanism": "PLAIN", "saslUsername": "replicator", "trust": "pem",
                    "clientCertificate": False},
        "us-west": {"bootstrapServers": "us-west-kafka-bootstrap.kafka-us-west:9093", "securityProtocol": "SASL_SSL",
                    "saslMechanism": "PLAIN", "saslUsername": "replicator", "trust": "jks",
                    "clientCertificate": False}},
        "settings": {"window": {"lookbackMinutes": 60, "graceMinutes": 10, "bucketSeconds": 60},
                     "thresholds": {"maxLag": 10000, "maxMissing": 0, "maxUnexpected": 0, "maxDuplicates": None,
                                    "maxHeartbeatAgeSeconds": 300, "maxCheckpointAgeSeconds": 600},
                     "pushgateway": None},
        "flows": [{
        "name": NS,
        "sourceAlias": "us-west",
        "targetAlias": "us-east",
        "replicationPolicy": "default",
        "topicPrefix": "us-west.",
        "aggregation": False,
        "connectors": [{"name": f"{NS}-source", "restUrl": f"http://{NS}-connect-api.{NS}.svc:8083",
                        "topics": ["test.*"], "topicsExclude": KAFKA_EXCLUDES, "compareValue": True, "stripHeaders": [],
                        "offsetLagMax": 100}],
        "heartbeats": {"source": "heartbeats", "target": "us-west.heartbeats"},
        "excludeTopics": {"source": ["heartbeats", "mm2-offset-syncs.us-east.internal"],
                          "target": [f"{NS}-config-topic", f"{NS}-offsets-topic", f"{NS}-status-topic",
                                     "us-west.checkpoints.internal", "us-west.heartbeats"]},
        "loopHeaders": None,
        "checkpointsTopic": "us-west.checkpoints.internal",
        "failover": {"procedure": "cutoff"},
    }]}


def test_each_connector_s_offset_lag_max_as_its_worker_reads_it():
    """What the checkpoint staleness tolerates (spark/checkpoints.py checkpoint_staleness): the
    connector's own offset.lag.max, a long, kept within the configuration's integers."""
    import copy
    for value, expected in ((1000, 1000), ("250", 250), (" 7 ", 7), (2**40, 2**31 - 1), (-1, 0)):
        topo = copy.deepcopy(DOC_TOPOLOGY)
        topo["flows"][0].setdefault("config", {}).setdefault("source", {})["offset.lag.max"] = value
        (flow,) = config_of(topo)["flows"]
        assert [c["offsetLagMax"] for c in flow["connectors"]] == [expected], value


def test_split_flow_lists_every_connector_with_its_rest_api():
    (flow,) = config_of(patterns.split())["flows"]
    assert flow["connectors"] == [
        {"name": "workload-high-source", "restUrl": "http://workload-high-connect-api.workload-high.svc:8083",
         "topics": ["high.*"], "topicsExclude": KAFKA_EXCLUDES, "compareValue": True, "stripHeaders": [],
                        "offsetLagMax": 100},
        {"name": "workload-small-source", "restUrl": "http://workload-small-connect-api.workload-small.svc:8083",
         "topics": ["low.*"], "topicsExclude": KAFKA_EXCLUDES, "compareValue": True, "stripHeaders": [],
                        "offsetLagMax": 100}]
    assert "workload-small-status-topic" in flow["excludeTopics"]["target"]


def test_bidirectional_pair_carries_its_loop_headers():
    flows = {f["name"]: f for f in config_of(patterns.bidirectional())["flows"]}
    assert flows["repl-us-west-us-east"]["loopHeaders"] == {"added": "replicated-from-us-west",
                                                            "dropped": "replicated-from-us-east"}
    assert flows["repl-us-east-us-west"]["topicPrefix"] == ""
    # Kafka 3.8 (CSM 1.2) has no emit.offset-syncs.enabled: the offset-syncs topic is still written.
    assert flows["repl-us-east-us-west"]["excludeTopics"]["source"] == ["heartbeats", "mm2-offset-syncs.us-west.internal"]
    # Kafka 3.9+ switches offset syncs off in a bidirectional pair: there is no such topic.
    for flavour, version in (("csm", "1.4"), ("strimzi", "1.2.0")):
        flows = {f["name"]: f for f in config_of(patterns.bidirectional(flavour, version))["flows"]}
        assert flows["repl-us-east-us-west"]["excludeTopics"]["source"] == ["heartbeats"]


def test_connectors_with_smts_compare_what_the_smts_keep():
    # The value chain rewrites values: compared on key, headers and timestamp only.
    (flow,) = config_of(patterns.value_chain())["flows"]
    assert [(c["compareValue"], c["stripHeaders"]) for c in flow["connectors"]] == [(False, [])]
    # InsertHeader adds a header the source never had: stripped, values still compared.
    (flow,) = config_of(patterns.multi_instance())["flows"]
    assert {c["name"]: (c["compareValue"], c["stripHeaders"]) for c in flow["connectors"]} == {
        "repl-us-west-us-east-source-first": (True, []),
        "repl-us-west-us-east-source-second": (True, ["my_header_key"])}
