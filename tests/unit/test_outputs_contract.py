"""The versioned outputs contract: every render's outputs keep docs/outputs.schema.json, the
schema refuses drift, and contract/outputs.py reads them typed for other teams' programs."""

from __future__ import annotations

import copy
import json

import jsonschema
import pulumi
import pytest
from pulumi.runtime.sync_await import _sync_await

from contract import outputs
from infra.checks import validation
from infra.plan.audit import plan_audit
from infra.plan.failover import failover_outputs
from infra.plan.outputs import stack_outputs as plan_outputs
from infra.plan.stack import plan
from tests.support.stacks import ROOT
from tests.support.variants import renders

SCHEMA = outputs.SCHEMA


def stack_outputs(data: dict) -> dict:
    topo = validation.parse(data)
    stack_plan = plan(topo)
    out = plan_outputs(stack_plan)
    audit = plan_audit(topo, stack_plan)
    if audit:
        out["audit"] = audit.outputs
    return json.loads(json.dumps(out))  # as `pulumi stack output --json` gives them


@pytest.fixture(scope="module")
def all_outputs() -> dict[str, dict]:
    return {name: stack_outputs(data) for name, data in renders().items()}


def test_every_render_keeps_the_schema(all_outputs):
    validator = jsonschema.Draft202012Validator(SCHEMA)
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    for name, out in all_outputs.items():
        errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(out)]
        assert errors == [], name
    assert any("audit" in o for o in all_outputs.values())
    assert any(f["bidirectional"] for o in all_outputs.values() for f in o["flows"].values())


@pytest.mark.parametrize("change, message", [
    (lambda o: o.update(outputsVersion=2), "1 was expected"),
    (lambda o: next(iter(o["flows"].values())).pop("connectRestUrl"), "'connectRestUrl' is a required property"),
    (lambda o: next(iter(o["flows"].values())).update(newField=1),
     "Additional properties are not allowed ('newField' was unexpected)"),
])
def test_the_schema_refuses_drift(all_outputs, change, message):
    out = copy.deepcopy(all_outputs["prod-csm-1.2"])
    change(out)
    assert [e.message for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(out)] == [message]


def test_the_reader_types_what_consumers_read(all_outputs):
    stack = outputs.read(all_outputs["prod-csm-1.2"])
    flow = stack.flows["orders-to-eu"]
    assert (stack.version, stack.operator_flavour, stack.operator_version, stack.kafka_version) == \
        (1, "csm", "1.2", "3.8.0")
    assert flow.connect_rest_url == "http://orders-to-eu-connect-api.orders-to-eu.svc:8083"
    assert (flow.source_alias, flow.target_alias, flow.replication_policy) == ("us-east", "eu-central", "identity")
    assert flow.replicated_topic("orders.eu") == "orders.eu"
    assert flow.target_heartbeats_topic == "us-east.heartbeats"
    assert flow.connect_clusters[0].source_connectors == ("orders-to-eu-source",)
    pair = stack.flows["repl-us-east-eu-central"]
    assert pair.partner == "repl-eu-central-us-east"
    assert stack.audit_namespace == "replication-audit"


@pytest.mark.parametrize("values, message", [
    ({"flows": {}}, "outputsVersion: missing; expected 1 (outputs without it predate the contract)"),
    ({"outputsVersion": 2}, "outputsVersion: got 2; expected 1, the version this reader knows"),
    ({"outputsVersion": True}, "outputsVersion: got true; expected 1, the version this reader knows"),
    ({"outputsVersion": 1, "operator": {}}, "operator.flavour: missing; expected a non-empty string"),
    ({"outputsVersion": 1, "operator": {"flavour": "csm", "version": "1.2", "kafkaVersion": "3.8.0"}},
     "flows: missing; expected a mapping"),
])
def test_the_reader_refuses_what_it_cannot_read(values, message):
    with pytest.raises(outputs.ContractError) as exc:
        outputs.read(values)
    assert str(exc.value) == message


class _Reference:
    """What a StackReference offers: get_output(name) -> Output."""

    def __init__(self, values: dict):
        self.values = values

    def get_output(self, name: str):
        return pulumi.Output.from_input(self.values.get(name))


def test_the_reader_works_on_a_stack_reference(all_outputs):
    stack = _sync_await(outputs.from_stack_reference(_Reference(all_outputs["dev-csm-1.2"])).future())
    assert stack.flows["repl-us-west-us-east"].connect_rest_url == \
        "http://repl-us-west-us-east-connect-api.repl-us-west-us-east.svc:8083"


# ------------------------------------------------------------------ failover (added within version 1)


def with_failover(data: dict) -> dict:
    """The outputs with each flow's `failover` (infra/plan/failover.py), as plan.flow_outputs adds them."""
    out = stack_outputs(data)
    for fp in plan(validation.parse(data)).flows:
        out["flows"][fp.name]["failover"] = json.loads(json.dumps(failover_outputs(fp.direction)))
    return out


def test_failover_outputs_keep_the_schema():
    validator = jsonschema.Draft202012Validator(SCHEMA)
    shapes = set()
    for name, data in renders().items():
        out = with_failover(data)
        assert [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(out)] == [], name
        shapes |= {(f["failover"]["waitSeconds"] is None, tuple(f["failover"]["procedures"])) for f in out["flows"].values()}
    # Flows with and without the continuous procedure and a wait are among the renders.
    assert (False, ("continuous", "cutoff", "disaster")) in shapes and (True, ("cutoff", "disaster")) in shapes


@pytest.mark.parametrize("change, message", [
    (lambda f: f["failover"].update(waitSeconds=-1), "-1 is not valid under any of the given schemas"),
    (lambda f: f["failover"].update(procedure="later"), "'later' is not one of ['continuous', 'cutoff', 'disaster']"),
    (lambda f: f["failover"].pop("topics"), "'topics' is a required property"),
    (lambda f: f["failover"].update(wait=1), "Additional properties are not allowed ('wait' was unexpected)"),
])
def test_the_schema_refuses_failover_drift(change, message):
    out = with_failover(renders()["prod-csm-1.2"])
    change(next(iter(out["flows"].values())))
    assert [e.message for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(out)] == [message]


def test_the_committed_schema_is_written_from_the_contract():
    """docs/outputs.schema.json is generated from contract.outputs.SCHEMA (`make outputs-schema`),
    never edited: the one definition of the contract is the module teams import."""
    assert (ROOT / "docs" / "outputs.schema.json").read_text() == outputs.schema_json()
    assert outputs.SCHEMA["properties"]["outputsVersion"] == {"const": outputs.OUTPUTS_VERSION}


def test_the_reader_keeps_its_first_name():
    """docs/outputs.md promises `infra.outputs` to the teams that import it: the same module."""
    import infra.outputs
    from infra.outputs import read
    assert infra.outputs is outputs and read is outputs.read
