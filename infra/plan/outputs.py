"""The stack outputs (docs/outputs.md; their contract is contract/outputs.py), written from the
plan's typed fields as the contract's own types (contract/output_types.py, generated from its
JSON Schema): mypy holds every field written here to the one definition."""

from __future__ import annotations

from contract.output_types import Outputs, OutputsConnectCluster, OutputsConnectors, OutputsFlow
from contract.outputs import OUTPUTS_VERSION
from infra.plan.connectors import ConnectorKind
from infra.plan.failover import failover_outputs
from infra.plan.types import FlowPlan, PartPlan, StackPlan


def stack_outputs(sp: StackPlan) -> Outputs:
    """The stack's outputs: the operator release and every flow's (`flow_outputs`)."""
    return {"outputsVersion": OUTPUTS_VERSION, "operatorFlavour": sp.flavour.value, "operator": sp.release.outputs(),
            "flows": {f.name: flow_outputs(f) for f in sp.flows}}


def _by_kind(parts: tuple[PartPlan, ...]) -> OutputsConnectors:
    def named(kind: ConnectorKind) -> list[str]:
        return [name for p in parts for name in p.connector_names(kind)]
    return {"source": named(ConnectorKind.source), "checkpoint": named(ConnectorKind.checkpoint),
            "heartbeat": named(ConnectorKind.heartbeat)}


def flow_outputs(fp: FlowPlan) -> OutputsFlow:
    """The per-flow stack output contract (docs/outputs.md), from the plan's typed fields."""
    flow, parts, first = fp.flow, fp.parts, fp.parts[0].names
    internal = fp.internal_topics
    clusters: list[OutputsConnectCluster] = []
    # Only with a `kubernetes` section: outputs of stacks without one keep their bytes.
    placed = parts[0].kubernetes is not None
    for part in parts:
        n = part.names
        (connect,) = [o for o in part.connect if o["kind"] == "KafkaConnect"]
        cluster: OutputsConnectCluster = {
            "name": n.connect, "namespace": n.namespace, "serviceAccount": n.service_account,
            "restService": n.rest_service, "restUrl": n.rest_url,
            "connectors": _by_kind((part,)),
            "sources": [{"connector": n.source_connector(s.name), "topics": list(s.topics),
                         "topicsExclude": list(s.topics_exclude)} for s in part.spec.sources],
            "connectGroupId": n.group_id, "connectConfigStorage": n.config_storage_topic,
            "connectOffsetStorage": n.offset_storage_topic, "connectStatusStorage": n.status_storage_topic,
            # What the operator checks against its own Kafka versions when it reconciles the
            # KafkaConnect: the next operator release judges the deployed one before the next
            # `pulumi up` (transitions.check_connect_versions reads them back).
            "connectVersion": connect["spec"]["version"], "connectImage": connect["spec"].get("image"),
        }
        if placed and part.kubernetes is not None:
            cluster["kubernetesCluster"] = part.kubernetes
        clusters.append(cluster)
    specs = [s for p in parts for s in p.spec.sources]
    single = specs[0] if len(specs) == 1 else None
    loop = fp.loop_headers
    out: OutputsFlow = {
        # The first Connect cluster: the only one unless the flow is split (see connectClusters).
        "namespace": first.namespace,
        "sourceAlias": flow.source,
        "targetAlias": flow.target,
        "connectCluster": first.connect,
        "connectServiceAccount": first.service_account,
        "connectRestService": first.rest_service,
        "connectRestUrl": first.rest_url,
        "connectors": _by_kind(parts),
        "connectClusters": clusters,
        "replicationPolicy": flow.policy.value,
        "replicationPolicyClass": fp.policy_class,
        "topicPrefix": fp.topic_prefix,
        # With several source connectors: every include; each one's excludes are in connectClusters.
        "topics": list(dict.fromkeys(t for s in specs for t in s.topics)),
        "topicsExclude": list(single.topics_exclude) if single else [],
        "bidirectional": ({"partner": fp.direction.partner, "loopHeader": loop[0], "filteredHeader": loop[1]}
                          if loop and fp.direction.partner else None),
        "exactlyOnce": flow.exactlyOnce.value,
        "startFrom": flow.startFrom.value,
        # The documents' failover: its wait, the procedures the policy allows, what consumers read after.
        "failover": failover_outputs(fp.direction),
        "internalTopics": {
            "source": {"offsetSyncs": internal.source_offset_syncs, "heartbeats": internal.source_heartbeats},
            "target": {
                "checkpoints": internal.target_checkpoints,
                "heartbeats": internal.target_heartbeats,
                "connectGroupId": first.group_id,
                "connectConfigStorage": first.config_storage_topic,
                "connectOffsetStorage": first.offset_storage_topic,
                "connectStatusStorage": first.status_storage_topic,
            },
        },
    }
    if parts[0].kubernetes is not None:  # placed
        out["kubernetesCluster"] = parts[0].kubernetes  # where the first Connect cluster runs
    return out
