"""The public components: usable without a topology file, typed for Pulumi's component provider
(schema generated and checked), refusing bad arguments before creating anything, and keeping the
URNs of every resource deployed before they existed (aliases, resolved as the engine does)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
from typing import Any

import pulumi
import pytest

from components import ReplicationFlow, ReplicationTopology
from components.replication import provider_schema
from contract.release import RELEASE
from infra.core import names
from infra.core.errors import TopologyError
from infra.core.names import FlowNames
from infra.tools import render
from infra.tools.render import RecordingMocks, under_mocks
from tests.support.material import material
from tests.support.stacks import ROOT, SECRETS, doc_topology, refused_in_process, render_topology
from tests.support.urns import Recorder, Registered, make_urn


def run(body, config: dict[str, str] | None = None, project: str = "kafka-replication") -> tuple[RecordingMocks, Any]:
    """`body()` as a program under Pulumi's mocks: the recorded resources and what it returned."""
    mocks = RecordingMocks()
    return mocks, under_mocks(body, mocks, project, "test", config or {}, list(config or {}))


def kube(mocks: RecordingMocks) -> dict[tuple[str, str], dict]:
    return {(r.type.split(":")[-1], r.name): r.inputs for r in mocks.resources if r.is_kubernetes}


# ----------------------------------------------------------------- URNs


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_urn_deployed_before_the_components_is_kept(stack):
    """Each resource of today's program answers to exactly one URN the stack had before the
    public components existed (tests/data/urns-<stack>.txt): its own, or an alias."""
    before = set((ROOT / "tests" / "data" / f"urns-{stack}.txt").read_text().split())
    with Recorder() as rec:
        result = render.run(stack, placeholder_secrets=True)
    aliases = rec.alias_urns()
    kept: dict[str, str] = {}
    new = []
    for urn, olds in sorted(aliases.items()):
        matches = ({urn} | olds) & before
        assert len(matches) <= 1, (urn, matches)
        if matches:
            old = matches.pop()
            assert old not in kept, (old, urn, kept.get(old))
            kept[old] = urn
        else:
            new.append(urn)
    # The source's store files moved to a Secret of their own (FlowNames.source_files_secret): a
    # source Secret left with nothing else is retired on purpose, its files under the new URN,
    # created before the Connect pods roll onto it and the old one deleted after.
    objects = result.objects()
    mounting = [o for o in objects if o["kind"] == "KafkaConnect" and o["spec"].get("template", {}).get("pod", {}).get(
        "volumes")]
    files = {(o["metadata"]["namespace"], v["secret"]["secretName"]) for o in mounting
             for v in o["spec"]["template"]["pod"]["volumes"]}
    retired = before - set(kept)
    assert sorted(u.rsplit("::", 1)[1] for u in retired) == {
        "dev": [], "prod": ["repl-eu-central-archive/source-eu-central"]}[stack]
    assert all(":Secret::" in u for u in retired)
    assert sorted(u.rsplit("::", 1)[1] for u in new if ":Secret::" in u) == sorted(f"{ns}/{name}" for ns, name in files)
    new = [u for u in new if ":Secret::" not in u]
    # Objects the program gained since, with no URN to keep: each Connect cluster's metrics
    # rules ConfigMap (infra/plan/metrics.py), under its flow's ClusterAccess.
    metrics_rules = "$kafka-replication:flow:ClusterAccess$kubernetes:core/v1:ConfigMap::"
    added = [u for u in new if metrics_rules in u and u.endswith("/" + FlowNames("f", "s", "t").metrics_configmap)]
    assert len(added) == len([o for o in objects if o["kind"] == "KafkaConnect"])
    new = [u for u in new if u not in added]
    # And kube-state-metrics' configuration of the operator's view (monitoring/operator.py), and
    # on prod, whose monitoring has a grafanaOperator section, the GrafanaDashboard.
    monitoring_urn = (f"urn:pulumi:{stack}::kafka-replication::kafka-replication:index:ReplicationTopology$"
                      "kafka-replication:monitoring:ReplicationMonitoring$kubernetes:")
    assert new == [
        f"{monitoring_urn}core/v1:ConfigMap::replication-monitoring/{names.KSM_CONFIGMAP}",
        *([f"{monitoring_urn}grafana.integreatly.org/v1beta1:GrafanaDashboard::replication-monitoring/"
           f"{names.GRAFANA_DASHBOARD}"] if stack == "prod" else []),
        f"urn:pulumi:{stack}::kafka-replication::kafka-replication:index:ReplicationTopology::replication"]
    # The URNs did move (under the ReplicationTopology): the aliases are what keeps them.
    assert not set(aliases) & before


