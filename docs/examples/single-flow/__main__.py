"""Another team's program: one replication flow, declared in code, with no topology file.

    pulumi config set --secret kafka-replication-example:us-west.password ...
    pulumi config set --secret kafka-replication-example:us-east.caCert -- "$(cat ca.crt)"
    pulumi up

tests/unit/test_components.py runs `main()` under Pulumi's mocks.
"""

import pulumi

from components import ReplicationFlow

CLUSTERS = {
    "us-west": {"bootstrapServers": "us-west-kafka-bootstrap.kafka-us-west:9093",
                "security": {"protocol": "SASL_SSL", "sasl": {"mechanism": "SCRAM-SHA-512", "username": "replicator"}}},
    "us-east": {"bootstrapServers": "us-east-kafka-bootstrap.kafka-us-east:9093",
                "security": {"protocol": "SSL"}},
}
FLOW = {"source": "us-west", "target": "us-east", "name": "orders", "topics": ["orders\\..*"], "groups": ["orders-.*"]}


def main() -> ReplicationFlow:
    config = pulumi.Config("kafka-replication-example")
    secrets = {key: config.require_secret(key) for key in ("us-west.password", "us-west.caCert", "us-east.caCert")}
    orders = ReplicationFlow("orders", {"clusters": CLUSTERS, "flow": FLOW, "secrets": secrets,
                                        "operator": {"flavour": "strimzi", "version": "0.48.0"}})
    pulumi.export("restUrl", orders.flows.apply(lambda flows: flows["orders"]["connectClusters"][0]["restUrl"]))
    return orders


if __name__ == "__main__":
    main()
