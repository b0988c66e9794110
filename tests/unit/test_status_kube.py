"""infra/tools/status/kube.py against servers on loopback: no credential of the kubeconfig is ever
printed (a `user:password@` in the server's URL, a token a server quotes back), a credential no
request can carry is refused with exit 2 and not shown, every deadline is on the wall clock (a
server answering a byte every second, an OIDC issuer that never answers), and the auth-providers
status cannot use are refused in words."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from infra.tools import cli
from infra.tools.status import kube

TOKEN = "eyJhbGciOi.secret-token-4711.sig"
PASSWORD = "hunter2-very-secret"


def kubeconfig(tmp_path: Path, server: str, user: dict) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "dev",
        "clusters": [{"name": "dev", "cluster": {"server": server}}],
        "users": [{"name": "me", "user": user}],
        "contexts": [{"name": "dev", "context": {"cluster": "dev", "user": "me"}}]}))
    return str(path)


@pytest.fixture()
def outputs_file(tmp_path):
    from tests.unit.test_status_verdicts import dev_outputs
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(dev_outputs()))
    return str(path)


def status(capsys, outputs_file: str, config: str) -> tuple[int, str]:
    code = cli.main(["status", "--outputs", outputs_file, "--kubeconfig", config])
    out = capsys.readouterr()
    return code, out.out + out.err


class Quoting(BaseHTTPRequestHandler):
    """An API server that refuses every request, quoting the Authorization header it got (as
    some proxies' error pages do)."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = json.dumps({"kind": "Status", "message": f"token {self.headers.get('Authorization')} refused"})
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args) -> None:
        pass


