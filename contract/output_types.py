"""The stack outputs contract as Python types: what the program writes and its components hold.

Generated from the outputs contract's JSON Schema (contract/outputs.py SCHEMA)
by `make python-types` (infra/tools/python_types.py); do not edit: tests/unit/test_python_types.py
holds this file to it.
"""

from __future__ import annotations

import typing as t

__all__ = [
    "Outputs", "OutputsAudit", "OutputsAuditReports", "OutputsConnectCluster",
    "OutputsConnectClusterSourcesItem", "OutputsConnectors", "OutputsFailover", "OutputsFlow",
    "OutputsFlowBidirectional", "OutputsFlowInternalTopics", "OutputsFlowInternalTopicsSource",
    "OutputsFlowInternalTopicsTarget", "OutputsOperator", "OutputsProcedure",
]


OutputsOperator = t.TypedDict("OutputsOperator", {
    "flavour": t.Literal["csm", "strimzi"],
    "version": str,
    "strimziVersion": str,
    "kafkaVersion": str,
})


OutputsProcedure: t.TypeAlias = t.Literal["continuous", "cutoff", "disaster"]


OutputsFailover = t.TypedDict("OutputsFailover", {
    "procedure": OutputsProcedure,
    "procedures": list[OutputsProcedure],
    "waitSeconds": int | None,
    "topics": list[str],
})


OutputsFlowBidirectional = t.TypedDict("OutputsFlowBidirectional", {
    "partner": str,
    "loopHeader": str,
    "filteredHeader": str,
})


OutputsConnectors = t.TypedDict("OutputsConnectors", {
    "source": list[str],
    "checkpoint": list[str],
    "heartbeat": list[str],
})


OutputsConnectClusterSourcesItem = t.TypedDict("OutputsConnectClusterSourcesItem", {
    "connector": str,
    "topics": list[str],
    "topicsExclude": list[str],
})


OutputsConnectCluster = t.TypedDict("OutputsConnectCluster", {
    "kubernetesCluster": t.NotRequired[str],
    "name": str,
    "namespace": str,
    "restService": str,
    "restUrl": str,
    "serviceAccount": str,
    "connectGroupId": str,
    "connectConfigStorage": str,
    "connectOffsetStorage": str,
    "connectStatusStorage": str,
    "connectVersion": t.NotRequired[str],
    "connectImage": t.NotRequired[str | None],
    "connectors": OutputsConnectors,
    "sources": list[OutputsConnectClusterSourcesItem],
})


OutputsFlowInternalTopicsSource = t.TypedDict("OutputsFlowInternalTopicsSource", {
    "heartbeats": str | None,
    "offsetSyncs": str | None,
})


OutputsFlowInternalTopicsTarget = t.TypedDict("OutputsFlowInternalTopicsTarget", {
    "heartbeats": str | None,
    "checkpoints": str | None,
    "connectGroupId": str,
    "connectConfigStorage": str,
    "connectOffsetStorage": str,
    "connectStatusStorage": str,
})


OutputsFlowInternalTopics = t.TypedDict("OutputsFlowInternalTopics", {
    "source": OutputsFlowInternalTopicsSource,
    "target": OutputsFlowInternalTopicsTarget,
})


OutputsFlow = t.TypedDict("OutputsFlow", {
    "kubernetesCluster": t.NotRequired[str],
    "failover": t.NotRequired[OutputsFailover],
    "sourceAlias": str,
    "targetAlias": str,
    "namespace": str,
    "replicationPolicy": t.Literal["default", "identity"],
    "replicationPolicyClass": str,
    "topicPrefix": str,
    "topics": list[str],
    "topicsExclude": list[str],
    "exactlyOnce": t.Literal["disabled", "preparing", "enabled"],
    "startFrom": t.Literal["earliest", "latest"],
    "bidirectional": OutputsFlowBidirectional | None,
    "connectCluster": str,
    "connectRestService": str,
    "connectRestUrl": str,
    "connectServiceAccount": str,
    "connectors": OutputsConnectors,
    "connectClusters": list[OutputsConnectCluster],
    "internalTopics": OutputsFlowInternalTopics,
})


OutputsAuditReports = t.TypedDict("OutputsAuditReports", {
    "path": str,
    "latest": str,
    "persistentVolumeClaim": str,
    "pushgateway": str | None,
})


OutputsAudit = t.TypedDict("OutputsAudit", {
    "kubernetesCluster": t.NotRequired[str],
    "namespace": str,
    "cronJob": str,
    "configMap": str,
    "serviceAccount": str,
    "schedule": str,
    "activeDeadlineSeconds": int,
    "mode": t.Literal["local", "executors"],
    "reports": OutputsAuditReports,
})


# What `pulumi stack output --json` returns for a kafka-replication stack (docs/outputs.md). Within
# one outputsVersion, fields are only ever added; a removal or a change of meaning raises the
# version. contract/outputs.py reads it in Python.
Outputs = t.TypedDict("Outputs", {
    "outputsVersion": t.Literal[1],
    "operatorFlavour": t.Literal["csm", "strimzi"],
    "operator": OutputsOperator,
    "flows": dict[str, OutputsFlow],
    "audit": t.NotRequired[OutputsAudit],
    "audits": t.NotRequired[dict[str, OutputsAudit]],
})
