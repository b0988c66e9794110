"""`kafka-replication init`: a stack's first topology file, from the answers the project template
asks for (docs/examples/template: `pulumi new` saves them in Pulumi.<stack>.yaml) or from the
command line: the operator release, the first two clusters, the topics of their flow.

The topology lives in its file, as for every stack; the answers only fill it once. What it
writes is checked as `validate` checks a file, and written only when it passes, never over an
existing file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from infra.core.errors import Problem, TopologyError
from infra.core.names import PROJECT
from infra.deploy import config as stack_config, deployment

# The template's prompts (docs/examples/template/Pulumi.yaml, held equal by tests/engine/test_template.py):
# config key without the project prefix -> what it holds.
ANSWERS = {
    "operator": "the operator release: `<flavour> <version>`, e.g. `strimzi 1.2.0` or `csm 1.2`",
    "source": "the source Kafka cluster: `<alias>=<bootstrap servers>`",
    "target": "the target Kafka cluster: `<alias>=<bootstrap servers>`",
    "topics": "the topics to replicate: a Java regular expression",
}
CLUSTER = re.compile(r"([^=\s]+)=(\S+)")
# Editors complete and check the file against the topology's JSON Schema, written beside it.
SCHEMA_FILE = "topology.schema.json"
MODELINE = f"# yaml-language-server: $schema={SCHEMA_FILE}\n"


def answers(stack: str, given: dict[str, str | None]) -> dict[str, str]:
    """Each answer: the command line's, else the stack's config (where `pulumi new` saved it)."""
    saved = stack_config.plain(stack)
    out = {key: value for key in ANSWERS if (value := given.get(key) or saved.get(key))}
    missing = [key for key in ANSWERS if key not in out]
    if missing:
        raise TopologyError([Problem(f"Pulumi.{stack}.yaml", f"{PROJECT}:{key}", None,
                                     f"{ANSWERS[key]} (--{key}, or `pulumi config set {PROJECT}:{key} ...`)")
                             for key in missing], "the answers")
    return out


def topology(values: dict[str, str]) -> dict[str, Any]:
    """The topology document the answers describe (TopologyError: the answers that are not)."""
    problems = []
    flavour, _, version = values["operator"].strip().partition(" ")
    clusters = {}
    for role in ("source", "target"):
        match = CLUSTER.fullmatch(values[role].strip())
        if match is None:
            problems.append(Problem("the answers", role, values[role], ANSWERS[role]))
        else:
            clusters[role] = (match[1], match[2])
    if problems:
        raise TopologyError(problems, "the answers")
    (source, source_bootstrap), (target, target_bootstrap) = clusters["source"], clusters["target"]
    return {
        "operator": {"flavour": flavour, **({"version": version.strip()} if version.strip() else {})},
        "clusters": {source: {"bootstrapServers": source_bootstrap}, target: {"bootstrapServers": target_bootstrap}},
        "flows": [{"source": source, "target": target, "topics": [values["topics"]]}],
    }


def write(stack: str, given: dict[str, str | None]) -> Path:
    """The stack's topology file, from the answers (and topology.schema.json beside it for editors,
    unless there is one): where the program will read it, the stack's `topology` config when
    Pulumi.<stack>.yaml sets one, else stacks/<stack>.yaml (config.topology_path); refused (exit 2)
    when it exists or does not pass `validate`."""
    root = stack_config.project_dir()
    named = stack_config.plain(stack).get(stack_config.TOPOLOGY_KEY)
    path = root / (named or f"stacks/{stack}.yaml")
    if path.exists():
        raise TopologyError([Problem(str(path), "(file)", str(path), "a stack without a topology file yet: "
                                     "init writes the first one and never replaces one")], "the command line")
    document = topology(answers(stack, given))
    try:
        deployment.prepare(document, "the answers")
    except TopologyError as exc:
        raise TopologyError(exc.problems, "the topology the answers give") from None
    text = (MODELINE + f"# {stack}: written by `kafka-replication init`; the format is docs/topology.md.\n"
            "# Security (TLS, SASL) and more flows: docs/topology.md; secrets: pulumi config set --secret.\n"
            + yaml.safe_dump(document, sort_keys=False))
    schema = path.parent / SCHEMA_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not schema.exists():
            from infra.topology.schema import json_schema
            schema.write_text(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n")
        with path.open("x") as out:  # never over a file, even one made since the check above
            out.write(text)
    except OSError as exc:
        raise TopologyError([Problem(str(path), "(file)", str(path), f"a file init can write ({exc.strerror or exc})")],
                            "the command line") from None
    return path
