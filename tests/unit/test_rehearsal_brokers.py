"""A rehearsal's Kafka cluster of several brokers (infra/tools/rehearsal/kafka.py `brokers`): each
node's configuration as written, and the clusters it refuses before anything starts. The brokers
themselves start on the runtime tier (tests/runtime/test_leader_moves.py)."""

from __future__ import annotations

import pytest

from infra.tools.rehearsal.distance import Distance
from infra.tools.rehearsal.kafka import KafkaCluster
from infra.tools.rehearsal.process import Network, RuntimeStartError
from infra.tools.rehearsal.run import Rehearsal
from infra.topology.schema import Cluster
from tests.support.stacks import doc_topology

PORTS = [(9101, 9201), (9102, 9202), (9103, 9203)]


def cluster(tmp_path, bootstrap: str, brokers: int) -> KafkaCluster:
    k = KafkaCluster("east", Cluster(bootstrapServers=bootstrap), None, tmp_path / "east", Network(tmp_path),
                     brokers=brokers)
    k.ips = ["127.9.0.1", "127.9.0.2", "127.9.0.3"][:brokers]
    return k


COMMON = {
    "process.roles": "broker,controller", "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "REPLICATION",
    "listener.security.protocol.map": "CLIENTS:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "num.partitions": "1", "auto.create.topics.enable": "false", "offsets.topic.num.partitions": "5",
    "transaction.state.log.num.partitions": "5", "group.initial.rebalance.delay.ms": "0",
    "metadata.max.idle.interval.ms": "10000",
}


def test_one_broker_takes_every_host_name_and_keeps_its_one_node_configuration(tmp_path):
    k = cluster(tmp_path, "east-0:9093,east-1:9093", 1)
    assert k._server_properties(9093, PORTS[:1]) == {
        **COMMON, "node.id": "1", "controller.quorum.voters": "1@127.9.0.1:9101",
        "listeners": "CLIENTS://127.9.0.1:9093,REPLICATION://127.9.0.1:9201,CONTROLLER://127.9.0.1:9101",
        "advertised.listeners": "CLIENTS://east-0:9093,REPLICATION://127.9.0.1:9201",
        "log.dirs": str(tmp_path / "east" / "data"),
        "offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1", "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1"}
    assert [k._node_of_host(i) for i in range(2)] == [0, 0]  # both names lead to the one broker


def test_each_of_three_brokers_is_a_voter_on_its_own_host_name_with_every_topic_on_all_three(tmp_path):
    k = cluster(tmp_path, "east-0:9093,east-1:9093,east-2:9093", 3)
    assert k._server_properties(9093, PORTS, node=2) == {
        **COMMON, "node.id": "3",
        "controller.quorum.voters": "1@127.9.0.1:9101,2@127.9.0.2:9102,3@127.9.0.3:9103",
        "listeners": "CLIENTS://127.9.0.3:9093,REPLICATION://127.9.0.3:9203,CONTROLLER://127.9.0.3:9103",
        "advertised.listeners": "CLIENTS://east-2:9093,REPLICATION://127.9.0.3:9203",
        "log.dirs": str(tmp_path / "east" / "node-3" / "data"),
        "offsets.topic.replication.factor": "3", "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2", "share.coordinator.state.topic.replication.factor": "3",
        "share.coordinator.state.topic.min.isr": "2",
        "default.replication.factor": "3", "min.insync.replicas": "2", "leader.imbalance.check.interval.seconds": "5"}
    assert [k._node_of_host(i) for i in range(3)] == [0, 1, 2]


@pytest.mark.parametrize("bootstrap", ["east-0:9093", "east-0:9093,east-0:9093,east-1:9093",
                                       "east-0:9093,east-1:9093,east-2:9093,east-3:9093"])
def test_brokers_without_a_host_name_each_are_refused_before_anything_starts(tmp_path, bootstrap):
    k = cluster(tmp_path, bootstrap, 3)
    with pytest.raises(RuntimeStartError, match=r"^cluster east: 3 brokers need as many host names in its bootstrap "
                                                rf"servers, one each \({bootstrap}\)$"):
        k.start("unused-classpath")
    assert not (tmp_path / "east").exists()  # nothing written, nothing started


def test_a_cluster_at_a_distance_refuses_several_brokers_before_anything_starts(tmp_path):
    k = cluster(tmp_path, "east-0:9093,east-1:9093,east-2:9093", 3)
    k.far = Distance(50)
    with pytest.raises(RuntimeStartError, match="^cluster east: a cluster at a distance runs one broker, not 3$"):
        k.start("unused-classpath")
    assert not (tmp_path / "east").exists()


def test_a_linked_rehearsal_refuses_several_brokers_before_anything_starts(tmp_path):
    r = Rehearsal(doc_topology(), tmp_path, kube=None, linked=True, brokers={"us-east": 3})  # type: ignore[arg-type]
    with pytest.raises(RuntimeStartError,
                       match="^a link leads to one broker: a linked rehearsal runs one per cluster$"):
        r.start_clusters()
    assert r.clusters == {}
