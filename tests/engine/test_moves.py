"""A flow moved to another Kubernetes cluster (its `kubernetes`), on two real API servers with the
Pulumi CLI and its Kubernetes provider: the old objects go before the new ones are created, so two
Connect clusters never share the flow's group and storage topics; and the move away from a
cluster whose API server is gone, as docs/operations.md#moving-a-flow-to-another-kubernetes-cluster
writes it. No operator runs here: what the old operator does with the deleted KafkaConnectors
(it removes the connectors from its Connect cluster; their offsets stay in the Connect cluster's
offsets topic on the target Kafka) is Strimzi's, not shown."""

from __future__ import annotations

from pathlib import Path

import yaml

from infra.tools.rehearsal.apiserver import stop
from infra.tools.rehearsal.kubeapi import Client
from tests.engine.harness import Engine
from tests.engine.test_engine import stack_project
from tests.support.engine import servers

NS = "repl-west-east"
TOPOLOGY = {
    "kubernetes": {"k8s-a": {"context": "ctx-a"}, "k8s-b": {"context": "ctx-b"}},
    "operator": {"flavour": "strimzi", "version": "1.2.0", "readiness": {"wait": False}},
    "clusters": {"west": {"bootstrapServers": "kafka.west.example.com:9094"},
                 "east": {"bootstrapServers": "kafka.east.example.com:9094"}},
    "flows": [{"source": "west", "target": "east", "topics": ["orders.*"], "kubernetes": "k8s-a"}],
}
# What the provider prints when the cluster of an object it must delete does not answer.
UNREACHABLE = ("configured Kubernetes cluster is unreachable. If the cluster was deleted, you can remove this "
               "resource from Pulumi state by rerunning the operation with the PULUMI_K8S_DELETE_UNREACHABLE "
               "environment variable set to \"true\"")


def _flow_objects(client: Client) -> list[str]:
    """The flow's objects on one API server: its namespace's, and the namespace."""
    found = []
    for path, kind in (("/api/v1", "configmaps"), ("/apis/rbac.authorization.k8s.io/v1", "roles"),
                       ("/apis/rbac.authorization.k8s.io/v1", "rolebindings"),
                       ("/apis/kafka.strimzi.io/v1", "kafkaconnects"), ("/apis/kafka.strimzi.io/v1", "kafkaconnectors")):
        code, body = client.request("GET", f"{path}/namespaces/{NS}/{kind}")
        found += [f"{kind}/{o['metadata']['name']}" for o in (body.get("items", []) if code == 200 else [])]
    code, body = client.request("GET", f"/api/v1/namespaces/{NS}")
    if code == 200 and body.get("status", {}).get("phase") != "Terminating":
        found.append(f"namespace/{NS}")
    return sorted(found)


def test_a_flow_moved_between_kubernetes_clusters_is_deleted_before_it_is_created(engine: Engine, tmp_path: Path):
    path = tmp_path / "topology.yaml"
    topology = yaml.safe_load(yaml.safe_dump(TOPOLOGY))
    path.write_text(yaml.safe_dump(topology))
    states, ambient, _ = servers("move", topology, tmp_path)
    try:
        clients = {name: Client(state) for name, state in states.items()}
        # Any stack file of the repository's serves: the topology is this test's.
        kubeconfig, project = stack_project(engine, path, states, ambient, "regions", "moves")
        first = engine.run("up", project, "regions", kubeconfig=kubeconfig)
        assert first.code == 0, first.output
        deployed = _flow_objects(clients["k8s-a"])
        assert deployed == [
            "configmaps/connect-metrics", "configmaps/replication", "configmaps/source-west", "configmaps/target-east",
            f"kafkaconnectors/{NS}-checkpoint", f"kafkaconnectors/{NS}-heartbeat", f"kafkaconnectors/{NS}-source",
            f"kafkaconnects/{NS}", f"namespace/{NS}", f"rolebindings/{NS}-connector-configuration",
            f"roles/{NS}-connector-configuration"]
        assert _flow_objects(clients["k8s-b"]) == []

        # Moved: every object of the flow is deleted from k8s-a before the first is created in k8s-b.
        topology["flows"][0]["kubernetes"] = "k8s-b"
        path.write_text(yaml.safe_dump(topology))
        moved = engine.run("up", project, "regions", kubeconfig=kubeconfig)
        assert moved.code == 0, moved.output
        kube = [e for e in moved.events if e["type"].startswith("kubernetes:")]
        ops = [e["op"] for e in kube]
        assert ops.count("delete-replaced") == ops.count("create-replacement") == len(deployed), ops
        last_delete = max(i for i, op in enumerate(ops) if op == "delete-replaced")
        first_create = min(i for i, op in enumerate(ops) if op == "create-replacement")
        assert last_delete < first_create, ops
        # The connectors first, the namespace last: nothing of the old Connect cluster outlives its connectors.
        deletes = [e["urn"].rpartition("::")[2] for e in kube if e["op"] == "delete-replaced"]
        assert deletes[-1] == NS and {d.rpartition("/")[2] for d in deletes[:3]} == {
            f"{NS}-source", f"{NS}-checkpoint", f"{NS}-heartbeat"}, deletes
        assert _flow_objects(clients["k8s-a"]) == [] and _flow_objects(clients["k8s-b"]) == deployed

        # Moved back while k8s-b's API server is gone: the deletes fail first, so nothing is created
        # in k8s-a; with the provider's PULUMI_K8S_DELETE_UNREACHABLE the unreachable objects leave
        # the state and the flow is created in k8s-a.
        stop(tmp_path / "apiserver-k8s-b")
        topology["flows"][0]["kubernetes"] = "k8s-a"
        path.write_text(yaml.safe_dump(topology))
        refused = engine.run("up", project, "regions", kubeconfig=kubeconfig)
        assert refused.code != 0 and UNREACHABLE in refused.output, refused.output
        assert _flow_objects(clients["k8s-a"]) == []
        recovered = engine.run("up", project, "regions", kubeconfig=kubeconfig,
                               env={"PULUMI_K8S_DELETE_UNREACHABLE": "true"})
        assert recovered.code == 0, recovered.output
        assert _flow_objects(clients["k8s-a"]) == deployed
        # The variable is kept in the providers' state (`deleteUnreachable`): the next `pulumi up`
        # without it updates the two providers and nothing else; the one after changes nothing.
        again = engine.run("up", project, "regions", kubeconfig=kubeconfig)
        assert again.code == 0, again.output
        assert {urn.rpartition("::")[2]: op for urn, op in again.changes().items()} == {
            "kubernetes-k8s-a": "update", "kubernetes-k8s-b": "update"}
        still = engine.run("up", project, "regions", kubeconfig=kubeconfig, expect_no_changes=True)
        assert still.code == 0, still.output
    finally:
        for name in states:
            stop(tmp_path / f"apiserver-{name}")
