"""Day two on the engine tier: the runbook's commands of docs/operations.md, run as written
against a real kube-apiserver holding a deployed stack, with kubectl of the server's release and
the Pulumi CLI's engine with the program."""

from __future__ import annotations

import base64
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import yaml
from cryptography.hazmat.primitives import serialization

from infra.core.names import SOURCE_ACCESS_UID, SOURCE_FILES_UID
from infra.tools.rehearsal.apiserver import kubectl_binary
from tests.engine.harness import REPLACE, UPDATE, Engine, Run
from tests.engine.test_engine import Single, one_cluster, short, without_waiting
from tests.support import runbooks
from tests.support.processes import run_kept
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


def typed(line: str, engine: Engine, one: Single) -> subprocess.CompletedProcess[str]:
    """A runbook line given to bash as a person types it, in the stack's project directory (its
    topology at stacks/dev.yaml, its one stack selected), with the stack's kubeconfig: `pulumi`
    the CLI itself, except `preview` and `up`, which tests/engine/driver.py runs with the program
    served inline (no Python language host here, as Engine.run); `python` the suite's
    interpreter; kubectl of the server's release; jq the machine's."""
    binary = kubectl_binary()
    if binary is None:
        unavailable("no kubectl: run tools/engine/build.sh or `make engine` (docs/engine.md)")
    shims = one.project / ".runbook-bin"
    if not shims.exists():
        shims.mkdir()
        (shims / "python").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
        (shims / "pulumi").write_text(PULUMI_SHIM.format(python=sys.executable, pulumi=str(engine.pulumi),
                                                         root=str(ROOT)))
        for shim in shims.iterdir():
            shim.chmod(0o755)
    env = engine.env(one.project, one.kubeconfig)
    env.update({"PATH": os.pathsep.join([str(shims), str(binary.parent), env["PATH"]]), "PYTHONPATH": str(ROOT)})
    return run_kept(["bash", "-o", "pipefail", "-c", line], timeout=900, cwd=one.project, env=env)


PULUMI_SHIM = '''#!{python}
import os, subprocess, sys
args = sys.argv[1:]
if args[:1] in (["preview"], ["up"]):
    flags = args[1:]
    if "--stack" in flags:
        i = flags.index("--stack")
        stack = flags[i + 1]
        del flags[i:i + 2]
    else:
        stack = subprocess.run(["{pulumi}", "stack", "--show-name"], capture_output=True, text=True,
                               check=True).stdout.strip()
    if set(flags) - {{"--refresh"}}:
        sys.exit("not a runbook flag the tests run: " + " ".join(flags))
    here = os.getcwd()
    os.chdir("{root}")
    os.execv("{python}", ["{python}", "-m", "tests.engine.driver", args[0], "--dir", here, "--stack", stack, *flags])
os.execv("{pulumi}", ["{pulumi}", *args])
'''


