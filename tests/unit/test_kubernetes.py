"""Several Kubernetes clusters (the topology's `kubernetes` section): every flow deploys into its
target Kafka's Kubernetes cluster through an explicit provider, in-cluster addresses are not
used across clusters, one audit per Kubernetes cluster, and stacks without the section are as
they were."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from contract import outputs
from infra.checks import validation
from infra.checks.rules import service_address
from infra.core import names
from infra.tools import render
from tests.support.refusals import problems
from tests.support.stacks import ROOT, render_topology

REGIONS = yaml.safe_load(open(ROOT / "stacks" / "regions.yaml"))
# Where each flow of the regions stack must land: beside its target Kafka.
EXPECTED = {"orders-us-west-to-eu": "k8s-eu-central", "orders-us-east-to-eu": "k8s-eu-central",
            "reference-eu-to-us-west": "k8s-us-west", "reference-eu-to-us-east": "k8s-us-east"}


@pytest.fixture(scope="module")
def regions():
    return render.run("regions", placeholder_secrets=True)


def test_every_resource_carries_its_clusters_provider(regions):
    placed = [(r, r.kubernetes) for r in regions.resources if r.is_kubernetes]
    # With each Connect cluster's metrics rules ConfigMap and its TLS source's files Secret; no
    # password, CA or files Secret of eu-central's, nor an audit Secret for it (the team keeps them).
    assert len(placed) == 75
    for resource, cluster in placed:
        labels = resource.inputs["metadata"]["labels"]
        flow = labels.get(names.FLOW_LABEL)
        if flow:  # the flow's objects, and the audit's REST NetworkPolicy in the flow's namespace
            assert cluster == EXPECTED[flow], (resource.type, resource.name)
        else:
            assert cluster in EXPECTED.values(), (resource.type, resource.name)
    audits = sorted((r.kubernetes, r.inputs["metadata"]["name"]) for r, _ in placed if r.type.endswith(":CronJob"))
    assert audits == [("k8s-eu-central", names.AUDIT), ("k8s-us-east", names.AUDIT), ("k8s-us-west", names.AUDIT)]


def test_one_provider_per_kubernetes_cluster(regions):
    providers = {r.name: r for r in regions.resources if r.type == render.PROVIDER_TYPE}
    assert sorted(providers) == ["kubernetes-k8s-eu-central", "kubernetes-k8s-us-east", "kubernetes-k8s-us-west"]
    assert providers["kubernetes-k8s-us-west"].inputs["context"] == "prod-us-west"
    assert providers["kubernetes-k8s-us-east"].inputs["context"] == "prod-us-east"
    eu = providers["kubernetes-k8s-eu-central"]
    assert "context" not in eu.inputs
    # The kubeconfig comes from secret config and stays a secret.
    assert eu.inputs["kubeconfig"] == render.placeholder("kubernetes.k8s-eu-central.kubeconfig")
    assert "kubeconfig" in eu.secret_paths


def test_a_stack_without_the_section_uses_the_ambient_context():
    dev = render.run("dev", placeholder_secrets=True)
    assert not [r for r in dev.resources if r.type == render.PROVIDER_TYPE]
    assert {r.provider for r in dev.resources if r.is_kubernetes} == {""}
    assert "kubernetesCluster" not in json.dumps(dev.outputs)


def test_render_writes_each_cluster_apart(regions, tmp_path):
    written = render.write(regions, tmp_path / "out")
    assert sorted({w.split("/")[0] for w in written}) == ["k8s-eu-central", "k8s-us-east", "k8s-us-west"]
    assert "k8s-us-west/reference-eu-to-us-west/KafkaConnect-reference-eu-to-us-west.yaml" in written
    # Each cluster's audit audits the flows deployed there, with credentials for their Kafkas only.
    for cluster, flows, aliases in (("k8s-eu-central", ["orders-us-east-to-eu", "orders-us-west-to-eu"],
                                     ["eu-central", "us-east", "us-west"]),
                                    ("k8s-us-west", ["reference-eu-to-us-west"], ["eu-central", "us-west"])):
        cm = yaml.safe_load((tmp_path / "out" / cluster / "replication-audit" /
                             "ConfigMap-kafka-replication-audit.yaml").read_text())
        config = json.loads(cm["data"]["audit.json"])
        assert [f["name"] for f in config["flows"]] == flows
        assert sorted(config["clusters"]) == aliases
        # eu-central's every credential is the team's (projected from its Secrets): no Secret of ours.
        assert sorted(w for w in written if w.startswith(f"{cluster}/replication-audit/Secret-")) == [
            f"{cluster}/replication-audit/Secret-kafka-replication-audit-{a}.yaml" for a in aliases if a != "eu-central"]
    summary = render.summary(regions)
    assert "Kubernetes cluster k8s-us-east (provider kubernetes-k8s-us-east): + 20 objects" in summary
    assert "3 Kubernetes providers" in summary


def test_outputs_say_where_each_flow_runs(regions):
    out = regions.outputs
    for flow, cluster in EXPECTED.items():
        assert out["flows"][flow]["kubernetesCluster"] == cluster
        assert [c["kubernetesCluster"] for c in out["flows"][flow]["connectClusters"]] == [cluster]
    assert "audit" not in out
    assert {k: a["kubernetesCluster"] for k, a in out["audits"].items()} == {k: k for k in EXPECTED.values()}
    read = outputs.read(out)
    assert read.flows["orders-us-west-to-eu"].kubernetes_cluster == "k8s-eu-central"
    assert read.audit_namespaces == {k: "replication-audit" for k in EXPECTED.values()}


def test_a_split_flow_may_span_kubernetes_clusters(tmp_path):
    data = copy.deepcopy(REGIONS)
    data["flows"] = [{"name": "split", "source": "us-west", "target": "eu-central", "connectClusters": [
        {"name": "a", "topics": ["a.*"]}, {"name": "b", "topics": ["b.*"], "kubernetes": "k8s-us-east"}]}]
    r = render_topology(tmp_path, data)
    where = {r_.inputs["metadata"]["name"]: r_.kubernetes for r_ in r.resources if r_.type.endswith(":KafkaConnect")}
    assert where == {"split-a": "k8s-eu-central", "split-b": "k8s-us-east"}
    assert sorted(r.outputs["audits"]) == ["k8s-eu-central", "k8s-us-east"]


def test_service_addresses():
    assert service_address("kafka-bootstrap.kafka") is not None
    assert service_address("kafka-bootstrap.kafka.svc") == "a Kubernetes Service name (cluster DNS)"
    assert service_address("k.kafka.svc.cluster.local.") == "a Kubernetes Service name (cluster DNS)"
    assert service_address("kafka") is not None
    assert service_address("kafka.example.com") is None
    assert service_address("broker.io.") is None  # absolute: never searched
    assert service_address("10.1.2.3") is None


def test_an_in_cluster_address_of_another_cluster_is_refused():
    data = copy.deepcopy(REGIONS)
    data["clusters"]["us-west"]["bootstrapServers"] = "us-west-kafka-bootstrap.kafka.svc:9093"
    assert problems(data) == [
        "clusters.us-west: bootstrapServers: got 'us-west-kafka-bootstrap.kafka.svc:9093'; expected an address "
        "reachable from Kubernetes cluster k8s-eu-central, where orders-us-west-to-eu runs: "
        "us-west-kafka-bootstrap.kafka.svc is a Kubernetes Service name (cluster DNS), which resolves inside "
        "Kubernetes cluster k8s-us-west only (use a LoadBalancer, NodePort, Route or Ingress listener's address, "
        "or deploy the flow beside it)"]
    # Beside it, the same address is fine: reference-eu-to-us-west runs in k8s-us-west.
    data["flows"] = [f for f in data["flows"] if f["target"] == "us-west"]
    assert validation.parse(data).flows[0].parts[0].kubernetes == "k8s-us-west"


def test_an_in_cluster_address_of_an_unplaced_kafka_is_refused():
    data = copy.deepcopy(REGIONS)
    del data["clusters"]["us-west"]["kubernetes"]
    data["clusters"]["us-west"]["bootstrapServers"] = "kafka.us-west:9093"
    data["flows"] = [f for f in data["flows"] if f["source"] == "us-west"]
    assert problems(data) == [
        "clusters.us-west: bootstrapServers: got 'kafka.us-west:9093'; expected an address reachable from "
        "Kubernetes cluster k8s-eu-central, where orders-us-west-to-eu runs: kafka.us-west is a two-label name, "
        "read as the Service `<name>.<namespace>` (write it with a final dot, `kafka.us-west.`, if it is a "
        "public DNS name), which resolves inside one Kubernetes cluster, and clusters.us-west.kubernetes does "
        "not say which (use a LoadBalancer, NodePort, Route or Ingress listener's address, or deploy the flow "
        "beside it)"]


def test_where_a_flow_deploys_must_be_known():
    data = copy.deepcopy(REGIONS)
    del data["clusters"]["eu-central"]["kubernetes"]
    data["flows"] = data["flows"][:1]
    assert problems(data) == [
        "flows[0] (orders-us-west-to-eu): kubernetes: missing; expected the Kubernetes cluster it deploys to: "
        "its target clusters.eu-central says none (set clusters.<alias>.kubernetes, or the flow's `kubernetes`)"]
    data["flows"][0]["kubernetes"] = "k8s-us-west"
    assert validation.parse(data).flows[0].parts[0].kubernetes == "k8s-us-west"


def test_kubernetes_names_are_declared():
    data = copy.deepcopy(REGIONS)
    data["clusters"]["us-east"]["kubernetes"] = "k8s-mars"
    data["flows"].append({"source": "us-west", "target": "us-east", "bidirectional": True, "topics": ["x"],
                          "kubernetes": "k8s-us-west"})
    assert problems(data) == [
        "clusters.us-east: kubernetes: got 'k8s-mars'; expected a Kubernetes cluster declared under `kubernetes`: "
        "k8s-eu-central, k8s-us-east, k8s-us-west",
        "flows[4] (repl-us-west-us-east): kubernetes: got 'k8s-us-west'; expected no value on a bidirectional flow: "
        "each direction deploys beside its own target Kafka (clusters.<alias>.kubernetes)"]
    without = copy.deepcopy(REGIONS)
    del without["kubernetes"]
    assert problems(without)[0] == (
        "clusters.eu-central: kubernetes: got 'k8s-eu-central'; expected a Kubernetes cluster declared under "
        "`kubernetes` (the topology has no `kubernetes` section)")
    bad = copy.deepcopy(REGIONS)
    bad["kubernetes"]["k8s-us-west"] = {}
    assert problems(bad) == [
        "kubernetes.k8s-us-west: (kubernetes cluster): got {}; expected context (a kubeconfig context), kubeconfig: "
        "secretConfig, or both",
        "clusters.us-west: kubernetes: got 'k8s-us-west'; expected a Kubernetes cluster declared under "
        "`kubernetes`: k8s-eu-central, k8s-us-east"]
    # Both: the context picks one of the secret kubeconfig's contexts, and the provider gets both.
    both = copy.deepcopy(REGIONS)
    both["kubernetes"]["k8s-us-west"] = {"context": "west-admin", "kubeconfig": "secretConfig"}
    assert validation.parse(both).topology.kubernetes["k8s-us-west"].context == "west-admin"


# ----------------------------------------------------------------- readiness


def _planned(data: dict) -> dict[str, dict]:
    from infra.plan.stack import plan
    return {o["metadata"]["name"]: o for o in plan(validation.parse(data)).objects
            if o["kind"] in ("KafkaConnect", "KafkaConnector")}


def test_pulumi_up_waits_for_ready_with_the_stacks_timeout():
    data = copy.deepcopy(REGIONS)
    data["operator"]["readiness"] = {"timeoutSeconds": 1800}
    data["flows"] = data["flows"][:1]
    data["flows"][0]["state"] = {"checkpoint": "stopped"}
    objects = _planned(data)
    wait = {"pulumi.com/waitFor": "condition=Ready", "pulumi.com/timeoutSeconds": "1800"}
    force = {"pulumi.com/patchForce": "true"}  # a hand-made change is taken back
    assert objects["orders-us-west-to-eu"]["metadata"]["annotations"] == {
        "strimzi.io/use-connector-resources": "true", **force, **wait}
    # A running connector: Strimzi's Ready (no FAILED connector or task) and Connect's RUNNING.
    assert objects["orders-us-west-to-eu-source"]["metadata"]["annotations"] == {
        **force, **wait,
        "pulumi.com/waitFor": '["condition=Ready", "jsonpath={.status.connectorStatus.connector.state}=RUNNING"]'}
    # A stopped connector never reports Ready: nothing to wait for.
    assert objects["orders-us-west-to-eu-checkpoint"]["metadata"]["annotations"] == force
    assert {n: o["spec"].get("autoRestart") for n, o in objects.items() if o["kind"] == "KafkaConnector"} == {
        "orders-us-west-to-eu-source": {"enabled": True}, "orders-us-west-to-eu-checkpoint": {"enabled": True},
        "orders-us-west-to-eu-heartbeat": {"enabled": True}}


def test_waiting_and_restarts_can_be_switched_off():
    data = copy.deepcopy(REGIONS)
    data["operator"]["readiness"] = {"wait": False}
    data["operator"]["autoRestart"] = False
    objects = _planned(data)
    force = {"pulumi.com/patchForce": "true"}
    assert objects["orders-us-west-to-eu"]["metadata"]["annotations"] == {"strimzi.io/use-connector-resources": "true",
                                                                           **force}
    assert all(o["metadata"]["annotations"] == force and "autoRestart" not in o["spec"]
               for o in objects.values() if o["kind"] == "KafkaConnector")


def test_a_flow_limits_the_operators_restarts():
    data = copy.deepcopy(REGIONS)
    data["flows"][0]["maxRestarts"] = 10
    objects = _planned(data)
    restarts = {n: o["spec"]["autoRestart"] for n, o in objects.items() if o["kind"] == "KafkaConnector"}
    limited = {n: r for n, r in restarts.items() if n.startswith("orders-us-west-to-eu-")}
    assert limited == {name: {"enabled": True, "maxRestarts": 10} for name in (
        "orders-us-west-to-eu-source", "orders-us-west-to-eu-checkpoint", "orders-us-west-to-eu-heartbeat")}
    # The other flows keep the operator's default: no limit.
    assert len(restarts) > 3 and all(r == {"enabled": True} for n, r in restarts.items() if n not in limited)


def test_a_restart_limit_where_nothing_restarts_is_refused():
    data = copy.deepcopy(REGIONS)
    data["operator"]["autoRestart"] = False
    data["flows"][0]["maxRestarts"] = 10
    assert problems(data) == [
        "flows[0] (orders-us-west-to-eu): maxRestarts: got 10; expected no value while operator.autoRestart is false "
        "(the operator restarts nothing, so there is nothing to limit): drop maxRestarts, or set "
        "operator.autoRestart: true"]
    data["operator"]["autoRestart"] = True
    data["flows"][0]["maxRestarts"] = 0
    assert problems(data) == ["flows[0] (orders-us-west-to-eu): maxRestarts: got 0; expected an integer from 1 to "
                              "2147483647"]


def test_a_readiness_timeout_out_of_range_is_refused():
    data = copy.deepcopy(REGIONS)
    data["operator"]["readiness"] = {"timeoutSeconds": 5}
    assert problems(data) == ["operator: readiness.timeoutSeconds: got 5; expected an integer from 60 to 86400"]


def test_the_reader_refuses_a_mistyped_cluster(regions):
    out = copy.deepcopy(regions.outputs)
    out["flows"]["orders-us-west-to-eu"]["kubernetesCluster"] = 3
    with pytest.raises(outputs.ContractError) as exc:
        outputs.read(out)
    assert str(exc.value) == "flows.orders-us-west-to-eu.kubernetesCluster: got an integer; expected a non-empty string"
    out = copy.deepcopy(regions.outputs)
    out["audits"] = ["k8s-us-west"]
    with pytest.raises(outputs.ContractError) as exc:
        outputs.read(out)
    assert str(exc.value) == "audits: got a list; expected a mapping"


def test_status_reads_each_flow_from_its_own_cluster(regions):
    """`kafka-replication status` on a stack of several Kubernetes clusters: each flow's objects
    are asked of its cluster's reader alone, and each cluster's audit of its own."""
    from infra.tools import status

    class Asked:
        def __init__(self, cluster: str):
            self.cluster, self.asked = cluster, []

        def strimzi(self, kind, namespace, name):
            self.asked.append((kind, namespace, name))
            return None

        def cron_job(self, namespace, name):
            self.asked.append(("CronJob", namespace, name))
            return None

        def jobs_of(self, namespace, cron_job):
            return []

        def pods_of(self, namespace):
            return []
    stack = outputs.read(json.loads(json.dumps(regions.outputs)))
    readers = {c: Asked(c) for c in sorted(set(EXPECTED.values()))}
    report = status.collect(stack, list(stack.flows), readers)
    for cluster, reader in readers.items():
        flows = [f for f, c in EXPECTED.items() if c == cluster]
        expected = {("KafkaConnect", regions.outputs["flows"][f]["namespace"], cc["name"])
                    for f in flows for cc in regions.outputs["flows"][f]["connectClusters"]}
        assert {a for a in reader.asked if a[0] == "KafkaConnect"} == expected, cluster
        assert [a for a in reader.asked if a[0] == "CronJob"] == [("CronJob", "replication-audit", names.AUDIT)]
    assert sorted(a.kubernetes_cluster for a in report.audits) == sorted(readers)
    assert {f.name: f.kubernetes_cluster for f in report.flows} == EXPECTED
