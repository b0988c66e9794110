"""infra/checks/rules/transitions.py check_operator_move: the operator release a stack moves to,
against the one its previous outputs say it runs on. The runbook's steps pass
(releases.UPGRADES); a jump over the bridge, a move back from v1, CSM to Strimzi 1.x, and any
other move are refused with the way there, or the reason there is none. A step of the line is
judged on the Kafka version of every Connect cluster deployed as well (check_connect_versions):
the new operator reconciles them before the `pulumi up` that moves the stack."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from infra.checks import rules
from infra.core import releases
from infra.deploy import deployment
from infra.plan.outputs import stack_outputs
from tests.support.stacks import RELEASES, ROOT, doc_topology, on_release

MOVES = ("The supported moves, one per pulumi up: csm 1.2 -> csm 1.4, strimzi 0.48.0 -> strimzi 0.51.0, "
         "strimzi 0.51.0 -> strimzi 1.2.0 (docs/operations.md#operator-upgrades); for another release, deploy a new "
         "stack")


def judged(previous: object, flavour: str, version: str, flows: object = None) -> list[str]:
    model, _, _ = deployment.prepare(on_release(doc_topology(), flavour, version), "the topology")
    if flows is None and isinstance(previous, dict) and (previous.get("flavour"), previous.get("version")) in RELEASES:
        flows = flows_of(previous["flavour"], previous["version"])
    return [str(p) for p in rules.check_operator_move(model, previous, lambda: flows)]


def flows_of(flavour: str, version: str, pin: str | None = None, image: str | None = None) -> dict:
    """The `flows` output of the documents' topology deployed on a release (its Connect version
    pinned, or a custom image, on every flow)."""
    topology = on_release(doc_topology(), flavour, version)
    for flow in topology["flows"]:
        connect = flow.setdefault("connect", {})
        connect.update({"version": pin} if pin else {})
        connect.update({"image": image} if image else {})
    _, plan, _ = deployment.prepare(topology, "the topology")
    return stack_outputs(plan)["flows"]


def outputs_of(flavour: str, version: str) -> dict[str, str]:
    release = releases.find(releases.Flavour(flavour), version)
    assert release is not None
    return release.outputs()


@pytest.mark.parametrize(("before", "after"), [
    (("csm", "1.2"), ("csm", "1.4")), (("strimzi", "0.48.0"), ("strimzi", "0.51.0")),
    (("strimzi", "0.51.0"), ("strimzi", "1.2.0")), (("strimzi", "1.2.0"), ("strimzi", "1.2.0")),
    (("csm", "1.4"), ("csm", "1.4")),
])
def test_the_runbooks_steps_and_staying_put_pass(before, after):
    assert judged(outputs_of(*before), *after) == []


def test_a_new_stack_has_nothing_to_move_from():
    assert judged(None, "strimzi", "1.2.0") == []


def test_a_jump_over_the_bridge_is_refused_with_the_way_there():
    assert judged(outputs_of("strimzi", "0.48.0"), "strimzi", "1.2.0") == [
        "operator: version: got 'strimzi 1.2.0'; expected strimzi 0.51.0 first: the stack runs strimzi 0.48.0 (its "
        "previous outputs), and strimzi 0.48.0 -> strimzi 1.2.0 skips strimzi 0.51.0. Move one release at a time, "
        "each with its operator and CRDs and a pulumi up: strimzi 0.48.0 -> strimzi 0.51.0 -> strimzi 1.2.0 "
        "(docs/operations.md#operator-upgrades)"]


def test_a_move_back_from_v1_is_refused():
    assert judged(outputs_of("strimzi", "1.2.0"), "strimzi", "0.48.0") == [
        "operator: version: got 'strimzi 0.48.0'; expected strimzi 1.2.0 or a supported next release: the stack runs "
        "strimzi 1.2.0 (its previous outputs), and its objects are stored as kafka.strimzi.io/v1, which strimzi "
        f"0.48.0 does not serve: it could not read them back. {MOVES}"]


def test_csm_to_strimzi_1x_in_one_step_is_refused():
    assert judged(outputs_of("csm", "1.2"), "strimzi", "1.2.0") == [
        "operator: flavour: got 'strimzi 1.2.0'; expected csm 1.2 or a supported next release: the stack runs csm "
        "1.2 (its previous outputs), and its objects are stored as kafka.strimzi.io/v1beta2, which strimzi 1.2.0 "
        f"does not serve: it could not read them back. {MOVES}"]


@pytest.mark.parametrize(("before", "after", "why"), [
    (("csm", "1.4"), ("csm", "1.2"), "csm 1.2 is older than csm 1.4: no runbook moves a stack back"),
    (("strimzi", "0.51.0"), ("strimzi", "0.48.0"), "strimzi 0.48.0 is older than strimzi 0.51.0: no runbook moves "
                                                     "a stack back"),
    (("csm", "1.4"), ("strimzi", "0.48.0"), "csm 1.4 -> strimzi 0.48.0 is not a move the runbook covers"),
])
def test_other_moves_are_refused_with_the_reason(before, after, why):
    (problem,) = judged(outputs_of(*before), *after)
    assert f"the stack runs {' '.join(before)} (its previous outputs), and {why}. {MOVES}" in problem


@pytest.mark.parametrize(("previous", "what"), [
    ("csm 1.2", "a string"),
    (["csm", "1.2"], "a list"),
    ({"flavour": "csm"}, "flavour 'csm', version null (or missing)"),
    ({"flavour": "csm", "version": "1.0"}, "csm 1.0"),
    ({"flavour": "Strimzi", "version": "1.2.0"}, "Strimzi 1.2.0"),
])
def test_previous_outputs_that_do_not_say_a_known_release_are_refused(previous, what):
    (problem,) = judged(previous, "strimzi", "1.2.0")
    assert problem.startswith("operator: version: got '1.2.0'; expected previous stack outputs the program can read: "
                              f"their `operator` is {what}, not a release this version of kafka-replication supports")


def test_render_with_the_stacks_outputs_refuses_the_jump_before_anything_renders(tmp_path):
    """The same rule where users meet it: `render --previous-outputs` (and `pulumi up`, whose
    program reads the stack's own outputs through a StackReference)."""
    topology = tmp_path / "t.yaml"
    topology.write_text(yaml.safe_dump(on_release(doc_topology(), "strimzi", "1.2.0")))
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"operator": outputs_of("strimzi", "0.48.0"), "flows": {}}))
    done = subprocess.run([sys.executable, "-m", "infra", "render", "--stack", "dev", "--topology", str(topology),
                           "--placeholder-secrets", "--previous-outputs", str(outputs), "--out", str(tmp_path / "o")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "expected strimzi 0.51.0 first: the stack runs strimzi 0.48.0 (its previous outputs)" in done.stderr
    assert not (tmp_path / "o").exists()


def test_the_outputs_say_each_connect_clusters_version_and_image():
    flows = flows_of("strimzi", "0.51.0", pin="4.1.1")
    assert {(c["name"], c["connectVersion"], c["connectImage"]) for f in flows.values()
            for c in f["connectClusters"]} == {("repl-us-west-us-east", "4.1.1", None)}
    assert {c["connectImage"] for f in flows_of("strimzi", "0.51.0", image="registry.example/connect:9").values()
            for c in f["connectClusters"]} == {"registry.example/connect:9"}


def test_a_step_is_refused_while_a_deployed_connect_version_is_one_the_next_operator_refuses():
    assert judged(outputs_of("strimzi", "0.51.0"), "strimzi", "1.2.0", flows_of("strimzi", "0.51.0", pin="4.1.1")) == [
        "operator: version: got '1.2.0'; expected a Connect version both releases accept, deployed before the "
        "operator moves: the stack runs strimzi 0.51.0, and the KafkaConnect repl-us-west-us-east/repl-us-west-us-east "
        "(flow repl-us-west-us-east) runs Kafka 4.1.1, which strimzi 1.2.0 does not accept (it accepts 4.2.0, 4.2.1, 4.3.0, 4.3.1). strimzi 1.2.0's "
        "operator reconciles the deployed KafkaConnects as soon as it is installed, before this pulumi up: those "
        "Connect clusters go NotReady and their connectors are not reconciled until then. Set operator.version back "
        "to 0.51.0 with connect.version: 4.2.0 (accepted by both) and pulumi up, then install strimzi 1.2.0's "
        "operator and CRDs and set operator.version: 1.2.0 (docs/operations.md#operator-upgrades)"]
    (problem,) = judged(outputs_of("strimzi", "0.48.0"), "strimzi", "0.51.0", flows_of("strimzi", "0.48.0", pin="4.0.0"))
    assert "runs Kafka 4.0.0, which strimzi 0.51.0 does not accept (it accepts 4.1.0, 4.1.1, 4.2.0)" in problem
    assert "Set operator.version back to 0.48.0 with connect.version: 4.1.0 (accepted by both)" in problem


def test_a_deployed_version_both_accept_or_an_image_of_the_teams_own_passes():
    assert judged(outputs_of("strimzi", "0.51.0"), "strimzi", "1.2.0", flows_of("strimzi", "0.51.0", pin="4.2.0")) == []
    # With its own image the operator takes the image's word for the version (kafkaConnectVersion).
    assert judged(outputs_of("strimzi", "0.51.0"), "strimzi", "1.2.0",
                  flows_of("strimzi", "0.51.0", pin="4.1.1", image="registry.example/connect:9")) == []
    # CSM 1.2 and 1.4 accept no version in common: the window is the runbook's to say.
    assert judged(outputs_of("csm", "1.2"), "csm", "1.4", flows_of("csm", "1.2")) == []


@pytest.mark.parametrize(("flows", "where"), [
    (None, "flows"),
    ({"f": {"connectClusters": [{"name": "repl-f"}]}}, "flows.f.connectClusters[0]"),
    ({"f": {"connectClusters": "x"}}, "flows.f.connectClusters[0]"),
    ({"f": {"connectClusters": [{"name": "repl-f", "connectVersion": 4.2}]}}, "flows.f.connectClusters[0]"),
])
def test_outputs_that_do_not_say_the_deployed_version_refuse_a_step(flows, where):
    model, _, _ = deployment.prepare(on_release(doc_topology(), "strimzi", "1.2.0"), "the topology")
    assert [str(p) for p in rules.check_operator_move(model, outputs_of("strimzi", "0.51.0"), lambda: flows)] == [
        "operator: version: got '1.2.0'; expected previous stack outputs that say each Connect cluster's Kafka "
        f"version: {where} has no connectVersion (outputs written before kafka-replication recorded it), so whether "
        "strimzi 1.2.0's operator accepts the KafkaConnects deployed is unknown. Run pulumi up once on strimzi "
        "0.51.0 with this version of kafka-replication (nothing else changed), then move the operator; a Connect "
        "version strimzi 1.2.0 accepts is one of 4.2.0, 4.2.1, 4.3.0, 4.3.1"]
