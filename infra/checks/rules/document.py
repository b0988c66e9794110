"""Every rule on one topology document, run at once (`check`), and what they leave undecided
(`warnings`)."""

from __future__ import annotations

from infra.checks.rules.flows import (MAX_FLOW_NAME, _check_audit, _check_bidirectional, _check_unread,
                                      _check_heartbeat_identity, _check_operator, _check_part, _check_restarts,
                                      _check_shape)
from infra.checks.rules.kubernetes import _check_kubernetes
from infra.checks.rules.overrides import _check_overrides
from infra.checks.rules.referenced import check_references
from infra.checks.rules.smts import _check_smts
from infra.core.errors import Problem, in_file_order
from infra.topology.schema.values import MAX_ALIAS
from infra.core.names import DEFAULT_FLOW_BASE
from infra.plan.failover import problems as failover_problems
from infra.plan.metrics import problems as metrics_problems
from infra.plan.offsets import problems as offsets_problems
from infra.topology.resolution import Model
from infra.topology.schema import DNS1123_LABEL, StartFrom, Trust


def check(model: Model) -> list[Problem]:
    """Rules across the fields of each cluster and flow; pydantic has already checked each field.
    The rules across flows are in infra/checks/guardrails.py."""
    topo = model.topology
    problems: list[Problem] = _check_operator(topo)
    overrides = _check_overrides(model)
    for alias in sorted(topo.clusters):
        if not DNS1123_LABEL.fullmatch(alias) or len(alias) > MAX_ALIAS:
            problems.append(Problem(f"clusters.{alias}", "alias", alias,
                                    f"lowercase letters, digits and '-' (DNS-1123), at most {MAX_ALIAS} characters"))
    for index, flow in enumerate(topo.flows):
        where = f"flows[{index}] ({flow.flow_name})"
        for role in ("source", "target"):
            alias = getattr(flow, role)
            if alias not in topo.clusters:
                problems.append(Problem(where, role, alias,
                                        f"a cluster alias defined under `clusters`: {', '.join(sorted(topo.clusters))}"))
        if flow.source == flow.target:
            problems.append(Problem(where, "target", flow.target, "a cluster other than the source"))
        problems += _check_shape(where, flow)
        problems += _check_unread(where, flow)
        problems += _check_bidirectional(where, flow)
        for alias in sorted({flow.source, flow.target}) if flow.bidirectional else [flow.target]:
            target = topo.clusters.get(alias) if flow.source != flow.target else None
            target_tls = target.security.effective_tls if target else None
            if target_tls and target_tls.trust is not Trust.pem:
                problems.append(Problem(f"clusters.{alias}", "security.tls.trust", target_tls.trust.value,
                                        f"pem: the cluster is the target of flow {flow.flow_name}, and Strimzi's "
                                        "KafkaConnect trusts PEM certificates only (spec.tls.trustedCertificates)"))
        problems.extend(overrides.get(index, []))
        problems += _check_heartbeat_identity(topo, where, flow)
        problems += _check_restarts(topo, where, flow)
    seen: dict[str, str] = {}
    for d in model.flows:
        where, name = d.where, d.name
        if not DNS1123_LABEL.fullmatch(name) or len(name) > MAX_FLOW_NAME:
            declared = topo.flows[d.declared]
            hint = ""
            if declared.bidirectional:
                hint = (f"; each direction's name is `<name>-<source>-<target>` ({DEFAULT_FLOW_BASE} without "
                        "`name`): set a shorter `name`")
            elif declared.name is None:
                hint = "; without `name` it is `repl-<source>-<target>`: set a shorter `name`"
            problems.append(Problem(where, "name", name, "lowercase letters, digits and '-' (DNS-1123), at most "
                                                         f"{MAX_FLOW_NAME} characters{hint}"))
        if name in seen:
            problems.append(Problem(where, "name", name, f"a name not used by {seen[name]}"))
        seen.setdefault(name, where)
        for part in d.parts:
            problems += _check_part(where, d.flow, part)
    # Both directions of a pair share their SMTs: checked once, on the declaration (its first
    # direction's source connectors, which carry the declaration's settings).
    checked: set[int] = set()
    for d in sorted(model.flows, key=lambda d: (d.declared, d.flow.source != topo.flows[d.declared].source)):
        if d.declared in checked:
            continue
        checked.add(d.declared)
        declared = topo.flows[d.declared]
        for part in d.parts:
            for spec in part.sources:
                problems += _check_smts(f"flows[{d.declared}] ({declared.flow_name})", declared, spec)
    # Offsets requests (infra/plan/offsets.py): what the operator would not carry out, or Kafka refuse.
    problems += offsets_problems(model)
    # Metrics (infra/plan/metrics.py): an exporter the release's KafkaConnect does not have.
    problems += metrics_problems(model)
    # Failover (infra/plan/failover.py): a procedure the flow's policy or checkpoints cannot carry.
    problems += failover_problems(model)
    if topo.audit:
        problems += _check_audit(model, topo.audit)
    problems += _check_kubernetes(model)
    # Secrets the team keeps (schema.SecretKeyRef): never one the program creates.
    problems += check_references(model)
    return in_file_order(problems)


def warnings(model: Model) -> list[str]:
    """Valid but risky choices, shown by `pulumi preview` and the offline render."""
    found = []
    for d in model.flows:
        if d.flow.startFrom is StartFrom.latest:
            found.append(f"flow {d.name}: startFrom latest replicates new partitions from their end "
                         "offset: records written before the connector first reads them are never replicated "
                         "(at-least-once no longer holds)")
    return found
