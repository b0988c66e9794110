"""The component provider's schema, typed from the topology model.

Pulumi's analyzer infers the schema from the components' Args, where `topology`, `clusters`,
`flow` and `operator` are mappings: the components check them against the model themselves, every
problem at once (components/arguments.py, then the topology's checks), and the provider hands
them over as they came. A generated SDK, though, would type them `{[k: string]: any}`. So the
schema the provider serves, and other languages' SDKs are generated from, types them field by
field from the model's own JSON Schema (infra/topology/schema.json_schema, the one
docs/topology.schema.json holds): an object type per model class, an enum per choice, a union
where the model accepts several kinds of value, and `Any` only where the model itself takes any
value. Everything inside is `plain`: what decides which resources exist must be known when the
program runs (an Output there is refused, docs/components.md).
"""

from __future__ import annotations

import copy
from typing import Any

from contract import outputs as outputs_contract
from infra.core import names

ANY = {"$ref": "pulumi.json#/Any"}
PRIMITIVES = ("string", "integer", "number", "boolean")
# The topology document itself, as a type (the model's root is untitled in Pulumi's terms).
TOPOLOGY = "Topology"
# What the Pulumi registry lists the package under (its `kind/` and `category/` keywords).
DESCRIPTION = ("Kafka cross-cluster replication on Kubernetes: MirrorMaker 2 on a dedicated Strimzi KafkaConnect "
               "per flow, from a topology of clusters and flows")
KEYWORDS = ("kafka", "strimzi", "mirrormaker2", "replication", "kind/component", "category/infrastructure")


def token(name: str) -> str:
    return names.component_type("index", name)


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/types/{token(name)}"}


def property_type(spec: dict[str, Any]) -> dict[str, Any]:
    """A Pulumi type spec for a JSON Schema property of the model."""
    if "$ref" in spec:
        return _ref(spec["$ref"].rsplit("/", 1)[-1])
    if "anyOf" in spec:
        kinds = [k for k in spec["anyOf"] if k.get("type") != "null"]
        if len(kinds) == 1:
            return property_type(kinds[0])
        arrays = [k for k in kinds if k.get("type") == "array"]
        if len(kinds) == 2 and len(arrays) == 1 and arrays[0].get("items", {}).get("type") in \
                [k.get("type") for k in kinds if k is not arrays[0]]:
            # A list the YAML file may write as its one item (`topics: orders.*`): an SDK's users
            # write the list, typed.
            return property_type(arrays[0])
        return {"oneOf": [property_type(k) for k in kinds]}
    kind = spec.get("type")
    if kind in PRIMITIVES:
        return {"type": kind}
    if kind == "array":
        return {"type": "array", "items": {**property_type(spec.get("items", {})), "plain": True}}
    if kind == "object":
        extra = spec.get("additionalProperties", True)
        patterns = list(spec.get("patternProperties", {}).values())
        if not (isinstance(extra, dict) and extra) and len(patterns) == 1:
            extra = patterns[0]  # keys of a shape (a label key, a DNS label): the values' type stands
        values = property_type(extra) if isinstance(extra, dict) and extra else dict(ANY)
        return {"type": "object", "additionalProperties": {**values, "plain": True}}
    return dict(ANY)  # the model takes any value here


def _property(spec: dict[str, Any]) -> dict[str, Any]:
    out = {**property_type(spec), "plain": True}
    if isinstance(spec.get("default"), (str, int, float, bool)):
        out["default"] = spec["default"]
    if spec.get("description"):
        out["description"] = spec["description"]
    if isinstance(spec.get("const"), str):
        out["const"] = spec["const"]
    return out


def complex_type(definition: dict[str, Any]) -> dict[str, Any]:
    """A Pulumi object or enum type for a model class or choice."""
    if "enum" in definition:
        return {"type": definition.get("type", "string"), "enum": [{"value": v} for v in definition["enum"]]}
    out: dict[str, Any] = {"type": "object", "properties": {
        name: _property(spec) for name, spec in sorted(definition.get("properties", {}).items())}}
    if definition.get("required"):
        out["required"] = sorted(definition["required"])
    if definition.get("description"):
        out["description"] = definition["description"]
    return out


OUTPUTS = "Outputs"  # the outputs contract's types: Outputs, OutputsFlow, OutputsFlowFailover...


def _pascal(name: str) -> str:
    return name[:1].upper() + name[1:]