def test_alias_resolution_follows_the_engine():
    """A parent's alias carries its children: the child answers to its URN under the old parent."""
    stack = "urn:pulumi:s::p::pulumi:pulumi:Stack::p-s"
    top = "urn:pulumi:s::p::x:index:Top::t"
    mid = "urn:pulumi:s::p::x:index:Top$x:m:Mid::m"
    leaf = "urn:pulumi:s::p::x:index:Top$x:m:Mid$k:v:Leaf::l"
    from pulumi.runtime.proto import alias_pb2
    rec = Recorder()
    rec.registered = [
        Registered(stack, "pulumi:pulumi:Stack", "p-s", ""),
        Registered(top, "x:index:Top", "t", stack),
        Registered(mid, "x:m:Mid", "m", top, [alias_pb2.Alias(spec=alias_pb2.Alias.Spec(noParent=True))]),
        Registered(leaf, "k:v:Leaf", "l", mid),
    ]
    assert rec.alias_urns() == {top: set(), mid: {"urn:pulumi:s::p::x:m:Mid::m"},
                                leaf: {"urn:pulumi:s::p::x:m:Mid$k:v:Leaf::l"}}
    assert make_urn("urn:pulumi:s::p", stack, "a:b:C", "n") == "urn:pulumi:s::p::a:b:C::n"


# ----------------------------------------------------------------- without a topology file


def example():
    spec = importlib.util.spec_from_file_location("single_flow", ROOT / "docs" / "examples" / "single-flow" /
                                                  "__main__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXAMPLE_SECRETS = {"kafka-replication-example:us-west.password": "s3cret",
                   "kafka-replication-example:us-west.caCert": material("us-west").ca_pem,
                   "kafka-replication-example:us-east.caCert": material("us-east").ca_pem}


def test_the_example_program_deploys_one_flow_without_a_topology_file():
    module = example()
    mocks, flows = run(lambda: module.main().flows, EXAMPLE_SECRETS, project="orders-replication")
    objects = kube(mocks)
    assert sorted(k for k in objects if k[0] in ("Namespace", "KafkaConnect", "KafkaConnector")) == [
        ("KafkaConnect", "orders/orders"), ("KafkaConnector", "orders/orders-checkpoint"),
        ("KafkaConnector", "orders/orders-heartbeat"), ("KafkaConnector", "orders/orders-source"),
        ("Namespace", "orders")]
    connect = objects[("KafkaConnect", "orders/orders")]
    assert connect["apiVersion"] == "kafka.strimzi.io/v1beta2"  # Strimzi 0.48.0, as the example asks
    assert connect["spec"]["bootstrapServers"] == "us-east-kafka-bootstrap.kafka-us-east:9093"
    source = objects[("KafkaConnector", "orders/orders-source")]["spec"]["config"]
    assert source["topics"] == "${cfmap:orders/replication:topics}"
    assert flows["orders"]["connectClusters"][0]["restUrl"] == "http://orders-connect-api.orders.svc:8083"
    types = {r.type for r in mocks.resources if not r.is_kubernetes}
    assert types == {"kafka-replication:index:ReplicationFlow", "kafka-replication:flow:ReplicationFlow",
                     "kafka-replication:flow:ClusterAccess", "kafka-replication:flow:ConnectCluster",
                     "kafka-replication:flow:MirrorConnectors"}
    # Secret material stays secret: the SASL password is only in the source Secret, marked secret.
    secret = next(r for r in mocks.resources if r.name == "orders/source-us-west" and r.type.endswith("Secret"))
    assert secret.secret_paths and "s3cret" not in json.dumps([r.inputs for r in mocks.resources
                                                               if r is not secret])


