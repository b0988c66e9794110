"""Rules across the fields of one topology document: each cluster, each flow and its Connect
clusters and connectors, the operator release and the audit. They read the resolved model
(infra/topology/resolution.py) and return every problem at once; the rules across flows are
infra/checks/guardrails.py, and infra/checks/validation.py runs both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from infra.filters import jregex
from infra.core.errors import Problem, in_file_order
from infra.core.names import DEFAULT_FLOW_BASE, LOOP_FILTER_TRANSFORM, LOOP_HEADER_TRANSFORM, LOOP_PREDICATE
from infra.plan.connectors import (CLIENT_PREFIXES, CONNECTION_FAMILY, FLOW_KEYS, ProgramConfig, checkpoint_config,
                              connection_client, heartbeat_config, source_config)
from infra.plan.failover import problems as failover_problems
from infra.plan.metrics import problems as metrics_problems
from infra.plan.offsets import problems as offsets_problems
from infra.plan.stack import heartbeat_replicators, part_wiring
from infra.core.releases import REFUSED, Flavour, Release, find, supported_versions
from infra.topology.resolution import Model, PartSpec, SourceSpec
from infra.topology.schema import (ResourceQuota, DNS1123_LABEL, Audit, ExactlyOnce, Flow, Policy, Protocol, StartFrom, TargetConnection,
                          Topology, Trust, quantity)

# A flow's name becomes its namespace, its Connect cluster name and a prefix of the Connect
# group id and internal topics; Strimzi derives longer names from it (`<name>-connect-api`,
# pod names with a hash), so it stays well under the 63 characters of a label.
MAX_FLOW_NAME = 40
# Aliases end up in topic names (`<alias>.<topic>`) and in Kubernetes object names.
MAX_ALIAS = 30
# Set by the typed fields, not as raw properties.
SMT_PREFIXES = ("transforms.", "predicates.")
CONVERTER_PREFIXES = ("key.converter", "value.converter", "header.converter")
# MirrorSourceConnector.validateEmitOffsetSyncConfigs (Kafka 3.9.0+): with emit.offset-syncs.enabled
# false, any key with these prefixes makes the connector invalid (seen on the real worker).
OFFSET_SYNCS_PREFIXES = ("offset-syncs.topic.", "offset-syncs-")
# Connector and client keys that hold secrets: refused in a topology's `config` (the values come
# from Pulumi secret config), and allowed only as config provider references in the objects the
# policy pack checks (infra/checks/policies.py).
SECRET_LIKE = re.compile(r"(password|jaas|secret|\.key$|credentials)", re.IGNORECASE)


def secret_named(key: str) -> bool:
    """Whether a connector, client or ConfigMap key names a secret."""
    return SECRET_LIKE.search(key) is not None


# SMTs and the record's topic. The replication policy maps source topics to target topics by
# name, and offset syncs, checkpoints and loop detection rely on that mapping, so a transform
# must keep the topic. Decided by what a transform does: Kafka's own transforms that only touch
# keys, values, headers or schemas (and the CSM converters of the documents) keep it; routers
# (Kafka's, other vendors', and any class named like one) change it; any other class is refused
# until its user states `keepsTopic: true` (fail closed: we cannot read its code). The policy
# pack refuses the renaming ones on any KafkaConnector (infra/checks/policies.py).
TOPIC_KEEPING_SMTS = frozenset({
    *(f"org.apache.kafka.connect.transforms.{name}" for name in (
        "Cast", "DropHeaders", "ExtractField", "Filter", "Flatten", "HeaderFrom", "HoistField", "InsertField",
        "InsertHeader", "MaskField", "ReplaceField", "SetSchemaMetadata", "TimestampConverter", "ValueToKey")),
    "com.cloudera.dim.kafka.connect.transforms.ConvertFromBytes",
    "com.cloudera.dim.kafka.connect.transforms.ConvertToBytes",
})
TOPIC_RENAMING_SMTS = frozenset({
    "org.apache.kafka.connect.transforms.RegexRouter",
    "org.apache.kafka.connect.transforms.TimestampRouter",
    "io.confluent.connect.transforms.MessageTimestampRouter",
    "io.confluent.connect.transforms.ExtractTopic",
    "io.confluent.connect.cloud.transforms.TopicRegexRouter",
    "io.aiven.kafka.connect.transforms.ExtractTopic",
    "io.aiven.kafka.connect.transforms.ExtractTopicFromSchemaName",
    "io.debezium.transforms.ByLogicalTableRouter",
    "io.debezium.transforms.outbox.EventRouter",
    "io.debezium.transforms.partitions.PartitionRouting",
})
# Simple class names that say a transform routes records: refused as renaming whatever the package.
ROUTER_NAME = re.compile(r"(Router|Routing|Route|Topic)", re.IGNORECASE)
# What is allowed instead of a renaming transform, in the topology's report and the pack's.
TOPIC_KEEPING = ("an SMT that keeps the record's topic: topic-renaming transforms break the replication policy "
                 "(target topic names, offset syncs, checkpoints and loop detection all derive from the source "
                 "topic name)")


def renames_topic(transform_type: str) -> bool:
    """Whether a transform of this class (as `type` names it, `$Key`/`$Value` included) changes
    the record's topic: a known router, or a class not known to keep it named like one."""
    base = transform_type.split("$")[0]
    return base in TOPIC_RENAMING_SMTS or (
        base not in TOPIC_KEEPING_SMTS and ROUTER_NAME.search(base.rsplit(".", 1)[-1]) is not None)


