"""The deployer (infra/, components/) type-checks under mypy --strict, with the project's
configuration ([tool.mypy] in pyproject.toml): manifests, plans and components are held to
their declared shapes on every run of the test suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def mypy(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_the_deployer_is_strictly_typed():
    done = mypy()
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""


def test_a_manifest_of_the_wrong_shape_is_refused(tmp_path):
    """The checker sees a mistake in a typed manifest: a ConfigMap with a number as data and
    a KafkaConnector without its class."""
    bad = tmp_path / "bad_manifest.py"
    bad.write_text(
        "from infra.core.manifests import ConfigMap, KafkaConnector\n"
        "cm: ConfigMap = {'apiVersion': 'v1', 'kind': 'ConfigMap',\n"
        "                 'metadata': {'name': 'x', 'labels': {}}, 'data': {'k': 1}}\n"
        "kc: KafkaConnector = {'apiVersion': 'kafka.strimzi.io/v1', 'kind': 'KafkaConnector',\n"
        "                      'metadata': {'name': 'x', 'labels': {}}, 'spec': {'tasksMax': 1, 'config': {}}}\n")
    done = mypy("--strict", "--config-file", str(ROOT / "pyproject.toml"), str(bad))
    assert done.returncode == 1
    lines = [line.split(": error: ", 1)[1] for line in done.stdout.splitlines() if ": error: " in line]
    assert lines == [
        'Dict entry 0 has incompatible type "str": "int"; expected "str": "str"  [dict-item]',
        'Missing key "class" for TypedDict "KafkaConnectorSpec"  [typeddict-item]',
    ], done.stdout
