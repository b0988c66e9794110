"""The package as a user installs it: the release of this tree as the release workflow builds it
(its build job's scripts run here up to the upload), its wheel installed (not editable) into a
fresh virtualenv by the template's pinned requirements, and every command run from a Pulumi
project of a team's own, in a temporary folder outside this repository, with nothing of the
checkout on the path.

In the runtime tier because `rehearse` starts Kafka, Connect and a kube-apiserver for real, and
`status` reads a real API server. pip installs at the locked versions (requirements/test.txt) from
the registry pip is configured with (its cache makes the second run fast).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from contract.release import RELEASE
from tests.support.stacks import GIT, ROOT

MAIN = "from components.program import main\n\nmain()\n"

# The wheel and its virtualenv (the module fixture `installed`) take a minute of both cores: the
# runtime tier's processes leave this module's tests to one of them (tests/support/shared_queue.py).
CLAIM_TOGETHER = True


def _run(argv: list[str], cwd: Path, timeout: float = 600, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


# The release workflow's build job (.github/workflows/release.yml), run here up to its upload.
RELEASE_JOB = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())["jobs"]["build"]
# What GitHub runs a `run:` script with under `shell: bash`, and the expressions its scripts read.
BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]
GITHUB = {"github.server_url": "https://github.com", "github.repository": "platform/kafka-replication",
          "github.repository_owner": "platform"}
TEMPLATE_REQUIREMENTS = ROOT / "docs" / "examples" / "template" / "requirements.txt"
ASSETS = sorted([f"kafka-replication-policy-{RELEASE}.tar.gz", f"kafka_replication-{RELEASE}-py3-none-any.whl",
                 f"kafka_replication-{RELEASE}.tar.gz", "SHA256SUMS", "schema.json"])


def _expand(value: str) -> str:
    """A step's `${{ github.* }}` expressions, as the runner fills them (an unknown one fails)."""
    return re.sub(r"\$\{\{ *([a-z_.]+) *\}\}", lambda m: GITHUB[m[1]], value)


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """The release of this tree as the workflow makes it: the files as git sees them (tracked and
    new, not ignored), the release commit (CHANGELOG.md's newest section dated) tagged v<RELEASE>,
    then the build job's scripts in order, each under a runner's bash with the tag's variables,
    up to the upload; a runner's Python of its own (a virtualenv) takes what the scripts install.
    Returns the job's dist/ folder."""
    work = tmp_path_factory.mktemp("release")
    listed = _run(["git", "ls-files", "-co", "--exclude-standard", "-z"], ROOT)
    assert listed.returncode == 0, listed.stderr
    source = work / "source"
    for name in filter(None, listed.stdout.split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    changelog = source / "CHANGELOG.md"
    changelog.write_text(re.sub(rf"^## \[{re.escape(RELEASE)}\] - \S+$", f"## [{RELEASE}] - 2026-11-29",
                                changelog.read_text(), count=1, flags=re.M))
    git = {**os.environ, **GIT}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", f"Release {RELEASE}"], ["tag", f"v{RELEASE}"]):
        assert _run(["git", *args], source, env=git).returncode == 0, args
    runner = work / "runner"
    assert _run([sys.executable, "-m", "venv", str(runner)], work).returncode == 0
    env = {**_env(), "PATH": f"{runner / 'bin'}:{os.environ['PATH']}", "GITHUB_REF_NAME": f"v{RELEASE}",
           "GITHUB_REPOSITORY": GITHUB["github.repository"]}
    ran = []
    for step in RELEASE_JOB["steps"]:
        if step.get("uses", "").startswith("actions/upload-artifact@"):
            break
        if "run" not in step:
            continue
        done = _run([*BASH, "-c", step["run"]], source, timeout=900,
                    env={**env, **{k: _expand(v) for k, v in step.get("env", {}).items()}})
        assert done.returncode == 0, f"{step['name']}: {done.stdout}{done.stderr}"
        ran.append((step["name"], done.stdout))
    assert [name for name, _ in ran] == ["the tree is the tag's release", "wheel and sdist",
                                         "schema, policy pack, checksums, notes"]
    assert ran[0][1] == f"v{RELEASE}: the tree is release {RELEASE}\n"
    return source / "dist"


def test_the_release_job_builds_the_release(release):
    """The assets the tag's GitHub release holds, each its exact content or name: the wheel and
    sdist at the tag's version; the committed provider schema with the registry's metadata the
    host gives; the policy pack, self-contained, with no times or owners in its tarball; the
    checksums of all of them; the notes, the CHANGELOG section."""
    assert sorted(p.name for p in (release / "assets").iterdir()) == ASSETS
    committed = json.loads((ROOT / "components" / "schema.json").read_text())
    assert json.loads((release / "assets" / "schema.json").read_text()) == {
        **committed, "repository": "https://github.com/platform/kafka-replication",
        "homepage": "https://github.com/platform/kafka-replication", "publisher": "platform"}
    assert committed["version"] == RELEASE and "kind/component" in committed["keywords"]
    sums = {line.split("  ")[1]: line.split("  ")[0]
            for line in (release / "assets" / "SHA256SUMS").read_text().splitlines()}
    assert sums == {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                    for p in (release / "assets").iterdir() if p.name != "SHA256SUMS"}
    pack = f"kafka-replication-policy-{RELEASE}"
    with tarfile.open(release / "assets" / f"{pack}.tar.gz") as tar:
        members = tar.getmembers()
    names = {m.name for m in members}
    assert {f"{pack}/{n}" for n in ("PulumiPolicy.yaml", "__main__.py", "rules.py", "requirements.txt",
                                    "contract/release.py", "infra/checks/policies.py")} <= names
    assert {(m.mtime, m.uid, m.gid, m.uname) for m in members} == {(0, 0, 0, "")}
    notes = (release / "NOTES.md").read_text()
    assert notes.startswith("The first release.\n") and f"'kafka-replication=={RELEASE}'" in notes


@pytest.fixture(scope="module")
def installed(release, tmp_path_factory) -> Path:
    """The virtualenv's bin folder, filled as a project made from the template is: its
    requirements.txt (the release's pin, with the `rehearse` extra) installed by pip, as
    Pulumi's Python language host installs a project's requirements, the release's wheel found
    in a local repository (--find-links, the job's assets) and the rest at the locked versions."""
    work = tmp_path_factory.mktemp("installed")
    venv = work / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], work).returncode == 0
    done = _run([str(venv / "bin" / "pip"), "install", "-q", "-c", str(ROOT / "requirements" / "test.txt"),
                 "--find-links", str(release / "assets"), "-r", str(TEMPLATE_REQUIREMENTS)], work, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    return venv / "bin"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A team's repository holding its replication project in a folder of its own, committed."""
    repo = tmp_path_factory.mktemp("team")
    project = repo / "replication"
    (project / "stacks").mkdir(parents=True)
    (project / "Pulumi.yaml").write_text("name: team-replication\nruntime:\n  name: python\n"
                                         "  options: {toolchain: pip, virtualenv: venv}\n")
    (project / "__main__.py").write_text(MAIN)
    shutil.copy(ROOT / "Pulumi.dev.yaml", project / "Pulumi.dev.yaml")
    shutil.copy(ROOT / "stacks" / "dev.yaml", project / "stacks" / "dev.yaml")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "replication"]):
        assert _run(["git", *args], repo, env={**os.environ, **GIT}).returncode == 0
    return project