def test_the_opening_lines_and_the_readiness_job_run_as_written(engine, tmp_path):
    """docs/operations.md's opening block, its first two lines as written in the dev stack's
    project: validate, preview and up in one line (the stack's objects on the server after it);
    the flow's failover output read with jq, exactly what the stack exports. (Its third line, the
    readiness check, needs the clusters: tests/runtime/test_runtime_failover.py runs it.) Then the
    readiness Job's line: the Job made from the deployed CronJob, its command replaced, created on
    the server (no kubelet here runs it: tests/audit/test_packaging.py runs that command in an
    image-like environment)."""
    topology = yaml.safe_load(without_waiting("dev", tmp_path).read_text())
    deploy_line, output_line, _ = runbooks.block("Operating replication", "python -m infra validate stacks/dev.yaml")
    assert output_line == "pulumi stack output flows --json | jq '.[\"repl-us-west-us-east\"].failover'"
    with one_cluster(engine, tmp_path, topology, "opening") as one:
        (one.project / "stacks").mkdir()
        (one.project / "stacks" / "dev.yaml").symlink_to(one.topology)
        deployed = typed(deploy_line, engine, one)
        status, connector = one.client.request(
            "GET", "/apis/kafka.strimzi.io/v1beta2/namespaces/repl-us-west-us-east/kafkaconnectors/"
                   "repl-us-west-us-east-source")
        shown = typed(output_line, engine, one)
        exported = json.loads(engine.cli("stack", "output", "flows", "--json", cwd=one.project).stdout)
        job_line = runbooks.block("Is the flow ready? The readiness check", "kubectl -n replication-audit create job")[0]
        made = typed(job_line, engine, one)
        job = one.client.request("GET", "/apis/batch/v1/namespaces/replication-audit/jobs/failover-check")[1]
        cron = one.client.request("GET", "/apis/batch/v1/namespaces/replication-audit/cronjobs/kafka-replication-audit")[1]
    assert deployed.returncode == 0, deployed.stdout[-3000:] + deployed.stderr[-3000:]
    assert deployed.stdout.startswith("stacks/dev.yaml: ok ("), deployed.stdout[:500]
    assert status == 200 and connector["spec"]["state"] == "running"
    assert shown.returncode == 0, shown.stderr
    assert made.returncode == 0 and made.stdout == "job.batch/failover-check created\n", made.stdout + made.stderr
    (container,) = job["spec"]["template"]["spec"]["containers"]
    (scheduled,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["python3", "-m", "spark.audit", "failover", "--config",
                                    "/etc/replication-audit/config/audit.json", "--flow", "repl-us-west-us-east",
                                    "--procedure", "continuous"]
    assert {**container, "command": scheduled["command"]} == scheduled  # the image, mounts and env of the audit's
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    assert json.loads(shown.stdout) == exported["repl-us-west-us-east"]["failover"] == {
        "procedure": "cutoff", "procedures": ["continuous", "cutoff", "disaster"], "waitSeconds": 240,
        "topics": ["(?!(?:.*[\\-\\.]internal|.*\\.replica|__.*)$)(?:test.*)"]}


REPLAY = "Step by step: replay from an offset"


def test_the_replay_steps_run_as_written(engine, tmp_path):
    """docs/operations.md, "Step by step: replay from an offset", its pulumi and validate lines as
    written, on the section's whole example (docs/examples/offsets/topology.yaml, whose flow the
    section shows) as the stack's stacks/dev.yaml: validate; preview and up put the source
    connector stopped with the alter request (the operator's annotation, the ConfigMap of the
    offsets); then, the connector running and the request removed, `pulumi up` takes the
    annotation and the ConfigMap away. No operator runs on this tier, so nothing carries the
    request out: tests/runtime/test_runtime_offsets.py runs the section's kubectl lines as written
    where the stand-in operator does, on a real worker."""
    example = yaml.safe_load((ROOT / "docs" / "examples" / "offsets" / "topology.yaml").read_text())
    section = OPERATIONS.read_text().split(f"### {REPLAY}\n", 1)[1]
    shown = yaml.safe_load(section.split("```yaml\n", 1)[1].split("```", 1)[0])["flows"][0]
    assert shown == {k: v for k, v in example["flows"][0].items() if k != "groups"}  # the section's flow is the example's
    example["operator"]["readiness"] = {"wait": False}
    lines = runbooks.block(REPLAY, "python -m infra validate stacks/dev.yaml")
    assert [line.split("#")[0].strip() for line in lines] == [
        "python -m infra validate stacks/dev.yaml", "pulumi preview && pulumi up",
        "kubectl -n orders get kafkaconnector orders-source -o jsonpath='{.metadata.annotations}'",
        "kubectl -n orders get kafkaconnector orders-source -o jsonpath='{.status.conditions}'", "pulumi up"]
    connector = "/apis/kafka.strimzi.io/v1/namespaces/orders/kafkaconnectors/orders-source"
    request_map = "/api/v1/namespaces/orders/configmaps/orders-source-offsets-alter"
    with one_cluster(engine, tmp_path, example, "replay") as one:
        (one.project / "stacks").mkdir()
        (one.project / "stacks" / "dev.yaml").symlink_to(one.topology)
        validated = typed(lines[0], engine, one)
        deployed = typed(lines[1], engine, one)
        asked = one.client.request("GET", connector)[1]
        offsets_map = one.client.request("GET", request_map)[1]
        example["flows"][0]["state"] = {"source": "running"}
        del example["flows"][0]["offsets"]
        one.topology.write_text(yaml.safe_dump(example, sort_keys=False))
        resumed = typed(lines[4], engine, one)
        after = one.client.request("GET", connector)[1]
        gone = one.client.request("GET", request_map)[0]
    assert validated.returncode == 0 and validated.stdout.startswith("stacks/dev.yaml: ok ("), validated.stdout
    assert deployed.returncode == 0, deployed.stdout[-3000:] + deployed.stderr[-3000:]
    assert asked["spec"]["state"] == "stopped"
    assert asked["metadata"]["annotations"]["strimzi.io/connector-offsets"] == "alter"
    assert asked["spec"]["alterOffsets"] == {"fromConfigMap": {"name": "orders-source-offsets-alter"}}
    assert json.loads(offsets_map["data"]["offsets.json"]) == {"offsets": [
        {"partition": {"cluster": "us-west", "topic": "orders", "partition": 0}, "offset": {"offset": 41}}]}
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert after["spec"]["state"] == "running"
    assert "strimzi.io/connector-offsets" not in after["metadata"].get("annotations", {})
    assert "alterOffsets" not in after["spec"]
    assert gone == 404


def test_the_ca_rotation_s_lines_run_as_written(engine, tmp_path):
    """docs/operations.md, the CA rotation's block, its lines as written in the stack's project
    (the dev stack with us-west on mutual TLS, PEM trust), the certificate files beside them:
    after step 2's `pulumi up`, the source's files Secret holds the new client certificate and key
    and trusts both CAs, the KafkaConnect's pod template carries the new Secret's uid (the
    operator rolls the pods onto it) and every connector the new uid of the source Secret (the
    stores' passwords, derived from the material, changed with it); after step 4's, it trusts the
    new CA alone. What the brokers make of each step is tests/runtime/test_pause_and_scale.py's
    (through the operator stand-in)."""
    from cryptography import x509

    from infra.tools.rehearsal import material as rehearsal_material
    from tests.support.material import material

    topology = yaml.safe_load(without_waiting("dev", tmp_path).read_text())
    topology["clusters"]["us-west"]["security"] = {"protocol": "SSL", "tls": {"trust": "pem", "clientCertificate": True}}
    lines = runbooks.block("Credential rotation",
                           "pulumi config set --secret --stack dev kafka-replication:us-west.clientCert")
    assert [line.split()[:2] for line in lines] == [["pulumi", "config"]] * 3 + [["pulumi", "up"]] + \
        [["pulumi", "config"], ["pulumi", "up"]]
    old = material("us-west")
    new = rehearsal_material.for_cluster("us-west", ("us-west-kafka-bootstrap.kafka-us-west",), generation=1)
    secrets = "/api/v1/namespaces/repl-us-west-us-east/secrets"
    base = "/apis/kafka.strimzi.io/v1beta2/namespaces/repl-us-west-us-east/kafkaconnectors/repl-us-west-us-east"
    connect = "/apis/kafka.strimzi.io/v1beta2/namespaces/repl-us-west-us-east/kafkaconnects/repl-us-west-us-east"

    def held() -> tuple[list[bytes], list[bytes], str, str, str, dict[str, str]]:
        """The files Secret's trusted CAs and client certificates (DER) and its uid, the uid the
        KafkaConnect's pods roll with, the source Secret's uid and the uid each connector carries."""
        body = one.client.request("GET", f"{secrets}/source-us-west-tls")[1]
        data = {k: base64.b64decode(v) for k, v in body["data"].items()}
        def certs(pem: bytes) -> list[bytes]:
            return [c.public_bytes(serialization.Encoding.DER) for c in x509.load_pem_x509_certificates(pem)]
        annotations = one.client.request("GET", connect)[1]["spec"]["template"]["pod"]["metadata"]["annotations"]
        return (certs(data["ca.crt"]), certs(data["keystore.pem"]), body["metadata"]["uid"],
                annotations[SOURCE_FILES_UID],
                one.client.request("GET", f"{secrets}/source-us-west")[1]["metadata"]["uid"],
                {k: one.client.request("GET", f"{base}-{k}")[1]["spec"]["config"][SOURCE_ACCESS_UID] for k in KINDS})

    def der(pem: str) -> bytes:
        return x509.load_pem_x509_certificate(pem.encode()).public_bytes(serialization.Encoding.DER)

    with one_cluster(engine, tmp_path, topology, "ca-rotation") as one:
        for name, text in (("us-west-client-new.crt", new.client_cert_pem), ("us-west-client-new.key", new.client_key_pem),
                           ("us-west-ca-old.crt", old.ca_pem), ("us-west-ca-new.crt", new.ca_pem)):
            (one.project / name).write_text(text)
        up = engine.run("up", one.project, "dev", kubeconfig=one.kubeconfig)
        assert up.code == 0, up.output
        before = held()
        step_2 = [typed(line, engine, one) for line in lines[:4]]
        after_2 = held()
        step_4 = [typed(line, engine, one) for line in lines[4:]]
        after_4 = held()
    for done in step_2 + step_4:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert before[:2] == ([der(old.ca_pem)], [der(old.client_cert_pem)])
    assert after_2[:2] == ([der(old.ca_pem), der(new.ca_pem)], [der(new.client_cert_pem)])
    assert after_4[:2] == ([der(new.ca_pem)], [der(new.client_cert_pem)])
    # Each `pulumi up` replaced both Secrets: the KafkaConnect took the files Secret's new uid, and
    # every connector the source Secret's.
    for index in (2, 4):
        assert len({before[index], after_2[index], after_4[index]}) == 3
    for files_uid, rolls_with, uid, connectors in (before[2:], after_2[2:], after_4[2:]):
        assert rolls_with == files_uid and connectors == {k: uid for k in KINDS}
    # No secret material in what the CLI printed.
    printed = "".join(d.stdout + d.stderr for d in step_2 + step_4)
    assert "PRIVATE KEY" not in printed and new.client_key_pem.splitlines()[1] not in printed