def keeps_topic(transform_type: str) -> bool:
    """Whether a transform of this class is known to keep the record's topic."""
    return transform_type.split("$")[0] in TOPIC_KEEPING_SMTS


# Predicates of Kafka and the property each one needs.
PREDICATE_REQUIRED = {
    "org.apache.kafka.connect.transforms.predicates.TopicNameMatches": "pattern",
    "org.apache.kafka.connect.transforms.predicates.HasHeaderKey": "name",
}
SMT_FIELDS = ("type", "predicate", "negate", "keepsTopic")


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
    return in_file_order(problems)


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


def _check_operator(topo: Topology) -> list[Problem]:
    """The operator release exists in infra/core/releases.py, and what depends on it fits it."""
    operator = topo.operator
    release = find(operator.flavour, operator.version)
    if release is None:
        flavour, version = operator.flavour, operator.version
        supported = ", ".join(supported_versions(flavour))
        refused = REFUSED.get((flavour, version)) if version else None
        if refused:
            allowed = f"a supported {flavour.value} release ({supported}): {refused}"
        else:
            other = next((f for f in Flavour if f is not flavour and find(f, version)), None)
            hint = f"; {version} is a {other.value} release: set flavour: {other.value}" if other else ""
            allowed = f"a supported {flavour.value} release: {supported}{hint}"
        return [Problem("operator", "version", version, allowed)]
    problems = []
    places = [("operator", "connect.version", operator.connect.version)]
    for index, flow in enumerate(topo.flows):
        where = f"flows[{index}] ({flow.flow_name})"
        places.append((where, "connect.version", flow.connect.version))
        places += [(where, f"connectClusters[{i}].connect.version", part.connect.version)
                   for i, part in enumerate(flow.connectClusters or [])]
    for where, field, version in places:
        if version is not None and version not in release.connect_versions:
            problems.append(Problem(where, field, version,
                                    f"a Kafka Connect version {release.name} runs: "
                                    f"{', '.join(release.connect_versions)} (unset: {release.default_connect_version})"))
    if operator.targetConnection is TargetConnection.workerFile and not release.worker_file.readable_by_connectors:
        problems.append(Problem("operator", "targetConnection", operator.targetConnection.value,
                                f"clusterObjects (or unset): {release.name} (Strimzi {release.strimzi}) writes the "
                                "worker file with ${strimzi...:...} references and no store keys, and Kafka "
                                "resolves a config variable only once, so ${file:...} would hand connectors "
                                "unusable values"))
    return problems


