"""The components' arguments are typed from the topology model for Python programs
(components/topology_types.py, generated from the model's JSON Schema): mypy, as an editor's
checker does, accepts every topology the repository ships written as Python, and refuses a
misspelt key, a value no choice allows and a value of the wrong kind, each with its message.
At run time the hints stay mappings, the view Pulumi's analyzer takes for the provider schema."""

from __future__ import annotations

import typing

import pulumi

from components.replication import ReplicationFlowArgs, ReplicationTopologyArgs
from infra.core import reading
from infra.tools import python_types
from tests.support.stacks import DOC_TOPOLOGY, ROOT
from tests.unit.test_typing import mypy

TYPES = ROOT / "components" / "topology_types.py"
SHIPPED = sorted([*ROOT.glob("stacks/*.yaml"), *ROOT.glob("docs/examples/**/topology.yaml")])


def errors(tmp_path, name: str, program: str) -> list[str]:
    path = tmp_path / f"{name}.py"
    path.write_text(program)
    done = mypy("--strict", "--config-file", str(ROOT / "pyproject.toml"), str(path))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return [f"{line.split(':')[1]}: {line.split(': error: ', 1)[1]}" for line in done.stdout.splitlines()
            if ": error: " in line]


def test_the_committed_types_are_the_models():
    assert TYPES.read_text() == python_types.module(), "run `make python-types`"


def test_every_shipped_topology_type_checks_as_written(tmp_path):
    documents = [reading.load_yaml_file(f, "topology file") for f in SHIPPED] + [DOC_TOPOLOGY]
    assert len(documents) > 3
    program = "from components.replication import ReplicationTopologyArgs\n" + "".join(
        f"args{i}: ReplicationTopologyArgs = {{'topology': {d!r}, 'secrets': {{}}}}\n" for i, d in enumerate(documents))
    assert errors(tmp_path, "shipped", program) == []


def test_a_mistake_is_refused_before_the_program_runs(tmp_path):
    program = (
        "from components.replication import ReplicationFlowArgs\n"
        "from components.topology_types import Cluster, Operator, Flow\n"
        "a: Cluster = {'bootstrapServer': 'kafka:9092'}\n"
        "b: Operator = {'flavour': 'Strimzi'}\n"
        "c: Flow = {'source': 'a', 'target': 'b', 'topics': ['x'], 'tasksMax': {'source': '3'}}\n"
        "d: ReplicationFlowArgs = {'clusters': {'a': {'bootstrapServers': 'a:9092'}}, 'secrets': {},\n"
        "                          'flow': {'source': 'a', 'target': 'b', 'topic': 'x'}}\n")
    assert errors(tmp_path, "mistakes", program) == [
        '3: Missing key "bootstrapServers" for TypedDict "Cluster"  [typeddict-item]',
        '3: Extra key "bootstrapServer" for TypedDict "Cluster"  [typeddict-unknown-key]',
        '4: Incompatible types (expression has type "Literal[\'Strimzi\']", TypedDict item "flavour" has type '
        '"Literal[\'csm\', \'strimzi\']")  [typeddict-item]',
        '5: Incompatible types (expression has type "str", TypedDict item "source" has type "int")  [typeddict-item]',
        '7: Incompatible types (expression has type "dict[str, str]", TypedDict item "flow" has type '
        '"Flow | Awaitable[Flow] | Output[Flow]")  [typeddict-item]',
    ]


def test_at_run_time_the_arguments_stay_mappings_for_the_analyzer():
    """components/provider_schema.py types them for other languages from the same schema."""
    topology = ReplicationTopologyArgs.__annotations__["topology"]
    flow = ReplicationFlowArgs.__annotations__
    assert topology == pulumi.Input[dict[str, typing.Any]]
    assert (flow["flow"], flow["clusters"]) == (pulumi.Input[dict[str, typing.Any]],
                                                pulumi.Input[dict[str, dict[str, typing.Any]]])
