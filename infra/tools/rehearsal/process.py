"""The JVMs of a rehearsal: started in sessions of their own with a log file each, stopped by
signal, and the loopback addresses and host names that stand in for the cluster's network.

Host names: a topology names real addresses (`us-west-kafka-bootstrap.kafka-us-west:9093`).
Every JVM started here reads a hosts file of ours (the JDK's `jdk.net.hosts.file`) that maps each
such name to a loopback address of its own, where the broker listens on the topology's port:
the rendered configuration reaches the broker unchanged, as it would reach it in the cluster.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
import urllib.error
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from infra.tools.rehearsal import keeper


class RuntimeStartError(RuntimeError):
    """A broker, worker or connector that did not start: says which, and the end of its log."""


class RestError(RuntimeStartError):
    """A REST API's refusal (Connect's, the links' proxy's): the message names the request, and
    the status is kept as it came with the body's head (what the message quotes), so a caller
    that retries decides on the status rather than on the message's text."""

    def __init__(self, message: str, status: int, body: str) -> None:
        super().__init__(message)
        self.status, self.body = status, body

    @classmethod
    def answered(cls, request: str, exc: urllib.error.HTTPError, head: int) -> RestError:
        """The refusal `exc` of `request` ("<who>: <method> <path>"), its body's first `head` characters."""
        body = exc.read().decode()[:head]
        return cls(f"{request}: HTTP {exc.code}: {body}", exc.code, body)


def java() -> str:
    found = os.environ.get("JAVA_HOME")
    path = Path(found) / "bin" / "java" if found else None
    if path and path.is_file():
        return str(path)
    which = shutil.which("java")
    if which is None:
        raise RuntimeStartError("no java on PATH (Java 17 runs Kafka and Connect)")
    return which


def java_at_least(major: int) -> str:
    """A `java` of at least `major`: JAVA_HOME's, the PATH's, one that actions/setup-java names
    (`JAVA_HOME_<major>_X64`), or one installed under /usr/lib/jvm (Debian's and Temurin's
    packages)."""
    named = [os.environ[k] + "/bin/java" for k in sorted(os.environ) if k.startswith("JAVA_HOME_") and k.endswith("_X64")]
    candidates = [java() if os.environ.get("JAVA_HOME") or shutil.which("java") else None, *named,
                  *sorted(str(p) for p in Path("/usr/lib/jvm").glob("*/bin/java"))]
    for candidate in dict.fromkeys(c for c in candidates if c):
        if _java_major(candidate) >= major:
            return candidate
    raise RuntimeStartError(f"no Java {major} or newer (JAVA_HOME, PATH, /usr/lib/jvm): install one, "
                            f"or point JAVA_HOME at it")


def _java_major(java_path: str) -> int:
    try:
        out = subprocess.run([java_path, "-XshowSettings:properties", "-version"], capture_output=True,
                             text=True, timeout=60).stderr
    except (OSError, subprocess.TimeoutExpired):
        return 0
    for line in out.splitlines():
        key, _, value = line.strip().partition(" = ")
        if key == "java.specification.version":
            number = value.removeprefix("1.").split(".")[0]  # 1.8, 17, 21
            return int(number) if number.isdigit() else 0
    return 0


# How a rehearsal's brokers and workers run their JVMs. `quick` (the tests, the rehearse command):
# a small heap, the JIT's first tier only and the serial collector, so that a JVM starts in about
# half the time and a dozen fit on two cores. `steady` (the benchmarks): both JIT tiers and G1, as
# Kafka's start scripts run a broker (kafka-run-class.sh KAFKA_JVM_PERFORMANCE_OPTS, a 1 GiB heap
# from kafka-server-start.sh) and Connect's a worker, so that a measure is of Kafka's code running
# hot, not of a start-up profile.
JVM_PROFILES = ("quick", "steady")
QUICK_JIT_AND_GC = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]  # the quick profile's, whatever the heap


