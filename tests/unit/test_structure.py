"""The shape of the code (docs/architecture.md): each package is a layer, every import between
packages goes down the layers, the contract imports nothing of ours, the audit job imports only
the contract, the policy pack only the checks and below, and no module takes part in a cycle."""

from __future__ import annotations

import ast
import inspect
import shutil
from pathlib import Path

import pydantic

from infra.topology import schema
from tests.support.stacks import ROOT

# Bottom to top; a module may import its own layer and the layers below it. The audit job and the
# policy pack sit beside the deployer, each with its own ceiling; the benchmarks on top, beside
# the tools (never importing a test).
LAYERS = ["contract", "infra.core", "infra.filters", "infra.topology", "infra.plan", "infra.checks", "infra.deploy",
          "components", "infra.tools"]
CEILING = {"spark": "contract", "policy": "infra.checks", "benchmarks": "infra.tools"}
BESIDE = {"benchmarks": {"spark", "policy"}}  # the side packages a package may import too (the audit job's)
# infra/outputs.py keeps `infra.outputs` importable (docs/outputs.md): it is the contract's module.
PLACED = {"infra.outputs": "contract", "infra.__main__": "infra.tools", "infra": "contract"}
PACKAGES = ["contract", "infra", "components", "spark", "policy", "benchmarks"]


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(root: Path) -> dict[str, set[str]]:
    """Each module of our packages, and the modules of ours it imports (at any depth of its code)."""
    ours = {module_name(root, p) for pkg in PACKAGES for p in (root / pkg).rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for pkg in PACKAGES:
        for path in (root / pkg).rglob("*.py"):
            found = set()
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    found |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in ours else node.module
                              for a in node.names}
                elif isinstance(node, ast.Import):
                    found |= {a.name for a in node.names}
            edges[module_name(root, path)] = {m for m in found if m.split(".")[0] in PACKAGES + ["tests"]}
    return edges


def layer(module: str) -> str:
    if module in PLACED:
        return PLACED[module]
    return max((name for name in [*LAYERS, *CEILING] if module == name or module.startswith(name + ".")),
               key=len, default=module)


def violations(edges: dict[str, set[str]]) -> list[str]:
    """Every import that goes up a layer, or out of what its package may see."""
    found = []
    for module, targets in sorted(edges.items()):
        mine = layer(module)
        ceiling = LAYERS.index(CEILING.get(mine, mine)) if CEILING.get(mine, mine) in LAYERS else -1
        for target in sorted(targets):
            theirs = layer(target)
            if theirs == mine or theirs in BESIDE.get(mine, ()):
                continue
            if theirs not in LAYERS or LAYERS.index(theirs) > ceiling or (mine == "contract"):
                found.append(f"{module} ({mine}) imports {target} ({theirs})")
    return found


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


def test_every_import_goes_down_the_layers():
    assert violations(imports(ROOT)) == []


def test_the_layers_cover_every_module():
    edges = imports(ROOT)
    placed = {layer(m) for m in edges}
    assert placed == {*LAYERS, *CEILING}, placed - {*LAYERS, *CEILING}


def test_no_module_takes_part_in_a_cycle():
    assert cycles(imports(ROOT)) == []


def test_an_upward_import_planted_in_a_copy_is_found(tmp_path):
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, tmp_path / pkg)
    names = tmp_path / "infra" / "core" / "names.py"
    names.write_text(names.read_text() + "\nfrom infra.plan import stack  # planted\n")
    job = tmp_path / "spark" / "report.py"
    job.write_text("from infra.core import names  # planted\n" + job.read_text())
    contract = tmp_path / "contract" / "audit.py"
    contract.write_text("import spark.data  # planted\n" + contract.read_text())
    bench = tmp_path / "benchmarks" / "diff.py"
    bench.write_text("from tests.support import stacks  # planted\n" + bench.read_text())
    assert violations(imports(tmp_path)) == [
        "benchmarks.diff (benchmarks) imports tests.support (tests.support)",
        "contract.audit (contract) imports spark.data (spark)",
        "infra.core.names (infra.core) imports infra.plan.stack (infra.plan)",
        "spark.report (spark) imports infra.core.names (infra.core)",
    ]
    assert any({"infra.core.names", "infra.plan.stack"} <= set(c) for c in cycles(imports(tmp_path)))


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