def test_a_topology_from_code_renders_what_the_file_renders(tmp_path):
    """ReplicationTopology given the documented topology as data creates the same objects as the
    program given it as a file."""
    mocks, outputs = run(lambda: ReplicationTopology("replication", {"topology": doc_topology(),
                                                                     "secrets": dict(SECRETS)}).outputs)
    by_file = render_topology(tmp_path, doc_topology())
    assert sorted(kube(mocks)) == sorted((r.type.split(":")[-1], r.name) for r in by_file.resources
                                         if r.is_kubernetes)
    assert outputs["flows"] == by_file.outputs["flows"]


def test_bad_arguments_are_refused_before_anything_is_created():
    flow = {"source": "us-west", "target": "nowhere", "topics": "("}
    with pytest.raises(TopologyError) as exc:
        run(lambda: ReplicationFlow("bad", {"clusters": example().CLUSTERS, "flow": flow, "secrets": {}}).flows)
    assert exc.value.report().splitlines() == [
        "ReplicationFlow bad has 2 problem(s):",
        "  - flows[0] (repl-us-west-nowhere): topics: got '('; expected '(' is not a valid Java regex (Unclosed group)",
        "  - flows[0] (repl-us-west-nowhere): target: got 'nowhere'; expected a cluster alias defined under "
        "`clusters`: us-east, us-west",
    ]


def test_a_topology_that_is_an_output_is_refused():
    with pytest.raises(TopologyError) as exc:
        run(lambda: ReplicationTopology("t", {"topology": pulumi.Output.from_input(doc_topology()),
                                              "secrets": {}}).flows)
    assert exc.value.report().splitlines() == [
        "ReplicationTopology t has 1 problem(s):",
        "  - args: topology: got an Output; expected a plain value known when the program runs: it decides which "
        "resources exist (only `secrets` values may be Outputs)"]


def test_missing_secret_items_are_named():
    with pytest.raises(TopologyError) as exc:
        run(lambda: ReplicationFlow("orders", {"clusters": example().CLUSTERS, "flow": example().FLOW,
                                               "secrets": {"us-west.password": "pw"}}).flows)
    report = exc.value.report()
    assert "us-west.caCert" in report and "us-east.caCert" in report and "us-west.password" not in report


# ----------------------------------------------------------------- the provider


def test_the_provider_schema_is_generated_from_the_code_and_checked_in():
    """`make provider-schema` writes it; a change of the components' Args or Outputs must show in
    components/schema.json (and so in every consumer's generated SDK)."""
    checked_in = json.loads((ROOT / "components" / "schema.json").read_text())
    assert provider_schema() == checked_in
    resources = checked_in["resources"]
    assert sorted(resources) == ["kafka-replication:index:ReplicationFlow",
                                 "kafka-replication:index:ReplicationTopology"]
    flow = resources["kafka-replication:index:ReplicationFlow"]
    assert (flow["isComponent"], flow["requiredInputs"], flow["required"]) == (
        True, ["clusters", "flow", "secrets"], ["flows"])
    assert sorted(flow["inputProperties"]) == ["clusters", "flow", "operator", "secrets"]
    topology = resources["kafka-replication:index:ReplicationTopology"]
    assert (topology["requiredInputs"], sorted(topology["properties"])) == (["secrets", "topology"],
                                                                             ["flows", "outputs"])


def test_the_schema_check_sees_a_changed_component(monkeypatch):
    from components import replication
    monkeypatch.setitem(replication.ReplicationFlowArgs.__annotations__, "extra", pulumi.Input[str])
    assert "extra" in provider_schema()["resources"]["kafka-replication:index:ReplicationFlow"]["inputProperties"]
    assert provider_schema() != json.loads((ROOT / "components" / "schema.json").read_text())


def untyped(schema: dict) -> list[str]:
    """Where the schema's inputs (the resources' input properties and every type) say Any."""
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            if node.get("$ref") == "pulumi.json#/Any":
                found.append(path)
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}[{i}]")
    for token, resource in sorted(schema["resources"].items()):
        walk(resource["inputProperties"], f"{token}.inputProperties")
    walk(schema.get("types", {}), "types")
    return found


