"""The topology's JSON Schema as Python types: components/topology_types.py.

A program that writes its topology in Python (`ReplicationTopology`, `ReplicationFlow`) gets the
same typed fields another language's SDK gets from the provider schema, so that its editor
completes them and a type checker refuses a misspelt key or a value no choice allows before
anything runs. Written from the model's own JSON Schema (infra/topology/schema.json_schema, what
docs/topology.schema.json holds), never by hand: `make python-types` writes the file, and
tests/unit/test_python_types.py holds the committed one to it.

Each object of the model is a TypedDict (its optional fields NotRequired), each choice a
Literal, a value of several kinds a union, a mapping of names a `dict[str, ...]`. The types
describe; the components still check every value at run time (components/arguments.py), as they
do for a document read from YAML.
"""

from __future__ import annotations

import json
import keyword
import sys
import textwrap
from typing import Any

from infra.topology.schema.topology import json_schema

ROOT = "Topology"
HEADER = '''"""The topology's fields as Python types, for programs that write their topology in Python.

Generated from the topology's JSON Schema by `make python-types` (infra/tools/python_types.py);
do not edit. tests/unit/test_python_types.py holds this file to the model.
"""

from __future__ import annotations

import typing as t
'''


def _name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _literal(values: list[Any]) -> str:
    return f"t.Literal[{', '.join(json.dumps(v) for v in values)}]"


def annotation(spec: dict[str, Any]) -> str:
    """The Python type of one JSON Schema value of the model."""
    if "$ref" in spec:
        return _name(spec["$ref"])
    for union in ("anyOf", "oneOf"):
        if union in spec:
            kinds: list[str] = []
            for part in spec[union]:
                text = annotation(part)
                if text not in kinds:
                    kinds.append(text)
            return " | ".join(kinds)
    if "const" in spec:
        return _literal([spec["const"]])
    if "enum" in spec:
        return _literal(spec["enum"])
    kind = spec.get("type")
    if isinstance(kind, list):
        return " | ".join(annotation({**spec, "type": k}) for k in kind)
    simple = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
    if kind in simple:
        return simple[kind]
    if kind == "array":
        return f"list[{annotation(spec.get('items', {}))}]"
    if kind == "object" or "additionalProperties" in spec or "patternProperties" in spec:
        if "properties" in spec:
            raise ValueError("an object with properties outside $defs: give its model class a name")
        values = [v for v in spec.get("patternProperties", {}).values()]
        extra = spec.get("additionalProperties")
        if isinstance(extra, dict):
            values.append(extra)
        kinds = sorted({annotation(v) for v in values}) or ["t.Any"]
        return f"dict[str, {' | '.join(kinds)}]"
    return "t.Any"  # the model takes any value here


def _references(spec: Any) -> set[str]:
    if isinstance(spec, dict):
        found = {_name(spec["$ref"])} if "$ref" in spec else set()
        for value in spec.values():
            found |= _references(value)
        return found
    if isinstance(spec, list):
        return set().union(*(_references(v) for v in spec)) if spec else set()
    return set()


def _definition(name: str, spec: dict[str, Any]) -> str:
    description = " ".join(spec.get("description", "").split())
    comment = "".join(f"# {line}\n" for line in textwrap.wrap(description, 98))
    if "properties" not in spec:
        return f"{comment}{name}: t.TypeAlias = {annotation(spec)}\n"
    required = set(spec.get("required", []))
    fields = []
    for key, value in spec["properties"].items():
        text = annotation(value)
        fields.append(f"    {json.dumps(key)}: {text if key in required else f't.NotRequired[{text}]'},")
    # The functional form: a key need not be a Python name.
    return f"{comment}{name} = t.TypedDict({json.dumps(name)}, {{\n" + "\n".join(fields) + "\n})\n"


def module() -> str:
    """components/topology_types.py, whole."""
    schema = json_schema()
    defs: dict[str, dict[str, Any]] = dict(schema.get("$defs", {}))
    root = {k: v for k, v in schema.items() if k not in ("$defs", "$schema", "title")}
    defs[ROOT] = {**root, "description": "A topology document: stacks/<stack>.yaml (docs/topology.md)."}
    for name in defs:
        if not name.isidentifier() or keyword.iskeyword(name) or name == "t":
            raise ValueError(f"the model class {name!r} cannot be a Python name")
    # Each type after the types it names (the model has no cycle), in name order otherwise.
    done: list[str] = []
    pending = sorted(defs)
    while pending:
        ready = [n for n in pending if _references(defs[n]) <= set(done)]
        if not ready:
            raise ValueError(f"the model's classes refer to each other in a cycle: {', '.join(pending)}")
        done.append(ready[0])
        pending.remove(ready[0])
    body = "\n\n".join(_definition(n, defs[n]) for n in done)
    exported = textwrap.fill(", ".join(json.dumps(n) for n in sorted(done)), 96, initial_indent="    ",
                             subsequent_indent="    ")
    return f"{HEADER}\n__all__ = [\n{exported},\n]\n\n\n{body}"


if __name__ == "__main__":
    sys.stdout.write(module())
