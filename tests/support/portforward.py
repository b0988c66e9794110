"""What `kubectl port-forward` gives the runbook's next line, where no kubelet runs: the local
port on 127.0.0.1 relayed to a pod's (the stand-in Connect worker's) address and port, so that a
line such as `curl -s localhost:9404/metrics` runs as written.

It stands in for the port-forward only, which the runbooks' ledger marks as never run here
(tests/support/runbooks.py): the line after it reaches the real worker, byte for byte. Unlike
kubectl it listens on IPv4 alone; curl falls back to it from `::1`."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


@contextlib.contextmanager
def forwarded(local_port: int, host: str, port: int) -> Iterator[None]:
    """127.0.0.1:`local_port` relayed to `host`:`port` until the block ends. A port already taken
    fails at once (as kubectl's `unable to listen on any of the requested ports`)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", local_port))
    listener.listen(16)
    listener.settimeout(0.2)
    stop = threading.Event()
    open_sockets: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            upstream = socket.create_connection((host, port), timeout=60)
            upstream.settimeout(None)
            client.settimeout(None)
            open_sockets.extend((client, upstream))
            threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        yield
    finally:
        stop.set()
        server.join(5)
        listener.close()
        for s in open_sockets:
            with contextlib.suppress(OSError):
                s.close()
