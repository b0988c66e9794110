"""The commonest mistakes, said in the user's terms: the missing or misspelt key named with the
closest known one and its line, no wording of the validation library, every problem at once
(the safety rules too); bad command-line input exits 2 with a message, never 3; one Kafka
cluster has one alias however its brokers' addresses are written; values that would break only
at run time are refused before anything deploys."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest
import yaml

from infra.__main__ import main
from infra.checks import validation
from infra.core import reading
from infra.core.errors import TopologyError
from infra.tools import render
from tests.support.stacks import ROOT, SECRETS, doc_topology, refused_in_process

TOPOLOGY = """\
clusters:
  us-west:
    bootstrapServer: w.example:9092
  us-east:
    bootstrapServers: e.example:9092
flows:
  - target: us-east
    topics: [".*"]
  - source: us-west
    target: us-east
    name: second
    topics: []
    heartbeat: false
"""


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_missing_and_misspelt_keys_are_named_with_their_line_and_the_closest_key(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(TOPOLOGY)
    code, _, err = run("validate", str(path))
    assert code == 2
    assert err == (
        "error: the topology has 5 problem(s):\n"
        "  - line 2: clusters.us-west: bootstrapServers: missing; expected a value (required; `bootstrapServer` is "
        "set instead: a misspelling?)\n"
        "  - line 3: clusters.us-west: bootstrapServer: got 'bootstrapServer'; expected a known key: did you mean "
        "`bootstrapServers`? (unknown keys are errors; see docs/topology.md)\n"
        "  - line 7: flows[0]: source: missing; expected a value (required)\n"
        "  - line 12: flows[1] (second): topics: got []; expected at least 1 item\n"
        "  - line 13: flows[1] (second): heartbeat: got 'heartbeat'; expected a known key: did you mean `heartbeats`? "
        "(unknown keys are errors; see docs/topology.md)\n")
    assert "None" not in err and "Dictionary" not in err and "should" not in err


@pytest.mark.parametrize("change, expected", [
    (lambda t: t.update(clusters={}),
     "topology: clusters: got {}; expected at least 1 entry"),
    (lambda t: t.update(flows="a flow"), "topology: flows: got 'a flow'; expected a list"),
    (lambda t: t["clusters"]["us-west"].update(bootstrapServers=9092),
     "clusters.us-west: bootstrapServers: got 9092; expected a string"),
    (lambda t: t["flows"][0].update(heartbeats="maybe"),
     "flows[0] (repl-us-west-us-east): heartbeats: got 'maybe'; expected true or false"),
    (lambda t: t["flows"][0].update(tasksMax=[1]),
     "flows[0] (repl-us-west-us-east): tasksMax: got [1]; expected a mapping (key: value)"),
    (lambda t: t["clusters"]["us-west"].update(bootstrapServers=""),
     "clusters.us-west: bootstrapServers: got ''; expected a non-empty string"),
    (lambda t: t["operator"].update(operater=1),
     "operator: operater: got 'operater'; expected a known key: flavour, version, targetConnection, connect, "
     "imagePullSecret, readiness, autoRestart (unknown keys are errors; see docs/topology.md)"),
])
def test_no_wording_of_the_validation_library(change, expected):
    t = doc_topology()
    change(t)
    with pytest.raises(TopologyError) as exc:
        validation.parse(t)
    assert [str(p) for p in exc.value.problems] == [expected]


def test_a_safety_rule_is_said_beside_an_invalid_alias():
    t = doc_topology()
    t["clusters"]["Third_Cluster"] = {"bootstrapServers": "third.example:9092"}
    t["clusters"]["us-west"]["security"]["tls"]["trust"] = "pem"  # a target too
    t["flows"] = [{"source": "us-west", "target": "us-east", "topics": ["orders"], "replicationPolicy": "identity"},
                  {"source": "us-east", "target": "us-west", "topics": ["orders"], "replicationPolicy": "identity"}]
    with pytest.raises(TopologyError) as exc:
        validation.parse(t)
    assert [str(p) for p in exc.value.problems] == [
        "clusters.Third_Cluster: alias: got 'Third_Cluster'; expected lowercase letters, digits and '-' (DNS-1123), "
        "at most 30 characters",
        "flows[1] (repl-us-east-us-west): replicationPolicy: got 'identity'; expected no cycle of identity flows "
        "that replicate the same topics: us-east -> us-west -> us-east (repl-us-east-us-west -> "
        "repl-us-west-us-east) would replicate topic 'orders' forever. Declare a bidirectional pair (one flow with "
        "`bidirectional: true`, which adds the loop filter) or use the default policy"
        "; to fail back under the identity policy, keep one direction: remove the flow you failed over with, then deploy its reverse (docs/operations.md)"]


# ----------------------------------------------------------------- the command line: exit 2, never 3


def test_a_plain_setting_given_as_a_secret_is_refused(tmp_path):
    code, _, err = run("render", "--stack", "dev", "--out", str(tmp_path / "o"), "--placeholder-secrets",
                       "--secret", "topology=stacks/prod.yaml")
    assert code == 2
    assert err == (
        "error: the command line has 1 problem(s):\n  - --secret: topology: got 'a value (not shown)'; expected a "
        "secret config key: <alias>.<item> (items: password, caCert, truststore, truststorePassword, clientCert, "
        "clientKey), registry.password or kubernetes.<name>.kubeconfig; this stack reads registry.password, "
        "us-east.caCert, us-east.password, us-west.password, us-west.truststore, us-west.truststorePassword. Plain "
        "settings such as `topology` go with --set\n")
    assert not (tmp_path / "o").exists()


def test_a_truststore_beside_a_placeholder_password_and_a_bad_truststore_exit_2(tmp_path):
    code, _, err = run("render", "--stack", "dev", "--out", str(tmp_path / "o"), "--placeholder-secrets",
                       "--secret", "us-west.truststore=not base64!!")
    assert code == 2
    assert err == ("error: the command line has 1 problem(s):\n  - --secret: us-west.truststorePassword: missing; "
                   "expected a value beside us-west.truststore: the two are read together, and a placeholder would "
                   "not fit the real one\n")
    code, _, err = run("render", "--stack", "dev", "--out", str(tmp_path / "o"), "--placeholder-secrets",
                       "--secret", "us-west.truststore=not base64!!", "--secret", "us-west.truststorePassword=pw1")
    assert code == 2
    assert err == ("error: the topology has 1 problem(s):\n  - clusters.us-west: secret config "
                   "kafka-replication:us-west.truststore: got the secret value (not shown); expected the truststore "
                   "file, base64-encoded (TLS trust: jks or pkcs12); this is unusable: the truststore is not base64 (Only "
                   "base64 data is allowed)\n")
    assert "pw1" not in err


@pytest.mark.parametrize("outputs, expected", [
    ({"flows": [1]}, "/flows: got 'list'; expected an object of flows by name (docs/outputs.md)"),
    ({"flows": {"repl-us-west-us-east": "enabled"}},
     "/flows.repl-us-west-us-east: got 'str'; expected an object (docs/outputs.md)"),
])
def test_previous_outputs_of_the_wrong_shape_exit_2(tmp_path, outputs, expected):
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    code, _, err = run("render", "--stack", "dev", "--out", str(tmp_path / "o"), "--placeholder-secrets",
                       "--previous-outputs", str(path))
    assert code == 2
    where, _, rest = expected.partition(":")
    assert err == f"error: the command line has 1 problem(s):\n  - {path}: {where[1:]}:{rest}\n"


def test_a_successful_render_prints_nothing_on_stderr(tmp_path):
    """The engine's event loop is closed before exit: no asyncio traceback after success."""
    for i in range(3):
        proc = subprocess.run([sys.executable, "-m", "infra", "render", "--stack", "prod", "--out",
                               str(tmp_path / f"o{i}"), "--placeholder-secrets"],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr


# ----------------------------------------------------------------- one cluster, one name


@pytest.mark.parametrize("west, east", [
    ("[::1]:9092", "[0:0:0:0:0:0:0:1]:9092"),
    ("[::ffff:127.0.0.1]:9092", "127.0.0.1:9092"),
    ("[2001:DB8::1]:9092", "[2001:db8:0:0::1]:9092"),
    ("Kafka.Example.COM.:09092", "kafka.example.com:9092"),
])
def test_one_broker_however_it_is_written_has_one_alias(west, east):
    t = doc_topology()
    t["clusters"]["us-west"]["bootstrapServers"] = west
    t["clusters"]["us-east"]["bootstrapServers"] = east
    with pytest.raises(TopologyError) as exc:
        validation.parse(t)
    assert [str(p) for p in exc.value.problems][0] == (
        f"clusters.us-west: bootstrapServers: got {west!r}; expected servers of this cluster only: {west} is also a "
        "bootstrap server of cluster us-east; one Kafka cluster must have exactly one alias")


def test_different_addresses_are_different_clusters():
    t = doc_topology()
    t["clusters"]["us-west"]["bootstrapServers"] = "[::1]:9092"
    t["clusters"]["us-east"]["bootstrapServers"] = "[::2]:9092"
    assert validation.parse(t).flows


# ----------------------------------------------------------------- values that break at run time


def test_a_target_username_with_a_reference_is_refused():
    t = doc_topology()
    t["clusters"]["us-east"]["security"]["sasl"]["username"] = "${file:/opt/kafka/connect-password:x}"
    with pytest.raises(TopologyError) as exc:
        validation.parse(t)
    assert [str(p) for p in exc.value.problems] == [
        "clusters.us-east: security.sasl.username: got '${file:/opt/kafka/connect-password:x}'; expected a username "
        "without quotes, backslashes, control characters (line breaks) or ${ (the Connect worker would resolve it as "
        "a config-provider reference) (at most 256 characters)"]


def test_a_registry_username_with_a_colon_is_refused():
    t = doc_topology()
    t["operator"]["imagePullSecret"]["username"] = "robot:team"
    with pytest.raises(TopologyError) as exc:
        validation.parse(t)
    assert [str(p) for p in exc.value.problems] == [
        "operator: imagePullSecret.username: got 'robot:team'; expected a username without ':' (the registry's "
        "`auth` is user:password, split at the first ':'), quotes, backslashes, control characters or ${ (at most "
        "256 characters)"]


def test_a_target_password_with_a_reference_is_refused_where_the_release_writes_it_literally(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc_topology()))  # CSM 1.2: the worker file holds the password itself
    secrets = {**SECRETS, "us-east.password": "${env:HOME}"}
    with pytest.raises(TopologyError) as exc:
        render.run("test", {"topology": str(path)}, secrets)
    assert [str(p) for p in exc.value.problems] == [
        "clusters.us-east: secret config kafka-replication:us-east.password: got the secret value (not shown); "
        "expected the SASL password; this is a password with ${: the cluster is a flow's target, and this operator "
        "release writes its password literally into the Connect worker's file, where the worker would resolve ${...} "
        "as a config-provider reference (reading a file or Secret instead)"]
    assert "HOME" not in exc.value.report()
    # A source's password is read through a config provider once: taken as it is.
    render.run("test", {"topology": str(path)}, {**SECRETS, "us-west.password": "${env:HOME}"})
    # Strimzi 0.47+ keeps the password behind a reference of its own: resolved once, taken as it is.
    strimzi = doc_topology()
    strimzi["operator"] = {"flavour": "strimzi", "version": "0.48.0"}
    path.write_text(yaml.safe_dump(strimzi))
    render.run("test", {"topology": str(path)}, secrets)


