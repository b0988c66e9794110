"""The pack's policies: each rule of infra/checks/policies.py (the program runs the same rules on every
object it plans) as a CrossGuard ResourceValidationPolicy, mandatory, on every Kubernetes resource
of a stack, whichever program declares it. This module builds the policies and nothing else: the
pack is served by __main__.py, and the tests call each policy's validation directly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy
from pulumi_policy.proxy import (UNKNOWN_ARCHIVE_VALUE, UNKNOWN_ARRAY_VALUE, UNKNOWN_ASSET_VALUE, UNKNOWN_BOOLEAN_VALUE,
                                 UNKNOWN_NUMBER_VALUE, UNKNOWN_OBJECT_VALUE, UNKNOWN_STRING_VALUE)

from infra.checks import policies

# What the engine sends for a value a preview cannot know yet (pulumi_policy.proxy).
UNKNOWNS = frozenset({UNKNOWN_ARCHIVE_VALUE, UNKNOWN_ARRAY_VALUE, UNKNOWN_ASSET_VALUE, UNKNOWN_BOOLEAN_VALUE,
                      UNKNOWN_NUMBER_VALUE, UNKNOWN_OBJECT_VALUE, UNKNOWN_STRING_VALUE})
KUBERNETES = "kubernetes:"


def plain(value: Any) -> Any:
    """A resource's inputs as plain data, each unknown value as policies.UNKNOWN. The engine's
    props raise on reading an unknown value (pulumi_policy.proxy), which would skip the whole
    resource during preview; the rules pass over the unknown values alone."""
    if isinstance(value, str):
        return policies.UNKNOWN if value in UNKNOWNS else value
    if isinstance(value, Mapping):
        raw = _target(value)
        return {k: plain(raw[k]) for k in raw}
    if isinstance(value, Sequence):
        return [plain(v) for v in _target(value)]
    return value


def _target(value: Any) -> Any:
    """What a pulumi_policy proxy wraps (its `__target`), or the value itself."""
    try:
        return value["__target"]
    except (KeyError, TypeError, IndexError):
        return value


def validation(rule: policies.Rule) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if not args.resource_type.startswith(KUBERNETES):
            return
        for problem in rule.check(plain(args.props)):
            report_violation(str(problem), None)
    return validate


POLICIES = [ResourceValidationPolicy(name=rule.name, description=rule.description, validate=validation(rule),
                                     enforcement_level=EnforcementLevel.MANDATORY)
            for rule in policies.RULES]