def _check_heartbeat_identity(topo: Topology, where: str, flow: Flow) -> list[Problem]:
    """The heartbeat connector's producer inherits the worker's producer.* keys (for the TARGET)
    and can only override them (Kafka Worker.baseProducerConfigs). A worker with an mTLS target
    keeps its client key store in every release's worker file; producing to a source that
    authenticates clients by certificate (protocol SSL) without a certificate of its own would
    present the TARGET's identity to the source."""
    source, target = topo.clusters.get(flow.source), topo.clusters.get(flow.target)
    if not (flow.heartbeats and source and target) or source.security.protocol is not Protocol.SSL:
        return []
    source_tls, target_tls = source.security.effective_tls, target.security.effective_tls
    if target_tls and target_tls.clientCertificate and not (source_tls and source_tls.clientCertificate):
        return [Problem(where, "heartbeats", True,
                        f"false, or a client certificate for {flow.source} (clusters.{flow.source}.security.tls."
                        f"clientCertificate): the heartbeat connector produces into {flow.source} over SSL with "
                        f"the Connect worker's producer, which carries {flow.target}'s client key store (mTLS) "
                        f"and would authenticate to {flow.source} as {flow.target}'s client")]
    return []


def _check_audit(model: Model, audit: Audit) -> list[Problem]:
    problems = []
    period = audit.period_seconds
    if audit.deadline_seconds >= period:
        problems.append(Problem("audit", "activeDeadlineSeconds", audit.activeDeadlineSeconds,
                                f"less than the schedule's shortest period ({period} s): a run must end before "
                                "the next one is due"))
    if audit.namespace in {d.names(p).namespace for d in model.flows for p in d.parts}:
        problems.append(Problem("audit", "namespace", audit.namespace, "a namespace no flow uses"))
    for field, text in (("reports.size", audit.reports.size),
                        *((f"resources.{k}.{r}", v) for k, d in audit.resources.model_dump(exclude_none=True).items()
                          for r, v in d.items())):
        try:
            quantity(text)
        except ValueError as exc:
            problems.append(Problem("audit", field, text, str(exc)))
    return problems


def _check_shape(where: str, flow: Flow) -> list[Problem]:
    problems = []
    given = [f for f in ("topics", "sources", "connectClusters") if getattr(flow, f) is not None]
    if len(given) != 1:
        problems.append(Problem(where, " / ".join(given) or "topics", None if not given else ", ".join(given),
                                "exactly one of `topics` (one MirrorSourceConnector), `sources` (several) or "
                                "`connectClusters` (the flow split over several Connect clusters)"))
    if flow.topicsExclude and flow.topics is None:
        problems.append(Problem(where, "topicsExclude", flow.topicsExclude,
                                "topicsExclude next to the `topics` it narrows (in `sources[]` or `connectClusters[]`)"))
    # Instance names name ConfigMaps and connectors: unique in the flow, across its Connect clusters.
    problems += _unique(where, [(f"{path}.name", s.name) for path, s in flow.instances()])
    for i, part in enumerate(flow.connectClusters or []):
        if (part.topics is None) == (part.sources is None):
            problems.append(Problem(where, f"connectClusters[{i}]", part.name,
                                    "exactly one of `topics` or `sources` in each Connect cluster"))
        if part.topicsExclude and part.topics is None:
            problems.append(Problem(where, f"connectClusters[{i}].topicsExclude", part.topicsExclude,
                                    "topicsExclude next to the `topics` it narrows"))
    problems += _unique(where, [(f"connectClusters[{i}].name", p.name) for i, p in enumerate(flow.connectClusters or [])])
    return problems


def _unique(where: str, named: list[tuple[str, str]]) -> list[Problem]:
    """(field, name) pairs: every repeated name is a problem at its field."""
    seen, problems = set(), []
    for field, name in named:
        if name in seen:
            problems.append(Problem(where, field, name, "a name not used by another entry of the list"))
        seen.add(name)
    return problems


