"""The public components' arguments are checked like a topology file: before anything is
created (the component itself included), every problem in one error that names the argument,
what was given and what is allowed; secret values never shown."""

from __future__ import annotations

import copy

import pulumi
import pytest

from components import ReplicationFlow, ReplicationTopology
from infra.core.errors import TopologyError
from infra.tools.render import RecordingMocks, under_mocks
from tests.support.components import CLUSTERS, FLOW, flow_args, flow_secrets
from tests.support.material import material
from tests.support.stacks import ROOT, SECRETS, doc_topology, refused_in_process


def refused(make) -> tuple[list[str], RecordingMocks]:
    """The report's lines when `make()` (which builds a component from arguments it creates
    under the engine, so that they may hold Outputs) is refused, and what was registered."""
    mocks = RecordingMocks()
    with pytest.raises(TopologyError) as exc:
        under_mocks(lambda: make().urn, mocks, "kafka-replication", "test", {}, [])
    return exc.value.report().splitlines(), mocks


KNOWN_AT_RUN = ("a plain value known when the program runs: it decides which resources exist (only `secrets` "
                "values may be Outputs)")
SECRET_VALUE = "text, or an Output of text (a secret Output, such as config.require_secret gives)"


# ----------------------------------------------------------------- unknown and missing arguments


def test_a_misspelt_argument_is_refused_with_the_closest_one_and_nothing_is_created():
    """`operater` would otherwise be ignored, and the flow deployed for the default operator."""
    lines, mocks = refused(lambda: ReplicationFlow("orders", flow_args(operater={"flavour": "strimzi"})))
    assert lines == [
        "ReplicationFlow orders has 1 problem(s):",
        "  - args: operater: got 'operater'; expected a known argument: did you mean `operator`? "
        "(ReplicationFlow takes clusters, flow, operator, secrets; see docs/components.md)"]
    assert mocks.resources == []


def test_an_unknown_argument_without_a_close_one_lists_them():
    lines, _ = refused(lambda: ReplicationTopology("t", {"topology": doc_topology(), "secrets": dict(SECRETS),
                                                         "region": "eu", 3: "x"}))
    assert lines == [
        "ReplicationTopology t has 2 problem(s):",
        "  - args: region: got 'region'; expected a known argument (ReplicationTopology takes topology, secrets; "
        "see docs/components.md)",
        "  - args: 3: got 3; expected a known argument (ReplicationTopology takes topology, secrets; "
        "see docs/components.md)"]


def test_missing_and_none_arguments_say_what_is_expected_all_at_once():
    lines, mocks = refused(lambda: ReplicationFlow("orders", {"clusters": None, "flow": FLOW}))
    assert lines == [
        "ReplicationFlow orders has 2 problem(s):",
        "  - args: clusters: got None; expected a mapping of the flow's two clusters by alias, each as under "
        "`clusters` in a topology (required)",
        "  - args: secrets: missing; expected a mapping of secret item to " + SECRET_VALUE
        + " ({} when none is needed) (required)"]
    assert mocks.resources == []


def test_arguments_that_are_no_mapping_are_refused():
    lines, _ = refused(lambda: ReplicationFlow("orders", ["clusters", "flow"]))  # type: ignore[arg-type]
    assert lines == [
        "ReplicationFlow orders has 1 problem(s):",
        "  - args: (arguments): got a list; expected a mapping of ReplicationFlow's arguments: clusters, flow, "
        "operator, secrets"]


# ----------------------------------------------------------------- types


def test_wrong_types_are_named_with_the_expected_type():
    lines, _ = refused(lambda: ReplicationFlow("orders", {"clusters": ["us-west", "us-east"], "flow": "orders",
                                                          "operator": "strimzi", "secrets": "pw"}))
    assert lines == [
        "ReplicationFlow orders has 4 problem(s):",
        "  - args: clusters: got a list; expected a mapping of the flow's two clusters by alias, each as under "
        "`clusters` in a topology",
        "  - args: flow: got a str; expected a mapping: one item of `flows` in a topology",
        "  - args: operator: got a str; expected a mapping: the operator section of a topology, or None for its "
        "defaults",
        "  - args: secrets: got a str; expected a mapping of secret item to " + SECRET_VALUE]