def test_the_provider_schema_types_every_input_from_the_model():
    """No Any where the model knows the type: an object type per model class with the class's
    own fields and required ones, an enum per choice, a union where the model takes several
    kinds of value; every reference resolves."""
    from infra.topology.schema import json_schema
    schema = json.loads((ROOT / "components" / "schema.json").read_text())
    assert untyped(schema) == []
    model = json_schema()
    types = schema["types"]
    for name, definition in model["$defs"].items():
        typed = types[f"kafka-replication:index:{name}"]
        if "enum" in definition:
            assert [e["value"] for e in typed["enum"]] == definition["enum"]
        else:
            assert sorted(typed["properties"]) == sorted(definition["properties"])
            assert typed.get("required", []) == sorted(definition.get("required", []))
    assert sorted(types["kafka-replication:index:Topology"]["properties"]) == sorted(model["properties"])
    refs = re.findall(r'"\$ref": "#/types/([^"]+)"', json.dumps(schema))
    assert refs and set(refs) <= set(types)
    cluster = types["kafka-replication:index:Cluster"]
    assert cluster == {"type": "object", "required": ["bootstrapServers"], "properties": {
        "bootstrapServers": {"type": "string", "plain": True},
        "kubernetes": {"type": "string", "plain": True},
        "security": {"$ref": "#/types/kafka-replication:index:Security", "plain": True}}}
    assert types["kafka-replication:index:Mechanism"] == {"type": "string", "enum": [
        {"value": "PLAIN"}, {"value": "SCRAM-SHA-256"}, {"value": "SCRAM-SHA-512"}]}
    assert types["kafka-replication:index:Transform"]["properties"]["config"] == {
        "type": "object", "plain": True, "additionalProperties": {
            "oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "boolean"}], "plain": True}}
    flow = schema["resources"]["kafka-replication:index:ReplicationFlow"]["inputProperties"]
    assert flow["clusters"]["additionalProperties"] == {"$ref": "#/types/kafka-replication:index:Cluster",
                                                        "plain": True}
    assert flow["flow"]["$ref"] == "#/types/kafka-replication:index:Flow"
    # The secret material is secret in every SDK, and the registry knows what the package is.
    assert [r["inputProperties"]["secrets"].get("secret") for r in schema["resources"].values()] == [True, True]
    assert {k: schema[k] for k in ("description", "keywords", "version")} == {
        "description": "Kafka cross-cluster replication on Kubernetes: MirrorMaker 2 on a dedicated Strimzi "
                       "KafkaConnect per flow, from a topology of clusters and flows",
        "keywords": ["kafka", "strimzi", "mirrormaker2", "replication", "kind/component", "category/infrastructure"],
        "version": RELEASE}


def test_the_provider_schema_types_the_outputs_from_the_contract():
    """`outputs` and `flows` typed as the outputs contract (contract/outputs.py SCHEMA) types
    them, not Any: each object of the contract a type with the contract's fields and required ones,
    a nullable field its kind; what an SDK's user reads is what docs/outputs.md describes."""
    from contract.outputs import SCHEMA
    schema = json.loads((ROOT / "components" / "schema.json").read_text())
    types = schema["types"]
    topology, flow = (schema["resources"][f"kafka-replication:index:{r}"]["properties"]
                      for r in ("ReplicationTopology", "ReplicationFlow"))
    assert topology["outputs"]["$ref"] == "#/types/kafka-replication:index:Outputs"
    assert topology["flows"]["additionalProperties"] == flow["flows"]["additionalProperties"] == {
        "$ref": "#/types/kafka-replication:index:OutputsFlow"}
    outputs = [t for name, t in types.items() if name.split(":")[-1].startswith("Outputs")]
    assert "pulumi.json#/Any" not in json.dumps([topology, flow, outputs])
    whole, each = types["kafka-replication:index:Outputs"], types["kafka-replication:index:OutputsFlow"]
    assert (sorted(whole["properties"]), whole["required"]) == (sorted(SCHEMA["properties"]), sorted(SCHEMA["required"]))
    assert sorted(each["properties"]) == sorted(SCHEMA["$defs"]["flow"]["properties"])
    assert each["required"] == sorted(SCHEMA["$defs"]["flow"]["required"])
    assert whole["properties"]["outputsVersion"] == {"type": "integer"}  # the const
    assert whole["properties"]["operatorFlavour"] == {"type": "string"}  # the enum
    assert types["kafka-replication:index:OutputsOperator"]["properties"]["kafkaVersion"] == {"type": "string"}


def test_the_untyped_check_finds_an_any_input():
    from components import provider_schema as typing_
    schema = json.loads((ROOT / "components" / "schema.json").read_text())
    # A model field of a kind the conversion does not know becomes Any: the check names it.
    assert typing_.property_type({"type": "tuple"}) == {"$ref": "pulumi.json#/Any"}
    schema["types"]["kafka-replication:index:Cluster"]["properties"]["kubernetes"] = {"$ref": "pulumi.json#/Any"}
    assert untyped(schema) == ["types.kafka-replication:index:Cluster.properties.kubernetes"]


def test_secret_material_given_as_an_output_is_checked_when_it_resolves():
    """In a process of its own, as `pulumi up` runs a program (conftest.refused_in_process)."""
    lines, _ = refused_in_process(
        "import pulumi\nfrom components import ReplicationFlow\nfrom tests.support.material import material\n"
        "from tests.unit.test_components import example\nmodule = example()\n"
        "secrets = {'us-west.password': pulumi.Output.secret('pw'), "
        "'us-west.caCert': pulumi.Output.secret('not a certificate'), 'us-east.caCert': material('us-east').ca_pem}",
        "ReplicationFlow('orders', {'clusters': module.CLUSTERS, 'flow': module.FLOW, 'secrets': secrets}).flows")
    assert lines == [
        "the secret arguments has 1 problem(s):",
        "  - clusters.us-west: secret config kafka-replication:us-west.caCert: got the secret value (not shown); "
        "expected the PEM CA certificate (TLS trust: pem); this is unusable: no PEM certificate (-----BEGIN CERTIFICATE-----)"]


def test_each_secret_item_given_as_an_output_is_checked_once(monkeypatch):
    """Hundreds of objects use a stack's few secret items: each item is one Output, checked once
    when it resolves, not once per object that holds it (docs/performance.md)."""
    from infra.deploy import config as stack_config
    checked: list[str] = []
    real = stack_config.unusable_secrets

    def counting(keys, text, *args, **kwargs):
        # Called before anything deploys too, where an Output's text cannot be read yet.
        checked.extend(k for k in keys if text(k) is not None)
        return real(keys, text, *args, **kwargs)
    monkeypatch.setattr(stack_config, "unusable_secrets", counting)
    # Two flows from one source: its items are held by the objects of both.
    topology = doc_topology()
    topology["clusters"]["eu"] = {"bootstrapServers": "eu-kafka-bootstrap.kafka-eu:9093",
                                  "security": {"protocol": "SSL", "tls": {"trust": "pem"}}}
    topology["flows"].append({"source": "us-west", "target": "eu", "topics": ["test.*"]})
    secrets = {k: pulumi.Output.secret(v) for k, v in {**SECRETS, "eu.caCert": material("eu").ca_pem}.items()}
    mocks, _ = run(lambda: ReplicationTopology("replication", {"topology": topology, "secrets": secrets}).flows)
    assert sorted(checked) == sorted(set(checked))
    assert {"us-west.password", "us-west.truststore", "us-east.caCert", "eu.caCert"} <= set(checked)
    # Both flows' source Secrets hold the source's items, which were checked once each.
    assert sorted(r.name for r in mocks.resources if r.name.endswith("/source-us-west") and r.secret_paths) == [
        "repl-us-west-eu/source-us-west", "repl-us-west-us-east/source-us-west"]
    assert checked.count("us-west.password") == checked.count("us-west.truststore") == 1


def test_the_provider_process_serves_the_typed_schema(tmp_path):
    """components/__main__.py as Pulumi runs the plugin (the engine's address as its argument):
    it prints its port, and GetSchema over gRPC answers with components/schema.json."""
    import subprocess
    import sys

    import grpc
    from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc
    process = subprocess.Popen([sys.executable, str(ROOT / "components" / "__main__.py"), "127.0.0.1:1"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        port = int(process.stdout.readline())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            reply = provider_pb2_grpc.ResourceProviderStub(channel).GetSchema(provider_pb2.GetSchemaRequest(),
                                                                              timeout=60)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert json.loads(reply.schema) == json.loads((ROOT / "components" / "schema.json").read_text())
