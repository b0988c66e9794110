"""The GitHub Actions workflows (.github/workflows, docs/workflow.md).

actionlint (built by tools/engine/build.sh at the pin of tools/engine/actionlint/go.mod) finds
nothing in them, and refuses a broken copy with its exact message; with shellcheck on the PATH it
checks every `run:` script too. Then what they do, read from the YAML: the diff step's command,
run for real under each exit code of the diff contract; the sticky comment's script, run by node
against a stand-in GitHub API; the preview matrix against the stacks at the repository's root;
the policy pack, the CLI version, the environments, the order of the deploys, concurrency and
the least permissions.

Without actionlint (or node) these tests skip, unless APISERVER_REQUIRED=1 (CI), where they fail.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.tools.rehearsal.apiserver import built, built_version
from tests.support.stacks import ROOT, unavailable

WORKFLOWS = ROOT / ".github" / "workflows"
MARKER = "<!-- kafka-replication-diff -->"
COMMENT_LIMIT = 65536  # characters GitHub takes in one comment
SAME_REPOSITORY = "github.event.pull_request.head.repo.full_name == github.repository"
SECRETS = {"PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE"}  # no long-lived Pulumi token: OpenID Connect
VARIABLES = {"PULUMI_ORGANIZATION"}
ACTIONS = ROOT / "tests" / "data" / "actions"  # the inputs of the actions actionlint does not know
# The step that exchanges the job's OpenID Connect token for a Pulumi Cloud one, before each run.
AUTH = {"name": "pulumi cloud token", "if": "vars.PULUMI_ORGANIZATION != ''", "uses": "pulumi/auth-actions@v2",
        "with": {"organization": "${{ vars.PULUMI_ORGANIZATION }}",
                 "requested-token-type": "urn:pulumi:token-type:access_token:organization",
                 "cloud-url": "${{ secrets.PULUMI_BACKEND_URL }}"}}
OIDC = {"contents": "read", "id-token": "write"}
# What GitHub runs a `run:` script with under `shell: bash`.
BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]


def load(name: str) -> dict[str, Any]:
    workflow: dict[str, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the key `on` as true.
    workflow["on"] = workflow.pop(True)
    return workflow


@pytest.fixture(scope="module")
def pr() -> dict[str, Any]:
    return load("pull-request.yml")


@pytest.fixture(scope="module")
def deploy() -> dict[str, Any]:
    return load("deploy.yml")


@pytest.fixture(scope="module")
def drift() -> dict[str, Any]:
    return load("drift.yml")


@pytest.fixture(scope="module")
def release() -> dict[str, Any]:
    return load("release.yml")


def step(job: dict[str, Any], *, name: str | None = None, uses: str | None = None) -> dict[str, Any]:
    """The one step of a job with that name, or using that action (any version)."""
    found = [s for s in job["steps"]
             if (name is not None and s.get("name") == name)
             or (uses is not None and s.get("uses", "").split("@")[0] == uses)]
    assert len(found) == 1, f"{len(found)} steps named {name or uses} in {[s.get('name') or s.get('uses') for s in job['steps']]}"
    return found[0]


def pulumi_steps(workflow: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Job id -> its pulumi/actions step."""
    return {job_id: step(job, uses="pulumi/actions") for job_id, job in workflow["jobs"].items()
            if any(s.get("uses", "").startswith("pulumi/actions@") for s in job["steps"])}


def stacks() -> set[str]:
    return {p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in ROOT.glob("Pulumi.*.yaml")}


# ------------------------------------------------------------------ actionlint

@pytest.fixture(scope="module")
def actionlint() -> Path:
    path = built("actionlint")
    if path is None:
        unavailable("no actionlint binary: run `tools/engine/build.sh actionlint` or `make engine` (docs/workflow.md)")
    assert path is not None
    return path


def lint(actionlint: Path, files: list[Path], shellcheck: str | None = None) -> subprocess.CompletedProcess[str]:
    """actionlint on files of one folder, run there: it names them as given."""
    options = [] if shellcheck is None else [f"-shellcheck={shellcheck}"]
    return subprocess.run([str(actionlint), "-no-color", "-oneline", *options, *(f.name for f in files)],
                          cwd=files[0].parent, capture_output=True, text=True, timeout=60)