def test_nothing_shipped_imports_the_tests():
    assert [f"{m} imports {t}" for m, ts in imports(ROOT).items() for t in ts if t.startswith("tests")] == []


def test_every_version_gate_is_a_property_of_the_release():
    """Nothing outside infra/core/releases.py compares release or Kafka versions: it asks the row."""
    gates = []
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Compare) and any(
                        isinstance(n, ast.Attribute) and n.attr in ("strimzi_line", "kafka_line", "strimzi", "kafka")
                        for n in ast.walk(node)) and any(isinstance(n, ast.Tuple) for n in node.comparators):
                    gates.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert [g for g in gates if not g.startswith("infra/core/releases.py")] == []
    assert len(gates) >= 10  # the release's own properties are found: the check sees comparisons


def test_schema_objects_hold_only_what_users_wrote():
    """Frozen, no private attributes, no validator that rewrites the model: a derived view is a
    function of the fields (infra/topology/resolution.py), never state stored on the document."""
    models = [c for _, c in inspect.getmembers(schema, inspect.isclass)
              if issubclass(c, pydantic.BaseModel) and c.__module__.startswith(schema.__name__ + ".")
              and not c.__name__.startswith("_")]
    assert {m.__name__ for m in models} >= {"Topology", "Flow", "Cluster", "Operator", "Audit", "ConnectPart"}
    for model in models:
        assert model.model_config.get("frozen") is True, model.__name__
        assert model.__private_attributes__ == {}, model.__name__


# ------------------------------------------------------------------ the house rules

# No module of the deployer, the components, the contract or the audit job over this many lines: a
# file that long does several jobs (split along them, as infra/plan/ and spark/ were).
MAX_LINES = 600
SIZED = ["infra", "components", "contract", "spark"]


def oversized(root: Path) -> list[str]:
    return sorted(f"{p.relative_to(root)} ({n} lines)" for pkg in SIZED for p in (root / pkg).rglob("*.py")
                  if (n := len(p.read_text().splitlines())) > MAX_LINES)


def test_no_module_is_over_the_line_limit(tmp_path):
    assert oversized(ROOT) == []
    planted = tmp_path / "spark"
    planted.mkdir()
    (planted / "big.py").write_text("x = 1\n" * (MAX_LINES + 1))
    assert oversized(tmp_path) == [f"spark/big.py ({MAX_LINES + 1} lines)"]


def repeated_basenames(tests: Path) -> dict[str, list[str]]:
    """Test files of the same name in several tiers (pytest tells them apart by folder; a reader
    does not): each file is named after what it tests."""
    by_name: dict[str, list[str]] = {}
    for path in sorted(tests.glob("*/test_*.py")):
        by_name.setdefault(path.name, []).append(path.parent.name)
    return {name: tiers for name, tiers in by_name.items() if len(tiers) > 1}


def test_no_test_file_name_repeats_across_tiers(tmp_path):
    assert repeated_basenames(ROOT / "tests") == {}
    for tier in ("unit", "runtime"):
        (tmp_path / tier).mkdir()
        (tmp_path / tier / "test_replication.py").write_text("")
    assert repeated_basenames(tmp_path) == {"test_replication.py": ["runtime", "unit"]}


def literal_audit_names(root: Path) -> list[str]:
    """String literals (docstrings aside) equal to one of the audit's names across the
    deployer/job boundary (contract/audit.py): written anywhere else, two literals would have to
    agree for the program's objects and the job to meet."""
    from contract import audit
    shared = {audit.JOB, audit.CONFIG_DIR, audit.CONFIG_FILE, audit.CREDENTIALS_DIR, audit.REPORTS_DIR}
    found = []
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            if path.relative_to(root).as_posix() == "contract/audit.py":
                continue
            tree = ast.parse(path.read_text())
            docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                          if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                          and node.body and isinstance(node.body[0], ast.Expr)}
            found += [f"{path.relative_to(root)}:{node.lineno} {node.value!r}" for node in ast.walk(tree)
                      if isinstance(node, ast.Constant) and node.value in shared and id(node) not in docstrings]
    return found


def test_the_audits_names_are_written_in_the_contract_alone(tmp_path):
    assert literal_audit_names(ROOT) == []
    (tmp_path / "spark").mkdir()
    (tmp_path / "spark" / "job.py").write_text('"""The job: reads audit.json."""\nPATH = "audit.json"\n')
    assert literal_audit_names(tmp_path) == ["spark/job.py:2 'audit.json'"]
