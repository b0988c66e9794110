"""The validation pipeline: topology data -> schema -> resolved model -> rules -> guardrails.

This is the only place user input becomes a model. Everything downstream (plan, components,
outputs) receives a validated `Model` and may assume it is consistent. Problems are said in the
user's terms: field paths as written in `stacks/<stack>.yaml`, all of them at once.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from infra import guardrails, reading, rules
from infra.errors import Problem, TopologyError, in_file_order
from infra.names import default_flow_name
from infra.resolution import Model, resolve
from infra.schema import Topology


def _problems_from(exc: ValidationError, data: Any) -> list[Problem]:
    """Schema errors in user terms: field paths as written (`sources[0].topics`), without
    pydantic's internal steps, one problem per field (a union's alternatives are merged)."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for err in exc.errors():
        loc = _user_loc(list(err["loc"]), data, err["type"] == "extra_forbidden")
        where, field = _where(loc, data)
        entry = merged.setdefault((where, field), {"loc": loc, "errors": []})
        entry["errors"].append(err)
    problems = []
    for (where, field), entry in merged.items():
        errors = entry["errors"]
        first = errors[0]
        if first["type"] == "extra_forbidden":
            problems.append(Problem(where, field, entry["loc"][-1],
                                    "a known key (unknown keys are errors; see docs/topology.md)"))
        elif first["type"] == "missing":
            problems.append(Problem(where, field, None, "a value (required)"))
        else:
            # Our own checks (ValueError) say what is wrong best; otherwise every alternative.
            # A union's first alternative (the one users mean) speaks for our own checks.
            own = [e for e in errors if e["type"] == "value_error"][:1]
            messages = list(dict.fromkeys(e["msg"].removeprefix("Value error, ").removeprefix("Input should be ")
                                          for e in (own or errors)))
            problems.append(Problem(where, field, _short(first.get("input")), " or ".join(messages)))
    return problems


def _user_loc(loc: list[Any], data: Any, extra: bool = False) -> list[Any]:
    """An error's location as users wrote it: the steps that exist in their document. Pydantic
    adds steps of its own (union members such as `bool`, validator chains, `[key]`); those are
    the ones the document does not have. An unknown key (`extra`) is kept as the last step."""
    out: list[Any] = []
    node = data
    for i, step in enumerate(loc):
        if isinstance(node, dict) and step in node:
            out.append(step)
            node = node[step]
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            out.append(step)
            node = node[step]
        elif extra and i == len(loc) - 1:
            out.append(step)
    return out


def _path(steps: list[Any]) -> str:
    out = ""
    for step in steps:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


def _where(loc: list[Any], data: Any) -> tuple[str, str]:
    """Name the flow or cluster an error belongs to, and the field path within it."""
    if len(loc) >= 2 and loc[0] == "flows" and isinstance(loc[1], int):
        name = "?"
        try:
            raw = data["flows"][loc[1]]
            name = raw.get("name") or default_flow_name(raw.get("source"), raw.get("target"))
        except (KeyError, IndexError, TypeError, AttributeError):
            pass
        return f"flows[{loc[1]}] ({name})", _path(loc[2:]) or "(flow)"
    if len(loc) >= 2 and loc[0] == "clusters":
        return f"clusters.{loc[1]}", _path(loc[2:]) or "(cluster)"
    if len(loc) >= 1 and loc[0] == "audit":
        return "audit", _path(loc[1:]) or "(audit)"
    if len(loc) >= 1 and loc[0] == "operator":
        return "operator", _path(loc[1:]) or "(operator)"
    return "topology", _path(loc) or "(root)"


class _Abbreviated(str):
    def __repr__(self) -> str:
        return str(self)


def _short(value: Any) -> Any:
    if isinstance(value, (dict, list)) and len(repr(value)) > 160:
        return _Abbreviated(repr(value)[:157] + "...")
    return value


def _rules_without(exc: ValidationError, data: Any, schema: list[Problem]) -> list[Problem]:
    """The field, cross-field and cross-flow rules on what remains valid: every field the schema
    refused is set back to its default, and the rules run if that validates. Their problems
    about the refused fields themselves are left out (the schema's message says it first)."""
    salvaged = copy.deepcopy(data)
    if any(err["type"] == "missing" for err in exc.errors()):
        return []  # a required value is missing: nothing sound to check
    # The fields as users wrote them, each once (a union reports one error per alternative).
    fields = {tuple(_user_loc(list(err["loc"]), data, err["type"] == "extra_forbidden")) for err in exc.errors()}
    for steps in sorted(fields, key=len, reverse=True):
        if not _drop(salvaged, list(steps)):
            return []
    try:
        model = resolve(Topology.model_validate(salvaged))
        found = rules.check(model) or guardrails.check(model)[0]
    except (ValidationError, TopologyError, ValueError):
        return []
    refused = {(p.where, p.field) for p in schema}
    return [p for p in found if (p.where, p.field) not in refused
            and not any(p.where == w and (p.field.startswith(f + ".") or p.field.startswith(f + "["))
                        for w, f in refused)]


def _drop(data: Any, steps: list[Any]) -> bool:
    """Remove the dict key at the end of `steps` (already gone is fine), so the schema's default
    applies; False when the last step is not a key of a mapping."""
    node = data
    for step in steps[:-1]:
        if isinstance(node, dict) and step in node:
            node = node[step]
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            node = node[step]
        else:
            return True  # a parent was dropped already
    if steps and isinstance(node, dict):
        node.pop(steps[-1], None)
        return True
    return False


def parse(data: Any, source: str = "topology") -> Model:
    """Validate raw topology data into the model the plan reads: the schema (infra/schema.py),
    then the resolved views (infra/resolution.py), the rules of each flow (infra/rules.py) and
    the rules across flows (infra/guardrails.py). Raises TopologyError with every problem found."""
    if not isinstance(data, dict):
        raise TopologyError([Problem(source, "(root)", type(data).__name__, "a mapping with clusters and flows")])
    try:
        topology = Topology.model_validate(data)
    except ValidationError as exc:
        schema = _problems_from(exc, data)
        raise TopologyError(in_file_order(schema + _rules_without(exc, data, schema))) from None
    model = resolve(topology)
    problems = rules.check(model)
    if problems:
        raise TopologyError(problems)
    problems, undecided = guardrails.check(model)
    if problems:
        raise TopologyError(problems)
    return replace(model, warnings=tuple(rules.warnings(model) + undecided))


def load(path: str | Path) -> Model:
    return parse(reading.load_yaml_file(path, "topology file"), str(path))
