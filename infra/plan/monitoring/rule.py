"""One alert rule's shape, shared by the worker's rules (alerts.py) and the operator's
(operator.py): names as PromQL literals and alternations, and the labels and annotations every
rule carries."""

from __future__ import annotations

import json
import re

from infra.core.manifests import JSON

DOCS = "docs/operations.md"


REGEX_SPECIAL = re.compile(r"([.^$*+?()\[\]{}|\\])")


def regex_literal(value: str) -> str:
    """`value` as an RE2 pattern matching only itself (names are DNS labels: '.' at most)."""
    return REGEX_SPECIAL.sub(r"\\\1", value)


def alternatives(values: list[str]) -> str:
    """An alternation matching exactly these names (PromQL anchors every regex)."""
    return "|".join(regex_literal(v) for v in sorted(set(values)))


def q(value: str) -> str:
    """A PromQL string literal."""
    return json.dumps(value)


def alert(name: str, expr: str, minutes: int | None, severity: str, summary: str, description: str,
           condition: str = "") -> JSON:
    """One alerting rule. Its `threshold` label says the condition and how long it held: flows
    with other thresholds get rules of their own, told apart by it (promtool refuses two rules
    of one alert with the same labels), and a receiver sees which limit was crossed."""
    rule: JSON = {"alert": name, "expr": expr}
    if minutes:
        rule["for"] = f"{minutes}m"
    held = f"for {minutes}m" if minutes else "at once"
    rule["labels"] = {"severity": severity, "threshold": f"{condition} {held}" if condition else held}
    rule["annotations"] = {"summary": summary, "description": description, "runbook": f"{DOCS}#{name.lower()}"}
    return rule
