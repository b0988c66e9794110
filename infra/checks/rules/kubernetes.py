"""Kubernetes clusters: in-cluster service addresses, and each cluster's kubeconfig entry and
namespaces as the topology names them."""

from __future__ import annotations

from infra.core.errors import Problem
from infra.topology.resolution import Model

# ----------------------------------------------------------------- Kubernetes clusters


def service_address(host: str) -> str | None:
    """Why a bootstrap host resolves only inside a Kubernetes cluster (its cluster DNS and
    search path), or None. An absolute name (a final dot) is never searched; IP addresses are
    taken as reachable, since nothing in the address says otherwise."""
    if host.replace(".", "").isdigit() or ":" in host or host.startswith("["):
        return None
    name = host.lower()
    if name.endswith(".") and not name.rstrip(".").endswith((".svc.cluster.local", ".cluster.local")):
        return None
    labels = name.rstrip(".").split(".")
    if name.rstrip(".").endswith(".cluster.local") or labels[-1] == "svc" or "svc" in labels[2:]:
        return "a Kubernetes Service name (cluster DNS)"
    if len(labels) == 1:
        return "a single-label name, resolved through the pod's DNS search path (a Service of its namespace)"
    if len(labels) == 2:
        return ("a two-label name, read as the Service `<name>.<namespace>` (write it with a final dot, "
                f"`{name}.`, if it is a public DNS name)")
    if len(labels) == 3 and not _top_level_domain(labels[-1]):
        # A pod's resolver (ndots:5) tries `<name>.svc.cluster.local` first: `<pod>.<service>.<namespace>`
        # of a headless Service, as Kafka's broker addresses in Kubernetes are written. Public only
        # where the last label can be a top-level domain.
        return ("a three-label name whose last label is no top-level domain, read as the pod "
                f"`<pod>.<service>.<namespace>` of a headless Service (write it with a final dot, `{name}.`, "
                "if it is a DNS name outside Kubernetes)")
    return None


# Top-level domains a three-label name may end with and still be read as a name outside
# Kubernetes: every two-letter label (country codes) and the original generic domains. Newer
# generic domains are also common namespace names (`dev`, `test`, `app`, `cloud`, `internal`,
# `local`), and a name ending in one is read as `<pod>.<service>.<namespace>`: a name that is
# public after all says so with a final dot (fail closed, as for two-label names).
TOP_LEVEL_DOMAINS = frozenset({"com", "net", "org", "edu", "gov", "mil", "int", "arpa", "info", "biz"})


def _top_level_domain(label: str) -> bool:
    return (len(label) == 2 and label.isalpha()) or label in TOP_LEVEL_DOMAINS or label.startswith("xn--")


def _check_kubernetes(model: Model) -> list[Problem]:
    """The `kubernetes` section: every name used is declared; every Connect cluster knows where
    it deploys; and no Connect cluster is given a Kafka address that resolves only inside
    another Kubernetes cluster (the connectors would never connect). One Kubernetes cluster has
    one name: two entries naming one context of the ambient kubeconfig are one cluster (each
    would get the audit's namespace); secret kubeconfigs are compared by the API server they
    lead to, once their values are known (deployment.check)."""
    topo = model.topology
    declared = topo.kubernetes
    problems: list[Problem] = []
    by_context: dict[str, str] = {}
    for entry_name, entry in sorted((declared or {}).items()):
        if entry.kubeconfig is None and entry.context is not None:
            if entry.context in by_context:
                problems.append(Problem(f"kubernetes.{entry_name}", "context", entry.context,
                                        f"a context of another Kubernetes cluster: kubernetes.{by_context[entry.context]} "
                                        "names it too (one cluster, one name: two would each get the audit's "
                                        "namespace and objects)"))
            by_context.setdefault(entry.context, entry_name)
    uses = [(f"clusters.{alias}", "kubernetes", c.kubernetes) for alias, c in sorted(topo.clusters.items())]
    for index, flow in enumerate(topo.flows):
        where = f"flows[{index}] ({flow.flow_name})"
        uses.append((where, "kubernetes", flow.kubernetes))
        uses += [(where, f"connectClusters[{i}].kubernetes", p.kubernetes)
                 for i, p in enumerate(flow.connectClusters or [])]
        if flow.bidirectional and flow.kubernetes:
            problems.append(Problem(where, "kubernetes", flow.kubernetes,
                                    "no value on a bidirectional flow: each direction deploys beside its own target "
                                    "Kafka (clusters.<alias>.kubernetes)"))
    for where, field, name in uses:
        if name is None:
            continue
        if declared is None:
            problems.append(Problem(where, field, name, "a Kubernetes cluster declared under `kubernetes` (the "
                                                        "topology has no `kubernetes` section)"))
        elif name not in declared:
            problems.append(Problem(where, field, name, f"a Kubernetes cluster declared under `kubernetes`: "
                                                        f"{', '.join(sorted(declared))}"))
    if declared is None or problems:
        return problems
    for d in model.flows:
        flow = d.flow
        for part in d.parts:
            field = f"{part.where}.kubernetes" if part.name else "kubernetes"
            if part.kubernetes is None:
                problems.append(Problem(d.where, field, None,
                                        f"the Kubernetes cluster it deploys to: its target clusters.{flow.target} "
                                        "says none (set clusters.<alias>.kubernetes, or the flow's `kubernetes`)"))
                continue
            for alias in (flow.source, flow.target):
                cluster = topo.clusters.get(alias)
                if cluster is None:
                    continue
                for server in cluster.bootstrapServers.split(","):
                    host = server.strip().rpartition(":")[0]
                    reason = service_address(host)
                    if reason is None or cluster.kubernetes == part.kubernetes:
                        continue
                    home = (f"inside Kubernetes cluster {cluster.kubernetes} only" if cluster.kubernetes else
                            f"inside one Kubernetes cluster, and clusters.{alias}.kubernetes does not say which")
                    problems.append(Problem(
                        f"clusters.{alias}", "bootstrapServers", server.strip(),
                        f"an address reachable from Kubernetes cluster {part.kubernetes}, where {d.name}"
                        f"{' (' + part.name + ')' if part.name else ''} runs: {host} is {reason}, which resolves "
                        f"{home} (use a LoadBalancer, NodePort, Route or Ingress listener's address, or deploy the "
                        "flow beside it)"))
    return problems
