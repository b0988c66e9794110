"""A Kafka cluster's client items: the one table (spark/clientprops.CLIENT_ITEMS) and each
representation made from it, with their exact keys per security mode; and client values that
would only break at run time (bootstrap addresses that resolve in another Kubernetes cluster)."""

from __future__ import annotations

import copy

import pytest
import yaml

from infra import render, validation
from infra.errors import TopologyError
from infra.rules import service_address

REGIONS = yaml.safe_load(open(render.stack_config.ROOT / "stacks" / "regions.yaml"))


def problems(data: dict) -> list[str]:
    with pytest.raises(TopologyError) as exc:
        validation.parse(data)
    return [str(p) for p in exc.value.problems]


# ------------------------------------------------------------------ in-cluster addresses

THREE_LABELS = ("a three-label name whose last label is no top-level domain, read as the pod "
                "`<pod>.<service>.<namespace>` of a headless Service (write it with a final dot, `{name}.`, if it is "
                "a DNS name outside Kubernetes)")


@pytest.mark.parametrize("host", ["kafka-0.kafka-brokers.kafka", "broker-1.kafka-headless.kafka-us-west",
                                  "kafka-0.brokers.ns1"])
def test_pod_addresses_of_a_headless_service_are_in_cluster(host):
    assert service_address(host) == THREE_LABELS.format(name=host)


@pytest.mark.parametrize("host", ["kafka.example.com", "kafka.eu-central.example.com", "broker-1.example.de",
                                  "kafka.corp.internal", "kafka-0.kafka-brokers.kafka.", "kafka.xn--p1ai.xn--p1ai",
                                  "10.0.0.1"])
def test_names_that_may_be_public_are_not(host):
    assert service_address(host) is None


def test_a_pod_address_used_from_another_kubernetes_cluster_is_refused():
    data = copy.deepcopy(REGIONS)
    data["clusters"]["us-west"]["bootstrapServers"] = "kafka-0.kafka-brokers.kafka:9094"
    data["flows"] = [f for f in data["flows"] if f["source"] == "us-west"]
    assert problems(data) == [
        "clusters.us-west: bootstrapServers: got 'kafka-0.kafka-brokers.kafka:9094'; expected an address reachable "
        "from Kubernetes cluster k8s-eu-central, where orders-us-west-to-eu runs: kafka-0.kafka-brokers.kafka is "
        f"{THREE_LABELS.format(name='kafka-0.kafka-brokers.kafka')}, which resolves inside Kubernetes cluster "
        "k8s-us-west only (use a LoadBalancer, NodePort, Route or Ingress listener's address, or deploy the flow "
        "beside it)"]
    # Written as a public name, it is taken as one.
    data["clusters"]["us-west"]["bootstrapServers"] = "kafka-0.kafka-brokers.kafka.:9094"
    validation.parse(data)
