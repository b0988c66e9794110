"""The false-page matrix: every alert rule replayed by promtool over series recorded from real
faults on the runtime tier (tests/data/recordings/, tests/runtime/test_alert_recordings.py
records them; tests/support/recordings.py says how they are stored and replayed). For each
scenario, exactly the alerts of recordings.MATRIX (RELEASE_MATRIX where a release's worker
differs) fire at some point of it, naming the right connector, and no other alert does."""

from __future__ import annotations

import copy

import pytest
import yaml

from infra.plan import monitoring
from tests.conformance.test_alert_rules import run_promtool
from tests.support import recordings
from tests.support.monitoring import groups_of

FIRED = 'count by (alertname, connector) (max_over_time(ALERTS{{alertstate="firing"}}[{minutes}m]))'


def fired_samples(expected: set[tuple[str, str | None]]) -> list[dict]:
    out = []
    for alert, connector in sorted(expected, key=str):
        labels = f'alertname="{alert}"' + (f', connector="{connector}"' if connector else "")
        out.append({"labels": f"{{{labels}}}", "value": 1})
    return out


# Firing at the recording's last scrape: none, where the scenario's alerts clear once its fault ends.
FIRING = 'count by (alertname, connector) (ALERTS{alertstate="firing"})'


def matrix_test(recording: dict, expected: set[tuple[str, str | None]], cleared: bool = False) -> dict:
    last = recording["scrapes"] - 1
    checks = [{"expr": FIRED.format(minutes=last + 1), "eval_time": f"{last}m", "exp_samples": fired_samples(expected)}]
    if cleared:
        checks.append({"expr": FIRING, "eval_time": f"{last}m", "exp_samples": []})
    return {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [{
        "name": f"{recording['release']} {recording['scenario']}: {recording['what']}",
        "interval": "1m", "input_series": recording["input_series"], "promql_expr_test": checks}]}


def replay(recording: dict, expected: set[tuple[str, str | None]], tmp_path, cleared: bool = False
           ) -> tuple[int, str]:
    (tmp_path / "rules.yaml").write_text(monitoring.rules_yaml(groups_of(recording["topology"])))
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(matrix_test(recording, expected, cleared), sort_keys=False,
                                                        width=4096))
    done = run_promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    return done.returncode, done.stdout + done.stderr


RECORDED = recordings.load_all()


def test_every_release_has_every_scenario():
    """Every release each scenario, the drills' faults on the drills' releases."""
    assert sorted((r["release"], r["scenario"]) for r in RECORDED) == sorted(recordings.recorded_pairs())
    assert set(recordings.FAULTS) <= set(recordings.MATRIX)
    assert set(recordings.FAULT_RELEASES) <= set(recordings.RELEASES)


@pytest.mark.parametrize("recording", RECORDED, ids=[f"{r['release']}-{r['scenario']}" for r in RECORDED])
def test_the_alerts_fire_on_their_faults_and_nowhere_else(recording, tmp_path):
    """And, for the drills' faults, none still fires at the recording's end: they clear once the
    fault is over (recordings.CLEARED)."""
    code, out = replay(recording, recordings.verdict(recording["release"], recording["scenario"]), tmp_path,
                       cleared=recording["scenario"] in recordings.CLEARED)
    assert code == 0, out[-4000:]


@pytest.mark.parametrize("recording", RECORDED, ids=[f"{r['release']}-{r['scenario']}" for r in RECORDED])
def test_each_recording_stands_for_todays_workers(recording):
    """Made on today's worker and connector configuration (the render's digest), on its release's
    Kafka, holding every series the rules and the dashboard read or saying why not."""
    assert recordings.problems(recording) == []


def test_a_stale_or_gapped_recording_is_refused():
    (recording,) = [r for r in RECORDED if (r["release"], r["scenario"]) == ("strimzi-1.2.0", "healthy")]
    assert recordings.problems(recording) == []
    stale = copy.deepcopy(recording)
    stale["topology"]["flows"][0]["config"]["source"]["offset.lag.max"] = 100  # a changed connector default
    gapped = copy.deepcopy(recording)
    gapped["input_series"] = [s for s in gapped["input_series"] if not s["series"].startswith("jvm_threads_current")]
    gapped["kafka_version"] = "3.9.0"
    # A run of missing scrapes one short (the encoder before 2026-12-07 wrote k blanks as `_x{k-1}`,
    # which promtool reads as k - 1): every later sample of the series a scrape early.
    (short,) = [s for s in gapped["input_series"] if s["series"].startswith("jvm_memory_used_bytes")][:1]
    short["values"] = "_x2 " + short["values"]  # two more scrapes than the recording
    (changed,) = recordings.problems(stale)
    assert changed.startswith("strimzi-1.2.0/healthy: recorded on another configuration (sha256:") \
        and changed.endswith(": record it again")
    assert recordings.problems(gapped) == [
        "strimzi-1.2.0/healthy: recorded on Kafka 3.9.0, the release runs 4.3.1",
        f"strimzi-1.2.0/healthy: {short['series']} holds {recording['scrapes'] + 2} scrapes as promtool reads it, "
        f"the recording {recording['scrapes']}",
        "strimzi-1.2.0/healthy: jvm_threads_current is read by the rules or the dashboard and was not recorded"]


