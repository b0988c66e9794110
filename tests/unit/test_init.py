"""`kafka-replication init`: the first topology file of a stack, from the project template's
answers (docs/examples/template) saved in Pulumi.<stack>.yaml, or from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from infra.tools import init
from infra.topology.schema import json_schema
from tests.support.stacks import ROOT

TEMPLATE = ROOT / "docs" / "examples" / "template"


def _project(tmp_path: Path, config: dict[str, str]) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: team\nruntime: python\n")
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump({"config": {f"kafka-replication:{k}": v
                                                                         for k, v in config.items()}}))
    return tmp_path


def run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infra", "-C", str(project), "init", "--stack", "dev", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def defaults() -> dict[str, str]:
    prompts = yaml.safe_load((TEMPLATE / "Pulumi.yaml").read_text())["template"]["config"]
    return {key.removeprefix("kafka-replication:"): prompt["default"] for key, prompt in prompts.items()}


def test_the_template_asks_exactly_what_init_reads():
    assert list(defaults()) == list(init.ANSWERS) == ["operator", "source", "target", "topics"]


def test_the_template_s_defaults_give_a_topology_validate_accepts(tmp_path):
    project = _project(tmp_path, defaults())
    done = run(project)
    assert (done.returncode, done.stderr) == (0, "")
    written = project / "stacks" / "dev.yaml"
    assert done.stdout == (f"wrote {written}; next: the secrets it needs (`kafka-replication render --stack dev "
                           "--out DIR` names them), then `pulumi preview`\n")
    assert written.read_text() == (
        "# yaml-language-server: $schema=topology.schema.json\n"
        "# dev: written by `kafka-replication init`; the format is docs/topology.md.\n"
        "# Security (TLS, SASL) and more flows: docs/topology.md; secrets: pulumi config set --secret.\n"
        "operator:\n  flavour: csm\n  version: '1.2'\n"  # the topology's own default, proposed by the template
        "clusters:\n  us-west:\n    bootstrapServers: us-west-kafka-bootstrap.kafka-us-west:9092\n"
        "  us-east:\n    bootstrapServers: us-east-kafka-bootstrap.kafka-us-east:9092\n"
        "flows:\n- source: us-west\n  target: us-east\n  topics:\n  - orders\\..*\n")
    assert json.loads((project / "stacks" / "topology.schema.json").read_text()) == json_schema()
    validated = subprocess.run([sys.executable, "-m", "infra", "-C", str(project), "validate", "stacks/dev.yaml"],
                               cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (validated.returncode, validated.stdout) == (0, "stacks/dev.yaml: ok (2 clusters, 1 flows declared, "
                                                           "1 deployed)\n")
    # Never over an existing file.
    again = run(project, "--topics", "other")
    assert (again.returncode, again.stdout, again.stderr) == (2, "", (
        f"error: the command line has 1 problem(s):\n  - {written}: (file): got '{written}'; expected a stack "
        "without a topology file yet: init writes the first one and never replaces one\n"))


def test_the_command_line_answers_first_and_every_missing_one_is_named(tmp_path):
    project = _project(tmp_path, {"operator": "csm 1.4"})
    done = run(project, "--source", "a=a:9092")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: the answers has 2 problem(s):\n"
        "  - Pulumi.dev.yaml: kafka-replication:target: missing; expected the target Kafka cluster: "
        "`<alias>=<bootstrap servers>` (--target, or `pulumi config set kafka-replication:target ...`)\n"
        "  - Pulumi.dev.yaml: kafka-replication:topics: missing; expected the topics to replicate: a Java regular "
        "expression (--topics, or `pulumi config set kafka-replication:topics ...`)\n")
    done = run(project, "--source", "a=a:9092", "--target", "b=b:9092", "--topics", "x.*")
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load((project / "stacks" / "dev.yaml").read_text())["operator"] == {"flavour": "csm",
                                                                                         "version": "1.4"}


def test_answers_the_model_refuses_write_nothing(tmp_path):
    project = _project(tmp_path, {**defaults(), "source": "us-west", "operator": "strimzi 0.47.0"})
    done = run(project)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("error: the answers has 1 problem(s):\n  - the answers: source: got 'us-west'; expected "
                           "the source Kafka cluster: `<alias>=<bootstrap servers>`\n")
    done = run(project, "--source", "us-west=x:9092", "--topics", "orders[")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: the topology the answers give has 2 problem(s):\n"
        "  - operator: version: got '0.47.0'; expected a supported strimzi release: 0.48.0, 0.51.0, 1.2.0\n"
        "  - flows[0] (repl-us-west-us-east): topics: got ['orders[']; expected 'orders[' is not a valid Java regex "
        "(Unclosed character class)\n")
    assert not (project / "stacks").exists()


def test_a_project_init_cannot_write_in_exits_2(tmp_path):
    project = _project(tmp_path, defaults())
    (project / "stacks").write_text("a file where the folder goes")
    done = run(project)
    written = project / "stacks" / "dev.yaml"
    assert (done.returncode, done.stdout, done.stderr) == (2, "", (
        f"error: the command line has 1 problem(s):\n  - {written}: (file): got '{written}'; expected a file init "
        "can write (File exists)\n"))


def test_init_writes_where_the_stacks_config_says_the_topology_is(tmp_path):
    """`kafka-replication:topology: topologies/dev.yaml` in Pulumi.dev.yaml: the program reads that
    file, so init writes it there (it wrote stacks/dev.yaml, which nothing would read)."""
    project = _project(tmp_path, {**defaults(), "topology": "topologies/dev.yaml"})
    done = run(project)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    written = project / "topologies" / "dev.yaml"
    assert done.stdout.startswith(f"wrote {written}; ")
    assert written.read_text().startswith("# yaml-language-server: $schema=topology.schema.json\n")
    assert json.loads((project / "topologies" / "topology.schema.json").read_text()) == json_schema()
    assert not (project / "stacks").exists()
    assert yaml.safe_load(written.read_text())["flows"] == [
        {"source": "us-west", "target": "us-east", "topics": ["orders\\..*"]}]
