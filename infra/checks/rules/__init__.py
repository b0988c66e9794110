"""Rules across the fields of one topology document: each cluster, each flow and its Connect
clusters and connectors, the operator release and the audit. They read the resolved model
(infra/topology/resolution.py) and return every problem at once; the rules across flows are
infra/checks/guardrails.py, and infra/checks/validation.py runs both.
"""

from infra.checks.rules.document import check, warnings
from infra.checks.rules.flows import MAX_FLOW_NAME
from infra.topology.schema.values import MAX_ALIAS
from infra.checks.rules.kubernetes import TOP_LEVEL_DOMAINS, service_address
from infra.checks.rules.overrides import CONVERTER_PREFIXES, OFFSET_SYNCS_PREFIXES, OWNED
from infra.checks.rules.secrets import SECRET_LIKE, secret_named
from infra.checks.rules.smts import (PREDICATE_REQUIRED, ROUTER_NAME, SMT_FIELDS, SMT_PREFIXES, TOPIC_KEEPING,
                                     TOPIC_KEEPING_SMTS, TOPIC_RENAMING_SMTS, keeps_topic, renames_topic)
from infra.checks.rules.transitions import check_failback, check_operator_move, check_transitions, failback_candidates

__all__ = ["CONVERTER_PREFIXES", "MAX_ALIAS", "MAX_FLOW_NAME", "OFFSET_SYNCS_PREFIXES", "OWNED",
           "PREDICATE_REQUIRED", "ROUTER_NAME", "SECRET_LIKE", "SMT_FIELDS", "SMT_PREFIXES", "TOPIC_KEEPING",
           "TOPIC_KEEPING_SMTS", "TOPIC_RENAMING_SMTS", "TOP_LEVEL_DOMAINS", "check", "check_failback",
           "check_operator_move", "check_transitions", "failback_candidates", "keeps_topic", "renames_topic", "secret_named",
           "service_address", "warnings"]
