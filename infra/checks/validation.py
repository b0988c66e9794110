"""The validation pipeline: topology data -> schema -> resolved model -> rules -> guardrails.

This is the only place user input becomes a model. Everything downstream (plan, components,
outputs) receives a validated `Model` and may assume it is consistent. Problems are said in the
user's terms: field paths as written in `stacks/<stack>.yaml`, all of them at once.
"""

from __future__ import annotations

import copy
import difflib
import types
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from infra.checks import guardrails, rules
from infra.core import reading
from infra.core.errors import Problem, TopologyError, at_lines, in_file_order
from infra.core.names import default_flow_name
from infra.core.releases import find
from infra.topology.resolution import Model, resolve
from infra.topology.schema import Topology


def _problems_from(exc: ValidationError, data: Any) -> list[Problem]:
    """Schema errors in user terms: field paths as written (`sources[0].topics`), without
    pydantic's internal steps or wording, one problem per field (a union's alternatives are
    merged); a missing key is named, and an unknown one gets the closest known key."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for err in exc.errors():
        loc = _user_loc(list(err["loc"]), data, err["type"] in ("extra_forbidden", "missing"))
        where, field = _where(loc, data)
        entry = merged.setdefault((where, field), {"loc": loc, "errors": []})
        entry["errors"].append(err)
    unknown = {tuple(e["loc"][:-1]): e["loc"][-1] for e in merged.values()
               if e["errors"][0]["type"] == "extra_forbidden" and e["loc"]}
    missing = {tuple(e["loc"][:-1]): e["loc"][-1] for e in merged.values()
               if e["errors"][0]["type"] == "missing" and e["loc"]}
    problems = []
    for (where, field), entry in merged.items():
        errors = entry["errors"]
        first, loc = errors[0], entry["loc"]
        if first["type"] == "extra_forbidden":
            problems.append(Problem(where, field, loc[-1], _known_key(loc, missing.get(tuple(loc[:-1])))))
        elif first["type"] == "missing":
            typo = unknown.get(tuple(loc[:-1]))
            hint = f"; `{typo}` is set instead: a misspelling?" if typo is not None and _similar(str(typo), [str(loc[-1])]) else ""
            problems.append(Problem(where, field, None, f"a value (required{hint})"))
        else:
            # Our own checks (ValueError) say what is wrong best; otherwise every alternative.
            # A union's first alternative (the one users mean) speaks for our own checks.
            own = [e for e in errors if e["type"] == "value_error"][:1]
            messages = list(dict.fromkeys(_expected(e) for e in (own or errors)))
            problems.append(Problem(where, field, _short(first.get("input")), " or ".join(messages)))
    return problems


# Pydantic's error types in the words of docs/topology.md (never pydantic's own sentences).
_EXPECTED = {
    "string_type": "a string", "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
    "bool_type": "true or false", "bool_parsing": "true or false", "float_type": "a number",
    "float_parsing": "a number", "dict_type": "a mapping (key: value)", "model_type": "a mapping (key: value)",
    "model_attributes_type": "a mapping (key: value)", "list_type": "a list", "tuple_type": "a list",
    "set_type": "a list", "none_required": "no value", "string_unicode": "text",
}


def _expected(err: Any) -> str:
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind == "value_error":
        return str(err["msg"]).removeprefix("Value error, ")
    if kind in _EXPECTED:
        return _EXPECTED[kind]
    if kind in ("too_short", "too_long"):
        bound = ctx.get("min_length" if kind == "too_short" else "max_length")
        one, many = ("entry", "entries") if isinstance(err.get("input"), dict) else ("item", "items")
        return f"{'at least' if kind == 'too_short' else 'at most'} {bound} {one if bound == 1 else many}"
    if kind == "string_too_short":
        bound = ctx.get("min_length", 1)
        return "a non-empty string" if bound == 1 else f"at least {bound} characters"
    if kind == "string_too_long":
        return f"at most {ctx.get('max_length')} characters"
    if kind in ("enum", "literal_error"):
        return str(ctx.get("expected", "one of the values docs/topology.md lists"))
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        words = {"greater_than_equal": "at least", "greater_than": "more than",
                 "less_than_equal": "at most", "less_than": "less than"}[kind]
        bound = next(iter(ctx.values()), "")
        return f"a number {words} {bound}"
    return "a value of the type docs/topology.md gives for this field"


def _similar(word: str, candidates: list[str]) -> list[str]:
    return difflib.get_close_matches(word, candidates, n=1, cutoff=0.6) or [
        c for c in candidates if c.lower() == word.lower()]


def _known_key(loc: list[Any], missing: Any) -> str:
    """What an unknown key should be: the closest known key of its mapping, and the list."""
    known = _keys_at(loc[:-1])
    if not known:
        return "a known key (unknown keys are errors; see docs/topology.md)"
    guess = ([str(missing)] if missing is not None and _similar(str(loc[-1]), [str(missing)])
             else _similar(str(loc[-1]), known))
    if guess:
        return f"a known key: did you mean `{guess[0]}`? (unknown keys are errors; see docs/topology.md)"
    return f"a known key: {', '.join(known)} (unknown keys are errors; see docs/topology.md)"


def _keys_at(steps: list[Any]) -> list[str]:
    """The keys the schema knows for the mapping at `steps` of a document ([] if not a model)."""
    kind: Any = Topology
    for step in steps:
        kind = _unwrap(kind, step)
        if kind is None:
            return []
    kind = _unwrap(kind, None)
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return list(kind.model_fields)
    return []


def _unwrap(kind: Any, step: Any) -> Any:
    """The type one step below `kind` (a model's field, a list's item, a mapping's value);
    with `step` None, `kind` itself without Annotated and Optional."""
    while True:
        origin = typing.get_origin(kind)
        if origin is typing.Annotated:
            kind = typing.get_args(kind)[0]
        elif origin in (typing.Union, types.UnionType):
            options = [a for a in typing.get_args(kind) if a is not type(None)]
            models = [a for a in options if isinstance(a, type) and issubclass(a, BaseModel)]
            kind = (models or options)[0]
        else:
            break
    if step is None:
        return kind
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        field = kind.model_fields.get(step) if isinstance(step, str) else None
        return field.annotation if field else None
    origin = typing.get_origin(kind)
    if origin is list and isinstance(step, int):
        return typing.get_args(kind)[0]
    if origin is dict and isinstance(step, str):
        return typing.get_args(kind)[1]
    return None


def _user_loc(loc: list[Any], data: Any, extra: bool = False) -> list[Any]:
    """An error's location as users wrote it: the steps that exist in their document. Pydantic
    adds steps of its own (union members such as `bool`, validator chains, `[key]`); those are
    the ones the document does not have. An unknown or missing key (`extra`) is kept as the
    last step."""
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
        raw = data["flows"][loc[1]] if isinstance(data.get("flows"), list) and loc[1] < len(data["flows"]) else None
        if isinstance(raw, dict):
            given = raw.get("name")
            source, target = raw.get("source"), raw.get("target")
            if isinstance(given, str) and given:
                name = given
            elif isinstance(source, str) and isinstance(target, str):
                name = default_flow_name(source, target)
        # A flow whose name cannot be told (no source, say) is named by its place alone.
        return f"flows[{loc[1]}]" + (f" ({name})" if name != "?" else ""), _path(loc[2:]) or "(flow)"
    if len(loc) >= 2 and loc[0] == "clusters":
        return f"clusters.{loc[1]}", _path(loc[2:]) or "(cluster)"
    if len(loc) >= 2 and loc[0] == "kubernetes":
        return f"kubernetes.{loc[1]}", _path(loc[2:]) or "(kubernetes cluster)"
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
        found = rules.check(model)
        sound = _sound_for_guardrails(model, {p.where for p in found})
        if sound is not None:
            found = found + guardrails.check(sound)[0]
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
    """Validate raw topology data into the model the plan reads: the schema (infra/topology/schema/),
    then the resolved views (infra/topology/resolution.py), the rules of each flow (infra/checks/rules/) and
    the rules across flows (infra/checks/guardrails.py). Raises TopologyError with every problem found."""
    if not isinstance(data, dict):
        raise TopologyError([Problem(source, "(root)", type(data).__name__, "a mapping with clusters and flows")])
    try:
        topology = Topology.model_validate(data)
    except ValidationError as exc:
        schema = _problems_from(exc, data)
        raise TopologyError(in_file_order(schema + _rules_without(exc, data, schema))) from None
    model = resolve(topology)
    problems = rules.check(model)
    undecided: list[str] = []
    sound = _sound_for_guardrails(model, {p.where for p in problems})
    if sound is not None:
        # The safety rules are said even beside other problems (an invalid alias elsewhere, a
        # flow naming a cluster that does not exist), so that one round of fixes does not
        # uncover another; a flow with problems of its own is left out of them.
        found, undecided = guardrails.check(sound)
        problems = in_file_order(problems + found)
    if problems:
        raise TopologyError(problems)
    return replace(model, warnings=tuple(rules.warnings(model) + undecided))


def _sound_for_guardrails(model: Model, refused: frozenset[str] | set[str] = frozenset()) -> Model | None:
    """The part of the model the rules across flows can read: the flows whose clusters exist and
    that have no problem of their own (`refused`: where the rules found one; said once, by the
    rules); None when the operator release is unknown (the guardrails read what it writes)."""
    topo = model.topology
    if find(topo.operator.flavour, topo.operator.version) is None:
        return None
    flows = tuple(d for d in model.flows if d.flow.source in topo.clusters and d.flow.target in topo.clusters
                  and d.flow.source != d.flow.target and d.where not in refused)
    return model if len(flows) == len(model.flows) else replace(model, flows=flows)


@contextmanager
def located(text: str) -> Iterator[None]:
    """Problems raised inside name the line of `text` (the user's file) each one is on."""
    try:
        yield
    except TopologyError as exc:
        raise TopologyError(at_lines(exc.problems, lambda steps: reading.line_of(text, steps)),
                            exc.subject) from None


def load(path: str | Path) -> Model:
    text = reading.read_text(path, "topology file")
    with located(text):
        return parse(reading.load_yaml(text, str(path)), str(path))
