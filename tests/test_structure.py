"""The shape of the code: data flows one way, topology -> validated model -> plan -> components ->
outputs, with no import cycle, and the schema objects hold only what users wrote."""

from __future__ import annotations

import ast
import inspect

import pydantic

from infra.topology import schema
from tests.conftest import ROOT

# Each layer may import only the layers before it (and the shared leaves: names, errors, releases,
# topics, jregex, cron, reading, stores, config, outputs, connection). The connector generators
# and the plan come before the rules: they are pure functions of the resolved model, and the
# rules read from them which connector keys the program owns (one home for that list).
LAYERS = ["schema", "resolution", "metrics", "offsets", "connectors", "failover", "plan", "rules", "guardrails",
          "validation", "audit", "monitoring", "deployment", "program", "render"]


def imports_of(path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "infra":
                found |= {f"infra.{a.name}" for a in node.names}
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def graph() -> dict[str, set[str]]:
    return {f"infra.{p.stem}": {m for m in imports_of(p) if m.startswith("infra.")}
            for p in (ROOT / "infra").glob("*.py") if p.stem != "__init__"}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Import cycles found by a depth-first walk (each as the path that closes it)."""
    state: dict[str, int] = {}
    found: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*path, node, nxt])
            elif nxt not in state:
                visit(nxt, [*path, node])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [])
    return found


def test_the_infra_modules_import_each_other_without_a_cycle():
    assert cycles(graph()) == []


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


def test_each_layer_imports_only_the_layers_before_it():
    edges = graph()
    for i, layer in enumerate(LAYERS):
        later = {f"infra.{m}" for m in LAYERS[i + 1:]}
        assert not edges[f"infra.{layer}"] & later, (layer, edges[f"infra.{layer}"] & later)


def test_schema_objects_hold_only_what_users_wrote():
    """Frozen, no private attributes, no validator that rewrites the model: a derived view is a
    function of the fields (infra/topology/resolution.py), never state stored on the document."""
    models = [c for _, c in inspect.getmembers(schema, inspect.isclass)
              if issubclass(c, pydantic.BaseModel) and c.__module__ == schema.__name__ and not c.__name__.startswith("_")]
    assert {m.__name__ for m in models} >= {"Topology", "Flow", "Cluster", "Operator", "Audit", "ConnectPart"}
    for model in models:
        assert model.model_config.get("frozen") is True, model.__name__
        assert model.__private_attributes__ == {}, model.__name__