def test_actionlint_is_the_pinned_release(actionlint):
    done = subprocess.run([str(actionlint), "-version"], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.splitlines()[0] == built_version("actionlint")


def test_actionlint_finds_nothing(actionlint):
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert [f.name for f in files] == ["deploy.yml", "drift.yml", "pull-request.yml", "release.yml"]
    done = lint(actionlint, files)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def broken_copy(tmp_path: Path, name: str, old: str, new: str) -> tuple[Path, list[str]]:
    text = (WORKFLOWS / name).read_text()
    assert text.count(old) == 1, old
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return path, path.read_text().splitlines()


def test_actionlint_refuses_a_broken_workflow(actionlint, tmp_path):
    """A job that needs one that does not exist, an unknown property of a context and an input
    the checkout action does not have (its inputs are actionlint's own copy of its action.yml):
    each refused with its line, column and rule. (The Pulumi actions' inputs, which actionlint
    v1.7.12 does not know at v7, are test_every_action_input_is_one_the_action_declares'.)"""
    deploy_copy, deploy_lines = broken_copy(tmp_path, "deploy.yml", "needs: dev", "needs: stage")
    pr_copy, pr_lines = broken_copy(tmp_path, "pull-request.yml", "BASE_REF: ${{ github.base_ref }}",
                                    "BASE_REF: ${{ github.base_reff }}")
    pr_copy.write_text(pr_copy.read_text().replace("fetch-depth: 0", "fetch-deep: 0", 1))
    pr_lines = pr_copy.read_text().splitlines()
    prod = deploy_lines.index("  prod:") + 1
    base = next(i for i, line in enumerate(pr_lines, 1) if "github.base_reff" in line)
    base_column = pr_lines[base - 1].index("github.base_reff") + 1
    pack = next(i for i, line in enumerate(pr_lines, 1) if "fetch-deep: 0" in line)
    pack_column = pr_lines[pack - 1].index("fetch-deep") + 1

    done = lint(actionlint, [deploy_copy, pr_copy], shellcheck="")  # shellcheck aside: not asked here
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3, done.stdout
    assert lines[0] == (f'deploy.yml:{prod}:3: job "prod" needs job "stage" which does not exist '
                        "in this workflow [job-needs]")
    (expression,) = [x for x in lines[1:] if '"base_reff"' in x]
    (checkout,) = [x for x in lines[1:] if '"fetch-deep"' in x]
    assert expression.startswith(f'pull-request.yml:{base}:{base_column}: property "base_reff" is not defined in '
                                 "object type {")
    assert expression.endswith("} [expression]")
    assert " base_ref: string; " in expression
    assert checkout.startswith(f'pull-request.yml:{pack}:{pack_column}: input "fetch-deep" is not defined in action '
                               '"actions/checkout@v6". available inputs are ')
    assert '"fetch-depth"' in checkout and checkout.endswith(" [action]")


def declared(action: str) -> tuple[set[str], set[str]]:
    """The inputs and the required inputs of an action actionlint does not know, as recorded in
    tests/data/actions from its action.yml at the release's tag."""
    (found,) = [yaml.safe_load(p.read_text()) for p in ACTIONS.glob("*.yaml")
                if yaml.safe_load(p.read_text())["action"] == action]
    return set(found["inputs"]), set(found["required"])


def input_problems(workflow: dict[str, Any]) -> list[str]:
    """Every `with:` key of a step using a recorded action that the action does not declare, and
    every required input missing; a step of an unrecorded version of such an action is one too."""
    recorded = {yaml.safe_load(p.read_text())["action"] for p in ACTIONS.glob("*.yaml")}
    problems = []
    for job_id, job in workflow["jobs"].items():
        for s in job["steps"]:
            uses = s.get("uses", "")
            if uses.split("@")[0] not in {r.split("@")[0] for r in recorded}:
                continue
            if uses not in recorded:
                problems.append(f"{job_id}: {uses}: no record of its inputs in tests/data/actions")
                continue
            inputs, required = declared(uses)
            problems += [f"{job_id}: {uses}: input {k!r} is not declared" for k in sorted(set(s.get("with", {})) - inputs)]
            problems += [f"{job_id}: {uses}: required input {k!r} missing" for k in sorted(required - set(s.get("with", {})))]
    return problems


def test_every_action_input_is_one_the_action_declares(pr, deploy, drift):
    for workflow in (pr, deploy, drift):
        assert input_problems(workflow) == []


def test_the_input_check_refuses_a_misspelt_input(deploy):
    broken = json.loads(json.dumps(deploy))
    step(broken["jobs"]["dev"], uses="pulumi/actions")["with"]["policyPack"] = "policy"
    del step(broken["jobs"]["prod"], uses="pulumi/auth-actions")["with"]["organization"]
    step(broken["jobs"]["prod"], uses="pulumi/actions")["uses"] = "pulumi/actions@v8"
    assert input_problems(broken) == ["dev: pulumi/actions@v7: input 'policyPack' is not declared",
                                      "prod: pulumi/auth-actions@v2: required input 'organization' missing",
                                      "prod: pulumi/actions@v8: no record of its inputs in tests/data/actions"]


def test_shellcheck_checks_the_run_scripts(actionlint, tmp_path):
    """With shellcheck on the PATH (GitHub's runners have it), actionlint hands it every `run:`
    script: an unquoted variable is reported. Without it actionlint skips that check silently."""
    cached = Path.home() / ".cache/kafka-replication/shellcheck/usr/bin/shellcheck"  # `make shellcheck`
    shellcheck = shutil.which("shellcheck") or (str(cached) if cached.exists() else None)
    if shellcheck is None:
        unavailable("no shellcheck on the PATH nor from `make shellcheck`: actionlint checks no run: script "
                    "(docs/workflow.md)")
    broken, lines = broken_copy(tmp_path, "pull-request.yml", 'cat diff.md >> "$GITHUB_STEP_SUMMARY"',
                                "cat diff.md >> $GITHUB_STEP_SUMMARY")
    done = lint(actionlint, [broken], shellcheck=shellcheck)
    assert done.returncode == 1
    assert "shellcheck reported issue in this script: SC2086:info:" in done.stdout
    assert "Double quote to prevent globbing and word splitting [shellcheck]" in done.stdout
    assert lint(actionlint, sorted(WORKFLOWS.glob("*.yml")), shellcheck=shellcheck).stdout == ""


# ------------------------------------------------------------------ the pull-request workflow

def test_pull_request_runs_on_pull_request_only(pr):
    # never pull_request_target: it would run a fork's code with the repository's secrets
    assert pr["on"] == {"pull_request": None}
    assert pr["concurrency"] == {"group": "pull-request-${{ github.event.pull_request.number }}",
                                 "cancel-in-progress": True}
    assert pr["defaults"] == {"run": {"shell": "bash"}}
    assert set(pr["jobs"]) == {"tests", "typecheck", "diff", "preview"}


def test_tests_job_runs_ci_with_its_toolchains_and_caches(pr):
    job = pr["jobs"]["tests"]
    assert step(job, uses="actions/checkout")["with"] == {"fetch-depth": 0}
    assert step(job, uses="actions/setup-python")["with"]["python-version"] == "3.11"
    java = step(job, uses="actions/setup-java")["with"]
    # Java 21 for Strimzi 1.2.0's CRD generator (infra/tools/rehearsal/crds.py), 17 the default (last).
    assert (java["distribution"], java["java-version"].split(), java["cache"]) == ("temurin", ["21", "17"], "maven")
    assert java["cache-dependency-path"].split() == ["pom.xml", "spark/pom.xml", "tools/strimzi-crds/pom.xml"]
    go = step(job, uses="actions/setup-go")["with"]
    assert go["cache"] is True and go["cache-dependency-path"] == "tools/**/go.sum"
    assert step(job, uses="actions/cache")["with"]["path"] == "~/.cache/kafka-replication"
    assert step(job, name="virtualenv, engine binaries, CRDs") == {
        "name": "virtualenv, engine binaries, CRDs", "run": "make venv engine prometheus-crds grafana-crds strimzi-crds",
        "env": {"APISERVER_REQUIRED": "1"}}
    assert job["steps"][-1] == {"name": "test suite",
                                "run": 'sudo --preserve-env env "PATH=$PATH" "HOME=$HOME" bash .ci/run'}
    assert "APISERVER_REQUIRED=1 make test" in (ROOT / ".ci" / "run").read_text()


def test_setup_go_covers_every_pinned_module(pr):
    wanted = step(pr["jobs"]["tests"], uses="actions/setup-go")["with"]["go-version"]
    minor = tuple(map(int, wanted.split(".")))
    for mod in ROOT.glob("tools/**/go.mod"):
        go = re.search(r"^go (\d+)\.(\d+)", mod.read_text(), re.M)
        assert go is not None, mod
        assert (int(go[1]), int(go[2])) <= minor, f"{mod}: go {go[1]}.{go[2]} above setup-go's {wanted}"


def test_typecheck_is_its_own_job(pr):
    job = pr["jobs"]["typecheck"]
    assert step(job, name="make typecheck")["run"] == "make typecheck"
    assert "typecheck:" in (ROOT / "Makefile").read_text()


def test_diff_step_command(pr):
    job = pr["jobs"]["diff"]
    assert step(job, uses="actions/checkout")["with"] == {"fetch-depth": 0}  # origin/<base> is there
    names = [s.get("name") for s in job["steps"]]
    assert names.index("virtualenv") < names.index("kafka-replication diff")
    assert step(job, name="virtualenv")["run"] == "make venv"
    diff = step(job, name="kafka-replication diff")
    assert diff["id"] == "diff"
    # the base branch reaches the shell as a variable, never spliced into the script
    assert diff["env"] == {"BASE_REF": "${{ github.base_ref }}"}
    assert diff["run"].splitlines() == [
        "set +e",
        '.venv/bin/kafka-replication diff --base "origin/$BASE_REF" --output markdown > diff.md',
        "code=$?",
        "set -e",
        'echo "exit-code=$code" >> "$GITHUB_OUTPUT"',
        '[ "$code" -le 1 ]',
    ]
    assert step(job, name="diff in the run's summary")["if"] == "always()"


@pytest.mark.parametrize("code, passes", [(0, True), (1, True), (2, False), (3, False)])
def test_diff_step_passes_on_no_change_and_changes_only(pr, tmp_path, code, passes):
    """The step's script as GitHub runs it, the command replaced by one that exits as the diff
    contract says: 0 no change, 1 changes, 2 invalid input, 3 internal error."""
    diff = step(pr["jobs"]["diff"], name="kafka-replication diff")
    script = tmp_path / "step.sh"
    script.write_text(diff["run"])
    fake = tmp_path / ".venv" / "bin" / "kafka-replication"
    fake.parent.mkdir(parents=True)
    fake.write_text(f'#!/bin/sh\necho "{MARKER}"\necho "$*"\nexit {code}\n')
    fake.chmod(0o755)
    output = tmp_path / "github-output"
    done = subprocess.run([*BASH, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin", "BASE_REF": "main", "GITHUB_OUTPUT": str(output)})
    assert (done.returncode == 0) is passes, done.stderr
    assert output.read_text() == f"exit-code={code}\n"
    assert (tmp_path / "diff.md").read_text() == f"{MARKER}\ndiff --base origin/main --output markdown\n"


# ------------------------------------------------------------------ the sticky comment

NODE_HARNESS = r"""
// The step's script as actions/github-script runs it (the body of an async function of
// require, github, context, core), against a stand-in of the GitHub API that records each call.
const fs = require('fs');
const [scriptFile, commentsFile] = process.argv.slice(2);
const comments = JSON.parse(fs.readFileSync(commentsFile, 'utf8'));
const calls = [];
const github = {
  paginate: async (method, args) => { calls.push(['paginate', method, args]); return comments; },
  rest: { issues: {
    listComments: 'issues.listComments',
    updateComment: async (args) => { calls.push(['updateComment', args]); return { data: { id: args.comment_id } }; },
    createComment: async (args) => { calls.push(['createComment', args]); return { data: { id: 1000 } }; },
  } },
};
const context = { repo: { owner: 'acme', repo: 'kafka-replication' }, issue: { number: 25 } };
const core = { setFailed: (message) => calls.push(['setFailed', message]), info: () => {} };
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
new AsyncFunction('require', 'github', 'context', 'core', fs.readFileSync(scriptFile, 'utf8'))(require, github, context, core)
  .then(() => console.log(JSON.stringify(calls)), (error) => { console.error(error); process.exit(1); });
"""


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        unavailable("no node: the sticky comment's script is run by node (GitHub's runners have it)")
    assert found is not None
    return found


def comment(pr: dict[str, Any], node: str, tmp_path: Path, body: str, comments: list[dict[str, Any]]) -> list[Any]:
    sticky = step(pr["jobs"]["diff"], name="sticky comment")
    (tmp_path / "script.js").write_text(sticky["with"]["script"])
    (tmp_path / "harness.js").write_text(NODE_HARNESS)
    (tmp_path / "comments.json").write_text(json.dumps(comments))
    (tmp_path / "diff.md").write_text(body)
    done = subprocess.run([node, "harness.js", "script.js", "comments.json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    calls: list[Any] = json.loads(done.stdout)
    return calls


def test_sticky_comment_step(pr):
    sticky = step(pr["jobs"]["diff"], name="sticky comment")
    assert sticky["uses"] == "actions/github-script@v8"
    assert sticky["if"] == SAME_REPOSITORY  # a fork's token cannot comment
    assert f"const marker = '{MARKER}';" in sticky["with"]["script"]


BODY = f"{MARKER}\n## kafka-replication diff\n\nNo change.\n"
LISTED = ["paginate", "issues.listComments",
          {"owner": "acme", "repo": "kafka-replication", "issue_number": 25, "per_page": 100}]


def test_sticky_comment_created_once(pr, node, tmp_path):
    others = [{"id": 5, "user": {"login": "octocat"}, "body": f"{MARKER}\nquoted by a person"},
              {"id": 6, "user": {"login": "github-actions[bot]"}, "body": "another workflow's comment"}]
    assert comment(pr, node, tmp_path, BODY, others) == [
        LISTED, ["createComment", {"owner": "acme", "repo": "kafka-replication", "issue_number": 25, "body": BODY}]]


def test_sticky_comment_updated_on_each_push(pr, node, tmp_path):
    ours = {"id": 7, "user": {"login": "github-actions[bot]"}, "body": f"{MARKER}\nthe push before"}
    assert comment(pr, node, tmp_path, BODY, [ours]) == [
        LISTED, ["updateComment", {"owner": "acme", "repo": "kafka-replication", "comment_id": 7, "body": BODY}]]


def test_sticky_comment_refuses_what_it_could_not_find_again_or_post(pr, node, tmp_path):
    unmarked = comment(pr, node, tmp_path, "## kafka-replication diff\n", [])
    assert unmarked == [["setFailed", f"diff.md does not start with {MARKER}: it would not be found again"]]
    long = MARKER + "\n" + "x" * COMMENT_LIMIT
    assert comment(pr, node, tmp_path, long, []) == [
        ["setFailed", f"diff.md has {len(long)} characters: a comment holds {COMMENT_LIMIT}"]]


# ------------------------------------------------------------------ pulumi preview and up

def test_preview_matrix_is_every_stack(pr):
    job = pr["jobs"]["preview"]
    assert set(job["strategy"]["matrix"]["stack"]) == stacks() == {"dev", "prod", "regions"}
    assert len(job["strategy"]["matrix"]["stack"]) == len(stacks())
    assert job["strategy"]["fail-fast"] is False
    assert job["if"] == SAME_REPOSITORY  # a fork's run gets no secrets
    preview = step(job, uses="pulumi/actions")
    assert preview["uses"] == "pulumi/actions@v7"
    assert {k: preview["with"][k] for k in ("command", "stack-name", "comment-on-pr")} == {
        "command": "preview", "stack-name": "${{ matrix.stack }}", "comment-on-pr": True}


def test_every_pulumi_run_applies_the_policy_pack_at_the_engine_tiers_cli(pr, deploy, drift):
    """Each run: the policy pack, the engine tier's CLI, the backend, the passphrase and no
    long-lived token: on Pulumi Cloud the step before exchanges the job's OpenID Connect token
    (`id-token: write`) for a short-lived one."""
    jobs = {**{f"pr/{j}": job for j, job in pr["jobs"].items()}, **{f"deploy/{j}": job for j, job in deploy["jobs"].items()},
            **{f"drift/{j}": job for j, job in drift["jobs"].items()}}
    runs = {**{f"pr/{j}": s for j, s in pulumi_steps(pr).items()},
            **{f"deploy/{j}": s for j, s in pulumi_steps(deploy).items()},
            **{f"drift/{j}": s for j, s in pulumi_steps(drift).items()}}
    assert set(runs) == {"pr/preview", "deploy/dev", "deploy/prod", "drift/drift"}
    cli = built_version("pulumi").removeprefix("v")
    for where, run in runs.items():
        assert run["uses"] == "pulumi/actions@v7", where
        assert run["with"]["policyPacks"] == "policy", where
        assert str(run["with"]["pulumi-version"]) == cli, where
        assert run["with"]["cloud-url"] == "${{ secrets.PULUMI_BACKEND_URL }}", where
        assert run["env"] == {"PULUMI_CONFIG_PASSPHRASE": "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}"}, where
        steps = jobs[where]["steps"]
        assert steps[steps.index(run) - 1] == AUTH, where
        assert jobs[where]["permissions"]["id-token"] == "write", where


def test_program_and_policy_pack_run_in_the_virtualenv_the_jobs_make(pr, deploy):
    """Every job that runs pulumi runs `make venv` first: the test level, the only lock that
    holds both the program's libraries and the policy pack's (pulumi-policy)."""
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["runtime"]["options"]["virtualenv"] == ".venv"
    pack = ROOT / "policy"
    options = yaml.safe_load((pack / "PulumiPolicy.yaml").read_text())["runtime"]["options"]
    assert (pack / options["virtualenv"]).resolve() == ROOT / ".venv"
    test_lock = (ROOT / "requirements" / "test.txt").read_text().splitlines()
    deploy_lock = (ROOT / "requirements" / "deploy.txt").read_text().splitlines()
    pins = [line for line in (pack / "requirements.txt").read_text().splitlines() if line and line[0] != "#"]
    assert pins and all(pin in test_lock for pin in pins)
    assert not any(pin in deploy_lock for pin in pins)  # why not `make venv-deploy`
    jobs = [pr["jobs"]["preview"], deploy["jobs"]["dev"], deploy["jobs"]["prod"]]
    for job in jobs:
        names = [s.get("name") or s["uses"] for s in job["steps"]]
        assert names.index("virtualenv") < names.index("pulumi/actions@v7")
        assert step(job, name="virtualenv")["run"] == "make venv"


def test_deploy_dev_then_prod_behind_their_environments(deploy):
    assert deploy["on"] == {"push": {"branches": ["main"]}, "workflow_dispatch": None}
    assert "concurrency" not in deploy  # a workflow-wide group could cancel a running update
    dev, prod = deploy["jobs"]["dev"], deploy["jobs"]["prod"]
    assert list(deploy["jobs"]) == ["dev", "prod"]
    assert (dev["environment"], prod["environment"]) == ("dev", "production")
    assert "needs" not in dev and prod["needs"] == "dev"
    assert dev["concurrency"] == {"group": "pulumi-up-dev", "cancel-in-progress": False}
    assert prod["concurrency"] == {"group": "pulumi-up-prod", "cancel-in-progress": False}
    for stack, job in (("dev", dev), ("prod", prod)):
        up = step(job, uses="pulumi/actions")
        assert (up["with"]["command"], up["with"]["stack-name"], up["with"]["refresh"]) == ("up", stack, True)
        assert "comment-on-pr" not in up["with"]
        assert stack in stacks()


def test_least_permissions(pr, deploy, drift, release):
    assert pr["permissions"] == deploy["permissions"] == drift["permissions"] == release["permissions"] == {
        "contents": "read"}
    # Only the release's last job writes, and only the release: it builds nothing itself.
    assert {j: job.get("permissions") for j, job in release["jobs"].items()} == {
        "build": None, "publish": {"contents": "write"}}
    assert [s.get("uses", s.get("name")) for s in release["jobs"]["publish"]["steps"]] == [
        "actions/download-artifact@v4", "GitHub release"]
    commenting = {"contents": "read", "pull-requests": "write"}
    assert {j: job.get("permissions") for j, job in pr["jobs"].items()} == {
        "tests": None, "typecheck": None, "diff": commenting, "preview": {**commenting, **OIDC}}
    assert {j: job.get("permissions") for j, job in deploy["jobs"].items()} == {"dev": OIDC, "prod": OIDC}
    assert {j: job.get("permissions") for j, job in drift["jobs"].items()} == {"drift": OIDC}


def test_drift_is_checked_every_day_on_every_deployed_stack(drift, deploy):
    """A preview with refresh and expect-no-changes of each stack deploy.yml deploys, on a
    schedule and by hand: it fails on anything changed by hand on the clusters, or anything on
    main never deployed; it changes nothing."""
    assert drift["on"] == {"schedule": [{"cron": "23 6 * * *"}], "workflow_dispatch": None}
    (job,) = drift["jobs"].values()
    deployed = [step(j, uses="pulumi/actions")["with"]["stack-name"] for j in deploy["jobs"].values()]
    assert job["strategy"] == {"fail-fast": False, "matrix": {"stack": deployed}} and deployed == ["dev", "prod"]
    assert "environment" not in job  # no approval waits on a read
    check = step(job, uses="pulumi/actions")
    assert {k: check["with"][k] for k in ("command", "stack-name", "refresh", "expect-no-changes")} == {
        "command": "preview", "stack-name": "${{ matrix.stack }}", "refresh": True, "expect-no-changes": True}
    assert step(job, name="virtualenv")["run"] == "make venv"


def test_a_release_runs_on_its_tag_only_and_checks_the_tree_first(release):
    """Pushed tags `v*`, nothing else; the build's first script is the tree check (tools/release.py
    check), before anything is built; the history is whole (setuptools-scm reads the tag); the
    build job's scripts are run for real by tests/runtime/test_installed.py."""
    assert release["on"] == {"push": {"tags": ["v*"]}}
    assert release["concurrency"] == {"group": "release-${{ github.ref_name }}", "cancel-in-progress": False}
    build = release["jobs"]["build"]
    assert step(build, uses="actions/checkout")["with"] == {"fetch-depth": 0}
    assert [s["run"] for s in build["steps"] if "run" in s][0] == 'python3 tools/release.py check "$GITHUB_REF_NAME"'
    assert release["jobs"]["publish"]["needs"] == "build"


def test_secrets_are_the_documented_ones():
    doc = (ROOT / "docs" / "workflow.md").read_text()
    used, variables = set(), set()
    for path in WORKFLOWS.glob("*.yml"):
        used |= set(re.findall(r"\bsecrets\.([A-Za-z_][A-Za-z0-9_]*)", path.read_text()))
        variables |= set(re.findall(r"\bvars\.([A-Za-z_][A-Za-z0-9_]*)", path.read_text()))
    assert (used, variables) == (SECRETS, VARIABLES)
    for name in sorted(SECRETS | VARIABLES):
        assert f"`{name}`" in doc, name
    assert "PULUMI_ACCESS_TOKEN" not in "".join(p.read_text() for p in WORKFLOWS.glob("*.yml"))
