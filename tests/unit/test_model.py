"""Invalid input: every problem at once, naming the flow/cluster, field, value and what is allowed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from infra.checks import validation
from infra.core.errors import TopologyError
from infra.tools import render
from tests.support.refusals import problems
from tests.support.stacks import ROOT, doc_topology, write_topology


def test_the_documented_topology_is_valid():
    topo = validation.parse(doc_topology())
    (flow,) = topo.topology.flows
    assert flow.flow_name == "repl-us-west-us-east"
    assert flow.groups == ["test.*"] and flow.topics == ["test.*"]


def test_unknown_keys_are_errors():
    t = doc_topology()
    t["flows"][0]["topic"] = "x"
    t["clusters"]["us-west"]["bootstrapServer"] = "x:1"
    assert problems(t) == [
        "clusters.us-west: bootstrapServer: got 'bootstrapServer'; expected a known key: did you mean "
        "`bootstrapServers`? (unknown keys are errors; see docs/topology.md)",
        "flows[0] (repl-us-west-us-east): topic: got 'topic'; expected a known key: did you mean `topics`? (unknown "
        "keys are errors; see docs/topology.md)",
    ]


def test_all_field_problems_are_reported_together():
    t = doc_topology()
    t["clusters"]["us-west"]["security"]["protocol"] = "TLS"
    t["flows"][0]["replicationPolicy"] = "prefixless"
    t["flows"][0]["tasksMax"] = {"source": 0}
    t["flows"][0]["topics"] = ["orders(", "a,b"]
    found = problems(t)
    assert len(found) == 4, found
    assert found[0].startswith("clusters.us-west: security.protocol: got 'TLS'; expected "
                               "'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT' or 'SASL_SSL'")
    assert any(p.startswith("flows[0] (repl-us-west-us-east): replicationPolicy: got 'prefixless'; "
                            "expected 'default' or 'identity'") for p in found)
    assert any("tasksMax.source: got 0; expected an integer from 1 to 2147483647" in p for p in found)
    assert "flows[0] (repl-us-west-us-east): topics: got ['orders(', 'a,b']; expected 'orders(' is not a valid " \
           "Java regex (Unclosed group); 'a,b': one regex per list item (Kafka splits the list on commas)" in found


def test_cross_flow_rules():
    t = doc_topology()
    t["clusters"]["Bad_Alias"] = {"bootstrapServers": "x:1"}
    t["flows"] = [
        {"source": "us-west", "target": "us-east", "topics": "a"},
        {"source": "us-west", "target": "us-east", "topics": "b"},
        {"source": "us-west", "target": "us-west", "topics": "c", "name": "loop"},
        {"source": "eu", "target": "us-east", "topics": "d", "name": "Not_DNS"},
    ]
    assert problems(t) == [
        "clusters.Bad_Alias: alias: got 'Bad_Alias'; expected lowercase letters, digits and '-' (DNS-1123), at most 30 characters",
        "flows[1] (repl-us-west-us-east): name: got 'repl-us-west-us-east'; expected a name not used by flows[0] (repl-us-west-us-east)",
        "flows[2] (loop): target: got 'us-west'; expected a cluster other than the source",
        "flows[3] (Not_DNS): source: got 'eu'; expected a cluster alias defined under `clusters`: Bad_Alias, us-east, us-west",
        "flows[3] (Not_DNS): name: got 'Not_DNS'; expected lowercase letters, digits and '-' (DNS-1123), at most 40 characters",
    ]


def test_security_consistency():
    t = doc_topology()
    t["clusters"]["us-west"]["security"] = {"protocol": "SASL_SSL"}
    t["clusters"]["us-east"]["security"] = {"protocol": "SASL_SSL", "sasl": {"mechanism": "PLAIN", "username": "u"},
                                            "tls": {"clientCertificate": True}}
    found = problems(t)
    assert found == [
        "clusters.us-west: security: got {'protocol': 'SASL_SSL'}; expected protocol SASL_SSL needs `sasl` (mechanism and username)",
        "clusters.us-east: security: got {'protocol': 'SASL_SSL', 'sasl': {'mechanism': 'PLAIN', 'username': 'u'}, "
        "'tls': {'clientCertificate': True}}; expected `tls.clientCertificate` (mTLS) is only used with protocol SSL; "
        "with SASL_SSL the client authenticates through SASL",
    ]


def test_target_trust_must_be_pem():
    t = doc_topology()
    t["clusters"]["us-east"]["security"]["tls"]["trust"] = "jks"
    assert problems(t) == [
        "clusters.us-east: security.tls.trust: got 'jks'; expected pem: the cluster is the target of flow "
        "repl-us-west-us-east, and Strimzi's KafkaConnect trusts PEM certificates only (spec.tls.trustedCertificates)"]


def test_connector_overrides_may_not_take_managed_or_secret_keys():
    t = doc_topology()
    t["flows"][0]["config"] = {"source": {"topics": "x", "source.cluster.bootstrap.servers": "y",
                                          "ssl.key.password": "z", "offset.lag.max": 10}}
    found = problems(t)
    assert [p.split(": got ")[0] for p in found] == [
        "flows[0] (repl-us-west-us-east): config.source.source.cluster.bootstrap.servers",
        "flows[0] (repl-us-west-us-east): config.source.ssl.key.password",
        "flows[0] (repl-us-west-us-east): config.source.topics",
    ]


def test_missing_secret_config_names_the_cluster_and_the_command(tmp_path):
    path = write_topology(tmp_path, doc_topology())
    with pytest.raises(TopologyError) as exc:
        render.run("test", {"topology": str(path)}, {"us-west.password": "x"})
    assert [str(p) for p in exc.value.problems] == [
        "operator.imagePullSecret: password: missing; expected the registry password in secret config: "
        "pulumi config set --secret kafka-replication:registry.password ...",
        "clusters.us-east: secret config kafka-replication:us-east.caCert: missing; expected the PEM CA certificate "
        "(TLS trust: pem): pulumi config set --secret kafka-replication:us-east.caCert ...",
        "clusters.us-east: secret config kafka-replication:us-east.password: missing; expected the SASL password: "
        "pulumi config set --secret kafka-replication:us-east.password ...",
        "clusters.us-west: secret config kafka-replication:us-west.truststore: missing; expected the truststore file, "
        "base64-encoded (TLS trust: jks or pkcs12): pulumi config set --secret kafka-replication:us-west.truststore ...",
        "clusters.us-west: secret config kafka-replication:us-west.truststorePassword: missing; expected the "
        "truststore password (TLS trust: jks or pkcs12): pulumi config set --secret "
        "kafka-replication:us-west.truststorePassword ...",
    ]


def test_cli_exits_2_with_every_problem_and_no_traceback(tmp_path):
    t = doc_topology()
    t["flows"][0]["target"] = "nowhere"
    t["flows"][0]["colour"] = "blue"
    path = write_topology(tmp_path, t)
    proc = subprocess.run([sys.executable, "-m", "infra", "render", "--stack", "dev", "--topology", str(path),
                           "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    # The unknown key (schema) and the unknown alias (a rule) in one report.
    assert proc.stderr.startswith("error: the topology has 2 problem(s):")
    assert "flows[0] (repl-us-west-nowhere): colour" in proc.stderr
    assert "flows[0] (repl-us-west-nowhere): target: got 'nowhere'; expected a cluster alias" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "infra", "validate", str(path)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_cli_reports_unreadable_and_invalid_yaml(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("flows: [\n")
    for path in (bad, tmp_path / "missing.yaml"):
        proc = subprocess.run([sys.executable, "-m", "infra", "validate", str(path)], cwd=ROOT,
                              capture_output=True, text=True)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr and str(path) in proc.stderr


def test_json_schema_is_printed_and_documents_every_field():
    proc = subprocess.run([sys.executable, "-m", "infra", "schema"], cwd=ROOT, capture_output=True, text=True, check=True)
    schema = json.loads(proc.stdout)
    assert schema["title"] == "kafka-replication topology"
    assert set(schema["properties"]) == {"operator", "clusters", "flows", "audit", "monitoring", "kubernetes"}
    assert set(schema["$defs"]["KubernetesCluster"]["properties"]) == {"context", "kubeconfig"}
    assert schema["$defs"]["Flow"]["additionalProperties"] is False
    assert set(schema["$defs"]["Flow"]["required"]) == {"source", "target"}
