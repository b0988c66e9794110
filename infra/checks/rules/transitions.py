"""Changes from the previous deployment that the program refuses (`previous_flows`): state a
running flow would lose."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from infra.core.errors import Problem
from infra.topology.resolution import Model
from infra.topology.schema import ExactlyOnce


def _json_kind(value: Any) -> str:
    """A JSON value described by its kind, as users read JSON (never Python's names)."""
    if value is None:
        return "null (or missing)"
    for kind, name in ((bool, "a boolean"), (int, "a number"), (float, "a number"), (list, "a list"),
                       (dict, "an object")):
        if isinstance(value, kind):
            return name
    return "not a string"


def check_transitions(model: Model, previous_flows: Mapping[str, Any] | None) -> list[Problem]:
    """Changes that must not be made in one step, judged against the stack's previous outputs.
    A previous state that cannot be read is refused, never taken as "not disabled": the two-step
    rollout is only enforced if the program knows where the running Connect cluster stands."""
    problems = []
    known = {e.value for e in ExactlyOnce}
    for d in model.flows:
        flow = d.flow
        if flow.exactlyOnce is not ExactlyOnce.enabled or previous_flows is None:
            continue  # nothing deployed before: a new stack may start enabled
        watch = " and ".join(f"kubectl get pods -n {d.names(p).namespace} --watch" for p in d.parts)
        rollout = ("deploy exactlyOnce: preparing, wait until the Connect pods' rolling restart has finished "
                   f"({watch}), then deploy exactlyOnce: enabled")
        if not isinstance(previous_flows, Mapping):
            problems.append(Problem(
                d.where, "exactlyOnce", flow.exactlyOnce.value,
                f"previous stack outputs the program can read: their `flows` is {type(previous_flows).__name__}, "
                "not a mapping of flows, so whether the running Connect cluster has exactly-once disabled is "
                "unknown. Pass the stack's real outputs (`pulumi stack output --json` to --previous-outputs), or "
                + rollout))
            continue
        if d.name not in previous_flows:
            continue  # a new flow may start enabled
        before = previous_flows[d.name]
        state = before.get("exactlyOnce") if isinstance(before, Mapping) else None
        if state == ExactlyOnce.disabled.value:
            problems.append(Problem(
                d.where, "exactlyOnce", flow.exactlyOnce.value,
                "preparing first: this flow's running Connect cluster has exactly-once disabled. "
                + rollout[:1].upper() + rollout[1:]))
        elif not (isinstance(state, str) and state in known):
            shown = repr(state) if isinstance(state, str) else _json_kind(state)
            problems.append(Problem(
                d.where, "exactlyOnce", flow.exactlyOnce.value,
                f"previous stack outputs the program can read: flows.{d.name}.exactlyOnce there is {shown}, "
                f"not one of {', '.join(sorted(known))}, so whether the running Connect cluster has exactly-once "
                "disabled is unknown. Pass the stack's real outputs (`pulumi stack output --json` to "
                "--previous-outputs), or " + rollout))
    return problems
