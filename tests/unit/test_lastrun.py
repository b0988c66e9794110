"""The audit's last-run summary (contract/lastrun.py): what the job writes to its termination
message and `kafka-replication status` reads back. It always fits the kubelet's 4 KiB, drops
detail in order when it must and says so; decode reads only what encode wrote."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from contract import lastrun


def report(flows: int, topics: int, lag: int = 7) -> dict:
    return {"status": "findings", "finishedAt": 1764238660000, "flows": [
        {"name": f"flow-{f}", "status": "findings" if f == 0 else "ok", "topics": [
            {"source": f"orders.region-{t}", "partitions": [
                {"partition": p, "lag": lag if f == 0 else 0, "status": "findings" if f == 0 else "ok"}
                for p in range(2)]} for t in range(topics)]} for f in range(flows)]}


def test_a_small_report_keeps_every_topic():
    run = lastrun.decode(lastrun.encode(report(2, 3)))
    assert run == lastrun.LastRun("findings", 1764238660000, None, {
        "flow-0": lastrun.FlowRun("findings", 6, {f"orders.region-{t}": 14 for t in range(3)}, 42),
        "flow-1": lastrun.FlowRun("ok", 0, {f"orders.region-{t}": 0 for t in range(3)}, 0)}, False)


@pytest.mark.parametrize("flows, topics, kept", [(2, 300, "flows"), (400, 1, "nothing")])
def test_what_users_have_fits_and_says_what_it_dropped(flows, topics, kept):
    text = lastrun.encode(report(flows, topics))
    assert len(text.encode()) <= lastrun.MAX_BYTES
    run = lastrun.decode(text)
    assert run is not None and run.truncated and run.status == "findings"
    if kept == "flows":
        assert run.flows is not None and run.flows["flow-0"] == lastrun.FlowRun("findings", 600, None, 4200)
    else:
        assert run.flows is None


def with_checkpoints(body: dict, groups: int) -> dict:
    body["flows"][0]["checkpoints"] = [
        {"group": f"readers-{g:03d}", "ageSeconds": 61.7 + g, "behindRecords": g, "findings": ["stale"] if g % 2 else []}
        for g in range(groups)]
    return body


def test_each_group_s_checkpoints_are_kept_with_the_stale_ones_counted():
    run = lastrun.decode(lastrun.encode(with_checkpoints(report(1, 1), 3)))
    assert run is not None and run.flows is not None and not run.truncated
    assert run.flows["flow-0"].checkpoints == {"readers-000": lastrun.GroupCheckpoints(61, 0, False),
                                               "readers-001": lastrun.GroupCheckpoints(62, 1, True),
                                               "readers-002": lastrun.GroupCheckpoints(63, 2, False)}
    assert run.flows["flow-0"].stale_groups == 1


def test_checkpoints_never_read_and_none_found_differ():
    body = report(1, 1)
    assert lastrun.decode(lastrun.encode(body)).flows["flow-0"].checkpoints is None  # type: ignore[union-attr]
    body["flows"][0]["checkpoints"] = []
    assert lastrun.decode(lastrun.encode(body)).flows["flow-0"].checkpoints == {}  # type: ignore[union-attr]


def test_many_groups_are_dropped_after_the_lag_and_the_stale_count_stays():
    run = lastrun.decode(lastrun.encode(with_checkpoints(report(2, 50), 300)))
    assert run is not None and run.truncated and run.flows is not None
    assert run.flows["flow-0"] == lastrun.FlowRun("findings", 100, None, 700, None, 150)


def test_an_error_run_keeps_its_reason():
    run = lastrun.decode(lastrun.encode({"status": "error", "finishedAt": 1, "error": "x" * 2000, "flows": []}))
    assert run is not None and run.status == "error" and run.error == "x" * 500


@pytest.mark.parametrize("text", [
    None, "", "Traceback (most recent call last):\n  File ...", "{}", "[]", '{"kind": "other", "v": 1}',
    json.dumps({"kind": lastrun.KIND, "v": 2, "status": "ok", "finishedAt": 1}),
    json.dumps({"kind": lastrun.KIND, "v": 1, "status": "maybe", "finishedAt": 1}),
    json.dumps({"kind": lastrun.KIND, "v": 1, "status": "ok", "finishedAt": True}),
    json.dumps({"kind": lastrun.KIND, "v": 1, "status": "ok", "finishedAt": 1,
                "flows": {"f": {"status": "ok", "findings": 0, "lagTotal": 0, "lag": {"t": "7"}}}}),
    json.dumps({"kind": lastrun.KIND, "v": 1, "status": "ok", "finishedAt": 1,
                "flows": {"f": {"status": "ok", "findings": 0, "lagTotal": 0, "checkpoints": {"g": {"age": 1}}}}}),
    json.dumps({"kind": lastrun.KIND, "v": 1, "status": "ok", "finishedAt": 1,
                "flows": {"f": {"status": "ok", "findings": 0, "lagTotal": 0, "checkpoints": ["g"]}}}),
    json.dumps({"kind": lastrun.KIND, "v": 1, "status": "ok", "finishedAt": 1,
                "flows": {"f": {"status": "ok", "findings": 0, "lagTotal": 0, "staleGroups": True}}}),
    "x" * (lastrun.MAX_BYTES + 1),
    # A date no reader can print: status turned it into a traceback.
    json.dumps({"kind": lastrun.KIND, "v": 1, "status": "ok", "finishedAt": 10**20}),
    json.dumps({"kind": lastrun.KIND, "v": 1, "status": "ok", "finishedAt": -1}),
    json.dumps({"kind": lastrun.KIND, "v": 1, "status": "ok", "finishedAt": lastrun.MAX_FINISHED_MS + 1}),
    json.dumps({"kind": lastrun.KIND, "v": 1, "status": "ok", "finishedAt": 1, "certificates": ["us-west/caCert"]}),
    json.dumps({"kind": lastrun.KIND, "v": 1, "status": "ok", "finishedAt": 1, "certificates": {"us-west/caCert": "2027"}}),
    json.dumps({"kind": lastrun.KIND, "v": 1, "status": "ok", "finishedAt": 1, "certificates": {"us-west/caCert": 10**20}}),
])
def test_decode_refuses_what_encode_did_not_write(text):
    assert lastrun.decode(text) is None


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=5000))
def test_decode_never_raises(text):
    assert lastrun.decode(text) is None or isinstance(lastrun.decode(text), lastrun.LastRun)


CERTIFICATES = [{"cluster": "us-east", "item": "caCert", "notAfter": 1_829_260_800_000},
                {"cluster": "us-west", "item": "truststore", "notAfter": 1_798_761_600_999}]


def test_the_certificates_expiry_is_kept_by_cluster_and_item():
    run = lastrun.decode(lastrun.encode({**report(1, 1), "certificates": CERTIFICATES}))
    assert run is not None and not run.truncated
    assert run.certificates == {"us-east/caCert": 1_829_260_800, "us-west/truststore": 1_798_761_600}
    assert lastrun.decode(lastrun.encode(report(1, 1))).certificates is None  # type: ignore[union-attr]


def test_the_certificates_are_dropped_after_the_flows():
    run = lastrun.decode(lastrun.encode({**report(400, 1), "certificates": CERTIFICATES}))
    assert run is not None and run.truncated and run.flows is None
    assert run.certificates == {"us-east/caCert": 1_829_260_800, "us-west/truststore": 1_798_761_600}
    many = [{"cluster": f"cluster-{i:04d}", "item": "clientCert", "notAfter": 1_829_260_800_000} for i in range(400)]
    run = lastrun.decode(lastrun.encode({**report(1, 1), "certificates": many}))
    assert run is not None and run.truncated and run.flows is None and run.certificates is None
