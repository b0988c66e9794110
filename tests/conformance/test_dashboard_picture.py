"""The dashboard's picture in the docs (tests/support/dashboard_picture.py): the dashboard's own
queries answered by a real Prometheus over a recorded fault, drawn on the dashboard's grid."""

from __future__ import annotations

import dataclasses

import pytest

from tests.support import dashboard_picture as pic, recordings
from tests.support.stacks import unavailable

# Panels with nothing to show in the pictured recording, and why (every other panel has data).
EMPTY: dict[str, str] = {}


@pytest.fixture(scope="module")
def recording() -> dict:
    (found,) = [r for r in recordings.load_all() if (r["release"], r["scenario"]) == pic.PICTURED]
    return found


@pytest.fixture(scope="module")
def server(recording, tmp_path_factory):
    if not (pic.PROMETHEUS_CACHE / "prometheus").exists():
        unavailable("no Prometheus: run `make promtool` (Debian's prometheus package)")
    started = pic.serve(recording, tmp_path_factory.mktemp("prometheus"))
    yield started
    started.stop()


def test_run_lengths_expand_as_promtool_reads_them():
    """`_x2` is two missing scrapes, `1x1` two samples (recordings.decode, held to promtool itself in
    tests/conformance/test_alert_matrix.py): each sample at its scrape's time."""
    text = pic.openmetrics({"every_seconds": 8.0, "input_series": [{"series": "a", "values": "1x1 _x2 7 NaN"}]})
    assert text == (f"a 1 {pic.T0}.000\na 1 {pic.T0 + 8}.000\na 7 {pic.T0 + 32}.000\na NaN {pic.T0 + 40}.000\n"
                    "# EOF\n")


def test_the_recording_becomes_openmetrics_at_its_real_spacing():
    text = pic.openmetrics({"every_seconds": 8.0, "input_series": [
        {"series": 'b{x="1", y="2"}', "values": "5 _ 6"}, {"series": "a", "values": "1x1"}]})
    assert text == (f"a 1 {pic.T0}.000\na 1 {pic.T0 + 8}.000\n"
                    f'b{{x="1",y="2"}} 5 {pic.T0}.000\nb{{x="1",y="2"}} 6 {pic.T0 + 16}.000\n# EOF\n')


def test_the_picture_in_the_docs_is_the_dashboard_over_its_recording(server, recording):
    found = pic.answers(server, recording)
    assert pic.svg(found, recording) == pic.OUT.read_text(), "run `make dashboard-picture` and review the picture"
    assert {a.panel.title: "" for a in found if not a.series} == {t: "" for t in EMPTY}
    # What the fault shows: one source task failed, then running again at the end.
    stats = {a.panel.title: a.series for a in found if a.panel.kind == "stat"}
    assert [v for _, points in stats["Tasks failed"] for _, v in points] == [0.0]
    (status,) = [a for a in found if a.panel.title == "Task status"]
    (failed,) = [name for name, _ in status.series if name.endswith(" failed")]
    assert failed.startswith("repl-us-west-us-east-source/"), failed


def test_a_query_of_a_series_the_workers_never_had_draws_no_data(server, recording):
    """The check has teeth: a misspelt metric name answers nothing, and the panel says so."""
    panel = dataclasses.replace(pic.PANELS[0], title="Flows (misspelt)",
                                query=pic.PANELS[0].query.replace("kafka_connect_", "kafka_konnect_"))
    data = server.ask("query", query=pic.expr(panel), time=str(pic.T0 + 60))
    assert data["result"] == []
    drawn = pic._panel(pic.Answer(panel, []), 0, 0, 200, 100, (pic.T0, pic.T0 + 60), [])
    assert any(">No data</text>" in line for line in drawn)