def test_values_that_are_no_plain_data_are_named_by_path():
    flow = {**FLOW, "topics": {"orders\\..*"}, "sources": [{"name": b"bytes"}], 7: "seven"}
    lines, _ = refused(lambda: ReplicationFlow("orders", flow_args(flow=flow)))
    assert lines == [
        "ReplicationFlow orders has 3 problem(s):",
        "  - args: flow.topics: got a set; expected plain data: a mapping with text keys, a list, text, a number, "
        "true/false or None",
        "  - args: flow.sources[0].name: got a bytes; expected plain data: a mapping with text keys, a list, text, "
        "a number, true/false or None",
        "  - args: flow[7]: got a key that is an int; expected text keys"]


def test_nesting_is_bounded_as_in_a_topology_file():
    deep: dict = {}
    node = deep
    for _ in range(40):
        node["x"] = {}
        node = node["x"]
    lines, _ = refused(lambda: ReplicationFlow("orders", flow_args(operator=deep)))
    assert lines[1:] == ["  - args: operator" + ".x" * 32 + ": got nesting deeper than 32 levels; expected at most 32 "
                         "nested mappings and lists"]


def test_none_for_the_optional_operator_means_its_defaults():
    mocks = RecordingMocks()
    flows = under_mocks(lambda: ReplicationFlow("orders", flow_args(operator=None)).flows, mocks,
                        "kafka-replication", "test", {}, [])
    assert list(flows) == ["orders"]
    connect = next(r for r in mocks.resources if r.type.endswith("KafkaConnect"))
    assert connect.inputs["apiVersion"] == "kafka.strimzi.io/v1beta2"


def test_tuples_are_lists_and_the_callers_later_changes_do_not_reach_the_component():
    flow = {**FLOW, "topics": ("orders\\..*", "audit\\..*")}
    args = flow_args(flow=flow)

    def make():
        component = ReplicationFlow("orders", args)
        flow["topics"] = ("changed",)
        return component.flows
    flows = under_mocks(make, RecordingMocks(), "kafka-replication", "test", {}, [])
    assert flows["orders"]["topics"] == ["orders\\..*", "audit\\..*"]


# ----------------------------------------------------------------- Outputs


def test_an_output_inside_a_nested_field_names_that_field():
    def make():
        flow = {**FLOW, "topics": ["orders\\..*", pulumi.Output.from_input("audit\\..*")]}
        clusters = copy.deepcopy(CLUSTERS)
        clusters["us-east"]["bootstrapServers"] = pulumi.Output.secret("b:9093")
        return ReplicationFlow("orders", flow_args(flow=flow, clusters=clusters))
    lines, mocks = refused(make)
    assert lines == [
        "ReplicationFlow orders has 2 problem(s):",
        "  - args: clusters.us-east.bootstrapServers: got an Output; expected " + KNOWN_AT_RUN,
        "  - args: flow.topics[1]: got an Output; expected " + KNOWN_AT_RUN]
    assert mocks.resources == []


def test_secrets_as_one_output_are_refused_with_where_outputs_may_be():
    lines, _ = refused(lambda: ReplicationFlow("orders", flow_args(secrets=pulumi.Output.from_input(flow_secrets()))))
    assert lines == [
        "ReplicationFlow orders has 1 problem(s):",
        "  - args: secrets: got an Output; expected a mapping known when the program runs (its values may be "
        "Outputs)"]


def test_secret_values_may_be_outputs():
    def make():
        secrets = {k: pulumi.Output.secret(v) for k, v in flow_secrets().items()}
        return ReplicationFlow("orders", flow_args(secrets=secrets)).flows
    mocks = RecordingMocks()
    flows = under_mocks(make, mocks, "kafka-replication", "test", {}, [])
    assert list(flows) == ["orders"]
    secret = next(r for r in mocks.resources if r.name == "orders/source-us-west" and r.type.endswith("Secret"))
    assert secret.secret_paths and "s3cret-pw" in str(secret.inputs)


