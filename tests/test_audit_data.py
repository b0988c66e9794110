"""The data audit on generated samples: every injected fault found exactly, against the
simulation's ground truth (spark/sample.py), and no false positive."""

from __future__ import annotations

import json

import pytest

from spark import audit, data, sample
from spark.offsets import Unverifiable

COMPARED = ("status", "sourceRecords", "targetRecords", "missing", "missingRanges", "duplicate", "unexpected",
            "lag", "lost")


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample")
    sample.write(root)
    return root


@pytest.fixture(scope="module")
def truth(sample_dir):
    return json.loads((sample_dir / "truth.json").read_text())


def _run(spark, root, fetch=None, flows=None):
    config = json.loads((root / "audit.json").read_text())
    w = config["settings"]["window"]
    return audit.run(config, audit.local_clusters(spark, root), fetch or audit.local_fetch(root),
                     audit.Window(*sample.WINDOW, w["bucketSeconds"] * 1000), sample.NOW_MS, flows)


@pytest.fixture(scope="module")
def result(spark, sample_dir):
    return _run(spark, sample_dir)


def _partitions(result):
    return {(f["name"], t["source"], p["partition"]): p
            for f in result["flows"] for t in f["topics"] for p in t["partitions"]}


def test_every_partition_matches_the_ground_truth(result, truth):
    expected = {(flow, topic, int(p)): values for flow, f in truth["flows"].items()
                for topic, parts in f["topics"].items() for p, values in parts.items()}
    got = _partitions(result)
    assert sorted(got) == sorted(expected)  # no partition audited that should not be, none left out
    for key, values in expected.items():
        assert {k: got[key][k] for k in COMPARED} == {k: values[k] for k in COMPARED}, key
        assert got[key]["unverifiable"] == values.get("unverifiable"), key


def test_each_fault_as_reported(result):
    got = _partitions(result)
    flow = "repl-us-west-us-east"
    # 40 records lost across a transaction marker (offset 152) and a bucket boundary: one range,
    # 40 records over 41 offsets.
    assert got[(flow, "orders", 0)]["missingRanges"] == [[147, 187, 40]]
    assert got[(flow, "orders", 1)]["duplicate"] == 10 and got[(flow, "orders", 1)]["status"] == "ok"
    corrupted = got[(flow, "orders", 2)]
    assert (corrupted["missing"], corrupted["unexpected"], len(corrupted["missingRanges"])) == (1, 1, 1)
    assert got[(flow, "payments", 0)]["unexpected"] == 5
    assert got[(flow, "payments", 1)]["findings"] == ["lag of 50 record(s)"]
    assert got[(flow, "payments", 2)]["findings"] == [
        "lag of 280 record(s)", "39 offset(s) aged out of the source before replication"]
    assert got[(flow, "payments", 2)]["deferred"].startswith("replicated up to offset 81")
    assert got[("audit-archive", "audit.login", 1)]["findings"] == [
        "unverifiable: the window starts before the target's retained records"]


def test_clean_at_least_once_data_has_no_findings(result):
    flows = {f["name"]: f for f in result["flows"]}
    clean = _partitions(result)[("audit-archive", "audit.login", 0)]
    assert (clean["status"], clean["duplicate"], clean["findings"]) == ("ok", 5, [])
    # The reverse direction of the pair: its own records only, those that came back excluded.
    reverse = flows["shared-eu-central-us-east"]
    assert reverse["status"] == "ok"
    assert [p["sourceRecords"] for t in reverse["topics"] for p in t["partitions"]] == [100, 100]


def test_flow_statuses_freshness_and_totals(result, truth):
    flows = {f["name"]: f for f in result["flows"]}
    assert {n: f["status"] for n, f in flows.items()} == {n: f["status"] for n, f in truth["flows"].items()}
    for name, f in truth["flows"].items():
        assert flows[name]["freshness"]["ageSeconds"] == f["freshness"]["ageSeconds"]
        assert bool(flows[name]["freshness"]["findings"]) == f["freshness"]["stale"]
    assert flows["repl-us-west-us-east"]["freshness"]["findings"] == [
        "newest heartbeat is 1200 s old (threshold 300 s)"]
    assert result["status"] == truth["status"] == "findings"
    parts = _partitions(result).values()
    assert result["totals"]["missing"] == sum(p["missing"] for p in parts) == 43
    assert result["totals"]["errors"] == 0


