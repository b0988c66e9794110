"""The project template (docs/examples/template) under the real Pulumi CLI: `pulumi new` makes the
project from it, the prompts' answers are saved in the stack's config, and `kafka-replication
init` turns them into a topology file `validate` accepts.

What `pulumi new` cannot do here: once it has written the project, it loads the Python language
host (to template the program and install its dependencies) before it creates the stack and
saves the answers, and the module proxy does not serve that host: the command stops there, with
the project written (asserted). The answers are then saved with `pulumi stack init` and `pulumi
config set`, the CLI's own commands, with the defaults the template's prompts offer (what `pulumi
new --yes` saves). The host's install step, pip on the template's requirements.txt (the pinned
release), runs in tests/runtime/test_installed.py against the release the workflow builds.
"""

from __future__ import annotations

import subprocess
import sys

import yaml

from tests.support.stacks import ROOT

TEMPLATE = ROOT / "docs" / "examples" / "template"


def test_a_project_from_the_template_gets_a_stack_validate_accepts(engine, tmp_path):
    project = tmp_path / "team-replication"
    done = engine.cli("new", str(TEMPLATE), "--generate-only", "--yes", "--name", "team-replication",
                      "--description", "our replication", "--dir", str(project), cwd=tmp_path, check=False)
    # The project is made; then the CLI asks the Python language host to template it, and stops.
    assert (done.returncode, done.stdout.splitlines()[0]) == (1, "Created project 'team-replication'"), done.stderr
    assert done.stderr.strip() == ("error: failed to load language plugin python: no language plugin "
                                   "'pulumi-language-python' found in the workspace or on your $PATH")
    made = yaml.safe_load((project / "Pulumi.yaml").read_text())
    assert (made["name"], made["description"], made["runtime"]) == (
        "team-replication", "our replication", {"name": "python", "options": {"toolchain": "pip",
                                                                             "virtualenv": "venv"}})
    assert sorted(p.name for p in project.iterdir()) == [".gitignore", "Pulumi.yaml", "__main__.py",
                                                         "requirements.txt"]
    prompts = yaml.safe_load((TEMPLATE / "Pulumi.yaml").read_text())["template"]["config"]
    engine.state(project).mkdir(parents=True)  # the file backend's folder, as `pulumi login file://...` needs
    engine.cli("stack", "init", "dev", cwd=project)
    for key, prompt in prompts.items():
        engine.cli("config", "set", "--stack", "dev", key, "--", prompt["default"], cwd=project)
    saved = yaml.safe_load((project / "Pulumi.dev.yaml").read_text())["config"]
    assert saved == {key: prompt["default"] for key, prompt in prompts.items()}
    done = subprocess.run([sys.executable, "-m", "infra", "init", "--stack", "dev"], cwd=project,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    done = subprocess.run([sys.executable, "-m", "infra", "validate", "stacks/dev.yaml"], cwd=project,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "stacks/dev.yaml: ok (2 clusters, 1 flows declared, 1 deployed)\n")
    # The program the template holds previews the stack from that file, under the engine's driver
    # elsewhere (tests/engine/test_engine.py); here, the render of the same program.
    done = subprocess.run([sys.executable, "-m", "infra", "render", "--stack", "dev", "--placeholder-secrets",
                           "--out", str(tmp_path / "render")], cwd=project, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(f"\nWrote 11 objects and outputs.json to {tmp_path / 'render'}\n")
