"""The audit configuration: what the replication audit checks, derived from the same plan as
the deployment, so that it checks exactly what was deployed. Plain data (JSON); no secrets:
credentials reach the audit through Secrets, never through this document."""

from __future__ import annotations

from infra import names
from infra.model import Topology
from infra.plan import StackPlan

VERSION = 1


def audit_config(topo: Topology, stack_plan: StackPlan) -> dict:
    flows = []
    for flow_plan in stack_plan.flows:
        flow, out = flow_plan.flow, flow_plan.outputs
        internal = out["internalTopics"]
        # Topics the data audit leaves out on the target side: MirrorMaker 2's and Connect's own.
        target_internal = sorted({t for t in (internal["target"]["checkpoints"], internal["target"]["heartbeats"],
                                              *(c[k] for c in out["connectClusters"] for k in
                                                ("connectConfigStorage", "connectOffsetStorage",
                                                 "connectStatusStorage")))
                                  if t})
        flows.append({
            "name": flow_plan.name,
            "sourceAlias": flow.source,
            "targetAlias": flow.target,
            "source": {"bootstrapServers": topo.clusters[flow.source].bootstrapServers},
            "target": {"bootstrapServers": topo.clusters[flow.target].bootstrapServers},
            "replicationPolicy": out["replicationPolicy"],
            "topicPrefix": out["topicPrefix"],
            "connectors": [{"name": s["connector"], "restUrl": c["restUrl"], "topics": s["topics"],
                            "topicsExclude": s["topicsExclude"]}
                           for c in out["connectClusters"] for s in c["sources"]],
            "heartbeats": {"source": internal["source"]["heartbeats"], "target": internal["target"]["heartbeats"]},
            "excludeTopics": {"source": sorted(t for t in (internal["source"]["offsetSyncs"],
                                                           internal["source"]["heartbeats"]) if t),
                              "target": target_internal},
            # Bidirectional pairs: records carrying this header came from the target side and
            # were never meant to be replicated back; the audit strips the headers the flows add.
            "loopHeaders": ({"added": names.loop_header(flow.source), "dropped": names.loop_header(flow.target)}
                            if flow.partner else None),
        })
    return {"version": VERSION, "flows": flows}