def _check_bidirectional(where: str, flow: Flow) -> list[Problem]:
    if flow.aggregation and not flow.bidirectional and flow.policy is not Policy.identity:
        # Default-policy flows of two sources never collide (the prefixes differ), and one
        # source's flows must not write the same topics: nothing is left to aggregate.
        return [Problem(where, "aggregation", True,
                        "false (or unset): aggregation declares an identity fan-in (replicationPolicy: "
                        "identity); this flow uses the default policy")]
    if not flow.bidirectional:
        return []
    problems = []
    if flow.replicationPolicy is Policy.default:
        problems.append(Problem(where, "replicationPolicy", "default",
                                "identity (or unset) for a bidirectional pair; prefixed replication both ways is "
                                "two ordinary flows, whose DefaultReplicationPolicy detects loops by itself"))
    if flow.checkpoints:
        problems.append(Problem(where, "checkpoints", True,
                                "false (or unset): checkpointing and group offset sync do not work in a "
                                "bidirectional prefixless setup (the documents)"))
    if flow.aggregation:
        problems.append(Problem(where, "aggregation", True, "false: a bidirectional pair is not a fan-in"))
    return problems


def _check_part(where: str, flow: Flow, part: PartSpec) -> list[Problem]:
    problems = []
    label = part.where if part.name else "(flow)"
    if part.name:
        connect = f"{flow.flow_name}-{part.name}"
        if len(connect) > MAX_FLOW_NAME:
            problems.append(Problem(where, f"{part.where}.name", part.name,
                                    f"a shorter name: the Connect cluster and namespace `{connect}` "
                                    f"must be at most {MAX_FLOW_NAME} characters"))
    if part.quota:
        problems += _check_quota(where, label, part, part.quota)
    return problems


def _check_quota(where: str, label: str, part: PartSpec, quota: ResourceQuota) -> list[Problem]:
    """A quota that the Connect pods cannot satisfy makes Strimzi's pods fail admission, long
    after `pulumi up` reported success: catch it here."""
    problems = []
    field = "resourceQuota.hard" if label == "(flow)" else f"{label}.resourceQuota.hard"
    resources = part.connect.resources
    for key, hard in sorted(quota.hard.items()):
        kind, _, resource = key.partition(".")
        if kind not in ("requests", "limits") or resource not in ("cpu", "memory"):
            continue
        declared = getattr(resources, kind, None) if resources else None
        if not declared or resource not in declared:
            problems.append(Problem(where, f"{field}.{key}", hard,
                                    f"connect.resources.{kind}.{resource} set as well: with this quota, pods "
                                    f"without a {resource} {kind[:-1]} are refused by the API server"))
            continue
        try:
            need = part.connect.replicas * quantity(str(declared[resource]))
            have = quantity(str(hard))
        except ValueError as exc:
            problems.append(Problem(where, f"{field}.{key}", hard, f"a Kubernetes quantity ({exc})"))
            continue
        if need > have:
            problems.append(Problem(where, f"{field}.{key}", hard,
                                    f"at least {part.connect.replicas} replicas x {declared[resource]} = "
                                    f"{_fmt(need)} (connect.replicas x connect.resources.{kind}.{resource})"))
    return problems


def _fmt(value: float) -> str:
    return f"{value:g}"


