"""Kafka's Java clients, driven from Python (Clients.java beside this file, compiled once per
release into the jar cache): produce records, read them back, list topics, read a group's
committed offsets and topics' end offsets. Keys, values and headers are strings."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.core.releases import Release
from infra.tools.rehearsal import jars
from infra.tools.rehearsal.process import Network, RuntimeStartError, java

SOURCE = Path(__file__).resolve().parent / "Clients.java"


def _compiled(release: Release) -> Path:
    folder = jars.release_jars(release).parent / f"{jars.profile(release)}-clients"
    stamp = folder / ".source"
    if stamp.is_file() and stamp.read_text() == SOURCE.read_text():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    javac = str(Path(java()).with_name("javac"))
    done = subprocess.run([javac, "-nowarn", "-d", str(folder), "-cp", jars.classpath(release), str(SOURCE)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeStartError(f"Clients.java does not compile against {jars.profile(release)}:\n{done.stderr}")
    stamp.write_text(SOURCE.read_text())
    return folder


@dataclass
class Clients:
    release: Release
    network: Network

    def call(self, op: str, config: dict[str, str], timeout: float = 120, **fields: Any) -> dict[str, Any]:
        classes = _compiled(self.release)
        argv = [java(), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", *self.network.java_options(),
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dlog4j.configuration=none",
                "-cp", f"{classes}:{jars.classpath(self.release)}", "Clients"]
        request = json.dumps({"op": op, "config": config, **fields})
        done = subprocess.run(argv, input=request, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"Kafka client `{op}` failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return answer

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
