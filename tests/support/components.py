"""A flow's arguments and secrets as a program hands them to the ReplicationFlow component."""

from __future__ import annotations

import copy

from tests.support.material import material

CLUSTERS = {
    "us-west": {"bootstrapServers": "us-west-kafka-bootstrap.kafka-us-west:9093",
                "security": {"protocol": "SASL_SSL", "sasl": {"mechanism": "SCRAM-SHA-512", "username": "replicator"}}},
    "us-east": {"bootstrapServers": "us-east-kafka-bootstrap.kafka-us-east:9093", "security": {"protocol": "SSL"}},
}


FLOW = {"source": "us-west", "target": "us-east", "name": "orders", "topics": ["orders\\..*"]}


def flow_secrets() -> dict:
    return {"us-west.password": "s3cret-pw", "us-west.caCert": material("us-west").ca_pem,
            "us-east.caCert": material("us-east").ca_pem}


def flow_args(**changes) -> dict:
    args = {"clusters": copy.deepcopy(CLUSTERS), "flow": copy.deepcopy(FLOW), "secrets": flow_secrets()}
    args.update(changes)
    return args