def _check_smts(where: str, flow: Flow, spec: SourceSpec) -> list[Problem]:
    problems = []
    at = "" if spec.where in ("topics", "(flow)") or spec.name is None else f"{spec.where}."
    names_ = [t.name for t in spec.transforms]
    problems += _unique(where, [(f"{at}transforms[{i}].name", n) for i, n in enumerate(names_)])
    problems += _unique(where, [(f"{at}predicates[{i}].name", p.name) for i, p in enumerate(spec.predicates)])
    declared = {p.name for p in spec.predicates}
    if flow.bidirectional:
        reserved = {LOOP_FILTER_TRANSFORM, LOOP_HEADER_TRANSFORM}
        for i, t in enumerate(spec.transforms):
            if t.name in reserved:
                problems.append(Problem(where, f"{at}transforms[{i}].name", t.name,
                                        f"another name: {', '.join(sorted(reserved))} are the loop filter's "
                                        "transforms in a bidirectional pair"))
        for i, p in enumerate(spec.predicates):
            if p.name == LOOP_PREDICATE:
                problems.append(Problem(where, f"{at}predicates[{i}].name", p.name,
                                        f"another name: {LOOP_PREDICATE} is the loop filter's predicate"))
    for i, t in enumerate(spec.transforms):
        if renames_topic(t.type):
            problems.append(Problem(where, f"{at}transforms[{i}].type", t.type, TOPIC_KEEPING))
        elif not keeps_topic(t.type) and not t.keepsTopic:
            problems.append(Problem(where, f"{at}transforms[{i}].type", t.type,
                                    "a transform known to keep the record's topic (Kafka's own field, header and "
                                    "schema transforms): the program cannot tell what this class does. If it never "
                                    "changes the record's topic, say so with `keepsTopic: true` on this transform"))
        if t.predicate and t.predicate not in declared:
            problems.append(Problem(where, f"{at}transforms[{i}].predicate", t.predicate,
                                    f"a predicate declared under predicates: {', '.join(sorted(declared)) or 'none'}"))
        if t.negate and not t.predicate:
            problems.append(Problem(where, f"{at}transforms[{i}].negate", True, "a `predicate` to negate"))
        problems += _check_smt_config(where, f"{at}transforms[{i}].config", t.config)
    for i, p in enumerate(spec.predicates):
        problems += _check_smt_config(where, f"{at}predicates[{i}].config", p.config)
        required = PREDICATE_REQUIRED.get(p.type)
        if required and required not in p.config:
            problems.append(Problem(where, f"{at}predicates[{i}].config.{required}", None,
                                    f"a value: {p.type.rsplit('.', 1)[-1]} needs `{required}`"))
        if required == "pattern" and required in p.config:
            # TopicNameMatches compiles it with java.util.regex. No guardrail reasons about it,
            # so constructs the automata cannot model (lookarounds...) are fine here.
            try:
                jregex.parse(str(p.config["pattern"]))
            except jregex.RegexError as exc:
                problems.append(Problem(where, f"{at}predicates[{i}].config.pattern", p.config["pattern"],
                                        f"a valid Java regex ({exc})"))
            except jregex.Unsupported:
                pass
    for conv_name in ("key", "value"):
        conv = getattr(spec.converters, conv_name, None) if spec.converters else None
        if conv:
            problems += _check_smt_config(where, f"{at}converters.{conv_name}.config", conv.config)
    return problems


def _check_smt_config(where: str, field: str, config: Mapping[str, object]) -> list[Problem]:
    problems = []
    for key in sorted(config):
        if key in SMT_FIELDS:
            problems.append(Problem(where, f"{field}.{key}", key, f"the `{key}` field beside `config`"))
        elif secret_named(key):
            problems.append(Problem(where, f"{field}.{key}", key, "no secrets in connector config"))
    return problems


OWNED = ("a property the program does not set itself (topics, groups, policy and cluster connections come from "
         "the flow)")


