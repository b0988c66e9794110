"""The components' arguments are typed from the topology model and their outputs from the outputs
contract for Python programs (components/topology_types.py and contract/output_types.py,
generated from the two JSON Schemas): mypy, as an editor's checker does, accepts every topology
the repository ships written as Python and a render's real outputs, and refuses a misspelt key,
a value no choice allows, a value of the wrong kind and a misspelt output field, each with its
message. At run time the hints stay mappings, the view Pulumi's analyzer takes for the provider
schema."""

from __future__ import annotations

import typing

import pulumi

from components.replication import ReplicationFlowArgs, ReplicationTopologyArgs
from infra.core import reading
from infra.tools import python_types
from tests.support.stacks import DOC_TOPOLOGY, ROOT, doc_topology, render_topology
from tests.unit.test_typing import mypy

SHIPPED = sorted([*ROOT.glob("stacks/*.yaml"), *ROOT.glob("docs/examples/**/topology.yaml")])


def errors(tmp_path, name: str, program: str) -> list[str]:
    path = tmp_path / f"{name}.py"
    path.write_text(program)
    done = mypy("--strict", "--config-file", str(ROOT / "pyproject.toml"), str(path))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return [f"{line.split(':')[1]}: {line.split(': error: ', 1)[1]}" for line in done.stdout.splitlines()
            if ": error: " in line]


def test_the_committed_types_are_the_schemas():
    assert sorted(p.name for p in python_types.MODULES) == ["output_types.py", "topology_types.py"]
    for path, write in python_types.MODULES.items():
        assert path.read_text() == write(), f"{path.name}: run `make python-types`"


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


def test_the_outputs_type_check_as_rendered_and_a_misspelt_field_is_refused(tmp_path):
    outputs = render_topology(tmp_path, doc_topology(), secrets={}).outputs
    flow = next(iter(outputs["flows"]))
    program = (
        "from contract.output_types import Outputs, OutputsConnectors\n"
        "from components.replication import ReplicationTopology\n"
        f"rendered: Outputs = {outputs!r}\n"
        "def rest_url(c: ReplicationTopology) -> object:\n"
        f"    return c.outputs.apply(lambda o: o['flows'][{flow!r}]['connectRestUrl'])\n"
        "def misspelt(c: ReplicationTopology) -> object:\n"
        f"    return c.flows.apply(lambda f: f[{flow!r}]['connectRestURL'])\n"
        "written: OutputsConnectors = {'source': ['s'], 'checkpoint': ['c']}\n")
    assert errors(tmp_path, "outputs", program) == [
        '7: TypedDict "OutputsFlow" has no key "connectRestURL"  [typeddict-item]',
        '8: Missing key "heartbeat" for TypedDict "OutputsConnectors"  [typeddict-item]']


def test_the_outputs_types_are_named_as_the_provider_schema_names_them():
    from components.provider_schema import output_types
    from contract import output_types as generated
    from contract.outputs import SCHEMA
    objects = sorted(n for n in generated.__all__ if hasattr(getattr(generated, n), "__required_keys__"))
    assert objects == sorted(token.rsplit(":", 1)[1] for token in output_types(SCHEMA))
    assert len(objects) == 13


def test_at_run_time_the_arguments_stay_mappings_for_the_analyzer():
    """components/provider_schema.py types them for other languages from the same schema."""
    from components.replication import ReplicationTopology
    assert ReplicationTopology.__annotations__["outputs"] == pulumi.Output[dict[str, typing.Any]]
    topology = ReplicationTopologyArgs.__annotations__["topology"]
    flow = ReplicationFlowArgs.__annotations__
    assert topology == pulumi.Input[dict[str, typing.Any]]
    assert (flow["flow"], flow["clusters"]) == (pulumi.Input[dict[str, typing.Any]],
                                                pulumi.Input[dict[str, dict[str, typing.Any]]])
