"""Pulumi ComponentResources over the plan: they validate their arguments, create resources and
wire them, nothing else. ReplicationTopology and ReplicationFlow are the public components
(components/replication.py); the others are their parts."""

from components.audit import ReplicationAudit
from components.flow import FlowDirection
from components.replication import ReplicationFlow, ReplicationFlowArgs, ReplicationTopology, ReplicationTopologyArgs

__all__ = ["FlowDirection", "ReplicationAudit", "ReplicationFlow", "ReplicationFlowArgs", "ReplicationTopology",
           "ReplicationTopologyArgs"]
