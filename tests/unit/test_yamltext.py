"""The YAML the plan writes (infra/core/yamltext.py) is the same text through PyYAML's C emitter
and its Python one, so that a render does not depend on which one a machine's PyYAML has."""

from __future__ import annotations

import importlib.util

import pytest
import yaml

from infra.checks import validation
from infra.core import yamltext
from infra.plan import metrics
from infra.plan.stack import plan
from tests.support.stacks import ROOT

STACKS = sorted((ROOT / "stacks").glob("*.yaml"))


def _program_topology(flows: int) -> dict:
    """The benchmark's mixed topology (benchmarks/program.py): every pattern, many flows."""
    spec = importlib.util.spec_from_file_location("program_bench", ROOT / "benchmarks" / "program.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    topology: dict = module.topology(flows)
    return topology


@pytest.fixture
def written(monkeypatch):
    """Every document the plan hands to yamltext.dump, with its options. The exporter's rules
    are written once per release and process (metrics._template): forgotten first, so that this
    plan writes them."""
    metrics._template.cache_clear()
    metrics._plain.cache_clear()
    seen: list[tuple[object, dict]] = []
    dump = yamltext.dump

    def spy(data, **options):
        seen.append((data, options))
        return dump(data, **options)
    monkeypatch.setattr(yamltext, "dump", spy)
    return seen


def test_the_locked_pyyaml_has_the_c_emitter():
    assert yaml.__with_libyaml__ and yamltext._DUMPER is yaml.CSafeDumper


@pytest.mark.parametrize("source", [*STACKS, "program-20"], ids=lambda s: getattr(s, "name", s))
def test_both_emitters_write_the_same_text(source, written):
    model = validation.parse(_program_topology(20)) if source == "program-20" else validation.load(source)
    plan(model)
    assert written  # the exporter's rules at least; the rule files where the stack monitors
    for data, options in written:
        assert yaml.dump(data, Dumper=yaml.CSafeDumper, **options) == yaml.safe_dump(data, **options)


def test_without_the_c_emitter_the_python_one_writes(monkeypatch):
    monkeypatch.setattr(yamltext, "_DUMPER", yaml.SafeDumper)
    assert yamltext.dump({"b": [1, "x: y"], "a": None}, sort_keys=True) == "a: null\nb:\n- 1\n- 'x: y'\n"