def _env() -> dict[str, str]:
    # Nothing of the checkout: no PYTHONPATH, no project variables.
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith(("PULUMI_", "INFRA_"))}


def command(installed: Path, *args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return _run([str(installed / "kafka-replication"), *args], cwd, timeout, _env())


def test_the_package_is_the_installed_one(installed, project):
    where = _run([str(installed / "python"), "-c", "import components, infra, spark; "
                  "print(infra.__file__, components.__file__, spark.__file__)"], project, env=_env())
    assert where.returncode == 0, where.stderr
    site = str(installed.parent / "lib")
    assert all(path.startswith(site) for path in where.stdout.split()), where.stdout
    assert command(installed, "--version", cwd=project).stdout == f"kafka-replication {RELEASE}\n"


def test_validate_and_schema(installed, project):
    done = command(installed, "validate", "stacks/dev.yaml", cwd=project)
    assert (done.returncode, done.stdout, done.stderr) == (0, "stacks/dev.yaml: ok (2 clusters, 1 flows declared, "
                                                              "1 deployed)\n", "")
    done = command(installed, "schema", cwd=project)
    assert json.loads(done.stdout) == json.loads((ROOT / "docs" / "topology.schema.json").read_text())


def test_render_from_a_folder_of_the_project_is_the_checkout_s_render(installed, project, tmp_path):
    """The project found from its `stacks/` folder up; every byte as this checkout renders the
    same topology with `monitoring.runbookBaseUrl` set to the release's published docs, which the
    installed release takes by default: its alerts link their runbooks to its docs at its tag."""
    done = command(installed, "render", "--stack", "dev", "--placeholder-secrets", "--out", str(tmp_path / "team"),
                   cwd=project / "stacks")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(f"\nWrote 29 objects and outputs.json to {tmp_path / 'team'}\n")
    docs = f"https://github.com/platform/kafka-replication/blob/v{RELEASE}/docs/operations.md"
    rules = (tmp_path / "team").rglob("PrometheusRule-*.yaml")
    annotations = [r["annotations"] for f in rules for g in yaml.safe_load(f.read_text())["spec"]["groups"]
                   for r in g["rules"]]
    assert annotations and {a["runbook_url"].partition("#")[0] for a in annotations} == {docs}
    assert not [a for a in annotations if "runbook" in a]
    topology = (ROOT / "stacks" / "dev.yaml").read_text()
    assert topology.count("\nmonitoring:\n") == 1
    (tmp_path / "dev.yaml").write_text(topology.replace("\nmonitoring:\n", f"\nmonitoring:\n  runbookBaseUrl: {docs}\n"))
    ours = _run([sys.executable, "-m", "infra", "render", "--stack", "dev", "--placeholder-secrets", "--topology",
                 str(tmp_path / "dev.yaml"), "--out", str(tmp_path / "ours")], ROOT)
    assert ours.returncode == 0, ours.stderr

    def files(folder: Path) -> dict[str, bytes]:
        return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    assert files(tmp_path / "team") == files(tmp_path / "ours")


def test_diff_against_the_team_s_git(installed, project, tmp_path):
    """git of the project's repository, from outside it with -C: the base renders from the
    committed folder, with the installed package."""
    topology = project / "stacks" / "dev.yaml"
    before = topology.read_text()
    try:
        topology.write_text(before.replace('topics: ["test.*"]', r'topics: ["test\\.orders"]'))
        done = command(installed, "-C", str(project), "diff", "--base", "HEAD", cwd=tmp_path)
    finally:
        topology.write_text(before)
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout.splitlines()[:5] == [
        "Replication diff: HEAD → working tree", "", "Stack dev: 2 changed, 2 replaced; 3 outputs changed",
        "  audit: 1 replaced", "  flow repl-us-west-us-east: 2 changed, 1 replaced"]
    assert command(installed, "-C", str(project), "diff", cwd=tmp_path).returncode == 0  # back as committed


def test_status_reads_the_api_server(installed, project, tmp_path_factory, tmp_path):
    """The stack's outputs (from the render) against a real API server of its own that holds none
    of the stack's objects and serves no Strimzi kind: each object said unread or missing."""
    from tests.support.stacks import started_apiserver
    out = tmp_path / "render"
    assert command(installed, "render", "--stack", "dev", "--placeholder-secrets", "--out", str(out),
                   cwd=project).returncode == 0
    server = started_apiserver(tmp_path_factory, "installed-apiserver")
    client = next(server)
    try:
        from infra.tools.rehearsal import apiserver
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(apiserver.kubeconfig({"server": client.state}, "server")))
        done = command(installed, "status", "--outputs", str(out / "outputs.json"), "--kubeconfig", str(kubeconfig),
                       cwd=project)
    finally:
        next(server, None)  # past its yield: the server stops
    lines = done.stdout.splitlines()
    assert (done.returncode, lines[:3]) == (5, ["operator csm 1.2 (Kafka 3.8.0)", "",
                                                "flow repl-us-west-us-east: us-west -> us-east: UNKNOWN"])
    assert (f"    ! not read: KafkaConnect repl-us-west-us-east/repl-us-west-us-east: HTTP 404: {client.state.url} does "
            "not serve /apis/kafka.strimzi.io/v1beta2/namespaces/repl-us-west-us-east/kafkaconnects/repl-us-west-us-east "
            "(the right context? the operator's CRDs at kafka.strimzi.io/v1beta2?)") in lines
    assert lines[-3:] == ["    ! CronJob replication-audit/kafka-replication-audit is missing from the cluster", "",
                          "unknown (exit 5): 1 flow, 1 unknown; 1 audit, 1 degraded"]


