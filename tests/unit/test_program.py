"""The Pulumi program itself: URNs (a public contract), its error path, and the documented example."""

from __future__ import annotations

import re

import pulumi
import pytest
import yaml

from components import program
from infra.checks import validation
from infra.tools.render import RecordingMocks
from tests.support.stacks import ROOT, doc_topology, render_topology, write_topology

NS = "repl-us-west-us-east"


def test_resource_names_and_types_are_stable(doc_render):
    """Changing any of these replaces live objects: do it only with `aliases`."""
    assert sorted((r.type, r.name) for r in doc_render.resources) == sorted([
        ("kafka-replication:index:ReplicationTopology", "replication"),
        ("kafka-replication:flow:ReplicationFlow", NS),
        ("kafka-replication:flow:ClusterAccess", f"{NS}/access"),
        ("kafka-replication:flow:ConnectCluster", f"{NS}/connect"),
        ("kafka-replication:flow:MirrorConnectors", f"{NS}/connectors"),
        ("kubernetes:core/v1:Namespace", NS),
        ("kubernetes:core/v1:Secret", f"{NS}/cloudera-registry"),
        ("kubernetes:core/v1:ConfigMap", f"{NS}/replication"),
        ("kubernetes:core/v1:ConfigMap", f"{NS}/connect-metrics"),
        ("kubernetes:core/v1:ConfigMap", f"{NS}/source-us-west"),
        ("kubernetes:core/v1:ConfigMap", f"{NS}/target-us-east"),
        ("kubernetes:core/v1:Secret", f"{NS}/source-us-west"),
        ("kubernetes:core/v1:Secret", f"{NS}/source-us-west-tls"),
        ("kubernetes:core/v1:Secret", f"{NS}/target-us-east-ca"),
        ("kubernetes:core/v1:Secret", f"{NS}/target-us-east-password"),
        ("kubernetes:kafka.strimzi.io/v1beta2:KafkaConnect", f"{NS}/{NS}"),
        ("kubernetes:rbac.authorization.k8s.io/v1:Role", f"{NS}/{NS}-connector-configuration"),
        ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", f"{NS}/{NS}-connector-configuration"),
        ("kubernetes:kafka.strimzi.io/v1beta2:KafkaConnector", f"{NS}/{NS}-source"),
        ("kubernetes:kafka.strimzi.io/v1beta2:KafkaConnector", f"{NS}/{NS}-checkpoint"),
        ("kubernetes:kafka.strimzi.io/v1beta2:KafkaConnector", f"{NS}/{NS}-heartbeat"),
    ])


def test_program_refuses_missing_secrets_with_a_run_error(tmp_path):
    """Under `pulumi up`: a RunError (shown without traceback) listing every missing key."""
    path = write_topology(tmp_path, doc_topology())
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="kafka-replication", stack="test")
    pulumi.runtime.set_all_config({"kafka-replication:topology": str(path)}, secret_keys=[])
    with pytest.raises(pulumi.RunError) as exc:
        program.main()
    message = str(exc.value)
    assert message.startswith("the topology has 6 problem(s):")
    assert "kafka-replication:us-west.truststorePassword" in message
    assert mocks.resources == []  # nothing declared


def test_documented_example_topology_is_valid_and_renders(tmp_path):
    text = (ROOT / "docs" / "topology.md").read_text()
    example = re.search(r"## A complete example\n\n```yaml\n(.*?)```", text, re.S).group(1)
    path = tmp_path / "example.yaml"
    path.write_text(example)
    topo = validation.load(path)
    assert [d.name for d in topo.flows] == ["repl-us-west-us-east"]
    r = render_topology(tmp_path, yaml.safe_load(example), secrets={})
    assert r.outputs["flows"][NS]["connectors"]["source"] == [f"{NS}-source"]


def test_program_reads_its_previous_outputs_through_a_stack_reference(tmp_path):
    """Under `pulumi up` the two-step exactly-once guard reads the stack's own last outputs."""
    t = doc_topology()
    t["flows"][0]["exactlyOnce"] = "enabled"
    path = write_topology(tmp_path, t)
    mocks = RecordingMocks({"flows": {NS: {"exactlyOnce": "disabled"}}})
    pulumi.runtime.set_mocks(mocks, project="kafka-replication", stack="test")
    keys = ["us-west.password", "us-west.truststore", "us-west.truststorePassword", "us-east.password",
            "us-east.caCert", "registry.password"]
    pulumi.runtime.set_all_config({"kafka-replication:topology": str(path),
                                   **{f"kafka-replication:{k}": "x" for k in keys}},
                                  secret_keys=[f"kafka-replication:{k}" for k in keys])
    with pytest.raises(pulumi.RunError, match="exactlyOnce: got 'enabled'; expected preparing first"):
        program.main()
    assert mocks.resources == []
