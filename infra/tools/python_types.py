"""The topology's and the outputs contract's JSON Schemas as Python types:
components/topology_types.py and contract/output_types.py.

A program that writes its topology in Python (`ReplicationTopology`, `ReplicationFlow`) gets the
same typed fields another language's SDK gets from the provider schema, so that its editor
completes them and a type checker refuses a misspelt key or a value no choice allows before
anything runs; what it reads of the components' outputs is typed as the contract says. Written
from the model's own JSON Schema (infra/topology/schema.json_schema, what
docs/topology.schema.json holds) and the outputs contract's (contract/outputs.py SCHEMA), never
by hand: `make python-types` writes both files, and tests/unit/test_python_types.py holds the
committed ones to them.

Each object is a TypedDict (its optional fields NotRequired), each choice a Literal, a value of
several kinds a union, a mapping of names a `dict[str, ...]`. The outputs' types are named as the
provider schema names them (`Outputs`, `OutputsFlow`, `OutputsFlowInternalTopics`...,
components/provider_schema.py output_types), so that every language's SDK says the same. The
types describe; the components still check every value at run time (components/arguments.py),
as they do for a document read from YAML.
"""

from __future__ import annotations

import json
import keyword
import sys
import textwrap
from pathlib import Path
from typing import Any

from contract import outputs as outputs_contract
from infra.topology.schema.topology import json_schema

ROOT = Path(__file__).resolve().parents[2]
HEADER = '''"""{what}

Generated from {source}
by `make python-types` (infra/tools/python_types.py); do not edit: tests/unit/test_python_types.py
holds this file to it.
"""

from __future__ import annotations

import typing as t
'''


def _pascal(name: str) -> str:
    return name[:1].upper() + name[1:]


def _literal(values: list[Any]) -> str:
    return f"t.Literal[{', '.join(json.dumps(v) for v in values)}]"


def _comment(spec: dict[str, Any]) -> str:
    description = " ".join(str(spec.get("description", "")).split())
    return "".join(f"# {line}\n" for line in textwrap.wrap(description, 98))


class _Module:
    """The definitions of one schema, each after those it names. `prefix`: what a definition's
    name starts with (the outputs' `Outputs`); a nested object is named after where it is."""

    def __init__(self, schema: dict[str, Any], root: str, prefix: str, description: str) -> None:
        self.defs: dict[str, dict[str, Any]] = schema.get("$defs", {})
        self.prefix = prefix
        self.written: dict[str, str] = {}
        self.busy: set[str] = set()
        top = {k: v for k, v in schema.items() if k not in ("$defs", "$schema", "$id", "title")}
        self.typed(top if "description" in top else {**top, "description": description}, root)

    def name(self, target: str) -> str:
        return self.prefix + _pascal(target) if self.prefix else target

    def annotation(self, spec: dict[str, Any], place: str) -> str:
        """The Python type of one JSON Schema value; `place`: the name a nested object takes."""
        if "$ref" in spec:
            target = spec["$ref"].rsplit("/", 1)[-1]
            defined = self.defs[target]
            if "properties" in defined or "enum" in defined:
                return self.typed(defined, self.name(target))
            return self.annotation(defined, self.name(target))
        for union in ("anyOf", "oneOf"):
            if union in spec:
                kinds: list[str] = []
                for part in spec[union]:
                    text = self.annotation(part, place)
                    if text not in kinds:
                        kinds.append(text)
                return " | ".join(sorted(kinds, key=lambda k: k == "None"))  # `X | None`, as Python writes it
        if "const" in spec:
            return _literal([spec["const"]])
        if "enum" in spec:
            return _literal(spec["enum"])
        kind = spec.get("type")
        if isinstance(kind, list):
            return " | ".join(self.annotation({**spec, "type": k}, place) for k in kind)
        simple = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
        if kind in simple:
            return simple[kind]
        if kind == "array":
            return f"list[{self.annotation(spec.get('items', {}), place + 'Item')}]"
        if "properties" in spec:
            return self.typed(spec, place)
        if kind == "object" or "additionalProperties" in spec or "patternProperties" in spec:
            values = list(spec.get("patternProperties", {}).values())
            if isinstance(spec.get("additionalProperties"), dict):
                values.append(spec["additionalProperties"])
            kinds = sorted({self.annotation(v, place + "Value") for v in values}) or ["t.Any"]
            return f"dict[str, {' | '.join(kinds)}]"
        return "t.Any"  # the schema takes any value here

    def typed(self, spec: dict[str, Any], name: str) -> str:
        """A named type for an object or a choice, written once, after what it names."""
        if name in self.written:
            return name
        if name in self.busy:
            raise ValueError(f"{name} refers to itself: a TypedDict cannot be written for it")
        if not name.isidentifier() or keyword.iskeyword(name) or name == "t":
            raise ValueError(f"{name!r} cannot be a Python name")
        self.busy.add(name)
        if "properties" not in spec:
            text = f"{_comment(spec)}{name}: t.TypeAlias = {self.annotation(spec, name)}\n"
        else:
            required = set(spec.get("required", []))
            fields = []
            for key, value in spec["properties"].items():
                kind = self.annotation(value, name + _pascal(key))
                fields.append(f"    {json.dumps(key)}: {kind if key in required else f't.NotRequired[{kind}]'},")
            # The functional form: a key need not be a Python name.
            text = f"{_comment(spec)}{name} = t.TypedDict({json.dumps(name)}, {{\n" + "\n".join(fields) + "\n})\n"
        self.busy.discard(name)
        self.written[name] = text
        return name

    def text(self, what: str, source: str) -> str:
        exported = textwrap.fill(", ".join(json.dumps(n) for n in sorted(self.written)), 96,
                                 initial_indent="    ", subsequent_indent="    ")
        body = "\n\n".join(self.written.values())
        return f"{HEADER.format(what=what, source=source)}\n__all__ = [\n{exported},\n]\n\n\n{body}"


def topology_module() -> str:
    """components/topology_types.py, whole."""
    return _Module(json_schema(), "Topology", "", "A topology document: stacks/<stack>.yaml (docs/topology.md).").text(
        "The topology's fields as Python types, for programs that write their topology in Python.",
        "the topology's JSON Schema")


def outputs_module() -> str:
    """contract/output_types.py, whole."""
    return _Module(outputs_contract.SCHEMA, "Outputs", "Outputs", "").text(
        "The stack outputs contract as Python types: what the program writes and its components hold.",
        "the outputs contract's JSON Schema (contract/outputs.py SCHEMA)")


# The outputs' types beside their contract (dependency-free, as the audit job ships it): the
# writer of the outputs (infra/plan/outputs.py) is typed by them too.
MODULES = {ROOT / "components" / "topology_types.py": topology_module,
           ROOT / "contract" / "output_types.py": outputs_module}


if __name__ == "__main__":
    for path, write in MODULES.items():
        path.write_text(write())
        print(path.relative_to(ROOT), file=sys.stderr)
