"""The audit never mistakes a crash for a verdict: every input it cannot trust exits 2 ("could
not audit") with the reason, in report.json when the folder can be written; nothing audited is
never ok; every network read ends within its deadline."""

from __future__ import annotations

import http.server
import json
import shutil
import threading
import time

import pytest

from contract import audit as contract
from infra.checks import validation
from infra.plan.audit import audit_config
from infra.plan.stack import plan
from infra.tools import sample
from spark import audit
from spark.offsets import Unverifiable, fetch_connect_offsets
from tests.support.stacks import doc_topology


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample")
    sample.write(root)
    return root


def report_of(folder):
    return json.loads((folder / "report.json").read_text())


def test_every_configuration_the_program_writes_keeps_the_contract():
    topo = validation.parse(doc_topology())
    assert contract.problems(audit_config(topo, plan(topo))) == []


@pytest.mark.parametrize("change, expected", [
    (lambda c: c.update(version=1), "config.version: expected 2 (this job's contract; deploy the job and program "
                                    "of one release), got 1"),
    (lambda c: c["flows"][0].pop("connectors"), "config.flows[0].connectors: missing"),
    (lambda c: c["flows"][0].update(sourceAlias="nowhere"),
     "config.flows[0].sourceAlias: expected an alias of config.clusters, got 'nowhere'"),
    (lambda c: c["settings"]["thresholds"].update(maxLag=-1),
     "config.settings.thresholds.maxLag: expected an integer from 0 to 2147483647, got -1"),
    (lambda c: c["flows"][0]["connectors"][0].update(restUrl="file:///etc/passwd"),
     "config.flows[0].connectors[0].restUrl: expected an http(s) URL, got 'file:///etc/passwd'"),
])
def test_the_contract_refuses_broken_configurations(change, expected):
    topo = validation.parse(doc_topology())
    config = audit_config(topo, plan(topo))
    change(config)
    assert contract.problems(config) == [expected]


def test_a_broken_configuration_exits_2_before_spark_with_the_reason_in_the_report(sample_dir, tmp_path, capsys):
    config = json.loads((sample_dir / "audit.json").read_text())
    config["version"] = 7
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "out"
    assert audit.main(["--config", str(path), "--out", str(out)]) == 2
    reason = (f"the audit configuration {path} breaks contract version 2: config.version: expected 2 (this job's "
              "contract; deploy the job and program of one release), got 7")
    assert capsys.readouterr().err == f"audit error: could not audit: {reason}\n"
    assert report_of(out)["status"] == "error" and report_of(out)["error"] == reason


@pytest.mark.parametrize("text", ["{", "[]", "\"\"", "null"])
def test_an_unreadable_configuration_exits_2(tmp_path, text):
    path = tmp_path / "audit.json"
    path.write_text(text)
    assert audit.main(["--config", str(path), "--out", str(tmp_path / "out")]) == 2
    assert report_of(tmp_path / "out")["status"] == "error"


def test_an_output_folder_that_cannot_be_written_exits_2_before_spark(sample_dir, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert audit.main(["--local", str(sample_dir), "--out", str(blocker / "out")]) == 2
    assert f"the output folder {blocker / 'out'} cannot be written ({blocker} is not a writable folder)" in \
        capsys.readouterr().err


def test_nothing_to_audit_is_never_ok(sample_dir, tmp_path, capsys):
    assert audit.main(["--local", str(sample_dir), "--out", str(tmp_path), "--flow", "no-such-flow"]) == 2
    assert "no flow named no-such-flow in the configuration" in capsys.readouterr().err
    config = json.loads((sample_dir / "audit.json").read_text())
    config["flows"] = []
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(config))
    assert audit.main(["--config", str(path), "--local", str(sample_dir), "--out", str(tmp_path / "o")]) == 2
    assert report_of(tmp_path / "o")["error"] == "nothing to audit: the configuration has no flows"


def test_metadata_promising_records_the_dump_lacks_is_an_error(spark, sample_dir, tmp_path):
    broken = tmp_path / "sample"
    shutil.copytree(sample_dir, broken)
    for part in (broken / "kafka" / "us-west" / "orders").glob("*.parquet"):
        part.unlink()
    for part in (broken / "kafka" / "us-east" / "us-west.orders").glob("*.parquet"):
        part.unlink()
    out = tmp_path / "out"
    assert audit.main(["--local", str(broken), "--out", str(out), "--flow", "repl-us-west-us-east"]) == 2
    (flow,) = report_of(out)["flows"]
    assert flow["status"] == "error"
    assert flow["errors"] == [f"{broken}/kafka/us-west/orders: the metadata says partition 0 holds offsets 0-407, "
                              "the files hold none of them"]


class _Trickle(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the http.server API
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        for _ in range(100):  # one byte every 0.2 s: each read is quick, the answer never ends
            self.wfile.write(b" ")
            self.wfile.flush()
            time.sleep(0.2)

    def log_message(self, *args):
        pass


def test_a_trickling_rest_api_is_cut_at_its_total_deadline():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        start = time.monotonic()
        with pytest.raises(Unverifiable, match=r"TimeoutError.*after 1 attempt"):
            fetch_connect_offsets(f"http://127.0.0.1:{server.server_port}", "c", attempts=1, timeout_seconds=1.5)
        assert time.monotonic() - start < 5  # a guard against a hang, not a benchmark
    finally:
        server.shutdown()