def test_two_kubernetes_entries_whose_kubeconfigs_lead_to_one_api_server(tmp_path):
    from tests.support.kubeconfigs import valid
    t = reading.load_yaml_file(ROOT / "stacks/regions.yaml", "topology file")
    t["kubernetes"]["k8s-us-east"] = {"kubeconfig": "secretConfig"}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(t))
    same = {"kubernetes.k8s-eu-central.kubeconfig": yaml.safe_dump(valid("https://API.example.com.")),
            "kubernetes.k8s-us-east.kubeconfig": yaml.safe_dump(valid("https://api.example.com:443/"))}
    with pytest.raises(TopologyError) as exc:
        render.run("regions", {"topology": str(path)}, same, placeholder_secrets=True)
    assert [str(p) for p in exc.value.problems] == [
        "kubernetes.k8s-us-east: secret config kafka-replication:kubernetes.k8s-us-east.kubeconfig: got the secret value "
        "(not shown); expected a kubeconfig of another Kubernetes cluster: it leads to the API server "
        "kubernetes.k8s-eu-central's leads to (one cluster, one name: two would each get the audit's namespace and "
        "objects)"]
    other = {**same, "kubernetes.k8s-us-east.kubeconfig": yaml.safe_dump(valid("https://api.example.com:6443"))}
    assert render.run("regions", {"topology": str(path)}, other, placeholder_secrets=True).objects()


