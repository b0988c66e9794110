"""Kafka's Java clients, driven from Python (Clients.java beside this file, compiled once per
release into the jar cache): produce records, read them back, list topics, read a group's
committed offsets and topics' end offsets. Keys, values and headers are strings."""

from __future__ import annotations

import hashlib
import json
import os
import select
import shutil
import subprocess
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.core.releases import Release
from infra.tools.rehearsal import jars, keeper
from infra.tools.rehearsal.process import Network, RuntimeStartError, class_archive, java, jvm_options, reaped

SOURCE = Path(__file__).resolve().parent / "Clients.java"


def _compiled(release: Release) -> Path:
    """Clients.java compiled against the release's jars, as a jar: class-data sharing archives
    only classes from jars (a classpath folder with files in it refuses the archive)."""
    folder = jars.release_jars(release).parent / f"{jars.profile(release)}-clients"
    # Named by its source: a JVM running on an older jar keeps it while a new one is written beside.
    jar = folder / f"Clients-{hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]}.jar"
    if jar.is_file():
        return jar
    classes = folder / f"classes-{os.getpid()}"
    classes.mkdir(parents=True, exist_ok=True)
    javac = str(Path(java()).with_name("javac"))
    done = subprocess.run([javac, "-nowarn", "-d", str(classes), "-cp", jars.classpath(release), str(SOURCE)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeStartError(f"Clients.java does not compile against {jars.profile(release)}:\n{done.stderr}")
    staged = folder / f"Clients.jar.{os.getpid()}"
    with zipfile.ZipFile(staged, "w") as out:
        for path in sorted(classes.rglob("*.class")):
            out.write(path, path.relative_to(classes).as_posix())
    staged.replace(jar)  # in one step: another process may be starting a JVM on it
    shutil.rmtree(classes)
    return jar


class _Server:
    """One Clients JVM, answering requests in turn (Clients.java), and the hosts file it started on."""

    def __init__(self, argv: list[str], hosts: bytes, log: Path) -> None:
        self.hosts, self.log = hosts, log
        argv, self.archive = class_archive(argv)
        with open(log, "ab") as err:
            self.popen = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                          start_new_session=True)
        keeper.guard(self.popen.pid)  # ends with this process, however it ends (keeper.py)
        self._buffer = b""

    def ask(self, request: bytes, timeout: float) -> dict[str, Any] | None:
        """The answer line to `request`; None when the JVM is gone or the time ran out."""
        assert self.popen.stdin is not None and self.popen.stdout is not None
        try:
            self.popen.stdin.write(request + b"\n")
            self.popen.stdin.flush()
        except OSError:
            return None
        deadline = time.monotonic() + timeout
        fd = self.popen.stdout.fileno()
        while True:
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    return None
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return None
                self._buffer += chunk
            line, _, self._buffer = self._buffer.partition(b"\n")
            if line.startswith((b'{"answer"', b'{"error"')):  # Clients.java's replies, nothing else
                reply: dict[str, Any] = json.loads(line)
                return reply

    def stop(self) -> None:
        # The end of its input ends Clients.java's loop and the JVM with it, which then writes
        # its class-data archive (the first of its kind); one that does not end is killed.
        if self.popen.stdin is not None:
            try:
                self.popen.stdin.close()
            except OSError:
                pass
        try:
            self.popen.wait(30 if self.archive is not None and self.archive.staged else 5)  # a dump takes seconds
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(10)
        reaped(self.popen, self.archive)
        if self.popen.stdout is not None:
            self.popen.stdout.close()


@dataclass
class Clients:
    """Kafka's clients for a rehearsal, served by JVMs kept for it: a JVM's start costs more than most
    requests. Concurrent calls (a benchmark reads while it writes) each get a JVM of their own; a JVM
    is started again when the hosts file has changed since it started, so that every call resolves
    names as a JVM started for it would."""

    release: Release
    network: Network
    _idle: list[_Server] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _started: int = field(default=0, repr=False)

    def _argv(self) -> list[str]:
        classes = _compiled(self.release)
        return [java(), *jvm_options("quick", (64, 256)), *self.network.java_options(),
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dlog4j.configuration=none",
                "-cp", f"{classes}:{jars.classpath(self.release)}", "Clients"]

    def _take(self) -> _Server:
        hosts = self.network.hosts_file.read_bytes()
        stale: list[_Server] = []
        try:
            with self._lock:
                while self._idle:
                    server = self._idle.pop()
                    if server.hosts == hosts and server.popen.poll() is None:
                        return server
                    stale.append(server)
                self._started += 1
                log = self.network.hosts_file.with_name(f"clients-{self._started}.log")
            return _Server(self._argv(), hosts, log)
        finally:
            for server in stale:  # outside the lock: a stop waits seconds for the JVM to end
                server.stop()

    def call(self, op: str, config: dict[str, str], timeout: float = 120, **fields: Any) -> dict[str, Any]:
        server = self._take()
        reply = server.ask(json.dumps({"op": op, "config": config, **fields}).encode(), timeout)
        if reply is None:
            server.stop()
            raise RuntimeError(f"Kafka client `{op}` gave no answer in {timeout:.0f} s (exit {server.popen.returncode}):\n"
                               f"{server.log.read_text(errors='replace')[-3000:]}")
        with self._lock:
            self._idle.append(server)
        if "error" in reply:
            trace = reply["error"]  # the exception first, its causes last
            raise RuntimeError(f"Kafka client `{op}` failed:\n"
                               + (trace if len(trace) <= 3000 else f"{trace[:1500]}\n...\n{trace[-1500:]}"))
        answer: dict[str, Any] = reply["answer"]
        return answer

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for server in idle:
            server.stop()

    def produce(self, config: dict[str, str], topic: str, records: list[dict[str, Any]]) -> list[int]:
        offsets: list[int] = self.call("produce", config, topic=topic, records=records)["offsets"]
        return offsets

    def consume(self, config: dict[str, str], topics: list[str], count: int, timeout_ms: int = 30000,
                group: str | None = None, isolation: str = "read_uncommitted") -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = self.call("consume", config, timeout=timeout_ms / 1000 + 60, topics=topics,
                                                  count=count, timeoutMs=timeout_ms, group=group,
                                                  isolation=isolation)["records"]
        return records

    def topics(self, config: dict[str, str]) -> list[str]:
        names: list[str] = self.call("topics", config)["topics"]
        return names

    def create_topics(self, config: dict[str, str], topics: dict[str, int]) -> None:
        self.call("createTopics", config, topics=[{"name": t, "partitions": p} for t, p in topics.items()])

    def delete_topics(self, config: dict[str, str], topics: list[str]) -> None:
        self.call("deleteTopics", config, topics=topics)

    def topic_configs(self, config: dict[str, str], topic: str) -> dict[str, str]:
        """The configuration set on the topic itself (not the brokers' defaults)."""
        configs: dict[str, str] = self.call("topicConfigs", config, topic=topic)["configs"]
        return configs

    def alter_topic_configs(self, config: dict[str, str], topic: str, values: dict[str, str]) -> None:
        self.call("alterTopicConfigs", config, topic=topic, set=values)

    def create_acls(self, config: dict[str, str], acls: list[dict[str, str]]) -> None:
        """ALLOW ACLs on literal topics: `topic`, `principal` (User:...), `operation` (READ...)."""
        self.call("createAcls", config, acls=acls)

    def alter_scram(self, config: dict[str, str], user: str, mechanism: str, password: str) -> None:
        """The user's SCRAM credential for `mechanism` replaced on the broker."""
        self.call("alterScram", config, user=user, mechanism=mechanism, password=password)

    def acls(self, config: dict[str, str]) -> list[str]:
        """Every ACL binding, one line each: type, name, pattern, principal, host, operation, permission."""
        lines: list[str] = self.call("acls", config)["acls"]
        return lines

    def group_offsets(self, config: dict[str, str], group: str) -> dict[str, int]:
        offsets: dict[str, int] = self.call("groupOffsets", config, group=group)["offsets"]
        return offsets

    def end_offsets(self, config: dict[str, str], topics: list[str]) -> dict[str, int]:
        offsets: dict[str, int] = self.call("endOffsets", config, topics=topics)["offsets"]
        return offsets

    def leaders(self, config: dict[str, str], topics: list[str]) -> dict[str, dict[str, Any]]:
        """Each partition's leader and in-sync replicas (broker ids), by `topic:partition`."""
        partitions: dict[str, dict[str, Any]] = self.call("leaders", config, topics=topics)["partitions"]
        return partitions
