"""A region at a distance, with the kernel's own TCP in between: a network namespace reached
through a pair of TUN devices whose packets a relay holds for the link's one-way delay.

Why not the fault proxy (links.py): Toxiproxy delays each chunk it relays but reads on as fast as
the sender writes, so the connection it relays has no round trip of its own and TCP's window never
limits it. A client with a 64 KiB receive buffer reaches through it what it reaches on loopback,
which a real link 50 ms long does not allow (at most one window per round trip). Here nothing
terminates the connection: the packets of the real kernel connection are delayed, so its
handshake takes the round trip, slow start grows the window one round trip at a time, and the
window the sockets' buffers allow caps what is in flight, as on a link between regions. What it
does not model: loss (a queue over its bound drops, nothing else does) and reordering.

    near (this namespace)                                 far (namespace `kr-far-<pid>-<n>`)
    10.200.x.1  tun `krn<pid>x<n>`  --relay: delay, rate-->  tun `krf<pid>x<n>`  10.200.x.2
                                    <--relay: delay, rate--

A process started with `prefix()` in front of its command line runs in the far namespace: a
broker there listens on `far_ip`, and every connection to it from here crosses the link. Root
only (namespaces, TUN devices); Linux only. The relay is one thread of this process: a link of a
few MB/s costs it a few percent of a core.
"""

from __future__ import annotations

import fcntl
import heapq
import itertools
import os
import re
import selectors
import struct
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from infra.tools.rehearsal.process import RuntimeStartError

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
MTU = 9000          # fewer packets for the relay to carry than at 1500; TCP's segments follow it
QUEUE_PACKETS = 4096  # the link's queue, each way: beyond it a packet is dropped, as a router's tail drop
_COUNTER = itertools.count(1)
NETNS_DIR = Path("/run/netns")
LOCK = Path("/run/kafka-replication-distance.lock")


def available() -> str | None:
    """Why a link cannot be made here, or None when it can."""
    if os.geteuid() != 0:
        return "a link at a distance needs root (network namespaces, TUN devices)"
    if not Path("/dev/net/tun").exists():
        return "no /dev/net/tun on this machine"
    if subprocess.run(["ip", "-V"], capture_output=True).returncode != 0:
        return "no `ip` command (iproute2)"
    return None