def test_two_kubernetes_entries_naming_one_context():
    t = reading.load_yaml_file(ROOT / "stacks/regions.yaml", "topology file")
    t["kubernetes"]["k8s-us-east"] = {"context": "prod-us-west"}
    with pytest.raises(TopologyError) as exc:
        validation.parse(t)
    assert [str(p) for p in exc.value.problems] == [
        "kubernetes.k8s-us-west: context: got 'prod-us-west'; expected a context of another Kubernetes cluster: "
        "kubernetes.k8s-us-east names it too (one cluster, one name: two would each get the audit's namespace and "
        "objects)"]
    # A secret kubeconfig's context of the same name is another kubeconfig's: compared once it is known.
    t["kubernetes"]["k8s-us-east"] = {"context": "prod-us-west", "kubeconfig": "secretConfig"}
    assert validation.parse(t).flows


def test_a_target_password_given_as_an_output_is_checked_for_references_when_it_resolves():
    """Through the component (an Output, as ESC hands it): the same rule when the value resolves.
    In a process of its own, as `pulumi up` runs a program (conftest.refused_in_process)."""
    lines, printed = refused_in_process(
        "import pulumi\nfrom components import ReplicationTopology\nfrom tests.support.stacks import SECRETS, "
        "doc_topology\nsecrets = {**SECRETS, 'us-east.password': pulumi.Output.secret('${env:HOME}')}",
        "ReplicationTopology('t', {'topology': doc_topology(), 'secrets': secrets}).outputs")
    assert lines == [
        "the secret arguments has 1 problem(s):",
        "  - clusters.us-east: secret config kafka-replication:us-east.password: got the secret value (not shown); "
        "expected the SASL password; this is a password with ${: the cluster is a flow's target, and this operator "
        "release writes its password literally into the Connect worker's file, where the worker would resolve "
        "${...} as a config-provider reference (reading a file or Secret instead)"]
    assert "HOME" not in printed