@pytest.fixture()
def quoting():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Quoting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture()
def dripping():
    """A server that accepts and answers one byte a second, for ever: each byte resets a socket
    timeout, so only a wall-clock deadline ends the request."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100000:
                if stop.wait(1):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()
    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    listener.close()


def test_a_password_in_the_servers_url_is_never_printed(capsys, outputs_file, tmp_path):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there: every line says the server did not answer
    config = kubeconfig(tmp_path, f"https://admin:{PASSWORD}@127.0.0.1:{port}", {"token": TOKEN})
    code, printed = status(capsys, outputs_file, config)
    assert code == 5, printed
    assert f"https://127.0.0.1:{port} did not answer: NewConnectionError" in printed
    assert PASSWORD not in printed and "admin" not in printed and TOKEN not in printed


def test_a_token_a_server_quotes_back_is_not_printed(capsys, outputs_file, tmp_path, quoting):
    code, printed = status(capsys, outputs_file, kubeconfig(tmp_path, quoting, {"token": TOKEN}))
    assert code == 5, printed
    assert "HTTP 401: token [secret] refused" in printed
    assert TOKEN not in printed and "secret-token-4711" not in printed


@pytest.mark.parametrize("token", [TOKEN + "\n", "ey-token-with-\u2026-ellipsis", "ey-token\u0142"])
def test_a_token_no_request_can_carry_is_refused_unshown(capsys, outputs_file, tmp_path, quoting, token):
    """A YAML `token: |` block keeps the final line break; a paste can bring a character outside
    ASCII. Before, the first was a traceback or an "internal error" line with the token in it."""
    config = kubeconfig(tmp_path, quoting, {"token": token})
    code, printed = status(capsys, outputs_file, config)
    assert (code, printed) == (2, (
        f"error: the command line has 1 problem(s):\n  - --kubeconfig: (argument): got '{config}'; expected a "
        "kubeconfig the client can use: its user's token or password (or what its exec plugin or auth-provider gave) "
        "holds a line break, another control character or a character outside ASCII: no request can carry it (a "
        "YAML `token: |` block keeps its last line break: write `token: VALUE` or `token: |-`)\n"))


def test_a_server_that_drips_is_given_up_on_the_wall_clock(capsys, outputs_file, tmp_path, dripping, monkeypatch):
    monkeypatch.setattr(kube, "SECONDS", 2)
    started = time.monotonic()
    code, printed = status(capsys, outputs_file, kubeconfig(tmp_path, dripping, {"token": TOKEN}))
    elapsed = time.monotonic() - started
    assert code == 5, printed
    assert f"{dripping} did not answer: no answer within 3 s" in printed
    assert elapsed < 7, elapsed  # one request's 2 + 1 s; the server is not asked again


def test_the_commands_deadline_leaves_the_rest_not_asked(tmp_path, quoting):
    reader = kube.Reader(Path(kubeconfig(tmp_path, quoting, {"token": TOKEN})), None, "kafka.strimzi.io/v1",
                         kube.Deadline(0))
    assert str(reader.strimzi("KafkaConnect", "ns", "c")) == \
        "KafkaConnect ns/c: not asked (the command's 0 s deadline passed)"


def expired_id_token() -> str:
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
    return f"{part({'alg': 'RS256'})}.{part({'exp': 1_600_000_000, 'sub': 'me'})}.c2ln"


@pytest.mark.parametrize("issuer_state", ["never answers", "down"])
def test_an_expired_oidc_token_is_not_refreshed_by_status(capsys, outputs_file, tmp_path, quoting, issuer_state):
    """The client would ask the issuer, unverified when no idp CA is given and with no deadline
    (an issuer that accepts and never answers hung the command; one that is down was a
    traceback): status says to refresh the token first, and asks no issuer."""
    issuer = socket.socket()
    issuer.bind(("127.0.0.1", 0))
    port = issuer.getsockname()[1]
    if issuer_state == "down":
        issuer.close()  # nothing listens there: a connection would be refused
    else:
        issuer.listen(1)  # accepts, never answers
        issuer.settimeout(0.5)
    config = kubeconfig(tmp_path, quoting, {"auth-provider": {"name": "oidc", "config": {
        "idp-issuer-url": f"http://127.0.0.1:{port}", "client-id": "kube",
        "client-secret": "oidc-client-secret", "refresh-token": "oidc-refresh", "id-token": expired_id_token()}}})
    started = time.monotonic()
    code, printed = status(capsys, outputs_file, config)
    assert (code, printed) == (2, (
        f"error: the command line has 1 problem(s):\n  - --kubeconfig: (argument): got '{config}'; expected a "
        "kubeconfig the client can use: its user's oidc id-token has expired: refresh it first (any kubectl command "
        "does), status does not\n"))
    assert time.monotonic() - started < 5
    if issuer_state == "never answers":
        with pytest.raises(TimeoutError):
            issuer.accept()  # nobody called
        issuer.close()


def test_the_gcp_auth_provider_is_refused_in_words(capsys, outputs_file, tmp_path, quoting):
    config = kubeconfig(tmp_path, quoting, {"auth-provider": {"name": "gcp", "config": {"access-token": "x"}}})
    code, printed = status(capsys, outputs_file, config)
    assert (code, printed) == (2, (
        f"error: the command line has 1 problem(s):\n  - --kubeconfig: (argument): got '{config}'; expected a "
        "kubeconfig the client can use: its user's auth-provider 'gcp' is not oidc (client-go removed the gcp and "
        "azure providers: use their exec plugins, e.g. gke-gcloud-auth-plugin or kubelogin)\n"))


@pytest.mark.parametrize(("server", "shown"), [
    ("https://u:p@h.example:6443", "https://h.example:6443"),
    ("https://token@h.example", "https://h.example"),
    ("https://h.example:6443/prefix", "https://h.example:6443/prefix"),
])
def test_a_servers_url_is_shown_without_its_user_part(server, shown):
    assert kube.shown(server) == shown


def test_a_client_key_of_another_certificate_is_said_so(capsys, outputs_file, tmp_path, quoting):
    """Before, every request failed in the TLS handshake: "the server did not answer" (exit 5)."""
    from tests.support.material import material
    config = kubeconfig(tmp_path, quoting.replace("http://", "https://"), {
        "client-certificate-data": base64.b64encode(material("kube").client_cert_pem.encode()).decode(),
        "client-key-data": base64.b64encode(material("other").client_key_pem.encode()).decode()})
    code, printed = status(capsys, outputs_file, config)
    assert (code, printed) == (2, (
        f"error: the command line has 1 problem(s):\n  - --kubeconfig: (argument): got '{config}'; expected a "
        "kubeconfig the client can use: its user's client key does not match its client certificate (or one of them "
        "is not PEM)\n"))
