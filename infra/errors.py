"""Input problems, collected and reported together before anything is created."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    where: str     # the flow or cluster, e.g. "flows[0] (repl-us-west-us-east)" or "clusters.us-west"
    field: str     # the field within it
    value: Any     # the value given (None when missing)
    allowed: str   # what is allowed instead

    def __str__(self) -> str:
        given = "missing" if self.value is None else f"got {self.value!r}"
        return f"{self.where}: {self.field}: {given}; expected {self.allowed}"


class TopologyError(Exception):
    """Every problem of a topology or its stack config, for one clear report."""

    def __init__(self, problems: list[Problem], subject: str = "the topology"):
        self.problems = list(problems)
        self.subject = subject  # what the problems are in: the topology, the command line...
        super().__init__(self.report())

    def report(self) -> str:
        lines = [f"{self.subject} has {len(self.problems)} problem(s):"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)


def in_file_order(problems: list[Problem]) -> list[Problem]:
    """Report order: clusters and the topology first, then flows in file order, then the audit
    (stable within each)."""
    def place(problem: Problem) -> tuple[int, int]:
        match = re.match(r"flows\[(\d+)\]", problem.where)
        return (1, int(match.group(1))) if match else (2, 0) if problem.where == "audit" else (0, 0)
    return sorted(problems, key=place)