def _ip(*args: str, netns: str | None = None) -> None:
    argv = ["ip", *(["-n", netns] if netns else []), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeStartError(f"`{' '.join(argv)}` failed: {done.stderr.strip()}")


def _tun(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    try:
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    except OSError as exc:
        os.close(fd)
        raise RuntimeStartError(f"cannot make the TUN device {name}: {exc.strerror}") from None
    return fd


def _free_pair() -> tuple[str, str]:
    """A pair of addresses of 10.200.0.0/16 (a /30's first two) that no device here has."""
    shown = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True, timeout=30).stdout
    taken = set(re.findall(r"\b(10\.20[0-9]\.\d+\.\d+)\b", shown))
    for base in range(0, 65536, 4):
        near, far = f"10.200.{base // 256}.{base % 256 + 1}", f"10.200.{base // 256}.{base % 256 + 2}"
        if near not in taken and far not in taken:
            return near, far
    raise RuntimeStartError("no free address pair in 10.200.0.0/16 for a link at a distance")


def remove_stale() -> list[str]:
    """The far namespaces of processes that ended without removing theirs (killed): removed."""
    gone = []
    for path in sorted(NETNS_DIR.glob("kr-far-*")) if NETNS_DIR.exists() else []:
        pid = path.name.split("-")[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            subprocess.run(["ip", "netns", "delete", path.name], capture_output=True, timeout=30)
            gone.append(path.name)
    return gone


@dataclass
class Distance:
    """`rtt_ms`: the round trip the link adds (half each way); `mbit`: its rate each way (0: none)."""
    rtt_ms: float
    mbit: float = 0
    number: int = field(default_factory=lambda: next(_COUNTER))
    netns: str = field(init=False)
    near_ip: str = field(init=False)
    far_ip: str = field(init=False)
    dropped: int = field(default=0, init=False)  # packets over the queue's bound, both ways
    _fds: tuple[int, ...] | None = field(default=None, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _wake: tuple[int, int] = field(default=(-1, -1), init=False, repr=False)

    def __post_init__(self) -> None:
        if not (0 <= self.rtt_ms <= 10_000) or not (0 <= self.mbit <= 100_000):
            raise ValueError(f"a link of {self.rtt_ms} ms and {self.mbit} Mbit/s: 0 to 10,000 ms, 0 to 100,000 Mbit/s")
        # Named after this process: the suite's tiers make links side by side.
        self.netns = f"kr-far-{os.getpid()}-{self.number}"
        self.near_ip = self.far_ip = ""  # a free pair of addresses, chosen at the start

    @property
    def _devices(self) -> tuple[str, str]:
        tag = f"{os.getpid()}x{self.number}"  # at most 12 characters: an interface name has 15
        return f"krn{tag}", f"krf{tag}"

    def prefix(self) -> list[str]:
        """What goes before a command line that must run in the far namespace."""
        return ["ip", "netns", "exec", self.netns]

    def start(self) -> None:
        why = available()
        if why:
            raise RuntimeStartError(why)
        remove_stale()
        near, far = self._devices
        _ip("netns", "add", self.netns)
        try:
            near_fd = _tun(near)
            self._fds = (near_fd,)  # closed by stop if the next one fails
            self._fds = (near_fd, _tun(far))
            _ip("link", "set", far, "netns", self.netns)
            _ip("link", "set", "lo", "up", netns=self.netns)
            with open(LOCK, "a") as lock:  # two processes choosing at once would take the same pair
                fcntl.flock(lock, fcntl.LOCK_EX)
                self.near_ip, self.far_ip = _free_pair()
                _ip("addr", "add", self.near_ip, "peer", self.far_ip, "dev", near)
            _ip("link", "set", near, "mtu", str(MTU), "up")
            _ip("addr", "add", self.far_ip, "peer", self.near_ip, "dev", far, netns=self.netns)
            _ip("link", "set", far, "mtu", str(MTU), "up", netns=self.netns)
        except BaseException:
            self.stop()
            raise
        self._wake = os.pipe()
        self._thread = threading.Thread(target=self._relay, name=f"distance-{self.number}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._wake[1] >= 0:
            os.write(self._wake[1], b"x")
        if self._thread is not None:
            self._thread.join(10)
        for fd in [*(self._fds or ()), *(w for w in self._wake if w >= 0)]:
            os.close(fd)
        self._fds, self._wake = None, (-1, -1)
        subprocess.run(["ip", "netns", "delete", self.netns], capture_output=True, timeout=30)

    def _relay(self) -> None:
        """Every packet read from one device is written to the other once its time comes: its
        arrival plus the one-way delay, and with a rate, not before the packet ahead of it has
        left (a queue in front of a link of that rate)."""
        assert self._fds is not None and len(self._fds) == 2
        near_fd, far_fd = self._fds
        other = {near_fd: far_fd, far_fd: near_fd}
        delay = self.rtt_ms / 2000
        seconds_per_byte = 8 / (self.mbit * 1e6) if self.mbit else 0.0
        free_at = {near_fd: 0.0, far_fd: 0.0}        # when each direction's link is free again
        queued = {near_fd: 0, far_fd: 0}
        due: list[tuple[float, int, int, bytes]] = []  # (time, sequence, to fd, packet)
        sequence = itertools.count()
        selector = selectors.DefaultSelector()
        for fd in (near_fd, far_fd, self._wake[0]):
            selector.register(fd, selectors.EVENT_READ)
        while not self._stop.is_set():
            timeout = max(0.0, due[0][0] - time.monotonic()) if due else None
            for key, _ in selector.select(timeout):
                if key.fd == self._wake[0]:
                    return
                while True:  # every packet the device holds now
                    try:
                        packet = os.read(key.fd, 65536)
                    except BlockingIOError:
                        break
                    to = other[key.fd]
                    if queued[to] >= QUEUE_PACKETS:
                        self.dropped += 1
                        continue
                    now = time.monotonic()
                    leaves = max(now, free_at[to]) + len(packet) * seconds_per_byte
                    free_at[to] = leaves
                    queued[to] += 1
                    heapq.heappush(due, (leaves + delay, next(sequence), to, packet))
            now = time.monotonic()
            while due and due[0][0] <= now:
                _, _, to, packet = heapq.heappop(due)
                queued[to] -= 1
                try:
                    os.write(to, packet)
                except OSError:
                    self.dropped += 1  # the device's own queue is full: dropped, as on a link
