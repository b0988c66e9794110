"""The topology's JSON Schema as editors read it: docs/topology.schema.json is the model's
(`make schema` writes it), every stack file names it in its yaml-language-server modeline, and
it accepts what the model accepts and refuses what it refuses (jsonschema, on the stack files and
on a bad key)."""

from __future__ import annotations

import contextlib
import io
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


def _set(path: str, value):
    def change(t: dict) -> None:
        *parents, last = path.split("/")
        node = t
        for step in parents:
            node = node[int(step)] if isinstance(node, list) else node.setdefault(step, {})
        node[last] = value
    return change


def _rename_cluster(old: str, new: str):
    def change(t: dict) -> None:
        t["clusters"][new] = t["clusters"].pop(old)
        for flow in t["flows"]:
            for role in ("source", "target"):
                if flow[role] == old:
                    flow[role] = new
    return change


# Each case: a change to the dev stack, and whether `validate` (and so the schema) accepts it.
AGREEMENT = {
    "topics as one string (the docs accept it)": (_set("flows/0/topics", "test.*"), True),
    "groups as one string": (_set("flows/0/groups", "test.*"), True),
    "topicsExclude as one string": (_set("flows/0/topicsExclude", "test.internal.*"), True),
    "groupsExclude as one string": (_set("flows/0/groupsExclude", "console-.*"), True),
    "an empty topics list": (_set("flows/0/topics", []), False),
    "connect.replicas: 0": (_set("operator/connect/replicas", 0), False),
    "connect.replicas: 2": (_set("operator/connect/replicas", 2), True),
    "tasksMax over Java's int": (_set("flows/0/tasksMax/source", 2**31), False),
    "tasksMax at Java's int": (_set("flows/0/tasksMax/source", 2**31 - 1), True),
    "a capitalised cluster alias": (_rename_cluster("us-west", "US-West"), False),
    "a cluster alias over 30 characters": (_rename_cluster("us-west", "a" * 31), False),
    "a cluster alias of 30 characters": (lambda t: (_rename_cluster("us-west", "a" * 30)(t),
                                                    _set("flows/0/name", "short")(t)), True),
    "a namespace-shaped name with capitals": (_set("operator/imagePullSecret/name", "Pull"), False),
}


@pytest.mark.parametrize("case", sorted(AGREEMENT))
def test_the_schema_accepts_exactly_what_validate_accepts(case, tmp_path):
    """An editor that trusts the schema must not mislead its user: a value the schema passes is
    one `validate` passes, and the other way round."""
    from infra.tools import cli
    change, accepted = AGREEMENT[case]
    topology = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())
    change(topology)
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(topology))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        validated = cli.main(["validate", str(path)]) == 0
    assert validated == accepted, err.getvalue()
    schema_accepts = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).is_valid(topology)
    assert schema_accepts == accepted, case


def test_where_validate_is_kinder_than_the_schema():
    """The one documented difference: `validate` also takes an integer written as a string or a
    float with no fraction (YAML's `"3"`, `3.0`); the schema asks for the integer itself."""
    topology = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())
    topology["operator"].setdefault("connect", {})["replicas"] = "3"
    assert not jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).is_valid(topology)
    from infra.checks import validation
    assert validation.parse(topology).topology.operator.connect.replicas == 3