def test_promtool_reads_the_stored_values_as_recorded(tmp_path):
    """promtool is the oracle of its series notation: a recording's runs of samples and of missing
    scrapes (encode) read back scrape by scrape as recorded (decode), the way promtool reads them."""
    values: list[float | None] = [None, None, None, 1, 1, 1, None, 2.5, None, None, 3, 3, None]
    text = recordings.encode(values)
    assert text == "_x3 1x2 _ 2.5 _x2 3x1 _"
    assert recordings.decode(text) == values
    series = 'x{k="v"}'
    # A missing scrape is no sample at its minute; an instant query would look back to the last one.
    present = f"{series} and on() (timestamp({series}) == time())"
    checks = [{"expr": present, "eval_time": f"{i}m",
               "exp_samples": [] if v is None else [{"labels": series, "value": v}]} for i, v in enumerate(values)]
    (tmp_path / "rules.yaml").write_text("groups: []\n")
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m",
                                                         "tests": [{"interval": "1m", "input_series": [
                                                             {"series": series, "values": text}],
                                                             "promql_expr_test": checks}]}, sort_keys=False))
    done = run_promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    with pytest.raises(ValueError, match=r"'1\+2x3': not a sample or a run of one"):
        recordings.decode("1+2x3")


def test_a_series_read_since_is_stated_by_the_recordings_made_before_and_only_while_one_lacks_it():
    lacking = {name for r in RECORDED for name in r["absent"]}
    assert set(recordings.READ_SINCE) <= lacking, "a name no recording lacks any more: drop it from READ_SINCE"
    # A recording made again whose worker still does not export such a series is refused: the
    # recorder (here on scrapes that had none of it) states it with ABSENT's reason or none, never
    # READ_SINCE's.
    (recording,) = [r for r in RECORDED if (r["release"], r["scenario"]) == ("strimzi-1.2.0", "healthy")]
    kept = [s for s in recording["input_series"] if s["series"].split("{", 1)[0] not in recordings.READ_SINCE]
    sample = {s["series"]: 1.0 for s in kept}
    recorder = recordings.Recorder([], recordings.read_by(recording["topology"]), samples=[sample])
    remade = recorder.recording("strimzi-1.2.0", "healthy", recording["topology"], "", recording["kafka_version"])
    assert set(remade["absent"]) == set(recordings.READ_SINCE)
    assert all(remade["absent"][name] != reason for name, reason in recordings.READ_SINCE.items())
    (refused,) = recordings.problems(remade)
    assert refused.startswith("strimzi-1.2.0/healthy: its stated absences {") and \
        refused.endswith("with ABSENT's or READ_SINCE's reasons")


def test_the_matrix_refuses_a_wrong_verdict(tmp_path):
    """A recording replayed against a verdict it does not give fails: the matrix asserts."""
    (recording,) = [r for r in RECORDED if (r["release"], r["scenario"]) == ("strimzi-1.2.0", "healthy")]
    code, out = replay(recording, {("KafkaReplicationRecordAgeHigh", None)}, tmp_path)
    assert code != 0 and "FAILED" in out


def test_the_matrix_refuses_an_alert_still_firing_where_it_should_have_cleared(tmp_path):
    """The recording of a source paused to its end (the fault phase's recording cut before the
    connector resumed) replayed as a scenario that clears: its alerts still fire, and it fails."""
    (recording,) = [r for r in RECORDED if (r["release"], r["scenario"]) == ("strimzi-1.2.0", "source-paused")]
    (recovered,) = [at for at, name in recording["phases"] if name == "recovered"]
    cut = copy.deepcopy(recording)
    cut["scrapes"] = recovered
    cut["input_series"] = [{"series": s["series"],
                            "values": recordings.encode(recordings.decode(s["values"])[:recovered])}
                           for s in recording["input_series"]]
    expected = recordings.verdict("strimzi-1.2.0", "source-paused")
    assert replay(cut, expected, tmp_path)[0] == 0
    code, out = replay(cut, expected, tmp_path, cleared=True)
    assert code != 0 and "FAILED" in out and "ALERTS" in out