def test_tier_two_reads_only_differing_buckets(result):
    p = _partitions(result)
    assert p[("repl-us-west-us-east", "orders", 0)]["buckets"] == 5
    assert p[("repl-us-west-us-east", "orders", 0)]["bucketsDiffering"] == 2   # the lost range spans two
    assert p[("audit-archive", "audit.login", 0)]["bucketsDiffering"] == 1     # the replayed records' bucket
    assert p[("repl-us-west-us-east", "payments", 1)]["bucketsDiffering"] == 0


def test_an_unreadable_rest_api_is_an_error_never_ok(spark, sample_dir):
    def fetch(url, connector):
        raise Unverifiable(f"{url}: HTTP 503 after 3 attempt(s)")
    result = _run(spark, sample_dir, fetch, flows=["shared-eu-central-us-east"])
    (flow,) = result["flows"]
    assert flow["status"] == "error" and result["status"] == "error"
    assert flow["errors"] == ["http://shared-eu-central-us-east-connect-api.shared-eu-central-us-east.svc:8083"
                              ": HTTP 503 after 3 attempt(s)"]


def test_a_missing_cluster_dump_is_an_error(spark, sample_dir, tmp_path):
    config = json.loads((sample_dir / "audit.json").read_text())
    w = config["settings"]["window"]
    result = audit.run(config, audit.local_clusters(spark, tmp_path), audit.local_fetch(sample_dir),
                       audit.Window(*sample.WINDOW, w["bucketSeconds"] * 1000), sample.NOW_MS, ["audit-archive"])
    assert result["status"] == "error"
    assert "topics.json" in result["flows"][0]["errors"][0]


def test_command_line_writes_the_report_and_exits_with_its_status(spark, sample_dir, tmp_path, capsys):
    code = audit.main(["--local", str(sample_dir), "--out", str(tmp_path), "--flow", "shared-eu-central-us-east"])
    assert code == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["status"] == "ok" and [f["name"] for f in report["flows"]] == ["shared-eu-central-us-east"]
    detail = spark.read.parquet(str(tmp_path / "detail.parquet")).orderBy("partition").collect()
    assert [(r["flow"], r["sourceTopic"], r["partition"], r["status"], r["sourceRecords"]) for r in detail] == [
        ("shared-eu-central-us-east", "shared.events", 0, "ok", 100),
        ("shared-eu-central-us-east", "shared.events", 1, "ok", 100)]
    assert "audit ok: 1 flow(s), 2 partition(s)" in capsys.readouterr().out
    assert audit.main(["--local", str(sample_dir), "--out", str(tmp_path), "--flow", "audit-archive"]) == 1
    assert audit.main(["--config", str(tmp_path / "nope.json"), "--out", str(tmp_path)]) == 2


# ----------------------------------------------------------------- fingerprints


def _rows(spark, records):
    from spark.clusters import KAFKA_ROW
    import datetime as dt
    ts = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    return spark.createDataFrame([(k, v, "t", 0, o, ts, 0, h) for o, (k, v, h) in enumerate(records)], KAFKA_ROW)


def test_fingerprint_tells_null_from_empty_and_ignores_stripped_headers(spark):
    df = _rows(spark, [(None, b"x", []), (b"", b"x", []), (b"k", b"x", [("replicated-from-a", b"")]),
                       (b"k", b"x", []), (b"k", b"x", [("trace", b"1")])])
    fps = [r["fp"] for r in data.prepare(df, data.Side(strip_headers=("replicated-from-a",)), 60_000)
           .orderBy("offset").collect()]
    assert fps[0] != fps[1]           # null key vs empty key
    assert fps[2] == fps[3]           # the flow's own header stripped
    assert fps[4] != fps[3]           # any other header counts


def test_valueless_topics_compare_without_values(spark):
    df = _rows(spark, [(b"k", b"before", []), (b"k", b"after", [])])
    fps = [r["fp"] for r in data.prepare(df, data.Side(valueless_topics=("t",)), 60_000).orderBy("offset").collect()]
    assert fps[0] == fps[1]


def test_heartbeat_records_parse_to_alias_and_time(spark):
    key = sample._heartbeat_key("us-west", "us-east")
    value = (0).to_bytes(2, "big") + (1_767_225_600_123).to_bytes(8, "big")
    assert data.heartbeat_times(_rows(spark, [(key, value, [])])) == {"us-west": 1_767_225_600_123}
