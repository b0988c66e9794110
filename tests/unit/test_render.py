"""The offline render: deterministic bytes, no secret anywhere, the files and summary users read."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infra.core.errors import TopologyError
from infra.tools import render
from tests.support.stacks import ROOT, SECRETS, doc_topology, render_topology, write_topology

THREE_FLOWS = doc_topology(
    clusters={**doc_topology()["clusters"],
              "eu-central": {"bootstrapServers": "eu:9092"}},
    flows=[
        {"source": "us-west", "target": "us-east", "topics": ["test.*"]},
        {"source": "us-east", "target": "eu-central", "topics": ["orders.*"], "replicationPolicy": "identity"},
        {"source": "us-west", "target": "eu-central", "topics": ["audit"], "name": "audit-to-eu"},
    ])


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def render_to(tmp_path: Path, topology: dict, out: str) -> dict[str, bytes]:
    r = render_topology(tmp_path, topology)
    render.write(r, tmp_path / out)
    return files(tmp_path / out)


def test_same_topology_same_bytes_whatever_the_flow_order(tmp_path):
    first = render_to(tmp_path, THREE_FLOWS, "a")
    again = render_to(tmp_path, THREE_FLOWS, "b")
    shuffled = copy.deepcopy(THREE_FLOWS)
    shuffled["flows"].reverse()
    shuffled["clusters"] = dict(reversed(list(shuffled["clusters"].items())))
    reordered = render_to(tmp_path, shuffled, "c")
    assert first == again == reordered
    # 16 for the documented flow; 14 for each flow into the PLAINTEXT cluster (no target Secrets);
    # each with its metrics rules ConfigMap and its source's store files Secret (TLS sources)
    assert len([f for f in first if f.endswith(".yaml")]) == 16 + 14 + 14


def test_no_secret_value_in_any_rendered_byte(tmp_path):
    out = render_to(tmp_path, THREE_FLOWS, "out")
    blob = b"\n".join(out.values()).decode()
    for key, value in SECRETS.items():
        for fragment in {value, value.strip(), value.splitlines()[0]}:
            assert fragment not in blob, f"{key} leaked"
    secret_files = [yaml.safe_load(v) for k, v in out.items() if "/Secret-" in k]
    assert secret_files and all(set(s.get("data", {}).values()) | set(s.get("stringData", {}).values()) == {"[secret]"}
                                for s in secret_files)


def test_no_secret_in_configmaps_connectors_or_outputs(tmp_path):
    r = render_topology(tmp_path, THREE_FLOWS)
    clear = [o for o in r.objects() if o["kind"] != "Secret"]
    blob = json.dumps(clear) + json.dumps(r.outputs)
    for key, value in SECRETS.items():
        assert value not in blob and value.strip() not in blob, key


def test_outputs_json_and_layout(tmp_path):
    out = render_to(tmp_path, THREE_FLOWS, "out")
    outputs = json.loads(out["outputs.json"])
    assert sorted(outputs["flows"]) == ["audit-to-eu", "repl-us-east-eu-central", "repl-us-west-us-east"]
    assert outputs["flows"]["repl-us-east-eu-central"]["topicPrefix"] == ""
    assert "audit-to-eu/KafkaConnect-audit-to-eu.yaml" in out
    assert "audit-to-eu/Namespace-audit-to-eu.yaml" in out


def test_summary_counts_objects_per_flow_and_kind(tmp_path):
    r = render_topology(tmp_path, doc_topology(), placeholder_secrets=False)
    text = render.summary(r)
    assert "  flow repl-us-west-us-east  (namespace repl-us-west-us-east): + 16 objects" in text
    assert "      + Secret                 5" in text
    assert "      + KafkaConnector         3" in text
    assert "Resources: + 21 to create (16 Kubernetes objects; components: 1 flow:ClusterAccess, " \
           "1 flow:ConnectCluster, 1 flow:MirrorConnectors, 1 flow:ReplicationFlow, 1 index:ReplicationTopology)" in text
    assert "Placeholder" not in text


def test_render_refuses_to_overwrite_a_folder_it_did_not_write(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    r = render_topology(tmp_path, doc_topology())
    with pytest.raises(TopologyError, match="got 'a folder with other files'; expected an empty folder or a "
                                            "previous render"):
        render.write(r, tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_a_new_render_leaves_no_stale_object(tmp_path):
    render.write(render_topology(tmp_path, THREE_FLOWS), tmp_path / "out")
    render.write(render_topology(tmp_path, doc_topology()), tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == ["repl-us-west-us-east"]


def test_cli_render_of_the_dev_stack(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "infra", "render", "--stack", "dev", "--placeholder-secrets",
                           "--secret", "us-west.password=cli-given-pw", "--set", "kafka-replication:unused=1",
                           "--out", str(tmp_path / "dev")], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "Offline preview of stack 'dev'" in proc.stdout
    assert "kafka-replication:us-west.truststore" in proc.stdout      # filled with a placeholder
    assert "kafka-replication:us-west.password" not in proc.stdout    # given with --secret
    assert "cli-given-pw" not in "".join(p.read_text() for p in (tmp_path / "dev").rglob("*.*"))
    assert (tmp_path / "dev" / "repl-us-west-us-east" / "KafkaConnect-repl-us-west-us-east.yaml").exists()


def test_cli_without_secrets_names_what_is_missing(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "infra", "render", "--stack", "dev", "--out", str(tmp_path / "o")],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "pulumi config set --secret kafka-replication:us-east.caCert" in proc.stderr
    assert not (tmp_path / "o").exists()


def _project(tmp_path: Path) -> Path:
    """The dev stack as a Pulumi project of its own, outside this repository."""
    project = tmp_path / "team" / "replication"
    (project / "stacks").mkdir(parents=True)
    (project / "Pulumi.yaml").write_text("name: team-replication\nruntime: python\n")
    shutil.copy(ROOT / "Pulumi.dev.yaml", project / "Pulumi.dev.yaml")
    shutil.copy(ROOT / "stacks" / "dev.yaml", project / "stacks" / "dev.yaml")
    return project


def test_cli_reads_the_project_of_the_working_directory_or_of_dash_c(tmp_path):
    """The stack's files are the project's (the nearest Pulumi.yaml from where the command runs,
    up), never the package's: from a folder of the project, and with -C from anywhere."""
    project = _project(tmp_path)
    (project / "stacks" / "dev.yaml").write_text((ROOT / "stacks/dev.yaml").read_text().replace("replicas: 3",
                                                                                                 "replicas: 1"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for cwd, argv in ((project / "stacks", []), (tmp_path, ["-C", str(project)])):
        out = tmp_path / f"out-{len(argv)}"
        proc = subprocess.run([sys.executable, "-m", "infra", *argv, "render", "--stack", "dev",
                               "--placeholder-secrets", "--out", str(out)], cwd=cwd, env=env, capture_output=True,
                              text=True)
        assert proc.returncode == 0, proc.stderr
        connect = yaml.safe_load((out / "repl-us-west-us-east" / "KafkaConnect-repl-us-west-us-east.yaml").read_text())
        assert connect["spec"]["replicas"] == 1  # the project's topology, not this repository's (3)
    # -C's relative paths are read from the folder it names, as git's are.
    proc = subprocess.run([sys.executable, "-m", "infra", "-C", str(project), "validate", "stacks/dev.yaml"],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert (proc.returncode, proc.stdout) == (0, "stacks/dev.yaml: ok (2 clusters, 1 flows declared, 1 deployed)\n")


def test_cli_refuses_a_dash_c_that_is_no_folder(tmp_path):
    (tmp_path / "file").write_text("")
    for given, reason in ((tmp_path / "nowhere", "No such file or directory"), (tmp_path / "file", "Not a directory")):
        proc = subprocess.run([sys.executable, "-m", "infra", "-C", str(given), "validate", "x.yaml"], cwd=ROOT,
                              capture_output=True, text=True)
        assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", (
            f"error: the command line has 1 problem(s):\n  - -C: (argument): got '{given}'; expected a folder that "
            f"can be entered ({reason})\n"))


def test_the_project_is_the_nearest_folder_up_with_a_pulumi_yaml(tmp_path, monkeypatch):
    from infra.deploy.config import project_dir
    project = _project(tmp_path)
    assert project_dir(project / "stacks") == project
    assert project_dir(tmp_path) == tmp_path.resolve()  # none: the folder itself
    monkeypatch.chdir(project / "stacks")
    assert project_dir() == project


def test_topology_config_key_selects_the_file(tmp_path):
    path = write_topology(tmp_path, THREE_FLOWS, "other.yaml")
    r = render.run("anything", {"topology": str(path)}, placeholder_secrets=True)
    assert len(r.outputs["flows"]) == 3


def test_the_event_loop_left_for_later_is_closed_at_exit():
    """close_event_loop leaves a fresh loop for what runs next in the process; the exit hook closes
    that one too, before the interpreter collects its selector ("Invalid file descriptor: -1")."""
    import asyncio

    from infra.tools import render as render_module
    render_module.close_event_loop()
    fresh = asyncio.get_event_loop_policy().get_event_loop()
    assert not fresh.is_closed() and render_module._CLOSE_AT_EXIT
    render_module._close_idle_loops()
    assert fresh.is_closed()
    render_module.close_event_loop()  # a usable loop again for the tests after this one
    assert not asyncio.get_event_loop_policy().get_event_loop().is_closed()
