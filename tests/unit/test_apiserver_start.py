"""The API-server tier's servers start again on other ports when one chosen free was taken
before the server bound it (infra/tools/rehearsal/apiserver.py start): the race a CI run met,
a Kafka client's connection taking the port between the choice and the bind."""

from __future__ import annotations

import pytest

from infra.tools.rehearsal import apiserver
from infra.tools.rehearsal.apiserver import ServerError

TAKEN = ('kube-apiserver exited with 1:\nE1127 run.go:72] "command failed" err="failed to create listener: failed '
         'to listen on 127.0.0.1:55739: listen tcp 127.0.0.1:55739: bind: address already in use"')


def scripted(monkeypatch, outcomes: list) -> list:
    calls = []

    def once(directory, binary, timeout, controllers):
        calls.append(directory)
        outcome = outcomes[len(calls) - 1]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome
    monkeypatch.setattr(apiserver, "_start_once", once)
    return calls


def test_a_port_taken_before_the_bind_is_tried_again(monkeypatch, tmp_path):
    calls = scripted(monkeypatch, [ServerError(TAKEN), ServerError(TAKEN), "state"])
    assert apiserver.start(tmp_path) == "state"
    assert len(calls) == 3


def test_another_failure_is_not_tried_again(monkeypatch, tmp_path):
    calls = scripted(monkeypatch, [ServerError("etcd not ready after 60 s; log: etcd.log"), "state"])
    with pytest.raises(ServerError, match="etcd not ready"):
        apiserver.start(tmp_path)
    assert len(calls) == 1


def test_the_attempts_are_bounded(monkeypatch, tmp_path):
    calls = scripted(monkeypatch, [ServerError(TAKEN)] * apiserver.PORT_ATTEMPTS)
    with pytest.raises(ServerError, match="address already in use"):
        apiserver.start(tmp_path)
    assert len(calls) == apiserver.PORT_ATTEMPTS


def test_a_serving_certificate_not_yet_written_whole_is_not_yet_ready(tmp_path):
    """kube-apiserver writes its self-signed certificate a moment after it starts: the readiness
    probe reads a missing, empty or half-written file as "not yet" and asks nothing of the server
    (nothing listens at the URL here); a CI run once failed on the empty file."""
    ca = tmp_path / "apiserver.crt"
    url = "https://127.0.0.1:9"  # the discard port: nothing answers
    assert apiserver._serving(url, "token", ca) is False
    ca.write_text("")
    assert apiserver._serving(url, "token", ca) is False
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIC")
    assert apiserver._serving(url, "token", ca) is False