def _check_overrides(model: Model) -> dict[int, list[Problem]]:
    """The `config` overrides of each declared flow, by its index: no key the connectors' generators
    own (infra/plan/connectors.py, for that connector kind, release and flow), and no key the typed
    fields or Pulumi secrets hold."""
    topo = model.topology
    release = find(topo.operator.flavour, topo.operator.version)
    if release is None:  # _check_operator has refused the version: no generator to ask
        return {}
    copiers = heartbeat_replicators(model)
    found: dict[int, dict[tuple[str, str], Problem]] = {}
    for d in model.flows:
        flow, declared = d.flow, topo.flows[d.declared]
        if flow.source == flow.target or not {flow.source, flow.target} <= set(topo.clusters):
            continue  # refused above; no connection to build
        where = f"flows[{d.declared}] ({declared.flow_name})"
        instances = dict(declared.instances())
        checked = found.setdefault(d.declared, {})
        for part in d.parts:
            w, heartbeat = part_wiring(model, d, part)
            programs: list[tuple[str, Mapping[str, object], ProgramConfig]] = []
            for spec in part.sources:
                program = source_config(w, spec, copiers[(flow.source, flow.target)])
                programs.append(("config.source", flow.config.source, program))
                if spec.name is not None and spec.where in instances:
                    programs.append((f"{spec.where}.config", instances[spec.where].config, program))
            if flow.with_checkpoints:
                programs.append(("config.checkpoint", flow.config.checkpoint, checkpoint_config(w, part)))
            if heartbeat is not None:
                programs.append(("config.heartbeat", flow.config.heartbeat, heartbeat_config(w, heartbeat)))
            for prefix, config, program in programs:
                for key in config:
                    if (prefix, key) not in checked:
                        reason = _override_reason(flow, release, prefix, key, program)
                        if reason:
                            checked[(prefix, key)] = Problem(where, f"{prefix}.{key}", key, reason)
        # Overrides of connectors the flow does not run (checkpoints off, no heartbeats) are
        # still read as the typed fields and secrets rules say.
        for prefix, config in (("config.checkpoint", flow.config.checkpoint), ("config.heartbeat", flow.config.heartbeat)):
            for key in config:
                if (prefix, key) not in checked:
                    reason = _override_reason(flow, release, prefix, key, None)
                    if reason:
                        checked[(prefix, key)] = Problem(where, f"{prefix}.{key}", key, reason)
    order = ["config.source", "config.checkpoint", "config.heartbeat"]
    out: dict[int, list[Problem]] = {}
    for index, checked in found.items():
        paths = order + [f"{path}.config" for path, _ in topo.flows[index].instances()]
        out[index] = [checked[(path, key)] for path in paths for key in sorted(k for p, k in checked if p == path)]
    return out


def _override_reason(flow: Flow, release: Release, prefix: str, key: str, program: ProgramConfig | None) -> str | None:
    """Why a user's `config` key is refused, or None."""
    client = connection_client(key)
    kind = program.kind.value if program else prefix.rpartition(".")[2]
    if client is not None:
        client_prefix, connection_key = client
        family = next(f for f in CONNECTION_FAMILY if connection_key.startswith(f))
        family = family + "*" if family.endswith(".") else family
        return (f"no `{client_prefix}{family}` key in the {kind} connector's config: `{client_prefix}` configures "
                f"{CLIENT_PREFIXES[client_prefix]}, whose connection (bootstrap.servers, security.protocol, sasl.*, "
                "ssl.*) the program derives from the topology's clusters; a value here would connect it to "
                "another cluster or as another principal")
    typed = key.startswith(SMT_PREFIXES) or key in ("transforms", "predicates")
    converter = key.startswith(CONVERTER_PREFIXES)
    if program is not None and program.owns(key) and not (typed or converter):
        return OWNED
    if (flow.bidirectional and release.emit_offset_syncs_key and key.startswith(OFFSET_SYNCS_PREFIXES)
            and prefix not in ("config.checkpoint", "config.heartbeat")):
        return ("no offset-syncs settings in a bidirectional pair: its source connectors emit no offset syncs "
                f"(emit.offset-syncs.enabled=false), and Kafka {release.kafka} refuses the connector when any such "
                "key is set (MirrorSourceConnector.validate)")
    if typed:
        return "the typed `transforms` and `predicates` lists (docs/topology.md#single-message-transforms)"
    if converter:
        return "the typed `converters` field"
    if secret_named(key):
        return "no secrets in connector config: they come from Pulumi secret config (docs/topology.md#secrets)"
    if program is None and key in FLOW_KEYS:
        return OWNED
    return None


def warnings(model: Model) -> list[str]:
    """Valid but risky choices, shown by `pulumi preview` and the offline render."""
    found = []
    for d in model.flows:
        if d.flow.startFrom is StartFrom.latest:
            found.append(f"flow {d.name}: startFrom latest replicates new partitions from their end "
                         "offset: records written before the connector first reads them are never replicated "
                         "(at-least-once no longer holds)")
    return found


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
