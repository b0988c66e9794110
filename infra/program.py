"""The Pulumi program: topology -> model -> plan -> components -> stack outputs."""

from __future__ import annotations

import pulumi

from components import ReplicationFlow
from infra import config as stack_config
from infra import model
from infra.errors import TopologyError
from infra.plan import StackPlan, plan


def load_plan(config: pulumi.Config, stack: str) -> StackPlan:
    """Validate everything (topology and secret config) before any resource is declared."""
    topo = model.load(stack_config.topology_path(config, stack))
    stack_plan = plan(topo)
    problems = stack_config.missing_secrets(stack_plan, lambda key: config.get_secret(key) is not None)
    if problems:
        raise TopologyError(problems)
    return stack_plan


def main() -> dict:
    config = pulumi.Config()
    try:
        stack_plan = load_plan(config, pulumi.get_stack())
    except TopologyError as exc:
        # RunError: Pulumi shows the message without a Python traceback.
        raise pulumi.RunError(exc.report()) from None
    secrets = stack_config.secret_resolver(config)
    for flow_plan in stack_plan.flows:
        ReplicationFlow(flow_plan, secrets)
    outputs = stack_plan.outputs()
    for key, value in outputs.items():
        pulumi.export(key, value)
    return outputs
