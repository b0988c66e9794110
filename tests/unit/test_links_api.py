"""The links' proxy client against Toxiproxy's API as it answers on a loaded machine: a request
that outlives the server's 25 s handler timeout gets 503 while the change goes on
(api.go timeoutMiddleware, v2.5.0). A fake server answers here as that one would."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from infra.tools.rehearsal.links import Link, Links
from infra.tools.rehearsal.process import RuntimeStartError


def _serving(answers: list[int]):
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append(f"{self.command} {self.path}")
            code = answers.pop(0)
            body = b"<html><body><h1>Timeout</h1></body></html>" if code == 503 else b""
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_DELETE = do_POST = _answer

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    links = Links(network=None, directory=None, api=f"http://127.0.0.1:{server.server_address[1]}")  # type: ignore[arg-type]
    return server, links, seen


def test_a_toxic_removal_that_timed_out_is_asked_again_and_found_done():
    server, links, seen = _serving([503, 404])
    try:
        assert links.call("DELETE", "/proxies/us-west/toxics/latency-downstream") is None
    finally:
        server.shutdown()
    assert seen == ["DELETE /proxies/us-west/toxics/latency-downstream"] * 2


def test_a_toxic_that_is_not_there_on_the_first_attempt_is_an_error():
    server, links, _ = _serving([404])
    try:
        with pytest.raises(RuntimeStartError, match=r"DELETE /proxies/us-west/toxics/x: HTTP 404"):
            links.call("DELETE", "/proxies/us-west/toxics/x")
    finally:
        server.shutdown()


def test_three_timeouts_are_an_error():
    server, links, seen = _serving([503, 503, 503])
    try:
        with pytest.raises(RuntimeStartError, match=r"HTTP 503: <html>"):
            links.call("DELETE", "/proxies/us-west/toxics/x")
    finally:
        server.shutdown()
    assert len(seen) == 3


def test_a_restore_removes_each_chains_last_toxic_first():
    """A narrow link lifted: each stream's bandwidth toxic (the chain's last) before its latency
    toxic, then the proxy enabled (Link.restore says why)."""
    server, links, seen = _serving([200] * 9)
    try:
        link = Link(links, "us-west", "127.0.0.2:9093", "127.0.0.3:9093")
        link.slow(latency_ms=50, rate_kb_per_s=96)
        link.restore()
    finally:
        server.shutdown()
    assert seen == ["POST /proxies/us-west/toxics"] * 4 + [
        "DELETE /proxies/us-west/toxics/bandwidth-downstream", "DELETE /proxies/us-west/toxics/latency-downstream",
        "DELETE /proxies/us-west/toxics/bandwidth-upstream", "DELETE /proxies/us-west/toxics/latency-upstream",
        "POST /proxies/us-west"]
    assert link.toxics == []
