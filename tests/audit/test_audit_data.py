"""The data audit on generated samples: every injected fault found exactly, against the
simulation's ground truth (infra/tools/sample.py), and no false positive."""

from __future__ import annotations

import json

import pytest

from infra.tools import sample
from spark import audit, data
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
                     audit.Window(*sample.WINDOW, w["bucketSeconds"] * 1000), sample.NOW_MS,
                     audit.java_filters(spark), flows)


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
                       audit.Window(*sample.WINDOW, w["bucketSeconds"] * 1000), sample.NOW_MS,
                       audit.java_filters(spark), ["audit-archive"])
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


def test_the_run_s_summary_goes_to_the_termination_message(spark, sample_dir, tmp_path):
    """In a pod the kubelet creates /dev/termination-log; the job writes its run's summary there
    (contract/lastrun.py), which `kafka-replication status` reads from the pod's status. Where
    no such file exists, none is created."""
    from contract import lastrun
    message = tmp_path / "termination-log"
    message.write_text("")
    code = audit.main(["--local", str(sample_dir), "--out", str(tmp_path / "out"), "--flow", "audit-archive",
                       "--termination-log", str(message)])
    assert code == 1
    written = json.loads((tmp_path / "out" / "report.json").read_text())
    run = lastrun.decode(message.read_text())
    assert run is not None and (run.status, run.finished_at, run.truncated) == ("findings", written["finishedAt"], False)
    (flow,) = written["flows"]
    assert run.flows == {"audit-archive": lastrun.FlowRun(
        flow["status"], sum(p["status"] == "findings" for t in flow["topics"] for p in t["partitions"]),
        {t["source"]: sum(p["lag"] or 0 for p in t["partitions"]) for t in flow["topics"]},
        sum(p["lag"] or 0 for t in flow["topics"] for p in t["partitions"]))}
    absent = tmp_path / "no-such-log"
    assert audit.main(["--local", str(sample_dir), "--out", str(tmp_path / "again"), "--flow", "audit-archive",
                       "--termination-log", str(absent)]) == 1
    assert not absent.exists()
    # A run that could not audit says why there too.
    assert audit.main(["--config", str(tmp_path / "nope.json"), "--out", str(tmp_path / "e"), "--termination-log",
                       str(message)]) == 2
    failed = lastrun.decode(message.read_text())
    assert failed is not None and failed.status == "error" and "nope.json" in (failed.error or "")


# ----------------------------------------------------------------- fingerprints


def _rows(spark, records):
    import datetime as dt

    from spark.clusters import KAFKA_ROW
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
    # The bytes Kafka's Heartbeat writes (serializeKey: no version before the aliases), as the
    # real heartbeat connector's records in tests/runtime/test_replication.py have them.
    key = b"\x00\x07us-west\x00\x07us-east"
    assert sample._heartbeat_key("us-west", "us-east") == key
    value = (0).to_bytes(2, "big") + (1_767_225_600_123).to_bytes(8, "big")
    assert data.heartbeat_times(_rows(spark, [(key, value, [])])) == {"us-west": 1_767_225_600_123}
    # A key with a version in front (what this reader once expected) names no alias it knows.
    assert "us-west" not in data.heartbeat_times(_rows(spark, [(b"\x00\x00" + key, value, [])]))


# ------------------------------------------------------------------ the dumps' time index


def _first_at_or_after(rows: list[tuple[int, int, int]], ms: int, partitions: int, ends: dict) -> dict:
    """Brute force: min offset per partition among records with timestamp >= ms."""
    return {p: min((o for q, o, t in rows if q == p and t >= ms), default=ends[p]) for p in range(partitions)}


@pytest.mark.parametrize("int96", [False, True], ids=["statistics", "no timestamp statistics"])
def test_offsets_for_times_of_a_dump_match_a_full_scan(spark, tmp_path, int96):
    """Two partitions spread over two files (whose offset ranges overlap), small row groups,
    timestamps out of order (CreateTime): the statistics-guided lookup answers exactly what a
    scan of every record does."""
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq

    from spark.clusters import ParquetCluster
    rnd = random.Random(7)
    rows = []  # (partition, offset, timestamp ms)
    for p in (0, 1):
        t = 1_000_000
        for o in range(5, 600):  # the first offsets have aged out
            t += rnd.randint(0, 40)
            rows.append((p, o, t - rnd.randint(0, 300)))  # producers' clocks: not monotonic
    rows.sort(key=lambda r: (r[1], r[0]))
    (tmp_path / "t").mkdir()
    for i, part in enumerate((rows[0::3] + rows[1::3], rows[2::3])):
        part = sorted(part, key=lambda r: (r[1], r[0]))
        pq.write_table(_dump(pa, part), tmp_path / "t" / f"part-{i}.parquet", row_group_size=50,
                       use_deprecated_int96_timestamps=int96)
    (tmp_path / "topics.json").write_text(json.dumps({"t": {"partitions": 3, "cleanupPolicy": "delete",
                                                            "earliest": {"0": 5, "1": 5, "2": 0},
                                                            "end": {"0": 600, "1": 600, "2": 0}}}))
    cluster = ParquetCluster(spark, tmp_path)
    stamps = sorted({r[2] for r in rows})
    times = [stamps[0] - 1, *stamps[::37], stamps[-1], stamps[-1] + 1]
    ends = {0: 600, 1: 600, 2: 0}
    assert cluster.offsets_for_times("t", 3, times, ends) == [_first_at_or_after(rows, ms, 3, ends) for ms in times]
    groups = cluster._row_groups("t")
    assert len(groups) == 24 and all(g.times[1] < 2**62 for g in groups) is not int96


def _dump(pa, rows):
    n = len(rows)
    return pa.table({"key": [b"k"] * n, "value": [b"v"] * n, "topic": ["t"] * n,
                     "partition": pa.array([r[0] for r in rows], pa.int32()),
                     "offset": pa.array([r[1] for r in rows], pa.int64()),
                     "timestamp": pa.array([r[2] for r in rows], pa.timestamp("ms", "UTC")),
                     "timestampType": pa.array([0] * n, pa.int32()),
                     "headers": pa.array([[]] * n, pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))})


def test_reading_ranges_of_a_dump(spark, tmp_path):
    """Whole partitions are read without a per-record test, part ranges are cut exactly."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from spark.clusters import ParquetCluster
    rows = [(p, o, 1_000 + o) for o in range(10, 50) for p in (0, 1)]
    (tmp_path / "t").mkdir()
    pq.write_table(_dump(pa, rows), tmp_path / "t" / "part-0.parquet", row_group_size=16)
    (tmp_path / "topics.json").write_text(json.dumps({"t": {"partitions": 2, "cleanupPolicy": "delete",
                                                            "earliest": {"0": 10, "1": 10}, "end": {"0": 50, "1": 50}}}))
    cluster = ParquetCluster(spark, tmp_path)

    def offsets(ranges):
        return sorted((r["partition"], r["offset"]) for r in cluster.read(ranges).select("partition", "offset").collect())
    assert cluster._whole("t", {0: (0, 50), 1: (10, 60)}) and not cluster._whole("t", {0: (0, 50)})
    assert offsets({("t", 0): (0, 50), ("t", 1): (10, 60)}) == [(p, o) for p in (0, 1) for o in range(10, 50)]
    assert offsets({("t", 1): (12, 15), ("t", 0): (48, 99)}) == [(0, 48), (0, 49), (1, 12), (1, 13), (1, 14)]
    assert offsets({("t", 0): (20, 20), ("other", 0): (0, 5)}) == []
