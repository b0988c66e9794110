"""The pure plan: from a validated model to the Kubernetes objects of every flow.

No Pulumi here. Manifests are typed dicts with Kubernetes' field names (infra/core/manifests.py),
except that Secret values are `SecretValue`s that the components resolve from Pulumi secret
config; so the plan, its tests and the offline render never hold a secret.

This module puts a flow together; the pieces have homes of their own: the plan's types
(infra/plan/types.py), one generator per object (infra/plan/objects.py; the connectors'
infra/plan/connectors.py), the bidirectional invariant (infra/plan/symmetry.py) and the outputs
writer (infra/plan/outputs.py).
"""

from __future__ import annotations

from dataclasses import replace

from infra.core import names
from infra.core.manifests import SecretValue
from infra.plan.connection import (Connection, Entry, Store, docker_config_json, heartbeat_client, source_connection,
                                   target_connection, target_objects, versioned_references)
from infra.plan.connectors import Wiring, connectors, with_digest, with_versions
from infra.plan.objects import (kafka_connect, metrics_configmap, mounted_files, namespace, object_meta,
                                replication_entries, resource_quota, role, role_binding, stored_objects)
from infra.plan.symmetry import check_symmetry
from infra.plan.types import ConnectObject, FlowPlan, PartPlan, StackPlan, Stored
from infra.topology.resolution import Direction, Model, PartSpec
from infra.topology.schema import ConnectorState


def plan(model: Model) -> StackPlan:
    heartbeat_copiers = heartbeat_replicators(model)
    flows = {d.name: plan_flow(model, d, heartbeat_copiers) for d in model.flows}
    for flow_plan in flows.values():
        partner = flow_plan.direction.partner
        if partner and flow_plan.name < partner:
            check_symmetry(flow_plan, flows[partner])
    return StackPlan(model.operator.release, tuple(flows.values()))


def heartbeat_replicators(model: Model) -> dict[tuple[str, str], str]:
    """The one source connector per (source, target) cluster pair that replicates the source's
    heartbeats topics. MirrorSourceConnector copies them whatever its topic filter says
    (`shouldReplicateTopic`), so every connector of a pair would write each heartbeat again;
    from Kafka 4.0 the others switch it off (`heartbeats.replication.enabled`). The first
    running connector by name is chosen, so the choice is stable whatever the file's order."""
    chosen: dict[tuple[str, str], tuple[bool, str]] = {}
    for d in model.flows:
        for part in d.parts:
            n = d.names(part)
            for spec in part.sources:
                rank = (spec.state is not ConnectorState.running, n.source_connector(spec.name))
                pair = (d.flow.source, d.flow.target)
                chosen[pair] = min(chosen.get(pair, rank), rank)
    return {pair: rank[1] for pair, rank in chosen.items()}


# ----------------------------------------------------------------- per flow


def plan_flow(model: Model, d: Direction, heartbeat_copiers: dict[tuple[str, str], str]) -> FlowPlan:
    parts = tuple(plan_part(model, d, spec, heartbeat_copiers) for spec in d.parts)
    return FlowPlan(d, parts, model.operator.release)


def plan_part(model: Model, d: Direction, part: PartSpec, heartbeat_copiers: dict[tuple[str, str], str]) -> PartPlan:
    flow = d.flow
    wiring, heartbeat_conn = part_wiring(model, d, part)
    n, source_conn, target_conn, target = wiring.n, wiring.source, wiring.target, model.clusters[flow.target]
    entries = [
        Entry(Store.CONFIGMAP, n.source_configmap, "alias", flow.source),
        *source_conn.entries,
        *(heartbeat_conn.entries if heartbeat_conn else ()),
        *target_objects(flow.target, target, n),
        *target_conn.entries,
        *replication_entries(flow, n, part),
    ]
    secrets = {e.obj for e in entries if e.store is Store.SECRET}
    # The pods roll with the target's and the mounted files' Secrets; the connectors restart with
    # the other Secrets of the source, which their config providers read afresh.
    target_access = {n.target_password_secret, n.target_ca_secret, n.target_client_secret}
    mounted = mounted_files(entries)
    source_access = tuple(sorted(secrets - target_access - set(mounted)))
    versions = versioned_references(model.clusters[a] for a in (flow.source, flow.target))
    planned = tuple(replace(with_versions(with_digest(c, entries), versions), restart_with=source_access) for c in
                    connectors(wiring, part, heartbeat_conn, heartbeat_copiers[(flow.source, flow.target)]))
    access: list[Stored] = [*stored_objects(entries, n, flow)]
    rules = metrics_configmap(model, flow, n)
    if rules:
        # Among the objects the KafkaConnect reads, created before it: the operator refuses a
        # metricsConfig whose ConfigMap is missing (MetricsModel.metricsJson).
        access.append(rules)
    pull = model.operator.imagePullSecret
    if pull and pull.ours:  # else the team's Secret, which the pods name (objects.connect_template)
        server, username = pull.server, pull.username
        assert server is not None and username is not None and pull.name is not None
        access.append({"apiVersion": "v1", "kind": "Secret", "metadata": object_meta(pull.name, n, flow),
                       "type": "kubernetes.io/dockerconfigjson",
                       "stringData": {".dockerconfigjson": SecretValue(
                           (names.REGISTRY_PASSWORD_KEY,),
                           lambda password: docker_config_json(server, username, password))}})
    connect: tuple[ConnectObject, ...] = (
        *([resource_quota(flow, n, part)] if part.quota else []),
        kafka_connect(model, flow, n, part, entries, planned),
        role(flow, n, planned),
        role_binding(flow, n),
    )
    return PartPlan(part, n, namespace(flow, n), tuple(access), connect, planned, tuple(sorted(secrets & target_access)),
                    next(iter(mounted), None))


def part_wiring(model: Model, d: Direction, part: PartSpec) -> tuple[Wiring, Connection | None]:
    """What a Connect cluster's connectors share, and the heartbeat's client connection where the
    heartbeat connector runs; the rules read the connectors' ownership from the same wiring."""
    flow = d.flow
    n = d.names(part)
    release = model.operator.release
    source, target = model.clusters[flow.source], model.clusters[flow.target]
    source_conn = source_connection(flow.source, source, n)
    target_conn = target_connection(flow.target, target, n, model.operator.target_connection)
    heartbeat_conn = (heartbeat_client(flow.source, source, target, n, release.worker_file)
                      if part.heartbeat else None)
    return Wiring(release, d, n, source_conn, target_conn, model.operator, model.topology.monitoring), heartbeat_conn
