"""The Pulumi program: topology -> validated model -> plan -> components -> stack outputs."""

from __future__ import annotations

from typing import Callable

import pulumi
from pulumi.runtime.sync_await import _sync_await

from components.replication import ReplicationTopology, prepare
from infra import config as stack_config
from infra import names, reading, rules
from infra.audit import AuditPlan
from infra.errors import TopologyError
from infra.plan import StackPlan
from infra.resolution import Model
from infra.schema import ExactlyOnce

PREVIOUS_OUTPUTS = "previous-outputs"


def secret_keys(stack_plan: StackPlan, audit_plan: AuditPlan | None) -> list[str]:
    """Every secret config key the stack needs: the flows' and the audit's."""
    return sorted(set(stack_plan.secret_keys()) | set(audit_plan.secret_keys() if audit_plan else []))


def validate(model: Model, stack_plan: StackPlan, audit_plan: AuditPlan | None, has_secret: Callable[[str], bool],
             previous_flows: Callable[[], dict | None], secret_text: Callable[[str], str | None] = lambda key: None,
             is_plain: Callable[[str], bool] = lambda key: False) -> None:
    """What can still refuse a valid topology's deployment (secret config, transitions), checked
    before any resource is declared. `secret_text(key)` reads a secret config value, never shown;
    `is_plain(key)` tells a value set without --secret."""
    keys = secret_keys(stack_plan, audit_plan)
    problems = stack_config.missing_secrets(keys, has_secret)
    problems += stack_config.plain_secrets([k for k in keys if has_secret(k)], is_plain)
    problems += stack_config.unusable_secrets(keys, secret_text, frozenset(d.flow.target for d in model.flows))
    problems += stack_plan.name_problems(audit_plan.objects if audit_plan else ())
    if any(f.exactlyOnce is ExactlyOnce.enabled for f in model.topology.flows):
        problems += rules.check_transitions(model, previous_flows())
    if problems:
        raise TopologyError(problems)


def previous_flows() -> dict | None:
    """The `flows` output of this stack's last deployment (None before the first)."""
    name = f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"
    ref = pulumi.StackReference(PREVIOUS_OUTPUTS, stack_name=name)
    # Validation must finish before resources are declared, so the output is awaited here.
    return _sync_await(ref.get_output_details("flows")).value


def main() -> dict:
    config = pulumi.Config()
    try:
        path = stack_config.topology_path(config, pulumi.get_stack())
        document = reading.load_yaml_file(path, "topology file")
        model, stack_plan, audit_plan = prepare(document, str(path))
        full = lambda key: f"{pulumi.get_project()}:{key}"  # noqa: E731
        validate(model, stack_plan, audit_plan, lambda key: config.get_secret(key) is not None, previous_flows,
                 lambda key: pulumi.runtime.get_config(full(key)),
                 lambda key: not pulumi.runtime.is_config_secret(full(key)))
    except TopologyError as exc:
        # RunError: Pulumi shows the message without a Python traceback.
        raise pulumi.RunError(exc.report()) from None
    secrets = {key: config.require_secret(key) for key in secret_keys(stack_plan, audit_plan)}
    topology = ReplicationTopology(names.TOPOLOGY_COMPONENT, {"topology": document, "secrets": secrets})
    outputs = {key: topology.outputs.apply(lambda o, key=key: o[key]) for key in stack_plan.outputs()}
    if audit_plan:
        outputs["audit"] = topology.outputs.apply(lambda o: o["audit"])
    for key, value in outputs.items():
        pulumi.export(key, value)
    return outputs
