"""The rehearsal's client of Connect's REST API (infra/tools/rehearsal/connect.py Worker.request
and its retry): a refusal carries the status the worker answered, and what is retried is decided
on that status, as the operator's KafkaConnectApiImpl decides on the response's code. A fake
server answers here as a worker would; the runtime tier talks to real workers."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from infra.tools.rehearsal import connect
from infra.tools.rehearsal.connect import Worker
from infra.tools.rehearsal.process import RestError

STALE = ('{"error_code":409,"message":"Cannot complete request momentarily due to stale configuration (typically '
         'caused by a concurrent config change)"}')
REBALANCE = ('{"error_code":500,"message":"Request cannot be completed because a rebalance is expected"}')
BROKEN = '{"error_code":500,"message":"Failed to find any class that implements Connector"}'


class Fake(Worker):
    def __init__(self, url: str) -> None:
        super().__init__("ns/c", None, Path("."), "127.0.0.1", "", None, "")  # type: ignore[arg-type]
        self._url = url

    @property
    def url(self) -> str:
        return self._url


def serving(answers: list[tuple[int, str]]):
    """A worker that answers each request with the next (status, body); what it was asked."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            seen.append(f"{self.command} {self.path}")
            code, body = answers.pop(0)
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_PUT = do_PATCH = _answer

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, Fake(f"http://127.0.0.1:{server.server_address[1]}"), seen


@pytest.fixture(autouse=True)
def no_pause(monkeypatch):
    monkeypatch.setattr(connect.time, "sleep", lambda seconds: None)


def test_a_refusal_carries_the_status_and_body_the_worker_answered():
    server, worker, _ = serving([(409, STALE)])
    try:
        with pytest.raises(RestError) as refused:
            worker.request("PATCH", "/connectors/c/offsets", {"offsets": []})
    finally:
        server.shutdown()
    assert (refused.value.status, refused.value.body) == (409, STALE)
    assert str(refused.value) == f"ns/c: PATCH /connectors/c/offsets: HTTP 409: {STALE}"


def test_a_conflict_and_an_expected_rebalance_are_asked_again():
    server, worker, seen = serving([(409, STALE), (500, REBALANCE), (200, '{"name":"c","tasks.max":"2"}')])
    try:
        assert worker.connector_config("c") == {"name": "c", "tasks.max": "2"}
    finally:
        server.shutdown()
    assert seen == ["GET /connectors/c/config"] * 3


def test_any_other_refusal_is_raised_at_once():
    server, worker, seen = serving([(500, BROKEN)])
    try:
        with pytest.raises(RestError, match="HTTP 500: .*Failed to find any class") as refused:
            worker.put_connector("c", {"connector.class": "Nope"})
    finally:
        server.shutdown()
    assert refused.value.status == 500 and seen == ["PUT /connectors/c/config"]


def test_a_body_that_only_mentions_a_conflict_is_no_conflict():
    # A 400 whose message quotes a 409 (a connector's own error text) is refused, not retried:
    # the status decides, not the words.
    quoting = '{"error_code":400,"message":"Connector configuration is invalid: HTTP 409 from upstream"}'
    server, worker, seen = serving([(400, quoting)])
    try:
        with pytest.raises(RestError) as refused:
            worker.put_connector("c", {})
    finally:
        server.shutdown()
    assert refused.value.status == 400 and seen == ["PUT /connectors/c/config"]