def output_types(contract: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The outputs contract's JSON Schema (contract/outputs.py SCHEMA) as Pulumi object types, by
    token: the whole contract as `Outputs`, each object definition or nested object as a type
    named after where it is (`OutputsFlow`, `OutputsOperator`); a nullable value as its type (an
    Output of a missing value is null in every SDK), an enum or a constant as its kind."""
    definitions = contract.get("$defs", {})
    types: dict[str, dict[str, Any]] = {}

    def kind(spec: dict[str, Any], name: str) -> dict[str, Any]:
        if "$ref" in spec:
            target = spec["$ref"].rsplit("/", 1)[-1]
            return kind(definitions[target], OUTPUTS + _pascal(target))
        choices = [c for c in spec.get("oneOf", spec.get("anyOf", [])) if c.get("type") != "null"]
        if len(choices) == 1:
            return kind(choices[0], name)
        if "const" in spec:
            return {"type": "integer" if isinstance(spec["const"], int) else "string"}
        if "enum" in spec:
            return {"type": "string"}
        declared = spec.get("type")
        declared = next((k for k in declared if k != "null"), None) if isinstance(declared, list) else declared
        if declared in PRIMITIVES:
            return {"type": declared}
        if declared == "array":
            return {"type": "array", "items": kind(spec.get("items", {}), name + "Item")}
        if declared == "object" and "properties" in spec:
            if name not in types:
                types[name] = {}  # a definition met again while it is built
                out: dict[str, Any] = {"type": "object", "properties": {
                    field: {**kind(value, name + _pascal(field)),
                            **({"description": value["description"]} if value.get("description") else {})}
                    for field, value in sorted(spec["properties"].items())}}
                if spec.get("required"):
                    out["required"] = sorted(spec["required"])
                if spec.get("description"):
                    out["description"] = spec["description"]
                types[name] = out
            return _ref(name)
        if declared == "object" and isinstance(spec.get("additionalProperties"), dict):
            return {"type": "object", "additionalProperties": kind(spec["additionalProperties"], name + "Value")}
        return dict(ANY)  # the contract takes any value here

    kind(contract, OUTPUTS)
    return {token(name): spec for name, spec in sorted(types.items())}


def typed(analyzed: dict[str, Any], topology: dict[str, Any]) -> dict[str, Any]:
    """The analyzer's schema with the components' topology inputs typed from the model's JSON
    Schema `topology`."""
    schema = copy.deepcopy(analyzed)
    # The registry's metadata the tree knows; the release adds where it is published from
    # (repository, homepage, publisher: tools/release.py).
    schema.update(description=DESCRIPTION, keywords=list(KEYWORDS))
    types = {token(name): complex_type(d) for name, d in sorted(topology.get("$defs", {}).items())}
    types[token(TOPOLOGY)] = complex_type(topology)
    schema["types"] = {**schema.get("types", {}), **types}

    def retype(resource: str, prop: str, spec: dict[str, Any], section: str = "inputProperties") -> None:
        """The analyzer's property replaced by `spec`, keeping its description."""
        found = schema["resources"][token(resource)][section]
        described = found[prop].get("description")
        found[prop] = {**spec, **({"description": described} if described else {})}

    # The secret material: marked secret, so that every language's SDK wraps it as a secret Output
    # before it is sent, whatever the caller passed.
    for resource in ("ReplicationTopology", "ReplicationFlow"):
        schema["resources"][token(resource)]["inputProperties"]["secrets"]["secret"] = True
    retype("ReplicationTopology", "topology", _ref(TOPOLOGY))
    retype("ReplicationFlow", "clusters", {"type": "object", "additionalProperties": {**_ref("Cluster"), "plain": True}})
    retype("ReplicationFlow", "flow", _ref("Flow"))
    retype("ReplicationFlow", "operator", _ref("Operator"))
    # The outputs as the contract types them (docs/outputs.md): `flows` each flow's, `outputs` the
    # whole contract.
    schema["types"].update(output_types(outputs_contract.SCHEMA))
    flows = {"type": "object", "additionalProperties": _ref(OUTPUTS + "Flow")}
    retype("ReplicationTopology", "outputs", _ref(OUTPUTS), "properties")
    retype("ReplicationTopology", "flows", flows, "properties")
    retype("ReplicationFlow", "flows", flows, "properties")
    return schema
