"""infra/checks/rules/transitions.py check_operator_move: the operator release a stack moves to,
against the one its previous outputs say it runs on. The runbook's steps pass
(releases.UPGRADES); a jump over the bridge, a move back from v1, CSM to Strimzi 1.x, and any
other move are refused with the way there, or the reason there is none."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from infra.checks import rules
from infra.core import releases
from infra.deploy import deployment
from tests.support.stacks import ROOT, doc_topology, on_release

MOVES = ("The supported moves, one per pulumi up: csm 1.2 -> csm 1.4, strimzi 0.48.0 -> strimzi 0.51.0, "
         "strimzi 0.51.0 -> strimzi 1.2.0 (docs/operations.md#operator-upgrades); for another release, deploy a new "
         "stack")


def judged(previous: object, flavour: str, version: str) -> list[str]:
    model, _, _ = deployment.prepare(on_release(doc_topology(), flavour, version), "the topology")
    return [str(p) for p in rules.check_operator_move(model, previous)]


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
