"""Secrets the team keeps, referenced by a cluster (`sasl.passwordSecret`): each must be a Secret
the program never creates itself in the namespaces that read it. One of the program's own names
would be created by `pulumi up` over the team's Secret (or fail on it), and deleted with the stack."""

from __future__ import annotations

from infra.core.errors import Problem
from infra.core.names import AuditNames
from infra.topology.resolution import Model


def _owned(model: Model) -> dict[str, dict[str, str]]:
    """Per namespace, the Secrets the program creates there, with what each is for."""
    owned: dict[str, dict[str, str]] = {}
    pull = model.topology.operator.imagePullSecret
    for d in model.flows:
        for part in d.parts:
            n = d.names(part)
            mine = owned.setdefault(n.namespace, {})
            mine[n.source_secret] = f"flow {d.name}'s source Secret"
            mine[n.source_files_secret] = f"flow {d.name}'s source store files"
            mine[n.target_password_secret] = f"flow {d.name}'s target password"
            mine[n.target_ca_secret] = f"flow {d.name}'s target CA"
            mine[n.target_client_secret] = f"flow {d.name}'s target client key pair"
            if pull:
                mine[pull.name] = "the registry Secret (operator.imagePullSecret)"
    audit = model.topology.audit
    if audit:
        mine = owned.setdefault(audit.namespace, {})
        for alias in model.topology.clusters:
            mine[AuditNames.credentials_secret(alias)] = f"the audit's credentials for {alias}"
    return owned


def readers(model: Model, alias: str) -> list[tuple[str | None, str]]:
    """(Kubernetes cluster, namespace) of each reader of a cluster's referenced Secrets: each
    flow's (and Connect cluster's) reaching it, and the audit's of each Kubernetes cluster where
    one of them is deployed (the audit there reads the clusters of the flows deployed there).
    The Kubernetes cluster is None without a `kubernetes` section."""
    found = {(p.kubernetes, d.names(p).namespace) for d in model.flows for p in d.parts
             if alias in (d.flow.source, d.flow.target)}
    audit = model.topology.audit
    if audit:
        found |= {(kubernetes, audit.namespace) for kubernetes, _ in list(found)}
    return sorted(found, key=lambda r: (r[0] or "", r[1]))


def check_references(model: Model) -> list[Problem]:
    problems = []
    owned = _owned(model)
    # One (Secret, key) per password in a namespace: two clusters naming the same would read one value.
    taken: dict[tuple[str, str, str], str] = {}
    shared: list[Problem] = []
    for alias, cluster in sorted(model.topology.clusters.items()):
        ref = cluster.security.password_secret
        if ref is None:
            continue
        clashed = False
        for namespace in sorted({namespace for _, namespace in readers(model, alias)}):
            other = taken.setdefault((namespace, ref.secretName, ref.key), alias)
            if other != alias and not clashed:
                clashed = True
                shared.append(Problem(
                    f"clusters.{alias}", "security.sasl.passwordSecret", f"{ref.secretName}:{ref.key}",
                    f"a Secret key no other cluster reads in namespace {namespace}: clusters.{other} reads the same, "
                    "and one key holds one password"))
            what = owned.get(namespace, {}).get(ref.secretName)
            if what is not None:
                problems.append(Problem(
                    f"clusters.{alias}", "security.sasl.passwordSecret.secretName", ref.secretName,
                    f"a Secret the program does not create: in namespace {namespace} it creates "
                    f"{ref.secretName} ({what}) and would overwrite yours; rename your Secret"))
    return shared + problems
