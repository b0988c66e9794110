"""The topology's JSON Schema as editors read it: docs/topology.schema.json is the model's
(`make schema` writes it), every stack file names it in its yaml-language-server modeline, and
it accepts what the model accepts and refuses what it refuses (jsonschema, on the stack files and
on a bad key)."""

from __future__ import annotations

import json
import os

import jsonschema
import pytest
import yaml

from infra.topology.schema import json_schema
from tests.support.stacks import ROOT

SCHEMA = ROOT / "docs" / "topology.schema.json"
TOPOLOGIES = sorted([*(ROOT / "stacks").glob("*.yaml"), *(ROOT / "docs" / "examples" / "offsets").glob("*.yaml")])


def test_the_committed_schema_is_the_model_s():
    assert SCHEMA.read_text() == json.dumps(json_schema(), indent=2, sort_keys=True) + "\n", \
        "docs/topology.schema.json is not the model's: run `make schema`"


@pytest.mark.parametrize("path", TOPOLOGIES, ids=[str(p.relative_to(ROOT)) for p in TOPOLOGIES])
def test_every_topology_file_names_the_schema_and_keeps_it(path):
    first = path.read_text().splitlines()[0]
    assert first == f"# yaml-language-server: $schema={os.path.relpath(SCHEMA, path.parent)}"
    jsonschema.validate(yaml.safe_load(path.read_text()), json.loads(SCHEMA.read_text()))


def test_the_schema_refuses_an_unknown_key():
    topology = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())
    topology["flows"][0]["topic"] = ["test.*"]  # `topics`, misspelt
    with pytest.raises(jsonschema.ValidationError) as refused:
        jsonschema.validate(topology, json.loads(SCHEMA.read_text()))
    assert "'topic' was unexpected" in refused.value.message