# ----------------------------------------------------------------- found in review


def test_a_flow_naming_an_unknown_cluster_does_not_hide_the_safety_rules(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("clusters:\n  a: {bootstrapServers: 'a.k:9092'}\n  c: {bootstrapServers: 'c.k:9092'}\n"
                    "flows:\n  - {source: a, target: bb, topics: [x]}\n"
                    "  - {source: a, target: c, topics: [orders], replicationPolicy: identity}\n"
                    "  - {source: c, target: a, topics: [orders], replicationPolicy: identity}\n")
    code, _, err = run("validate", str(path))
    assert code == 2
    assert err.splitlines()[1:] == [
        "  - line 5: flows[0] (repl-a-bb): target: got 'bb'; expected a cluster alias defined under `clusters`: a, c",
        "  - line 6: flows[1] (repl-a-c): replicationPolicy: got 'identity'; expected no cycle of identity flows "
        "that replicate the same topics: a -> c -> a (repl-a-c -> repl-c-a) would replicate topic 'orders' "
        "forever. Declare a bidirectional pair (one flow with `bidirectional: true`, which adds the loop filter) or "
        "use the default policy"
        "; to fail back under the identity policy, keep one direction: remove the flow you failed over with, then deploy its reverse (docs/operations.md)"]


def test_a_refused_override_key_says_its_own_line(tmp_path):
    t = doc_topology()
    t["flows"][0]["config"] = {"source": {"offset.lag.max": 10, "consumer.bootstrap.servers": "evil:9092"}}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(t, sort_keys=False))
    lines = path.read_text().splitlines()
    code, _, err = run("validate", str(path))
    assert code == 2
    line = next(i for i, text in enumerate(lines, 1) if "consumer.bootstrap.servers" in text)
    assert err.splitlines()[1].startswith(
        f"  - line {line}: flows[0] (repl-us-west-us-east): config.source.consumer.bootstrap.servers: got "), err


def test_the_replication_policy_separator_is_the_programs():
    t = doc_topology()
    t["flows"][0]["config"] = {"source": {"replication.policy.separator": "_"}}
    with pytest.raises(TopologyError) as exc:
        validation.parse(t)
    assert [str(p) for p in exc.value.problems] == [
        "flows[0] (repl-us-west-us-east): config.source.replication.policy.separator: got "
        "'replication.policy.separator'; expected a property the program does not set itself (topics, groups, "
        "policy and cluster connections come from the flow)"]


