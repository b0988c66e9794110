"""One flow's shape: names, the operator release, heartbeats, bidirectional pairs, Connect
clusters and their quotas, and the audit section."""

from __future__ import annotations

from infra.core.errors import Problem
from infra.core.releases import REFUSED, Flavour, find, supported_versions
from infra.topology.resolution import Model, PartSpec
from infra.topology.schema import Audit, Flow, Policy, Protocol, ResourceQuota, TargetConnection, Topology, quantity
from infra.topology.schema.values import MAX_ALIAS

# A flow's name becomes its namespace, its Connect cluster name and a prefix of the Connect
# group id and internal topics; Strimzi derives longer names from it (`<name>-connect-api`,
# pod names with a hash), so it stays well under the 63 characters of a label.
MAX_FLOW_NAME = 40




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


def _check_restarts(topo: Topology, where: str, flow: Flow) -> list[Problem]:
    """A limit on the operator's restarts where nothing restarts: a setting nothing reads."""
    if flow.maxRestarts is not None and not topo.operator.autoRestart:
        return [Problem(where, "maxRestarts", flow.maxRestarts,
                        "no value while operator.autoRestart is false (the operator restarts nothing, so there is "
                        "nothing to limit): drop maxRestarts, or set operator.autoRestart: true")]
    return []


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


def _check_unread(where: str, flow: Flow) -> list[Problem]:
    """Settings nothing would read: accepted, they would say something the flow does not do."""
    problems = []
    for field, settings in (("syncTopicConfigs", flow.syncTopicConfigs), ("syncTopicAcls", flow.syncTopicAcls),
                            ("syncGroupOffsets", flow.syncGroupOffsets)):
        if settings.enabled:
            continue
        for name in ("exclude", "intervalSeconds"):
            value = getattr(settings, name, None)
            if value:
                problems.append(Problem(where, f"{field}.{name}", value,
                                        f"no {name} while {field}.enabled is false: MirrorMaker 2 reads it only with "
                                        f"the sync on (remove it, or set {field}.enabled: true)"))
    if flow.acknowledgeReplayedHistory and flow.policy is not Policy.identity:
        problems.append(Problem(where, "acknowledgeReplayedHistory", True,
                                "false (or absent) on a default-policy flow: it acknowledges an identity failback's "
                                "copy of history into same-named topics, which this flow's prefixed remote topics "
                                "never make"))
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


# Quota keys that count the Connect pods' compute resources: `requests.<r>`, `limits.<r>`, and the
# bare names Kubernetes reads as requests (`cpu`, `memory`, `ephemeral-storage`).
BARE_REQUESTS = ("cpu", "memory", "ephemeral-storage")
POD_COUNTS = ("pods", "count/pods")


def _check_quota(where: str, label: str, part: PartSpec, quota: ResourceQuota) -> list[Problem]:
    """A quota that the Connect pods cannot satisfy makes Strimzi's pods fail admission, long
    after `pulumi up` reported success: catch it here. Compute resources (every pod must declare
    what the quota limits, and the replicas' sum fit) and pod counts are checked; other keys count
    objects the operator creates (Services, Secrets, ConfigMaps...), which no tier here admits,
    and need `acknowledgeUnchecked`."""
    problems = []
    field = "resourceQuota.hard" if label == "(flow)" else f"{label}.resourceQuota.hard"
    resources = part.connect.resources
    unchecked = []
    for key, hard in sorted(quota.hard.items()):
        if key in POD_COUNTS:
            if int(quantity(str(hard))) < part.connect.replicas:
                problems.append(Problem(where, f"{field}.{key}", hard, f"at least {part.connect.replicas} pods "
                                        "(connect.replicas): Strimzi's pods beyond the quota are refused"))
            continue
        kind, _, resource = key.partition(".")
        if key in BARE_REQUESTS:
            kind, resource = "requests", key
        if kind not in ("requests", "limits") or not resource:
            unchecked.append(key)
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
    if unchecked and not quota.acknowledgeUnchecked:
        problems.append(Problem(where, f"{field}", ", ".join(unchecked),
                                "quota keys the program checks (requests.*, limits.*, cpu, memory, "
                                "ephemeral-storage, pods, count/pods), or `resourceQuota.acknowledgeUnchecked: "
                                "true`: these count objects the operator also creates in the namespace, which no "
                                "check here counts, and a quota too small leaves the Connect cluster NotReady"))
    return problems


def _fmt(value: float) -> str:
    return f"{value:g}"
