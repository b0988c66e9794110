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

    near (this namespace)                                 far (a namespace a holder process keeps)
    10.200.x.1  tun `krn<pid>x<n>`  --relay: delay, rate-->  tun `krf<pid>x<n>`  10.200.x.2
                                    <--relay: delay, rate--

A process started with `prefix()` in front of its command line runs in the far namespace: a
broker there listens on `far_ip`, and every connection to it from here crosses the link. Nothing
outlives the process that made the link, however it ends: the namespace is no named one but a
holder process's (`unshare --net sleep`), guarded like every server (keeper.py), and the TUN
devices are this process's open files, gone with it. Root only (namespaces, TUN devices); Linux
only. The relay is one thread of this process: a link of a
few MB/s costs it a few percent of a core.
"""

from __future__ import annotations

import fcntl
import heapq
import itertools
import os
import re
import selectors
import shutil
import struct
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from infra.tools.rehearsal import keeper
from infra.tools.rehearsal.process import RuntimeStartError

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
MTU = 9000          # fewer packets for the relay to carry than at 1500; TCP's segments follow it
QUEUE_PACKETS = 4096  # the link's queue, each way: beyond it a packet is dropped, as a router's tail drop
_COUNTER = itertools.count(1)
LOCK = Path("/run/kafka-replication-distance.lock")


def available() -> str | None:
    """Why a link cannot be made here, or None when it can."""
    if os.geteuid() != 0:
        return "a link at a distance needs root (network namespaces, TUN devices)"
    if not Path("/dev/net/tun").exists():
        return "no /dev/net/tun on this machine"
    for tool, package in (("ip", "iproute2"), ("nsenter", "util-linux"), ("unshare", "util-linux")):
        if shutil.which(tool) is None:
            return f"no `{tool}` command ({package})"
    return None


def _ip(*args: str, netns: int | None = None) -> None:
    argv = [*(["nsenter", "-t", str(netns), "-n"] if netns else []), "ip", *args]
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


@dataclass
class Distance:
    """`rtt_ms`: the round trip the link adds (half each way); `mbit`: its rate each way (0: none)."""
    rtt_ms: float
    mbit: float = 0
    number: int = field(default_factory=lambda: next(_COUNTER))
    near_ip: str = field(init=False)
    far_ip: str = field(init=False)
    dropped: int = field(default=0, init=False)  # packets over the queue's bound, both ways
    _fds: tuple[int, ...] | None = field(default=None, init=False, repr=False)
    _holder: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _wake: tuple[int, int] = field(default=(-1, -1), init=False, repr=False)

    def __post_init__(self) -> None:
        if not (0 <= self.rtt_ms <= 10_000) or not (0 <= self.mbit <= 100_000):
            raise ValueError(f"a link of {self.rtt_ms} ms and {self.mbit} Mbit/s: 0 to 10,000 ms, 0 to 100,000 Mbit/s")
        self.near_ip = self.far_ip = ""  # a free pair of addresses, chosen at the start

    @property
    def _devices(self) -> tuple[str, str]:
        tag = f"{os.getpid()}x{self.number}"  # at most 12 characters: an interface name has 15
        return f"krn{tag}", f"krf{tag}"

    @property
    def netns(self) -> int:
        """The holder's pid: its network namespace is the far one."""
        if self._holder is None:
            raise RuntimeStartError("the link at a distance is not started")
        return self._holder.pid

    def prefix(self) -> list[str]:
        """What goes before a command line that must run in the far namespace (`nsenter` execs
        it: the pid stays the command's)."""
        return ["nsenter", "-t", str(self.netns), "-n", "--"]

    def start(self) -> None:
        why = available()
        if why:
            raise RuntimeStartError(why)
        near, far = self._devices
        own = os.stat("/proc/self/ns/net").st_ino
        self._holder = subprocess.Popen(["unshare", "--net", "sleep", "infinity"], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        keeper.guard(self._holder.pid)  # ends with this process, however it ends
        try:
            deadline = time.monotonic() + 10
            while True:  # until `unshare` has made the namespace and exec'd `sleep` in it
                try:
                    if os.stat(f"/proc/{self._holder.pid}/ns/net").st_ino != own:
                        break
                except FileNotFoundError:
                    pass
                if self._holder.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeStartError("`unshare --net` made no network namespace: "
                                            + (self._holder.stderr.read().decode(errors="replace").strip()
                                               if self._holder.stderr and self._holder.poll() is not None else "no answer in 10 s"))
                time.sleep(0.02)
            near_fd = _tun(near)
            self._fds = (near_fd,)  # closed by stop if the next one fails
            self._fds = (near_fd, _tun(far))
            _ip("link", "set", far, "netns", str(self.netns))
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
        if self._holder is not None:  # the namespace goes with its last process
            if self._holder.poll() is None:
                self._holder.kill()
            self._holder.wait(10)
            keeper.release(self._holder.pid)
            if self._holder.stderr is not None:
                self._holder.stderr.close()
            self._holder = None

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
