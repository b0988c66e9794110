"""The kafka-replication policy pack (docs/policy.md): its policies (rules.py) served to the
Pulumi engine. Run by the engine, never imported: `pulumi preview --policy-pack policy`."""

from pulumi_policy import EnforcementLevel, PolicyPack
from rules import POLICIES

PolicyPack(name="kafka-replication", policies=POLICIES, enforcement_level=EnforcementLevel.MANDATORY)
