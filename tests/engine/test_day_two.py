"""Day two on the engine tier: the runbook's commands of docs/operations.md, run as written
against a real kube-apiserver holding a deployed stack, with kubectl of the server's release and
the Pulumi CLI's engine with the program."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from infra.core.names import SOURCE_ACCESS_UID
from infra.tools.rehearsal.apiserver import kubectl_binary
from tests.engine.harness import REPLACE, UPDATE, Engine, Run
from tests.engine.test_engine import Single, one_cluster, short, without_waiting
from tests.support import runbooks
from tests.support.stacks import ROOT, unavailable

OPERATIONS = runbooks.OPERATIONS


def runbook(section: str) -> list[str]:
    """The commands of the first `sh` block under the heading `section` of docs/operations.md, as
    tests/support/runbooks.py reads them (comments and blank lines left out)."""
    found = [c for c in runbooks.commands(OPERATIONS.read_text()) if c.headings[:1] == (section,)]
    assert found, f"docs/operations.md, {section}: no sh block"
    first = min(c.line for c in found)
    return [c.text for c in found if c.line == first]


def run_command(line: str, engine: Engine, one: Single, cwd: Path | None = None,
                env: dict[str, str] | None = None) -> Run | subprocess.CompletedProcess[str]:
    """A runbook line: kubectl for real with the stack's kubeconfig (a pipe of kubectl commands
    through the shell, as a person would type it), `pulumi config set` through the shell in the
    stack's project (with `env`, the variables the runbook expects set), or `pulumi
    preview|up` with the flags the runbook may use, through the engine with the program."""
    argv = shlex.split(line, comments=True)
    if argv[:3] == ["pulumi", "config", "set"]:
        done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=120, cwd=one.project,
                              env={**engine.env(one.project, one.kubeconfig), **(env or {})})
        assert done.returncode == 0, (line, done.stdout, done.stderr)
        return done
    if argv[0] == "kubectl":
        binary = kubectl_binary()
        if binary is None:
            unavailable("no kubectl: run tools/engine/build.sh or `make engine` (docs/engine.md)")
        env = {**os.environ, "KUBECONFIG": str(one.kubeconfig), "PATH": f"{binary.parent}{os.pathsep}{os.environ['PATH']}"}
        piped = "|" in argv
        assert not piped or all(part.split()[0] == "kubectl" for part in line.split(" | ")), line
        done = subprocess.run(["bash", "-o", "pipefail", "-c", line] if piped else [str(binary), *argv[1:]],
                              capture_output=True, text=True, timeout=60, env=env, cwd=cwd)
        assert done.returncode == 0, (line, done.stdout, done.stderr)
        return done
    if argv[:3] == ["python", "-m", "infra"]:
        # The project's own command, run from `cwd` (where the runbook's files are), exit 1 when
        # it reports changes (docs/diff.md).
        done = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, timeout=300, cwd=cwd,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode in (0, 1) and done.stderr == "", (line, done.stdout, done.stderr)
        return done
    assert argv[0] == "pulumi" and argv[1] in ("preview", "up"), f"not a runbook command the test runs: {line}"
    flags = argv[2:]
    refresh = "--refresh" in flags
    stack = flags[flags.index("--stack") + 1]
    assert sorted(set(flags) - {"--refresh", "--stack", stack}) == [], f"flags the test does not run: {line}"
    return engine.run(argv[1], one.project, stack, kubeconfig=one.kubeconfig, refresh=refresh)


def test_state_and_replicas_changed_by_hand_are_seen_with_refresh_and_put_back(engine, tmp_path):
    """docs/operations.md, "Pause, resume and drift", as written: a connector paused and a
    Connect cluster scaled with kubectl; a plain preview sees nothing; `pulumi preview --refresh`
    shows exactly the two updates; `pulumi up --refresh` puts `running` and one replica back,
    owned by the program's field manager again."""
    topology = yaml.safe_load(without_waiting("dev", tmp_path).read_text())
    namespace, name = "repl-us-west-us-east", "repl-us-west-us-east"
    connector = f"/apis/kafka.strimzi.io/v1beta2/namespaces/{namespace}/kafkaconnectors/{name}-source"
    connect = f"/apis/kafka.strimzi.io/v1beta2/namespaces/{namespace}/kafkaconnects/{name}"
    commands = runbook("Pause, resume and drift")
    assert [c.split()[:2] for c in commands] == [["kubectl", "-n"], ["kubectl", "-n"], ["pulumi", "preview"],
                                                 ["pulumi", "up"]]
    with one_cluster(engine, tmp_path, topology, "drift") as one:
        up = engine.run("up", one.project, "dev", kubeconfig=one.kubeconfig)
        assert up.code == 0, up.output
        deployed = one.client.request("GET", connector)[1]
        assert deployed["spec"]["state"] == "running"
        for line in commands[:2]:
            run_command(line, engine, one)
        assert one.client.request("GET", connector)[1]["spec"]["state"] == "paused"
        assert one.client.request("GET", connect)[1]["spec"]["replicas"] == 5
        plain = engine.run("preview", one.project, "dev", kubeconfig=one.kubeconfig)
        preview = run_command(commands[2], engine, one)
        applied = run_command(commands[3], engine, one)
        after_connector = one.client.request("GET", connector)[1]
        after_connect = one.client.request("GET", connect)[1]
    assert plain.code == 0 and plain.changes() == {}, plain.output
    expected = {f"kubernetes:kafka.strimzi.io/v1beta2:KafkaConnector::{namespace}/{name}-source": UPDATE,
                f"kubernetes:kafka.strimzi.io/v1beta2:KafkaConnect::{namespace}/{name}": UPDATE}
    assert isinstance(preview, Run) and isinstance(applied, Run)
    assert preview.code == 0 and applied.code == 0, (preview.output, applied.output)
    assert short(preview.changes()) == expected
    assert short(applied.changes()) == expected
    assert after_connector["spec"]["state"] == "running"
    assert after_connect["spec"]["replicas"] == 3
    assert owner(after_connector, "f:state").startswith("pulumi")
    assert owner(after_connect, "f:replicas").startswith("pulumi")


def owner(obj: dict, field: str) -> str:
    """The field manager that owns `spec.<field>` (managedFields' fieldsV1)."""
    owners = [m["manager"] for m in obj["metadata"].get("managedFields", [])
              if field in (m.get("fieldsV1") or {}).get("f:spec", {})]
    assert len(owners) == 1, (field, obj["metadata"].get("managedFields"))
    return owners[0]


def test_a_rotated_source_password_restarts_exactly_the_connectors_that_read_it(engine, tmp_path):
    """Rotation as one `pulumi up` (docs/operations.md#credential-rotation, its block run as
    written): the source's password changed in the stack's secret config. The source Secret (and the audit's) is replaced (a new uid from the API
    server), and exactly the connectors that read it change, through their
    `kafka-replication.source-access.uid`: Strimzi sends their config and Connect restarts them,
    reading the new password. The Connect cluster itself is left alone (its own credentials are
    the target's), and no value derived from the password appears anywhere."""
    topology = yaml.safe_load(without_waiting("dev", tmp_path).read_text())
    namespace = "repl-us-west-us-east"
    base = f"/apis/kafka.strimzi.io/v1beta2/namespaces/{namespace}/kafkaconnectors/{namespace}"
    secret = f"/api/v1/namespaces/{namespace}/secrets/source-us-west"
    with one_cluster(engine, tmp_path, topology, "rotation") as one:
        up = engine.run("up", one.project, "dev", kubeconfig=one.kubeconfig)
        assert up.code == 0, up.output
        uid_before = one.client.request("GET", secret)[1]["metadata"]["uid"]
        before = {k: one.client.request("GET", f"{base}-{k}")[1]["spec"]["config"][SOURCE_ACCESS_UID]
                  for k in KINDS}
        # docs/operations.md's block, as written, with the new password in $NEW_PASSWORD.
        config_set, preview_line, up_line = runbook("Credential rotation")
        run_command(config_set, engine, one, env={"NEW_PASSWORD": ROTATED})
        preview = run_command(preview_line, engine, one)
        applied = run_command(up_line, engine, one)
        assert isinstance(preview, Run) and isinstance(applied, Run)
        uid_after = one.client.request("GET", secret)[1]["metadata"]["uid"]
        after = {k: one.client.request("GET", f"{base}-{k}")[1]["spec"]["config"][SOURCE_ACCESS_UID] for k in KINDS}
        state = engine.state_text(one.project)
    assert before == {k: uid_before for k in KINDS}
    assert after == {k: uid_after for k in KINDS} and uid_after != uid_before
    assert preview.code == 0 and applied.code == 0, (preview.output, applied.output)
    expected = {f"kubernetes:core/v1:Secret::{namespace}/source-us-west": REPLACE,
                **{f"kubernetes:kafka.strimzi.io/v1beta2:KafkaConnector::{namespace}/{namespace}-{k}": UPDATE
                   for k in KINDS},
                **ROTATION_AUDIT}
    assert short(applied.changes()) == expected
    # The preview lists the replaced Secrets only: the new Secret's uid is the API server's, known
    # once it is created, so the connectors' change is not seen before `pulumi up` makes it
    # (docs/operations.md#credential-rotation says so).
    assert short(preview.changes()) == {k: v for k, v in expected.items() if ":Secret::" in k}
    assert ROTATED not in state and ROTATED not in applied.output + preview.output


KINDS = ("source", "checkpoint", "heartbeat")
ROTATED = "rotated-Us-West-9d2e"
# The audit reads the source with the same password: its own credentials Secret is replaced too.
ROTATION_AUDIT = {"kubernetes:core/v1:Secret::replication-audit/kafka-replication-audit-us-west": REPLACE}


def test_connect_replicas_scaled_as_the_runbook_says(engine, tmp_path):
    """docs/operations.md, "Scaling a running flow", as written: the diff of the two topology
    files says the scale-down and its rebalance delay; the preview and the update change the
    KafkaConnect alone, and the server holds the new replicas."""
    topology = yaml.safe_load(without_waiting("dev", tmp_path).read_text())
    namespace, name = "repl-us-west-us-east", "repl-us-west-us-east"
    commands = runbook("Scaling a running flow")
    assert [c.split()[:2] for c in commands] == [["python", "-m"], ["pulumi", "preview"], ["pulumi", "up"]]
    work = tmp_path / "work"
    (work / "stacks").mkdir(parents=True)
    with one_cluster(engine, tmp_path, topology, "scaling") as one:
        up = engine.run("up", one.project, "dev", kubeconfig=one.kubeconfig)
        assert up.code == 0, up.output
        (work / "stacks" / "dev.yaml").write_text(one.topology.read_text())
        # docs/operations.md, "Checking the endpoint": its kubectl line, as written, on the deployed
        # stack (the jsonpath's escaped dot included).
        exporter_line = next(c.text for c in runbooks.commands(OPERATIONS.read_text())
                             if c.headings[-1:] == ("Checking the endpoint",) and c.text.startswith("kubectl"))
        exporter = run_command(exporter_line, engine, one)
        served = one.client.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/connect-metrics")[1]
        topology["operator"]["connect"]["replicas"] = 2
        (work / "stacks" / "dev.next.yaml").write_text(yaml.safe_dump(topology, sort_keys=False))
        one.topology.write_text(yaml.safe_dump(topology, sort_keys=False))
        diff, preview, applied = (run_command(line, engine, one, cwd=work) for line in commands)
        connect = one.client.request("GET", f"/apis/kafka.strimzi.io/v1beta2/namespaces/{namespace}/kafkaconnects/{name}")[1]
    assert isinstance(diff, subprocess.CompletedProcess) and diff.returncode == 1
    assert (f"! Connect scales — flow {namespace}, KafkaConnect {namespace}/{name}: Connect scales from 3 to 2 workers; "
            "the tasks are rebalanced (no pod rolls): the removed workers' tasks wait 300 s") in diff.stdout
    assert isinstance(preview, Run) and isinstance(applied, Run)
    expected = {f"kubernetes:kafka.strimzi.io/v1beta2:KafkaConnect::{namespace}/{name}": UPDATE}
    assert short(preview.changes()) == short(applied.changes()) == expected, (preview.output, applied.output)
    assert connect["spec"]["replicas"] == 2
    assert isinstance(exporter, subprocess.CompletedProcess)
    assert exporter.stdout == served["data"]["metrics-config.yml"]
    assert yaml.safe_load(exporter.stdout)["rules"][0]["labels"]["flow"] == namespace