def test_rehearse_runs_from_the_installed_package(installed, project, tmp_path):
    """The dev stack's rehearsal, every line of its report (the runtime tier's one rehearsal of
    the dev stack through the command). The shipped pins (pom.xml, the engine's go.mod) give the
    same jars and kube-apiserver as the checkout: found in the caches those fill."""
    work = tmp_path / "work"
    done = command(installed, "rehearse", "stacks/dev.yaml", "--records", "5", "--keep", str(work), cwd=project,
                   timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (f"rehearsing stacks/dev.yaml in {work}; changed for this machine: one Connect replica per "
                        "Connect cluster (a worker each here); no audit CronJob (the audit runs on its own: "
                        "docs/audit.md); MirrorMaker 2's own topics at replication factor 1 (single-broker clusters)")
    # CSM 1.2's Connect runs Cloudera's Kafka build, which is not published: said before the start.
    assert lines[1] == ("not honoured here: operator.connect.version 3.8.0.1.2: the workers run Apache Kafka 3.8.0 here "
                        "(the release of its line)")
    assert re.fullmatch(r"2 Kafka cluster\(s\) up in \d+ s", lines[2])
    assert re.fullmatch(r"1 Connect worker\(s\), 3 connector\(s\) running \d+ s after the start", lines[3])
    assert re.fullmatch(r"     ok  repl-us-west-us-east: us-west/test\.rehearsal -> us-east/us-west\.test\.rehearsal: "
                        r"5/5 records, all within \d+\.\d s of the connectors running", lines[4])
    assert len(lines) == 5


RUNNER = '''"""The team's program under Pulumi's mocks, with the installed package's recorder."""
import json
import runpy
import sys

from infra.tools.render import RecordingMocks, under_mocks

config = json.loads(open(sys.argv[1]).read())
mocks = RecordingMocks()
program = runpy.run_path("__main__.py", run_name="team_program")
flows = under_mocks(lambda: program["main"]().flows, mocks, "orders-replication", "team", config, list(config))
print(json.dumps({"objects": sorted([r.type.split(":")[-1], r.name] for r in mocks.resources if r.is_kubernetes),
                  "components": sorted({r.type for r in mocks.resources if not r.is_kubernetes}), "flows": flows}))
'''


def test_the_components_in_a_program_of_the_team_s_own(installed, tmp_path):
    """docs/examples/single-flow, copied into a folder of its own: a program that declares one
    flow with ReplicationFlow and no topology file, run by the installed package under Pulumi's
    mocks (the real engine runs the checkout's program in the engine tier)."""
    from tests.support.material import material
    program = tmp_path / "orders-replication"
    shutil.copytree(ROOT / "docs" / "examples" / "single-flow", program)
    (program / "runner.py").write_text(RUNNER)
    (program / "config.json").write_text(json.dumps({
        "kafka-replication-example:us-west.password": "s3cret",
        "kafka-replication-example:us-west.caCert": material("us-west").ca_pem,
        "kafka-replication-example:us-east.caCert": material("us-east").ca_pem}))
    done = _run([str(installed / "python"), "runner.py", "config.json"], program, env=_env())
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [o for o in result["objects"] if o[0] in ("Namespace", "KafkaConnect", "KafkaConnector")] == [
        ["KafkaConnect", "orders/orders"], ["KafkaConnector", "orders/orders-checkpoint"],
        ["KafkaConnector", "orders/orders-heartbeat"], ["KafkaConnector", "orders/orders-source"],
        ["Namespace", "orders"]]
    assert result["components"] == ["kafka-replication:flow:ClusterAccess", "kafka-replication:flow:ConnectCluster",
                                    "kafka-replication:flow:MirrorConnectors", "kafka-replication:flow:ReplicationFlow",
                                    "kafka-replication:index:ReplicationFlow"]
    assert result["flows"]["orders"]["connectClusters"][0]["restUrl"] == "http://orders-connect-api.orders.svc:8083"
    assert "s3cret" not in done.stdout
