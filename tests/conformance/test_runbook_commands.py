"""Runbook blocks of docs/operations.md that run on this machine with no cluster, run as written:
each line read from the document (tests/support/runbooks.py) and given to bash in the checkout,
as a person pastes it. The test suite's own commands in them (`pytest ...`) are left to
`make test`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

from infra.plan.monitoring.dashboard import dashboard as monitoring_dashboard
from tests.support import runbooks
from tests.support.stacks import ROOT


def run_block(lines: list[str]) -> subprocess.CompletedProcess[str]:
    script = "\n".join(["set -euo pipefail", *(line for line in lines if " -m pytest " not in line)])
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=900, cwd=ROOT)


def test_checking_the_rules_yourself_runs_as_written():
    lines = runbooks.block("Checking the rules yourself", "make promtool")
    assert [line.split()[0] for line in lines] == [
        "make", "make", ".venv/bin/python", "~/.cache/kafka-replication/promtool/usr/bin/promtool", ".venv/bin/python"]
    Path("/tmp/rules.yaml").unlink(missing_ok=True)
    done = run_block(lines)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rules = yaml.safe_load(Path("/tmp/rules.yaml").read_text())
    rendered = yaml.safe_load((ROOT / "build" / "render" / "prod" / "replication-monitoring" /
                               "PrometheusRule-kafka-replication.yaml").read_text())
    assert rules == {"groups": rendered["spec"]["groups"]}
    # promtool read every rule the stack deploys.
    assert f"SUCCESS: {sum(len(g['rules']) for g in rules['groups'])} rules found" in done.stdout, done.stdout


def test_the_dashboard_export_runs_as_written():
    lines = runbooks.block("Dashboard", "make render STACK=dev")
    exported = ROOT / "dashboard.json"  # where the block writes it: the directory it runs in
    assert not exported.exists(), "a dashboard.json of someone's is in the checkout"
    try:
        done = run_block(lines)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        dashboard = json.loads(exported.read_text())
    finally:
        exported.unlink(missing_ok=True)
    assert dashboard == monitoring_dashboard()  # the program's dashboard, whole


def test_the_dashboard_picture_is_drawn_as_written():
    """The docs' picture drawn again from the stored recording: the same picture, every panel
    with data."""
    from tests.support.dashboard_picture import OUT
    lines = runbooks.block("What on-call sees", "make dashboard-picture")
    assert lines == ["make dashboard-picture"]
    before = OUT.read_text()
    try:
        done = run_block(lines)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert OUT.read_text() == before
    finally:
        OUT.write_text(before)
    # Under a make of its own (the test suite's), make adds its Entering/Leaving directory lines.
    assert f"{OUT}: 33 panels, 33 with data" in done.stdout.splitlines(), done.stdout