def jvm_options(profile: str, quick_heap: tuple[int, int]) -> list[str]:
    """`quick_heap`: the initial and largest heap in MiB of the quick profile."""
    if profile == "quick":
        return [f"-Xms{quick_heap[0]}m", f"-Xmx{quick_heap[1]}m", *QUICK_JIT_AND_GC]
    if profile == "steady":
        return ["-Xms1g", "-Xmx1g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent"]
    raise ValueError(f"JVM profile {profile!r}: one of {', '.join(JVM_PROFILES)}")


def cache_root() -> Path:
    """The rehearsal's cache: `$KAFKA_REPLICATION_CACHE`, default `~/.cache/kafka-replication`
    (the jars in `jars/`, the class-data archives in `cds/`)."""
    base = os.environ.get("KAFKA_REPLICATION_CACHE") or Path(
        os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kafka-replication"
    return Path(base)


# Class-data sharing (JDK 13+ dynamic archives): the classes a JVM loaded, dumped once at its exit
# (-XX:ArchiveClassesAtExit) and mapped by every later JVM of the same java, classpath, main class
# and VM options (-XX:SharedArchiveFile), which then skips parsing and verifying them: a broker's
# start costs about a second less CPU (1.7 s against 2.7 s to its listener, measured here), and a
# rehearsal starts dozens of JVMs on two cores. The JVM checks the archive against its own build
# and classpath and runs without it on any mismatch (-Xshare:auto, the default), so a stale or
# foreign archive costs the saving, never a start. Off with KAFKA_REPLICATION_CDS=0.
CDS_QUIET = ["-Xlog:cds=off", "-Xlog:cds+dynamic=off"]  # "Pre JDK 6 class not supported" and the like


@dataclass
class ClassArchive:
    final: Path
    staged: Path | None = None  # where this JVM dumps at its exit, when no archive exists yet

    agent: bool = False  # the JVM runs a Java agent (the metrics exporter's)

    def options(self) -> list[str]:
        # A JVM with an agent dumps only when allowed to, and maps such an archive only with the
        # same setting (FileMapHeader::validate): the exporter's agent transforms no class, so
        # what it loads is what the classpath holds.
        agent = ["-XX:+UnlockDiagnosticVMOptions", "-XX:+AllowArchivingWithJavaAgent"] if self.agent else []
        if self.staged is None:
            return [*agent, f"-XX:SharedArchiveFile={self.final}", *CDS_QUIET]
        return [*agent, f"-XX:ArchiveClassesAtExit={self.staged}", *CDS_QUIET]

    def settle(self, returncode: int | None) -> None:
        """After the JVM ended: its dump becomes the archive, when it ended by itself or by
        SIGTERM (143), not killed half-way through writing."""
        if self.staged is None or not self.staged.exists():
            return
        if returncode in (0, 143, -signal.SIGTERM) and not self.final.exists():
            self.staged.replace(self.final)
        else:
            self.staged.unlink(missing_ok=True)


def reaped(popen: subprocess.Popen[bytes], archive: ClassArchive | None) -> None:
    """After a server's process was reaped: the keeper forgets it, and its class-data dump, if it
    made one, becomes the archive."""
    keeper.release(popen.pid)
    if archive is not None:
        archive.settle(popen.returncode)


def class_archive(argv: Sequence[str]) -> tuple[list[str], ClassArchive | None]:
    """`argv` (a `java ... -cp CLASSPATH Main ...` line) with the class-data archive's options
    after the java, and the archive to settle once the JVM ends."""
    argv = list(argv)
    if os.environ.get("KAFKA_REPLICATION_CDS") == "0" or "-cp" not in argv[:-2]:
        return argv, None
    at = argv.index("-cp")
    # The VM's own options, and an agent's jar without its arguments (the exporter's names the
    # pod's address, new in every rehearsal).
    vm = [a.split("=", 1)[0] if a.startswith("-javaagent") else a for a in argv[1:at] if a.startswith(("-X", "-javaagent"))]
    archive = archive_for(argv[at + 2].rsplit('.', 1)[-1], Path(argv[0]), argv[at + 1].split(":"),
                          [argv[at + 1], argv[at + 2], *vm], agent=any(a.startswith("-javaagent") for a in vm))
    return [argv[0], *archive.options(), *argv[1:]], archive


def archive_for(name: str, java_binary: Path, classpath: Sequence[str], options: Sequence[str],
                agent: bool = False) -> ClassArchive:
    """The archive of the JVMs of `java_binary` on `classpath` (jars and `<folder>/*` entries)
    with the VM and launch `options` that decide what they load: `<name>-<key>.jsa` in the
    cache, to map when it exists, else to dump into at this JVM's exit."""
    binary = java_binary.resolve()
    # Every jar behind the classpath, by name, size and time: a jar changed (a new pin, Clients.java
    # compiled again) makes a new archive, where the old one would only be refused.
    jars = [f"{j}:{j.stat().st_size}:{j.stat().st_mtime_ns}" for entry in classpath
            for j in (sorted(Path(entry[:-2]).glob("*.jar")) if entry.endswith("/*") else [Path(entry)]) if j.exists()]
    key = hashlib.sha256("\0".join([str(binary), str(binary.stat().st_mtime_ns), *options, *jars]).encode()).hexdigest()[:20]
    folder = cache_root() / "cds"
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.jsa.*"):  # the dumps of JVMs killed or crashed before they settled
        try:
            if time.time() - stale.stat().st_mtime > 6 * 3600:
                stale.unlink()
        except FileNotFoundError:
            pass
    final = folder / f"{name}-{key}.jsa"
    return ClassArchive(final, None if final.exists() else folder / f"{final.name}.{uuid.uuid4().hex}", agent)


def claim_prefix() -> tuple[str, IO[bytes]]:
    """A /24 of the loopback range of its own for one rehearsal: chosen at random and claimed with
    a lock file that no other process on the machine holds (the runtime tier runs several test
    processes at once, and a second rehearsal on the same addresses would meet the first's brokers
    on their ports). The claim lasts as long as the file stays open, and ends with the process."""
    folder = Path(tempfile.gettempdir()) / "kafka-replication-addresses"
    folder.mkdir(parents=True, exist_ok=True)
    for _ in range(1000):
        prefix = f"127.{random.randint(20, 250)}.{random.randint(1, 250)}"
        claim = open(folder / prefix, "ab")  # held open: the claim is its lock
        try:
            fcntl.flock(claim, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            claim.close()
            continue
        return prefix, claim
    raise RuntimeStartError(f"no free loopback /24 for a rehearsal: 1000 tried, each claimed in {folder}")


class Network:
    """Loopback addresses for the clusters, and the hosts file every JVM reads."""

    def __init__(self, directory: Path) -> None:
        self.hosts_file = directory / "hosts"
        self.names: dict[str, str] = {}
        self._prefix, self._claim = claim_prefix()
        self._next = 1
        self._lock = threading.Lock()  # brokers start side by side (Rehearsal.start_clusters)
        self.hosts_file.write_text("")
        # Host names the pods resolve to a link's proxy instead (links.py): host -> the proxy's address.
        self.linked: dict[str, str] = {}

    def close(self) -> None:
        """The rehearsal is over: its addresses go back to the machine (claim_prefix)."""
        self._claim.close()

    def address(self) -> str:
        with self._lock:
            ip = f"{self._prefix}.{self._next}"
            self._next += 1
            return ip

    def map(self, host: str, ip: str) -> None:
        with self._lock:
            if self.names.get(host, ip) != ip:
                raise RuntimeStartError(f"host {host} is mapped to two clusters")
            self.names[host] = ip
            # Replaced in one step: a running JVM may read it at any moment.
            staged = self.hosts_file.with_name(self.hosts_file.name + ".new")
            staged.write_text("".join(f"{a} {h}\n" for h, a in sorted(self.names.items())))
            staged.replace(self.hosts_file)

    def link(self, host: str, ip: str) -> None:
        with self._lock:
            self.linked[host] = ip

    def pod_hosts(self) -> bytes:
        """The hosts file a pod holds: a linked cluster's names resolved to its link's proxy."""
        with self._lock:
            return "".join(f"{self.linked.get(h, a)} {h}\n" for h, a in sorted(self.names.items())).encode()

    def java_options(self) -> list[str]:
        return [f"-Djdk.net.hosts.file={self.hosts_file}"]


def free_ports(ip: str, n: int) -> list[int]:
    """`n` distinct ports free on `ip`. Every socket stays bound until all are chosen: a port bound
    and released at once can be handed out again by the next bind, and two listeners of one broker
    on one port stop it at start ("two listeners on the same port")."""
    with contextlib.ExitStack() as held:
        socks = [held.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind((ip, 0))
        return [int(s.getsockname()[1]) for s in socks]


def free_port(ip: str) -> int:
    return free_ports(ip, 1)[0]


def listening(ip: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((ip, port)) == 0


class Process:
    def __init__(self, name: str, argv: Sequence[str], log: Path, env: dict[str, str] | None = None,
                 archive: ClassArchive | None = None) -> None:
        self.name, self.log, self.archive = name, log, archive
        with open(log, "wb") as out:
            self.popen = subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True, env={**os.environ, **(env or {})})
        keeper.guard(self.popen.pid)  # ends with this process, however it ends (keeper.py)

    def wait(self, timeout: float) -> int:
        """The exit code of a process that ends by itself (a tool run to completion)."""
        code = self.popen.wait(timeout)
        self.ended()
        return code

    def ended(self) -> None:
        reaped(self.popen, self.archive)

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def wait_for(self, what: str, probe: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise RuntimeStartError(f"{self.name} exited with {self.popen.returncode} before {what}; "
                                        f"its log ({self.log}) ends:\n{self.tail()}")
            if probe():
                return
            time.sleep(0.25)
        raise RuntimeStartError(f"{self.name}: no {what} after {timeout:.0f} s; its log ({self.log}) ends:\n"
                                f"{self.tail()}")

    def stop(self, grace: float = 20) -> None:
        stop_all([self], grace)

    def kill(self) -> None:
        """SIGKILL, no shutdown: what the kernel's OOM killer or a node's failure does to a pod's JVM."""
        self._signal(signal.SIGKILL)
        self.popen.wait(60)
        self.ended()

    def _signal(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            pass


def stop_all(processes: Sequence[Process | None], grace: float = 20) -> None:
    """SIGTERM to every process at once, then SIGKILL to those still running after `grace` seconds.

    At once: a JVM's shutdown (a worker leaving its group and closing its tasks' clients, a broker's
    controlled shutdown) takes seconds, and a rehearsal stops a dozen of them."""
    given = [p for p in processes if p is not None]
    running = [p for p in given if p.popen.poll() is None]
    for p in running:
        p._signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in running:
        try:
            p.popen.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p._signal(signal.SIGKILL)
            p.popen.wait(5)
    for p in given:  # those that had ended by themselves too
        p.ended()


def logging_options(directory: Path, level: str = "INFO") -> list[str]:
    """Log configuration for reload4j (Kafka 3.x) and log4j 2 (Kafka 4.x): to standard output,
    which Process writes to the log file. Each framework reads only its own property."""
    v1 = directory / "log4j.properties"
    v1.write_text(f"log4j.rootLogger={level}, stdout\nlog4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
                  "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
                  "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
                  "log4j.logger.org.apache.kafka.clients=WARN\nlog4j.logger.org.reflections=ERROR\n")
    v2 = directory / "log4j2.properties"
    v2.write_text(f"rootLogger.level={level}\nrootLogger.appenderRef.stdout.ref=STDOUT\n"
                  "appender.console.type=Console\nappender.console.name=STDOUT\n"
                  "appender.console.layout.type=PatternLayout\n"
                  "appender.console.layout.pattern=[%d] %p %m (%c)%n\n"
                  "logger.clients.name=org.apache.kafka.clients\nlogger.clients.level=WARN\n"
                  "logger.reflections.name=org.reflections\nlogger.reflections.level=ERROR\n")
    return [f"-Dlog4j.configuration=file:{v1}", f"-Dlog4j2.configurationFile={v2}"]
