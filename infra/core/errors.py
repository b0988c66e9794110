"""Input problems, collected and reported together before anything is created."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, replace
from typing import Any, Callable


@dataclass(frozen=True)
class Problem:
    where: str     # the flow or cluster, e.g. "flows[0] (repl-us-west-us-east)" or "clusters.us-west"
    field: str     # the field within it
    value: Any     # the value given (None when missing)
    allowed: str   # what is allowed instead
    # The line of the user's file it is on, when it came from one (set by `at_lines`).
    line: int | None = dataclasses.field(default=None, compare=False)

    def __str__(self) -> str:
        given = "missing" if self.value is None else f"got {self.value!r}"
        place = f"line {self.line}: " if self.line else ""
        return f"{place}{_printable(self.where)}: {_printable(self.field)}: {given}; expected {self.allowed}"

    def steps(self) -> list[str | int]:
        """The path in the topology document this problem names (`clusters`, `us-west`,
        `security`...), as far as `where` and `field` spell one."""
        steps: list[str | int] = []
        match = re.fullmatch(r"flows\[(\d+)\](?: \(.*\))?", self.where, re.DOTALL)
        if match:
            steps = ["flows", int(match.group(1))]
        elif self.where.startswith("clusters.") or self.where.startswith("kubernetes."):
            steps = [*self.where.split(".", 1)]
        elif self.where in ("audit", "operator"):
            steps = [self.where]
        elif self.where != "topology":
            return []
        # Connector, SMT and converter settings are keys with dots of their own
        # (`consumer.bootstrap.servers`): the path ends with that key whole.
        path, key = self.field, None
        match = re.fullmatch(r"((?:[^.]*\.)*?config(?:\.(?:source|checkpoint|heartbeat))?)\.(.+)", self.field)
        if match:
            path, key = match.group(1), match.group(2)
        for part in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
            name, index = part
            if name.startswith("("):
                break
            steps.append(int(index) if index else name)
        return steps + ([key] if key is not None else [])


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


def _printable(text: str) -> str:
    """A location as one line: a name holding a line break (refused for it) is shown escaped."""
    return text if text.isprintable() else repr(text)[1:-1]


def at_lines(problems: list[Problem], line_of: Callable[[list[str | int]], int | None]) -> list[Problem]:
    """The problems with the line of the user's file each one is on (`line_of` reads a path)."""
    located = [replace(p, line=line_of(p.steps())) if p.steps() else p for p in problems]
    return sorted(located, key=lambda p: p.line or 0)  # stable: the file's order, then the rules'


def in_file_order(problems: list[Problem]) -> list[Problem]:
    """Report order: clusters and the topology first, then flows in file order, then the audit
    (stable within each)."""
    def place(problem: Problem) -> tuple[int, int]:
        match = re.match(r"flows\[(\d+)\]", problem.where)
        return (1, int(match.group(1))) if match else (2, 0) if problem.where == "audit" else (0, 0)
    return sorted(problems, key=place)
