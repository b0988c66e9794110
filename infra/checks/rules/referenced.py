"""Secrets the team keeps, referenced by a cluster (`sasl.passwordSecret`, `tls.secret`): each must
be a Secret the program never creates itself in the namespaces that read it. One of the program's
own names would be created by `pulumi up` over the team's Secret (or fail on it), and deleted with
the stack. And a reader that needs a store made from the material, which a reference never shows
the program, is refused."""

from __future__ import annotations

from infra.core.errors import Problem
from infra.core.names import AuditNames
from infra.core.releases import Release, WorkerFile, find
from infra.topology.resolution import Model
from infra.topology.schema import Trust


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
            if pull and pull.name:
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
    problems = _unconvertible(model)
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
    for alias, cluster in sorted(model.topology.clusters.items()):
        namespaces = sorted({namespace for _, namespace in readers(model, alias)})
        for field, kept in (("security.sasl.passwordSecret.secretName", cluster.security.password_secret),
                            ("security.tls.secret.secretName", cluster.security.tls_secret)):
            if kept is not None:
                problems += _not_ours(owned, f"clusters.{alias}", field, kept.secretName, namespaces)
    pull = model.topology.operator.imagePullSecret
    if pull and pull.secretName:
        namespaces = sorted({d.names(p).namespace for d in model.flows for p in d.parts})
        problems += _not_ours(owned, "operator", "imagePullSecret.secretName", pull.secretName, namespaces)
    return shared + problems


def _not_ours(owned: dict[str, dict[str, str]], where: str, field: str, name: str,
              namespaces: list[str]) -> list[Problem]:
    """A Secret the team keeps, named as one the program creates in a namespace that reads it."""
    return [Problem(where, field, name,
                    f"a Secret the program does not create: in namespace {namespace} it creates {name} "
                    f"({owned[namespace][name]}) and would overwrite yours; rename your Secret")
            for namespace in namespaces if name in owned.get(namespace, {})]


def _unconvertible(model: Model) -> list[Problem]:
    """Readers of a cluster's TLS material that need it converted at deploy time, which a
    reference (`tls.secret`) never allows: the heartbeat's clients over a worker whose file sets
    the target's stores in another form (`_heartbeat_conversions`), and the audit's Spark executors,
    which mount the audit's own Secrets only and read the stores at the driver's paths."""
    problems = []
    operator = model.topology.operator
    release = find(operator.flavour, operator.version)  # None: refused by the operator rule
    problems += _heartbeat_conversions(model, release) if release is not None else []
    audit = model.topology.audit
    if audit is not None and audit.executors is not None:
        for alias in sorted(model.topology.clusters):
            kept = model.topology.clusters[alias].security.tls_secret
            if kept is not None and any(alias in (d.flow.source, d.flow.target) for d in model.flows):
                problems.append(Problem(
                    "audit", "executors.instances", audit.executors.instances,
                    f"no `executors` (local mode) while clusters.{alias} takes its TLS material from Secret "
                    f"{kept.secretName} (security.tls.secret): Spark mounts the audit's own Secrets on its "
                    "executors, not yours; or the material in secret config"))
    return problems


def _heartbeat_conversions(model: Model, release: Release) -> list[Problem]:
    """The heartbeat's clients of a flow whose source's TLS material is referenced, where they
    override the worker's target stores (a TLS target) in a form the material is not in."""
    clusters = model.topology.clusters  # a flow may name a cluster that is not there: refused elsewhere
    problems = []
    for d in model.flows:
        source, target = clusters.get(d.flow.source), clusters.get(d.flow.target)
        tls, target_tls = (source.security.effective_tls if source else None,
                           target.security.effective_tls if target else None)
        kept = source.security.tls_secret if source else None
        # Only the heartbeat's clients override the worker's target stores (its target uses TLS).
        if kept is None or tls is None or target_tls is None or not any(p.heartbeat for p in d.parts):
            continue
        over = f"the {release.flavour.value} {release.version} worker's"
        # Over store files a PEM CA becomes a JKS store, and so does a key pair where the worker
        # sets one; a truststore file of the team's is read as it is (connection.heartbeat_client).
        if release.worker_file is WorkerFile.literalStores and (
                tls.trust is Trust.pem or (tls.clientCertificate and target_tls.clientCertificate)):
            problems.append(Problem(
                f"clusters.{d.flow.source}", "security.tls.secret", kept.secretName,
                f"TLS material in secret config (`<alias>.caCert`...): flow {d.name}'s heartbeat connector "
                f"reads it as a JKS store over {over} store files (its target {d.flow.target} uses TLS), made "
                "at deploy time from the value, which a reference never shows; or a release from Strimzi 0.47, "
                "whose worker sets inline PEM"))
        # Over inline PEM a truststore becomes PEM certificates.
        if release.worker_file is WorkerFile.pemReferences and tls.trust is not Trust.pem:
            problems.append(Problem(
                f"clusters.{d.flow.source}", "security.tls.trust", tls.trust.value,
                f"`trust: pem` (the CA as PEM in Secret {kept.secretName}, key `ca`): flow {d.name}'s heartbeat "
                f"connector reads the source's trust as inline PEM over {over} (its target {d.flow.target} uses "
                f"TLS), converted at deploy time from a {tls.trust.value} store's value, which a reference never "
                "shows; or the truststore in secret config, or `heartbeats: false` on the flow"))
    return problems


def kept_keys(model: Model) -> dict[tuple[str | None, str, str], dict[str, tuple[str, str]]]:
    """The Secrets the team keeps that the topology references, as its tooling must sync them:
    per (Kubernetes cluster, namespace, Secret) of every namespace that reads them (`readers`;
    the Kubernetes cluster None without a `kubernetes` section), each key with the (cluster alias,
    secret config item) it stands for. The rehearsal makes them from its clusters' material."""
    out: dict[tuple[str | None, str, str], dict[str, tuple[str, str]]] = {}
    for alias, cluster in sorted(model.topology.clusters.items()):
        for item, (name, key) in cluster.security.referenced_items.items():
            for kubernetes, namespace in readers(model, alias):
                out.setdefault((kubernetes, namespace, name), {})[key] = (alias, item)
    return dict(sorted(out.items(), key=lambda kv: (kv[0][0] or "", *kv[0][1:])))
