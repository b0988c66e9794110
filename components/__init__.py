"""Thin Pulumi ComponentResources over the plan: they create resources and wire them, nothing else."""

from components.audit import ReplicationAudit
from components.flow import ReplicationFlow

__all__ = ["ReplicationAudit", "ReplicationFlow"]