def test_previous_outputs_without_flows_are_refused(tmp_path):
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"outputsVersion": 1, "flow": {}}))
    code, _, err = run("render", "--stack", "dev", "--out", str(tmp_path / "o"), "--placeholder-secrets",
                       "--previous-outputs", str(path))
    assert code == 2
    assert err == (f"error: the command line has 1 problem(s):\n  - {path}: flows: missing; expected the stack's "
                   "outputs, which always have `flows` (`pulumi stack output --json`; docs/outputs.md)\n")


def test_a_capitalised_operator_flavour_is_refused_in_words_on_the_command_line(tmp_path):
    """`flavour: Strimzi` as the release notes spell it: exit 2 with the values allowed, never a
    traceback (status reading previous outputs that say so: tests/unit/test_status_verdicts.py)."""
    text = (ROOT / "stacks" / "dev.yaml").read_text()
    (tmp_path / "dev.yaml").write_text(text.replace("flavour: csm", "flavour: Strimzi"))
    assert "flavour: Strimzi" in (tmp_path / "dev.yaml").read_text()
    code, out, err = run("validate", str(tmp_path / "dev.yaml"))
    line = text.splitlines().index("  flavour: csm") + 1
    assert (code, out, err) == (2, "", "error: the topology has 1 problem(s):\n"
                                       f"  - line {line}: operator: flavour: got 'Strimzi'; expected 'csm' or 'strimzi'\n")


def test_a_misspelt_secret_key_is_refused_on_the_command_line(tmp_path):
    code, _, err = run("render", "--stack", "dev", "--out", str(tmp_path / "o"), "--placeholder-secrets",
                       "--secret", "us-wst.password=hunter2")
    assert code == 2
    assert err == ("error: the command line has 1 problem(s):\n  - --secret: us-wst.password: got 'a value (not "
                   "shown)'; expected a key this stack reads: did you mean us-west.password? (registry.password, "
                   "us-east.caCert, us-east.password, us-west.password, us-west.truststore, "
                   "us-west.truststorePassword)\n")
    assert "hunter2" not in err


@pytest.mark.parametrize("server", ["https://[::1", "https://api.example.com:99999", "https://api.example.com:x"])
def test_a_kubeconfig_server_that_is_no_url_exits_2(tmp_path, server):
    from tests.support.kubeconfigs import valid
    code, _, err = run("render", "--stack", "regions", "--out", str(tmp_path / "o"), "--placeholder-secrets",
                       "--secret", f"kubernetes.k8s-eu-central.kubeconfig={yaml.safe_dump(valid(server))}")
    assert code == 2
    assert err == ("error: the topology has 1 problem(s):\n  - kubernetes.k8s-eu-central: secret config "
                   "kafka-replication:kubernetes.k8s-eu-central.kubeconfig: got the secret value (not shown); "
                   "expected the kubeconfig of Kubernetes cluster k8s-eu-central (its contents); this is a "
                   "kubeconfig whose cluster's server is not a URL with a valid host and port (the client could "
                   "never connect)\n")


def test_a_pair_whose_keys_contain_a_name_of_the_program_is_planned(tmp_path):
    """Found by the verdict test: the pair's symmetry check swapped `source-a` inside the user's
    key `offset-syncs-source-admin.retries` and stopped a valid topology with an internal error."""
    t = {"operator": {"flavour": "csm", "version": "1.2"},
         "clusters": {"a": {"bootstrapServers": "a-kafka:9093"}, "b": {"bootstrapServers": "b-kafka:9093"}},
         "flows": [{"source": "a", "target": "b", "bidirectional": True,
                    "sources": [{"name": "more", "topics": "y", "config": {"offset-syncs-source-admin.retries": 3}}]}]}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(t))
    code, out, err = run("validate", str(path))
    assert (code, err) == (0, "")
    objects = render.run("test", {"topology": str(path)}, {}, placeholder_secrets=True).objects()
    sources = [o for o in objects if o["kind"] == "KafkaConnector" and o["metadata"]["name"].endswith("-source-more")]
    assert [o["spec"]["config"]["offset-syncs-source-admin.retries"] for o in sources] == [3, 3]