# ----------------------------------------------------------------- secrets


def test_secret_values_must_be_text_and_are_never_shown():
    secrets = {**flow_secrets(), "us-west.password": 12345678, "us-west.caCert": None,
               "us-east.caCert": material("us-east").ca_pem.encode()}
    lines, _ = refused(lambda: ReplicationFlow("orders", flow_args(secrets=secrets)))
    assert lines == [
        "ReplicationFlow orders has 3 problem(s):",
        "  - args: secrets.us-west.password: got an int (not shown); expected " + SECRET_VALUE,
        "  - args: secrets.us-west.caCert: got None (not shown); expected " + SECRET_VALUE,
        "  - args: secrets.us-east.caCert: got a bytes (not shown); expected " + SECRET_VALUE]
    assert "12345678" not in "\n".join(lines) and "BEGIN" not in "\n".join(lines)


def test_a_misspelt_secret_item_gets_the_closest_item():
    secrets = {**flow_secrets(), "us-west.pasword": "pw", "nothing": "x", 5: "y"}
    lines, _ = refused(lambda: ReplicationFlow("orders", flow_args(secrets=secrets)))
    listed = ("<alias>.<item> with item one of password, caCert, truststore, truststorePassword, clientCert, "
              "clientKey, registry.password or kubernetes.<cluster>.kubeconfig (docs/topology.md#secrets)")
    assert lines == [
        "ReplicationFlow orders has 3 problem(s):",
        f"  - args: secrets.us-west.pasword: got 'us-west.pasword'; expected a secret item: did you mean "
        f"`us-west.password`? ({listed})",
        f"  - args: secrets.nothing: got 'nothing'; expected a secret item: {listed}",
        "  - args: secrets[5]: got a key that is an int; expected a secret item's name (text)"]


def test_secret_items_the_topology_does_not_use_are_allowed():
    """One mapping of a stack's secrets may serve several flows."""
    secrets = {**flow_secrets(), "eu-central.password": "other"}
    flows = under_mocks(lambda: ReplicationFlow("orders", flow_args(secrets=secrets)).flows, RecordingMocks(),
                        "kafka-replication", "test", {}, [])
    assert list(flows) == ["orders"]


def test_argument_problems_come_before_the_topology_is_read():
    """A flow's own problems are reported once its arguments have the right shape: a misspelt
    argument would otherwise make problems of its own (the default operator's)."""
    lines, _ = refused(lambda: ReplicationFlow("orders", flow_args(flow={**FLOW, "target": "nowhere"},
                                                                   secret={})))
    assert lines == [
        "ReplicationFlow orders has 1 problem(s):",
        "  - args: secret: got 'secret'; expected a known argument: did you mean `secrets`? "
        "(ReplicationFlow takes clusters, flow, operator, secrets; see docs/components.md)"]


def test_an_output_secret_that_resolves_to_no_text_fails_before_it_is_held():
    """In a process of its own, as `pulumi up` runs a program (conftest.refused_in_process)."""
    lines, printed = refused_in_process(
        "import pulumi\nfrom components import ReplicationFlow\n"
        "from tests.support.components import flow_args, flow_secrets\n"
        "secrets = {**flow_secrets(), 'us-west.password': pulumi.Output.secret(12345678)}",
        "ReplicationFlow('orders', flow_args(secrets=secrets)).flows")
    assert lines == [
        "the secret arguments has 1 problem(s):",
        "  - args: secrets.us-west.password: got an Output of an int (not shown); expected " + SECRET_VALUE]
    assert "12345678" not in printed


def test_the_documented_example_is_what_the_component_says():
    text = (ROOT / "docs" / "components.md").read_text()
    documented = text.split("```\nReplicationFlow orders has", 1)[1].split("```", 1)[0]
    lines, _ = refused(lambda: ReplicationFlow("orders", flow_args(
        operater={"flavour": "strimzi"}, secrets={**flow_secrets(), "us-west.password": 12345678})))
    assert ("ReplicationFlow orders has" + documented).splitlines() == lines
