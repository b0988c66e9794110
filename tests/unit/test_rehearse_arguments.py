"""`rehearse` refuses before it starts anything: every problem `validate` finds (not only the
schema's), and a `--keep` folder it could not write to. Proven with the starters replaced by
ones that fail the test: nothing runs here."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest
import yaml

from infra.__main__ import main
from infra.tools.rehearsal import apiserver
from tests.support.stacks import doc_topology


@pytest.fixture(autouse=True)
def nothing_starts(monkeypatch):
    def started(*_args, **_kwargs):
        raise AssertionError("rehearse started something")
    monkeypatch.setattr(apiserver, "start", started)
    monkeypatch.setattr(apiserver, "build", started)


def run(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = main(["rehearse", *argv])
    return code, err.getvalue()


def test_what_only_the_plan_refuses_exits_2_before_anything_starts(tmp_path):
    t = doc_topology()
    t["operator"]["imagePullSecret"]["name"] = "source-us-west"
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(t))
    assert run(str(path)) == (2, (
        "error: the topology has 1 problem(s):\n  - namespace repl-us-west-us-east: Secret name: got 'source-us-west'; "
        "expected a name of its own: the program also writes Secret 'source-us-west' there (repl-us-west-us-east)\n"))


@pytest.mark.parametrize("keep", ["/etc/passwd/x", "/nonexistent/a/b", "/etc/passwd"])
def test_a_keep_folder_that_cannot_be_written_exits_2_before_anything_starts(tmp_path, keep):
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc_topology()))
    assert run(str(path), "--keep", keep) == (2, (
        "error: the command line has 1 problem(s):\n"
        f"  - --keep: (argument): got '{keep}'; expected a writable folder, or a new one in a writable folder\n"))


def test_what_the_rehearsal_cannot_honour_is_said_before_it_starts(tmp_path, capsys, monkeypatch):
    from infra.core.releases import Flavour, find
    from infra.tools.rehearsal.run import unhonoured
    t = doc_topology()  # CSM 1.2: Cloudera's Kafka 3.8.0.1.2, which is not published
    t["operator"]["connect"]["image"] = "registry.example/connect:1"
    t["flows"][0]["connect"] = {"resources": {"requests": {"cpu": "1"}}}
    release = find(Flavour.csm, "1.2")
    assert unhonoured(t, release) == [
        "operator.connect.image registry.example/connect:1: not run here; the workers run csm 1.2's jars "
        "(Apache Kafka 3.8.0)",
        "operator.connect.version 3.8.0.1.2: the workers run Apache Kafka 3.8.0 here (the release of its line)",
        "flows[0].connect.resources: not enforced here (each worker is one JVM with this machine's defaults)"]
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(t))
    monkeypatch.setenv("INFRA_DEBUG", "1")  # the stand-in starter's refusal raised, not reported
    with pytest.raises(AssertionError, match="rehearse started something"):
        main(["rehearse", str(path)])
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("not honoured here: ")] == [
        f"not honoured here: {line}" for line in unhonoured(t, release)]
