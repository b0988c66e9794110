"""The audit configuration: what the replication audit checks, derived from the same plan as
the deployment, so that it checks exactly what was deployed. Plain data (JSON); no secrets:
credentials reach the audit as files of mounted Secrets (CREDENTIAL_FILES), never through this
document."""

from __future__ import annotations

from infra import names
from infra.model import Audit, Topology
from infra.plan import StackPlan

VERSION = 1
# The files of a cluster's credentials directory (`<credentials>/<alias>/<file>`), by secret
# config item: one home for the Secret keys the audit component writes and the job reads.
CREDENTIAL_FILES = {"password": "password", "caCert": "ca.crt", "truststore": "truststore",
                    "truststorePassword": "truststore.password", "clientCert": "client.crt",
                    "clientKey": "client.key"}
INSERT_HEADER = "org.apache.kafka.connect.transforms.InsertHeader"


def _cluster(topo: Topology, alias: str) -> dict:
    cluster = topo.clusters[alias]
    sec = cluster.security
    tls = sec.effective_tls
    return {"bootstrapServers": cluster.bootstrapServers,
            "securityProtocol": sec.protocol.value,
            "saslMechanism": sec.sasl.mechanism.value if sec.sasl else None,
            "saslUsername": sec.sasl.username if sec.sasl else None,
            "trust": tls.trust.value if tls else None,
            "clientCertificate": bool(tls and tls.clientCertificate)}


def credential_items(topo: Topology, alias: str) -> list[str]:
    """The secret config items (infra.config.SECRET_ITEMS) the audit needs to reach `alias`."""
    audit_cluster = _cluster(topo, alias)
    items = ["password"] if audit_cluster["saslMechanism"] else []
    trust = audit_cluster["trust"]
    items += [] if trust is None else ["caCert"] if trust == "pem" else ["truststore", "truststorePassword"]
    items += ["clientCert", "clientKey"] if audit_cluster["clientCertificate"] else []
    return items


def _comparison(spec) -> dict:
    """How the data audit compares one connector's records. Header SMTs add headers the source
    never had (stripped before comparing); any other SMT or converter may rewrite values, so
    those connectors are compared on key, headers and timestamp only."""
    rewrites = bool(spec.converters) or any(t.type != INSERT_HEADER for t in spec.transforms)
    return {"compareValue": not rewrites,
            "stripHeaders": sorted(str(t.config["header"]) for t in spec.transforms
                                   if t.type == INSERT_HEADER and "header" in t.config)}


def audited_aliases(stack_plan: StackPlan) -> list[str]:
    return sorted({a for f in stack_plan.flows for a in (f.flow.source, f.flow.target)})


def settings(audit: Audit | None) -> dict:
    audit = audit or Audit()
    return {"window": audit.window.model_dump(), "thresholds": audit.thresholds.model_dump(),
            "pushgateway": audit.pushgateway}


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
        rest = {c["name"]: c["restUrl"] for c in out["connectClusters"]}
        flows.append({
            "name": flow_plan.name,
            "sourceAlias": flow.source,
            "targetAlias": flow.target,
            "replicationPolicy": out["replicationPolicy"],
            "topicPrefix": out["topicPrefix"],
            # Several flows may write one target topic only when they say so: then records
            # from the other flows are expected there, not findings.
            "aggregation": flow.aggregation,
            "connectors": [{"name": part.names.source_connector(spec.name), "restUrl": rest[part.names.connect],
                            "topics": list(spec.topics), "topicsExclude": list(spec.topics_exclude),
                            **_comparison(spec)}
                           for part in flow_plan.parts for spec in part.spec.sources],
            "heartbeats": {"source": internal["source"]["heartbeats"], "target": internal["target"]["heartbeats"]},
            "excludeTopics": {"source": sorted(t for t in (internal["source"]["offsetSyncs"],
                                                           internal["source"]["heartbeats"]) if t),
                              "target": target_internal},
            # Bidirectional pairs: records carrying `dropped` came from the target side and are
            # never replicated back; replicated records carry `added`, stripped before comparing.
            "loopHeaders": ({"added": names.loop_header(flow.source), "dropped": names.loop_header(flow.target)}
                            if flow.partner else None),
        })
    return {"version": VERSION,
            "clusters": {alias: _cluster(topo, alias) for alias in audited_aliases(stack_plan)},
            "flows": flows,
            "settings": settings(topo.audit)}
