"""What the plan of a valid model can still refuse, on the topology alone: the names of the
objects it writes, a monitoring section whose rules would not fit one object, and the policy
pack's rules on every object a deployment would declare.

The funnel every refusal joins, by what it needs:
  - a topology document:  infra/checks/validation.py `parse` (the schema, rules/, guardrails);
  - its plan:             `problems` here (`validate`, `render` and `pulumi preview` alike);
  - the stack:            infra/deploy/deployment.py `check` (secret config, previous outputs),
                          which runs `problems` too;
  - a component's inputs: components/arguments.py `check`, before the three above.
A new check joins the first of these that has what it reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from infra.checks import policies
from infra.core.errors import Problem
from infra.plan import monitoring
from infra.plan.audit import AuditPlan
from infra.plan.types import StackPlan
from infra.topology.resolution import Model


def problems(model: Model, stack_plan: StackPlan, audits: tuple[AuditPlan, ...]) -> list[Problem]:
    """Every refusal of a valid model's plan, at once."""
    return (name_problems(stack_plan, audits) + monitoring.problems(model, stack_plan)
            + policy_problems(model, stack_plan, audits))


def name_problems(stack_plan: StackPlan, audits: tuple[AuditPlan, ...]) -> list[Problem]:
    """The names of the objects the plan writes: none twice, none the program does not own."""
    return stack_plan.name_problems(p for a in audits for p in a.placed())


def policy_problems(model: Model, stack_plan: StackPlan, audits: tuple[AuditPlan, ...]) -> list[Problem]:
    """The policy pack's rules (infra/checks/policies.py) on every object the deployment would declare:
    the flows', their offsets requests', the audits' and the monitoring's. What the pack would
    refuse is refused here, before anything is declared."""
    objects: list[Mapping[str, Any]] = [o for _, o in stack_plan.placed()]
    for offsets in (c.offsets for f in stack_plan.flows for p in f.parts for c in p.connectors):
        if offsets is not None:
            objects += [offsets.patch, *([offsets.configmap] if offsets.configmap is not None else [])]
    objects += [o for a in audits for _, o in a.placed()]
    objects += [o for m in monitoring.plan_monitorings(model, stack_plan) for _, o in m.placed()]
    return policies.problems(objects)
