"""The documents' advanced replication patterns as topologies (shared by pattern and schema tests)."""

from __future__ import annotations

from tests.support.stacks import doc_topology, on_release

CONVERT_FROM_BYTES = "com.cloudera.dim.kafka.connect.transforms.ConvertFromBytes$Value"
CONVERT_TO_BYTES = "com.cloudera.dim.kafka.connect.transforms.ConvertToBytes$Value"
JSON = "org.apache.kafka.connect.json.JsonConverter"
TOPIC_NAME_MATCHES = "org.apache.kafka.connect.transforms.predicates.TopicNameMatches"
NOT_HEARTBEATS = "^(?!(.+\\.)?heartbeats).*$"

# "Transforming the key or value" with the heartbeat predicate, as in the documents.
VALUE_CHAIN = {
    "transforms": [
        {"name": "ConvertFromBytes", "type": CONVERT_FROM_BYTES,
         "config": {"converter": JSON, "converter.schemas.enable": False}, "predicate": "NotHeartbeats"},
        {"name": "ReplaceField", "type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
         "config": {"renames": "name:replaced_name,age:replaced_age"}, "predicate": "NotHeartbeats"},
        {"name": "ConvertToBytes", "type": CONVERT_TO_BYTES,
         "config": {"converter": JSON, "converter.schemas.enable": False}, "predicate": "NotHeartbeats"},
    ],
    "predicates": [{"name": "NotHeartbeats", "type": TOPIC_NAME_MATCHES, "config": {"pattern": NOT_HEARTBEATS}}],
}


def flows(*flows: dict, flavour: str = "csm", version: str | None = None) -> dict:
    return on_release(doc_topology(flows=list(flows)), flavour, version)


def multi_instance(flavour: str = "csm", version: str | None = None) -> dict:
    """Two MirrorSourceConnectors, the second adding a header (documents: multiple instances)."""
    return flows({"source": "us-west", "target": "us-east", "groups": ["test.*"], "sources": [
        {"name": "first", "topics": ["test.*"]},
        {"name": "second", "topics": ["prod.*"], "transforms": [
            {"name": "insertHeader", "type": "org.apache.kafka.connect.transforms.InsertHeader",
             "config": {"header": "my_header_key", "value.literal": "my_header_value"}}]},
    ]}, flavour=flavour, version=version)


def split(flavour: str = "csm", version: str | None = None) -> dict:
    """One flow over a small and a high workload Connect cluster (documents: multiple Connect clusters)."""
    return flows({"source": "us-west", "target": "us-east", "name": "workload", "groups": ["test.*"],
                  "connectClusters": [
                      {"name": "small", "topics": ["low.*"], "connect": {"replicas": 3, "resources": {
                          "requests": {"memory": "1Gi", "cpu": "1"}, "limits": {"memory": "2Gi", "cpu": "2"}}},
                       "resourceQuota": {"hard": {"requests.cpu": "3", "limits.memory": "6Gi"}}},
                      {"name": "high", "topics": ["high.*"], "connect": {"replicas": 6, "resources": {
                          "requests": {"memory": "6Gi", "cpu": "2"}, "limits": {"memory": "12Gi", "cpu": "4"}}}},
                  ]}, flavour=flavour, version=version)


def bidirectional(flavour: str = "csm", version: str | None = None) -> dict:
    """A prefixless pair declared once (documents: bidirectional and prefixless flows). Each
    cluster is a target, so both trust PEM certificates (what KafkaConnect accepts)."""
    t = flows({"source": "us-west", "target": "us-east", "bidirectional": True, "topics": ["shared.*"],
               "tasksMax": {"source": 2}}, flavour=flavour, version=version)
    t["clusters"]["us-west"]["security"]["tls"] = {"trust": "pem"}
    return t


def value_chain(flavour: str = "csm", version: str | None = None) -> dict:
    return flows({"source": "us-west", "target": "us-east", "topics": ["test.*"], **VALUE_CHAIN}, flavour=flavour, version=version)


PATTERNS = {"multi-instance": multi_instance, "split": split, "bidirectional": bidirectional,
            "value-chain": value_chain}
