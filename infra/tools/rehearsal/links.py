"""The links between a rehearsal's Connect workers and its Kafka clusters, through a fault proxy
the caller controls: the distance between regions and the bad day on a machine whose network is
one loopback.

Each cluster gets a proxy (Toxiproxy, tools/engine/toxiproxy/go.mod, built by
tools/engine/build.sh) on a loopback address of its own, listening on the broker's port and
forwarding to the broker. The workers' pods resolve the cluster's host names to the proxy
(`Network.link`: their hosts file), so every byte a worker exchanges with that cluster (its
tasks' consumers and producers, its admin clients, and with the target its group and internal
topics) crosses the link; the tests' own clients resolve the same names to the broker and are
never slowed or cut. The broker advertises the host name, not an address, so the metadata it
returns keeps a worker on the link.

What a link can be made to do, each through Toxiproxy's REST API (api.go, v2.5.0):
  slow(latency, jitter, rate)  each direction delayed (`latency` toxic: the round trip gains twice
                               the latency) and, with `rate`, capped in KB/s (`bandwidth`)
  cut()                        the proxy disabled: its connections closed and new ones refused, as
                               when a route is withdrawn
  black_hole()                 connections kept open and every byte dropped (`timeout` toxic,
                               timeout 0), as a partition that does not reset anything
  reset()                      every connection reset by its peer (`reset_peer`)
  restore()                    the link as it started: enabled, no toxic
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.tools import shipped
from infra.tools.rehearsal.process import Network, Process, RestError, RuntimeStartError, free_port, listening

BUILD = shipped.path("tools/engine/build.sh")
BINARY = "toxiproxy-server"
STREAMS = ("upstream", "downstream")


def binary() -> Path:
    """The proxy's server, built from the module proxy once (about 10 s) when missing."""
    found = subprocess.run(["bash", str(BUILD), "--path", BINARY], stdout=subprocess.PIPE, text=True)
    if found.returncode == 0:
        return Path(found.stdout.strip())
    built = subprocess.run(["bash", str(BUILD), BINARY], stdout=subprocess.PIPE, text=True)
    if built.returncode != 0:
        raise RuntimeStartError(f"{BUILD} {BINARY} failed (exit {built.returncode}); see its output above")
    return Path(built.stdout.split()[1])


@dataclass
class Link:
    """One cluster's link: its proxy's name on the server, where it listens and what it forwards to."""
    server: Links
    name: str
    listen: str
    upstream: str
    toxics: list[str] = field(default_factory=list)

    def _toxic(self, kind: str, attributes: dict[str, int], stream: str) -> None:
        name = f"{kind}-{stream}"
        self.server.call("POST", f"/proxies/{self.name}/toxics",
                         {"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attributes})
        self.toxics.append(name)

    def slow(self, latency_ms: int = 0, jitter_ms: int = 0, rate_kb_per_s: int | None = None) -> None:
        for stream in STREAMS:
            if latency_ms or jitter_ms:
                self._toxic("latency", {"latency": latency_ms, "jitter": jitter_ms}, stream)
            if rate_kb_per_s is not None:
                self._toxic("bandwidth", {"rate": rate_kb_per_s}, stream)

    def black_hole(self) -> None:
        for stream in STREAMS:
            self._toxic("timeout", {"timeout": 0}, stream)

    def reset(self) -> None:
        self._toxic("reset_peer", {"timeout": 0}, "downstream")

    def cut(self) -> None:
        self.server.call("POST", f"/proxies/{self.name}", {"enabled": False})

    def restore(self) -> None:
        # The last toxic of each stream's chain first: Toxiproxy removes a toxic by flushing what
        # it holds into the next one, 5 s a chunk (link.go RemoveToxic, v2.5.0), and a bandwidth
        # toxic after it, full on a saturated link, takes none: the removal then loops, dropping
        # chunks, until the API gives up (seen: a latency toxic removed before its bandwidth toxic
        # while the copy filled the link). The last one flushes straight to the connection.
        for toxic in reversed(self.toxics):
            self.server.call("DELETE", f"/proxies/{self.name}/toxics/{toxic}")
        self.toxics.clear()
        self.server.call("POST", f"/proxies/{self.name}", {"enabled": True})

    def state(self) -> dict[str, Any]:
        """The proxy as the server reports it (`enabled`, `toxics`)."""
        found: dict[str, Any] = self.server.call("GET", f"/proxies/{self.name}")
        return found


@dataclass
class Links:
    """The proxy server of one rehearsal, on its own loopback address, and a link per cluster."""
    network: Network
    directory: Path
    process: Process | None = None
    api: str = ""
    links: dict[str, Link] = field(default_factory=dict)

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        ip = self.network.address()
        port = free_port(ip)
        self.api = f"http://{ip}:{port}"
        self.process = Process("the links' proxy", [str(binary()), "-host", ip, "-port", str(port)],
                               self.directory / "toxiproxy.log")
        self.process.wait_for("its API", lambda: listening(ip, port), 30)

    # Toxiproxy answers 503 when a request outlives its handler's 25 s (api.go timeoutMiddleware,
    # v2.5.0): a toxic's removal waits for each connection's chain to take it, which on a loaded
    # machine can take longer, while the change goes on. The call is made again; a toxic the first
    # attempt removed (404) or added (409) is then done.
    ATTEMPTS = 3

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(1, self.ATTEMPTS + 1):
            request = urllib.request.Request(self.api + path, data=data, method=method,
                                             headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=30) as resp:
                    text = resp.read().decode()
                    return json.loads(text) if text else None
            except urllib.error.HTTPError as exc:
                toxic = "/toxics" in path
                if attempt > 1 and toxic and (method, exc.code) in (("DELETE", 404), ("POST", 409)):
                    return None
                if exc.code == 503 and toxic and attempt < self.ATTEMPTS:
                    continue
                raise RestError.answered(f"the links' proxy: {method} {path}", exc, 500) from None
        raise AssertionError("unreachable: the last attempt returns or raises")

    def add(self, alias: str, hosts: list[str], port: int, upstream_ip: str) -> Link:
        """A link to cluster `alias`, whose broker listens on `upstream_ip:port`: the proxy on an
        address of its own and the same port, the cluster's host names resolved to it in pods."""
        ip = self.network.address()
        link = Link(self, alias, f"{ip}:{port}", f"{upstream_ip}:{port}")
        self.call("POST", "/proxies", {"name": alias, "listen": link.listen, "upstream": link.upstream,
                                       "enabled": True})
        for host in hosts:
            self.network.link(host, ip)
        self.links[alias] = link
        return link

    def __getitem__(self, alias: str) -> Link:
        return self.links[alias]

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
